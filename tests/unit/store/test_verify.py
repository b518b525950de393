"""The pure verifier: every rejection docs/EVENTS.md lists names its code and line, next to an accepted control."""

from __future__ import annotations

import hashlib
import json
import uuid
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from intentloop.store import verify_ledger_bytes

from fixtures.ledgers import ledger_kit as ledger_kit_module

ROOT = "/work/project"


@pytest.fixture
def pid(ledger_kit: ModuleType) -> str:
    return ledger_kit.project_id_for(ROOT)


@pytest.fixture
def ledger(ledger_kit: ModuleType, pid: str) -> tuple[bytes, list[dict[str, Any]]]:
    data, events = ledger_kit.build_ledger(pid, 5)
    return data, events


def relink(kit, events):
    """Re-chain and re-hash events after editing them (what a forger with the format description can do)."""
    out, prev = [], None
    for event in events:
        body = {k: v for k, v in event.items() if k != "event_hash"}
        body["prev_hash"] = prev
        body["event_hash"] = hashlib.sha256(kit.canonical(body)).hexdigest()
        out.append(body)
        prev = body["event_hash"]
    return b"".join(kit.line(e) for e in out)


def test_intact_ledger_verifies(ledger, pid):
    data, events = ledger
    result = verify_ledger_bytes(data, project_id=pid)
    assert result.ok and result.error is None and result.torn_tail is None
    assert result.line_count == 5 and result.byte_length == len(data)
    assert result.head_hash == events[-1]["event_hash"]
    assert [e.event_id for e in result.events] == [e["event_id"] for e in events]


def test_empty_ledger_verifies(pid):
    result = verify_ledger_bytes(b"", project_id=pid)
    assert result.ok and result.line_count == 0 and result.head_hash is None


def test_tampered_middle_line_is_corrupt_at_its_line(ledger, pid):
    data, _ = ledger
    lines = data.split(b"\n")
    lines[2] = lines[2].replace(b"#2", b"#9")
    result = verify_ledger_bytes(b"\n".join(lines), project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER"
    assert result.error.line == 3 and "event_hash" in result.error.reason
    assert result.line_count == 2 and result.byte_length == len(lines[0]) + len(lines[1]) + 2


def test_broken_prev_hash_link_is_corrupt(ledger_kit, ledger, pid):
    _, events = ledger
    events[3]["prev_hash"] = "0" * 64
    events[3]["event_hash"] = hashlib.sha256(
        ledger_kit.canonical({k: v for k, v in events[3].items() if k != "event_hash"})
    ).hexdigest()
    data = b"".join(ledger_kit.line(e) for e in events)
    result = verify_ledger_bytes(data, project_id=pid)
    assert result.error is not None and result.error.line == 4 and "prev_hash" in result.error.reason


def test_wrong_project_id_is_corrupt(ledger_kit, ledger, pid):
    _, events = ledger
    events[1]["project_id"] = ledger_kit.project_id_for("/elsewhere")
    result = verify_ledger_bytes(relink(ledger_kit, events), project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER"
    assert result.error.line == 2 and "project_id" in result.error.reason
    assert verify_ledger_bytes(relink(ledger_kit, events[:1]), project_id=pid).ok  # control


@pytest.mark.parametrize(
    ("version", "code"),
    [(2, "FUTURE_SCHEMA"), (17, "FUTURE_SCHEMA"), (0, "MIGRATION_UNAVAILABLE"), (-1, "MIGRATION_UNAVAILABLE"),
     ("1", "MIGRATION_UNAVAILABLE"), (None, "MIGRATION_UNAVAILABLE"), (True, "MIGRATION_UNAVAILABLE")],
)  # fmt: skip
def test_schema_versions_other_than_1_are_refused(ledger_kit, ledger, pid, version, code):
    _, events = ledger
    events[2]["schema_version"] = version
    result = verify_ledger_bytes(relink(ledger_kit, events), project_id=pid)
    assert result.error is not None and result.error.code == code and result.error.line == 3
    assert result.line_count == 2


def test_missing_schema_version_is_migration_unavailable(ledger_kit, ledger, pid):
    _, events = ledger
    del events[0]["schema_version"]
    result = verify_ledger_bytes(relink(ledger_kit, events), project_id=pid)
    assert result.error is not None and result.error.code == "MIGRATION_UNAVAILABLE" and result.error.line == 1


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda obj: json.dumps(obj, sort_keys=True, ensure_ascii=False).encode(),  # spaces
        lambda obj: json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode(),  # unsorted keys
        lambda obj: json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(),  # \u escapes
        lambda obj: json.dumps(obj, sort_keys=True, separators=(",", ":"), indent=None).encode() + b" ",
    ],
    ids=["spaces", "unsorted", "ascii-escaped", "trailing-space"],
)
def test_non_canonical_line_is_corrupt(ledger_kit, pid, rewrite):
    event = ledger_kit.make_event(
        pid, None, task_id=str(uuid.uuid4()), request_id="r", payload={"text": "ünïcode", "b": 1, "a": [1, 2]}
    )
    assert verify_ledger_bytes(ledger_kit.line(event), project_id=pid).ok  # control: canonical
    result = verify_ledger_bytes(rewrite(event) + b"\n", project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER" and result.error.line == 1
    assert "canonical" in result.error.reason


def test_floats_must_be_written_as_javascript_does(ledger_kit, pid):
    task = str(uuid.uuid4())
    good = ledger_kit.make_event(pid, None, task_id=task, request_id="r", payload={"confidence": 0.85, "t": 1e-7})
    js_line = ledger_kit.line(good).replace(b"1e-07", b"1e-7")
    body = json.loads(js_line)
    body.pop("event_hash")
    js_hash = hashlib.sha256(ledger_kit.canonical(body).replace(b"1e-07", b"1e-7")).hexdigest()
    js_line = js_line.replace(good["event_hash"].encode(), js_hash.encode())
    assert verify_ledger_bytes(js_line, project_id=pid).ok  # 1e-7, as JSON.stringify writes it
    integral = ledger_kit.make_event(pid, None, task_id=task, request_id="r", payload={"confidence": 1.0})
    result = verify_ledger_bytes(ledger_kit.line(integral), project_id=pid)  # "1.0": JavaScript writes 1
    assert result.error is not None and "canonical" in result.error.reason


def test_empty_middle_line_is_corrupt(ledger, pid):
    data, _ = ledger
    lines = data.split(b"\n")
    broken = b"\n".join([*lines[:2], b"", *lines[2:]])
    result = verify_ledger_bytes(broken, project_id=pid)
    assert result.error is not None and result.error.line == 3 and result.error.reason == "empty line"


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        (b"not json", "invalid JSON"),
        (b"[1,2,3]", "not a JSON object"),
        (b'"text"', "not a JSON object"),
        (b'{"schema_version":1}', "bad event shape"),
        (b"[" * 50_000 + b"]" * 50_000, "invalid JSON"),
    ],
    ids=["garbage", "array", "string", "missing-fields", "deep-nesting"],
)
def test_malformed_lines_are_corrupt_without_crashing(ledger, pid, bad_line, reason):
    data, _ = ledger
    result = verify_ledger_bytes(data + bad_line + b"\n", project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER" and result.error.line == 6
    assert result.error.reason.startswith(reason) and result.line_count == 5


def test_unknown_event_type_actor_and_extra_field_are_corrupt(ledger_kit, pid):
    task = str(uuid.uuid4())
    for change, reason in [
        ({"event_type": "claim_exploded"}, "unknown event_type"),
        ({"actor": "robot"}, "unknown actor"),
        ({"occurred_at": "yesterday"}, "occurred_at"),
        ({"task_id": "not-a-uuid"}, "UUID"),
        ({"request_id": ""}, "request_id"),
    ]:
        event = ledger_kit.make_event(pid, None, task_id=task, request_id="r")
        event.update(change)
        result = verify_ledger_bytes(relink(ledger_kit, [event]), project_id=pid)
        assert result.error is not None and reason in result.error.reason, change
    event = ledger_kit.make_event(pid, None, task_id=task, request_id="r")
    body = {k: v for k, v in event.items() if k != "event_hash"} | {"zzz_extra": 1}
    body["event_hash"] = hashlib.sha256(ledger_kit.canonical(body)).hexdigest()
    result = verify_ledger_bytes(ledger_kit.line(body), project_id=pid)
    assert result.error is not None and "zzz_extra" in result.error.reason


def test_duplicate_keys_are_not_canonical(ledger_kit, pid):
    event = ledger_kit.make_event(pid, None, task_id=str(uuid.uuid4()), request_id="r")
    doubled = ledger_kit.line(event).replace(b'"actor":"user",', b'"actor":"user","actor":"user",', 1)
    result = verify_ledger_bytes(doubled, project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER"


def test_huge_line_is_handled(ledger_kit, ledger, pid):
    data, events = ledger
    big = ledger_kit.make_event(
        pid,
        events[-1]["event_hash"],
        task_id=events[0]["task_id"],
        request_id="big",
        payload={"blob": "x" * 20_000_000},
    )
    assert verify_ledger_bytes(data + ledger_kit.line(big), project_id=pid).ok  # control: big but valid
    tampered = ledger_kit.line(big).replace(b"xxxx", b"xxxy", 1)
    result = verify_ledger_bytes(data + tampered, project_id=pid)
    assert result.error is not None and result.error.line == 6 and result.line_count == 5
    garbage = verify_ledger_bytes(data + b"{" + b"9" * 30_000_000 + b"\n", project_id=pid)
    assert garbage.error is not None and garbage.error.line == 6


def test_torn_tail_is_reported_with_its_bytes(ledger, pid):
    data, _ = ledger
    result = verify_ledger_bytes(data + b'{"actor":"us', project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_TRAILING_EVENT" and result.error.retryable
    assert result.error.line == 6 and result.torn_tail == b'{"actor":"us'
    assert result.line_count == 5 and result.byte_length == len(data)


def test_torn_tail_after_a_middle_error_reports_the_middle_error(ledger, pid):
    data, _ = ledger
    lines = data.split(b"\n")
    lines[1] = b"garbage"
    result = verify_ledger_bytes(b"\n".join(lines) + b"{", project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER" and result.error.line == 2
    assert result.torn_tail == b"{"


def test_ten_thousand_events_verify_with_the_right_head(ledger_kit, pid):
    """Correctness at the benchmark's largest size; its speed is measured by tools/bench, not asserted here."""
    data, _ = ledger_kit.build_ledger(pid, 10_000)
    result = verify_ledger_bytes(data, project_id=pid)
    assert result.ok and result.line_count == 10_000 and result.byte_length == len(data)
    assert result.head_hash == result.events[-1].event_hash


_KIT = ledger_kit_module
_FIXTURE = _KIT.fixture_bytes()
_FIXTURE_PID = _KIT.project_id_for(_KIT.FIXTURE_ROOT)


@settings(max_examples=150, deadline=None)
@given(position=st.integers(min_value=0, max_value=len(_FIXTURE) - 1), value=st.integers(min_value=0, max_value=255))
def test_any_single_byte_change_is_detected(position, value):
    if _FIXTURE[position] == value:
        return
    mutated = _FIXTURE[:position] + bytes([value]) + _FIXTURE[position + 1 :]
    result = verify_ledger_bytes(mutated, project_id=_FIXTURE_PID)
    assert not result.ok
    assert result.byte_length <= position


@pytest.mark.parametrize(("field", "prefix"), [("event_id", "a"), ("task_id", "b"), ("occurred_at", "Z")])
def test_a_short_value_is_corrupt_even_when_its_neighbour_makes_up_the_length(ledger_kit, ledger, pid, field, prefix):
    """Values checked in bulk are checked one by one too: 35 + 37 characters are not two UUIDs."""
    _, events = ledger
    assert verify_ledger_bytes(relink(ledger_kit, events), project_id=pid).ok  # control: relinking changes nothing
    events[1][field] = events[1][field][:-1]
    events[2][field] = prefix + events[2][field]
    result = verify_ledger_bytes(relink(ledger_kit, events), project_id=pid)
    assert result.error is not None and result.error.code == "CORRUPT_LEDGER" and result.error.line == 2
    assert result.line_count == 1


def _line_by_line(data: bytes, project_id: str) -> tuple[int, int | None, str | None]:
    """The reference: the explaining line-by-line path alone (what the bulk path must never be more lenient than)."""
    from intentloop.store._verify import _verify_each

    lines = data.split(b"\n")
    lines.pop()
    out: list = []
    error = _verify_each(lines, out, project_id, None, 1)
    return len(out), None if error is None else error.line, None if error is None else error.reason


_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.sampled_from([0.5, 1.0, -0.0, 1e-7, 1e21, 2.5e-300, 123.456]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_CHANGES = st.one_of(
    st.tuples(st.just("event_id"), st.text(alphabet="0123456789abcdefABCDEFg-\n", min_size=34, max_size=38)),
    st.tuples(st.just("task_id"), st.uuids().map(str) | st.uuids().map(lambda u: str(u).upper() + "\n")),
    st.tuples(st.just("occurred_at"), st.text(alphabet="0123456789-T:.Z \u0663", min_size=19, max_size=30)),
    st.tuples(st.just("occurred_at"), st.sampled_from(["2026-11-30T01:02:03Z", "2026-11-30T01:02:03.123456789Z"])),
    st.tuples(st.just("request_id"), st.integers(min_value=0, max_value=202).map(lambda n: "é" * n)),
    st.tuples(st.just("actor"), st.sampled_from(["user", "agent", "evidence", "system", "robot", "User", ""])),
    st.tuples(st.just("event_type"), st.sampled_from(["task_started", "mode_set", "graph_imported", "claim"])),
    st.tuples(st.just("schema_version"), st.sampled_from([1, 2, 0, 1.0, True, "1", None])),
    st.tuples(st.just("payload"), st.dictionaries(st.text(max_size=6), _JSON, max_size=4)),
)


@settings(max_examples=200, deadline=None)
@given(index=st.integers(min_value=0, max_value=3), change=_CHANGES)
def test_bulk_verdict_equals_the_line_by_line_verdict(index, change):
    """A forger can re-hash anything: whatever shape a relinked line has, the fast path judges it as each line would."""
    kit = _KIT
    pid = kit.project_id_for("/work/project")
    _, events = kit.build_ledger(pid, 4)
    field, value = change
    events[index][field] = value
    try:
        data = relink(kit, events)
    except ValueError:  # a float json.dumps cannot write
        return
    result = verify_ledger_bytes(data, project_id=pid)
    expected = _line_by_line(data, pid)
    assert (
        result.line_count,
        None if result.ok else result.error.line,
        None if result.ok else result.error.reason,
    ) == (expected)
