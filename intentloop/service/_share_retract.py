"""Retracts: a writer's request that an item another stream holds stop counting, and who a reader honours it from.

An erase names a sequence number of its writer's own stream, so no writer can erase another's record. A retract is
the one way to take out an item of another stream: ``intentloop share retract CLAIM`` appends to this installation's
own stream a content-free record ``{kind: "retract", item: "claim:<id>", target_writer: <key id of the stream that
holds it>}``, pushed by the next sync. Every reader decides for itself (:func:`judge_retracts`), with its own trust:
a retract counts only when the retracting key's principal is the principal of the stream holding the item (a person
withdrawing their own words from another of their machines) or the retracting key is an admin; any other retract is
reported as ``retract_refused`` (who tried what) and changes nothing. So a member who is not an admin cannot erase
another member's words, and every attempt is visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from intentloop.errors import IntentLoopError
from intentloop.service._share_view import ViewWriter
from intentloop.store._share import TrustedKey

_CLAIM = "claim:"


def judge_retracts(
    writers: list[ViewWriter], trusted: dict[str, TrustedKey], me: str | None, principal: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(retracted, refused)`` of the retract records of ``writers`` (the view's, each with its own retracts and,
    for ``me``, this installation's own): an item is retracted when the retracting key is trusted and is an admin, or
    its principal is the principal of the writer holding the item (``principal`` for this installation's own
    stream); every other retract is a ``retract_refused`` problem naming the retracting writer, the item and the
    writer that holds it."""
    retracted: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for writer in sorted(writers, key=lambda w: w.key_id):
        by = trusted.get(writer.key_id)
        by_principal = by.principal if by is not None else principal if writer.key_id == me else None
        admin = by is not None and by.admin
        for record in writer.retracts:
            target = str(record["target_writer"])
            holder = trusted[target].principal if target in trusted else principal if target == me else None
            if by_principal is not None and (admin or (holder is not None and holder == by_principal)):
                retracted.append(
                    {"writer": target, "item": record["item"], "by": writer.key_id, "principal": by_principal}
                )
                continue
            refused.append(
                {
                    "writer": writer.key_id,
                    "principal": by_principal,
                    "status": "retract_refused",
                    "problem": f"{by_principal} may not retract an item of {holder or 'an unknown writer'}: "
                    "only the item's own principal or an admin may",
                    "problem_seq": record["seq"],
                    "item": record["item"],
                    "target_writer": target,
                    "target_principal": holder,
                }
            )
    return retracted, refused


def retract_targets(data_root: Path, raw: str | None) -> dict[str, list[dict[str, Any]]]:
    """claim id → the streams of the combined view that hold it (``{writer, principal, statement}`` each), for the
    claims a retract may name: the peer claims the last sync accepted and no retract took out yet.

    Raises:
        ConflictError: ``SHARE_NOT_INITIALIZED`` (the project is not shared).
    """
    from intentloop.service._share import require_shared
    from intentloop.service._share_view import read_view

    _located, identity = require_shared(data_root, raw)
    view = read_view(data_root, identity.shared_id)
    if view is None:
        return {}
    gone = view.retracted_items()
    found: dict[str, list[dict[str, Any]]] = {}
    for writer in view.writers:
        for entry in writer.items:
            item, body = str(entry["item"]), entry["body"]
            if not item.startswith(_CLAIM) or (writer.key_id, item) in gone or not isinstance(body.get("claim"), dict):
                continue
            found.setdefault(item.removeprefix(_CLAIM), []).append(
                {"writer": writer.key_id, "principal": writer.principal, "statement": body["claim"].get("statement")}
            )
    return found


def retract(data_root: Path, raw: str | None, claim_id: str) -> dict[str, Any]:
    """Append to this installation's own stream one retract record per stream of the combined view holding
    ``claim_id`` (none for a stream this one already retracted it from); the next ``intentloop sync`` pushes them.

    Raises:
        IntentLoopError: ``CLAIM_NOT_FOUND`` (no peer claim of the combined view has this id; your own claims are
            erased with ``intentloop forget claim``).
        ConflictError: ``SHARE_NOT_INITIALIZED``.
    """
    from intentloop.service._share import principal_of, require_shared
    from intentloop.service._share_sync import _own_base as own_base, record_time, sync_lock
    from intentloop.store._signing import load_or_create_signing_key
    from intentloop.store._stream import make_record, records_bytes, sign_checkpoint
    from intentloop.store._stream_git import OWN, Mirror

    located, identity = require_shared(data_root, raw)
    holders = retract_targets(data_root, raw).get(claim_id)
    if not holders:
        raise IntentLoopError(
            f"no peer claim {claim_id} in the combined view (`intentloop sync` first; your own claims are erased "
            "with `intentloop forget claim`)",
            code="CLAIM_NOT_FOUND",
        )
    shared, item = identity.shared_id, f"{_CLAIM}{claim_id}"
    with sync_lock(data_root):
        key = load_or_create_signing_key(data_root)
        mirror = Mirror(data_root)
        mirror.ensure()
        base, base_commit = own_base(mirror, shared, key)
        records = list(base.records) if base is not None else []
        done = {r.target_writer for r in records if r.kind == "retract" and r.item == item}
        added = []
        for holder in holders:
            if holder["writer"] in done:
                continue
            prev = records[-1].hash if records else None
            fields = {"item": item, "target_writer": holder["writer"], "at": record_time()}
            records.append(make_record(len(records) + 1, prev, "retract", **fields))
            added.append(holder["writer"])
        commit = base_commit
        if added:
            checkpoint = sign_checkpoint(
                key.sign,
                shared=shared,
                writer=key.key_id,
                public_hex=key.public_hex,
                principal=principal_of(data_root, located.root),
                records=records,
            )
            kept = mirror.payload_entries(base_commit) if base_commit else {}
            payloads = dict.fromkeys(kept, b"")  # every payload stays, as the blobs already in the mirror
            commit = mirror.write_stream(msgspec.json.encode(checkpoint), records_bytes(records), payloads, kept)
            mirror.set_ref(f"{OWN}/{shared}/{key.key_id}", commit, base_commit)
    return {
        "shared_id": shared,
        "claim_id": claim_id,
        "item": item,
        "targets": [{"writer": h["writer"], "principal": h["principal"]} for h in holders],
        "added": len(added),
        "seq": len(records),
        "pushed": False,
        "next": "intentloop sync",
    }


__all__ = ["judge_retracts", "retract", "retract_targets"]
