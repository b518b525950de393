"""The one transaction every semantic mutation runs: idempotency and rules decided under the ledger lock.

Everything that depends only on the input is checked before the lock; under it, the task's current state decides
(request-id replay first, then the rules) and at most the decided events are appended. A task that is private in this
process takes the same path against its in-memory ledger, so idempotency and rules are identical in both modes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from intentloop.errors import ConflictError, IntentLoopError
from intentloop.model import Event, EventDraft, TaskState
from intentloop.service._delete import tombstone_digest
from intentloop.service._hookkey import load_hook_key
from intentloop.service._state import Ctx, Engine, guard_durable, mode_off, private_active
from intentloop.store import LedgerView
from intentloop.store.aio import open_locked_ledger

Decide = Callable[[TaskState, Callable[[], LedgerView]], list[EventDraft]]


def find_duplicate(task: TaskState | None, request_id: str, types: Collection[str], fingerprint: str) -> Event | None:
    """The event an earlier call with ``request_id`` wrote in this task, when its parameters match.

    Raises:
        ConflictError: ``REQUEST_ID_REUSED`` when the request id was used with another operation or other parameters.
    """
    if task is None:
        return None
    event = task.requests.get(request_id)
    if event is None:
        return None
    if event.event_type not in types or event.payload.get("request_fingerprint") != fingerprint:
        raise ConflictError("request_id was already used with different operation parameters", code="REQUEST_ID_REUSED")
    return event


def require_writable(task: TaskState | None) -> TaskState:
    """Raises: IntentLoopError ``TASK_NOT_FOUND`` or ``MODE_OFF``."""
    if task is None or not task.started:
        raise IntentLoopError("task is not associated with this project", code="TASK_NOT_FOUND")
    if task.mode == "off":
        raise mode_off(read=False)
    return task


def refuse_deleted_replay(ctx: Ctx, task_id: str, request_id: str, fingerprint: str) -> None:
    """Refuse a replay of a request whose claim was deleted (its idempotency record went with it).

    Raises:
        IntentLoopError: ``CLAIM_DELETED``; storage errors reading the tombstones or the key.
    """
    tombstones = ctx.store.read_tombstones()
    if not tombstones:
        return
    key = load_hook_key(ctx.store.data_root)
    if key is not None and tombstone_digest(key, task_id, request_id, fingerprint) in tombstones:
        raise ConflictError(
            "this request created a claim that was deleted since; use a new request_id to record it again",
            code="CLAIM_DELETED",
        )


async def semantic_write(
    engine: Engine,
    ctx: Ctx,
    task_id: str,
    request_id: str,
    types: Collection[str],
    fingerprint: str,
    decide: Decide,
) -> Event:
    """Run one semantic mutation of ``task_id``; returns the event that carries the result (new or original).

    ``decide(task, durable_view)`` validates against the current task and returns the drafts to append.

    Raises:
        IntentLoopError: ``REQUEST_ID_REUSED``, ``CLAIM_DELETED``, ``TASK_NOT_FOUND``, ``MODE_OFF``,
            ``PRIVATE_SESSION_ACTIVE``, ``PRIVATE_CONTROL_MISSING``, ``CORRUPT_PRIVATE_STATE``, whatever ``decide``
            raises; storage errors.
    """
    private = engine.private_task(ctx, task_id)
    if private is not None:
        duplicate = find_duplicate(private, request_id, types, fingerprint)
        if duplicate is not None:
            return duplicate
        drafts = decide(require_writable(private), ctx.store.read)
        appended = [engine.private.append(ctx.project_id, task_id, draft) for draft in drafts]
        return appended[-1]
    if not ctx.store.exists():  # nothing to mutate: fail without creating the project directory
        raise IntentLoopError("task is not associated with this project", code="TASK_NOT_FOUND")
    async with open_locked_ledger(ctx.store) as locked:
        view = locked.view
        task = view.task(task_id)
        guard_durable(task)
        if engine.controls_for(ctx.store.read_controls(), task_id):
            raise private_active()
        duplicate = find_duplicate(task, request_id, types, fingerprint)
        if duplicate is not None:
            return duplicate
        refuse_deleted_replay(ctx, task_id, request_id, fingerprint)
        drafts = decide(require_writable(task), lambda: view)
        events = locked.append(drafts)
    return events[-1]


__all__ = ["Decide", "find_duplicate", "refuse_deleted_replay", "require_writable", "semantic_write"]
