"""A linked task's context reaches the host once per session until it changes: real ``intentloop hook`` processes.

The hosts keep every injected copy in the conversation, so the prompt hook leaves out a context that is exactly what
it last injected into the same session (``injected-context.json``, content-free, created empty when a session is
bound to a task). SessionStart injects as before, notes what it injected where that file exists and creates nothing;
compaction (PostCompact) makes the next prompt inject again.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, new_uuid, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root
from intentloop.store._injected import INJECTED_NAME

from _support.linked_task import linked_task_payload

_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]
ONE, TWO = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b", "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5c"


class World:
    """A data root and a project with tasks linked to sessions, and the hook run as a process against them."""

    def __init__(self, tmp: Path) -> None:
        self.data, self.repo = tmp / "data", tmp / "repo"
        self.repo.mkdir()
        self.store = ProjectStore(self.data, project_id_for(canonicalize_project_root(str(self.repo))))
        self.turns = 0

    def link(self, session: str, *statements: str) -> str:
        task_id = new_uuid()
        draft = EventDraft(
            event_type="task_started",
            task_id=task_id,
            actor="user",
            request_id=f"start:{task_id}",
            payload=linked_task_payload(session, statements),
        )
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.append([draft])
        return task_id

    def hook(self, event: str, session: str = ONE, **fields: Any) -> str | None:
        """Run one hook; returns its additional context (``None``: the bare fail-open answer)."""
        payload = {"session_id": session, "cwd": str(self.repo), "hook_event_name": event, **fields}
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "INTENT_LOOP_DATA_DIR": str(self.data),
        }
        proc = subprocess.run(HOOK, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=30)
        assert (proc.returncode, proc.stderr) == (0, b"")
        answer = json.loads(proc.stdout)
        assert answer["continue"] is True
        spec = answer.get("hookSpecificOutput")
        return None if spec is None else str(spec["additionalContext"])

    def prompt(self, text: str = "go on", session: str = ONE) -> str | None:
        self.turns += 1
        return self.hook("UserPromptSubmit", session, turn_id=f"turn-{self.turns}", prompt=text)

    def observed(self) -> int:
        return sum(e.event_type == "source_observed" for e in self.store.read().events)

    def state(self) -> Path:
        return self.store.paths.project_dir / INJECTED_NAME

    def files(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.data)): p.read_bytes() for p in sorted(self.data.rglob("*")) if p.is_file()}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_repeated_prompt_injects_the_context_once_and_every_prompt_is_still_recorded(world: World) -> None:
    task = world.link(ONE, "Use PostgreSQL only")
    first = world.prompt()
    assert first is not None and first.startswith(f"[Intent Loop linked task_id={task}.")
    assert "Use PostgreSQL only" in first
    assert [world.prompt() for _ in range(3)] == [None, None, None]
    assert world.observed() == 4  # leaving the context out never skips the observation


def test_a_new_claim_is_injected_again_once(world: World) -> None:
    world.link(ONE, "Use PostgreSQL only")
    assert world.prompt() is not None and world.prompt() is None
    receipt = world.prompt("/intent remember constraint: Never deploy on a Friday.")
    assert receipt is not None and "[Intent Loop receipt IL-" in receipt  # a command answers with its receipt
    changed = world.prompt()
    assert changed is not None and "Never deploy on a Friday." in changed and "Use PostgreSQL only" in changed
    assert world.prompt() is None


def test_compaction_injects_again(world: World) -> None:
    task = world.link(ONE, "Use PostgreSQL only")
    assert world.prompt() is not None and world.prompt() is None
    packet = world.hook("SessionStart", source="compact")  # SessionStart injects whatever was injected before
    assert packet is not None and packet.startswith(f"[Intent Loop linked task_id={task}.")
    assert world.prompt() is None  # SessionStart remembers nothing: the compaction itself is PostCompact's
    assert world.hook("PostCompact", turn_id="compact-1", trigger="auto") is None
    again = world.prompt()
    assert again is not None and "Use PostgreSQL only" in again
    assert world.prompt() is None


def test_another_session_has_its_own_memory(world: World) -> None:
    world.link(ONE, "Use PostgreSQL only")
    world.link(TWO, "Keep the public API stable")
    assert world.prompt(session=ONE) is not None and world.prompt(session=ONE) is None
    other = world.prompt(session=TWO)
    assert other is not None and "Keep the public API stable" in other
    assert world.prompt(session=TWO) is None and world.prompt(session=ONE) is None


def test_unlinked_sessions_keep_their_hint_and_write_nothing(world: World) -> None:
    world.link(TWO, "Keep the public API stable")  # the project exists; session ONE is not linked to it
    before = world.files()
    hints = [world.prompt(session=ONE) for _ in range(2)]
    assert all(h is not None and "host_session_id=" in h for h in hints)
    assert world.files() == before


def test_the_state_file_is_private_content_free_and_bounded(world: World) -> None:
    world.link(ONE, "Use PostgreSQL only")
    world.link(TWO, "Keep the public API stable")
    world.prompt(session=ONE)
    world.prompt(session=TWO)
    raw = world.state().read_bytes()
    assert stat.S_IMODE(world.state().stat().st_mode) == 0o600
    assert b"PostgreSQL" not in raw and b"API" not in raw and ONE.encode() not in raw
    assert len(json.loads(raw)) == 2


def test_session_start_creates_nothing(world: World) -> None:
    world.link(ONE, "Use PostgreSQL only")
    world.state().unlink()  # the bind created it; without it SessionStart notes nothing and creates nothing
    for source in ("startup", "resume", "clear", "compact"):  # before any prompt: no state file yet
        before = world.files()
        assert world.hook("SessionStart", source=source) is not None
        assert world.files() == before and not world.state().exists()
    world.prompt()
    before = world.files()
    for source in ("startup", "resume", "clear", "compact"):  # what it injected is what the prompt did: unchanged
        assert world.hook("SessionStart", source=source) is not None
        assert world.files() == before


def test_a_resumed_sessions_first_prompt_does_not_repeat_what_session_start_injected(world: World) -> None:
    """Turn 1's prompt ran before the task changed; the resumed session's SessionStart injects the new context and
    notes it, so turn 2's prompt leaves it out (it was injected twice in a row before)."""
    world.link(ONE, "Use PostgreSQL only")
    assert world.prompt() is not None
    world.prompt("/intent remember constraint: Never deploy on a Friday.")
    resumed = world.hook("SessionStart", source="resume")
    assert resumed is not None and "Never deploy on a Friday." in resumed
    assert world.prompt() is None
    world.prompt("/intent remember constraint: Keep the public API stable.")
    packet = world.hook("SessionStart", source="compact")  # the recovery packet is not what a prompt injects
    assert packet is not None and "Keep the public API stable." in packet
    again = world.prompt()  # the control: a context SessionStart did not note is injected by the prompt
    assert again is not None and "Keep the public API stable." in again


def test_a_session_linked_after_its_first_prompt_gets_the_context_once_when_resumed(world: World) -> None:
    """The hosts' own order: turn 1's prompt hook runs before the agent's tool call links the session, so no prompt
    has injected anything; the link creates the (empty) memory, the resumed session's SessionStart injects the
    context and notes it, and turn 2's prompt leaves it out (it was injected twice in a row before)."""
    hint = world.prompt()
    assert hint is not None and "host_session_id=" in hint and not world.state().exists()
    task = world.link(ONE, "Use PostgreSQL only")  # intent_start_task with the session hint, in turn 1
    assert json.loads(world.state().read_bytes()) == []
    resumed = world.hook("SessionStart", source="resume")
    assert resumed is not None and resumed.startswith(f"[Intent Loop linked task_id={task}.")
    assert world.prompt() is None
    other = world.link(TWO, "Keep the public API stable")  # a second bind keeps the first session's memory
    assert other and world.hook("SessionStart", source="resume") is not None and world.prompt() is None


def test_without_the_state_every_prompt_injects(world: World) -> None:
    """A negative control: the memory is what leaves the context out (delete it and the prompt injects)."""
    world.link(ONE, "Use PostgreSQL only")
    assert world.prompt() is not None and world.prompt() is None
    world.state().unlink()
    assert world.prompt() is not None and world.prompt() is None
