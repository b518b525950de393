"""A key's window applied to a writer's accepted stream (``intentloop/service/_share_sync.py``, docs/SYNC.md "Teams:
who may write"): which live items the view keeps, by the ``at`` the writer stamped on each put.
"""

from __future__ import annotations

from typing import Any

from intentloop.service._share_sync import _view_writer, record_time, window_text
from intentloop.store._share import TrustedKey
from intentloop.store._stream import AT_RE, Checkpoint, Record, Stream, make_record, payload_blob

BEFORE = "2026-03-01T00:00:00Z"


def _stream(*puts: str | None, erase: int | None = None) -> tuple[Stream, dict[str, str]]:
    """A verified-looking stream of one put per ``at`` (``claim:c<n>``), and an erase of put ``erase`` at the end."""
    records: list[Record] = []
    bodies: dict[int, dict[str, Any]] = {}
    blobs: dict[str, str] = {}
    for n, at in enumerate(puts, start=1):
        body = {"type": "claim", "claim": {"claim_id": f"c{n}"}}
        digest, _blob = payload_blob(body)
        blobs[digest] = f"blob{n}"
        records.append(
            make_record(n, records[-1].hash if records else None, "put", item=f"claim:c{n}", digest=digest, at=at)
        )
        bodies[n] = body
    if erase is not None:
        records.append(make_record(len(records) + 1, records[-1].hash, "erase", target=erase))
    point = Checkpoint(
        format=1,
        shared="s",
        writer="w",
        public_key="",
        principal="x@y",
        seq=len(records),
        head=records[-1].hash,
        signature="",
    )
    return Stream(checkpoint=point, records=records, bodies=bodies, salts={}), blobs


def _shown(
    stream: Stream, blobs: dict[str, str], valid_after: str | None = None, valid_before: str | None = None
) -> tuple[list[str], int]:
    key = TrustedKey(key_id="w", public_key="", principal="bob@x", valid_after=valid_after, valid_before=valid_before)
    writer = _view_writer(stream, "commit", blobs, key)
    assert writer.principal == "bob@x" and writer.window == window_text(key)
    return [item["item"] for item in writer.items], writer.ignored


def test_without_a_window_every_live_item_counts_dated_or_not() -> None:
    stream, blobs = _stream(None, "2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z")
    assert _shown(stream, blobs) == (["claim:c1", "claim:c2", "claim:c3"], 0)


def test_valid_before_keeps_earlier_puts_and_ignores_later_and_undated_ones() -> None:
    stream, blobs = _stream("2026-01-01T00:00:00Z", BEFORE, "2026-03-01T00:00:01Z")
    assert _shown(stream, blobs, valid_before=BEFORE) == (["claim:c1", "claim:c2"], 1)  # the bound itself counts
    undated, blobs = _stream(None, "2026-01-01T00:00:00Z")
    assert _shown(undated, blobs, valid_before=BEFORE) == ([], 2)  # an undated put opens the cut


def test_a_put_dated_back_after_a_later_one_does_not_slip_in_again() -> None:
    stream, blobs = _stream("2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026-02-01T00:00:00Z")
    assert _shown(stream, blobs, valid_before=BEFORE) == (["claim:c1"], 2)
    in_order, blobs = _stream("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z")
    assert _shown(in_order, blobs, valid_before=BEFORE) == (["claim:c1", "claim:c2"], 1)  # the control


def test_valid_after_ignores_each_put_dated_before_it_or_undated() -> None:
    stream, blobs = _stream("2026-01-01T00:00:00Z", None, BEFORE, "2026-02-01T00:00:00Z")
    assert _shown(stream, blobs, valid_after=BEFORE) == (["claim:c3"], 3)


def test_an_erase_applies_whatever_its_place_in_the_window() -> None:
    stream, blobs = _stream("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", erase=1)
    assert _shown(stream, blobs, valid_before=BEFORE) == (["claim:c2"], 0)


def test_the_writer_stamps_utc_to_the_second_in_the_form_readers_check() -> None:
    assert AT_RE.match(record_time())
