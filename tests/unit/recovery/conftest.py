"""Real ledgers on disk for the recovery tests: sealed, hash-chained v1 events written where the store keeps them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from intentloop.model import EventDraft, event_line, new_uuid, seal, sha256_hex
from intentloop.store import ProjectStore


class Project:
    """One project under a temporary data root, with helpers to write and damage its ledger."""

    def __init__(self, data_root: Path, name: str = "project under test") -> None:
        self.data_root = data_root
        self.project_id = sha256_hex(name)
        self.store = ProjectStore(data_root, self.project_id)
        self.dir = data_root / "projects" / self.project_id
        self.ledger = self.dir / "ledger.jsonl"

    def lines(self, count: int, *, tasks: int = 1, candidates: int = 0) -> list[bytes]:
        """``count`` canonical lines: ``tasks`` task_started events, then ``candidates`` hook observations, then
        claims, all chained."""
        task_ids = [new_uuid() for _ in range(tasks)]
        prev: str | None = None
        out: list[bytes] = []
        for index in range(count):
            task = task_ids[min(index, tasks - 1)] if index < tasks else task_ids[index % tasks]
            if index < tasks:
                event_type, payload = "task_started", {"mode": "on", "label": f"task {index}", "initial_claims": []}
            elif index < tasks + candidates:
                event_type = "source_observed"
                candidate = {
                    "candidate_id": new_uuid(),
                    "candidate_type": "prompt_update",
                    "source_ref": {"kind": "user_event", "sha256": sha256_hex(f"turn {index}")},
                    "created_at": "2026-11-30T01:02:03.456Z",
                }
                payload = {"candidate": candidate, "char_count": 3}
            else:
                event_type, payload = "claim_added", {"claim": {"statement": f"claim number {index}"}}
            draft = EventDraft(
                event_type=event_type, task_id=task, actor="user", request_id=f"req-{index}", payload=payload
            )
            event = seal(draft, project_id=self.project_id, prev_hash=prev)
            prev = event.event_hash
            out.append(event_line(event))
        return out

    @staticmethod
    def tamper(line: bytes) -> bytes:
        """The same line with one character of its payload changed: valid JSON, wrong ``event_hash``."""
        assert b"number" in line or b"task " in line
        return line.replace(b"number", b"NUMBER", 1) if b"number" in line else line.replace(b"task ", b"TASK ", 1)

    def write(self, data: bytes) -> bytes:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.ledger.write_bytes(data)
        os.chmod(self.ledger, 0o600)
        return data

    def write_lines(self, count: int, **kwargs: int) -> list[bytes]:
        lines = self.lines(count, **kwargs)
        self.write(b"".join(lines))
        return lines


@pytest.fixture
def project(data_root: Path) -> Project:
    return Project(data_root)


HOLDER = """
import sys
from pathlib import Path
from intentloop.store import ProjectStore
store = ProjectStore(Path(sys.argv[1]), sys.argv[2])
with store.locked(verify=False):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def hold_lock() -> Iterator[Callable[[Project], subprocess.Popen[bytes]]]:
    """Start a live process that holds a project's ledger lock until the test ends (its stdin closes)."""
    holders: list[subprocess.Popen[bytes]] = []

    def start(project: Project) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(project.data_root), project.project_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        holders.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"held"
        return proc

    yield start
    for proc in holders:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.fixture
def new_project(data_root: Path) -> Callable[[str], Project]:
    """Another project under the same data root, by name."""
    return lambda name: Project(data_root, name)
