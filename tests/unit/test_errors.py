"""Stable error codes and their wire form."""

from __future__ import annotations

import pytest

from intentloop.errors import CODES, CorruptLedgerError, IntentLoopError, InvalidInputError, StorageError


def test_every_reference_code_is_known_with_its_retryability() -> None:
    for code in ("LOCK_TIMEOUT", "CORRUPT_TRAILING_EVENT", "TRANSIENT_FILE_RACE", "LOCK_COMPROMISED"):
        assert CODES[code] is True
    for code in ("CORRUPT_LEDGER", "REQUEST_ID_REUSED", "MODE_OFF", "INVALID_ARGUMENTS", "PATH_ESCAPE"):
        assert CODES[code] is False


def test_error_carries_code_message_and_retryable() -> None:
    err = StorageError("lock busy", code="LOCK_TIMEOUT")
    assert err.to_dict() == {"code": "LOCK_TIMEOUT", "message": "lock busy", "retryable": True}
    assert InvalidInputError("bad").code == "INVALID_ARGUMENTS"
    assert IntentLoopError("x").code == "INTERNAL_ERROR"


def test_unknown_codes_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown error code"):
        IntentLoopError("x", code="NOT_A_CODE")


def test_corrupt_ledger_error_names_the_line() -> None:
    err = CorruptLedgerError("event_hash mismatch on line 3", line=3, reason="event_hash mismatch")
    assert (err.code, err.line, err.reason, err.retryable) == ("CORRUPT_LEDGER", 3, "event_hash mismatch", False)
