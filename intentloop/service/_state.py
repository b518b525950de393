"""What one service process keeps between calls: stores, projections, private ledgers, and the shared read checks.

Why a projection per project and not per call: a 10,000-event ledger folds in tens of milliseconds, but the store
hands back the same verified view while the file is unchanged and an *extended* view after our own appends, so the
fold only ever processes new events (a rewritten chain — deletion — is detected by its head and folded afresh).

Why the projection is folded per task, on demand (:class:`LeanState`), and the stores are lean (offsets, not events):
a server that kept every decoded event and the fold of every task peaked at 448 MB on a 100,000-event ledger (96 MB,
50 tasks; measured on the 2-core development machine): 270 MB of decoded events, and about 140 MB for the fold, since
every claim of every task is in it. Keeping offsets and folding only the tasks asked for (within
:data:`LEAN_TASK_EVENTS` events) brought it to 54 MB (38 MB of it the process before any ledger is read; 42 MB against
74 MB at 10,000 events); a task's fold depends on its own events only, so it is the same fold. Whole-project questions
asked often (the session's task, the candidate count, long-term signals) read only the events of the types that
decide them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intentloop.errors import ConflictError, CorruptLedgerError, IntentLoopError, StorageError
from intentloop.model import Event, ProjectState, TaskState, build_snapshot, project, utc_now
from intentloop.model.compact import DEFAULT_SNAPSHOT_CHARACTERS
from intentloop.model.projection import BINDING_EVENTS, CANDIDATE_BEARING_EVENTS, task_for_session
from intentloop.service._private import PrivateLedgers
from intentloop.store import LedgerView, LineEvents, PrivateControl, ProjectStore

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
        lean: bool = True,
    ) -> None:
        self._resolver = data_root_resolver
        self._lock_deadline = lock_deadline
        self._lean = lean
        self._stores: dict[tuple[str, str], ProjectStore] = {}
        self._states: dict[ProjectStore, ProjectState] = {}
        self.private = PrivateLedgers()

    # ----------------------------------------------------------------------------------------------- stores, views
    def context(self, project_root: str, project_id: str) -> Ctx:
        """Raises: StorageError ``DATA_DIR_REQUIRED`` (from the resolver) or ``INVALID_PROJECT_ID``."""
        root = str(Path(self._resolver()))
        key = (root, project_id)
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = ProjectStore(root, project_id, deadline=self._lock_deadline, lean=self._lean)
        return Ctx(project_root=project_root, project_id=project_id, store=store)

    def state(self, ctx: Ctx, view: LedgerView) -> ProjectState:
        """The projection of ``view`` (a view of ``ctx.store``), folding only events the cache has not seen.

        A lean view (offsets, the server's) gets a :class:`LeanState`: tasks are folded from their own events, read by
        offset, when first asked for, and the folded ones are kept (within a budget) and extended by later appends.
        """
        cached = self._states.get(ctx.store)
        count = len(view.events)
        if isinstance(view.events, LineEvents):
            if isinstance(cached, LeanState):
                if cached.event_count == count and cached.head_hash == view.head_hash:
                    cached.view = view
                    return cached
                if cached.event_count < count and view.events[cached.event_count].prev_hash == cached.head_hash:
                    cached.advance(view)
                    return cached
            lean = self._states[ctx.store] = LeanState(view)
            return lean
        if cached is not None and not isinstance(cached, LeanState):
            if cached.event_count == count and cached.head_hash == view.head_hash:
                return cached
            if cached.event_count < count and view.events[cached.event_count].prev_hash == cached.head_hash:
                return project(view.events[cached.event_count :], cached)
        fresh = project(view.events)
        self._states[ctx.store] = fresh
        return fresh

    def read_state(self, ctx: Ctx) -> tuple[LedgerView, ProjectState]:
        view = ctx.store.read()
        return view, self.state(ctx, view)

    def precheck_state(self, ctx: Ctx) -> ProjectState:
        """Lock-free state for the checks a mutation makes before it takes the lock.

        A torn last line is read as its verified prefix here: the locked write that follows repairs it (docs/EVENTS.md),
        so answering ``CORRUPT_TRAILING_EVENT`` would only make a retrying agent loop. Any other damage still raises.

        Raises:
            CorruptLedgerError: ``CORRUPT_LEDGER``, ``FUTURE_SCHEMA``, ``MIGRATION_UNAVAILABLE``; storage errors.
        """
        try:
            return self.read_state(ctx)[1]
        except CorruptLedgerError as exc:
            if exc.code != "CORRUPT_TRAILING_EVENT":
                raise
            verification = ctx.store.verify()
            if verification.error is not None and verification.error.code != "CORRUPT_TRAILING_EVENT":
                raise verification.error from exc
            return project(verification.events)

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
        """A started task for a semantic read (private in this process, or durable with no control).

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
        if task.mode == "off":
            raise mode_off(read=True)
        return task

    def durable_task(self, ctx: Ctx, task_id: str) -> TaskState | None:
        """The started task ``task_id`` of the durable ledger: from this process's projection when it holds the ledger
        as it now is (a server), else folded from the task's own events, which the store reads through its task index
        when the checkpoint vouches for the file (a one-call process never reads the whole ledger for one task).

        Raises:
            CorruptLedgerError: the ledger is damaged (when it is read whole); storage errors.
        """
        if ctx.store.is_cached():
            return self.read_state(ctx)[1].started_task(task_id)
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

    def all_claim_ids(self, ctx: Ctx, state: ProjectState) -> set[str]:
        """Every claim id recorded in the project: durable and in this process's private ledgers."""
        ids = {cid for task in state.tasks.values() for cid in task.claims}
        private = project(self.private.all_events(ctx.project_id))
        ids.update(cid for task in private.tasks.values() for cid in task.claims)
        return ids


#: How many events the folded tasks a :class:`LeanState` keeps may hold together (the task just asked for is always
#: kept): a task's fold costs about 1.4 KB an event (a claim each), so this bounds them near 30 MB.
LEAN_TASK_EVENTS = 20_000


class _LazyTasks(dict[str, TaskState]):
    """``ProjectState.tasks`` of a :class:`LeanState`: every task of the view, each folded from its own events when
    first asked for. The dictionary itself holds the folded tasks kept (least recently used first)."""

    def __init__(self, owner: LeanState) -> None:
        super().__init__()
        self._owner = owner

    def _ids(self) -> tuple[str, ...]:
        return self._owner.view.task_ids()

    def get(self, task_id: str, default: Any = None) -> Any:
        task = self._owner.fold(task_id)
        return default if task is None else task

    def __getitem__(self, task_id: str) -> TaskState:
        task = self._owner.fold(task_id)
        if task is None:
            raise KeyError(task_id)
        return task

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and task_id in self._ids()

    def __len__(self) -> int:
        return len(self._ids())

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids())

    def keys(self) -> Any:
        return list(self._ids())

    def values(self) -> Any:
        return [self[task_id] for task_id in self._ids()]

    def items(self) -> Any:
        return [(task_id, self[task_id]) for task_id in self._ids()]

    def kept(self) -> dict[str, TaskState]:
        return {task_id: dict.__getitem__(self, task_id) for task_id in dict.keys(self)}


class LeanState(ProjectState):
    """The projection of a lean view without the history: each task is folded from its own events (the fold of a
    task depends on its events alone), read by offset when first asked for; the folded tasks are kept up to
    :data:`LEAN_TASK_EVENTS` events together and extended in place by later appends. ``tasks.values()`` folds every
    task, one at a time (deletion's copy search, imports' id check); the frequent whole-project questions have their
    own cheaper answers (:meth:`candidate_count`, :meth:`session_owner`)."""

    __slots__ = ("_counts", "_lazy", "view")

    def __init__(self, view: LedgerView) -> None:
        super().__init__()
        self.view = view
        self._lazy = self.tasks = _LazyTasks(self)
        self._counts: dict[str, tuple[int, int]] = {}  # task id -> (its events, its candidates) when last counted
        self.event_count = len(view.events)
        self.head_hash = view.head_hash

    def task(self, task_id: str) -> TaskState | None:
        return self.fold(task_id)

    def started_task(self, task_id: str) -> TaskState | None:
        task = self.fold(task_id)
        return task if task is not None and task.started else None

    def fold(self, task_id: str) -> TaskState | None:
        """The task folded from its events (kept ones are reused); ``None`` when the view has none of its events."""
        kept: dict[str, TaskState] = self.tasks
        if dict.__contains__(kept, task_id):
            task = dict.pop(kept, task_id)
            dict.__setitem__(kept, task_id, task)  # most recently used last
            return task
        events = self.view.by_task(task_id)
        if not events:
            return None
        task = project(events).tasks[task_id]
        dict.__setitem__(kept, task_id, task)
        self._trim()
        return task

    def _trim(self) -> None:
        """Forget the least recently used folded tasks beyond the budget (the most recent one always stays)."""
        kept: dict[str, TaskState] = self.tasks
        total = sum(t.event_count for t in dict.values(kept))
        while total > LEAN_TASK_EVENTS and len(kept) > 1:
            oldest = next(iter(dict.keys(kept)))
            total -= dict.pop(kept, oldest).event_count

    def advance(self, view: LedgerView) -> None:
        """Move to ``view``, which extends the current one: the kept tasks fold the new events of theirs."""
        kept = self._lazy.kept()
        new: dict[str, list[Event]] = {}
        for event in view.events[self.event_count :]:
            if event.task_id in kept:
                new.setdefault(event.task_id, []).append(event)
        for task_id, events in new.items():
            single = ProjectState()
            single.tasks[task_id] = kept[task_id]
            project(events, single)
        self._trim()
        self.view = view
        self.event_count = len(view.events)
        self.head_hash = view.head_hash

    def candidate_count(self) -> int:
        """Candidates of every task: a task with an event that can carry one is folded once, and its count is kept
        until the task has more events."""
        events = self.view.events
        assert isinstance(events, LineEvents)
        carriers = {events.task_at(position) for position in events.of_types(CANDIDATE_BEARING_EVENTS)}
        total = 0
        for task_id in carriers:
            seen = len(events.positions(task_id))
            kept = self._counts.get(task_id)
            if kept is None or kept[0] != seen:
                task = self.fold(task_id)
                kept = self._counts[task_id] = (seen, 0 if task is None else len(task.candidates))
            total += kept[1]
        return total

    def session_owner(self, session_hash: str) -> TaskState | None:
        """:func:`~intentloop.model.task_for_session`, folding only the tasks whose binding events (``task_started``,
        ``mode_set``) name the session."""
        bindings = project(self.view.of_types(BINDING_EVENTS))
        bound = [t.task_id for t in bindings.tasks.values() if t.started and t.host_session_hash == session_hash]
        state = ProjectState()
        for task_id in bound:
            task = self.fold(task_id)
            if task is not None:
                state.tasks[task_id] = task
        return task_for_session(state, session_hash)


def candidate_count(state: ProjectState) -> int:
    """Candidates of every task of ``state``."""
    if isinstance(state, LeanState):
        return state.candidate_count()
    return sum(len(task.candidates) for task in state.tasks.values())


def session_owner(state: ProjectState, session_hash: str) -> TaskState | None:
    """The started task bound to ``session_hash`` (:func:`~intentloop.model.task_for_session`)."""
    if isinstance(state, LeanState):
        return state.session_owner(session_hash)
    return task_for_session(state, session_hash)


def signal_task_ids(events: Sequence[Event], signal_key: str) -> set[str]:
    """Tasks whose ``candidate_added`` carries ``signal_key`` (the long-term repetition count)."""
    return {
        ev.task_id for ev in events if ev.event_type == "candidate_added" and ev.payload.get("signal_key") == signal_key
    }


__all__ = [
    "LEAN_TASK_EVENTS",
    "PRIVATE_ACTIVE_MESSAGE",
    "Ctx",
    "Engine",
    "LeanState",
    "candidate_count",
    "guard_durable",
    "mode_off",
    "private_active",
    "session_owner",
    "signal_task_ids",
    "task_not_found",
]
