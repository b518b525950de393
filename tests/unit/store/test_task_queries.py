"""The store's task-level answers (``tasks()``, ``task_events()``, ``task()``) equal a fresh full fold of the same
ledger, whatever happened to the checkpoint, the task index and its per-task summaries."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from intentloop.model import EventDraft, project, project_id_for
from intentloop.model.projection import TaskState
from intentloop.store import (
    CHECKPOINT_NAME,
    INDEX_DIR_RE,
    LockConfig,
    ProjectStore,
    _project,
    _summary,
    _task_queries,
    verify_ledger_bytes,
)
from intentloop.store._index import IndexBuilder
from intentloop.store._summary import SUMMARIES_MARK, read_summary, summary_file

PID = project_id_for("/task/queries")
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)
TASKS = ["00000000-0000-4000-8000-00000000000" + str(i) for i in range(3)]
CLAIMS = ["c0000000-0000-4000-8000-00000000000" + str(i) for i in range(5)]
STATUSES = ("explicit", "inferred", "evidence")


def claim(claim_id: str, status: str, supersedes: list[str]) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "statement": f"statement of {claim_id}",
        "role": "user",
        "epistemic_status": status,
        "source_ref": {"kind": "user_event"},
        "scope": "task",
        "valid_from": "2026-01-01T00:00:00Z",
        "last_confirmed": None,
        "supersedes": supersedes,
        "facets": [],
        "related_claim_ids": [],
    }


def candidate(n: int) -> dict[str, Any]:
    return {
        "candidate_id": f"cand-{n}",
        "candidate_type": "hook_observation",
        "source_ref": {"kind": "hook"},
        "created_at": "2026-01-01T00:00:00Z",
    }


claims = st.builds(
    claim, st.sampled_from(CLAIMS), st.sampled_from(STATUSES), st.lists(st.sampled_from(CLAIMS), max_size=2)
)
malformed = st.sampled_from([{"claim_id": CLAIMS[0], "statement": 3}, {"no": "id"}, "text", None])
claim_or_bad = st.one_of(claims, claims, claims, malformed)
cand = st.one_of(st.integers(0, 9).map(candidate), st.just({"candidate_id": "x"}))
payloads: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "task_started": st.fixed_dictionaries(
        {
            "mode": st.sampled_from(["on", "off", "private", "weird"]),
            "label": st.one_of(st.none(), st.text(max_size=5), st.integers()),
            "host_session_hash": st.one_of(st.none(), st.just("a" * 64)),
            "initial_claims": st.lists(claim_or_bad, max_size=2),
        }
    ),
    "claim_added": st.fixed_dictionaries({"claim": claim_or_bad}),
    "claim_replaced": st.fixed_dictionaries({"claim": claim_or_bad}),
    "claim_invalidated": st.fixed_dictionaries(
        {"claim_id": st.one_of(st.sampled_from(CLAIMS), st.integers()), "reason": st.one_of(st.none(), st.text())}
    ),
    "candidate_added": st.fixed_dictionaries({"candidate": cand}),
    "source_observed": st.fixed_dictionaries({"candidate": cand}),
    "mode_set": st.fixed_dictionaries({"mode": st.sampled_from(["on", "off", "bogus"])}),
    "graph_imported": st.fixed_dictionaries(
        {
            "claims": st.lists(claim_or_bad, max_size=3),
            "invalidated_claim_ids": st.lists(st.sampled_from(CLAIMS), max_size=2),
            "candidates": st.lists(cand, max_size=2),
        }
    ),
}
times = st.sampled_from([f"2026-01-01T00:00:0{i}Z" for i in range(10)])
drafts = st.builds(
    lambda kind, task, payload, at: (kind, task, payload, at),
    st.sampled_from(sorted(payloads)),
    st.sampled_from(TASKS),
    st.just(None),
    times,
).flatmap(lambda t: payloads[t[0]].map(lambda p, t=t: (t[0], t[1], p, t[3])))
DAMAGE = (
    "none",
    "checkpoint-removed",
    "checkpoint-garbled",
    "index-removed",
    "counts-garbled",
    "summary-removed",
    "summary-garbled",
    "summary-stale",
    "summary-other-task",
    "task-file-cut",
    "marks-removed",
    "marks-garbled",
    "marks-stale",
)


def as_draft(item: tuple[str, str, dict[str, Any], str]) -> EventDraft:
    kind, task, payload, at = item
    return EventDraft(
        event_type=kind, task_id=task, actor="user", request_id=str(uuid.uuid4()), payload=payload, occurred_at=at
    )


def index_dir(store: ProjectStore) -> Path | None:
    if not store.project_dir.is_dir():
        return None
    found = [p for p in store.project_dir.iterdir() if INDEX_DIR_RE.match(p.name)]
    return found[0] if found else None


def damage(store: ProjectStore, kind: str, stale: dict[str, bytes]) -> None:
    directory = index_dir(store)
    summaries = sorted(directory.glob("s-*")) if directory is not None else []
    marks = sorted(directory.glob("m-*")) if directory is not None else []
    checkpoint = store.project_dir / CHECKPOINT_NAME
    if kind == "checkpoint-removed" and checkpoint.exists():
        checkpoint.unlink()
    elif kind == "checkpoint-garbled" and checkpoint.exists():
        checkpoint.write_bytes(checkpoint.read_bytes()[:-7] + b"garbage")
    elif kind == "index-removed" and directory is not None:
        shutil.rmtree(directory)
    elif kind == "counts-garbled" and directory is not None:
        (directory / "counts.json").write_bytes(b"{not json")
    elif kind == "summary-removed" and summaries:
        summaries[0].unlink()
    elif kind == "summary-garbled" and summaries:
        data = bytearray(summaries[-1].read_bytes())
        at = data.find(b'"candidates":') + len(b'"candidates":')
        data[at : at + 1] = b"7" if data[at : at + 1] != b"7" else b"8"  # still JSON, no longer what the digest says
        summaries[-1].write_bytes(bytes(data))
    elif kind == "summary-stale" and summaries:
        name = summaries[0].name
        if name in stale:
            summaries[0].write_bytes(stale[name])  # what it said before the last append
    elif kind == "summary-other-task" and len(summaries) > 1:
        summaries[0].write_bytes(summaries[1].read_bytes())
    elif kind == "marks-removed" and marks:
        marks[0].unlink()
    elif kind == "marks-garbled" and marks:
        data = marks[-1].read_bytes()
        marks[-1].write_bytes(data.replace(b"explicit", b"inferred", 1) if b"explicit" in data else data[:-3])
    elif kind == "marks-stale" and marks:
        name = marks[0].name
        if name in stale:
            marks[0].write_bytes(stale[name])
    elif kind == "task-file-cut" and directory is not None:
        files = sorted(directory.glob("t-*"))
        if files:
            with open(files[0], "r+b") as fh:
                fh.truncate(max(0, os.path.getsize(files[0]) - 12))


def expected_rows(store: ProjectStore) -> tuple[list[dict[str, Any]], int, str | None, int, int]:
    """What a fresh full fold of the file says, in the listing's terms."""
    verification = verify_ledger_bytes(store.ledger_path.read_bytes(), project_id=PID)
    assert verification.error is None
    state = project(verification.events)
    rows = [row_of_task(task) for task in state.tasks.values()]
    last = max((e.occurred_at for e in verification.events), default=None)
    candidates = sum(len(t.candidates) for t in state.tasks.values())
    claims_started = sum(len(t.claims) for t in state.tasks.values() if t.started)
    return rows, len(verification.events), last, candidates, claims_started


def row_of_task(task: TaskState) -> dict[str, Any]:
    lifecycle = {"active": 0, "superseded": 0, "invalidated": 0}
    by_status: dict[str, int] = {}
    for claim_id, item in task.claims.items():
        if claim_id in task.invalidations:
            lifecycle["invalidated"] += 1
        elif claim_id in task.superseded_by:
            lifecycle["superseded"] += 1
        else:
            lifecycle["active"] += 1
            by_status[item.epistemic_status] = by_status.get(item.epistemic_status, 0) + 1
    return {
        "task_id": task.task_id,
        "started_at": task.started_at,
        "label": task.label,
        "mode": task.mode,
        "host_session_hash": task.host_session_hash,
        "last_event_at": task.last_event_at,
        "events": task.event_count,
        "claims": len(task.claims),
        "lifecycle": lifecycle,
        "by_status": dict(sorted(by_status.items())),
        "candidates": len(task.candidates),
    }


def listed_rows(store: ProjectStore) -> tuple[list[dict[str, Any]], int, str | None, int, int]:
    listing = store.tasks()
    assert listing.damage is None
    rows = []
    for summary in listing.tasks:
        lifecycle, by_status = summary.lifecycle()
        rows.append(
            {
                "task_id": summary.task_id,
                "started_at": summary.started_at,
                "label": summary.label,
                "mode": summary.mode,
                "host_session_hash": summary.host_session_hash,
                "last_event_at": summary.last_event_at,
                "events": summary.events,
                "claims": summary.claims,
                "lifecycle": lifecycle,
                "by_status": by_status,
                "candidates": summary.candidates,
            }
        )
    return rows, listing.events, listing.last_activity, listing.candidate_count, listing.claim_count


def fresh(store: ProjectStore) -> ProjectStore:
    """The same store as another process sees it: nothing verified in this one."""
    _project._cache.drop(str(store.ledger_path))
    return store


def grown(root: Path, batches: list[list[Any]], damages: list[str]) -> tuple[ProjectStore, dict[str, bytes]]:
    """A store grown by ``batches``, a hook's lazy writer and a full one in turn, each batch followed by a damage to
    the caches; returns it and the summaries and marks the last batch found (what a stale damage writes back)."""
    store = ProjectStore(root, PID, config=CONFIG)
    stale: dict[str, bytes] = {}
    for number, batch in enumerate(batches):
        directory = index_dir(store)
        if directory is not None:
            stale = {p.name: p.read_bytes() for p in [*directory.glob("s-*"), *directory.glob("m-*")]}
        with fresh(store).locked(lazy=number % 2 == 1) as ledger:  # a hook's lazy writer and a full one
            ledger.append([as_draft(item) for item in batch])
        damage(store, damages[number % len(damages)], stale)
    return store, stale


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.lists(drafts, min_size=1, max_size=6), min_size=1, max_size=5),
    damages=st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=6),
    final=st.lists(st.sampled_from(DAMAGE), max_size=3),
)
def test_answers_equal_a_fresh_full_fold(tmp_path_factory, batches, damages, final) -> None:
    store, stale = grown(tmp_path_factory.mktemp("data"), batches, damages)
    for kind in final:
        damage(store, kind, stale)
    assert listed_rows(fresh(store)) == expected_rows(store)
    full = verify_ledger_bytes(store.ledger_path.read_bytes(), project_id=PID).events
    for task_id in TASKS:
        assert fresh(store).task_events(task_id) == tuple(e for e in full if e.task_id == task_id)
        folded = fresh(store).task(task_id)
        expected = project(full).tasks.get(task_id)
        assert (folded is None) == (expected is None)
        if folded is not None and expected is not None:
            assert row_of_task(folded) == row_of_task(expected)
            assert folded.claims == expected.claims and folded.invalidations == expected.invalidations


# ------------------------------------------------------------------------------------------------ examples
@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append(
            [
                as_draft(("task_started", t, {"mode": "on", "label": f"t{i}"}, "2026-01-01T00:00:00Z"))
                for i, t in enumerate(TASKS)
            ]
        )
        ledger.append(
            [
                as_draft(
                    ("claim_added", TASKS[i % 2], {"claim": claim(CLAIMS[i], "explicit", [])}, "2026-01-02T00:00:00Z")
                )
                for i in range(4)
            ]
        )
    with store.locked(lazy=True) as ledger:  # an append after the rebuild: summaries advanced by the new events
        ledger.append([as_draft(("claim_invalidated", TASKS[0], {"claim_id": CLAIMS[0]}, "2026-01-03T00:00:00Z"))])
    return fresh(store)


def test_the_listing_is_answered_from_the_index_without_reading_the_ledger(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = listed_rows(store)
    monkeypatch.setattr(ProjectStore, "verify", _no_whole_read)
    monkeypatch.setattr(ProjectStore, "read", _no_whole_read)
    assert listed_rows(store) == expected
    assert [e.event_type for e in store.task_events(TASKS[0])] == [
        "task_started",
        "claim_added",
        "claim_added",
        "claim_invalidated",
    ]
    lifecycle, _ = store.tasks().get(TASKS[0]).lifecycle()
    assert lifecycle == {"active": 1, "superseded": 0, "invalidated": 1}


def test_without_a_matching_checkpoint_the_ledger_is_read_whole(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store.project_dir / CHECKPOINT_NAME).unlink()
    monkeypatch.setattr(ProjectStore, "verify", _no_whole_read)
    monkeypatch.setattr(ProjectStore, "read", _no_whole_read)
    with pytest.raises(AssertionError, match="whole ledger"):
        store.tasks()
    with pytest.raises(AssertionError, match="whole ledger"):
        store.task_events(TASKS[0])


@pytest.mark.parametrize("kind", ["summary-removed", "summary-garbled", "summary-stale", "summary-other-task"])
def test_a_bad_summary_is_recomputed_from_its_task_never_believed(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    expected = expected_rows(store)
    directory = index_dir(store)
    assert directory is not None
    target = directory / summary_file(TASKS[0])
    count = len(store.task_events(TASKS[0]))
    assert read_summary(directory, TASKS[0], count) is not None  # positive control: the writer left a good one
    if kind == "summary-stale":  # intact, but folding fewer events than the task now has
        older = target.read_bytes()
        with store.locked(lazy=True) as ledger:
            ledger.append(
                [as_draft(("source_observed", TASKS[0], {"candidate": candidate(1)}, "2026-01-04T00:00:00Z"))]
            )
        fresh(store)
        expected = expected_rows(store)
        target.write_bytes(older)
        count += 1
    else:
        damage(store, kind, {})
        if kind == "summary-garbled":  # the last summary was garbled; garble this one too
            data = target.read_bytes().replace(b'"mode":"on"', b'"mode":"of"')
            target.write_bytes(data)
    assert read_summary(directory, TASKS[0], count) is None
    monkeypatch.setattr(ProjectStore, "verify", _no_whole_read)  # recomputed from the task's own lines
    assert listed_rows(store) == expected


def _no_whole_read(self: ProjectStore, *args: object, **kwargs: object) -> Any:
    raise AssertionError("read the whole ledger")


@pytest.mark.parametrize("kind", ["marks-removed", "marks-garbled", "marks-stale"])
def test_claim_marks_that_do_not_vouch_make_the_writer_fold_the_task_afresh(store: ProjectStore, kind: str) -> None:
    directory = index_dir(store)
    assert directory is not None
    marks = directory / f"m-{TASKS[1]}"
    older = marks.read_bytes()
    with store.locked(lazy=True) as ledger:  # a claim that the older marks do not know
        extra = claim(CLAIMS[4], "inferred", [CLAIMS[1]])
        ledger.append([as_draft(("claim_added", TASKS[1], {"claim": extra}, "2026-01-05T00:00:00Z"))])
    if kind == "marks-removed":
        marks.unlink()
    elif kind == "marks-garbled":
        marks.write_bytes(marks.read_bytes().replace(b"inferred", b"explicit"))
    else:
        marks.write_bytes(older)
    with store.locked(lazy=True) as ledger:  # superseding it needs its marks: the writer must not believe these
        later = claim(CLAIMS[2], "evidence", [CLAIMS[4]])
        ledger.append([as_draft(("claim_replaced", TASKS[1], {"claim": later}, "2026-01-06T00:00:00Z"))])
    assert listed_rows(fresh(store)) == expected_rows(store)
    count = len(store.task_events(TASKS[1]))
    summary = read_summary(directory, TASKS[1], count)
    assert summary is not None and summary.superseded == 2  # the writer's own, not the reader's fold


def test_an_index_without_task_summaries_is_rebuilt_by_the_next_writer(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = index_dir(store)
    assert old is not None and (old / SUMMARIES_MARK).exists()
    for path in [old / SUMMARIES_MARK, *old.glob("s-*"), *old.glob("m-*")]:  # as an index built before summaries
        path.unlink()
    with store.locked() as ledger:
        ledger.append([as_draft(("source_observed", TASKS[2], {"candidate": candidate(2)}, "2026-01-07T00:00:00Z"))])
    new = index_dir(fresh(store))
    assert new is not None and new != old and (new / SUMMARIES_MARK).exists()
    assert len(list(new.glob("s-*"))) == len(TASKS)
    expected = expected_rows(store)
    monkeypatch.setattr(ProjectStore, "verify", _no_whole_read)
    monkeypatch.setattr(_task_queries, "indexed_summary", _no_whole_read)  # no task folded afresh either
    assert listed_rows(store) == expected


# ------------------------------------------------------------------------------------------ after a rewrite
def _firsts(data: bytes) -> dict[str, int]:
    """Task id → where its first line starts in the ledger ``data``."""
    firsts: dict[str, int] = {}
    offset = 0
    for line in data.splitlines(keepends=True):
        firsts.setdefault(line[-39:-3].decode(), offset)
        offset += len(line)
    return firsts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.lists(drafts, min_size=1, max_size=6), min_size=1, max_size=4),
    damages=st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4),
    doomed=st.sampled_from(TASKS),
    every=st.integers(1, 3),
    later=st.lists(drafts, max_size=4),
)
def test_after_a_rewrite_the_summaries_equal_a_fresh_fold(
    tmp_path_factory, batches, damages, doomed, every, later
) -> None:
    """A rewrite keeps the stored summary of each task it leaves alone (moved to the task's new first line) and
    folds the others: the listing is a fresh fold's, each task's ``first`` is where its first line now starts, and a
    later append advances the summaries it left."""
    store, _stale = grown(tmp_path_factory.mktemp("data"), batches, damages)
    seen = iter(range(1_000_000))

    def edit(event: Any) -> Any:
        return None if event.task_id == doomed and next(seen) % every == 0 else event

    with fresh(store).locked(lazy=True) as ledger:
        ledger.rewrite_each(edit, touches=[doomed.encode()])
    assert listed_rows(fresh(store)) == expected_rows(store)
    assert store.indexed() is not None  # answered from the rewrite's own index
    listing = fresh(store).tasks()
    assert {summary.task_id: summary.first for summary in listing.tasks} == _firsts(store.ledger_path.read_bytes())
    if later:
        with fresh(store).locked(lazy=True) as ledger:
            ledger.append([as_draft(item) for item in later])
        assert listed_rows(fresh(store)) == expected_rows(store)


def _drop_claim(claim_id: str) -> Any:
    def edit(event: Any) -> Any:
        held = event.payload.get("claim")
        return None if isinstance(held, dict) and held.get("claim_id") == claim_id else event

    return edit


def test_a_rewrite_folds_only_the_tasks_it_changes(store: ProjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks a deletion leaves alone keep their summaries and claim marks (their events are not decoded to fold
    them again), and a later claim in one of them is counted from those marks."""
    old = index_dir(store)
    assert old is not None
    marks = {task: (old / f"m-{task}").read_bytes() for task in TASKS[1:]}
    folded: list[str] = []
    fold = IndexBuilder.fold

    def spy(self: IndexBuilder, events: Any) -> None:
        folded.extend(event.task_id for event in events)
        fold(self, events)

    monkeypatch.setattr(IndexBuilder, "fold", spy)
    with store.locked(lazy=True) as ledger:
        assert ledger.rewrite_each(_drop_claim(CLAIMS[2]), touches=[TASKS[0].encode()])
    assert set(folded) == {TASKS[0]}
    new = index_dir(fresh(store))
    assert new is not None and new != old
    assert {task: (new / f"m-{task}").read_bytes() for task in TASKS[1:]} == marks
    assert listed_rows(store) == expected_rows(store)
    monkeypatch.setattr(_summary, "_refolded", _no_whole_read)  # the carried marks vouch for the task
    with store.locked(lazy=True) as ledger:
        replacing = claim(CLAIMS[4], "inferred", [CLAIMS[1]])
        ledger.append([as_draft(("claim_replaced", TASKS[1], {"claim": replacing}, "2026-01-08T00:00:00Z"))])
    assert listed_rows(fresh(store)) == expected_rows(store)
    assert store.tasks().get(TASKS[1]).superseded == 1


@pytest.mark.parametrize("kind", ["summary-removed", "summary-garbled"])
def test_a_summary_that_does_not_vouch_is_folded_by_the_rewrite(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    directory = index_dir(store)
    assert directory is not None
    target = directory / summary_file(TASKS[1])
    if kind == "summary-removed":
        target.unlink()
    else:
        target.write_bytes(target.read_bytes().replace(b'"mode":"on"', b'"mode":"of"'))
    with store.locked(lazy=True) as ledger:
        assert ledger.rewrite_each(_drop_claim(CLAIMS[2]), touches=[TASKS[0].encode()])
    new = index_dir(fresh(store))
    assert new is not None and read_summary(new, TASKS[1], len(store.task_events(TASKS[1]))) is not None
    monkeypatch.setattr(_task_queries, "indexed_summary", _no_whole_read)  # every summary is in the new index
    assert listed_rows(store) == expected_rows(store)
