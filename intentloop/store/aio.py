"""The ledger lock under trio: ``open_locked_ledger(store)``.

Acquisition polls with ``trio.sleep`` so waiting never blocks the event loop. The heartbeat runs as a task in the
nursery that owns the critical section: when it finds the lock lost (token changed) it cancels the body, and the
context manager raises ``LOCK_COMPROMISED``. Whatever the heartbeat saw, every replace still checks the owner token
right before the rename.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from intentloop.errors import StorageError
from intentloop.store._ledger import LockedLedger
from intentloop.store._lock import LockHandle
from intentloop.store._project import ProjectStore


async def acquire_lock(store: ProjectStore, *, deadline: float | None = None) -> LockHandle:
    """Take the ledger lock without blocking the event loop.

    Args:
        store: the project.
        deadline: a ``trio.current_time()`` value at which to give up.

    Raises:
        StorageError: ``LOCK_TIMEOUT`` (retryable) after ``wait_s`` without owner progress, at the ceiling or at the
            deadline; path-safety refusals; ``STORAGE_WRITE_FAILED``.
    """
    store.paths.ensure()
    acquirer = store.acquirer(now=trio.current_time(), deadline=deadline)
    while (handle := acquirer.attempt(trio.current_time())) is None:
        await trio.sleep(acquirer.delay(trio.current_time()))
    return handle


async def _keep_heartbeat(handle: LockHandle, interval: float, lost: list[bool], scope: trio.CancelScope) -> None:
    while True:
        await trio.sleep(interval)
        if not handle.heartbeat():
            lost.append(True)
            scope.cancel()
            return


@asynccontextmanager
async def open_locked_ledger(
    store: ProjectStore, *, deadline: float | None = None, verify: bool = True, lazy: bool = False
) -> AsyncIterator[LockedLedger]:
    """Hold the ledger lock for one mutation, with a supervised heartbeat.

    Args:
        store: the project.
        deadline: a ``trio.current_time()`` value at which to stop waiting for the lock.
        verify, lazy: as for :meth:`ProjectStore.locked`.

    Raises:
        StorageError: ``LOCK_TIMEOUT``; ``LOCK_COMPROMISED`` when the heartbeat found the lock lost and cancelled the
            body (a body that finished first keeps its result: its writes were token-checked).
        CorruptLedgerError: the ledger is damaged (unless ``verify`` is false).
    """
    handle = await acquire_lock(store, deadline=deadline)
    try:
        ledger = store.enter_locked(handle, verify=verify, lazy=lazy)
        lost: list[bool] = []
        finished = False
        body_error: Exception | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_keep_heartbeat, handle, store.config.heartbeat_s, lost, nursery.cancel_scope)
                try:
                    yield ledger
                    finished = True
                except Exception as exc:  # re-raised below, unwrapped by the nursery's exception group
                    body_error = exc
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            ledger.close()
        if body_error is not None:
            raise body_error
        if not finished and lost:
            raise StorageError("the ledger lock was lost; the mutation was cancelled", code="LOCK_COMPROMISED")
    finally:
        handle.release()


__all__ = ["acquire_lock", "open_locked_ledger"]
