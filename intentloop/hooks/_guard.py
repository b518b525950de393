"""The hook's promise to its host: exactly one JSON line on stdout, exit 0, before the hook's own deadline.

The handler runs in a forked child (:func:`answer_in_child`) with every wait bounded by the deadline; the parent only
waits for the child's line on a pipe until the deadline, and when none came it answers fail-open itself, kills the
child and exits. Why a process and not a thread: a watchdog thread needs the GIL to run, and a handler stuck in C
code (a regular expression, a hung ``read``) holds it; the fork's round trip costs 1.5–3 ms (docs/BENCHMARK.md,
"Measurements behind the code"). Where
``fork`` is unavailable the handler runs inline and the :class:`Watchdog` thread is the last resort: it writes the
fail-open line itself and ends the process with ``os._exit(0)``, so the host never kills us at its own 3 s timeout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Final, NoReturn

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
#: How long a child that answered early (:data:`Detach`) may go on working after the host has its answer; then the
#: kernel ends it (``SIGALRM``, default action), even when it is stuck in C code.
BACKGROUND_LIMIT_S: Final = 60
#: Starts what a child sends when it answered early and goes on working: never part of a JSON line.
_EARLY: Final = b"\x1e"

#: Given to the work of :func:`answer_in_child`: ``detach(line)`` answers the host with ``line`` now and lets the work
#: go on in the background (``BACKGROUND_LIMIT_S`` at most); ``False`` where it cannot (no fork: the work runs inline).
Detach = Callable[[bytes], bool]


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


def answer_in_child(
    work: Callable[[Detach], bytes],
    fire_at: float,
    *,
    send: Callable[[bytes], object],
    after: Callable[[], None] | None = None,
    late: Callable[[], None] | None = None,
) -> bytes | None:
    """Run ``work`` in a forked child and return the line it printed to a pipe, or the fail-open line when it has not
    printed one by ``fire_at`` (a ``time.monotonic()`` value; the child is then killed); ``None`` when this platform
    cannot fork, and the caller runs ``work`` itself.

    The child never writes to stdout (its fd 1 points at ``/dev/null``), so a child that outlives its parent cannot
    hold the host's pipe open. The parent hands the line to ``send`` as soon as the child has closed the pipe; the
    child then runs ``after`` (work that must not delay the answer, such as the problem log) and ends with
    ``os._exit``, skipping interpreter shutdown. The parent waits for that only until ``fire_at``.

    ``work`` may instead answer early with the ``Detach`` it is given: the parent then returns at once without
    waiting for the child, which points its stdin and stderr at ``/dev/null`` too (nothing of ours holds the host's
    pipes), moves to a session of its own and goes on for at most ``BACKGROUND_LIMIT_S``.

    When the child has not answered by ``fire_at`` (starved of CPU, stuck), the parent answers fail-open, kills it
    and hands ``late`` to a new process that goes on alone the same way (what the child may not have done, such as
    leaving its observation in the spool); the parent does not wait for it.
    """
    fork = getattr(os, "fork", None)
    if fork is None:
        return None
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:
        _child(work, read_fd, write_fd, after)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, fire_at)
    finally:
        os.close(read_fd)
    if data is None:
        _kill(pid)
        send(FAIL_OPEN_LINE)
        if late is not None:
            _in_background(late)
        return FAIL_OPEN_LINE
    early = data.startswith(_EARLY)
    line = _one_line(data[len(_EARLY) :] if early else data)
    send(line)
    if not early:
        _wait_until(pid, fire_at)
    return line


def _child(work: Callable[[Detach], bytes], read_fd: int, write_fd: int, after: Callable[[], None] | None) -> NoReturn:
    code = 1
    detached = False

    def detach(line: bytes) -> bool:
        nonlocal detached
        if detached:
            return False
        detached = True
        with contextlib.suppress(OSError):  # a parent that is gone has answered fail-open at its deadline
            _write_all(write_fd, _EARLY + line)
        os.close(write_fd)
        _go_background()
        return True

    try:
        os.close(read_fd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        line = work(detach)
        if not detached:
            _write_all(write_fd, line)
            os.close(write_fd)
        code = 0
        if after is not None:
            after()
    finally:
        os._exit(code)


def _go_background() -> None:
    """From now on this process works after the host has its answer: off the host's pipes, in a session of its own,
    ended by the kernel (``SIGALRM``) after ``BACKGROUND_LIMIT_S`` whatever it is doing."""
    _leave_host_pipes()
    with contextlib.suppress(OSError):  # its own session: a host that ends our process group once we have
        os.setsid()  # answered (some do, to reclaim a hook's descendants) leaves this bounded work be
    import signal

    signal.alarm(BACKGROUND_LIMIT_S)


def _in_background(work: Callable[[], None]) -> None:
    """Run ``work`` in a new process that goes on alone (:func:`_go_background`); never waits for it, never raises."""
    try:
        pid = os.fork()
    except OSError:
        return
    if pid != 0:
        return
    try:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        _go_background()
        work()
    finally:
        os._exit(0)


def _leave_host_pipes() -> None:
    """Point stdin and stderr at ``/dev/null`` (stdout already is): a host that waits for our pipes to close is not
    kept waiting by a child that goes on after its answer."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 2):
            with contextlib.suppress(OSError):
                os.dup2(devnull, fd)
        os.close(devnull)


def _read_all(fd: int, fire_at: float) -> bytes | None:
    """Everything the child wrote once it closes the pipe; ``None`` when ``fire_at`` came first."""
    import select

    chunks: list[bytes] = []
    while True:
        remaining = fire_at - time.monotonic()
        if remaining <= 0:
            return None
        ready, _w, _x = select.select([fd], [], [], remaining)
        if not ready:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _one_line(data: bytes) -> bytes:
    """``data`` as the answer line: the fail-open line unless it is exactly one line."""
    return data if data.endswith(b"\n") and data.count(b"\n") == 1 else FAIL_OPEN_LINE


def _wait_until(pid: int, fire_at: float) -> None:
    """Reap the child once it has run ``after``; give up (it finishes on its own) at ``fire_at``.

    Where Linux gives a process descriptor (``pidfd_open``), the parent sleeps on it until the child exits; else
    it polls every 2 ms (which added 1 ms to a hook's wall time on average, up to 2 ms).
    """
    if _wait_on_pidfd(pid, fire_at):
        return
    while True:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except OSError:
            return
        if done or time.monotonic() >= fire_at:
            return
        time.sleep(0.002)


def _wait_on_pidfd(pid: int, fire_at: float) -> bool:
    """Wait for ``pid`` to exit (or ``fire_at``) on its process descriptor and reap it; ``False`` when there is no
    such descriptor here, and the caller polls instead."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return False
    try:
        fd = pidfd_open(pid)
    except OSError:
        return False
    import select

    try:
        with contextlib.suppress(OSError, ValueError):
            select.select([fd], [], [], max(0.0, fire_at - time.monotonic()))
        with contextlib.suppress(OSError):
            os.waitpid(pid, os.WNOHANG)
    finally:
        os.close(fd)
    return True


def _kill(pid: int) -> None:
    """Stop a child that missed the deadline (a crash at any point is safe for the store) without waiting for it."""
    import signal

    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, os.WNOHANG)


__all__ = [
    "BACKGROUND_LIMIT_S",
    "DEADLINE_ENV",
    "DEBUG_ENV",
    "DEFAULT_DEADLINE_S",
    "FAIL_OPEN_LINE",
    "WATCHDOG_MARGIN_S",
    "WRITE_RESERVE_S",
    "Answer",
    "Detach",
    "Watchdog",
    "answer_in_child",
    "deadline_seconds",
    "debug_enabled",
    "debug_log",
    "process_age_s",
    "silence_stderr",
]
