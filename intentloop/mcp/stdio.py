"""``intentloop serve``: the MCP server over the process's stdin and stdout, under trio.

Trio-native ``FdStream``s carry the wire, so every wait is cancellable and stdin EOF, SIGINT and SIGTERM end the process
promptly (within ~0.1 s, whatever is in flight: an answer still being computed when the client has gone is abandoned
through trio cancellation, which the store's write path survives without a half-written byte). The wire descriptors
are taken before anything else runs and fd 1 is then pointed at stderr (fd 0 at the null device), so a stray ``print``
can never corrupt JSON-RPC. Nothing here imports the service: it loads in a worker thread once a client has spoken.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
from functools import partial
from typing import Any

import trio

from intentloop.mcp.handshake import Opening, WireFds, take_wire_fds
from intentloop.mcp.protocol import PARSE_ERROR
from intentloop.mcp.server import Connection, McpServer, encode_message

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one JSON-RPC line; a larger one is answered as a parse error and skipped
_READ_CHUNK = 256 * 1024
_EOF_GRACE_S = 0.08  # after stdin EOF, how long requests in flight may take to finish and answer
_FLUSH_GRACE_S = 0.05  # then how long queued answers may take to reach the client


class _Shutdown:
    """Why serving stopped (for the log)."""

    def __init__(self) -> None:
        self.reason = "eof"


async def read_lines(
    stream: trio.abc.ReceiveStream, connection: Connection, nursery: trio.Nursery, *, pending: bytes = b""
) -> None:
    """Split the client's bytes into lines and hand each to ``connection`` until EOF (or a broken pipe).

    ``pending`` are bytes read before (by the front loop, :mod:`intentloop.mcp.handshake`): they come first.
    """
    buffer = bytearray(pending)
    discarding = False
    start = 0
    while True:
        newline = buffer.find(b"\n", start)
        while newline >= 0:
            line = bytes(buffer[:newline]).rstrip(b"\r")
            del buffer[: newline + 1]
            if discarding or len(line) > MAX_MESSAGE_BYTES:
                discarding = False
                await _too_long(connection)
            elif line.strip():
                await connection.receive(line, nursery)
            newline = buffer.find(b"\n")
        if len(buffer) > MAX_MESSAGE_BYTES:
            buffer.clear()
            discarding = True
        try:
            chunk = await stream.receive_some(_READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            break
        start = len(buffer)
        buffer += chunk
    if buffer.strip() and not discarding:
        await connection.receive(bytes(buffer).rstrip(b"\r"), nursery)


async def _too_long(connection: Connection) -> None:
    logger.warning("skipped a message longer than %d bytes", MAX_MESSAGE_BYTES)
    await connection.send(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": PARSE_ERROR, "message": f"Parse error: message longer than {MAX_MESSAGE_BYTES} bytes"},
        }
    )


async def _write_lines(
    stream: trio.abc.SendStream,
    lines: trio.MemoryReceiveChannel[bytes],
    done: trio.Event,
    stop: trio.CancelScope,
    shutdown: _Shutdown,
) -> None:
    """Write each outgoing line; a client that closed its end stops the server."""
    try:
        async with lines:
            async for line in lines:
                await stream.send_all(line)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        shutdown.reason = "stdout closed"
        stop.cancel()
    finally:
        done.set()


async def _watch_signals(
    stop: trio.CancelScope, shutdown: _Shutdown, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        task_status.started()
        async for signum in received:
            shutdown.reason = signal.Signals(signum).name
            stop.cancel()
            return


class _SignalRecorder:
    """A plain signal handler that only records SIGINT/SIGTERM.

    Installed before trio starts: trio's signal receiver replaces it while serving and restores it afterwards, so a
    signal that arrives just before serving starts still stops the server, and one that arrives while the server is
    winding down (Claude Code sends SIGINT, then SIGTERM ~100 ms later) cannot turn an orderly exit into a kill.
    """

    def __init__(self) -> None:
        self.received: list[int] = []

    def __call__(self, signum: int, frame: object) -> None:
        self.received.append(signum)

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self)


async def serve_streams(
    server: McpServer,
    receive: trio.abc.ReceiveStream,
    send: trio.abc.SendStream,
    *,
    early: _SignalRecorder | None = None,
    watch_signals: bool = True,
    opening: Opening | None = None,
) -> str:
    """Serve one MCP connection until the input ends, the output breaks, or SIGINT/SIGTERM arrives.

    Args:
        server: the MCP server.
        receive: the client's requests, newline-delimited.
        send: where the answers go, one line each.
        early: signals recorded before serving began; any of them stops the server at once.
        watch_signals: stop on SIGINT/SIGTERM (only possible in the main thread).
        opening: the front loop's session (:mod:`intentloop.mcp.handshake`), the decision it left and the bytes it did
            not read as lines.

    Returns:
        Why serving stopped: ``"eof"``, ``"stdout closed"``, ``"SIGINT"`` or ``"SIGTERM"``.
    """
    shutdown = _Shutdown()
    outbound_send, outbound_receive = trio.open_memory_channel[bytes](math.inf)
    written = trio.Event()

    async def send_message(message: Any) -> None:
        # After serving is over (the channel is closed) the client will not read this answer: drop it.
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            outbound_send.send_nowait(encode_message(message))

    connection = Connection(server, send_message, opening.session if opening is not None else None)
    async with trio.open_nursery() as nursery:
        stop = nursery.cancel_scope
        if watch_signals:
            await nursery.start(_watch_signals, stop, shutdown)
        if early is not None and early.received:
            shutdown.reason = signal.Signals(early.received[0]).name
            stop.cancel()
        nursery.start_soon(_write_lines, send, outbound_receive, written, stop, shutdown)
        async with trio.open_nursery() as requests:
            if opening is not None:  # the decision the front loop left, then the bytes after it
                await connection.carry_out(opening.decision, requests)
            await read_lines(receive, connection, requests, pending=opening.pending if opening is not None else b"")
            with trio.move_on_after(_EOF_GRACE_S):
                await connection.wait_idle()
            connection.cancel_all()
        outbound_send.close()
        with trio.move_on_after(_FLUSH_GRACE_S):
            await written.wait()
        stop.cancel()
    return shutdown.reason


async def serve_fds(
    server: McpServer, wire: WireFds, *, early: _SignalRecorder | None = None, opening: Opening | None = None
) -> str:
    """Serve one connection over ``wire`` (the descriptors are taken over and closed); see :func:`serve_streams`."""
    stdin = trio.lowlevel.FdStream(wire.read_fd)
    stdout = trio.lowlevel.FdStream(wire.write_fd)
    async with stdin, stdout:
        return await serve_streams(server, stdin, stdout, early=early, opening=opening)


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("intentloop serve: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


class _ThreadStdin(trio.abc.ReceiveStream):
    """stdin read in an abandonable worker thread, for platforms without ``FdStream`` (Windows)."""

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        read = sys.stdin.buffer.read1  # type: ignore[union-attr]
        return await trio.to_thread.run_sync(read, max_bytes or _READ_CHUNK, abandon_on_cancel=True)

    async def aclose(self) -> None:
        return None


class _ThreadStdout(trio.abc.SendStream):
    """stdout written in a worker thread, for platforms without ``FdStream`` (Windows)."""

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        def write() -> None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()

        await trio.to_thread.run_sync(write)

    async def wait_send_all_might_not_block(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def serve_stdio(server: McpServer | None = None) -> int:
    """Run the MCP server on this process's stdin/stdout; see :func:`intentloop.mcp.handshake.serve_stdio`."""
    from intentloop.mcp.handshake import serve_stdio as _serve_stdio

    return _serve_stdio(server)


def serve_opened(server: McpServer | None, wire: WireFds, opening: Opening) -> int:
    """Serve on trio the connection whose handshake the front loop answered, until EOF, SIGINT or SIGTERM.

    Args:
        server: the server; by default :class:`~intentloop.mcp.server.McpServer` over
            ``intentloop.service.IntentService()``.
        wire: the descriptors :func:`~intentloop.mcp.handshake.take_wire_fds` took.
        opening: the front loop's session, the decision it left to this server and the bytes not yet read as lines.

    Returns:
        The process exit code: 0 for every orderly end (EOF, a closed stdout, SIGINT, SIGTERM).
    """
    chosen = server if server is not None else McpServer(warm_root=_working_directory())
    _configure_logging()
    recorder = _SignalRecorder()
    recorder.install()
    reason = trio.run(partial(serve_fds, chosen, wire, early=recorder, opening=opening))
    logger.debug("stopped: %s", reason)
    return 0


def _working_directory() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # removed since the host started us
        return None


def serve_threads(server: McpServer | None = None) -> int:
    """Serve on trio over ``sys.stdin``/``sys.stdout`` read and written in worker threads (Windows: no FdStream)."""
    _configure_logging()
    chosen = server if server is not None else McpServer(warm_root=_working_directory())
    trio.run(serve_streams, chosen, _ThreadStdin(), _ThreadStdout())
    return 0


__all__ = [
    "MAX_MESSAGE_BYTES",
    "WireFds",
    "read_lines",
    "serve_fds",
    "serve_opened",
    "serve_stdio",
    "serve_streams",
    "serve_threads",
    "take_wire_fds",
]
