"""``intentloop share …`` and ``intentloop sync``: one project's memory shared across machines through git.

Each command is one call into ``intentloop/service/_share.py``; the output is its answer as a JSON object
(``--json``) or as ``key: value`` lines. Only ``sync`` touches the network (git fetch and push); no hook runs any of
these (docs/SYNC.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectRootOption, command_group
from intentloop.cli._output import Output

ProjectArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[FOLDER]", help="A folder of the project (default: the current directory).", show_default=False
    ),
]


def _run(command: str, json_output: bool, body: Callable[[Path], dict[str, Any]]) -> int:
    out = Output(command, json_mode=json_output)

    def go() -> int:
        from intentloop.store import resolve_data_root

        fields = body(resolve_data_root())
        if out.json_mode:
            out.json_object(fields, exit_code=OK)
        else:
            _print(out, fields)
        return OK

    return out.guard(go)


def _print(out: Output, fields: dict[str, Any], indent: str = "") -> None:
    for name, value in fields.items():
        if isinstance(value, list):
            out.line(f"{indent}{name.replace('_', ' ')}: {len(value)}")
            for item in value:
                out.line(f"{indent}  - {json.dumps(item, ensure_ascii=False, sort_keys=True)}")
        elif isinstance(value, dict):
            out.line(f"{indent}{name.replace('_', ' ')}:")
            _print(out, value, indent + "  ")
        else:
            out.line(f"{indent}{name.replace('_', ' ')}: {'-' if value is None else value}")


def init(project: ProjectArgument = None, json_output: JsonOption = False) -> int:
    """Give the project a shared id: write .intentloop/project.json (commit it) so every clone, worktree and
    machine holding it is the same shared project. Kept when the project already has one."""
    from intentloop.service._share import init as run

    return _run("share init", json_output, lambda root: run(root, project))


def join(
    shared_id: Annotated[str, typer.Argument(metavar="ID", help="The shared id (`share preview` shows it).")],
    project_root: ProjectRootOption = None,
    json_output: JsonOption = False,
) -> int:
    """Bind a checkout that cannot carry .intentloop/project.json to a shared id (its local memory stays as it is)."""
    from intentloop.service._share import join as run

    return _run("share join", json_output, lambda root: run(root, project_root, shared_id))


def remote(
    url: Annotated[str, typer.Argument(metavar="URL", help="A git URL, e.g. git@host:me/memory.git.")],
    project_root: ProjectRootOption = None,
    json_output: JsonOption = False,
) -> int:
    """Name the git repository the shared project's streams travel through (your git credentials are used; nothing
    is stored by intentloop). A separate repository is the default choice; the project's own only when you want it."""
    from intentloop.service._share import set_remote

    return _run("share remote", json_output, lambda root: set_remote(root, project_root, url))


def _every(text: str) -> int | None:
    """``off``, or seconds with an optional unit: ``300``, ``90s``, ``5m``, ``1h``."""
    from intentloop.errors import InvalidInputError

    value = text.strip().lower()
    if value == "off":
        return None
    unit = {"s": 1, "m": 60, "h": 3600}.get(value[-1:], 0)
    number = value[:-1] if unit else value
    if not number.isdigit() or len(number) > 6:
        raise InvalidInputError("EVERY is off, or seconds such as 300, 90s, 5m or 1h")
    return int(number) * (unit or 1)


def auto_sync(
    every: Annotated[
        str, typer.Argument(metavar="EVERY", help="off, or how often: seconds, or with a unit (90s, 5m, 1h).")
    ],
    project_root: ProjectRootOption = None,
    json_output: JsonOption = False,
) -> int:
    """Let a running MCP server (intentloop serve) sync this shared project in the background every EVERY (10 s to
    1 day), as `intentloop sync` does; `off` stops it. Hooks never sync."""
    from intentloop.service._share import set_auto_sync

    return _run("share auto-sync", json_output, lambda root: set_auto_sync(root, project_root, _every(every)))


def publish(
    task: Annotated[
        str | None, typer.Argument(metavar="[TASK]", help="A task id to publish.", show_default=False)
    ] = None,
    inferences: Annotated[
        bool | None,
        typer.Option(
            "--inferences/--no-inferences", help="Let inferred claims travel too (or stop them).", show_default=False
        ),
    ] = None,
    project_root: ProjectRootOption = None,
    json_output: JsonOption = False,
) -> int:
    """Publish a task (its user-explicit and evidence claims of every scope and its label), or opt inferences in
    or out. Project and long-term claims travel without this."""
    from intentloop.service._share import publish as run

    return _run("share publish", json_output, lambda root: run(root, project_root, task, inferences=inferences))


def preview(project: ProjectArgument = None, json_output: JsonOption = False) -> int:
    """List exactly what the next sync would publish, what redaction refuses, and the writers not shown."""
    from intentloop.service._share import preview as run

    return _run("share preview", json_output, lambda root: run(root, project))


def keys(project_root: ProjectRootOption = None, json_output: JsonOption = False) -> int:
    """This installation's key id, fingerprint, OpenSSH public key and principal (give them to your other
    machines' `share trust`)."""
    from intentloop.service._share import keys as run

    return _run("share keys", json_output, lambda root: run(root, project_root))


def trust(
    public_key: Annotated[str, typer.Argument(metavar="PUBLIC_KEY", help="The `ssh-ed25519 AAAA…` line.")],
    principal: Annotated[str, typer.Option("--principal", metavar="NAME", help="Whose key it is (an email).")],
    json_output: JsonOption = False,
) -> int:
    """Trust another installation's key as NAME's: its streams are then shown (NAME your own principal: your words)."""
    from intentloop.service._share import trust as run

    return _run("share trust", json_output, lambda root: run(root, public_key, principal))


def principal(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Your principal (an email).")],
    json_output: JsonOption = False,
) -> int:
    """Set this installation's principal (default: `git config user.email` in the project)."""
    from intentloop.service._share import set_principal

    return _run("share principal", json_output, lambda root: set_principal(root, name))


def sync(project: ProjectArgument = None, json_output: JsonOption = False) -> int:
    """Push this installation's stream of the shared project and pull the others'; print what it did."""
    from intentloop.service._share import sync as run

    return _run("sync", json_output, lambda root: run(root, project))


def register(app: typer.Typer) -> None:
    """Add ``share …`` and ``sync`` to the application."""
    share = command_group(
        "share", "Share this project's memory with your other machines through a git repository (see docs/SYNC.md)."
    )
    share.command("init", short_help="Give the project a shared id (.intentloop/project.json).")(init)
    share.command("join", short_help="Bind a checkout without the file to a shared id.")(join)
    share.command("remote", short_help="Name the git repository streams travel through.")(remote)
    share.command("auto-sync", short_help="Let a running server sync in the background, or stop it.")(auto_sync)
    share.command("publish", short_help="Publish a task, or opt inferences in or out.")(publish)
    share.command("preview", short_help="Exactly what would travel, and what is refused.")(preview)
    share.command("keys", short_help="This installation's key and principal.")(keys)
    share.command("trust", short_help="Trust another installation's key.")(trust)
    share.command("principal", short_help="Set this installation's principal.")(principal)
    app.add_typer(share, name="share", short_help="Share the memory across machines through git.")
    app.command("sync", short_help="Push and pull a shared project's memory (git).")(sync)


__all__ = ["register"]
