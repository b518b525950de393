"""Per-writer quotas: how much of one writer's accepted stream a reader admits into its combined view.

A writer over a quota is never dropped whole: a sync admits the longest prefix of its new records that fits
(:func:`admit`), remembers how far it got (``PeerState.admitted``) and reports the rest; later syncs admit more. The
limits come from one place, :data:`intentloop.store._share.QUOTAS`. Why a prefix and not a sample: records only make
sense in order (a put, then the erase or retract that names it), and a prefix is what the writer's own signed head
vouches for up to that point, so admitting by prefix never shows a state the writer did not publish. Erases apply
at once wherever they are (they only remove, and the payloads they name are gone from the tree); a put whose
payload is too large is admitted as a record, so it never blocks the stream, and its payload is never read or shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from intentloop.store._share import QUOTAS, Quotas
from intentloop.store._stream import Record

#: at most this many sequence numbers of refused payloads are listed in a report entry (the count is exact)
_LISTED = 20


class Admission(msgspec.Struct, frozen=True, kw_only=True):
    """What one sync admits of a writer: records ``1..upto``; ``quota`` the report entries of what it refused (each
    ``{limit, max, refused, from_seq}``); ``oversize`` the admitted puts whose payload is over the size limit."""

    upto: int
    quota: list[dict[str, Any]]
    oversize: list[int]


def admit(
    records: Sequence[Record],
    erased: set[int],
    start: int,
    sizes: Mapping[int, int],
    quotas: Quotas = QUOTAS,
) -> Admission:
    """The longest prefix of ``records`` after the ``start`` already admitted that fits ``quotas``.

    ``erased`` names every put the whole stream erases; ``sizes`` the payload size in bytes of each put after
    ``start`` whose payload the tree holds (by sequence number; a put missing here counts as size 0). At most
    ``records_per_sync`` records are admitted; a put of a new item stops the prefix when the writer already has
    ``live_items`` live items in it; a put whose payload is above ``payload_bytes`` is admitted but listed in
    ``oversize``, never to be shown.
    """
    start = max(0, min(start, len(records)))
    live = {r.item for r in records[:start] if r.kind == "put" and r.seq not in erased}
    end = min(len(records), start + quotas.records_per_sync)
    upto = start
    oversize: list[int] = []
    quota: list[dict[str, Any]] = []
    for record in records[start:end]:
        if record.kind == "put" and record.seq not in erased:
            if record.item not in live:
                if len(live) >= quotas.live_items:
                    quota.append(_entry("live_items", quotas.live_items, len(records) - upto, record.seq))
                    break
                live.add(record.item)
            if sizes.get(record.seq, 0) > quotas.payload_bytes:
                oversize.append(record.seq)
        upto = record.seq
    else:
        if end < len(records):
            quota.append(_entry("records_per_sync", quotas.records_per_sync, len(records) - end, end + 1))
    if oversize:
        big = _entry("payload_bytes", quotas.payload_bytes, len(oversize), oversize[0])
        quota.insert(0, big | {"seqs": oversize[:_LISTED]})
    return Admission(upto=upto, quota=quota, oversize=oversize)


def _entry(limit: str, maximum: int, refused: int, from_seq: int) -> dict[str, Any]:
    return {"limit": limit, "max": maximum, "refused": refused, "from_seq": from_seq}


def shown_puts(records: Sequence[Record], erased: set[int], upto: int) -> dict[str, int]:
    """item → the sequence number of its last put among records ``1..upto`` that no erase of the stream names (as
    :meth:`intentloop.store._stream.Stream.live`, over a prefix)."""
    found: dict[str, int] = {}
    for record in records[:upto]:
        if record.kind == "put" and record.item is not None and record.seq not in erased:
            found[record.item] = record.seq
    return found


def retract_records(records: Sequence[Record], upto: int) -> list[dict[str, Any]]:
    """The retract records among ``1..upto``: ``{seq, item, target_writer}`` each."""
    return [
        {"seq": r.seq, "item": r.item, "target_writer": r.target_writer} for r in records[:upto] if r.kind == "retract"
    ]


def limits(quotas: Quotas = QUOTAS) -> dict[str, int]:
    return msgspec.to_builtins(quotas)  # type: ignore[no-any-return]


def usage(data_root: Path, raw: str | None) -> dict[str, Any]:
    """``intentloop share quotas``: the limits and, for each writer this installation accepted, its accepted
    sequence number, the records admitted into the view, those still waiting, and the items it shows. Reads the
    files the last sync wrote; no git, no network."""
    from intentloop.service._share import require_shared
    from intentloop.service._share_sync import load_peers
    from intentloop.service._share_view import read_view

    _located, identity = require_shared(data_root, raw)
    peers = load_peers(data_root, identity.shared_id)
    view = read_view(data_root, identity.shared_id, items=False)
    shown = {w.key_id: w for w in view.writers} if view is not None else {}
    writers = []
    for writer, state in sorted(peers.items()):
        held = shown.get(writer)
        writers.append(
            {
                "writer": writer,
                "principal": held.principal if held is not None else None,
                "seq": state.seq,
                "admitted": state.shown(),
                "waiting": state.seq - state.shown(),
                "shown_items": held.count if held is not None else 0,
                "frozen": state.frozen is not None,
            }
        )
    return {"shared_id": identity.shared_id, "limits": limits(), "writers": writers}


__all__ = ["Admission", "admit", "limits", "retract_records", "shown_puts", "usage"]
