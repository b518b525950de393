"""``intentloop install codex|claude|gemini``: the typer face of the installer logic in ``cli/install.py``."""

from __future__ import annotations

from typing import Annotated

import typer

from intentloop.cli._complete import hosts
from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption
from intentloop.cli._output import Output

HostArgument = Annotated[
    str, typer.Argument(metavar="codex|claude|gemini", help="The host to wire intentloop into.", autocompletion=hosts)
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Show the change as a diff; write nothing.")]
UninstallOption = Annotated[bool, typer.Option("--uninstall", help="Remove exactly what an install added.")]
ReplaceOption = Annotated[
    bool,
    typer.Option(
        "--replace",
        help="Replace an intent_loop server or intentloop hooks that intentloop's installer did not write (refused "
        "otherwise); the backup keeps them and --uninstall puts them back.",
    ),
]


def install(
    host: HostArgument,
    dry_run: DryRunOption = False,
    uninstall: UninstallOption = False,
    replace: ReplaceOption = False,
    json_output: JsonOption = False,
) -> int:
    """Write the host's MCP server entry and its hooks (five; four on Gemini CLI), with absolute paths to this
    installation (Claude Code: and the /intent skill).

    Every changed file is backed up first (<file>.intentloop.bak); re-running changes nothing. An entry intentloop's
    installer did not write is never changed without --replace, and never removed by --uninstall. Codex runs the
    hooks only after you trust them in /hooks: the installer never forges trust.
    """
    out = Output("install", json_mode=json_output)
    return out.guard(lambda: _run(out, host, dry_run=dry_run, uninstall=uninstall, replace=replace))


def _run(out: Output, host: str, *, dry_run: bool, uninstall: bool, replace: bool) -> int:
    from intentloop.cli.install import install as run_install

    result = run_install(host, dry_run=dry_run, uninstall=uninstall, replace=replace)
    rule_cache = None if dry_run or uninstall else _rule_cache()
    if out.json_mode:
        out.json_object(
            {
                "host": result.host,
                "uninstall": result.uninstall,
                "dry_run": result.dry_run,
                "data_root": str(result.data_root),
                "program": list(result.command),
                "changed": result.changed,
                "changes": [
                    {
                        "path": str(c.path),
                        "action": c.action,
                        "backup": str(c.backup) if c.backup is not None else None,
                        "backup_removed": str(c.drop_backup) if c.drop_backup is not None else None,
                        "diff": c.diff() if dry_run else None,
                    }
                    for c in result.changes
                ],
                "notes": list(result.notes),
                "rule_cache": rule_cache,
            },
            exit_code=OK,
        )
        return OK
    out.line(result.render().rstrip("\n"))
    if rule_cache is not None:
        out.line(f"redaction rule catalog: {_RULE_CACHE_LINES[rule_cache]}")
    return OK


_RULE_CACHE_LINES = {
    "off": "off (INTENT_LOOP_CATALOG=off): the own rules redact alone",
    "unavailable": "not installed: the own rules redact alone",
    "warm": "rule cache ready",
    "built": "rule cache built, so the first /intent command uses both layers",
    "failed": "the rule cache could not be built ('intentloop status' says why): the own rules redact alone",
}


def _rule_cache() -> str:
    """Build the redaction rule catalog's cache now (seconds of CPU, once), not in the first hooks' background."""
    import os

    from intentloop.store.catalog import ensure_rule_cache

    return ensure_rule_cache(os.environ)


__all__ = ["install"]
