"""``intentloop serve``'s first moments: a blocking loop answers the handshake while trio is still being imported.

Why: a host waits a bounded time for a new server's tool list (Codex sends its first turn after 1 s, with or without
our tools), and importing trio is most of a trio server's start: ~90 ms on a quiet 2-core machine, 0.3–0.5 s with four
busy processes beside it. This loop needs only msgspec and the tool catalog. It feeds each line to the connection's
:class:`~intentloop.mcp.session.Session` and writes every answer the session gives by itself (``initialize``, ``ping``,
``server/discover``, the three list methods, every protocol error) the moment the line arrives, while a background
thread imports trio, the server and the service. Two things end this phase: the trio server being ready after the
tools were listed, while the client is quiet (the usual end, a few hundred milliseconds after spawn, so the server can
verify the project's ledger in the background before the first call; waiting for the tool list keeps the answer the
host waits for on the fast path, whatever the load), or a decision the loop cannot carry out — a tool call, a resource
read, a batch — which then waits for the import. Either way the trio server
(:func:`intentloop.mcp.stdio.serve_opened`) goes on with the same session, carries out the decision left to it, then
reads the bytes after it: one set of rules decides every answer, whichever loop writes it.

Stopping: closing stdin or SIGINT/SIGTERM ends the process at once in this phase. The background thread starts with
those signals blocked, so the kernel delivers them to the main thread, whose blocking read they interrupt; when the
thread is still importing, the process leaves through ``os._exit(0)`` rather than wait for it. Nothing is in flight
here, so nothing can be lost.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from intentloop.mcp.answers import encode_message, tools
from intentloop.mcp.protocol import MODERN_VERSIONS, REVISIONS
from intentloop.mcp.session import Cancel, Decision, Ready, Reply, Response, Session

if TYPE_CHECKING:
    from intentloop.mcp.server import McpServer

_READ_CHUNK: Final = 256 * 1024
# A longer unfinished line goes to the trio server, which reads it to its end (or skips it as too long).
_FRONT_MAX_LINE: Final = 1024 * 1024
_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
_FRONT_SWITCH_INTERVAL_S: Final = 0.001


class WireFds:
    """The private duplicates of the process's original stdin and stdout."""

    __slots__ = ("read_fd", "write_fd")

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd


def take_wire_fds() -> WireFds:
    """Duplicate fds 0 and 1 for the wire, then divert fd 1 to stderr and fd 0 to the null device.

    After this, anything that writes to fd 1 (``print``, a child process, a C library) lands on stderr, and anything
    that reads fd 0 reads EOF: only the transport touches the client's pipes. The duplicates are close-on-exec.

    Raises:
        OSError: a descriptor could not be duplicated.
    """
    sys.stdout.flush()
    wire = WireFds(read_fd=os.dup(0), write_fd=os.dup(1))
    os.dup2(2, 1)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null_fd, 0)
    finally:
        os.close(null_fd)
    return wire


class Opening:
    """What the front loop leaves to the trio server.

    Attributes:
        session: the session the front loop drove (era, revision, client capabilities, requests in flight).
        decision: the session's decision the front loop could not carry out (a tool call, a resource read, a batch),
            which the trio server carries out first; ``None`` when it hands over between messages.
        pending: the bytes not yet read as lines (after ``decision``'s line).
        listed: the front loop answered ``tools/list``: from then on it hands over as soon as the trio server is ready.
    """

    __slots__ = ("decision", "listed", "pending", "session")

    def __init__(self) -> None:
        self.session = Session()
        self.decision: Decision = None
        self.pending = b""
        self.listed = False


class HandOver:
    """What :func:`carry_out` returns for a decision the trio server must carry out."""


HAND_OVER: Final = HandOver()


def carry_out(decision: Decision, opening: Opening) -> dict[str, Any] | list[dict[str, Any]] | HandOver | None:
    """What the front loop writes for ``decision``, ``None`` when nothing is owed, or :data:`HAND_OVER` when the
    decision needs the trio server (a tool call, a resource read, a batch answered concurrently, an answer whose
    failure must be logged)."""
    if decision is None or isinstance(decision, Cancel | Response):
        return None  # nothing is in flight and no request of ours waits for an answer in this phase
    if isinstance(decision, Reply):
        return decision.message
    if isinstance(decision, Ready) and decision.failure is None:
        opening.session.finished(decision.request_id)
        opening.listed = opening.listed or decision.method == "tools/list"
        return decision.message
    return HAND_OVER


def answer_front(
    wire: WireFds, opening: Opening, idle: Callable[[], None] = lambda: None, ready_fd: int | None = None
) -> bool:
    """Answer what needs no trio, in arrival order, until a message must be handed over, the trio server is ready, or
    the client is gone.

    ``idle`` runs each time the loop has answered everything it has read and is about to wait for more; ``ready_fd``
    becomes readable once the trio server can take over: the loop then hands over at its next wait for input.

    Returns:
        ``True`` to hand over (``opening.decision`` and ``opening.pending`` hold what is left), ``False`` at stdin EOF
        or when the client no longer reads stdout.
    """
    buffer = bytearray()
    searched = 0
    at_eof = False
    while True:
        newline = buffer.find(b"\n", searched)
        if at_eof and newline < 0 and buffer.strip():
            newline = len(buffer)  # a last line without its newline is still a line
        while newline >= 0:
            line = bytes(buffer[:newline]).rstrip(b"\r")
            del buffer[: newline + 1]
            if line.strip():
                decision = opening.session.receive_line(line)
                answer = carry_out(decision, opening)
                if isinstance(answer, HandOver):
                    opening.decision = decision
                    opening.pending = bytes(buffer)
                    return True
                if answer is not None:
                    try:
                        _write_all(wire.write_fd, encode_message(answer))
                    except OSError:  # a closed pipe: the client is gone
                        return False
            newline = buffer.find(b"\n")
        if at_eof:
            return False
        if len(buffer) > _FRONT_MAX_LINE:
            opening.pending = bytes(buffer)
            return True
        searched = len(buffer)
        idle()
        try:
            watched = [wire.read_fd, ready_fd] if ready_fd is not None and opening.listed else None
            if watched is not None and wire.read_fd not in select.select(watched, [], [])[0]:
                opening.pending = bytes(buffer)  # the tools are listed, the trio server is ready, the client quiet
                return True
            chunk = os.read(wire.read_fd, _READ_CHUNK)
        except OSError:
            chunk = b""
        at_eof = not chunk
        buffer += chunk


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Stopped(BaseException):
    """SIGINT or SIGTERM arrived while the front loop was serving."""


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


class _Preparing:
    """The background thread that imports the trio server, then the service, while the front loop answers.

    It starts the first time the front loop waits for input, not at spawn: the client's first request is usually in
    the pipe by then, and answering it, then building the tool list of the negotiated revision, before the thread
    competes for the interpreter lock keeps both answers ahead of the import (with the thread started at spawn,
    ``tools/list`` left ~25 ms after ``initialize`` on a loaded 2-core machine).
    """

    def __init__(self, opening: Opening) -> None:
        self.server_ready = threading.Event()
        # Readable once the trio server is imported (or its import failed): the front loop then hands over.
        self.ready_fd, self._ready_write_fd = os.pipe()
        self.failure: BaseException | None = None
        self._opening = opening
        self._thread = threading.Thread(target=self._run, name="intentloop-prepare", daemon=True)
        self._switch_interval = sys.getswitchinterval()

    def start(self) -> None:
        """Start the thread (once) with SIGINT/SIGTERM blocked in it, so they always reach the main thread."""
        if self._thread.ident is not None:
            return
        session = self._opening.session
        revision = session.revision or (REVISIONS[MODERN_VERSIONS[-1]] if session.modern else None)
        if revision is not None:
            tools(revision)  # built now, so the tools/list that follows initialize is only encoded
        # The main thread gets the interpreter lock back within 1 ms (not 5) whenever an answer is due.
        sys.setswitchinterval(_FRONT_SWITCH_INTERVAL_S)
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            self._thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)

    def _run(self) -> None:
        try:
            importlib.import_module("intentloop.mcp.stdio")
        except BaseException as exc:  # re-raised in the main thread at the hand-over
            self.failure = exc
        finally:
            os.write(self._ready_write_fd, b"\0")
            self.server_ready.set()
        # The server imports the service again in a worker thread and reports a failure to every call.
        with contextlib.suppress(Exception):
            importlib.import_module("intentloop.service.intent_service")

    def wait_for_server(self) -> None:
        """Start the thread if need be and return once the trio server can be imported.

        Raises:
            BaseException: whatever importing it raised.
        """
        self.start()
        self.server_ready.wait()
        sys.setswitchinterval(self._switch_interval)
        for fd in (self.ready_fd, self._ready_write_fd):
            os.close(fd)
        if self.failure is not None:
            raise self.failure

    def is_alive(self) -> bool:
        return self._thread.is_alive()


def serve_stdio(server: McpServer | None = None) -> int:
    """Run the intent-loop MCP server on this process's stdin/stdout until EOF, SIGINT or SIGTERM.

    A process entry point: it takes over fds 0 and 1 for good (see :func:`take_wire_fds`), answers the handshake
    before trio is imported (see the module docstring), then serves on trio.

    Args:
        server: the trio server to hand over to; by default :class:`~intentloop.mcp.server.McpServer` over
            ``intentloop.service.IntentService()``.

    Returns:
        The process exit code: 0 for every orderly end (EOF, a closed stdout, SIGINT, SIGTERM). When the end comes
        while the background import is still running, the process exits at once with 0 (``os._exit``).

    Raises:
        OSError: the standard descriptors could not be duplicated.
    """
    if sys.platform == "win32":  # no blocking front loop without FdStream: serve on trio from the start
        from intentloop.mcp.stdio import serve_threads

        return serve_threads(server)
    wire = take_wire_fds()
    opening = Opening()
    preparing = _Preparing(opening)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_stopped)
    try:
        if not answer_front(wire, opening, idle=preparing.start, ready_fd=preparing.ready_fd):
            return _leave(preparing)
        preparing.wait_for_server()
        from intentloop.mcp.stdio import serve_opened

        code = serve_opened(server, wire, opening)  # replaces the raising handlers before trio starts
    except _Stopped:
        return _leave(preparing)
    return _leave(preparing, code)


def _leave(preparing: _Preparing, code: int = 0) -> int:
    # Interpreter finalization resets Python-level handlers to the default (a late SIGTERM would kill the exiting
    # process); an ignored disposition survives it.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if preparing.is_alive():  # still importing: do not wait for it
        sys.stderr.flush()
        os._exit(code)
    return code


__all__ = [
    "HAND_OVER",
    "HandOver",
    "Opening",
    "WireFds",
    "answer_front",
    "carry_out",
    "serve_stdio",
    "take_wire_fds",
]
