"""``intentloop recover quarantine``: set a damaged suffix aside and keep the verified prefix as the ledger.

This is the one command that changes a ledger, so it shows what it will do and asks first; without a terminal to ask
on it refuses unless ``--yes`` was given. The damage is re-checked under the lock and must be the one confirmed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated

import typer

from cli._exit import DAMAGED, OK
from cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from cli._output import Output, key_value_table
from intentloop.errors import IntentLoopError

YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
KeepBytesOption = Annotated[
    bool,
    typer.Option("--keep-bytes", help="Also keep the raw damaged bytes (a 0600 file inside quarantine/)."),
]
WaitOption = Annotated[
    float,
    typer.Option(
        "--wait", metavar="SECONDS", min=0.0, help="Give up after this long if another process holds the lock."
    ),
]


def quarantine(
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    yes: YesOption = False,
    keep_bytes: KeepBytesOption = False,
    wait: WaitOption = 10.0,
    json_output: JsonOption = False,
) -> int:
    """Under the ledger lock, summarise the damaged suffix into quarantine/ and keep the verified prefix as the ledger.

    Asks for confirmation unless --yes. The summary records the removed bytes' length and SHA-256, the first bad
    line and why; raw bytes are kept only with --keep-bytes. Afterwards the ledger verifies and writes work again.
    Exit 0 when done or nothing was damaged, 1 when refused or declined, 4 when the lock is held.
    """
    out = Output("recover quarantine", json_mode=json_output)
    return out.guard(lambda: _run(out, project_root, project_id, yes=yes, keep_bytes=keep_bytes, wait=wait))


def _run(
    out: Output, project_root: str | None, project_id: str | None, *, yes: bool, keep_bytes: bool, wait: float
) -> int:
    from cli._target import resolve_target
    from recovery import check_ledger, quarantine_damaged_suffix, refusal

    target = resolve_target(project_root, project_id)
    with out.progress("Verifying the ledger"):
        check = check_ledger(target.store)
    report = check.report
    if not report.intact:
        refused = refusal(check)
        if refused is not None:
            return out.failure(refused, fields={**target.fields(), "report": report.to_dict()})
        if not out.json_mode:
            out.show(
                key_value_table(
                    "Damage found",
                    [
                        ("project", report.project_id),
                        ("first bad line", f"{report.first_bad_line}: {report.reason} ({report.code})"),
                        ("will set aside", f"{report.damaged_bytes} bytes (sha256 {report.damaged_sha256})"),
                        ("will keep", f"{report.events} verified events ({report.verified_bytes} bytes)"),
                        ("raw bytes", "kept in quarantine/ (0600)" if keep_bytes else "not kept (summary only)"),
                    ],
                )
            )
        if not yes and not _confirm(out, report.events, report.damaged_bytes):
            declined = IntentLoopError("not confirmed: nothing was changed", code="CONFIRMATION_REQUIRED")
            if out.json_mode:
                out.json_object({**target.fields(), "action": "cancelled"}, exit_code=DAMAGED, error=declined)
            else:
                sys.stderr.write("cancelled: nothing was changed\n")
            return DAMAGED
    with out.progress("Quarantining under the ledger lock"):
        result = quarantine_damaged_suffix(
            target.store,
            keep_bytes=keep_bytes,
            deadline=time.monotonic() + wait,
            expected_sha256=report.damaged_sha256,
        )
    if out.json_mode:
        out.json_object({**target.fields(), **result.to_dict()}, exit_code=OK)
        return OK
    if result.action == "none":
        out.line(f"Nothing to quarantine: the ledger verifies ({result.events} events).")
        return OK
    rows = [
        ("ledger", f"{result.events} verified events kept ({result.verified_bytes} bytes), head {result.head_hash}"),
        ("set aside", f"{result.quarantined_bytes} bytes from line {result.first_bad_line} ({result.reason})"),
        ("summary", str(result.record)),
        ("raw bytes", result.kept_bytes_file or "not kept"),
    ]
    out.show(key_value_table("Quarantined", rows))
    out.line("The ledger verifies again and accepts writes.")
    return OK


def _confirm(out: Output, events: int, damaged: int) -> bool:
    """Ask on the terminal; refuse (``CONFIRMATION_REQUIRED``) when there is none."""
    if not _stdin_is_terminal():
        raise IntentLoopError(
            "quarantine changes the ledger and there is no terminal to confirm on", code="CONFIRMATION_REQUIRED"
        )
    sys.stderr.write(f"Set aside {damaged} damaged bytes and keep {events} verified events as the ledger? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = ["quarantine"]
