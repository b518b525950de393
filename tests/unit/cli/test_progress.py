"""The progress line (``cli/_progress.py``) on a real pseudo-terminal: nothing before half a second, then what the
command is doing and for how long, redrawn in place, never over the command's own output, erased at the end."""

from __future__ import annotations

import os
import pty
import re
import select
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import pytest

from intentloop.cli._progress import DELAY_S, phase, showing_progress

ERASE = b"\r\x1b[K"
ELLIPSIS = "…".encode()


class Terminal:
    """A pseudo-terminal: ``stream`` writes to its slave end, ``master`` reads what was drawn."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.stream = open(slave, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    term.close()


@contextmanager
def _stderr(stream: TextIO) -> Iterator[None]:
    """``sys.stderr`` is ``stream`` in the body (set in the test itself: pytest's capture takes ``sys.stderr`` back
    between a fixture and the test)."""
    saved = sys.stderr
    sys.stderr = stream
    try:
        yield
    finally:
        sys.stderr = saved


def _drawn(master: int) -> bytes:
    out = b""
    while select.select([master], [], [], 0.05)[0]:
        chunk = os.read(master, 65536)
        if not chunk:
            break
        out += chunk
    return out


def _elapsed(drawn: bytes) -> list[float]:
    return [float(s) for s in re.findall(rb"\xe2\x80\xa6 (\d+\.\d) s", drawn)]


def test_a_command_over_half_a_second_shows_what_it_does_and_for_how_long_then_erases_it(terminal: Terminal) -> None:
    with _stderr(terminal.stream), showing_progress("verify"):
        time.sleep(DELAY_S + 0.4)
    drawn = _drawn(terminal.master)
    assert drawn.startswith(ERASE + b"intentloop verify: Verifying the ledger" + ELLIPSIS)
    times = _elapsed(drawn)
    assert len(times) >= 2 and times[0] >= DELAY_S and times == sorted(times)  # redrawn in place as time goes by
    assert drawn.count(ERASE) == len(times) + 1 and drawn.endswith(ERASE)  # and the line is gone at the end


def test_a_command_that_ends_within_half_a_second_shows_nothing(terminal: Terminal) -> None:
    with _stderr(terminal.stream), showing_progress("verify"):
        time.sleep(0.1)
    assert _drawn(terminal.master) == b""
    with _stderr(terminal.stream), showing_progress("verify"):  # positive control: the same, slower
        time.sleep(DELAY_S + 0.2)
    assert b"intentloop verify" in _drawn(terminal.master)


def test_without_a_terminal_nothing_is_drawn_and_the_streams_are_left_alone() -> None:
    read_fd, write_fd = os.pipe()
    stream = open(write_fd, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    before = sys.stdin, sys.stdout
    with _stderr(stream), showing_progress("verify"):
        assert (sys.stdin, sys.stdout, sys.stderr) == (*before, stream)
        time.sleep(DELAY_S + 0.2)
    stream.close()
    assert os.read(read_fd, 65536) == b""
    os.close(read_fd)


@pytest.mark.parametrize("command", ["hook", "serve"])
def test_hook_and_serve_never_show_progress(terminal: Terminal, command: str) -> None:
    with _stderr(terminal.stream), showing_progress(command):
        time.sleep(DELAY_S + 0.2)
    assert _drawn(terminal.master) == b""


def test_output_erases_the_line_and_a_question_waiting_for_its_answer_is_never_overwritten(
    terminal: Terminal,
) -> None:
    with _stderr(terminal.stream), showing_progress("forget claim"):
        time.sleep(DELAY_S + 0.15)
        sys.stderr.write("Type DELETE CLAIM x to confirm: ")
        time.sleep(0.4)  # four redraw intervals: the question must stay as it is
        asked = _drawn(terminal.master)
        sys.stderr.write("cancelled\n")
        time.sleep(0.3)
    after = _drawn(terminal.master)
    head, question = asked.rsplit(ERASE, 1)
    assert b"intentloop forget claim: Deleting the claim" in head
    assert question == b"Type DELETE CLAIM x to confirm: "  # erased before it, nothing drawn after it
    assert after.startswith(b"cancelled\r\n" + ERASE + b"intentloop forget claim")  # the line ended: drawn again
    assert after.endswith(ERASE)


def test_a_phase_names_what_the_command_does_now_and_counts_its_steps(terminal: Terminal) -> None:
    with _stderr(terminal.stream), showing_progress("status"):
        with phase("Verifying projects", total=3) as tick:
            tick.advance()
            time.sleep(DELAY_S + 0.15)
        time.sleep(0.3)
    drawn = _drawn(terminal.master)
    assert b"intentloop status: Verifying projects 1/3" + ELLIPSIS in drawn
    assert drawn.rsplit(b"Verifying projects", 1)[1].count(b"intentloop status: Looking at the data root") >= 1


def test_a_phase_outside_a_command_run_is_a_no_op(terminal: Terminal) -> None:
    with _stderr(terminal.stream), phase("Verifying projects", total=3) as tick:
        tick.advance()
        time.sleep(DELAY_S + 0.1)
    assert _drawn(terminal.master) == b""


def test_once_a_question_is_answered_the_line_comes_back(terminal: Terminal) -> None:
    answers = open(os.dup(terminal.stream.fileno()), encoding="utf-8")  # noqa: SIM115 - closed below
    saved = sys.stdin
    sys.stdin = answers
    try:
        with _stderr(terminal.stream), showing_progress("forget claim"):
            sys.stderr.write("Type DELETE CLAIM x to confirm: ")
            os.write(terminal.master, b"DELETE CLAIM x\n")  # typed on the terminal, which echoes it
            assert sys.stdin.readline() == "DELETE CLAIM x\n"
            time.sleep(DELAY_S + 0.2)
    finally:
        sys.stdin = saved
        answers.close()
    question, after = _drawn(terminal.master).split(b"DELETE CLAIM x\r\n", 1)
    assert question.endswith(b"Type DELETE CLAIM x to confirm: ")
    assert after.startswith(ERASE + b"intentloop forget claim: Deleting the claim")
