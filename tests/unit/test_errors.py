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


def _raises_with_codes() -> list[tuple[str, int, str, str]]:
    """``(file, line, class, code)`` of every ``SomeError(..., code="X")`` in the product's code."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    names = {"IntentLoopError", "InvalidInputError", "StorageError", "CorruptLedgerError", "ConflictError"}
    found = []
    for package in ("intentloop", "cli", "hooks", "recovery"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                    for keyword in node.keywords:
                        if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                            found.append((str(path.relative_to(root)), node.lineno, node.func.id, keyword.value.value))
    return found


def test_every_code_is_raised_with_its_family_class() -> None:
    import intentloop.errors as errors

    raises = _raises_with_codes()
    assert len(raises) > 100  # the scan really sees the code base
    wrong = [r for r in raises if getattr(errors, r[2]) not in errors.allowed_classes(r[3])]
    assert wrong == []


def test_the_family_check_notices_a_base_class_raise() -> None:
    # control: the shape the check rejects
    import intentloop.errors as errors

    assert errors.family("LOCK_TIMEOUT") is errors.StorageError
    assert errors.family("MODE_OFF") is errors.ConflictError
    assert errors.family("INVALID_SOURCE") is errors.InvalidInputError
    assert errors.family("TASK_NOT_FOUND") is errors.IntentLoopError
    assert errors.IntentLoopError is not errors.family("LOCK_TIMEOUT")


def test_every_code_has_a_family_and_the_literal_is_the_table() -> None:
    from typing import get_args

    import intentloop.errors as errors

    assert set(get_args(errors.ErrorCode)) == set(errors.CODES)
    assert set(errors.CODES) >= errors.RETRYABLE
    assert {errors.family(code) for code in errors.CODES} == {
        errors.IntentLoopError,
        errors.InvalidInputError,
        errors.StorageError,
        errors.CorruptLedgerError,
        errors.ConflictError,
    }
