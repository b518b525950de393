"""Control characters never reach a terminal or a host's message raw: an ``/intent remember`` carrying an OSC 52
clipboard write is stored escaped and its receipt shows it escaped, and a statement written raw by an older writer is
escaped in the hook's context."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from intentloop.model import EventDraft, SourceRef, make_claim, new_uuid, request_fingerprint, utc_now

from _support.hook_world import HookWorld

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
SESSION = "5a1c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f71"
OSC52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"


def _raw_controls(text: str) -> bool:
    return any(ch in text for ch in ("\x1b", "\x07", "\u202e"))


def _append_raw_statement(world: HookWorld, task: str) -> None:
    """Append an explicit claim whose statement holds raw controls, as a writer before the escaping rule could."""
    claim = make_claim(
        claim_id=new_uuid(),
        statement="Keep it plain",
        epistemic_status="explicit",
        source_ref=SourceRef(kind="user_event", event_id="turn-9"),
        scope="task",
        facets=["hard_constraint"],
        now=utc_now(),
    ).to_wire()
    claim["statement"] = f"Keep {OSC52} \u202eit plain"
    payload = {"claim": claim, "request_fingerprint": request_fingerprint("claim_added", claim)}
    draft = EventDraft(event_type="claim_added", task_id=task, actor="user", request_id="old-1", payload=payload)
    with world.store.locked(time.monotonic() + 5) as ledger:
        ledger.append([draft])


async def test_a_remembered_osc52_sequence_is_stored_and_shown_escaped(tmp_path: Path) -> None:
    world = HookWorld(tmp_path, SESSION)
    await world.call("intent_start_task", host_session_id=SESSION, label="t", request_id="s-1")
    answer = world.hook("UserPromptSubmit", prompt=f"/intent remember Copy {OSC52} nothing", turn_id="turn-1")
    message = answer["systemMessage"]
    assert "remembered as claim" in message  # control: the command ran
    assert not _raw_controls(message) and "\\u001b]52" in message
    stored = [e for e in world.store.read().events if e.event_type == "claim_added"]
    assert stored and all(not _raw_controls(e.payload["claim"]["statement"]) for e in stored)


async def test_a_raw_control_written_by_an_older_writer_is_escaped_in_the_hook_context(tmp_path: Path) -> None:
    world = HookWorld(tmp_path, SESSION)
    snapshot = await world.call("intent_start_task", host_session_id=SESSION, label="t", request_id="s-1")
    task = snapshot["task_id"]
    _append_raw_statement(world, task)
    context = world.hook("SessionStart", source="startup")["hookSpecificOutput"]["additionalContext"]
    assert "Keep " in context and "it plain" in context  # control: the claim is injected
    assert not _raw_controls(context) and "\\u001b]52" in context and "\\u202e" in context


async def test_show_and_the_markdown_export_print_a_raw_control_escaped(tmp_path: Path) -> None:
    world = HookWorld(tmp_path, SESSION)
    snapshot = await world.call("intent_start_task", host_session_id=SESSION, label="t", request_id="s-1")
    task = snapshot["task_id"]
    _append_raw_statement(world, task)
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(world.data), "COLUMNS": "400"}
    for args in (["show", task], ["export", task, "--format", "markdown"]):
        done = subprocess.run(
            [*INTENTLOOP, *args, "--project-root", world.root], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "it plain" in done.stdout  # control: the claim is printed
        assert not _raw_controls(done.stdout) and "\\u001b]52" in done.stdout, args
