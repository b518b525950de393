"""What a rebuild holds per claim until it writes the task summaries: the claim marks of every claim of the ledger.
A claim that supersedes nothing shares its marks tuple (and status string) with every other of its status."""

from __future__ import annotations

import gc
import tracemalloc
import uuid

import msgspec

from intentloop.model import EventDraft, event_line, seal
from intentloop.model.events import Event
from intentloop.store._summary import SummaryBuilder, TaskSummary

TASK = "00000000-0000-4000-8000-000000000001"
_decoder = msgspec.json.Decoder(Event)


def _ledger(count: int, *, supersede: bool = False) -> list[bytes]:
    """``count`` claim lines of one task, in chunks of 500 lines (each claim superseding the one before it)."""
    lines: list[bytes] = []
    prev: str | None = None
    previous_id: str | None = None
    for n in range(count):
        claim_id = str(uuid.uuid4())
        claim = {
            "claim_id": claim_id,
            "statement": f"statement {n}",
            "role": "user",
            "epistemic_status": ("explicit", "inferred")[n % 2],
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


def _fold(chunks: list[bytes]) -> tuple[TaskSummary, float]:
    """The task's summary folded as a rebuild folds it (each chunk decoded, folded and let go), and the bytes the
    builder holds afterwards per claim."""
    builder = SummaryBuilder()
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
