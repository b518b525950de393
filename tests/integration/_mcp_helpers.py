"""Shared helpers for the surface tests that drive real ``intentloop serve`` subprocesses with the official MCP client.

Not a test module (the leading underscore keeps pytest from collecting it); test files load it by file path, because
``--import-mode=importlib`` puts no test directory on ``sys.path``. It generalises the ``Session`` of
``test_mcp_tools.py`` to any project root, ``_meta``, server environment and expected error; the ``project`` fixtures
are the ones of ``test_mcp_stdio.py``, shared here (assign them in a test module to use them).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from intentloop.errors import CODES
from intentloop.model import project_id_for

META_KEY = "codex/sandbox-state-meta"
# ``python -m intentloop.mcp`` and the console script are the same server (test_mcp_stdio proves it); both are used.
SERVE_MODULE = [sys.executable, "-m", "intentloop.mcp"]
SERVE_SCRIPT = [str(Path(sys.executable).with_name("intentloop")), "serve"]
_UNSET: Any = object()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory (import it into a test module to use it as a fixture)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    """A second project directory, for isolation checks."""
    root = tmp_path / "other"
    root.mkdir()
    return root


def server(
    data_root: Path | None,
    *,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Client:
    """A legacy-era MCP client over stdio to a fresh server subprocess.

    ``data_root=None`` starts the server with no data-root variable at all (the SDK passes only HOME, PATH and a few
    other safe variables of its own, never ``CODEX_HOME`` or ``PLUGIN_DATA``).
    """
    command = command or SERVE_MODULE
    full_env = dict(env or {})
    if data_root is not None:
        full_env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    if cwd is None:
        cwd = data_root.parent if data_root is not None else Path.cwd()
    params = StdioServerParameters(command=command[0], args=command[1:], env=full_env, cwd=str(cwd))
    return Client(params, mode="legacy")


def source(kind: str, event_id: str) -> dict[str, str]:
    return {"kind": kind, "event_id": event_id}


# Arguments of the three claim-adding tools: a direct user statement, a visible inference, a tool's evidence.
def explicit(task: str, request_id: str, statement: str, event_id: str = "turn-1", **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("user_event", event_id),
        "facets": ["hard_constraint"],
        "confirmation_reason": "direct_statement",
        **extra,
    }


def inference(task: str, request_id: str, statement: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("agent_turn", "turn-2"),
        "facets": ["soft_constraint"],
        "confidence": 0.6,
        **extra,
    }


def evidence(task: str, request_id: str, statement: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("tool_result", "ci-1"),
        "facets": ["result_feedback"],
        **extra,
    }


def statements(snapshot: dict[str, Any]) -> set[str]:
    """The statements of a snapshot's active claims."""
    return {claim["statement"] for claim in snapshot["active_claims"]}


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
        envelope = result.structured_content
        assert isinstance(envelope, dict), result
        assert json.loads(result.content[0].text) == envelope  # type: ignore[union-attr]
        assert result.is_error is (not envelope["ok"]), envelope
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
    "evidence",
    "explicit",
    "files_containing",
    "inference",
    "ledger_events",
    "ledger_path",
    "other_project",
    "project",
    "project_dir",
    "server",
    "source",
    "statements",
]
