"""Physical deletion of a task or a claim (``intent_delete``); the rewrite and the byte scan are ``_delete.py``.

Deletion is verified three times: the re-chained ledger must not contain the id before it replaces the file, the
store re-verifies what it wrote, and afterwards every file of the project directory is read back and searched.
``quarantine/`` loses only the lines that hold the deleted item (an admin's kept bytes of other events stay): why
line by line and not file by file — a kept damaged suffix holds many events, and one deletion must not take them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from intentloop.errors import IntentLoopError, InvalidInputError, StorageError
from intentloop.model import Event, event_line, project, rechain
from intentloop.service._delete import (
    REWRITTEN_BY_DELETE,
    content_needles,
    creating_requests,
    files_holding,
    find_copies,
    remove_claim,
    remove_task,
    scan_project_files,
    tombstone_digest,
)
from intentloop.service._hookkey import load_or_create_hook_key
from intentloop.service._rules import check_uuid
from intentloop.service._state import Ctx, Engine, task_not_found
from intentloop.service.args import DeleteArgs, opt
from intentloop.store import LockedLedger
from intentloop.store.aio import open_locked_ledger


def _verify_absent(events: list[Event], markers: Sequence[str]) -> None:
    needles = [marker.encode("utf-8") for marker in markers]
    if any(needle in event_line(event) for event in events for needle in needles):
        raise StorageError(
            "the rewritten ledger still contains the deleted identifier", code="DELETE_VERIFICATION_FAILED"
        )


def _rewrite(locked: LockedLedger, ctx: Ctx, base: list[Event], events: list[Event], markers: Sequence[str]) -> None:
    """Rewrite the ledger as ``events`` unless they are ``base`` (the ledger's events, read once: a server's view
    decodes them anew on every pass) untouched."""
    if len(events) == len(base) and all(a is b for a, b in zip(events, base, strict=True)):
        return
    chained = rechain(events, project_id=ctx.project_id)
    _verify_absent(chained, markers)
    locked.rewrite(chained)


def _without_copies(events: list[Event], statements: Collection[str]) -> tuple[list[Event], list[dict[str, str]]]:
    """``events`` without the claims that repeat a deleted statement word for word (``delete_copies``)."""
    copies = [c for c in find_copies(project(events), statements) if c["match"] == "same_statement"]
    for copy in copies:
        events = remove_claim(events, copy["task_id"], copy["claim_id"])
    return events, [{"task_id": c["task_id"], "claim_id": c["claim_id"]} for c in copies]


def _remember_deleted(ctx: Ctx, locked: LockedLedger, requests: Sequence[tuple[str, str, str]]) -> None:
    """Leave a content-free tombstone per request that created a deleted claim, so its replay answers
    ``CLAIM_DELETED`` instead of recreating the claim (a deleted task needs none: its task id is gone, a replay
    answers ``TASK_NOT_FOUND``)."""
    if requests:
        key = load_or_create_hook_key(ctx.store.data_root)
        locked.add_tombstones([tombstone_digest(key, *request) for request in requests])


def _finish(
    engine: Engine, ctx: Ctx, locked: LockedLedger, ids: Sequence[str], statements: Collection[str]
) -> dict[str, Any]:
    """After the rewrite, under the lock: strip quarantine, scan every file, report what else holds the content."""
    needles = content_needles(statements)
    locked.strip_quarantine([i.encode() for i in ids] + needles)
    scanned = scan_project_files(ctx.store.project_dir, ids)
    state = engine.state(ctx, locked.view)
    return {
        "persistent_files_scanned": scanned,
        "other_copies": find_copies(state, statements),
        "files_with_content": files_holding(ctx.store.project_dir, needles),
    }


async def delete(engine: Engine, ctx: Ctx, args: DeleteArgs) -> dict[str, Any]:
    """Physically delete a task or a claim after the exact confirmation text.

    The result says what else still holds a deleted statement: ``other_copies`` (claims repeating or quoting it,
    e.g. an import into another task) and ``files_with_content`` (files holding its bytes); with ``delete_copies``
    the word-for-word copies are deleted too (``deleted_copies``).

    Raises:
        IntentLoopError: ``INVALID_ID``, ``CONFIRMATION_REQUIRED``, ``CLAIM_ID_REQUIRED``, ``TASK_NOT_FOUND``,
            ``CLAIM_NOT_FOUND``, ``PRIVATE_CONTROL_MISSING``, ``DELETE_VERIFICATION_FAILED``; storage errors
            (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE`` found while scanning).
    """
    task_id = check_uuid(args.task_id, "task_id")
    copies_too = opt(args.delete_copies) is True
    if args.target == "task":
        return await _delete_task(engine, ctx, task_id, args.confirmation, copies_too)
    raw_claim_id = opt(args.claim_id)
    if raw_claim_id is None:
        raise InvalidInputError("claim_id is required for record deletion", code="CLAIM_ID_REQUIRED")
    claim_id = check_uuid(raw_claim_id, "claim_id")
    expected = f"DELETE CLAIM {claim_id}"
    if args.confirmation != expected:
        raise InvalidInputError(f"confirmation must equal {expected}", code="CONFIRMATION_REQUIRED")
    private = engine.private_task(ctx, task_id)
    task = private if private is not None else engine.precheck_state(ctx).started_task(task_id)
    if task is None or not task.started:
        raise task_not_found()
    if claim_id not in task.claims:
        raise IntentLoopError("claim does not exist in this task", code="CLAIM_NOT_FOUND")
    statements = {task.claims[claim_id].statement}
    async with open_locked_ledger(ctx.store) as locked:
        # Refuse before changing anything when a file the deletion does not rewrite already holds the id.
        scan_project_files(ctx.store.project_dir, [claim_id], skip=REWRITTEN_BY_DELETE)
        base = list(locked.view.events)
        events = remove_claim(base, task_id, claim_id)
        deleted_copies: list[dict[str, str]] = []
        if copies_too:
            events, deleted_copies = _without_copies(events, statements)
        ids = [claim_id, *(c["claim_id"] for c in deleted_copies)]
        gone = creating_requests(base, task_id, {claim_id})
        for copy in deleted_copies:
            gone += creating_requests(base, copy["task_id"], {copy["claim_id"]})
        _rewrite(locked, ctx, base, events, ids)
        _remember_deleted(ctx, locked, gone)
        found = _finish(engine, ctx, locked, ids, statements)
    if private is not None:
        events = engine.private.get(ctx.project_id, task_id) or []
        engine.private.replace(ctx.project_id, task_id, remove_claim(events, task_id, claim_id))
    return {"deleted": "claim", "claim_id": claim_id, **found, "deleted_copies": deleted_copies}


async def _delete_task(engine: Engine, ctx: Ctx, task_id: str, confirmation: str, copies_too: bool) -> dict[str, Any]:
    expected = f"DELETE TASK {task_id}"
    if confirmation != expected:
        raise InvalidInputError(f"confirmation must equal {expected}", code="CONFIRMATION_REQUIRED")
    known = engine.private.has(ctx.project_id, task_id)
    if not known:
        state = engine.precheck_state(ctx)
        known = state.task(task_id) is not None or engine.control_for_task(ctx, task_id) is not None
    if not known:
        raise task_not_found()
    async with open_locked_ledger(ctx.store) as locked:
        # No CORRUPT_PRIVATE_STATE guard here: a durable private record is exactly what deletion must remove.
        scan_project_files(ctx.store.project_dir, [task_id], skip=REWRITTEN_BY_DELETE)
        doomed = engine.state(ctx, locked.view).tasks.get(task_id)
        private = engine.private_state(ctx, task_id)
        statements = {
            c.statement for t in (doomed, private and private.tasks.get(task_id)) if t for c in t.claims.values()
        }
        base = list(locked.view.events)
        events = remove_task(base, task_id)
        deleted_copies: list[dict[str, str]] = []
        if copies_too:
            events, deleted_copies = _without_copies(events, statements)
        ids = [task_id, *(c["claim_id"] for c in deleted_copies)]
        gone = [r for c in deleted_copies for r in creating_requests(base, c["task_id"], {c["claim_id"]})]
        _rewrite(locked, ctx, base, events, ids)
        _remember_deleted(ctx, locked, gone)
        for control in engine.controls_for(ctx.store.read_controls(), task_id):
            locked.remove_control(control.host_session_hash)
        found = _finish(engine, ctx, locked, ids, statements)
    engine.private.drop(ctx.project_id, task_id)
    return {"deleted": "task", "task_id": task_id, **found, "deleted_copies": deleted_copies}


__all__ = ["delete"]
