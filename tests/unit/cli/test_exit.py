"""Exit codes, remedies and the JSON/human output channel of the admin CLI."""

from __future__ import annotations

import json

import pytest

from cli._exit import BUSY, DAMAGED, ENVIRONMENT, NOT_FOUND, OK, USAGE, exit_code_for, remedy_for
from cli._output import Output, error_dict
from intentloop.errors import CODES, CorruptLedgerError, IntentLoopError, StorageError


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [
        ("CORRUPT_LEDGER", DAMAGED),
        ("CORRUPT_TRAILING_EVENT", DAMAGED),
        ("FUTURE_SCHEMA", DAMAGED),
        ("INTERNAL_ERROR", DAMAGED),
        ("INVALID_ARGUMENTS", USAGE),
        ("INVALID_PROJECT_ID", USAGE),
        ("PROJECT_NOT_FOUND", NOT_FOUND),
        ("TASK_NOT_FOUND", NOT_FOUND),
        ("CLAIM_NOT_FOUND", NOT_FOUND),
        ("AMBIGUOUS_ID", USAGE),
        ("INVALID_ID", USAGE),
        ("PROJECT_ROOT_INVALID", USAGE),
        ("CONFIRMATION_REQUIRED", USAGE),
        ("OUTPUT_EXISTS", USAGE),
        ("DATA_DIR_REQUIRED", ENVIRONMENT),
        ("PATH_ESCAPE", ENVIRONMENT),
        ("UNSAFE_DATA_FILE", ENVIRONMENT),
        ("LOCK_TIMEOUT", BUSY),
    ],
)
def test_each_code_has_its_documented_exit_code(code: str, exit_code: int) -> None:
    assert code in CODES
    assert exit_code_for(code) == exit_code


def test_every_code_the_cli_can_print_has_a_one_line_remedy() -> None:
    for code in CODES:
        remedy = remedy_for(code)
        assert remedy and "\n" not in remedy
    assert "INTENT_LOOP_DATA_DIR" in remedy_for("DATA_DIR_REQUIRED")
    assert "--overwrite" in remedy_for("OUTPUT_EXISTS")
    assert "--yes" in remedy_for("CONFIRMATION_REQUIRED")


def test_ok_is_zero_and_codes_are_distinct() -> None:
    assert len({OK, DAMAGED, USAGE, ENVIRONMENT, BUSY}) == 5 and OK == 0


def test_json_failure_carries_code_message_retryable_and_remedy(capsys: pytest.CaptureFixture[str]) -> None:
    out = Output("verify", json_mode=True)
    code = out.failure(StorageError("lock busy", code="LOCK_TIMEOUT"), fields={"project_id": "x"})
    body = json.loads(capsys.readouterr().out)
    assert code == BUSY
    assert body["ok"] is False and body["exit_code"] == BUSY and body["command"] == "verify"
    assert body["project_id"] == "x"
    assert body["error"] == {
        "code": "LOCK_TIMEOUT",
        "message": "lock busy",
        "retryable": True,
        "remedy": remedy_for("LOCK_TIMEOUT"),
    }


def test_human_failure_prints_code_and_remedy_on_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    out = Output("verify", json_mode=False)
    code = out.failure(CorruptLedgerError("line 3: event_hash does not match", line=3, reason="x"))
    captured = capsys.readouterr()
    assert code == DAMAGED
    assert captured.out == ""
    assert "error[CORRUPT_LEDGER]: line 3: event_hash does not match" in captured.err
    assert "remedy:" in captured.err


def test_guard_turns_intentloop_errors_into_exit_codes_and_lets_success_through(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = Output("status", json_mode=True)

    def fails() -> int:
        raise StorageError("no data directory", code="DATA_DIR_REQUIRED")

    assert out.guard(lambda: OK) == OK
    assert out.guard(fails) == ENVIRONMENT
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "DATA_DIR_REQUIRED"


def test_error_dict_is_the_envelope_error_plus_a_remedy() -> None:
    error = IntentLoopError("boom")
    assert error_dict(error) == {**error.to_dict(), "remedy": remedy_for("INTERNAL_ERROR")}


def test_progress_is_silent_when_not_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    out = Output("status", json_mode=False)
    with out.progress("Working", total=3) as tick:
        tick.advance()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
