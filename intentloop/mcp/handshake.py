"""``intentloop serve``'s first moments: a blocking loop answers the handshake while trio is still being imported.

Why: a host waits a bounded time for a new server's tool list (Codex sends its first turn after 1 s, with or without
our tools), and importing trio is most of a trio server's start: ~90 ms on a quiet 2-core machine, 0.3–0.5 s with four
busy processes beside it. This loop needs only msgspec and the tool catalog. It answers ``initialize``, ``ping``,
``server/discover`` and the three list methods (tools, resources, resource templates) the moment they arrive, while
a background thread imports trio, the server and the service. Two things end this phase: the trio server being
ready while the client is quiet (the usual end, a few hundred milliseconds after spawn, so the server can verify the
project's ledger in the background before the first call), or a message the loop does not answer itself — a tool
call, a resource read, a batch, anything malformed or unusual — which then waits for the import. Either way the
connection is handed over to the trio server (:func:`intentloop.mcp.stdio.serve_opened`) with the negotiated era,
revision and client capabilities and every byte not yet handled, which the trio server answers exactly as if it had
served from the start. Answers come from :mod:`intentloop.mcp.answers`, which the trio server uses too: both give the
same bytes.

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

import msgspec

from intentloop.mcp.answers import (
    discover_result,
    encode_message,
    initialize_result,
    listing,
    ordered,
    result_message,
    tools,
    valid_id,
)
from intentloop.mcp.protocol import (
    MODERN_VERSIONS,
    REVISIONS,
    ProtocolError,
    Revision,
    check_modern_envelope,
    has_modern_envelope,
    negotiate,
)

if TYPE_CHECKING:
    from intentloop.mcp.server import McpServer

_READ_CHUNK: Final = 256 * 1024
# A longer unfinished line goes to the trio server, which reads it to its end (or skips it as too long).
_FRONT_MAX_LINE: Final = 1024 * 1024
_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
_FRONT_SWITCH_INTERVAL_S: Final = 0.001
_decoder = msgspec.json.Decoder()


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
    """What the front loop settled before handing the connection over.

    Attributes:
        revision: the handshake era's negotiated revision (``None`` before ``initialize``).
        modern: a request carrying the 2026-07-28 envelope was answered, so the connection is in the modern era.
        client_capabilities: the capabilities the client declared in ``initialize``.
        pending: the bytes the front loop did not handle, from the first message it left to the trio server.
    """

    __slots__ = ("client_capabilities", "modern", "pending", "revision")

    def __init__(self) -> None:
        self.revision: Revision | None = None
        self.modern = False
        self.client_capabilities: dict[str, Any] = {}
        self.pending = b""


class HandOver:
    """The answer of :func:`answer_early` for a message the trio server must handle."""


HAND_OVER: Final = HandOver()


def answer_early(message: Any, opening: Opening) -> dict[str, Any] | HandOver | None:
    """The front loop's answer to one decoded message: the answer, ``None`` when none is owed, or :data:`HAND_OVER`.

    Only the answers the trio server would give in the same state come from here; ``opening`` is updated only when
    the message is fully handled, so a handed-over message finds the state it was sent in.
    """
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return HAND_OVER
    method: str = message["method"]
    if "id" not in message:
        return None  # a notification: with nothing in flight yet, none of them asks anything of the server
    request_id = message["id"]
    params = message.get("params")
    if not valid_id(request_id) or (params is not None and not isinstance(params, dict)):
        return HAND_OVER
    if opening.revision is None and not opening.modern:
        if method == "initialize":
            if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
                return HAND_OVER
            revision = negotiate(params["protocolVersion"])
            capabilities = params.get("capabilities")
            opening.revision = revision
            opening.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
            return result_message(request_id, initialize_result(revision))
        if not has_modern_envelope(params):
            return result_message(request_id, {}) if method == "ping" else HAND_OVER
        return _answer_modern(request_id, method, params, opening)
    if opening.modern:
        return HAND_OVER if method == "initialize" else _answer_modern(request_id, method, params, opening)
    negotiated = opening.revision
    assert negotiated is not None
    result = {} if method == "ping" else listing(method, negotiated)
    if result is None or has_modern_envelope(params):
        return HAND_OVER
    return result_message(request_id, ordered(result, negotiated, method))


def _answer_modern(request_id: int | str, method: str, params: Any, opening: Opening) -> dict[str, Any] | HandOver:
    try:
        revision, _ = check_modern_envelope(params)
    except ProtocolError:
        return HAND_OVER
    result = discover_result() if method == "server/discover" else listing(method, revision)
    if result is None:
        return HAND_OVER
    opening.modern = True
    return result_message(request_id, ordered(result, revision, method))


def answer_front(
    wire: WireFds, opening: Opening, idle: Callable[[], None] = lambda: None, ready_fd: int | None = None
) -> bool:
    """Answer what needs no trio, in arrival order, until a message must be handed over, the trio server is ready, or
    the client is gone.

    ``idle`` runs each time the loop has answered everything it has read and is about to wait for more; ``ready_fd``
    becomes readable once the trio server can take over: the loop then hands over at its next wait for input.

    Returns:
        ``True`` to hand over (``opening.pending`` holds the bytes not handled), ``False`` at stdin EOF or when the
        client no longer reads stdout.
    """
    buffer = bytearray()
    searched = 0
    while True:
        newline = buffer.find(b"\n", searched)
        while newline >= 0:
            line = bytes(buffer[:newline]).rstrip(b"\r")
            if line.strip():
                try:
                    answer = answer_early(_decoder.decode(line), opening)
                except msgspec.DecodeError:
                    answer = HAND_OVER
                if isinstance(answer, HandOver):
                    opening.pending = bytes(buffer)
                    return True
                if answer is not None:
                    try:
                        _write_all(wire.write_fd, encode_message(answer))
                    except OSError:  # a closed pipe: the client is gone
                        return False
            del buffer[: newline + 1]
            newline = buffer.find(b"\n")
        if len(buffer) > _FRONT_MAX_LINE:
            opening.pending = bytes(buffer)
            return True
        searched = len(buffer)
        idle()
        try:
            if ready_fd is not None and wire.read_fd not in select.select([wire.read_fd, ready_fd], [], [])[0]:
                opening.pending = bytes(buffer)  # the trio server is ready and the client is quiet
                return True
            chunk = os.read(wire.read_fd, _READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            if buffer.strip():  # a last line without its newline: the trio server answers it
                opening.pending = bytes(buffer)
                return True
            return False
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
    ``tools/list`` left ~25 ms after ``initialize``, on a loaded machine 2 cores).
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
        revision = self._opening.revision or (REVISIONS[MODERN_VERSIONS[-1]] if self._opening.modern else None)
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
    "answer_early",
    "answer_front",
    "serve_stdio",
    "take_wire_fds",
]
