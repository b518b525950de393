"""The official MCP client against real ``intentloop serve`` subprocesses: how the surface tests start a server and
check every answer.

:func:`server` starts a fresh server for the legacy era, :func:`server_params` gives the parameters for any client
mode, :class:`Surface` calls tools for one project and checks that each answer is a well-formed envelope, and the
``ledger_*``/``files_containing`` helpers read what the server stored. The arguments of the claim-adding tools come from
:mod:`_support.tool_args` (re-exported here).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from intentloop.errors import CODES
from intentloop.model import project_id_for

from _support.tool_args import evidence, explicit, inference, source, statements

META_KEY = "codex/sandbox-state-meta"
# ``python -m intentloop.mcp`` and the console script are the same server (test_mcp_stdio proves it); both are used.
SERVE_MODULE = [sys.executable, "-m", "intentloop.mcp"]
SERVE_SCRIPT = [str(Path(sys.executable).with_name("intentloop")), "serve"]
_UNSET: Any = object()


def server_params(
    data_root: Path | None,
    *,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> StdioServerParameters:
    """How to start a fresh server subprocess over stdio (the data root need not exist: the server creates it).

    ``data_root=None`` starts the server with no data-root variable at all (the SDK passes only HOME, PATH and a few
    other safe variables of its own, never ``CODEX_HOME`` or ``PLUGIN_DATA``).
    """
    command = command or SERVE_MODULE
    full_env = {
        "INTENT_LOOP_CATALOG": os.environ.get("INTENT_LOOP_CATALOG", "on"),
        **(env or {}),
    }  # the suite's setting
    if data_root is not None:
        full_env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    if cwd is None:
        cwd = data_root.parent if data_root is not None else Path.cwd()
    return StdioServerParameters(command=command[0], args=command[1:], env=full_env, cwd=str(cwd))


def server(
    data_root: Path | None,
    *,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Client:
    """A legacy-era MCP client over stdio to a fresh server subprocess (see :func:`server_params`)."""
    return Client(server_params(data_root, command=command, env=env, cwd=cwd), mode="legacy")


def roots_callback(*uris: str) -> Callable[[Any], Any]:
    """A client's ``roots/list`` answer listing ``uris``."""

    async def callback(ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in uris])

    return callback


def envelope_of(result: types.CallToolResult) -> dict[str, Any]:
    """The envelope of a ``tools/call`` result, after checking that the text block and ``isError`` agree with it."""
    envelope = result.structured_content
    assert isinstance(envelope, dict), result
    assert json.loads(result.content[0].text) == envelope  # type: ignore[union-attr]
    assert result.is_error is (not envelope["ok"]), envelope
    return envelope


def error_code(envelope: dict[str, Any]) -> str:
    """The code of a failed envelope (asserts that it failed)."""
    assert envelope["ok"] is False, envelope
    return str(envelope["error"]["code"])


class Surface:
    """Tool calls for one project (``project_root`` argument) that check every answer is a well-formed envelope."""

    def __init__(self, client: Client, project: Path | None) -> None:
        self.client = client
        self.project = project
        self.project_id = None if project is None else project_id_for(str(project.resolve()))

    def on(self, project: Path | None) -> Surface:
        """The same server, calls about another project (``None``: no ``project_root`` argument)."""
        return Surface(self.client, project)

    async def call(self, tool: str, arguments: dict[str, Any], *, meta: Any = _UNSET) -> dict[str, Any]:
        if self.project is not None and "project_root" not in arguments:
            arguments = {"project_root": str(self.project), **arguments}
        if meta is _UNSET:
            result = await self.client.call_tool(tool, arguments)
        else:
            result = await self.client.call_tool(tool, arguments, meta=meta)
        envelope = envelope_of(result)
        assert envelope["operation"] == tool and envelope["schema_version"] == 1, envelope
        return envelope

    async def ok(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
        envelope = await self.call(tool, arguments, **kwargs)
        assert envelope["ok"] is True, (tool, arguments, envelope)
        if self.project_id is not None and "meta" not in kwargs:
            assert envelope["project_id"] == self.project_id, envelope
        return envelope["result"]

    async def fail(self, tool: str, arguments: dict[str, Any], code: str, **kwargs: Any) -> dict[str, Any]:
        """Call and expect failure with ``code`` and the code's documented retryability; returns the error."""
        envelope = await self.call(tool, arguments, **kwargs)
        assert envelope["ok"] is False, (tool, code, envelope)
        assert "result" not in envelope, envelope
        error = envelope["error"]
        assert error["code"] == code, (tool, arguments, error)
        assert error["retryable"] is CODES[code], error
        assert isinstance(error["message"], str) and error["message"], error
        return dict(error)


def project_dir(data_root: Path, project: Path) -> Path:
    return data_root / "projects" / project_id_for(str(project.resolve()))


def ledger_path(data_root: Path, project: Path) -> Path:
    return project_dir(data_root, project) / "ledger.jsonl"


def ledger_events(data_root: Path, project: Path) -> list[dict[str, Any]]:
    path = ledger_path(data_root, project)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def files_containing(root: Path, *needles: str) -> dict[str, list[str]]:
    """Every regular file under ``root`` (walked without following links) whose bytes hold a needle, by needle.

    Needles are searched as UTF-8 and as they would appear JSON-escaped, so a stored copy cannot hide behind
    escaping. Also asserts the walk saw at least one file, so an empty or wrong root cannot pass vacuously.
    """
    forms = {needle: {needle.encode(), json.dumps(needle)[1:-1].encode()} for needle in needles}
    hits: dict[str, list[str]] = {needle: [] for needle in needles}
    seen = 0
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if not path.is_file() or path.is_symlink():
                continue
            seen += 1
            data = path.read_bytes()
            for needle, encoded in forms.items():
                if any(form in data for form in encoded):
                    hits[needle].append(str(path.relative_to(root)))
    assert seen, f"no file under {root}"
    return {needle: paths for needle, paths in hits.items() if paths}


__all__ = [
    "META_KEY",
    "SERVE_MODULE",
    "SERVE_SCRIPT",
    "Surface",
    "envelope_of",
    "error_code",
    "evidence",
    "explicit",
    "files_containing",
    "inference",
    "ledger_events",
    "ledger_path",
    "project_dir",
    "roots_callback",
    "server",
    "server_params",
    "source",
    "statements",
]
