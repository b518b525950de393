"""What a rebuild holds per claim until it writes the task summaries: the claim marks. A claim that supersedes nothing
shares its marks tuple (and status string) with every other of its status; beyond ``SPILL_CLAIMS`` a whole-ledger
build spills them into the index being built and reads them back one task at a time, with the same files written."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from pathlib import Path

import msgspec
import pytest

from intentloop.model import EventDraft, event_line, seal
from intentloop.model.events import Event
from intentloop.store import _summary
from intentloop.store._summary import SPILL_PREFIX, SummaryBuilder, TaskSummary

TASK = "00000000-0000-4000-8000-000000000001"
_decoder = msgspec.json.Decoder(Event)


def _ledger(count: int, *, supersede: bool = False, ids: int | None = None) -> list[bytes]:
    """``count`` claim lines of one task, in chunks of 500 lines (``supersede``: each claim superseding the one before
    it; ``ids``: only that many claim ids, recorded again and again)."""
    lines: list[bytes] = []
    prev: str | None = None
    previous_id: str | None = None
    names = [str(uuid.uuid4()) for _ in range(ids or count)]
    for n in range(count):
        claim_id = names[n % len(names)]
        claim = {
            "claim_id": claim_id,
            "statement": f"statement {n}",
            "role": "user",
            "epistemic_status": ("explicit", "inferred", "evidence")[n % 3],
            "source_ref": {"kind": "user_event"},
            "scope": "task",
            "valid_from": "2026-01-01T00:00:00Z",
            "last_confirmed": None,
            "supersedes": [previous_id] if supersede and previous_id else [],
            "facets": [],
            "related_claim_ids": [],
        }
        draft = EventDraft(
            event_type="claim_added", task_id=TASK, actor="user", request_id=f"r{n}", payload={"claim": claim}
        )
        event = seal(draft, project_id="a" * 64, prev_hash=prev)
        lines.append(event_line(event))
        prev, previous_id = event.event_hash, claim_id
    return [b"".join(lines[i : i + 500]) for i in range(0, count, 500)]


def _fold(chunks: list[bytes], spill: Path | None = None) -> tuple[TaskSummary, float]:
    """The task's summary folded as a rebuild folds it (each chunk decoded, folded and let go), and the bytes the
    builder holds afterwards per claim."""
    builder = SummaryBuilder(spill)
    gc.collect()
    tracemalloc.start()
    try:
        for chunk in chunks:
            builder.add(_decoder.decode_lines(chunk))
        gc.collect()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    summary = builder.summaries()[TASK]
    return summary, held / summary.claims


def test_plain_claims_cost_the_builder_little_more_than_their_id() -> None:
    # A claim id string is ~85 bytes and its dict slot ~40; a tuple and a status string of its own added ~113 more.
    summary, per_claim = _fold(_ledger(4000))
    assert (summary.claims, summary.active) == (4000, 4000)
    assert per_claim < 160


def test_claims_that_supersede_keep_their_own_marks() -> None:
    # control: a claim that supersedes another keeps a tuple of its own (its supersedes differ), so it costs more
    summary, per_claim = _fold(_ledger(2000, supersede=True))
    assert (summary.claims, summary.active, summary.superseded) == (2000, 1, 1999)
    assert per_claim > 160


def test_a_build_that_spills_holds_few_marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_summary, "SPILL_CLAIMS", 500)
    summary, per_claim = _fold(_ledger(4000), spill=tmp_path)
    assert summary.claims == 4000 and per_claim < 40  # at most ~500 marks of 4,000 held
    _, held_all = _fold(_ledger(4000))
    assert held_all > 100  # control: without a spill directory every mark is held


@pytest.mark.parametrize("ids", [None, 700])  # every claim new / claims recorded again across spills
@pytest.mark.parametrize("supersede", [False, True])
def test_spilled_marks_write_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, supersede: bool, ids: int | None
) -> None:
    chunks = _ledger(3000, supersede=supersede, ids=ids)
    written: dict[str, dict[str, bytes]] = {}
    for label, limit in (("held", 10**9), ("spilled", 450)):
        monkeypatch.setattr(_summary, "SPILL_CLAIMS", limit)
        directory = tmp_path / label
        directory.mkdir()
        builder = SummaryBuilder(spill=directory)
        for chunk in chunks:
            builder.add(_decoder.decode_lines(chunk))
        spilled = [p.name for p in directory.iterdir() if p.name.startswith(SPILL_PREFIX)]
        assert bool(spilled) is (label == "spilled")
        builder.write(directory, {TASK: 0})
        written[label] = {p.name: p.read_bytes() for p in directory.iterdir()}
    assert written["spilled"] == written["held"]  # no spill file left, every summary and marks byte-identical
    assert not any(name.startswith(SPILL_PREFIX) for name in written["spilled"])


def test_marks_that_cannot_be_spilled_give_the_index_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_summary, "SPILL_CLAIMS", 100)
    builder = SummaryBuilder(spill=tmp_path / "gone")  # the index directory vanished
    for chunk in _ledger(1000):
        builder.add(_decoder.decode_lines(chunk))
    (tmp_path / "out").mkdir()
    with pytest.raises(OSError, match="spilled"):
        builder.write(tmp_path / "out", {TASK: 0})
    assert not (tmp_path / "out" / _summary.SUMMARIES_MARK).exists()


def test_a_spill_file_that_does_not_read_back_gives_the_index_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_summary, "SPILL_CLAIMS", 100)
    builder = SummaryBuilder(spill=tmp_path)
    for chunk in _ledger(1000):
        builder.add(_decoder.decode_lines(chunk))
    spill = tmp_path / f"{SPILL_PREFIX}{TASK}"
    spill.write_bytes(spill.read_bytes()[:-40] + b"\n")  # cut: a torn spill
    with pytest.raises(OSError, match="read back"):
        builder.write(tmp_path, {TASK: 0})
    assert not (tmp_path / _summary.SUMMARIES_MARK).exists()
