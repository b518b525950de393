"""Per-type payload structs: one row per event type, a whole decode for what this version writes, and a reading field
by field for anything else that keeps every field that does decode."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings, strategies as st

from intentloop.model.claims import Claim
from intentloop.model.events import EVENT_TYPES
from intentloop.model.payloads import (
    PAYLOAD_TYPES,
    ClaimInvalidated,
    ClaimRecorded,
    GraphImported,
    ModeSet,
    TaskStarted,
    decode_payload,
)

CLAIM: dict[str, Any] = {
    "claim_id": "c1",
    "statement": "Keep JSON.",
    "role": "user",
    "epistemic_status": "explicit",
    "source_ref": {"kind": "user_event"},
    "scope": "task",
    "valid_from": "2026-01-01T00:00:00Z",
    "last_confirmed": None,
    "supersedes": [],
    "facets": ["outcome"],
    "related_claim_ids": [],
}
CANDIDATE: dict[str, Any] = {
    "candidate_id": "k1",
    "candidate_type": "prompt_update",
    "source_ref": {"kind": "agent_turn"},
    "created_at": "2026-01-01T00:00:00Z",
}


def test_one_row_per_event_type() -> None:
    assert set(PAYLOAD_TYPES) == set(EVENT_TYPES)


def test_a_type_this_version_does_not_know_has_no_payload() -> None:
    decoded = decode_payload("claim_frobnicated", {"claim": CLAIM})
    assert decoded.payload is None and decoded.malformed == 0


def test_well_formed_payloads_decode_whole_and_ignore_unknown_keys() -> None:
    decoded = decode_payload("task_started", {"mode": "private", "label": "L", "initial_claims": [CLAIM], "later": 1})
    assert decoded.malformed == 0
    assert decoded.payload == TaskStarted(mode="private", label="L", initial_claims=[msgspec.convert(CLAIM, Claim)])


def test_a_field_of_the_wrong_type_reads_as_none_and_the_others_count() -> None:
    decoded = decode_payload(
        "task_started", {"mode": "sideways", "label": 7, "host_session_hash": "s", "initial_claims": [CLAIM]}
    )
    assert isinstance(decoded.payload, TaskStarted)
    assert (decoded.payload.mode, decoded.payload.label, decoded.payload.host_session_hash) == (None, None, "s")
    assert [c.claim_id for c in decoded.payload.initial_claims] == ["c1"]
    # a field whose type does not admit None falls back to its default
    flag = decode_payload("task_started", {"recovered_from_private": 1, "label": "L"})
    assert isinstance(flag.payload, TaskStarted) and flag.payload.recovered_from_private is False
    assert flag.payload.label == "L"


def test_mode_set_tells_an_absent_session_from_a_bad_one() -> None:
    absent = decode_payload("mode_set", {"mode": "off"}).payload
    bad = decode_payload("mode_set", {"mode": "off", "host_session_hash": 3}).payload
    cleared = decode_payload("mode_set", {"mode": "off", "host_session_hash": None}).payload
    assert isinstance(absent, ModeSet) and absent.host_session_hash is msgspec.UNSET
    assert isinstance(bad, ModeSet) and bad.host_session_hash is None and bad.mode == "off"
    assert isinstance(cleared, ModeSet) and cleared.host_session_hash is None


def test_records_without_their_id_are_skipped_silently_and_broken_ones_are_counted() -> None:
    no_id = {k: v for k, v in CLAIM.items() if k != "claim_id"}
    broken = dict(CLAIM, claim_id="c2", facets="not a list")
    decoded = decode_payload(
        "graph_imported", {"claims": [CLAIM, no_id, broken, "text"], "invalidated_claim_ids": ["c9", 4]}
    )
    assert isinstance(decoded.payload, GraphImported)
    assert [c.claim_id for c in decoded.payload.claims] == ["c1"]
    assert decoded.payload.invalidated_claim_ids == ["c9"]
    assert decoded.malformed == 1
    single = decode_payload("claim_added", {"claim": broken})
    assert single.payload == ClaimRecorded(claim=None) and single.malformed == 1
    silent = decode_payload("claim_added", {"claim": no_id})
    assert silent.payload == ClaimRecorded(claim=None) and silent.malformed == 0
    # positive control: the same claim whole is read
    whole = decode_payload("claim_replaced", {"claim": CLAIM})
    assert isinstance(whole.payload, ClaimRecorded) and whole.payload.claim is not None
    assert whole.payload.claim.claim_id == "c1"


def test_an_invalidation_keeps_its_claim_id_when_its_source_is_broken() -> None:
    decoded = decode_payload("claim_invalidated", {"claim_id": "c1", "reason": "r", "source_ref": {"event_id": 1}})
    assert decoded.payload == ClaimInvalidated(claim_id="c1", reason="r", source_ref=None)


_junk = st.one_of(st.none(), st.integers(), st.text(max_size=4), st.booleans(), st.lists(st.integers(), max_size=2))


_value = st.one_of(_junk, st.just(CLAIM), st.just(CANDIDATE), st.lists(st.sampled_from([CLAIM, CANDIDATE, "c1"])))


@settings(max_examples=500, deadline=None)
@given(
    event_type=st.sampled_from(sorted(PAYLOAD_TYPES)),
    data=st.data(),
)
def test_every_field_that_decodes_on_its_own_keeps_its_value_whatever_the_others_hold(
    event_type: str, data: st.DataObject
) -> None:
    cls = PAYLOAD_TYPES[event_type]
    names = st.sampled_from([*cls.__struct_fields__, "later"])
    payload: dict[str, Any] = data.draw(st.dictionaries(names, _value, min_size=1))
    decoded = decode_payload(event_type, payload)
    assert isinstance(decoded.payload, cls)
    for name, value in payload.items():
        if name not in cls.__struct_fields__:
            continue
        try:
            alone = msgspec.convert({name: value}, cls)
        except msgspec.ValidationError:
            continue
        assert getattr(decoded.payload, name) == getattr(alone, name), name
