"""The trio face: non-blocking acquisition, the heartbeat task, lost-lock cancellation and the last token check."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest
import trio

from intentloop.errors import StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore
from intentloop.store._checkpoint import CHECKPOINT_NAME
from intentloop.store.aio import open_locked_ledger

PID = project_id_for("/aio/tests")
TASK = str(uuid.uuid4())


def draft(request_id: str) -> EventDraft:
    return EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={})


def make_store(data_root, **timings) -> ProjectStore:
    config = {"heartbeat_s": 10.0, "stale_s": 30.0, "wait_s": 1.0, "ceiling_s": 5.0} | timings
    return ProjectStore(data_root, PID, config=LockConfig(**config))


async def test_async_lock_appends_and_releases(data_root):
    store = make_store(data_root)
    async with open_locked_ledger(store) as ledger:
        ledger.append([draft("r-1")])
        assert store.lock_path.is_dir()
    assert [e.request_id for e in store.read().events] == ["r-1"]
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


async def test_heartbeat_is_a_trio_task_refreshing_the_owner_record(data_root):
    store = make_store(data_root, heartbeat_s=0.05, stale_s=1.0)
    async with open_locked_ledger(store):
        first = json.loads((store.lock_path / "owner.json").read_bytes())
        await trio.sleep(0.3)
        later = json.loads((store.lock_path / "owner.json").read_bytes())
    assert later["token"] == first["token"] and later["heartbeat_at"] > first["heartbeat_at"]


async def test_lost_lock_cancels_the_body(data_root, ledger_kit, autojump_clock):
    # Virtual time: the heartbeat's 0.05 s and the body's 10 s pass without waiting; the token check is all that
    # decides, so the bound below is exact rather than a wall-clock guess.
    store = make_store(data_root, heartbeat_s=0.05, stale_s=1.0)
    async with open_locked_ledger(store) as ledger:
        ledger.append([draft("r-1")])
    before = store.ledger_path.read_bytes()
    reached_end = False
    started = trio.current_time()
    with pytest.raises(StorageError) as info:
        async with open_locked_ledger(store) as ledger:
            (store.lock_path / "owner.json").write_bytes(ledger_kit.owner_record(os.getpid(), token="thief"))
            await trio.sleep(10)
            reached_end = True
    assert info.value.code == "LOCK_COMPROMISED" and info.value.retryable
    assert not reached_end and 0.05 <= trio.current_time() - started < 0.2  # cancelled at the first heartbeat
    assert store.ledger_path.read_bytes() == before
    assert b"thief" in (store.lock_path / "owner.json").read_bytes()  # another owner's lock is not released


async def test_last_token_check_happens_right_before_the_rename(data_root, ledger_kit):
    store = make_store(data_root)  # heartbeat far away: only the write path's own check can notice
    with pytest.raises(StorageError) as info:
        async with open_locked_ledger(store) as ledger:
            (store.lock_path / "owner.json").write_bytes(ledger_kit.owner_record(os.getpid(), token="thief"))
            ledger.append([draft("r-1")])
    assert info.value.code == "LOCK_COMPROMISED"
    assert not store.ledger_path.exists()


async def test_body_exceptions_propagate_unwrapped_and_release_the_lock(data_root):
    store = make_store(data_root)
    with pytest.raises(KeyError):
        async with open_locked_ledger(store):
            raise KeyError("from the body")
    assert not store.lock_path.exists()


async def test_outer_cancellation_releases_the_lock(data_root, autojump_clock):
    store = make_store(data_root)
    with trio.move_on_after(0.05) as scope:
        async with open_locked_ledger(store):
            await trio.sleep(10)
    assert scope.cancelled_caught
    assert not store.lock_path.exists()


async def test_waiting_does_not_block_the_event_loop(data_root, ledger_kit, sleeper):
    store = make_store(data_root, wait_s=0.5)
    ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid))
    ticks = 0
    outcome: list[str] = []

    async def ticker() -> None:
        nonlocal ticks
        while not outcome:
            ticks += 1
            await trio.sleep(0.01)

    async def waiter() -> None:
        try:
            async with open_locked_ledger(store):
                outcome.append("acquired")
        except StorageError as exc:
            outcome.append(exc.code)

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        nursery.start_soon(waiter)
    assert outcome == ["LOCK_TIMEOUT"]
    # Not before the wait is over; the upper bound is one only a hang crosses (a loaded machine stretches the rest).
    assert 0.5 <= time.monotonic() - started < 10
    # The loop kept running while the waiter polled: ~50 ticks on a quiet machine, 1 if the wait blocked the loop.
    assert ticks >= 10


async def test_async_waiter_takes_over_when_the_owner_dies(data_root, ledger_kit, sleeper):
    store = make_store(data_root, wait_s=5.0)
    ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid))

    async def kill_owner_soon() -> None:
        await trio.sleep(0.2)
        sleeper.kill()

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(kill_owner_soon)
        async with open_locked_ledger(store) as ledger:
            ledger.append([draft("r-1")])
    assert 0.2 <= time.monotonic() - started < 4.0  # before wait_s (5 s): the death was noticed, not waited out
    assert len(store.read()) == 1


async def test_bounded_wait_runs_on_the_trio_clock(data_root, ledger_kit, sleeper, autojump_clock):
    store = make_store(data_root, wait_s=5.0, ceiling_s=30.0)
    ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid))
    real_start, trio_start = time.monotonic(), trio.current_time()
    with pytest.raises(StorageError) as info:
        async with open_locked_ledger(store):
            pass
    assert info.value.code == "LOCK_TIMEOUT"
    assert 5.0 <= trio.current_time() - trio_start < 5.5
    assert time.monotonic() - real_start < 3.0  # virtual time: no real 5 s wait
