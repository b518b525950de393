"""``intentloop recover quarantine``: set a damaged suffix aside and keep the verified prefix as the ledger.

It changes a ledger, so it first counts what the damaged suffix holds (events, claims, tasks, bytes) and shows it,
then asks; without a terminal to ask on it refuses unless ``--yes`` was given (and still prints the counts before
acting). The damage is re-checked under the lock and must be the one confirmed. The suffix's raw bytes are kept by
default (0600, inside ``quarantine/``): they are the user's own, already redacted records, and
``intentloop recover salvage`` gives back every intact event among them.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from intentloop.cli._confirm import declined
from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import plural

YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
SummaryOnlyOption = Annotated[
    bool,
    typer.Option(
        "--summary-only",
        help="Keep only the damaged bytes' length and SHA-256, not the bytes (nothing can be salvaged then).",
    ),
]
KeepBytesOption = Annotated[
    bool, typer.Option("--keep-bytes", hidden=True, help="Keep the raw damaged bytes (the default; kept for scripts).")
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
    summary_only: SummaryOnlyOption = False,
    keep_bytes: KeepBytesOption = False,
    wait: WaitOption = 10.0,
    json_output: JsonOption = False,
) -> int:
    """Under the ledger lock, set the damaged suffix aside in quarantine/ and keep the verified prefix as the ledger.

    First counts what the suffix holds (events, claims, tasks, bytes) and asks, unless --yes. The suffix's raw bytes
    are kept in a 0600 file inside quarantine/ (for `recover salvage`) unless --summary-only; the summary records
    their length and SHA-256, the first bad line and why. Afterwards the ledger verifies and writes work again.
    Exit 0 when done or nothing was damaged, 1 when refused or declined, 4 when the lock is held.
    """
    out = Output("recover quarantine", json_mode=json_output)
    if summary_only and keep_bytes:
        from intentloop.errors import InvalidInputError

        return out.failure(InvalidInputError("pass either --summary-only or --keep-bytes, not both"))
    return out.guard(lambda: _run(out, project_root, project_id, yes=yes, keep_bytes=not summary_only, wait=wait))


def _run(
    out: Output, project_root: str | None, project_id: str | None, *, yes: bool, keep_bytes: bool, wait: float
) -> int:
    from intentloop.cli._target import resolve_target
    from intentloop.recovery import check_ledger, count_suffix, quarantine_damaged_suffix, refusal

    target = resolve_target(project_root, project_id, asks_to="quarantine")
    with out.progress("Verifying the ledger"):
        check = check_ledger(target.store)
    report = check.report
    contents: dict[str, int] | None = None
    if not report.intact:
        refused = refusal(check)
        if refused is not None:
            return out.failure(refused, fields={**target.fields(), "report": report.to_dict()})
        counted = count_suffix(check.suffix, project_id=target.project_id, first_line=report.first_bad_line or 1)
        contents = counted.to_dict()
        setting_aside = describe(counted.events, counted.claims, counted.tasks, counted.bytes)
        if out.json_mode:
            sys.stderr.write(f"Will set aside {setting_aside}.\n")
        else:
            out.show(
                key_value_table(
                    "Damage found",
                    [
                        ("project", report.project_id),
                        ("first bad line", f"{report.first_bad_line}: {report.reason} ({report.code})"),
                        ("will set aside", setting_aside),
                        ("intact among them", f"{plural(counted.intact_events, 'event')} whose own hash verifies"),
                        (
                            "will keep",
                            f"{plural(report.events, 'verified event')} ({plural(report.verified_bytes, 'byte')})",
                        ),
                        (
                            "raw bytes",
                            "kept in quarantine/ (0600), for `recover salvage`"
                            if keep_bytes
                            else "not kept (--summary-only: length and sha256 only)",
                        ),
                    ],
                )
            )
        if not yes and not _confirm(setting_aside, report.events):
            return declined(out, target.fields(), exit_code=DAMAGED)
    with out.progress("Quarantining under the ledger lock"):
        result = quarantine_damaged_suffix(
            target.store,
            keep_bytes=keep_bytes,
            deadline=time.monotonic() + wait,
            expected_sha256=report.damaged_sha256,
        )
    if out.json_mode:
        out.json_object({**target.fields(), **result.to_dict(), "contents": contents}, exit_code=OK)
        return OK
    if result.action == "none":
        out.line(f"Nothing to quarantine: the ledger verifies ({plural(result.events, 'event')}).")
        return OK
    kept = f"{plural(result.events, 'verified event')} kept ({plural(result.verified_bytes, 'byte')})"
    rows = [
        ("ledger", f"{kept}, head {result.head_hash or '-'}"),
        (
            "set aside",
            f"{plural(result.quarantined_bytes, 'byte')} from line {result.first_bad_line} ({result.reason})",
        ),
        ("summary", str(result.record)),
        ("raw bytes", result.kept_bytes_file or "not kept (--summary-only)"),
    ]
    out.show(key_value_table("Quarantined", rows))
    out.line("The ledger verifies again and accepts writes.")
    if result.kept_bytes_file and contents and contents["intact_events"]:
        out.line(
            f"Next: `intentloop recover salvage` re-appends the {plural(contents['intact_events'], 'intact event')} "
            "set aside."
        )
    return OK


def describe(events: int, claims: int, tasks: int, byte_count: int) -> str:
    """``3 events, 2 claims, 1 task (2,880 bytes)``."""
    return (
        f"{plural(events, 'event')}, {plural(claims, 'claim')}, {plural(tasks, 'task')} ({plural(byte_count, 'byte')})"
    )


def _confirm(setting_aside: str, kept: int) -> bool:
    """Ask on the terminal; refuse (``CONFIRMATION_REQUIRED``) when there is none."""
    from intentloop.cli._confirm import confirm

    return confirm(
        f"Set aside {setting_aside} and keep {plural(kept, 'verified event')} as the ledger?",
        what="quarantine changes the ledger",
    )


__all__ = ["describe", "quarantine"]
