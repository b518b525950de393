"""The JSON/human output channel of the admin CLI."""

from __future__ import annotations

import json

import pytest

from intentloop.cli._exit import BUSY, DAMAGED, ENVIRONMENT, OK, remedy_for
from intentloop.cli._output import Output, error_dict
from intentloop.errors import CorruptLedgerError, IntentLoopError, StorageError


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
