"""``intentloop verify``: check a project's hash chain and its signed head; exit 0 when intact, 1 when damaged or the
head signature is invalid. ``--accept`` signs the chain as it is after showing that report (the one way to write
again after a change this installation did not sign)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table, print_error
from intentloop.cli._select import plural, short
from intentloop.errors import CorruptLedgerError, IntentLoopError

if TYPE_CHECKING:
    from intentloop.cli._table import Table
    from intentloop.cli._target import Target
    from intentloop.recovery import VerifyReport


AcceptOption = Annotated[
    bool,
    typer.Option(
        "--accept",
        help="After the report, sign the chain as it is (events no valid signature covers are recorded as adopted); "
        "asks first.",
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="With --accept: do not ask (required without a terminal).")
]


def verify(
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    json_output: JsonOption = False,
    accept: AcceptOption = False,
    yes: YesOption = False,
) -> int:
    """Verify a project's ledger: every line canonical, chained and hashed, and its signed head. Exit 0 intact, 1
    damaged or head signature invalid, 2 usage.

    With --accept, an intact chain that this installation's signature does not vouch for (rewritten, truncated,
    head.sig missing or under another key) is signed as it is, after the report shows what is accepted; writes work
    again. A damaged chain is not accepted: recover it first.

    The one O(n) command: it reads and re-checks every line, a chunk at a time, so its time grows with the ledger
    and its memory does not; writes and hooks trust the verified checkpoint while the file matches it.

    A damaged ledger is reported with its first bad line and the reason; the signature as valid, invalid, unsigned
    or unknown_key; reading creates and changes nothing.
    """
    out = Output("verify", json_mode=json_output)
    return out.guard(lambda: without_cyclic_gc(lambda: _run(out, project_root, project_id, accept=accept, yes=yes)))


def without_cyclic_gc(body: Callable[[], int]) -> int:
    """Run ``body`` with the cyclic garbage collector off, then restore it.

    Why: each chunk's decoded events (no reference cycles) would make the collector traverse them again; off, the
    process took half the time (docs/BENCHMARK.md, "Measurements behind the code"). Only this command's process does
    it, never the library (the hook process keeps it off the same way, ``hooks/_run.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return body()
    finally:
        if was_enabled:
            gc.enable()


def _run(out: Output, project_root: str | None, project_id: str | None, *, accept: bool, yes: bool) -> int:
    from intentloop.cli._target import resolve_target
    from intentloop.recovery import verify_project

    target = resolve_target(project_root, project_id, asks_to="sign" if accept else None)
    with out.progress("Verifying the ledger"):
        report = verify_project(target.store)
    fields = {**target.fields(), **report.to_dict()}
    error = damage_error(report)
    if accept:
        return _accept(out, target, report, fields, error, yes=yes)
    exit_code = OK if error is None else DAMAGED
    if out.json_mode:
        out.json_object(fields, exit_code=exit_code, error=error)
        return exit_code
    out.show(report_table(report, target))
    if error is not None:
        print_error(error)
    return exit_code


def _accept(
    out: Output,
    target: Target,
    report: VerifyReport,
    fields: dict[str, object],
    error: IntentLoopError | None,
    *,
    yes: bool,
) -> int:
    """Sign the chain the report describes, once the user has seen it (``--yes`` or a terminal's ``y``)."""
    from intentloop.cli._confirm import confirm, declined
    from intentloop.recovery import accept_chain

    if not out.json_mode:
        out.show(report_table(report, target))
    if not report.intact:
        assert error is not None
        return out.failure(error, fields=fields)
    what = (
        f"accept {report.events} events up to head {report.head_hash or '-'} as this installation's "
        f"(signature now: {report.signature}{'; ' + report.signature_problem if report.signature_problem else ''})"
    )
    if not yes and not confirm(f"{what[0].upper()}{what[1:]}?", what="verify --accept signs the chain as it is"):
        return declined(out, fields, exit_code=DAMAGED)
    adopted = accept_chain(target.store, report)
    accepted = {**fields, "accepted": {"events": report.events, "head_hash": report.head_hash, "adopted": adopted}}
    if out.json_mode:
        out.json_object(accepted, exit_code=OK)
    else:
        out.line(
            f"accepted: {report.events} events up to head {report.head_hash or '-'}; {adopted} recorded as adopted"
        )
    return OK


def damage_error(report: VerifyReport) -> IntentLoopError | None:
    """The error a damaged report stands for (its stable code, line and reason), ``SIGNATURE_INVALID`` for an intact
    chain whose signed head does not match it, ``None`` when intact."""
    if report.intact:
        if report.signature == "invalid":
            return CorruptLedgerError(
                f"the head signature does not vouch for the chain: {report.signature_problem}",
                code="SIGNATURE_INVALID",
            )
        return None
    line = report.first_bad_line
    message = f"line {line}: {report.reason}" if line is not None else str(report.reason)
    return CorruptLedgerError(message, line=line, reason=report.reason or "", code=report.code or "CORRUPT_LEDGER")


def report_table(report: VerifyReport, target: Target | None = None) -> Table:
    """The human table of a :class:`recovery.VerifyReport`."""
    verdict = "intact" if report.intact else f"DAMAGED ({report.status})"
    rows: list[tuple[str, str]] = [("project", short(report.project_id))]
    if target is not None and target.project_root:
        rows.append(("project root", target.project_root))
    signature = report.signature
    if report.signed_events is not None:
        signature += f" ({plural(report.signed_events, 'event')} signed)"
    if report.signature_problem:
        signature += f": {report.signature_problem}"
    rows += [
        ("ledger", report.ledger_path if report.ledger_exists else f"{report.ledger_path} (none yet)"),
        ("status", verdict),
        ("verified events", str(report.events)),
        ("head hash", report.head_hash or "-"),
        ("schema version", str(report.ledger_schema_version) if report.ledger_schema_version else "-"),
        ("bytes", f"{report.verified_bytes} verified of {report.byte_length}"),
        ("signature", signature),
        ("adopted unsigned", adoption_text(report.adopted_events, report.adopted)),
    ]
    if not report.intact:
        rows += [
            ("first bad line", str(report.first_bad_line)),
            ("reason", f"{report.reason} ({report.code})"),
            ("damaged bytes", f"{report.damaged_bytes} (sha256 {report.damaged_sha256})"),
            ("torn tail", "yes" if report.torn_tail else "no"),
        ]
    rows.append(("quarantine records", str(report.quarantine_records)))
    return key_value_table(f"Ledger verification: {verdict}", rows)


def adoption_text(events: int, adopted: list[dict[str, object]]) -> str:
    """How many events were appended without the key and signed later, and when (``verify`` and ``status``)."""
    if not adopted:
        return "none"
    last = adopted[-1]
    return f"{events} events in {len(adopted)} adoptions, last {last['events']} at {last['at']}"


__all__ = ["adoption_text", "damage_error", "report_table", "verify", "without_cyclic_gc"]
