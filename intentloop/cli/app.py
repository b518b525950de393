"""The typer application: one command per module, stable exit codes, every error printed with its code and remedy.

The app runs click in non-standalone mode so that usage errors, intentloop errors and unexpected exceptions all leave
through one place (:func:`run_app`) that prints the stable code, a one-line remedy and exits with a documented code.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from intentloop.cli import (
    demo,
    export_task,
    forget,
    hook,
    install_cmd,
    keys,
    mode,
    recover_export,
    recover_quarantine,
    recover_salvage,
    relink,
    serve,
    share,
    status,
    verify,
    views,
)
from intentloop.cli._exit import USAGE
from intentloop.cli._options import HELP_OPTIONS, command_group
from intentloop.cli._output import Output
from intentloop.cli._progress import showing_progress
from intentloop.errors import IntentLoopError, InvalidInputError, StorageError

HELP = (
    "intentloop's admin CLI: see, export and forget what the memory holds, verify and repair the local intent "
    "ledgers, run the MCP server and hooks, install into Codex, Claude Code or Gemini CLI, and try it all with "
    "`intentloop demo`. "
    "Per-project commands use the current directory's project unless --project-root or --project-id is given; ids "
    "may be unique prefixes.\n\n"
    "Exit codes: 0 ok, 1 damaged ledger or failed operation, 2 usage, 3 environment (e.g. no data root), "
    "4 busy (the ledger lock is held; retry), 5 not found (no such project, task or claim)."
)
DEBUG_ENV = "INTENT_LOOP_DEBUG"
#: ``-h`` works as ``--help`` for every command and group (``hook -h`` always did).


def _version(value: bool) -> None:
    if value:
        from intentloop import __version__

        sys.stdout.write(f"intentloop {__version__}\n")
        raise typer.Exit(0)


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """intentloop's admin CLI."""


def build_app() -> typer.Typer:
    """Assemble the typer application (commands are registered here, implemented in their own modules)."""
    app = typer.Typer(
        name="intentloop",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=HELP_OPTIONS,
    )
    app.callback(help=HELP)(_root)
    app.command("projects", short_help="Every project: id, last activity, tasks, claims, damage.")(views.projects)
    app.command("tasks", short_help="A project's tasks: id, label, mode, started, claims by status.")(views.tasks)
    app.command("show", short_help="One task's current snapshot as a table (or --json).")(views.show)
    app.command("export", short_help="One task as readable Markdown or the portable JSON graph.")(export_task.export)
    app.command("mode", short_help="Turn a task off (nothing recorded or injected) or back on.")(mode.mode)
    forget_app = command_group(
        "forget", "Physically delete a claim or a whole task, verified as intent_delete does (see docs/CLI.md)."
    )
    forget_app.command("claim", short_help="Delete one claim; verify no byte of it remains.")(forget.forget_claim)
    forget_app.command("task", short_help="Delete a task and everything of it; verify no byte remains.")(
        forget.forget_task
    )
    app.add_typer(forget_app, name="forget", short_help="Delete a claim or a task for good (asks first).")
    app.command("relink", short_help="Move a moved project's memory to its new folder.")(relink.relink)
    app.command("status", short_help="Versions, data root, projects and their health (creates nothing).")(status.status)
    app.command("verify", short_help="Verify a project's hash chain: exit 0 intact, 1 damaged.")(verify.verify)
    keys_app = command_group(
        "keys", "The installation's signing key: its fingerprint, and replacing a missing one (see docs/STORAGE.md)."
    )
    keys_app.command("show", short_help="The key's fingerprint (key id), public key and file.")(keys.show)
    keys_app.command("rotate", short_help="Replace a missing key; re-sign what the old one vouches for.")(keys.rotate)
    app.add_typer(keys_app, name="keys", short_help="Show the signing key's fingerprint, or replace a missing key.")
    recover = command_group(
        "recover", "Save or set aside the damaged part of a ledger (see docs/CLI.md, recovery runbook)."
    )
    recover.command("export", short_help="Write the verified prefix to a file; change nothing.")(recover_export.export)
    recover.command("quarantine", short_help="Set the damaged suffix aside; keep the verified prefix.")(
        recover_quarantine.quarantine
    )
    recover.command("salvage", short_help="Re-append the intact events of a quarantined suffix.")(
        recover_salvage.salvage
    )
    app.add_typer(recover, name="recover", short_help="Export, quarantine or salvage a damaged ledger.")
    app.command("serve", short_help="Run the MCP stdio server (what hosts start).")(serve.serve)
    app.command(
        "hook",
        short_help="Handle one host hook event (JSON on stdin, one JSON line out).",
        context_settings={
            "ignore_unknown_options": True,
            "allow_extra_args": True,
            "help_option_names": ["-h", "--help"],
        },
    )(hook.hook)
    app.command("install", short_help="Wire intentloop into Codex, Claude Code or Gemini CLI.")(install_cmd.install)
    app.command("demo", short_help="A guided tour in a throwaway data root (real server, hook, CLI).")(demo.demo)
    share.register(app)
    return app


def run(argv: Sequence[str]) -> int:
    """Run the CLI on ``argv`` (without the program name) and return the exit code; never raises but SystemExit.

    On a terminal, a command that runs over half a second shows what it is doing on stderr (``cli/_progress.py``),
    unless it prints JSON.
    """
    from typer.main import get_command

    from intentloop.cli._coerce import take_plain_values

    take_plain_values()
    command = get_command(build_app())
    if "--json" in argv:  # one JSON object and nothing else, on a terminal too
        return _run(argv, command)
    with showing_progress(_command_name(argv)):
        return _run(argv, command)


def _run(argv: Sequence[str], command: Any) -> int:
    from typer._click import exceptions as click_exc

    json_mode = "--json" in argv
    try:
        result = command.main(list(argv), prog_name="intentloop", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        exc.show()  # the help text, on stderr: a bare `intentloop` is a usage error (exit 2)
        return USAGE
    except click_exc.UsageError as exc:
        return _report(InvalidInputError(exc.format_message()), json_mode, _command_name(argv, command))
    except typer.Abort:
        sys.stderr.write("cancelled\n")
        return 130
    except IntentLoopError as exc:
        return _report(exc, json_mode, _command_name(argv, command))
    except OSError as exc:
        if exc.errno not in _OUT_OF_FILES:
            return _unexpected(exc, json_mode, _command_name(argv, command))
        # not a bug: the process may open no more files (a low `ulimit -n`), wherever that struck
        error = StorageError(
            f"the process may open no more files ({errno.errorcode[exc.errno]}): raise the limit (`ulimit -n`)",
            code="STORAGE_READ_FAILED",
        )
        return _report(error, json_mode, _command_name(argv, command))
    except Exception as exc:  # a bug: still print a stable code and a remedy, not a bare traceback
        return _unexpected(exc, json_mode, _command_name(argv, command))
    if isinstance(result, int):
        return result
    return 0


_OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})


def _unexpected(exc: Exception, json_mode: bool, command: str | None) -> int:
    """``INTERNAL_ERROR`` for a bug, with ``INTENT_LOOP_DEBUG=1``'s one line saying where it happened."""
    if os.environ.get(DEBUG_ENV):
        sys.stderr.write(debug_line(exc) + "\n")
    return _report(IntentLoopError(f"{type(exc).__name__}: {exc}"), json_mode, command)


def debug_line(exc: BaseException) -> str:
    """The one line ``INTENT_LOOP_DEBUG=1`` adds for an unexpected exception: its type and where it was raised (the
    innermost frame of intentloop's own packages, else the innermost frame), never its message, arguments or locals."""
    frames = traceback.extract_tb(exc.__traceback__)
    base = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ours = (os.path.join(base, "intentloop") + os.sep,)
    mine = [f for f in frames if f.filename.startswith(ours)]
    where = (mine or frames)[-1] if frames else None
    if where is None:
        return f"intentloop: debug: {type(exc).__name__}"
    place = os.path.relpath(where.filename, base) if where.filename.startswith(ours) else where.filename
    return f"intentloop: debug: {type(exc).__name__} at {place}:{where.lineno} in {where.name}"


def _command_name(argv: Sequence[str], group: Any = None) -> str | None:
    """The command ``argv`` names (``"recover export"``); with the click ``group``, ``None`` for a word that is no
    command of it (a remedy must never point to the help of a command that does not exist)."""
    words = [a for a in argv[:2] if not a.startswith("-")]
    if group is not None and words and words[0] not in group.commands:
        return None
    if words[:1] in (["recover"], ["forget"], ["keys"], ["share"]):
        sub = group.commands[words[0]] if group is not None else None
        if sub is not None and words[1:] and words[1] not in sub.commands:
            return words[0]
        return " ".join(words)
    return words[0] if words else None


def _report(error: IntentLoopError, json_mode: bool, command: str | None) -> int:
    return Output(command or "intentloop", json_mode=json_mode).failure(error)


def run_app() -> None:
    """Console-script body for everything but ``intentloop hook`` (see ``cli/entry.py``)."""
    raise SystemExit(run(sys.argv[1:]))


__all__ = ["DEBUG_ENV", "build_app", "debug_line", "run", "run_app"]
