"""``ProjectStore(deadline=...)``: one monotonic deadline that bounds every lock wait of the store, sync or trio.

A short-lived process (the prompt hook running a user's ``/intent`` command through the trio service) hands the store
its own deadline; the waits it does not control (the service's ``open_locked_ledger`` calls) must still end there.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import trio
import trio.testing

from intentloop.errors import StorageError
from intentloop.model import project_id_for
from intentloop.store import LockConfig, ProjectStore
from intentloop.store.aio import open_locked_ledger

PID = project_id_for("/store-deadline/tests")
PATIENT = LockConfig(heartbeat_s=10, stale_s=60, wait_s=30, ceiling_s=60)  # a defect would wait 30 s


@pytest.fixture
def held(data_root: Path, ledger_kit: ModuleType) -> Iterator[None]:
    """The project's lock, planted for a live process (never stolen)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    ledger_kit.plant_lock(ProjectStore(data_root, PID).project_dir, ledger_kit.owner_record(process.pid))
    yield
    process.kill()
    process.wait()


def test_the_store_deadline_bounds_a_synchronous_wait(data_root, held):
    store = ProjectStore(data_root, PID, config=PATIENT, deadline=time.monotonic() + 0.3)
    started = time.monotonic()
    with pytest.raises(StorageError) as info, store.locked():
        pass
    assert info.value.code == "LOCK_TIMEOUT"
    assert time.monotonic() - started < 10


def test_the_earlier_of_two_deadlines_wins(data_root, held):
    store = ProjectStore(data_root, PID, config=PATIENT, deadline=time.monotonic() + 60)
    started = time.monotonic()
    with pytest.raises(StorageError), store.locked(time.monotonic() + 0.3):
        pass
    assert time.monotonic() - started < 10


def test_the_store_deadline_bounds_a_trio_wait_in_trio_clock_terms(data_root, held):
    store = ProjectStore(data_root, PID, config=PATIENT, deadline=time.monotonic() + 0.3)

    async def main() -> None:
        async with open_locked_ledger(store):
            pass

    # A virtual clock that starts at 0, far from time.monotonic(): only a deadline converted into the trio clock's
    # terms gives up after 0.3 virtual seconds (one compared raw would wait out the 30 s window instead).
    clock = trio.testing.MockClock(autojump_threshold=0)
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        trio.run(main, clock=clock)
    assert info.value.code == "LOCK_TIMEOUT"
    assert clock.current_time() <= 0.3 + 0.1  # polls overshoot by at most one delay
    assert time.monotonic() - started < 10


def test_without_a_lock_held_the_deadline_changes_nothing(data_root):
    store = ProjectStore(data_root, PID, config=PATIENT, deadline=time.monotonic() + 30)

    async def main() -> None:
        async with open_locked_ledger(store) as ledger:
            assert list(ledger.view.events) == []

    trio.run(main)
    with store.locked() as ledger:
        assert list(ledger.view.events) == []
