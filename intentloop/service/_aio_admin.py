"""Explicit import of a portable graph, and physical deletion of a task or a claim.

Deletion is verified three times: the re-chained ledger must not contain the id before it replaces the file, the
store re-verifies what it wrote, and afterwards every file of the project directory is read back and searched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from intentloop.errors import IntentLoopError
from intentloop.model import Event, EventDraft, ProjectState, TaskState, event_line, new_uuid, rechain
from intentloop.service._aio_txn import semantic_write
from intentloop.service._delete import REWRITTEN_BY_DELETE, remove_claim, remove_task, scan_project_files
from intentloop.service._engine import Ctx, Engine, task_not_found
from intentloop.service._graph import import_payload, validate_graph
from intentloop.service._rules import check_request_id, check_uuid
from intentloop.service.args import DeleteArgs, ImportArgs, opt
from intentloop.store import LedgerView, LockedLedger, export_signature_status
from intentloop.store.aio import open_locked_ledger


async def import_graph(engine: Engine, ctx: Ctx, args: ImportArgs) -> dict[str, Any]:
    """Validate and import a portable graph into a task as incomplete external history; returns the snapshot.

    A graph carrying a ``signature`` block imports whatever its verdict (unsigned, foreign or tampered graphs are
    external history like any other); the snapshot then reports ``signature_status`` (``valid``, ``invalid`` or
    ``unknown_key``).

    Raises:
        IntentLoopError: ``INVALID_ID``, ``INVALID_REQUEST_ID``, ``INVALID_IMPORT``, ``INVALID_STATEMENT``,
            ``RAW_PROMPT_REJECTED``, ``IMPORT_COLLISION``, ``REQUEST_ID_REUSED``, ``TASK_NOT_FOUND``, ``MODE_OFF``,
            ``PRIVATE_SESSION_ACTIVE``; storage errors.
    """
    task_id = check_uuid(args.task_id, "task_id")
    request_id = check_request_id(args.request_id)
    validate_graph(args.graph)
    payload = import_payload(args.graph, task_id, new_uuid)

    def decide(task: TaskState, state: ProjectState | None, _view: Callable[[], LedgerView]) -> list[EventDraft]:
        existing = engine.all_claim_ids(ctx, state if state is not None else engine.read_state(ctx)[1])
        existing.update(task.claims)
        for claim in payload["claims"]:
            if claim["claim_id"] in existing:
                raise IntentLoopError(f"claim {claim['claim_id']} already exists", code="IMPORT_COLLISION")
        return [
            EventDraft(
                event_type="graph_imported", task_id=task_id, actor="user", request_id=request_id, payload=payload
            )
        ]

    await semantic_write(engine, ctx, task_id, request_id, ("graph_imported",), payload["request_fingerprint"], decide)
    result = engine.snapshot(ctx, engine.semantic_task(ctx, task_id))
    if args.graph.signature is not msgspec.UNSET:  # intentloop's own: only a graph that carries a block is judged
        result["signature_status"] = export_signature_status(ctx.store.data_root, msgspec.to_builtins(args.graph))
    return result


def _verify_absent(events: list[Event], marker: str) -> None:
    needle = marker.encode("utf-8")
    if any(needle in event_line(event) for event in events):
        raise IntentLoopError(
            "the rewritten ledger still contains the deleted identifier", code="DELETE_VERIFICATION_FAILED"
        )


def _rewrite(locked: LockedLedger, ctx: Ctx, events: list[Event], marker: str) -> None:
    if len(events) == len(locked.view.events) and all(a is b for a, b in zip(events, locked.view.events, strict=True)):
        return
    chained = rechain(events, project_id=ctx.project_id)
    _verify_absent(chained, marker)
    locked.rewrite(chained)


async def delete(engine: Engine, ctx: Ctx, args: DeleteArgs) -> dict[str, Any]:
    """Physically delete a task or a claim after the exact confirmation text.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``CONFIRMATION_REQUIRED``, ``CLAIM_ID_REQUIRED``, ``TASK_NOT_FOUND``,
            ``CLAIM_NOT_FOUND``, ``PRIVATE_CONTROL_MISSING``, ``DELETE_VERIFICATION_FAILED``; storage errors
            (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE`` found while scanning).
    """
    task_id = check_uuid(args.task_id, "task_id")
    if args.target == "task":
        return await _delete_task(engine, ctx, task_id, args.confirmation)
    raw_claim_id = opt(args.claim_id)
    if raw_claim_id is None:
        raise IntentLoopError("claim_id is required for record deletion", code="CLAIM_ID_REQUIRED")
    claim_id = check_uuid(raw_claim_id, "claim_id")
    expected = f"DELETE CLAIM {claim_id}"
    if args.confirmation != expected:
        raise IntentLoopError(f"confirmation must equal {expected}", code="CONFIRMATION_REQUIRED")
    private = engine.private_task(ctx, task_id)
    task = private if private is not None else engine.precheck_state(ctx).started_task(task_id)
    if task is None or not task.started:
        raise task_not_found()
    if claim_id not in task.claims:
        raise IntentLoopError("claim does not exist in this task", code="CLAIM_NOT_FOUND")
    async with open_locked_ledger(ctx.store) as locked:
        # Refuse before changing anything when a file the deletion does not rewrite already holds the id.
        scan_project_files(ctx.store.project_dir, [claim_id], skip=REWRITTEN_BY_DELETE)
        _rewrite(locked, ctx, remove_claim(locked.view.events, task_id, claim_id), claim_id)
        locked.remove_quarantine()
        scanned = scan_project_files(ctx.store.project_dir, [claim_id])
        engine.state(ctx, locked.view)
    if private is not None:
        events = engine.private.get(ctx.project_id, task_id) or []
        engine.private.replace(ctx.project_id, task_id, remove_claim(events, task_id, claim_id))
    return {"deleted": "claim", "claim_id": claim_id, "persistent_files_scanned": scanned}


async def _delete_task(engine: Engine, ctx: Ctx, task_id: str, confirmation: str) -> dict[str, Any]:
    expected = f"DELETE TASK {task_id}"
    if confirmation != expected:
        raise IntentLoopError(f"confirmation must equal {expected}", code="CONFIRMATION_REQUIRED")
    known = engine.private.has(ctx.project_id, task_id)
    if not known:
        state = engine.precheck_state(ctx)
        known = state.task(task_id) is not None or engine.control_for_task(ctx, task_id) is not None
    if not known:
        raise task_not_found()
    async with open_locked_ledger(ctx.store) as locked:
        # No CORRUPT_PRIVATE_STATE guard here: a durable private record is exactly what deletion must remove.
        scan_project_files(ctx.store.project_dir, [task_id], skip=REWRITTEN_BY_DELETE)
        _rewrite(locked, ctx, remove_task(locked.view.events, task_id), task_id)
        for control in engine.controls_for(ctx.store.read_controls(), task_id):
            locked.remove_control(control.host_session_hash)
        locked.remove_quarantine()
        scanned = scan_project_files(ctx.store.project_dir, [task_id])
        engine.state(ctx, locked.view)
    engine.private.drop(ctx.project_id, task_id)
    return {"deleted": "task", "task_id": task_id, "persistent_files_scanned": scanned}


__all__ = ["delete", "import_graph"]
