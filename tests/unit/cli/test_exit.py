"""Exit codes and remedies of the admin CLI."""

from __future__ import annotations

import pytest

from intentloop.cli._exit import BUSY, DAMAGED, ENVIRONMENT, NOT_FOUND, OK, USAGE, exit_code_for, remedy_for
from intentloop.errors import CODES


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
