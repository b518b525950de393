"""A writing hook facing a large ledger its checkpoint does not vouch for answers at once and records in the
background, leaving the checkpoint and the index for the next hook (before, it spent its whole budget verifying,
was killed before the checkpoint was written, and the next prompt did the same)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.model.events import EventDraft
from intentloop.service import hookops
from intentloop.store import CHECKPOINT_NAME

from _support.hook_world import HookWorld
from _support.lock_holder import holding_lock

SESSION = "6f0c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f72"
RULE = "Ship the migration behind a flag"
PAD = 64 * 1024


class World(HookWorld):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, SESSION)

    def grow(self, size: int) -> None:
        """Pad the ledger to about ``size`` bytes with another task's events, then drop the checkpoint (as after a
        foreign append or an upgrade)."""
        other = json.loads(self.store.ledger_path.read_bytes().splitlines()[0])["task_id"]
        drafts = [
            EventDraft(
                event_type="claim_added", task_id=other, actor="agent", request_id=f"pad-{i}", payload={"p": "x" * PAD}
            )
            for i in range(size // PAD + 1)
        ]
        with self.store.locked() as ledger:
            ledger.append(drafts)
        (self.store.project_dir / CHECKPOINT_NAME).unlink()

    def prompt(self, turn: str, *, timeout: float = 20, **extra: str) -> dict[str, Any]:
        # A deadline with room for the lock-free read and a whole lock wait before answering.
        env = {"INTENT_LOOP_HOOK_DEADLINE_S": "20", **extra}
        return self.hook("UserPromptSubmit", timeout=timeout, env=env, turn_id=turn, prompt="go on")

    def observed(self) -> list[str]:
        lines = self.store.ledger_path.read_bytes().splitlines()
        return [
            event["source_ref_id"]
            for event in (_observation(json.loads(line)) for line in lines[-20:])
            if event is not None
        ]


def _observation(event: dict[str, Any]) -> dict[str, Any] | None:
    if event["event_type"] != "source_observed":
        return None
    return {"source_ref_id": event["payload"]["candidate"]["source_ref"]["event_id"]}


def _context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def _eventually(check: Any, seconds: float = 60.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
async def world(tmp_path: Path) -> World:
    world = World(tmp_path)
    await world.call("intent_start_task", label="other", initial_explicit=["other rule"])
    await world.call("intent_start_task", host_session_id=SESSION, label="mine", initial_explicit=[RULE])
    return world


async def test_a_large_unvouched_ledger_is_recorded_in_the_background(world: World) -> None:
    world.grow(hookops.SLOW_READ_BYTES + PAD)
    with holding_lock(world.data, world.pid) as holder:
        # A writer entering rebuilds the checkpoint it did not find: drop it again, as a foreign append would.
        (world.store.project_dir / CHECKPOINT_NAME).unlink()
        # The lock is held: a hook that read the ledger and waited for the lock before answering would answer with
        # the context after its lock wait (5 s without progress) and spool the observation.
        # An ordinary waiter gives up after INTENT_LOOP_LOCK_WAIT_S without owner progress; in the background, with
        # nobody waiting for it, the hook keeps waiting (until half of its background limit).
        answer = world.prompt("turn-background-0001", timeout=10, INTENT_LOOP_LOCK_WAIT_S="0.3")
        assert answer == {"continue": True, "suppressOutput": True}  # fail-open: no context read in time
        assert holder.poll() is None and world.observed() == []
        time.sleep(1.5)  # five times the lock wait, the lock still held
    assert _eventually(lambda: world.observed() == ["turn-background-0001"])  # recorded once the lock was free
    # the checkpoint and the index now vouch for the file: the child's append writes the index and then the
    # checkpoint after the event is on disk (and a checkpoint rebuilt as it entered the lock may be seen before them)
    assert _eventually(lambda: (world.store.project_dir / CHECKPOINT_NAME).exists())
    assert _eventually(lambda: world.store.indexed() is not None)
    assert RULE in _context(world.prompt("turn-background-0002"))  # so the next prompt is answered in time
    assert world.observed() == ["turn-background-0001", "turn-background-0002"]


async def test_a_small_unvouched_ledger_is_read_in_time_and_answered(world: World) -> None:
    world.grow(hookops.SLOW_READ_BYTES // 4)  # control: below the threshold the hook reads it all and answers
    answer = world.prompt("turn-inline-0001")
    assert RULE in _context(answer)
    assert world.observed() == ["turn-inline-0001"]  # recorded before the process ended
    assert (world.store.project_dir / CHECKPOINT_NAME).exists()


def _hook_processes(data: Path) -> list[int]:
    """The live processes whose environment names this data root: the hooks' background children (the test and
    the lock holder have no such variable)."""
    marker = f"INTENT_LOOP_DATA_DIR={data}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ.split(b"\0") and state != b"Z":
            found.append(int(entry.name))
    return found


async def test_one_background_child_per_project_and_the_others_spool(world: World) -> None:
    """Before: one child per prompt, each reading the whole ledger (40 children, 2.8 GB together on a 20 MiB
    ledger with the lock held 35 s). Now the first prompt's child reads it; the others leave their observation in
    the spool, and every one of them is recorded once the lock is free."""
    world.grow(hookops.SLOW_READ_BYTES + PAD)
    turns = [f"turn-capped-{n:04d}" for n in range(5)]
    with holding_lock(world.data, world.pid):
        (world.store.project_dir / CHECKPOINT_NAME).unlink()
        for turn in turns:
            answer = world.prompt(turn, timeout=10, INTENT_LOOP_LOCK_WAIT_S="0.3")
            assert answer == {"continue": True, "suppressOutput": True}
        time.sleep(0.5)
        children = _hook_processes(world.data)
        assert len(children) == 1, children  # one child reads the ledger, whatever the number of prompts
        assert world.observed() == []
    assert _eventually(lambda: sorted(world.observed()) == turns)  # every prompt recorded, none twice
    assert _eventually(lambda: _hook_processes(world.data) == [])
    assert sorted(world.observed()) == turns
