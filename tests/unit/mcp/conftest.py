"""Fixtures for the MCP adapter's unit tests: a recording fake service, a canonicalizer and in-memory connections."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio

from intentloop.errors import IntentLoopError
from intentloop.mcp.server import McpServer, build_server


def load_memory_helpers() -> ModuleType:
    """``tests/unit/mcp/_memory.py``, loaded once by file path."""
    name = "intentloop_tests_mcp_memory"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_memory.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


TASK_ID = "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a"


def fake_canonicalize(raw: str) -> str:
    """What the store's canonicalizer promises: absolute, existing directory, realpath; else PROJECT_ROOT_INVALID."""
    if not os.path.isabs(raw) or not os.path.isdir(raw):
        raise IntentLoopError("project root must be an absolute existing directory", code="PROJECT_ROOT_INVALID")
    return os.path.realpath(raw)


class FakeService:
    """Records every dispatch; answers with a canned result or raises what it was told to."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.result: Any = {"task_id": TASK_ID, "answer": 42}
        self.raises: BaseException | None = None

    async def run(self, tool: str, args: Any, *, project_root: str, project_id: str) -> Any:
        call = {"tool": tool, "arguments": args, "project_root": project_root, "project_id": project_id}
        self.calls.append(call)
        await trio.lowlevel.checkpoint()
        if self.raises is not None:
            raise self.raises
        return self.result


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def make_server(service: FakeService) -> Callable[..., McpServer]:
    def make(**options: Any) -> McpServer:
        options.setdefault("canonicalize", fake_canonicalize)
        return build_server(service, **options)

    return make


@pytest.fixture
def server(make_server: Callable[..., McpServer]) -> McpServer:
    return make_server()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    return root


@pytest.fixture
def raw() -> Callable[..., Any]:
    """``raw(server)``: an async context manager yielding an initialized raw JSON-RPC session."""
    return load_memory_helpers().raw_session  # type: ignore[no-any-return]


@pytest.fixture
def connect() -> Callable[[McpServer], Any]:
    """``connect(server)``: the transport to hand ``mcp.Client`` to reach ``server`` in memory."""
    return load_memory_helpers().MemoryTransport  # type: ignore[no-any-return]
