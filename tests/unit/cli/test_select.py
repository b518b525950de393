"""Naming things on the command line: unique id prefixes in either case, and singular/plural in messages."""

from __future__ import annotations

import pytest

from intentloop.cli._select import plural, unique_match
from intentloop.errors import IntentLoopError

IDS = ["1d11c039-aaaa", "1d2f0000-bbbb", "ff000000-cccc"]


def test_plural_agrees_with_the_count() -> None:
    assert [plural(n, "event") for n in (0, 1, 2)] == ["0 events", "1 event", "2 events"]
    assert plural(1, "private control") == "1 private control" and plural(3, "entry", "entries") == "3 entries"


@pytest.mark.parametrize("prefix", ["1d11", "1D11C", " 1d11c039-aaaa ", "ff"])
def test_a_unique_prefix_in_either_case_names_one_id(prefix: str) -> None:
    assert unique_match("task", prefix, IDS, not_found="TASK_NOT_FOUND", invalid="INVALID_ID") in IDS


@pytest.mark.parametrize(
    ("prefix", "code"),
    [
        ("1d", "AMBIGUOUS_ID"),
        ("1d3", "TASK_NOT_FOUND"),
        ("", "INVALID_ID"),
        ("1d;rm", "INVALID_ID"),
        ("g", "INVALID_ID"),
    ],
)
def test_ambiguous_missing_and_malformed_prefixes_have_their_codes(prefix: str, code: str) -> None:
    with pytest.raises(IntentLoopError) as caught:
        unique_match("task", prefix, IDS, not_found="TASK_NOT_FOUND", invalid="INVALID_ID")
    assert caught.value.code == code
    if code == "AMBIGUOUS_ID":
        assert "1d11c039-aaaa" in caught.value.message and "1d2f0000-bbbb" in caught.value.message
