"""The task index is sealed to its checkpoint under the installation's index key: an index edited to drop a record
(here the invalidation of a rule) costs a full read, is never served by a hook as the user's intent, and is rebuilt,
never extended and sealed again, by the next writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intentloop.service import hookops
from intentloop.store import CHECKPOINT_NAME, verify_ledger_bytes
from intentloop.store._checkpoint import COUNTS, read_checkpoint
from intentloop.store._keyfile import CACHE_KEY

from _support.hook_world import HookWorld
from _support.whole_reads import count_whole_reads

SESSION = "6d0c1e57-2f6b-4a53-9d2e-6f1b0c9a8e34"
WITHDRAWN = "Tests must pass on Python 3.11"
KEPT = "Keep the public API stable"


class World(HookWorld):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, SESSION)
        self.task = ""

    def context(self) -> str:
        return str(self.hook().get("hookSpecificOutput", {}).get("additionalContext", ""))


@pytest.fixture
async def world(tmp_path: Path) -> World:
    world = World(tmp_path)
    await world.call("intent_start_task", label="other", initial_explicit=["other rule"])
    started = await world.call(
        "intent_start_task", host_session_id=SESSION, label="mine", initial_explicit=[WITHDRAWN, KEPT]
    )
    world.task = started["task_id"]
    withdrawn = next(c["claim_id"] for c in started["active_claims"] if c["statement"] == WITHDRAWN)
    await world.call(
        "intent_invalidate",
        task_id=world.task,
        request_id="r-withdraw",
        claim_id=withdrawn,
        reason="no longer wanted",
        source_ref={"kind": "user_event", "event_id": "turn-1"},
    )
    world.hook("UserPromptSubmit", prompt="go on", turn_id="turn-0002-abcd")  # a cold writer: sealed index
    return world


def _index_dir(world: World) -> Path:
    checkpoint = read_checkpoint(world.store.paths)
    assert checkpoint is not None and checkpoint.index is not None
    return world.store.project_dir / checkpoint.index


def _drop_invalidation(world: World) -> None:
    """Edit the index as a program without the key would: remove the invalidation's record from the task's file and
    lower its count, so every record left still names a verified line of the task."""
    data = world.store.ledger_path.read_bytes()
    start = data.index(b'"event_type":"claim_invalidated"')
    offset = data.rindex(b"\n", 0, start) + 1
    directory = _index_dir(world)
    task_file = directory / f"t-{world.task}"
    records = task_file.read_bytes()
    kept = b"".join(
        records[at : at + 12] for at in range(0, len(records), 12) if int.from_bytes(records[at : at + 8]) != offset
    )
    assert len(kept) == len(records) - 12  # the invalidation's record was there
    task_file.write_bytes(kept)
    counts = json.loads((directory / COUNTS).read_bytes())
    counts[task_file.name] -= 1
    (directory / COUNTS).write_bytes(json.dumps(counts).encode())


async def test_an_index_edited_to_drop_an_invalidation_costs_a_full_read(world: World, monkeypatch) -> None:
    whole = count_whole_reads(monkeypatch)
    text = hookops.session_context(world.data, world.root, SESSION)
    assert KEPT in text and WITHDRAWN not in text and whole == []  # control: answered through the sealed index
    assert KEPT in world.context() and WITHDRAWN not in world.context()  # the real hook, likewise
    _drop_invalidation(world)
    assert world.store.indexed() is None  # the seal no longer holds: the index is not trusted
    text = hookops.session_context(world.data, world.root, SESSION)
    assert KEPT in text and WITHDRAWN not in text and whole == [1]  # a full read answered
    context = world.context()
    assert KEPT in context and WITHDRAWN not in context


async def test_the_next_writer_rebuilds_an_edited_index_instead_of_sealing_it(world: World) -> None:
    _drop_invalidation(world)
    world.hook("UserPromptSubmit", prompt="and more", turn_id="turn-0003-abcd")  # a cold writer
    indexed = world.store.indexed()
    assert indexed is not None  # sealed again, by the writer
    try:
        events = indexed.task_events(world.task)
    finally:
        indexed.close()
    check = verify_ledger_bytes(world.store.ledger_path.read_bytes(), project_id=world.pid)
    assert events is not None and events == [e for e in check.events if e.task_id == world.task]
    assert any(e.event_type == "claim_invalidated" for e in events)  # the dropped record is back
    assert WITHDRAWN not in world.context()


async def test_without_the_key_the_index_is_not_trusted_until_a_writer_seals_it_again(world: World) -> None:
    key = CACHE_KEY.path(world.data)
    assert key.exists() and world.store.indexed() is not None  # control
    indexed = world.store.indexed()
    assert indexed is not None
    indexed.close()
    key.unlink()
    assert world.store.indexed() is None
    assert KEPT in world.context() and WITHDRAWN not in world.context()  # answered from a full read
    world.hook("UserPromptSubmit", prompt="later", turn_id="turn-0004-abcd")
    assert key.exists()
    indexed = world.store.indexed()
    assert indexed is not None
    indexed.close()


async def test_a_seal_from_another_checkpoint_does_not_vouch(world: World) -> None:
    path = world.store.project_dir / CHECKPOINT_NAME
    record = json.loads(path.read_bytes())
    assert world.store.indexed() is not None  # control
    for field, value in (("bindings", record["bindings"] + 1), ("seal", "0" * 64)):
        path.write_bytes(json.dumps({**record, field: value}).encode())
        assert read_checkpoint(world.store.paths) is not None
        assert world.store.indexed() is None, field
    path.write_bytes(json.dumps(record).encode())
    indexed = world.store.indexed()
    assert indexed is not None
    indexed.close()
