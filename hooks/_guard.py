"""The hook's promise to its host: exactly one JSON line on stdout, exit 0, before the hook's own deadline.

The handler runs on the main thread with every wait bounded by the deadline; a watchdog thread is the last resort
when something unbounded (a hung file system, a stuck stdin) outlives it: it writes the fail-open line itself and
ends the process with ``os._exit(0)``, so the host never kills us at its own 3 s timeout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import Final

#: The answer for every failure and for the events that inject nothing.
FAIL_OPEN_LINE: Final = b'{"continue":true,"suppressOutput":true}\n'

DEADLINE_ENV: Final = "INTENT_LOOP_HOOK_DEADLINE_S"
DEBUG_ENV: Final = "INTENT_LOOP_DEBUG"
DEFAULT_DEADLINE_S: Final = 2.5
MAX_DEADLINE_S: Final = 60.0
#: Time the watchdog keeps for writing the line and exiting.
WATCHDOG_MARGIN_S: Final = 0.05
#: Time kept after a lock wait for the write itself (temp file, fsync, rename) and the answer.
WRITE_RESERVE_S: Final = 0.45


def deadline_seconds(env: Mapping[str, str]) -> float:
    """The hook's total budget from process start: ``INTENT_LOOP_HOOK_DEADLINE_S`` or 2.5 s.

    Unparsable, non-finite or non-positive values fall back to the default; values above 60 s are clamped.
    """
    raw = env.get(DEADLINE_ENV, "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_DEADLINE_S
    except ValueError:
        return DEFAULT_DEADLINE_S
    if not 0 < value < float("inf"):
        return DEFAULT_DEADLINE_S
    return min(value, MAX_DEADLINE_S)


def process_age_s() -> float:
    """Seconds since this process started (interpreter start-up counts against the deadline); 0.0 if unknown.

    Linux only: ``/proc/self/stat`` field 22 (start time in clock ticks since boot) against ``CLOCK_BOOTTIME``.
    """
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    return age if 0.0 <= age < 5.0 else 0.0


def debug_enabled(env: Mapping[str, str]) -> bool:
    return env.get(DEBUG_ENV, "") == "1"


def silence_stderr() -> None:
    """Point fd 2 at ``/dev/null``: nothing may reach the host's stderr unless debugging is on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, 2)
    except OSError:
        pass
    finally:
        os.close(devnull)


def debug_log(enabled: bool, message: str) -> None:
    """One diagnostic line on stderr when ``INTENT_LOOP_DEBUG=1`` (never payload text)."""
    if enabled:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr may be closed or None
            sys.stderr.write(f"intentloop hook: {message}\n")
            sys.stderr.flush()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Answer:
    """The single stdout line, written at most once, from whichever thread gets there first."""

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._sent = False

    @property
    def sent(self) -> bool:
        return self._sent

    def send(self, line: bytes) -> bool:
        """Write ``line`` unless an answer was already written; returns whether this call wrote it.

        A host that has closed our stdout (``EPIPE``) gets nothing, and that is not an error of ours.
        """
        with self._lock:
            if self._sent:
                return False
            self._sent = True
            with contextlib.suppress(OSError):
                _write_all(self._fd, line)
            return True


class Watchdog:
    """At ``fire_at`` (a ``time.monotonic()`` value): answer fail-open if nobody has, then ``os._exit(0)``."""

    def __init__(self, answer: Answer, fire_at: float) -> None:
        self._answer = answer
        self._fire_at = fire_at
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name="intentloop-hook-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def cancel(self) -> None:
        self._cancelled.set()

    def _run(self) -> None:
        if self._cancelled.wait(max(0.0, self._fire_at - time.monotonic())):
            return
        self._answer.send(FAIL_OPEN_LINE)
        os._exit(0)


__all__ = [
    "DEADLINE_ENV",
    "DEBUG_ENV",
    "DEFAULT_DEADLINE_S",
    "FAIL_OPEN_LINE",
    "WATCHDOG_MARGIN_S",
    "WRITE_RESERVE_S",
    "Answer",
    "Watchdog",
    "deadline_seconds",
    "debug_enabled",
    "debug_log",
    "process_age_s",
    "silence_stderr",
]
