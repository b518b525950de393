"""A real service over real files in a temporary data root, and small helpers to call it."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import IntentLoopError
from intentloop.model import project_id_for
from intentloop.service.intent_service import IntentService

_REQUEST_NUMBERS = itertools.count(1)


def user_src(event_id: str = "turn-1", **extra: Any) -> dict[str, Any]:
    return {"kind": "user_event", "event_id": event_id, **extra}


def agent_src(event_id: str = "turn-2", **extra: Any) -> dict[str, Any]:
    return {"kind": "agent_turn", "event_id": event_id, **extra}


class Harness:
    """One project root and one service process-equivalent over a data root."""

    user_src = staticmethod(user_src)
    agent_src = staticmethod(agent_src)

    def __init__(self, data_root: Path, project_root: Path, service: IntentService | None = None) -> None:
        self.data_root = data_root
        self.project_root = str(project_root.resolve())
        self.project_id = project_id_for(self.project_root)
        self.service = service or IntentService(lambda: data_root)

    def restarted(self) -> Harness:
        """The same project seen by a fresh service (a restarted MCP process)."""
        return Harness(self.data_root, Path(self.project_root))

    def other_project(self, root: Path) -> Harness:
        return Harness(self.data_root, root, self.service)

    @property
    def project_dir(self) -> Path:
        return self.data_root / "projects" / self.project_id

    @property
    def ledger(self) -> Path:
        return self.project_dir / "ledger.jsonl"

    def rid(self) -> str:
        return f"req-{next(_REQUEST_NUMBERS)}"

    async def call(self, tool: str, **arguments: Any) -> Any:
        return await self.service.dispatch(tool, arguments, project_root=self.project_root, project_id=self.project_id)

    async def fails(self, code: str, tool: str, **arguments: Any) -> IntentLoopError:
        with pytest.raises(IntentLoopError) as info:
            await self.call(tool, **arguments)
        assert info.value.code == code, (info.value.code, info.value.message)
        return info.value

    async def start(self, *initial: Any, **arguments: Any) -> str:
        arguments.setdefault("request_id", self.rid())
        snap = await self.call("intent_start_task", initial_explicit=list(initial), **arguments)
        return str(snap["task_id"])

    async def explicit(self, task_id: str, statement: str, **arguments: Any) -> dict[str, Any]:
        arguments.setdefault("request_id", self.rid())
        arguments.setdefault("source_ref", user_src())
        arguments.setdefault("facets", ["hard_constraint"])
        arguments.setdefault("confirmation_reason", "direct_statement")
        result: dict[str, Any] = await self.call(
            "intent_add_explicit", task_id=task_id, statement=statement, **arguments
        )
        return result

    async def inferred(self, task_id: str, statement: str, **arguments: Any) -> dict[str, Any]:
        arguments.setdefault("request_id", self.rid())
        arguments.setdefault("source_ref", agent_src())
        arguments.setdefault("facets", ["soft_constraint"])
        arguments.setdefault("confidence", 0.6)
        result: dict[str, Any] = await self.call(
            "intent_add_inference", task_id=task_id, statement=statement, **arguments
        )
        return result

    async def snapshot(self, task_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("intent_get_snapshot", task_id=task_id)
        return result

    def disk_bytes(self) -> bytes:
        """Every byte of every file under the data root, concatenated."""
        chunks = []
        for dirpath, _dirs, files in os.walk(self.data_root):
            for name in files:
                chunks.append((Path(dirpath) / name).read_bytes())
        return b"\n".join(chunks)

    def ledger_lines(self) -> list[bytes]:
        return self.ledger.read_bytes().splitlines()


@pytest.fixture
def make_harness(tmp_path: Path) -> Iterator[Any]:
    counter = iter(range(1000))

    def make(data_root: Path | None = None) -> Harness:
        index = next(counter)
        project = tmp_path / f"project-{index}"
        project.mkdir()
        return Harness(data_root or tmp_path / "data", project)

    yield make


@pytest.fixture
def h(make_harness: Any) -> Harness:
    harness: Harness = make_harness()
    return harness
