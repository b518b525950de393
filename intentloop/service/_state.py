"""What one service process keeps between calls: its stores, its private ledgers, and the shared read checks.

Every question about the durable ledger goes to the store (a task's fold, the task bound to a session, counts): a
long-running process's store keeps the verified ledger as offsets and the folds of the tasks last asked for, so a
call only reads the lines of its own task (docs/STORAGE.md, "One read model").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intentloop.errors import ConflictError, CorruptLedgerError, IntentLoopError, StorageError
from intentloop.model import Event, ProjectState, TaskState, build_snapshot, project, utc_now
from intentloop.model.compact import DEFAULT_SNAPSHOT_CHARACTERS
from intentloop.service._private import PrivateLedgers
from intentloop.store import LedgerView, PrivateControl, ProjectStore

PRIVATE_ACTIVE_MESSAGE = (
    "private semantic state is active in another process or was lost with its process; explicitly set the mode to "
    "on or off to re-enable durable state (an empty durable task when none existed), set it to private to resume an "
    "empty private task, or delete the task"
)


@dataclass(frozen=True, slots=True)
class Ctx:
    """One call's project: its canonical root, its id and its store."""

    project_root: str
    project_id: str
    store: ProjectStore


def task_not_found() -> IntentLoopError:
    return IntentLoopError("task is not associated with this project", code="TASK_NOT_FOUND")


def mode_off(read: bool) -> IntentLoopError:
    text = (
        "Intent Loop is off for this task; use intent_status or re-enable it"
        if read
        else "semantic writes are disabled while Intent Loop is off"
    )
    return ConflictError(text, code="MODE_OFF")


def private_active() -> IntentLoopError:
    return ConflictError(PRIVATE_ACTIVE_MESSAGE, code="PRIVATE_SESSION_ACTIVE")


def guard_durable(task: TaskState | None) -> None:
    """A durable ledger must never record a task in mode ``private``.

    Raises:
        IntentLoopError: ``CORRUPT_PRIVATE_STATE``.
    """
    if task is not None and task.started and task.mode == "private":
        raise StorageError(
            "a private mode record was found in durable storage; semantic writes are blocked until the task is deleted",
            code="CORRUPT_PRIVATE_STATE",
        )


class Engine:
    """The per-process state of :class:`~intentloop.service.intent_service.IntentService` (no trio here)."""

    def __init__(
        self,
        data_root_resolver: Callable[[], os.PathLike[str] | str],
        *,
        lock_deadline: float | None = None,
        resident: bool = True,
        reads_off: bool = False,
    ) -> None:
        self._resolver = data_root_resolver
        self._lock_deadline = lock_deadline
        self._resident = resident
        self._reads_off = reads_off
        self._stores: dict[tuple[str, str], ProjectStore] = {}
        self.private = PrivateLedgers()

    # ----------------------------------------------------------------------------------------------- stores, views
    def context(self, project_root: str, project_id: str) -> Ctx:
        """Raises: StorageError ``DATA_DIR_REQUIRED`` (from the resolver) or ``INVALID_PROJECT_ID``."""
        root = str(Path(self._resolver()))
        key = (root, project_id)
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = ProjectStore(
                root, project_id, deadline=self._lock_deadline, resident=self._resident
            )
        return Ctx(project_root=project_root, project_id=project_id, store=store)

    def precheck_task(self, ctx: Ctx, task_id: str) -> TaskState | None:
        """Lock-free fold of ``task_id`` for the checks a mutation makes before it takes the lock.

        A torn last line is read as its verified prefix here: the locked write that follows repairs it (docs/EVENTS.md),
        so answering ``CORRUPT_TRAILING_EVENT`` would only make a retrying agent loop. Any other damage still raises.

        Raises:
            CorruptLedgerError: ``CORRUPT_LEDGER``, ``FUTURE_SCHEMA``, ``MIGRATION_UNAVAILABLE``; storage errors.
        """
        try:
            return ctx.store.task(task_id)
        except CorruptLedgerError as exc:
            if exc.code != "CORRUPT_TRAILING_EVENT":
                raise
            verification = ctx.store.verify()
            if verification.error is not None and verification.error.code != "CORRUPT_TRAILING_EVENT":
                raise verification.error from exc
            return project(e for e in verification.events if e.task_id == task_id).tasks.get(task_id)

    # ----------------------------------------------------------------------------------------------- private mode
    def private_state(self, ctx: Ctx, task_id: str) -> ProjectState | None:
        events = self.private.get(ctx.project_id, task_id)
        return None if events is None else project(events)

    def private_task(self, ctx: Ctx, task_id: str) -> TaskState | None:
        """The task from this process's private ledger, after checking its control is still ours.

        Raises:
            IntentLoopError: ``PRIVATE_CONTROL_MISSING`` when the control file is gone or names another task.
        """
        state = self.private_state(ctx, task_id)
        if state is None:
            return None
        task = state.tasks.get(task_id)
        if task is None or task.host_session_hash is None:
            raise ConflictError("private task is missing its Hook suppression token", code="PRIVATE_CONTROL_MISSING")
        control = ctx.store.read_control(task.host_session_hash)
        if control is None or control.task_id != task_id:
            raise ConflictError(
                "private Hook suppression control is missing or mismatched", code="PRIVATE_CONTROL_MISSING"
            )
        return task

    @staticmethod
    def controls_for(controls: Sequence[PrivateControl], task_id: str) -> list[PrivateControl]:
        return [c for c in controls if c.task_id == task_id]

    @staticmethod
    def control_for_task(ctx: Ctx, task_id: str) -> PrivateControl | None:
        """The one control of ``task_id`` (lock-free).

        Raises:
            StorageError: ``PRIVATE_CONTROL_CONFLICT`` (retryable) when two sessions claim the task.
        """
        matches = [c for c in ctx.store.read_controls() if c.task_id == task_id]
        if len(matches) > 1:
            raise StorageError("task has more than one private-session control", code="PRIVATE_CONTROL_CONFLICT")
        return matches[0] if matches else None

    # ----------------------------------------------------------------------------------------------- reads
    def semantic_task(self, ctx: Ctx, task_id: str) -> TaskState:
        """A started task for a semantic read (private in this process, or durable with no control); a task that is
        off only for a service that reads off tasks (the admin CLI's own views).

        Raises:
            IntentLoopError: ``TASK_NOT_FOUND``, ``PRIVATE_SESSION_ACTIVE``, ``PRIVATE_CONTROL_MISSING``,
                ``CORRUPT_PRIVATE_STATE``, ``MODE_OFF``; storage and corruption errors.
        """
        task = self.private_task(ctx, task_id)
        if task is None:
            task = self.durable_task(ctx, task_id)
            guard_durable(task)
            if self.control_for_task(ctx, task_id) is not None:
                raise private_active()
        if task is None or not task.started:
            raise task_not_found()
        if task.mode == "off" and not self._reads_off:
            raise mode_off(read=True)
        return task

    def durable_task(self, ctx: Ctx, task_id: str) -> TaskState | None:
        """The started task ``task_id`` of the durable ledger (the store's fold of its events).

        Raises:
            CorruptLedgerError: the ledger is damaged (when it is read whole); storage errors.
        """
        task = ctx.store.task(task_id)
        return task if task is not None and task.started else None

    @staticmethod
    def snapshot(
        ctx: Ctx, task: TaskState, max_characters: int = DEFAULT_SNAPSHOT_CHARACTERS, *, judged_at: str | None = None
    ) -> dict[str, Any]:
        return build_snapshot(task, ctx.project_id, utc_now(), max_characters, judged_at=judged_at).to_wire()

    def task_events(self, ctx: Ctx, task_id: str) -> Sequence[Event]:
        """The events of ``task_id``: this process's private ledger when it has one (the whole of it), else the task's
        events of the durable ledger (the store's task query).

        Raises:
            StorageError: storage and corruption errors of the durable read.
        """
        private = self.private.get(ctx.project_id, task_id)
        if private is not None:
            return private
        return ctx.store.task_events(task_id)

    def all_claim_ids(self, ctx: Ctx, view: LedgerView) -> set[str]:
        """Every claim id recorded in the project: durable (``view``'s tasks, folded one at a time) and in this
        process's private ledgers."""
        ids = {cid for task in map(view.task, view.task_ids()) if task is not None for cid in task.claims}
        private = project(self.private.all_events(ctx.project_id))
        ids.update(cid for task in private.tasks.values() for cid in task.claims)
        return ids


def signal_task_ids(events: Sequence[Event], signal_key: str) -> set[str]:
    """Tasks whose ``candidate_added`` carries ``signal_key`` (the long-term repetition count)."""
    return {
        ev.task_id for ev in events if ev.event_type == "candidate_added" and ev.payload.get("signal_key") == signal_key
    }


__all__ = [
    "PRIVATE_ACTIVE_MESSAGE",
    "Ctx",
    "Engine",
    "guard_durable",
    "mode_off",
    "private_active",
    "signal_task_ids",
    "task_not_found",
]
