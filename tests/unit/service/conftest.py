"""A real service over real files in a temporary data root, and small helpers to call it; and, for the hook
operations (``hookops``), a real project whose tasks are written through the store's one write path."""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import IntentLoopError
from intentloop.model import (
    EventDraft,
    SourceRef,
    make_claim,
    new_uuid,
    project_id_for,
    request_fingerprint,
    session_hash,
    utc_now,
)
from intentloop.service.intent_service import IntentService
from intentloop.store import PrivateControl, ProjectStore, canonicalize_project_root

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

    def events(self) -> list[dict[str, Any]]:
        """The ledger's events as stored (decoded JSON lines)."""
        return [json.loads(line) for line in self.ledger_lines()]


@pytest.fixture
def make_harness(tmp_path: Path) -> Callable[..., Harness]:
    """``make_harness(data_root=None)``: a harness on a fresh project directory (the shared data root by default)."""
    counter = iter(range(1000))

    def make(data_root: Path | None = None) -> Harness:
        index = next(counter)
        project = tmp_path / f"project-{index}"
        project.mkdir()
        return Harness(data_root or tmp_path / "data", project)

    return make


@pytest.fixture
def h(make_harness: Callable[..., Harness]) -> Harness:
    """A harness on a fresh project under the test's data root."""
    return make_harness()


class Project:
    """One project root and its store; helpers write valid events the way the service does."""

    def __init__(self, data_root: Path, root: Path) -> None:
        self.data_root = data_root
        self.root = str(root)
        self.store = ProjectStore(data_root, project_id_for(canonicalize_project_root(str(root))))

    def append(self, drafts: Sequence[EventDraft]) -> None:
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.append(list(drafts))

    def claim(self, statement: str, status: str = "explicit", kind: str = "user_event", **kw: Any) -> dict[str, Any]:
        return make_claim(
            claim_id=new_uuid(),
            statement=statement,
            epistemic_status=status,
            source_ref=SourceRef(kind=kind, event_id=new_uuid()),
            scope=kw.pop("scope", "task"),
            facets=kw.pop("facets", ["hard_constraint"]),
            now=utc_now(),
            **kw,
        ).to_wire()

    def start_task(self, session_id: str | None, *, mode: str = "on", claims: Sequence[str] = ()) -> str:
        task_id = new_uuid()
        payload = {
            "mode": mode,
            "label": None,
            "host_session_hash": session_hash(session_id) if session_id is not None else None,
            "initial_claims": [self.claim(s) for s in claims],
            "request_fingerprint": request_fingerprint("start_task", {"task_id": task_id}),
        }
        self.append(
            [
                EventDraft(
                    event_type="task_started", task_id=task_id, actor="user", request_id=new_uuid(), payload=payload
                )
            ]
        )
        return task_id

    def add_claim(self, task_id: str, claim: dict[str, Any]) -> None:
        payload = {"claim": claim, "request_fingerprint": request_fingerprint("claim_added", claim)}
        self.append(
            [
                EventDraft(
                    event_type="claim_added",
                    task_id=task_id,
                    actor=claim["role"],
                    request_id=new_uuid(),
                    payload=payload,
                )
            ]
        )

    def set_mode(self, task_id: str, mode: str) -> None:
        payload = {"mode": mode, "request_fingerprint": request_fingerprint("set_mode", {"mode": mode})}
        self.append(
            [EventDraft(event_type="mode_set", task_id=task_id, actor="user", request_id=new_uuid(), payload=payload)]
        )

    def private_control(self, task_id: str, session_id: str) -> None:
        control = PrivateControl(
            created_at=utc_now(),
            host_session_hash=session_hash(session_id),
            project_id=self.store.project_id,
            task_id=task_id,
        )
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.write_control(control)

    def events(self) -> list[Any]:
        return list(self.store.read().events)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "repo"
    root.mkdir()
    return Project(tmp_path / "data", root)
