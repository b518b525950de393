"""The streamed rewrite (``LockedLedger.rewrite_each``): the bytes the whole-list rewrite wrote, in one pass; the task
index and checkpoint describe the new file; a source line changed under the lock, a forbidden byte or a failed write
step leaves the old ledger."""

from __future__ import annotations

import errno
import os
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model import Event, EventDraft, event_line, project, project_id_for, rechain
from intentloop.store import LockConfig, ProjectStore, stream_events, task_events, verify_ledger_bytes
from intentloop.store._checkpoint import read_checkpoint
from intentloop.store._index import open_indexed

PID = project_id_for("/rewrite/stream")
OTHER = project_id_for("/rewrite/stream/moved")
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=2, ceiling_s=5)
TASKS = [str(uuid.UUID(int=n + 1)) for n in range(4)]
# Text that looks like the chain's own keys, quotes and escapes: a byte-level re-chain must not be fooled by it.
TRICKY = ['","prev_hash":"', '"project_id":"', ',"event_hash":"' + "a" * 64, "\\", '"', "é\u2028", "\x00", "null"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([1.0, -0.0, 2.5e-7, 1e21]),
    st.text(max_size=20),
    st.sampled_from(TRICKY),
)
payloads = st.dictionaries(
    st.one_of(st.text(max_size=8), st.sampled_from(["prev_hash", "project_id", "event_hash", "task_id"])),
    st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)
drafts = st.builds(
    lambda event_type, task, actor, request_id, payload: EventDraft(
        event_type=event_type, task_id=task, actor=actor, request_id=request_id, payload=payload
    ),
    st.sampled_from(["claim_added", "task_started", "mode_set", "candidate_added", "source_observed"]),
    st.sampled_from(TASKS),
    st.sampled_from(["user", "agent", "evidence", "system"]),
    st.one_of(st.text(min_size=1, max_size=30), st.sampled_from(TRICKY)),
    payloads,
)


def store_at(root: Path, pid: str = PID) -> ProjectStore:
    return ProjectStore(root, pid, CONFIG)


def grow(store: ProjectStore, items: Sequence[EventDraft]) -> list[Event]:
    with store.locked() as ledger:
        ledger.append(items)
    return list(store.read().events)


def reference(events: Sequence[Event], edit: Callable[[Event], Event | None], pid: str = PID) -> bytes:
    """What the rewrite wrote before it streamed: every event edited in a list, re-chained, encoded, joined."""
    kept = [e for e in (edit(event) for event in events) if e is not None]
    return b"".join(event_line(event) for event in rechain(kept, project_id=pid))


def edited(event: Event) -> Event:
    return Event(**{**event.to_dict(), "payload": {**event.payload, "edited": ["yes", 1.0, TRICKY[0]]}})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(drafts, min_size=1, max_size=25),
    drop=st.sets(st.integers(0, 24), max_size=6),
    change=st.sets(st.integers(0, 24), max_size=6),
    narrowed=st.booleans(),
)
def test_streamed_rewrite_writes_the_bytes_the_whole_list_rewrite_wrote(items, drop, change, narrowed) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = store_at(Path(tmp))
        events = grow(store, items)
        ids = {events[i].event_id: i for i in range(len(events))}

        def edit(event: Event) -> Event | None:
            index = ids[event.event_id]
            if index in drop:
                return None
            return edited(event) if index in change else event

        expected = reference(events, edit)
        before = store.ledger_path.read_bytes()
        touched = {events[i].task_id.encode() for i in drop | change if i < len(events)}
        with store.locked(lazy=True) as ledger:
            replaced = ledger.rewrite_each(edit, touches=sorted(touched) if narrowed else None)
        after = store.ledger_path.read_bytes()
        assert after == expected
        assert replaced == (after != before)  # nothing edited: the file is left as it was
        assert verify_ledger_bytes(after, project_id=PID).ok


def _big_ledger(store: ProjectStore) -> list[Event]:
    """3,000 events of about 1 KB over four tasks: several chunks of the streamed pass."""
    items = []
    for k in range(3000):
        task = TASKS[k % 4]
        kind = "task_started" if k < 4 else ("mode_set" if k % 97 == 0 else "claim_added")
        items.append(
            EventDraft(
                event_type=kind,
                task_id=task,
                actor="user",
                request_id=f"r-{k}",
                payload={"n": k, "text": f"claim {k} " + "x" * 900, "mode": "on"},
            )
        )
    return grow(store, items)


def test_a_multi_chunk_rewrite_matches_and_its_index_and_checkpoint_describe_the_new_file(data_root: Path) -> None:
    store = store_at(data_root)
    events = _big_ledger(store)
    assert store.ledger_path.stat().st_size > 2 * 1024 * 1024  # several 512 KiB chunks

    def edit(event: Event) -> Event | None:
        if event.task_id == TASKS[2]:
            return None
        return edited(event) if event.request_id == "r-1501" else event

    with store.locked(lazy=True) as ledger:
        assert ledger.rewrite_each(edit, touches=[TASKS[2].encode(), TASKS[1].encode()])
        head = ledger.head
    assert store.ledger_path.read_bytes() == reference(events, edit)
    checkpoint = read_checkpoint(store.paths)
    assert checkpoint is not None and checkpoint.matches(os.stat(store.ledger_path))
    assert (checkpoint.head, checkpoint.lines) == head
    kept = [e for e in (edit(x) for x in events) if e is not None]
    assert checkpoint.covering_index() == (
        checkpoint.index,
        sum(e.event_type in ("task_started", "mode_set") for e in kept),
    )
    assert [n for n in os.listdir(store.project_dir) if n.startswith("index-")] == [checkpoint.index]
    indexed = open_indexed(store.paths)
    assert indexed is not None
    try:
        streamed = [e for chunk in stream_events(store.paths) for e in chunk]
        for task in TASKS:
            assert indexed.task_events(task) == [e for e in streamed if e.task_id == task]
        assert indexed.task_events(TASKS[2]) == []
        assert indexed.binding_events() == [e for e in streamed if e.event_type in ("task_started", "mode_set")]
    finally:
        indexed.close()
    assert project(task_events(store.paths, TASKS[1])).tasks[TASKS[1]].event_count == 750
    with store.locked() as ledger:  # a later append extends the new index
        ledger.append(
            [EventDraft(event_type="claim_added", task_id=TASKS[0], actor="user", request_id="after", payload={})]
        )
    assert task_events(store.paths, TASKS[0])[-1].request_id == "after"


def test_relink_source_moves_every_event_to_the_new_project(data_root: Path) -> None:
    source = store_at(data_root)
    events = _big_ledger(source)
    target = store_at(data_root, OTHER)
    with source.locked(lazy=True) as old, target.locked(lazy=True) as new:
        assert new.rewrite_each(None, source=old)
    assert target.ledger_path.read_bytes() == reference(events, lambda e: e, OTHER)
    assert len(target.read().events) == len(events)


def _names(store: ProjectStore) -> list[str]:
    return sorted(os.listdir(store.project_dir))


def test_a_forbidden_byte_in_the_new_ledger_changes_nothing(data_root: Path) -> None:
    store = store_at(data_root)
    events = grow(
        store, [EventDraft(event_type="claim_added", task_id=t, actor="user", request_id=t, payload={}) for t in TASKS]
    )
    before, names = store.ledger_path.read_bytes(), _names(store)
    with pytest.raises(StorageError) as caught, store.locked(lazy=True) as ledger:
        ledger.rewrite_each(lambda e: None if e.task_id == TASKS[0] else e, forbidden=[TASKS[1].encode()])
    assert caught.value.code == "DELETE_VERIFICATION_FAILED"
    assert store.ledger_path.read_bytes() == before and _names(store) == names  # no temp file, no new index
    with store.locked(lazy=True) as ledger:  # control: the id that is gone may be forbidden
        assert ledger.rewrite_each(lambda e: None if e.task_id == TASKS[0] else e, forbidden=[TASKS[0].encode()])
    assert store.ledger_path.read_bytes() == reference(events, lambda e: None if e.task_id == TASKS[0] else e)


@pytest.mark.parametrize("narrowed", [True, False], ids=["untouched-line", "decoded-line"])
def test_a_source_line_changed_under_the_lock_is_refused(data_root: Path, narrowed: bool) -> None:
    store = store_at(data_root)
    items = [
        EventDraft(
            event_type="claim_added", task_id=TASKS[k % 2], actor="user", request_id=f"q-{k}", payload={"s": "abcdef"}
        )
        for k in range(6)
    ]
    grow(store, items)
    before = store.ledger_path.read_bytes()
    drop = lambda e: None if e.request_id == "q-0" else e  # noqa: E731
    touches = [TASKS[0].encode()] if narrowed else None
    with store.locked(lazy=True) as ledger:
        # A foreign program edits a later line in place (same inode, same size) while the lock is held.
        at = before.index(b"abcdef", before.index(b'"q-3"') - 200)
        fd = os.open(store.ledger_path, os.O_WRONLY)
        os.pwrite(fd, b"abcdeX", at)
        os.close(fd)
        with pytest.raises(CorruptLedgerError):
            ledger.rewrite_each(drop, touches=touches)
    assert store.ledger_path.read_bytes()[:at] == before[:at]  # nothing was replaced
    fd = os.open(store.ledger_path, os.O_WRONLY)
    os.pwrite(fd, b"abcdef", at)
    os.close(fd)
    with store.locked() as ledger:  # control: the untouched file rewrites
        assert ledger.rewrite_each(drop, touches=touches)


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
@pytest.mark.parametrize("step", ["write", "fsync", "replace", "dir-fsync"])
def test_a_failed_step_of_the_streamed_rewrite_leaves_a_verified_ledger(data_root, monkeypatch, step, code) -> None:
    store = store_at(data_root)
    events = grow(
        store, [EventDraft(event_type="claim_added", task_id=t, actor="user", request_id=t, payload={}) for t in TASKS]
    )
    before, names = store.ledger_path.read_bytes(), _names(store)
    real: dict[str, Any] = {"write": os.write, "fsync": os.fsync, "replace": os.replace}

    def temp(fd: int) -> bool:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith("ledger-rewrite-")

    def failing_write(fd, data):
        if temp(fd):
            raise OSError(code, os.strerror(code))
        return real["write"](fd, data)

    def failing_fsync(fd):
        if (step == "fsync" and temp(fd)) or (
            step == "dir-fsync" and os.readlink(f"/proc/self/fd/{fd}") == str(store.project_dir)
        ):
            raise OSError(code, os.strerror(code))
        return real["fsync"](fd)

    def failing_replace(src, dst, **kwargs):
        if os.path.basename(src).startswith("ledger-rewrite-"):
            raise OSError(code, os.strerror(code))
        return real["replace"](src, dst, **kwargs)

    name, function = {"write": ("write", failing_write), "replace": ("replace", failing_replace)}.get(
        step, ("fsync", failing_fsync)
    )
    drop = lambda e: None if e.task_id == TASKS[3] else e  # noqa: E731
    monkeypatch.setattr(os, name, function)
    with pytest.raises(StorageError) as info, store.locked(lazy=True) as ledger:
        ledger.rewrite_each(drop)
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED"
    after = store.ledger_path.read_bytes()
    if step == "dir-fsync":  # past the rename: the new ledger is in place, only its durability is in doubt
        assert after == reference(events, drop)
    else:
        assert after == before and _names(store) == names  # the temp file and the new index are gone
    assert verify_ledger_bytes(after, project_id=PID).ok
    with store.locked() as ledger:  # the next write works
        ledger.append(
            [EventDraft(event_type="claim_added", task_id=TASKS[0], actor="user", request_id="next", payload={})]
        )


def _garbled(kind: str, chunk: bytes) -> bytes:
    """``chunk`` as a faulty write might leave it on disk."""
    lines = chunk.split(b"\n")[:-1]
    if kind == "flipped-byte":  # one byte of an untouched line's payload
        at = chunk.rindex(b'"s":"abcdef"') + 6
        return chunk[:at] + b"X" + chunk[at + 1 :]
    if kind == "swapped-lines":
        return b"\n".join([*lines[:-2], lines[-1], lines[-2]]) + b"\n"
    if kind == "torn":
        return chunk[:-10]
    assert kind == "overwritten-line"  # the line before the last overwritten by the last one's bytes: same length
    return b"\n".join([*lines[:-2], lines[-1][: len(lines[-2])].ljust(len(lines[-2]), b" "), lines[-1]]) + b"\n"


@pytest.mark.parametrize("kind", ["flipped-byte", "swapped-lines", "torn", "overwritten-line"])
def test_a_write_that_does_not_land_as_written_is_refused(data_root: Path, monkeypatch, kind: str) -> None:
    """The written file is read back and verified as a chain (each line's hash and link, from its bytes) before it
    replaces the ledger: a garbled or torn write is caught, not committed."""
    from intentloop.store import _rewrite

    store = store_at(data_root)
    items = [
        EventDraft(
            event_type="claim_added", task_id=TASKS[k % 2], actor="user", request_id=f"g-{k}", payload={"s": "abcdef"}
        )
        for k in range(8)
    ]
    events = grow(store, items)
    before, names = store.ledger_path.read_bytes(), _names(store)
    real = _rewrite.write_all
    monkeypatch.setattr(_rewrite, "write_all", lambda fd, data: real(fd, _garbled(kind, data)))
    drop = lambda e: None if e.request_id == "g-0" else e  # noqa: E731
    with pytest.raises(StorageError) as caught, store.locked(lazy=True) as ledger:
        ledger.rewrite_each(drop, touches=[TASKS[0].encode()])
    assert caught.value.code == "DELETE_VERIFICATION_FAILED"
    assert store.ledger_path.read_bytes() == before and _names(store) == names  # no temp file, no new index
    monkeypatch.undo()
    with store.locked(lazy=True) as ledger:  # control: written as it is, the same rewrite goes through
        assert ledger.rewrite_each(drop, touches=[TASKS[0].encode()])
    assert store.ledger_path.read_bytes() == reference(events, drop)
