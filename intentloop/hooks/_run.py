"""``intentloop hook [--data-dir DIR] [EVENT]``: one payload in, one JSON line out, exit 0, before the deadline.

Only this module's standard-library guard is imported before the deadline is armed; the handlers (msgspec, the
store, the model) are imported inside the guarded call, so even a broken installation answers fail-open.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import BinaryIO, NoReturn

from intentloop._startup import import_msgspec_alone
from intentloop.hooks._guard import (
    FAIL_OPEN_LINE,
    WATCHDOG_MARGIN_S,
    WRITE_RESERVE_S,
    Answer,
    Detach,
    Watchdog,
    _in_background,
    answer_in_child,
    deadline_seconds,
    debug_enabled,
    debug_log,
    process_age_s,
    silence_stderr,
)
from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT
from intentloop.model.hook_events import HOOK_ARGUMENTS_TEXT

USAGE = f"intentloop hook [--data-dir DIR] [{'|'.join([HOOK_ARGUMENTS_TEXT, *GEMINI_EVENT_BY_ARGUMENT])}]"


class UsageError(Exception):
    """Bad command-line arguments: still answered fail-open (a hook never fails its host)."""


def parse_args(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """Return ``(forced event argument or None, data dir or None)``.

    Raises:
        UsageError: an unknown option, a missing ``--data-dir`` value or more than one event.
    """
    event: str | None = None
    data_dir: str | None = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--data-dir":
            if not args or not args[0]:
                raise UsageError("--data-dir needs a value")
            data_dir = args.pop(0)
        elif arg.startswith("--data-dir="):
            data_dir = arg.split("=", 1)[1] or None
        elif arg.startswith("-") or event is not None:
            raise UsageError(f"unexpected argument {arg!r}; usage: {USAGE}")
        else:
            event = arg
    return event, data_dir


#: How much of stdin the parent reads before it forks: more than any payload the handler accepts (1 MiB,
#: ``MAX_PAYLOAD_BYTES`` in ``hooks/_payload.py``, which refuses what is larger), a bound on memory only.
_STDIN_CAP = 2 * 1024 * 1024


def read_stdin(fire_at: float, fd: int = 0) -> bytes | None:
    """Everything on stdin up to end of file (at most ``_STDIN_CAP`` bytes), or ``None`` when it had not ended by
    ``fire_at`` (a ``time.monotonic()`` value). What is already there is read even when ``fire_at`` has passed."""
    import select

    chunks: list[bytes] = []
    size = 0
    while size < _STDIN_CAP:
        try:
            ready, _w, _x = select.select([fd], [], [], max(0.0, fire_at - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(fd, min(65536, _STDIN_CAP - size))
        except (OSError, ValueError):
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def handle(
    argv: Sequence[str],
    stdin: BinaryIO,
    env: Mapping[str, str],
    *,
    lock_deadline: float,
    debug: bool,
    detach: Detach | None = None,
) -> bytes:
    """Everything a hook does, as a function: returns the one stdout line (unless it answered early with ``detach``).

    Raises:
        Exception: anything; :func:`run_hook` turns every failure into the fail-open line.
    """
    import_msgspec_alone()
    from intentloop.hooks._dispatch import dispatch
    from intentloop.hooks._payload import FORCED_EVENTS, parse_payload, read_payload_bytes

    forced_arg, data_dir = parse_args(argv)
    forced = None
    if forced_arg is not None:
        if forced_arg not in FORCED_EVENTS:
            raise UsageError(f"unknown hook event {forced_arg!r}; usage: {USAGE}")
        forced = FORCED_EVENTS[forced_arg]
    if data_dir is not None:
        env = {**env, "INTENT_LOOP_DATA_DIR": data_dir}
    payload = parse_payload(read_payload_bytes(stdin), forced)
    return dispatch(payload, env, lock_deadline=lock_deadline, debug=debug, detach=detach)


def run_hook(argv: list[str]) -> NoReturn:
    """The ``intentloop hook`` process body: always prints exactly one JSON line and ends the process with status 0.

    The budget (``INTENT_LOOP_HOOK_DEADLINE_S``, default 2.5 s) counts from process start; lock waits end
    ``WRITE_RESERVE_S`` before it. The handler runs in a forked child; at the deadline the parent answers fail-open
    itself and kills the child, even when the child is stuck in C code holding the GIL (without ``fork``: inline,
    with a watchdog thread). Nothing reaches stderr unless ``INTENT_LOOP_DEBUG=1``.

    The cyclic garbage collector stays off for the hook's whole life (a bounded, short-lived process: the verified
    ledger's fresh objects would otherwise be traversed again and again), and once the answer has left (written
    straight to file descriptor 1, unbuffered) the process ends with ``os._exit``: the interpreter's finalization —
    a final collection (~50 ms at 10,000 events before the collector was kept off) and tearing down every module — is
    on the host's wait and protects nothing here: the lock is released and every file closed before the answer is
    written. Measured on the loaded 2-core development machine, 25 interleaved runs: a process that imported what the
    hook's parent imports took 97 ms to exit normally and 76 ms with ``os._exit``.
    """
    started = time.monotonic()
    gc.disable()
    _end_process(_run(argv, started))


def _end_process(code: int) -> NoReturn:
    """Flush Python's own stdout and stderr buffers (the answer itself never passes through them) and end now."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _run(argv: list[str], started: float) -> int:
    env = os.environ
    debug = debug_enabled(env)
    if not debug:
        silence_stderr()
    end = started + deadline_seconds(env) - process_age_s()
    answer = Answer(1)
    problems: list[Exception] = []
    fire_at = end - WATCHDOG_MARGIN_S
    # Read here, before the fork: when the child misses the deadline, this process still has the payload.
    payload = read_stdin(fire_at)
    if payload is None:  # the host never closed stdin in time
        answer.send(FAIL_OPEN_LINE)
        return 0

    def work(detach: Detach) -> bytes:
        line, problem = _handled(argv, io.BytesIO(payload), env, end, debug, detach)
        if problem is not None:
            problems.append(problem)
        return line

    def after_answer() -> None:
        # After the answer has left: logging a problem (a hung disk, say) cannot cost the host anything.
        if problems:
            _log_problem(problems[0], argv, env, debug, payload)
        _warm_catalog(env)

    def late() -> None:
        # The child was killed at the deadline, perhaps before it decided anything (starved of CPU on a loaded
        # machine): leave the content-free observation in the spool for the next writer (docs/HOOKS.md).
        with contextlib.suppress(Exception):
            _spool_late(argv, payload, env)

    if answer_in_child(work, fire_at, send=answer.send, after=after_answer, late=late) is None:
        # no fork here: run inline, with the watchdog thread as the last resort
        watchdog = Watchdog(answer, fire_at).start()
        answer.send(work(lambda _line: False))  # inline, nothing can go on after the answer
        after_answer()
        watchdog.cancel()
    debug_log(debug, f"answered in {1000 * (time.monotonic() - started):.1f} ms")
    return 0


def _warm_catalog(env: Mapping[str, str]) -> None:
    """An ``/intent`` command that found the catalog's rule cache cold redacted with the own rules; a process that
    goes on alone compiles the cache, so the next one uses both layers (intentloop/store/catalog.py)."""
    catalog = sys.modules.get("intentloop.store.catalog")  # loaded only by a command that stores text
    if catalog is not None and catalog.wants_warming():
        _in_background(lambda: catalog.warm_cache(env))


def _spool_late(argv: Sequence[str], payload: bytes, env: Mapping[str, str]) -> None:
    """Spool the observation of a hook whose child missed the deadline (by session: which task it belongs to is
    decided by the writer that records it).

    Raises:
        Exception: anything (the caller ignores it: the host has its answer).
    """
    import_msgspec_alone()
    from intentloop.hooks._dispatch import spool_unanswered
    from intentloop.hooks._payload import FORCED_EVENTS, parse_payload

    forced_arg, data_dir = parse_args(argv)
    if data_dir is not None:
        env = {**env, "INTENT_LOOP_DATA_DIR": data_dir}
    forced = None if forced_arg is None else FORCED_EVENTS[forced_arg]
    spool_unanswered(parse_payload(payload, forced), env)


def _handled(
    argv: Sequence[str], stdin: BinaryIO, env: Mapping[str, str], end: float, debug: bool, detach: Detach
) -> tuple[bytes, Exception | None]:
    """:func:`handle`, with every failure turned into the fail-open line (and returned beside it, for the log)."""
    try:
        line = handle(argv, stdin, env, lock_deadline=end - WRITE_RESERVE_S, debug=debug, detach=detach)
        return line, None
    except Exception as exc:  # the hook's single catch-all: every failure is the fail-open answer
        if debug:
            import traceback

            debug_log(True, f"fail-open after {type(exc).__name__}: {getattr(exc, 'code', '')} {exc}")
            debug_log(True, "".join(traceback.format_exception(exc)).rstrip("\n"))
        return FAIL_OPEN_LINE, exc


def _log_problem(
    problem: Exception, argv: Sequence[str], env: Mapping[str, str], debug: bool, payload: bytes | None = None
) -> None:
    """Write a problem the user can fix to the hook problem log (``hooks/_problems.py``); never raises."""
    try:
        from intentloop.hooks._problems import event_of, record_problem

        data_dir = None
        with contextlib.suppress(UsageError):
            data_dir = parse_args(argv)[1]
        where = record_problem(problem, event=event_of(argv), env=env, data_dir=data_dir, payload=payload)
        if where is not None:
            debug_log(debug, f"problem logged to {where}")
    except Exception:  # the log is best effort; the answer has been sent
        return


__all__ = ["USAGE", "UsageError", "handle", "import_msgspec_alone", "parse_args", "run_hook"]
