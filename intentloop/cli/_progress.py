"""What a slow command is doing, on the terminal: after half a second, one line on stderr, updated in place.

Why a line of our own (a thread and ``\\r``) and not rich's live display: nothing at all is drawn before 0.5 s, so a
fast command, a pipe or a script sees no progress byte, and the command's own output is never garbled: every write to
the terminal first erases the line, and the line comes back only once that output has ended its line (a question
waiting for its answer is never overwritten). ``forget`` held the lock for 14–22 s at 100,000 events, showing nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Final, TextIO

#: A command that ends sooner shows no progress at all.
DELAY_S: Final = 0.5
#: How often the line is drawn again (the elapsed time moves in tenths of a second).
INTERVAL_S: Final = 0.1
#: The commands that never print progress: their stdout and stderr belong to the host that runs them.
SILENT_COMMANDS: Final = frozenset({"hook", "serve"})
#: What a command is doing, until it names a phase of its own (``Output.progress``).
DOING: Final[dict[str, str]] = {
    "projects": "Reading the projects",
    "tasks": "Reading the tasks",
    "show": "Reading the task",
    "export": "Exporting the task",
    "forget claim": "Deleting the claim",
    "forget task": "Deleting the task",
    "relink": "Moving the project's memory",
    "status": "Looking at the data root",
    "verify": "Verifying the ledger",
    "recover export": "Exporting the verified prefix",
    "recover quarantine": "Quarantining the damaged suffix",
    "recover salvage": "Salvaging the quarantined events",
    "install": "Installing",
    "demo": "Running the demo",
}
_ERASE: Final = "\r\x1b[K"


class Tick:
    """Counts a phase's steps (``Output.progress(label, total)``); a no-op when no line is drawn."""

    def __init__(self, display: _Display | None) -> None:
        self._display = display

    def advance(self, steps: int = 1) -> None:
        if self._display is not None:
            self._display.advance(steps)


class _Display:
    """The progress line of one command run on the terminal behind file descriptor ``fd``."""

    def __init__(self, command: str, fd: int) -> None:
        self.command = command
        self.fd = fd
        self.lock = threading.RLock()
        self.started = time.monotonic()
        self.phase = DOING.get(command, "Working")
        self.count: tuple[int, int] | None = None
        self.drawn = False
        self.at_line_start = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="intentloop-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.erase()

    def advance(self, steps: int) -> None:
        with self.lock:
            if self.count is not None:
                self.count = (self.count[0] + steps, self.count[1])

    def text(self) -> str:
        count = f" {self.count[0]}/{self.count[1]}" if self.count is not None else ""
        elapsed = time.monotonic() - self.started
        name = f"intentloop {self.command}" if self.command else "intentloop"
        return f"{name}: {self.phase}{count}… {elapsed:.1f} s"

    def draw(self) -> None:
        with self.lock:
            if not self.at_line_start:
                return
            text = self.text()
            with contextlib.suppress(OSError):
                columns = os.get_terminal_size(self.fd).columns
                if columns > 1:  # a line that wraps could not be redrawn in place (0: the width is unknown)
                    text = text[: columns - 1]
            self._write(_ERASE + text)
            self.drawn = True

    def erase(self) -> None:
        with self.lock:
            if self.drawn:
                self._write(_ERASE)
                self.drawn = False

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self.fd, data) :]

    def _run(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while True:
            self.draw()
            if self._stop.wait(INTERVAL_S):
                return


class _Terminal:
    """A text stream on the progress line's terminal: the line is erased before the command writes, and drawn again
    only once the command's output (or the user's answer, on stdin) has ended its line."""

    def __init__(self, inner: TextIO, display: _Display) -> None:
        self._inner = inner
        self._display = display

    def write(self, text: str) -> int:
        with self._display.lock:
            self._display.erase()
            written = self._inner.write(text)
            self._inner.flush()
            if text:
                self._display.at_line_start = text.endswith("\n")
            return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def readline(self, size: int = -1) -> str:
        line = self._inner.readline(size)
        with self._display.lock:
            self._display.at_line_start = True  # the terminal echoed the answer and its newline
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_current: _Display | None = None


def _is_terminal(stream: Any) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def showing_progress(command: str | None) -> Iterator[None]:
    """Around one command run: when stderr is a terminal, after :data:`DELAY_S` show what ``command`` (``None``: not
    known yet, such as ``--version``) is doing and for how long, until it ends; then erase the line. Nothing at all
    otherwise, and never for :data:`SILENT_COMMANDS`.
    """
    global _current
    if command in SILENT_COMMANDS or _current is not None or not _is_terminal(sys.stderr):
        yield
        return
    display = _Display(command or "", sys.stderr.fileno())
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stderr = _Terminal(sys.stderr, display)
    if _is_terminal(sys.stdout):
        sys.stdout = _Terminal(sys.stdout, display)
    if _is_terminal(sys.stdin):
        sys.stdin = _Terminal(sys.stdin, display)
    _current = display
    display.start()
    try:
        yield
    finally:
        display.close()
        _current = None
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def phase(label: str, total: int | None = None) -> Iterator[Tick]:
    """Name what the command is doing now (``label``, and ``n/total`` as the returned tick advances); the previous
    phase comes back afterwards. A no-op when no line is shown."""
    display = _current
    if display is None:
        yield Tick(None)
        return
    with display.lock:
        before = display.phase, display.count
        display.phase = label
        display.count = None if total is None else (0, total)
    try:
        yield Tick(display)
    finally:
        with display.lock:
            display.phase, display.count = before


__all__ = ["DELAY_S", "DOING", "INTERVAL_S", "SILENT_COMMANDS", "Tick", "phase", "showing_progress"]
