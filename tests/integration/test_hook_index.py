"""Cold hooks read the checkpoint, the task index and the bound task's lines — never the whole ledger — and a
ledger edited in place is still found: the hook fails open and injects nothing from it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from intentloop.model import event_line, seal
from intentloop.model.events import EventDraft
from intentloop.service import hookops
from intentloop.store import (
    CHECKPOINT_NAME,
    INDEX_DIR_RE,
    verify_ledger_bytes,
)

from _support.hook_world import HookWorld
from _support.whole_reads import count_whole_reads

SESSION = "3a1c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f71"
RULE = "Keep the public API stable"


class World(HookWorld):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, SESSION)

    def context(self) -> str:
        return str(self.hook().get("hookSpecificOutput", {}).get("additionalContext", ""))


@pytest.fixture
async def world(tmp_path: Path) -> World:
    world = World(tmp_path)
    for i in range(3):  # other tasks, not bound to the session
        await world.call("intent_start_task", label=f"other {i}", initial_explicit=[f"other rule {i}"])
    await world.call("intent_start_task", host_session_id=SESSION, label="mine", initial_explicit=[RULE])
    return world


async def test_session_start_reads_through_the_index(world, monkeypatch):
    calls = count_whole_reads(monkeypatch)
    text = hookops.session_context(world.data, world.root, SESSION)
    assert RULE in text and "other rule" not in text
    assert calls == []  # the whole ledger was not read
    (world.store.project_dir / CHECKPOINT_NAME).unlink()  # control: without the checkpoint, the whole ledger is read
    assert hookops.session_context(world.data, world.root, SESSION) == text
    assert calls == [1]


def _count_verifications(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from intentloop.store import _project

    calls: list[int] = []
    for name in ("verify_ledger_bytes", "stream_verify", "scan_open"):  # whole, chunked into a view, streamed
        real = getattr(_project, name)
        monkeypatch.setattr(_project, name, lambda *a, _real=real, **kw: calls.append(1) or _real(*a, **kw))
    return calls


async def test_prompt_hook_decides_and_appends_through_the_index(world, monkeypatch):
    from intentloop.store import _project

    _project._cache.drop(str(world.store.ledger_path))  # a cold process, as a hook is
    calls = count_whole_reads(monkeypatch)
    verified = _count_verifications(monkeypatch)
    obs = hookops.Observation(event="UserPromptSubmit", session_id=SESSION, turn_id="turn-0001-abcd")
    outcome = hookops.record_observation(world.data, world.root, obs, deadline=None, with_context=True)
    assert outcome.recorded and RULE in (outcome.context or "")
    assert calls == [] and verified == []  # neither the lock-free decision nor the locked append read the ledger
    again = hookops.record_observation(world.data, world.root, obs, deadline=None)
    assert not again.recorded  # the same turn is recognised through the index (idempotent)
    _project._cache.drop(str(world.store.ledger_path))
    (world.store.project_dir / CHECKPOINT_NAME).unlink()  # control: without the checkpoint the ledger is verified
    second = hookops.Observation(event="UserPromptSubmit", session_id=SESSION, turn_id="turn-0002-abcd")
    assert hookops.record_observation(world.data, world.root, second, deadline=None).recorded
    assert verified != []
    assert verify_ledger_bytes(world.store.ledger_path.read_bytes(), project_id=world.pid).ok
    indexed = world.store.indexed()
    assert indexed is not None
    try:
        bound = [e for e in world.store.read().events if e.event_type == "source_observed"]
        task_events = indexed.task_events(bound[0].task_id)
        assert task_events is not None and task_events[-1] == bound[-1]
    finally:
        indexed.close()


@pytest.mark.parametrize("damage", ["garbled-task-file", "index-removed", "wrong-offsets"])
async def test_a_damaged_index_costs_a_full_read_never_a_wrong_answer(world, damage):
    expected = world.context()
    checkpoint = msgspec.json.decode((world.store.project_dir / CHECKPOINT_NAME).read_bytes())
    directory = world.store.project_dir / checkpoint["index"]
    if damage == "index-removed":
        for file in directory.iterdir():
            file.unlink()
        directory.rmdir()
    else:
        for file in directory.iterdir():
            data = file.read_bytes()
            if damage == "garbled-task-file":
                file.write_bytes(os.urandom(len(data)))
            else:  # every offset moved by one byte: lines that do not verify
                moved = [
                    (int.from_bytes(data[i : i + 8], "big") + 1, data[i + 8 : i + 12]) for i in range(0, len(data), 12)
                ]
                file.write_bytes(b"".join(offset.to_bytes(8, "big") + length for offset, length in moved))
    assert world.context() == expected
    assert world.store.indexed() is None or damage != "index-removed"


async def test_a_foreign_append_makes_the_next_write_rebuild_the_index(world):
    """An append the checkpoint does not know (the original implementation, or a crash before the checkpoint)."""
    store = world.store
    last = store.ledger_path.read_bytes().splitlines()[-1]
    task = msgspec.json.decode(last)["task_id"]
    foreign = seal(
        EventDraft(event_type="claim_added", task_id=task, actor="user", request_id="foreign-1", payload={}),
        project_id=world.pid,
        prev_hash=msgspec.json.decode(last)["event_hash"],
    )
    with open(store.ledger_path, "ab") as handle:
        handle.write(event_line(foreign))
    assert store.indexed() is None  # the checkpoint no longer matches: hooks read the whole ledger
    before = {p.name for p in store.project_dir.iterdir() if INDEX_DIR_RE.match(p.name)}
    await world.call("intent_start_task", label="next")
    after = {p.name for p in store.project_dir.iterdir() if INDEX_DIR_RE.match(p.name)}
    assert len(after) == 1 and after != before  # rebuilt, the old one removed
    indexed = store.indexed()
    assert indexed is not None
    try:
        events = indexed.task_events(task)
        assert events is not None and events[-1].request_id == "foreign-1"
    finally:
        indexed.close()


async def test_deleting_a_task_leaves_no_index_file_naming_it(world):
    doomed = (await world.call("intent_start_task", label="doomed", initial_explicit=["secret-ish rule"]))["task_id"]
    assert any(doomed in p.name for p in world.store.project_dir.rglob("*"))
    await world.call("intent_delete", task_id=doomed, target="task", confirmation=f"DELETE TASK {doomed}")
    assert not any(doomed in p.name for p in world.store.project_dir.rglob("*"))
    assert RULE in world.context()


@pytest.mark.parametrize("then_append", [False, True], ids=["same-size", "plus-chained-append"])
async def test_a_middle_edit_fails_the_hook_open_and_injects_nothing(world, then_append):
    assert RULE in world.context()
    data = bytearray(world.store.ledger_path.read_bytes())
    at = data.index(RULE.encode()) + 5
    data[at] = ord("X")  # same size: one byte of the bound task's claim
    with open(world.store.ledger_path, "r+b") as handle:
        handle.write(bytes(data))
    if then_append:
        last = bytes(data).splitlines()[-1]
        head = msgspec.json.decode(last)
        event = seal(
            EventDraft(event_type="claim_added", task_id=head["task_id"], actor="user", request_id="z", payload={}),
            project_id=world.pid,
            prev_hash=head["event_hash"],
        )
        with open(world.store.ledger_path, "ab") as handle:
            handle.write(event_line(event))
    answer = world.hook()
    assert "additionalContext" not in json.dumps(answer) or RULE[:5] not in json.dumps(answer)
    assert "Keep " not in json.dumps(answer)
    before = world.store.ledger_path.read_bytes()
    prompt = world.hook("UserPromptSubmit", prompt="go on", turn_id="turn-0002-abcd")
    assert "Keep " not in json.dumps(prompt)
    assert world.store.ledger_path.read_bytes() == before  # nothing appended
