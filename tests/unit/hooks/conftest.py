"""A real project under a temporary data root, with tasks written through the store's one write path."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

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
from intentloop.store import PrivateControl, ProjectStore, canonicalize_project_root


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
