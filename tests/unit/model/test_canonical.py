"""Canonical JSON is byte-identical with docs/EVENTS.md ("The v1 line") and with the original's JavaScript output."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from intentloop.model import canonical_bytes, request_fingerprint, sha256_hex

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_matches_json_dumps_sorted_compact(value: object) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert canonical_bytes(value) == expected


def test_canonical_sorts_nested_keys_and_keeps_non_ascii() -> None:
    assert (
        canonical_bytes({"b": {"z": 1, "a": "é"}, "a": [True, None]})
        == '{"a":[true,null],"b":{"a":"é","z":1}}'.encode()
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1"), (0.0, "0"), (0.62, "0.62"), (1e-7, "1e-7"), (0.30000000000000004, "0.30000000000000004")],
)
def test_floats_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert canonical_bytes({"confidence": value}) == f'{{"confidence":{text}}}'.encode()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="NaN and Infinity"):
        canonical_bytes({"confidence": bad})
    assert canonical_bytes({"confidence": 0.5}) == b'{"confidence":0.5}'  # positive control


def test_request_fingerprint_hashes_operation_and_normalized_input() -> None:
    fp = request_fingerprint("set_mode", {"task_id": "t", "mode": "on"})
    assert fp == sha256_hex(b'{"input":{"mode":"on","task_id":"t"},"operation":"set_mode"}')
    assert fp != request_fingerprint("set_mode", {"task_id": "t", "mode": "off"})
