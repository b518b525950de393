"""Every store's verified views hold offsets into the ledger, not events, and every event read back by offset must hash
to what was verified; a view answers every task-level question as a decoded whole-file verification does."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import CorruptLedgerError
from intentloop.model import EventDraft, event_line, project, project_id_for, seal
from intentloop.model.events import Event, compute_event_hash
from intentloop.store import LedgerView, LineEvents, LockConfig, ProjectStore, _lines, _project
from intentloop.store._verify import verify_ledger_bytes

PID = project_id_for("/lean/view")
TASKS = [str(uuid.uuid4()) for _ in range(3)]
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)


def draft(task: str, request_id: str, kind: str = "claim_added") -> EventDraft:
    return EventDraft(event_type=kind, task_id=task, actor="user", request_id=request_id, payload={"n": request_id})


def forget(store: ProjectStore) -> None:
    _project._cache.drop(str(store.ledger_path))


def decoded(store: ProjectStore) -> LedgerView:
    """The reference: the whole file verified at once, every event decoded."""
    check = verify_ledger_bytes(store.ledger_path.read_bytes(), project_id=PID)
    assert check.error is None
    return LedgerView(tuple(check.events), check.head_hash, check.byte_length)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_lines, "CHUNK_BYTES", 700)  # a few lines per chunk: the chain crosses many chunks


@pytest.fixture
def whole(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append([draft(t, f"start-{i}", "task_started") for i, t in enumerate(TASKS)])
        ledger.append([draft(TASKS[i % 3], f"r-{i}") for i in range(40)])
    forget(store)
    return store


@pytest.fixture
def lean(data_root: Path) -> ProjectStore:
    return ProjectStore(data_root, PID, config=CONFIG, resident=True)


def test_a_read_answers_as_a_whole_decoded_read(whole: ProjectStore, lean: ProjectStore) -> None:
    expected = decoded(whole)
    view = lean.read()
    assert isinstance(view.events, LineEvents)
    assert isinstance(whole.read().events, LineEvents)  # a store that is not resident reads offsets too
    assert list(view.events) == list(expected.events)
    assert (view.head_hash, view.byte_length, len(view)) == (expected.head_hash, expected.byte_length, len(expected))
    assert view.events[0] == expected.events[0] and view.events[-1] == expected.events[-1]
    assert view.events[5:9] == list(expected.events[5:9])
    assert view.task_ids() == expected.task_ids()
    for task in TASKS:
        assert view.by_task(task) == expected.by_task(task)
    assert view.find_request(TASKS[1], "r-4") == expected.find_request(TASKS[1], "r-4") is not None
    assert view.find_request(TASKS[1], "r-5") is None  # r-5 belongs to another task
    starts = [e for e in expected.events if e.event_type == "task_started"]
    assert view.of_types({"task_started"}) == expected.of_types({"task_started"}) == starts
    assert view.of_types({"mode_set"}) == []
    assert [view.events.task_at(i) for i in range(len(view))] == [e.task_id for e in expected.events]
    assert lean.verify().ok and len(lean.verify().events) == len(expected)
    for task in TASKS:
        folded, reference = view.task(task), expected.task(task)
        assert folded is not None and reference is not None
        assert (folded.event_count, folded.claims, folded.requests) == (
            reference.event_count,
            reference.claims,
            reference.requests,
        )
    assert view.task(str(uuid.uuid4())) is None and expected.task(str(uuid.uuid4())) is None


def test_appends_extend_the_lean_view(lean: ProjectStore, whole: ProjectStore) -> None:
    before = lean.read()
    with lean.locked() as ledger:
        ledger.append([draft(TASKS[0], "later-1"), draft(TASKS[2], "later-2")])
    after = lean.read()
    assert isinstance(after.events, LineEvents)
    assert list(after.events) == list(decoded(whole).events)
    assert len(before) == len(after) - 2 and before.by_task(TASKS[0])[-1].request_id == "r-39"  # the older view
    assert after.by_task(TASKS[0])[-1].request_id == "later-1"
    assert after.find_request(TASKS[2], "later-2") is not None


def test_a_new_ledger_and_a_rewritten_one_are_read_back_lean(data_root: Path) -> None:
    store = ProjectStore(data_root, PID, config=CONFIG, resident=True)
    with store.locked() as ledger:
        ledger.append([draft(TASKS[0], "first", "task_started")])
    assert isinstance(store.read().events, LineEvents)  # not the decoded view the first append left
    with store.locked() as ledger:
        ledger.append([draft(TASKS[0], "second")])
        ledger.rewrite(ledger.view.events[:1])
    view = store.read()
    assert isinstance(view.events, LineEvents) and [e.request_id for e in view.events] == ["first"]


def test_bytes_changed_after_verification_are_corrupt_ledger(whole: ProjectStore, lean: ProjectStore) -> None:
    view = lean.read()
    data = whole.ledger_path.read_bytes()
    target = event_line(view.by_task(TASKS[1])[3])
    at = data.index(target) + target.index(b'"n":"r-') + 6
    with open(whole.ledger_path, "r+b") as fh:  # same size, in place: the verified inode itself
        fh.seek(at)
        fh.write(b"R")
    assert [e.request_id for e in view.by_task(TASKS[0])][-1] == "r-39"  # control: untouched lines still read
    with pytest.raises(CorruptLedgerError) as caught:
        view.by_task(TASKS[1])
    assert caught.value.code == "CORRUPT_LEDGER"
    with pytest.raises(CorruptLedgerError) as again:
        list(view.events)
    assert again.value.code == "CORRUPT_LEDGER"
    with pytest.raises(CorruptLedgerError):  # and a fresh read verifies the file again
        lean.read()


@pytest.mark.parametrize("edit", ["resealed", "hash_tail"])
def test_a_line_replaced_by_another_valid_line_or_with_its_hash_edited_past_what_is_kept_is_corrupt(
    whole: ProjectStore, lean: ProjectStore, edit: str
) -> None:
    """A view keeps only the first half of each event_hash: a line re-read must still hash to the event_hash it
    records, and that must start with what the view kept, so neither a self-consistent replacement (another request id,
    resealed) nor an edit of the recorded hash's second half gets through."""
    view = lean.read()
    old = view.by_task(TASKS[1])[3]
    line = event_line(old)
    if edit == "resealed":
        body = old.to_dict()
        body["request_id"] = new_request = old.request_id[:-1] + ("8" if old.request_id[-1] != "8" else "9")
        del body["event_hash"]
        replacement = event_line(Event(event_hash=compute_event_hash(body), **body))
        assert new_request != old.request_id and len(replacement) == len(line) and replacement != line
    else:
        cut = line.index(b'"event_hash":"') + len(b'"event_hash":"') + 63
        replacement = line[:cut] + (b"0" if line[cut : cut + 1] != b"0" else b"1") + line[cut + 1 :]
    data = whole.ledger_path.read_bytes()
    with open(whole.ledger_path, "r+b") as fh:  # same size, in place: the verified inode itself
        fh.seek(data.index(line))
        fh.write(replacement)
    assert [e.request_id for e in view.by_task(TASKS[0])][-1] == "r-39"  # control: untouched lines still read
    with pytest.raises(CorruptLedgerError) as caught:
        view.by_task(TASKS[1])
    assert caught.value.code == "CORRUPT_LEDGER"


def test_a_view_reads_the_inode_it_verified(whole: ProjectStore, lean: ProjectStore, data_root: Path) -> None:
    view = lean.read()
    expected = list(view.events)
    other = Path(data_root) / "other.jsonl"
    event = seal(draft(TASKS[0], "elsewhere", "task_started"), project_id=PID, prev_hash=None)
    other.write_bytes(event_line(event))
    os.replace(other, whole.ledger_path)  # a rewrite renames another file over the path
    assert list(view.events) == expected
    assert [e.request_id for e in lean.read().events] == ["elsewhere"]


@pytest.mark.parametrize("damage", ["middle", "torn"])
def test_damage_is_reported_as_a_whole_read_reports_it(whole: ProjectStore, lean: ProjectStore, damage: str) -> None:
    data = whole.ledger_path.read_bytes()
    if damage == "middle":
        cut = data.index(b"\n", len(data) // 2) + 1
        data = data[:cut] + b" " + data[cut:]  # a line that is no longer canonical
    else:
        data += b'{"actor":"us'
    whole.ledger_path.write_bytes(data)
    expected = verify_ledger_bytes(data, project_id=PID)
    got = lean.verify()
    assert expected.error is not None and got.error is not None
    assert (got.error.code, got.error.line, got.byte_length) == (
        expected.error.code,
        expected.error.line,
        expected.byte_length,
    )
    assert got.damage is not None and got.damage.length == len(data) - expected.byte_length
    with pytest.raises(CorruptLedgerError):
        lean.read()


def test_a_second_extension_of_the_same_view_copies_its_records(lean: ProjectStore, whole: ProjectStore) -> None:
    view = lean.read()
    count = len(view)
    new_task = str(uuid.uuid4())
    one = seal(draft(TASKS[0], "one"), project_id=PID, prev_hash=view.head_hash)
    other = seal(draft(new_task, "other", "task_started"), project_id=PID, prev_hash=view.head_hash)
    first = view.extended([one], view.byte_length + len(event_line(one)))
    second = view.extended([other], view.byte_length + len(event_line(other)))  # a branch: the records are copied
    assert (len(view), len(first), len(second)) == (count, count + 1, count + 1)
    assert new_task in second.task_ids() and new_task not in first.task_ids() and new_task not in view.task_ids()
    assert list(first.events.positions(TASKS[0]))[-1] == count  # type: ignore[attr-defined]
    assert list(second.events.positions(TASKS[0])) == list(view.events.positions(TASKS[0]))  # type: ignore[attr-defined]
    assert second.events.task_at(count) == new_task and first.events.task_at(count) == TASKS[0]  # type: ignore[attr-defined]
    assert second.events.of_types({"task_started"}) == [0, 1, 2, count]  # type: ignore[attr-defined]
    assert first.events.of_types({"task_started"}) == [0, 1, 2]  # type: ignore[attr-defined]


def test_is_cached_says_whether_a_read_would_touch_the_ledger(data_root: Path, whole: ProjectStore) -> None:
    lean = ProjectStore(data_root, PID, config=CONFIG, resident=True)
    assert not lean.is_cached()  # never read in this process
    lean.read()
    assert lean.is_cached()
    with whole.ledger_path.open("ab") as fh:  # a foreign append: the file is no longer what was verified
        fh.write(b"")
    os.utime(whole.ledger_path)
    assert not lean.is_cached()
    lean.read()
    assert lean.is_cached()
    assert ProjectStore(data_root, project_id_for("/no/ledger/here"), config=CONFIG).is_cached()


def test_the_task_index_rebuilt_from_a_lean_view_is_the_one_the_events_give(
    whole: ProjectStore, lean: ProjectStore
) -> None:
    from intentloop.store._index import count_bindings, rebuild_index

    with whole.locked() as ledger:  # a binding event in the middle, so the bindings file has more than the starts
        ledger.append([draft(TASKS[1], "mode", "mode_set"), draft(TASKS[2], "r-last")])
    reference = decoded(whole)
    view = lean.read()
    assert isinstance(view.events, LineEvents) and isinstance(reference.events, tuple)

    def index_of(events: Any) -> dict[str, bytes]:
        name = rebuild_index(whole.paths, events, reference.byte_length)
        assert name is not None
        return {p.name: p.read_bytes() for p in (whole.project_dir / name).iterdir()}

    expected = index_of(reference.events)
    records = [name for name in expected if not name.startswith(("s-", "m-", "summaries"))]  # the task summaries
    assert len(records) == len(TASKS) + 2  # a file per task, the bindings and the counts
    assert len(expected) - len(records) == 2 * len(TASKS) + 1  # and a summary and claim marks per task, and a mark
    assert index_of(view.events) == expected
    assert count_bindings(view.events) == count_bindings(reference.events) == len(TASKS) + 1


def test_kept_folds_stay_within_the_budget_and_extend_as_a_fresh_fold(
    lean: ProjectStore, whole: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view keeps the folds of the tasks last asked for within the budget (the one just asked for always), and a
    kept fold extended by later appends is the fold of all the task's events."""
    monkeypatch.setattr(_lines, "FOLD_BUDGET_EVENTS", 20)  # about one task of the 43 events
    view = lean.read()
    folds = view.events._table.folds  # type: ignore[attr-defined]
    for task in TASKS:
        assert view.task(task) is view.task(task)  # kept: the same object answers again
    assert list(folds._kept) == [TASKS[2]]  # 14 events a task: only the last one asked for fits
    kept = view.task(TASKS[2])
    with lean.locked() as ledger:
        ledger.append([draft(TASKS[2], "later-1"), draft(TASKS[2], "later-2", "mode_set")])
    after = lean.read()
    extended = after.task(TASKS[2])
    assert extended is kept  # extended in place, not folded again
    fresh = project(decoded(whole).by_task(TASKS[2])).tasks[TASKS[2]]
    assert extended is not None
    assert (extended.event_count, extended.claims, extended.requests, extended.mode) == (
        fresh.event_count,
        fresh.claims,
        fresh.requests,
        fresh.mode,
    )
    older = view.task(TASKS[2])  # the view before the appends answers its own prefix, folded afresh
    assert older is not None and older.event_count == fresh.event_count - 2
