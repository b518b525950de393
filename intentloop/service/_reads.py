"""The read-only tools: status, snapshot, candidates and export. Lock-free; they never create storage.

Reads see the private in-memory ledger of this process first; a task whose control file says it is private elsewhere
(or was private in a process that is gone) fails closed with ``PRIVATE_SESSION_ACTIVE`` rather than show durable
state the user asked to keep out of view.
"""

from __future__ import annotations

from typing import Any

import msgspec

from intentloop import SCHEMA_VERSION
from intentloop.errors import InvalidInputError
from intentloop.model import TaskState, claim_history, parse_time, project_task_as_of, utc_now
from intentloop.model.compact import DEFAULT_SNAPSHOT_CHARACTERS
from intentloop.service._evidence import strip_extensions
from intentloop.service._graph import portable_export, summary_export
from intentloop.service._rules import check_uuid
from intentloop.service._state import Ctx, Engine, guard_durable, private_active, task_not_found
from intentloop.service.args import ExportArgs, ListCandidatesArgs, SnapshotArgs, StatusArgs, opt
from intentloop.store import require_vouched, sign_export

RECOVERY_ACTION = "Explicitly set mode to on/off to create an empty durable task, resume private, or delete the task."


def status(engine: Engine, ctx: Ctx, args: StatusArgs) -> dict[str, Any]:
    """Counts and locations without claim content; works in every mode and creates nothing.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``TASK_NOT_FOUND``, ``PRIVATE_SESSION_ACTIVE``, ``PRIVATE_CONTROL_MISSING``,
            ``CORRUPT_PRIVATE_STATE``; storage and corruption errors.
    """
    raw_task_id = opt(args.task_id)
    if raw_task_id is None:
        view = ctx.store.read()
        return {
            "project_id": ctx.project_id,
            "task_count": len(view.task_ids()),
            "candidate_count": view.candidate_count(),
            "data_directory": str(ctx.store.project_dir),
            "schema_version": SCHEMA_VERSION,
            "private_tasks_in_process": engine.private.count(ctx.project_id),
            "private_session_control_count": len(ctx.store.read_controls()),
        }
    task_id = check_uuid(raw_task_id, "task_id")
    task = engine.private_task(ctx, task_id)
    private = task is not None
    if task is None:
        task = engine.durable_task(ctx, task_id)
        guard_durable(task)
        control = engine.control_for_task(ctx, task_id)
        if task is None and control is not None:
            return {
                "project_id": ctx.project_id,
                "task_id": task_id,
                "mode": "private",
                "active_claim_count": 0,
                "candidate_count": 0,
                "semantic_state_available": False,
                "recovery_action": RECOVERY_ACTION,
                "data_directory": None,
                "schema_version": SCHEMA_VERSION,
            }
        if control is not None:
            raise private_active()
    if task is None or not task.started:
        raise task_not_found()
    return {
        "project_id": ctx.project_id,
        "task_id": task_id,
        "mode": task.mode,
        "active_claim_count": len(task.active_claims()),
        "candidate_count": len(task.candidates),
        "data_directory": None if private or task.mode == "private" else str(ctx.store.project_dir),
        "schema_version": SCHEMA_VERSION,
    }


def snapshot(engine: Engine, ctx: Ctx, args: SnapshotArgs) -> dict[str, Any]:
    """The current intent of one task (``max_characters`` caps only ``compact_text``), or its intent as of an instant.

    ``as_of`` folds only the task's events recorded at or before it (the current access rules still apply: a task
    that is off or private elsewhere now is not readable in the past either); long-term staleness is judged at that
    instant. ``include_history`` appends ``history`` (superseded and invalidated claims of that same projection);
    ``include_peers`` appends ``peer_claims`` (docs/SYNC.md: the other writers' active claims, each with its
    origin, as the last sync accepted them) and the disputes between principals to ``disagreements``; without these
    arguments the answer is exactly the original's.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``INVALID_ARGUMENTS`` (an ``as_of`` that is no real instant),
            ``TASK_NOT_FOUND`` (also ``as_of`` before the task started), ``MODE_OFF``, ``PRIVATE_SESSION_ACTIVE``,
            ``SIGNATURE_INVALID`` (a durable task of a project whose signature does not vouch for its ledger).
    """
    task_id = check_uuid(args.task_id, "task_id")
    task = _vouched_task(engine, ctx, task_id)
    limit = max(500, min(opt(args.max_characters) or DEFAULT_SNAPSHOT_CHARACTERS, 8000))
    as_of = opt(args.as_of)
    if as_of is not None:
        try:
            moment = parse_time(as_of)
        except ValueError:
            raise InvalidInputError(
                f"as_of is not an RFC 3339 UTC instant: {as_of!r} - at `$.as_of`", code="INVALID_ARGUMENTS"
            ) from None
        task = project_task_as_of(engine.task_events(ctx, task_id), task_id, moment)
        if not task.started:
            raise task_not_found()
    result = engine.snapshot(ctx, task, limit, judged_at=as_of)
    if args.include_history:
        result["history"] = [msgspec.to_builtins(entry) for entry in claim_history(task)]
    if args.include_peers:
        from intentloop.service._share import snapshot_peers

        peers, disputes = snapshot_peers(ctx.store.data_root, ctx.project_root, ctx.project_id, task)
        result["peer_claims"] = peers
        if disputes:
            result["disagreements"] = [*result["disagreements"], *disputes]
    return result


def _vouched_task(engine: Engine, ctx: Ctx, task_id: str) -> Any:
    """:meth:`Engine.semantic_task`, refused with ``SIGNATURE_INVALID`` when the task is durable and the project's
    signature does not vouch for its ledger (docs/STORAGE.md, "Signed heads": reads carry the failure)."""
    if engine.private_task(ctx, task_id) is None:
        require_vouched(ctx.store)
    return engine.semantic_task(ctx, task_id)


def list_candidates(engine: Engine, ctx: Ctx, args: ListCandidatesArgs) -> list[dict[str, Any]]:
    """Unconfirmed candidates (hook observations, long-term signals, imports); listing never promotes them.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``TASK_NOT_FOUND``, ``MODE_OFF``, ``PRIVATE_SESSION_ACTIVE``.
    """
    task = _vouched_task(engine, ctx, check_uuid(args.task_id, "task_id"))
    return [candidate.to_wire() for candidate in task.candidates]


def export(engine: Engine, ctx: Ctx, args: ExportArgs) -> dict[str, Any]:
    """A portable graph of one task (every claim, history included) or a human summary.

    A portable graph carries a ``signature`` block (Ed25519 under this installation's key, over the graph without
    the block and without the read-time ``evidence_stale`` marks) once the installation has a key.
    ``original_format`` leaves out intentloop's own fields (the signature block, ``evidence_file``,
    ``evidence_stale``), so the original implementation's strict import accepts the graph.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``TASK_NOT_FOUND``, ``MODE_OFF``, ``PRIVATE_SESSION_ACTIVE``.
    """
    task_id = check_uuid(args.task_id, "task_id")
    task = _vouched_task(engine, ctx, task_id)
    if args.detail == "summary":
        return summary_export(engine.snapshot(ctx, task, DEFAULT_SNAPSHOT_CHARACTERS))
    graph = portable_export(
        project_id=ctx.project_id,
        task_id=task_id,
        exported_at=utc_now(),
        claims=[_without_peer_refs(msgspec.to_builtins(claim), task) for claim in task.claims.values()],
        invalidated=[claim_id for claim_id in task.invalidations if claim_id in task.claims],
        candidates=[candidate.to_wire() for candidate in task.candidates],
    )
    if args.original_format:
        return strip_extensions(graph)
    signature = sign_export(ctx.store.data_root, graph)
    if signature is not None:  # no key yet (nothing was written by this installation): an unsigned export
        graph["signature"] = signature
    return graph


def _without_peer_refs(claim: dict[str, Any], task: TaskState) -> dict[str, Any]:
    """A claim as an export carries it: ``supersedes`` and ``related_claim_ids`` name only the task's own claims (a
    shared project's claim may name a peer claim; docs/SYNC.md: no peer id leaves in an export)."""
    for field in ("supersedes", "related_claim_ids"):
        claim[field] = [claim_id for claim_id in claim[field] if claim_id in task.claims]
    return claim


__all__ = ["RECOVERY_ACTION", "export", "list_candidates", "snapshot", "status"]
