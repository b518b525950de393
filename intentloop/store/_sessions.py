"""Which task a host session is bound to: the store's answer, through the task index when it vouches for the file.

Why the store answers it: the hook used to reason about the checkpoint, the file's stamp and the task index itself, a
read path of its own beside the store's. The store knows what it verified, so it answers through the index (the
binding events and the bound tasks' lines only) when the checkpoint vouches for the file, from a whole verified read
otherwise, and says which it did and what it read: a caller can then plan (a hook facing a whole read of a large
ledger answers its host first) and, under the lock, skip reading again a file that provably did not change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from intentloop.model.projection import BINDING_EVENTS, ProjectState, TaskState, project, task_for_session
from intentloop.store._paths import ProjectPaths

if TYPE_CHECKING:
    from intentloop.store._view import LedgerView

#: What any change of the ledger file changes: device, inode, size, mtime_ns, ctime_ns.
Stamp = tuple[int, int, int, int, int]


class SessionTask:
    """The answer to "which task is this session bound to", with what it was read from.

    Attributes:
        task: the bound task (as :func:`~intentloop.model.projection.task_for_session` picks it), ``None`` if none.
        stamp: the ledger file's stamp taken before the read (``None``: no ledger file).
        view: the whole verified view when the answer needed one, ``None`` when the index answered.
        whole_read_bytes: set (to the file's size) instead of an answer when the index could not answer and a whole
            read was larger than the caller allowed; ``task`` is then ``None`` and means nothing.
    """

    __slots__ = ("stamp", "task", "view", "whole_read_bytes")

    def __init__(
        self,
        task: TaskState | None,
        stamp: Stamp | None,
        view: LedgerView | None = None,
        whole_read_bytes: int | None = None,
    ) -> None:
        self.task = task
        self.stamp = stamp
        self.view = view
        self.whole_read_bytes = whole_read_bytes

    @property
    def answered(self) -> bool:
        """Whether this is an answer (not a refusal to read the whole ledger)."""
        return self.whole_read_bytes is None


def ledger_stamp(paths: ProjectPaths) -> Stamp | None:
    """The ledger's stamp; ``None`` when it is missing or unreadable.

    Every commit appends (the size grows), truncates a torn tail or replaces the file (another inode), and moves the
    ctime, which no ordinary program can set back: an equal stamp means no commit in between.
    """
    try:
        st = os.lstat(paths.ledger_path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def bound_in_view(view: LedgerView, shash: str) -> TaskState | None:
    """The task bound to ``shash`` in a whole view: the binding events are folded, then the bound tasks alone (an
    offsets view reads only those lines and keeps the tasks' folds)."""
    bindings = project(view.of_types(BINDING_EVENTS))
    bound = sorted(t.task_id for t in bindings.tasks.values() if t.started and t.host_session_hash == shash)
    if not bound:
        return None
    state = ProjectState()
    for task_id in bound:
        task = view.task(task_id)
        if task is not None:
            state.tasks[task_id] = task
    return task_for_session(state, shash)


class _Unknown:
    """The index cannot answer (no checkpoint matching the file, no index, a stale or damaged index file)."""


UNKNOWN = _Unknown()


def bound_in_index(paths: ProjectPaths, shash: str) -> TaskState | _Unknown | None:
    """:func:`bound_in_view` through the task index: the binding events and the bound tasks' lines only."""
    from intentloop.store._index import open_indexed

    indexed = open_indexed(paths)
    if indexed is None:
        return UNKNOWN
    try:
        binding_events = indexed.binding_events()
        if binding_events is None:
            return UNKNOWN
        bindings = project(binding_events)
        bound = sorted(t.task_id for t in bindings.tasks.values() if t.started and t.host_session_hash == shash)
        if not bound:
            return None
        events = []
        for task_id in bound:
            task_events = indexed.task_events(task_id)
            if task_events is None:
                return UNKNOWN
            events += task_events
    finally:
        indexed.close()
    return task_for_session(project(events), shash)


def session_task(
    paths: ProjectPaths, read: Callable[[], LedgerView], shash: str, *, whole_read_limit: int | None
) -> SessionTask:
    """The lock-free answer: through the index, else through ``read()`` unless the file is larger than
    ``whole_read_limit`` (then a :class:`SessionTask` that only says how large)."""
    stamp = ledger_stamp(paths)  # before the read: a commit after it changes the stamp
    found = bound_in_index(paths, shash)
    if not isinstance(found, _Unknown):
        return SessionTask(found, stamp)
    if whole_read_limit is not None and stamp is not None and stamp[2] > whole_read_limit:
        return SessionTask(None, stamp, whole_read_bytes=stamp[2])
    view = read()
    return SessionTask(bound_in_view(view, shash), stamp, view)


def session_task_locked(
    paths: ProjectPaths, view: Callable[[], LedgerView], shash: str, since: SessionTask | None
) -> TaskState | None:
    """The answer again inside the lock, reusing ``since`` (a lock-free answer) when it provably still holds.

    ``since`` stands when it came through the index and the file's stamp is unchanged (it would read the same lines
    again), or when the verified view under the lock is the very view it was read from. Why: reading a task through
    the index costs ~30 µs per event of the task (a 300-event task: 9 ms on the loaded 2-core development machine),
    and every prompt adds an event to its task.
    """
    through_index = since is not None and since.answered and since.view is None and since.stamp is not None
    if since is not None and through_index and ledger_stamp(paths) == since.stamp:
        return since.task
    found = bound_in_index(paths, shash)  # the index as of the last commit
    if not isinstance(found, _Unknown):
        return found
    current = view()
    if since is not None and since.answered and current is since.view:
        return since.task
    return bound_in_view(current, shash)


__all__ = ["SessionTask", "Stamp", "bound_in_view", "ledger_stamp", "session_task", "session_task_locked"]
