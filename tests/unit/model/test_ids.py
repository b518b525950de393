"""Identifiers and timestamps."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from intentloop.errors import IntentLoopError
from intentloop.model import (
    deterministic_task_id,
    format_time,
    is_uuid,
    parse_time,
    project_id_for,
    require_uuid,
    session_hash,
)


def test_project_id_and_session_hash_follow_the_contract() -> None:
    assert project_id_for("/work/p") == hashlib.sha256(b"intent-loop-project-v1\0/work/p").hexdigest()
    assert session_hash("s-1") == hashlib.sha256(b"intent-loop-session-v1\0s-1").hexdigest()


def test_deterministic_task_id_is_a_stable_uuid_per_project_and_request() -> None:
    a = deterministic_task_id("a" * 64, "req-1")
    assert a == deterministic_task_id("a" * 64, "req-1")
    assert is_uuid(a) and a[14] == "5" and a[19] in "89ab"
    assert a != deterministic_task_id("a" * 64, "req-2")
    assert a != deterministic_task_id("b" * 64, "req-1")


def test_require_uuid_rejects_non_uuids_with_invalid_id() -> None:
    good = "123e4567-e89b-42d3-a456-426614174000"
    assert require_uuid(good.upper()) == good
    with pytest.raises(IntentLoopError) as err:
        require_uuid("not-a-uuid", "task_id")
    assert err.value.code == "INVALID_ID"


def test_times_are_rfc3339_utc_with_milliseconds() -> None:
    moment = datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=UTC)
    assert format_time(moment) == "2026-11-30T01:02:03.456Z"
    assert parse_time("2026-11-30T01:02:03.456Z") == moment.replace(microsecond=456000)
    for bad in ("2026-11-30T01:02:03+00:00", "2026-11-30 01:02:03Z", "yesterday"):
        with pytest.raises(ValueError):
            parse_time(bad)


@pytest.mark.parametrize(
    ("pattern", "good"),
    [
        ("UUID_RE", "123e4567-e89b-42d3-a456-426614174000"),
        ("HEX64_RE", "a" * 64),
        ("OPAQUE_ID_RE", "turn-1:abc@x"),
        ("RFC3339_UTC_RE", "2026-11-30T01:02:03.456Z"),
    ],
)
def test_id_patterns_refuse_a_trailing_newline(pattern: str, good: str) -> None:
    from intentloop.model import ids

    regex = getattr(ids, pattern)
    assert regex.match(good)
    assert not regex.match(good + "\n")


def test_the_uuid_shape_is_written_once() -> None:
    """Every UUID rule in the package is built from ``UUID_TEXT`` (the published tool schema pattern aside, which is
    the original's text): a second hand-written copy is where one of them drifts."""
    import re
    from pathlib import Path

    import intentloop

    root = Path(intentloop.__file__).parent
    copies = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if re.search(r"\{8\}-", path.read_text(encoding="utf-8"))
    )
    assert copies == ["model/ids.py", "service/args.py"]


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("123e4567-e89b-42d3-a456-426614174000", True),
        ("123E4567-E89B-42D3-A456-426614174000", True),
        ("123e4567-e89b-02d3-a456-426614174000", False),  # version 0
        ("123e4567-e89b-92d3-a456-426614174000", False),  # version 9
        ("123e4567-e89b-42d3-c456-426614174000", False),  # variant c
        ("123e4567e89b42d3a456426614174000", False),
    ],
)
def test_an_id_given_is_the_shape_with_a_version_and_variant(value: str, accepted: bool) -> None:
    from intentloop.model.ids import is_uuid

    assert is_uuid(value) is accepted
