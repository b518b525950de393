"""``intentloop serve``: the MCP server over the process's stdin and stdout, under trio.

The SDK's stock ``stdio_server`` reads stdin in a worker thread that cannot be cancelled, so SIGINT with stdin still
open hangs; here trio-native ``FdStream``s carry the wire and every wait is cancellable, so stdin EOF, SIGINT and
SIGTERM all end the process promptly. The wire descriptors are taken before anything else runs and fd 1 is then
pointed at stderr (fd 0 at the null device), so a stray ``print`` can never corrupt JSON-RPC.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from mcp.server import Server

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one JSON-RPC line; a larger one is answered as a parse error and skipped
_READ_CHUNK = 256 * 1024
_FLUSH_GRACE_S = 0.5  # after stdin EOF, how long queued answers may take to reach the client


@dataclass(frozen=True, slots=True)
class WireFds:
    """The private duplicates of the process's original stdin and stdout."""

    read_fd: int
    write_fd: int


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


@dataclass
class _Shutdown:
    """Why serving stopped (for the log and the exit code)."""

    reason: str = "eof"


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # a malformed line is logged (without its content) and skipped; serving goes on
        logger.warning("skipped a line that is not a JSON-RPC message (%s)", type(exc).__name__)
        return exc


async def _read_messages(stream: trio.lowlevel.FdStream, sink: MemoryObjectSendStream[Any]) -> None:
    """Split stdin into lines and hand each parsed message to the server; closing ``sink`` signals EOF."""
    async with sink:
        buffer = bytearray()
        discarding = False
        while True:
            try:
                chunk = await stream.receive_some(_READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            while (newline := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                if discarding or len(line) > MAX_MESSAGE_BYTES:
                    discarding = False
                    logger.warning("skipped a message longer than %d bytes", MAX_MESSAGE_BYTES)
                    await sink.send(ValueError("message too long"))
                elif line.strip():
                    await sink.send(_parse(line))
            if len(buffer) > MAX_MESSAGE_BYTES:
                buffer.clear()
                discarding = True
        if buffer.strip() and not discarding:
            await sink.send(_parse(bytes(buffer)))


async def _write_messages(
    stream: trio.lowlevel.FdStream,
    source: MemoryObjectReceiveStream[Any],
    done: trio.Event,
    stop: trio.CancelScope,
    shutdown: _Shutdown,
) -> None:
    """Write each outgoing message as one line; a client that closed its end stops the server."""
    try:
        async with source:
            async for message in source:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send_all(text.encode("utf-8") + b"\n")
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


async def serve_fds(server: Server[Any], wire: WireFds, *, early: _SignalRecorder | None = None) -> _Shutdown:
    """Serve one MCP connection over ``wire`` until stdin ends, stdout breaks, or SIGINT/SIGTERM arrives.

    Args:
        server: the MCP server.
        wire: the descriptors to read requests from and write answers to (taken over and closed).
        early: signals recorded before serving began; any of them stops the server at once.
    """
    shutdown = _Shutdown()
    inbound_send, inbound_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound_send, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
    stdin = trio.lowlevel.FdStream(wire.read_fd)
    stdout = trio.lowlevel.FdStream(wire.write_fd)
    written = trio.Event()
    async with stdin, stdout, trio.open_nursery() as nursery:
        stop = nursery.cancel_scope
        await nursery.start(_watch_signals, stop, shutdown)
        if early is not None and early.received:
            shutdown.reason = signal.Signals(early.received[0]).name
            stop.cancel()
        nursery.start_soon(_read_messages, stdin, inbound_send)
        nursery.start_soon(_write_messages, stdout, outbound_receive, written, stop, shutdown)
        await server.run(inbound_receive, outbound_send, server.create_initialization_options())
        # stdin ended and the server closed its outbound stream: let queued answers drain, then stop.
        with trio.move_on_after(_FLUSH_GRACE_S):
            await written.wait()
        stop.cancel()
    return shutdown


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("intentloop serve: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


def _default_server() -> Server[Any]:
    from intentloop.mcp.server import build_server
    from intentloop.service import IntentService

    return build_server(IntentService())


def _serve_windows(server: Server[Any]) -> int:
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    _configure_logging()
    anyio.run(main, backend="trio")
    return 0


def serve_stdio(server: Server[Any] | None = None) -> int:
    """Run the intent-loop MCP server on this process's stdin/stdout until EOF, SIGINT or SIGTERM.

    A process entry point: it takes over fds 0 and 1 for good (see :func:`take_wire_fds`).

    Args:
        server: the server to run; by default :func:`~intentloop.mcp.server.build_server` over
            ``intentloop.service.IntentService()``.

    Returns:
        The process exit code: 0 for every orderly end (EOF, a closed stdout, SIGINT, SIGTERM).

    Raises:
        OSError: the standard descriptors could not be duplicated.
    """
    if sys.platform == "win32":  # no FdStream on Windows: fall back to the SDK's thread-based transport
        return _serve_windows(server if server is not None else _default_server())
    wire = take_wire_fds()
    _configure_logging()
    chosen = server if server is not None else _default_server()
    recorder = _SignalRecorder()
    recorder.install()
    shutdown = anyio.run(partial(serve_fds, chosen, wire, early=recorder), backend="trio")
    # Interpreter finalization resets Python-level handlers to the default (a late SIGTERM would kill the exiting
    # process); an ignored disposition survives it.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    logger.debug("stopped: %s", shutdown.reason)
    return 0


__all__ = ["MAX_MESSAGE_BYTES", "WireFds", "serve_fds", "serve_stdio", "take_wire_fds"]
