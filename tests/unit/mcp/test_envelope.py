"""The envelope: shape, task_id echo rules, non-JSON results, the JSON text block."""

from __future__ import annotations

import json

import jsonschema
import msgspec

from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.mcp import envelope as env
from intentloop.mcp.catalog import load_catalog

TASK = "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a"
OTHER_TASK = "0b7f9a55-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
SCHEMA = load_catalog().envelope_schema


class _Claim(msgspec.Struct, frozen=True, kw_only=True):
    claim_id: str
    task_id: str


def test_success_envelope_has_the_published_keys_in_order() -> None:
    envelope = env.success("intent_status", "p" * 64, {"task_id": TASK}, {"count": 1})
    assert list(envelope) == ["ok", "schema_version", "operation", "project_id", "task_id", "result"]
    assert envelope["ok"] is True and envelope["schema_version"] == 1
    jsonschema.validate(envelope, SCHEMA)


def test_failure_envelope_carries_code_message_and_retryable() -> None:
    envelope = env.failure("intent_add_explicit", None, {}, IntentLoopError("busy", code="LOCK_TIMEOUT"))
    assert envelope["error"] == {"code": "LOCK_TIMEOUT", "message": "busy", "retryable": True}
    assert "result" not in envelope
    jsonschema.validate(envelope, SCHEMA)


def test_task_id_comes_from_the_argument_first_then_the_result() -> None:
    assert env.success("t", None, {"task_id": TASK}, {"task_id": OTHER_TASK})["task_id"] == TASK
    assert env.success("t", None, {}, {"task_id": OTHER_TASK})["task_id"] == OTHER_TASK
    assert env.success("t", None, {}, [{"task_id": OTHER_TASK}])["task_id"] is None
    assert env.success("t", None, {}, {"task_id": 7})["task_id"] is None


def test_task_id_of_a_struct_result_is_found() -> None:
    envelope = env.success("t", None, {}, _Claim(claim_id="c", task_id=OTHER_TASK))
    assert envelope["task_id"] == OTHER_TASK
    assert envelope["result"] == {"claim_id": "c", "task_id": OTHER_TASK}


def test_a_task_id_argument_that_is_not_uuid_shaped_is_not_echoed() -> None:
    assert env.failure("t", None, {"task_id": "x" * 5000}, InvalidInputError("bad"))["task_id"] is None
    assert env.failure("t", None, {"task_id": 12}, InvalidInputError("bad"))["task_id"] is None
    # positive controls: a UUID, and the nil UUID the published pattern admits, are echoed
    assert env.failure("t", None, {"task_id": TASK}, InvalidInputError("bad"))["task_id"] == TASK
    nil = "00000000-0000-0000-0000-000000000000"
    assert env.failure("t", None, {"task_id": nil}, InvalidInputError("bad"))["task_id"] == nil


def test_a_result_that_is_not_json_becomes_internal_error() -> None:
    envelope = env.success("intent_status", "p" * 64, {}, {"value": object()})
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "INTERNAL_ERROR"
    assert "object" not in envelope["error"]["message"]
    jsonschema.validate(envelope, SCHEMA)
    # positive control: a JSON result passes through
    assert env.success("intent_status", "p" * 64, {}, {"value": 1})["ok"] is True


def test_internal_failure_never_repeats_exception_text() -> None:
    envelope = env.internal_failure("intent_status", None, {})
    assert envelope["error"] == {"code": "INTERNAL_ERROR", "message": env.INTERNAL_MESSAGE, "retryable": False}


def test_text_block_is_the_same_envelope_as_compact_json() -> None:
    envelope = env.success("intent_status", None, {}, {"statement": "naïve café ✓"})
    text = env.envelope_text(envelope)
    assert json.loads(text) == envelope
    assert "naïve café ✓" in text and ", " not in text


def test_an_overlong_operation_name_is_clipped() -> None:
    envelope = env.failure("x" * 10_000, None, {}, InvalidInputError("unknown"))
    assert len(envelope["operation"]) == 200


def test_json_type_names_follow_msgspec() -> None:
    assert [env.json_type(v) for v in (None, True, 1, 1.5, "s", [1], {"a": 1})] == [
        "null",
        "bool",
        "int",
        "float",
        "str",
        "array",
        "object",
    ]
