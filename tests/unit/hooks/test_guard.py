"""The hook's guard: deadline parsing, one answer only, argument parsing."""

from __future__ import annotations

import os

import pytest

from intentloop.hooks._guard import DEFAULT_DEADLINE_S, FAIL_OPEN_LINE, Answer, deadline_seconds, process_age_s
from intentloop.hooks._run import UsageError, parse_args


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, DEFAULT_DEADLINE_S),
        ("", DEFAULT_DEADLINE_S),
        ("1.25", 1.25),
        ("0.3", 0.3),
        ("abc", DEFAULT_DEADLINE_S),
        ("0", DEFAULT_DEADLINE_S),
        ("-1", DEFAULT_DEADLINE_S),
        ("nan", DEFAULT_DEADLINE_S),
        ("inf", DEFAULT_DEADLINE_S),
        ("1e9", 60.0),
    ],
)
def test_deadline_from_environment(raw: str | None, expected: float) -> None:
    env = {} if raw is None else {"INTENT_LOOP_HOOK_DEADLINE_S": raw}
    assert deadline_seconds(env) == expected


def test_process_age_is_small_and_non_negative() -> None:
    assert 0.0 <= process_age_s() < 5.0


def test_answer_is_written_exactly_once() -> None:
    read_fd, write_fd = os.pipe()
    try:
        answer = Answer(write_fd)
        assert answer.send(b'{"a":1}\n') is True
        assert answer.send(FAIL_OPEN_LINE) is False
        assert answer.sent
    finally:
        os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        assert fh.read() == b'{"a":1}\n'


def test_answer_to_a_closed_pipe_is_not_an_error() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        assert Answer(write_fd).send(FAIL_OPEN_LINE) is True
    finally:
        os.close(write_fd)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], (None, None)),
        (["stop"], ("stop", None)),
        (["session-start", "--data-dir", "/d"], ("session-start", "/d")),
        (["--data-dir=/d", "user-prompt"], ("user-prompt", "/d")),
    ],
)
def test_parse_args(argv: list[str], expected: tuple[str | None, str | None]) -> None:
    assert parse_args(argv) == expected


@pytest.mark.parametrize("argv", [["--verbose"], ["stop", "stop"], ["--data-dir"], ["--data-dir", ""]])
def test_bad_arguments_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_args(argv)
