"""``intentloop hook`` as a real process fed Gemini CLI's payloads: SessionStart (``source``), BeforeAgent (``prompt``,
in headless mode after SessionStart's ``<hook_context>`` block), AfterAgent (``prompt``, ``prompt_response``) and
SessionEnd (``reason``). Each answer is one JSON line with ``continue: true``, exit 0, named with Gemini's event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, association_context, new_uuid, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root

from _support.linked_task import linked_task_payload

SESSION = "7d0c5a1e-93b2-4f4e-8a61-2c3d4e5f6a7b"
FAIL_OPEN = {"continue": True, "suppressOutput": True}
_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]


class Env:
    """A temporary data root and project, and the hook run against them as Gemini runs it."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.data = tmp / "data"
        self.repo = tmp / "repo"
        self.repo.mkdir()
        self.store = ProjectStore(self.data, project_id_for(canonicalize_project_root(str(self.repo))))

    def payload(self, event: str, **fields: Any) -> dict[str, Any]:
        base = {
            "session_id": SESSION,
            "transcript_path": str(self.home / "chats" / "session.json"),
            "cwd": str(self.repo),
            "hook_event_name": event,
            "timestamp": "2026-12-02T18:00:00.000Z",
        }
        return {**base, **fields}

    def answer(self, payload: dict[str, Any], *args: str) -> dict[str, Any]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        env.update({"GEMINI_PROJECT_DIR": str(self.repo), "GEMINI_SESSION_ID": SESSION})
        done = subprocess.run(
            [*HOOK, *args, "--data-dir", str(self.data)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            timeout=10,
            check=False,
        )
        assert done.returncode == 0 and done.stderr == b""
        assert done.stdout.endswith(b"\n") and done.stdout.count(b"\n") == 1
        answer: dict[str, Any] = json.loads(done.stdout)
        assert answer["continue"] is True and answer["suppressOutput"] is True
        return answer

    def link(self) -> str:
        task_id = new_uuid()
        payload = linked_task_payload(SESSION, ("Use PostgreSQL only",))
        draft = EventDraft(
            event_type="task_started", task_id=task_id, actor="user", request_id="start:1", payload=payload
        )
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.append([draft])
        return task_id

    def hook_events(self) -> list[tuple[str, str]]:
        return [
            (e.event_type, e.request_id.split(":")[1])
            for e in self.store.read().events
            if e.request_id.startswith("hook:")
        ]

    def stored(self) -> bytes:
        if not self.data.exists():
            return b""
        return b"".join(p.read_bytes() for p in sorted(self.data.rglob("*")) if p.is_file())


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def _headless(prompt: str, context: str = association_context(SESSION)) -> str:
    """``prompt`` as BeforeAgent receives it in ``gemini -p``: SessionStart's context in front (Gemini escapes ``<``
    and ``>`` inside it)."""
    return f"<hook_context>{context.replace('<', '&lt;').replace('>', '&gt;')}</hook_context>\n\n{prompt}"


def test_unlinked_session_start_and_before_agent_answer_the_hint_under_geminis_names(env: Env) -> None:
    for event, args, fields in (
        ("SessionStart", ("session-start",), {"source": "startup"}),
        ("BeforeAgent", ("before-agent",), {"prompt": _headless("hello")}),
        ("BeforeAgent", (), {"prompt": "hello"}),  # no argument: the payload's hook_event_name
    ):
        answer = env.answer(env.payload(event, **fields), *args)
        assert answer["hookSpecificOutput"] == {
            "hookEventName": event,
            "additionalContext": association_context(SESSION),
        }
    assert env.stored() == b""  # reads and unlinked prompts create nothing


def test_linked_session_every_gemini_event(env: Env) -> None:
    task = env.link()
    start = env.answer(env.payload("SessionStart", source="resume"), "session-start")
    context = start["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(f"[Intent Loop linked task_id={task}.") and "Use PostgreSQL only" in context
    prompt = _headless("Add the migration for the orders table.", context)
    before = env.answer(env.payload("BeforeAgent", prompt=prompt), "before-agent")
    assert before["hookSpecificOutput"] == {"hookEventName": "BeforeAgent", "additionalContext": context}
    after = env.payload("AfterAgent", prompt=prompt, prompt_response="Migration added.", stop_hook_active=False)
    assert env.answer(after, "after-agent") == FAIL_OPEN
    assert env.answer(env.payload("SessionEnd", reason="exit"), "session-end") == FAIL_OPEN
    assert env.hook_events() == [
        ("source_observed", "UserPromptSubmit"),
        ("result_signal_observed", "Stop"),
        ("result_signal_observed", "SessionEnd"),
    ]
    stored = env.stored()
    for text in (b"orders table", b"Migration added", b"hook_context"):
        assert text not in stored  # observations are content-free


def test_the_prompt_observation_is_the_users_prompt_not_the_hook_context(env: Env) -> None:
    """Gemini sends no turn id: an observation is keyed by its text, which must be the user's prompt alone."""
    env.link()
    for context in ("[first context]", "[second context, after a resume]"):
        env.answer(env.payload("BeforeAgent", prompt=_headless("Run the tests.", context)), "before-agent")
    assert env.hook_events() == [("source_observed", "UserPromptSubmit")]  # one prompt, seen twice
    env.answer(env.payload("BeforeAgent", prompt=_headless("Run the linters.")), "before-agent")
    assert env.hook_events() == [("source_observed", "UserPromptSubmit")] * 2  # another prompt


def test_an_intent_command_after_the_hook_context_block_is_run(env: Env) -> None:
    answer = env.answer(env.payload("BeforeAgent", prompt=_headless("/intent remember Ship on Tuesdays.")))
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert answer["hookSpecificOutput"]["additionalContext"].startswith("[Intent Loop receipt IL-")
    assert answer["systemMessage"].startswith("[Intent Loop receipt IL-")
    assert b"Ship on Tuesdays." in env.stored()
    [start] = [e for e in env.store.read().events if e.event_type == "task_started"]
    assert str(start.payload["label"]).endswith(" UTC, Gemini CLI")  # the task it started names its host


@pytest.mark.parametrize(
    "prompt",
    [
        _headless("Please /intent remember Ship on Tuesdays."),  # not at the start of the user's prompt
        "<hook_context>never closed\n\n/intent remember Ship on Tuesdays.",  # not a whole block
        "Note <hook_context>x</hook_context> /intent remember Ship on Tuesdays.",  # the block is not in front
    ],
)
def test_a_command_not_at_the_start_of_the_users_prompt_is_not_run(env: Env, prompt: str) -> None:
    answer = env.answer(env.payload("BeforeAgent", prompt=prompt), "before-agent")
    assert answer["hookSpecificOutput"]["additionalContext"] == association_context(SESSION)
    assert "systemMessage" not in answer and b"Ship on Tuesdays." not in env.stored()


def test_pre_compress_is_not_handled(env: Env) -> None:
    """Gemini fires PreCompress on every compression check: the installer does not wire it, and a payload of it is
    answered fail-open and records nothing (the positive control is AfterAgent in the test above)."""
    env.link()
    assert env.answer(env.payload("PreCompress", trigger="auto")) == FAIL_OPEN
    assert env.hook_events() == []


def test_every_before_agent_carries_the_context_because_gemini_never_says_it_compacted(env: Env) -> None:
    """Claude Code's and Codex's prompt hook sends an unchanged context once a session (PostCompact sends it again);
    Gemini fires no event after compressing, so its BeforeAgent keeps sending it."""
    env.link()
    answers = [env.answer(env.payload("BeforeAgent", prompt=_headless(f"Step {i}.")), "before-agent") for i in range(3)]
    contexts = [a.get("hookSpecificOutput", {}).get("additionalContext") for a in answers]
    assert all(c is not None and "Use PostgreSQL only" in c for c in contexts) and len(set(contexts)) == 1
    # control: the same prompts as Claude Code's UserPromptSubmit get the context once
    claude = [
        env.answer(env.payload("UserPromptSubmit", prompt=f"Step {i}.", session_id=SESSION), "user-prompt")
        for i in range(2)
    ]
    assert [("hookSpecificOutput" in a) for a in claude] == [True, False]
