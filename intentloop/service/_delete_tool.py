"""Physical deletion of a task or a claim (``intent_delete``); the rewrite and the byte scan are ``_delete.py``.

Deletion is verified three times: the re-chained ledger must not contain the id before it replaces the file, the
store re-verifies what it wrote, and afterwards every file of the project directory is read back and searched.
``quarantine/`` loses only the lines that hold the deleted item (an admin's kept bytes of other events stay): why
line by line and not file by file — a kept damaged suffix holds many events, and one deletion must not take them.
Why the claim is found through the task index and each file read once after the rewrite: a question a read (``forget
claim`` read the ledger 5 times beside the rewrite, now 2: 2.15 → 1.89 s CPU at 100,000 events; docs/BENCHMARK.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.model import Event, ProjectState, TaskState, project
from intentloop.service._delete import (
    content_needles,
    creating_request,
    erased_statement_digest,
    find_copies,
    remove_claim,
    remove_task,
    scan_after_deletion,
    scan_project_files,
    statement_needles,
    tombstone_digest,
)
from intentloop.service._hookkey import load_or_create_hook_key
from intentloop.service._rules import check_uuid
from intentloop.service._state import Ctx, Engine, task_not_found
from intentloop.service.args import DeleteArgs, opt
from intentloop.store import LockedLedger, task_events, task_events_holding, tasks_holding
from intentloop.store.aio import open_locked_ledger


class _Deletion:
    """The edit a deletion makes to each event of the ledger (see ``LockedLedger.rewrite_each``): the target task or
    claim goes, then each exact copy (``delete_copies``); on the way it notes the requests that created a deleted
    claim, for their tombstones."""

    def __init__(self, *, task_id: str, claim_id: str | None) -> None:
        self.task_id = task_id
        self.claim_id = claim_id
        self.copies: list[tuple[str, str]] = []  # (task id, claim id) of the exact copies deleted too
        self.requests: list[tuple[str, str, str]] = []

    def target(self, event: Event) -> list[Event]:
        """The events that take the place of ``event`` without the target alone (what the copies are looked for in)."""
        if self.claim_id is None:
            kept = remove_task(event, self.task_id)
            return [] if kept is None else [kept]
        return remove_claim(event, self.task_id, self.claim_id)

    def __call__(self, event: Event) -> Event | list[Event]:
        if self.claim_id is not None:
            self._note(creating_request(event, self.task_id, {self.claim_id}))
        for task_id, claim_id in self.copies:
            self._note(creating_request(event, task_id, {claim_id}))
        kept = self.target(event)
        for task_id, claim_id in self.copies:
            kept = [out for one in kept for out in remove_claim(one, task_id, claim_id)]
        return event if len(kept) == 1 and kept[0] is event else kept

    def _note(self, request: tuple[str, str, str] | None) -> None:
        if request is not None:
            self.requests.append(request)


def _fold(events: Sequence[Event], task_id: str) -> TaskState | None:
    return project(events).tasks.get(task_id)


def _claim_task(ctx: Ctx, task_id: str, claim_id: str) -> TaskState | None:
    """``task_id`` folded from its events that name ``claim_id`` and its ``task_started`` events: whether it is
    started, and the claim as the whole task's fold has it (every event that records the claim holds its id), without
    the task's other events (a task of 20,000 claims folded whole took ~80 MB), read through the task index (not a
    pass over the whole ledger) when the checkpoint vouches for the file."""
    return _fold(
        task_events_holding(ctx.store.paths, task_id, [claim_id.encode(), b'"event_type":"task_started"']), task_id
    )


def _copies(
    ctx: Ctx,
    statements: Collection[str],
    edit: Callable[[Event], list[Event]] | None = None,
    *,
    tasks: Collection[str] | None = None,
) -> list[dict[str, str]]:
    """:func:`find_copies` over the durable ledger (after ``edit``, when given), folding only the tasks whose lines
    hold a statement's bytes (``tasks`` when the caller's read of the ledger found them), one task at a time: the same
    answer as a fold of every task, in memory that is one task's."""
    if tasks is None:
        tasks = tasks_holding(ctx.store.paths, statement_needles(statements))
    found: list[dict[str, str]] = []
    for task_id in sorted(tasks):
        events = task_events(ctx.store.paths, task_id)
        if edit is not None:
            events = [kept for event in events for kept in edit(event)]
        task = _fold(events, task_id)
        if task is not None:
            single = ProjectState()
            single.tasks[task_id] = task
            found += find_copies(single, statements)
    return found


def _with_copies(ctx: Ctx, deletion: _Deletion, statements: Collection[str]) -> list[dict[str, str]]:
    """Add the claims that repeat a deleted statement word for word to ``deletion`` (``delete_copies``)."""
    copies = [c for c in _copies(ctx, statements, deletion.target) if c["match"] == "same_statement"]
    deletion.copies = [(c["task_id"], c["claim_id"]) for c in copies]
    return [{"task_id": c["task_id"], "claim_id": c["claim_id"]} for c in copies]


def _rewrite(locked: LockedLedger, deletion: _Deletion, markers: Sequence[str]) -> None:
    """Rewrite the ledger without the deleted items in one streaming pass, unless the edit changes nothing. Only
    the lines that name a task the edit concerns (the target's, each copy's) are decoded: an event of another task
    changes only when it names the deleted task."""
    touched = {deletion.task_id, *(task_id for task_id, _claim_id in deletion.copies)}
    locked.rewrite_each(
        deletion,
        touches=sorted(t.encode() for t in touched),
        forbidden=[marker.encode("utf-8") for marker in markers],
    )


def _remember_deleted(
    ctx: Ctx, locked: LockedLedger, requests: Sequence[tuple[str, str, str]], statements: Collection[str]
) -> None:
    """Leave a content-free tombstone per request that created a deleted claim, so its replay answers
    ``CLAIM_DELETED`` instead of recreating the claim (a deleted task needs none: its task id is gone, a replay
    answers ``TASK_NOT_FOUND``), and one per deleted statement, so an import of an old export leaves it out
    (``_import.py``)."""
    if requests or statements:
        key = load_or_create_hook_key(ctx.store.data_root)
        locked.add_tombstones(
            [tombstone_digest(key, *request) for request in requests]
            + [erased_statement_digest(key, statement) for statement in sorted(statements)]
        )


def _finish(ctx: Ctx, locked: LockedLedger, ids: Sequence[str], statements: Collection[str]) -> dict[str, Any]:
    """After the rewrite, under the lock: strip quarantine, then read every file once — scanned for the ids, searched
    for the content, and the ledger's lines for the tasks that may hold a copy — and report what else holds it."""
    needles = content_needles(statements)
    locked.strip_quarantine([i.encode() for i in ids] + needles)
    after = scan_after_deletion(ctx.store, ids, needles, statement_needles(statements))
    return {
        "persistent_files_scanned": after.scanned,
        "other_copies": _copies(ctx, statements, tasks=after.statement_tasks),
        "files_with_content": after.files_with_content,
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
    task = private if private is not None else _claim_task(ctx, task_id, claim_id)
    if task is None or not task.started:
        raise task_not_found()
    if claim_id not in task.claims:
        raise IntentLoopError("claim does not exist in this task", code="CLAIM_NOT_FOUND")
    statements = {task.claims[claim_id].statement}
    del task  # only the statement is needed from here on
    async with open_locked_ledger(ctx.store, lazy=True) as locked:
        # Refuse before changing anything when a file the deletion does not rewrite already holds the id.
        scan_project_files(ctx.store, [claim_id], skip=ctx.store.rewritten_by_deletion())
        deletion = _Deletion(task_id=task_id, claim_id=claim_id)
        deleted_copies = _with_copies(ctx, deletion, statements) if copies_too else []
        ids = [claim_id, *(c["claim_id"] for c in deleted_copies)]
        _rewrite(locked, deletion, ids)
        _remember_deleted(ctx, locked, deletion.requests, statements if private is None else ())
        found = _finish(ctx, locked, ids, statements)
    if private is not None:
        events = engine.private.get(ctx.project_id, task_id) or []
        kept = [kept for event in events for kept in remove_claim(event, task_id, claim_id)]
        engine.private.replace(ctx.project_id, task_id, kept)
    return {"deleted": "claim", "claim_id": claim_id, **found, "deleted_copies": deleted_copies}


async def _delete_task(engine: Engine, ctx: Ctx, task_id: str, confirmation: str, copies_too: bool) -> dict[str, Any]:
    expected = f"DELETE TASK {task_id}"
    if confirmation != expected:
        raise InvalidInputError(f"confirmation must equal {expected}", code="CONFIRMATION_REQUIRED")
    known = engine.private.has(ctx.project_id, task_id)
    if not known:  # a task has events when one of its own lines holds its id (its task_id field)
        known = task_id in tasks_holding(ctx.store.paths, [task_id.encode()])
        known = known or engine.control_for_task(ctx, task_id) is not None
    if not known:
        raise task_not_found()
    async with open_locked_ledger(ctx.store, lazy=True) as locked:
        # No CORRUPT_PRIVATE_STATE guard here: a durable private record is exactly what deletion must remove.
        scan_project_files(ctx.store, [task_id], skip=ctx.store.rewritten_by_deletion())
        doomed = _fold(task_events(ctx.store.paths, task_id), task_id)
        private = engine.private_state(ctx, task_id)
        durable = {c.statement for c in doomed.claims.values()} if doomed else set()
        statements = durable | {
            c.statement for t in (private and private.tasks.get(task_id),) if t for c in t.claims.values()
        }
        deletion = _Deletion(task_id=task_id, claim_id=None)
        deleted_copies = _with_copies(ctx, deletion, statements) if copies_too else []
        ids = [task_id, *(c["claim_id"] for c in deleted_copies)]
        _rewrite(locked, deletion, ids)
        _remember_deleted(ctx, locked, deletion.requests, durable)  # private state never touches disk
        for control in engine.controls_for(ctx.store.read_controls(), task_id):
            locked.remove_control(control.host_session_hash)
        found = _finish(ctx, locked, ids, statements)
    engine.private.drop(ctx.project_id, task_id)
    return {"deleted": "task", "task_id": task_id, **found, "deleted_copies": deleted_copies}


__all__ = ["delete"]
