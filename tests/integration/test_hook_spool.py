"""Many concurrent hook processes that cannot get the lock: no observation is lost, none is doubled.

Each hook waits for the lock until its deadline, then leaves its observation in ``spool/``; the next writer appends
every spooled observation exactly once, and the chain verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, new_uuid, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root

from _support.linked_task import linked_task_payload
from _support.lock_holder import holding_lock

SESSION = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]
PROMPTS, STOPS = 16, 8


def _link(store: ProjectStore) -> str:
    task = new_uuid()
    payload = linked_task_payload(SESSION, ["Use PostgreSQL only"])
    with store.locked() as ledger:
        ledger.append(
            [EventDraft(event_type="task_started", task_id=task, actor="user", request_id="start", payload=payload)]
        )
    return task


def _payload(repo: Path, event: str, **fields: Any) -> bytes:
    return json.dumps({"session_id": SESSION, "cwd": str(repo), "hook_event_name": event, **fields}).encode()


@pytest.mark.slow
def test_concurrent_hooks_behind_a_held_lock_are_all_recorded_once_by_the_next_writer(tmp_path: Path) -> None:
    data, repo = tmp_path / "data", tmp_path / "repo"
    repo.mkdir()
    store = ProjectStore(data, project_id_for(canonicalize_project_root(str(repo))))
    task = _link(store)
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "INTENT_LOOP_DATA_DIR": str(data),
    }
    # 24 hooks starting at once on a 2-core machine need more CPU than 2.5 s each to get going; the lock is held
    # throughout anyway, so a longer budget changes nothing but the starvation (see docs/STORAGE.md, the spool)
    env["INTENT_LOOP_HOOK_DEADLINE_S"] = "10"
    payloads = [
        _payload(repo, "UserPromptSubmit", turn_id=f"turn-{n}", prompt=f"secret plan {n}") for n in range(PROMPTS)
    ]
    payloads += [
        _payload(repo, "Stop", last_assistant_message=f"finished step {n} of the walrus") for n in range(STOPS)
    ]
    with holding_lock(data, store.project_id) as holder:
        started = time.monotonic()
        hooks = [
            subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            for _ in payloads
        ]
        for hook, payload in zip(hooks, payloads, strict=True):  # every hook has its payload at once: they race
            assert hook.stdin is not None
            hook.stdin.write(payload)
            hook.stdin.close()
        answers = []
        for hook in hooks:
            assert hook.stdout is not None and hook.stderr is not None
            with hook.stdout, hook.stderr:
                answers.append((hook.stdout.read(), hook.stderr.read()))
        assert [hook.wait(timeout=60) for hook in hooks] == [0] * len(hooks)
        assert all(err == b"" and json.loads(out)["continue"] is True for out, err in answers)
        assert time.monotonic() - started < 30
        assert [e for e in store.read().events if e.request_id.startswith("hook:")] == []  # nothing got the lock
        spooled = sorted(store.paths.spool_dir.iterdir())
        assert len(spooled) == PROMPTS + STOPS
        for entry in spooled:  # content-free like the observation: host turn ids, digests and counts, never text
            stored = entry.read_bytes()
            assert b"secret" not in stored and b"plan" not in stored and b"walrus" not in stored
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=10) == 0
    # the next writer: one more hook, which takes the free lock
    last = subprocess.run(HOOK, input=_payload(repo, "Stop", last_assistant_message="done"), env=env, timeout=60,
                          capture_output=True)  # fmt: skip
    assert last.returncode == 0
    observed = [e for e in store.read().events if e.request_id.startswith("hook:")]
    kinds = sorted(e.request_id.split(":")[1] for e in observed)
    assert kinds == ["Stop"] * (STOPS + 1) + ["UserPromptSubmit"] * PROMPTS
    assert len({e.request_id for e in observed}) == len(observed)  # every observation exactly once
    assert all(e.task_id == task for e in observed)
    assert list(store.paths.spool_dir.iterdir()) == []
    assert store.verify().ok


def _recorded(store: ProjectStore) -> list[tuple[str, str]]:
    return sorted((e.event_type, e.request_id) for e in store.read().events if e.request_id.startswith("hook:"))


def test_a_hook_whose_child_misses_the_deadline_still_spools_its_observation(tmp_path: Path) -> None:
    """A child starved of CPU used to be killed at the deadline before it decided anything, and its observation was
    lost; the process that answers the host leaves the content-free observation in the spool instead. A deadline
    that passes before the child can even start stands in for the starvation (the same path: no line by the
    deadline); the next writer records every observation once."""
    data, repo = tmp_path / "data", tmp_path / "repo"
    repo.mkdir()
    store = ProjectStore(data, project_id_for(canonicalize_project_root(str(repo))))
    task = _link(store)
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "INTENT_LOOP_DATA_DIR": str(data),
    }
    late = {**env, "INTENT_LOOP_HOOK_DEADLINE_S": "0.01"}
    payloads = [_payload(repo, "UserPromptSubmit", turn_id=f"turn-{n}", prompt=f"plan {n}") for n in range(4)]
    payloads.append(_payload(repo, "Stop", last_assistant_message="finished the walrus"))  # keyed digest, no turn
    for payload in payloads:
        done = subprocess.run(HOOK, input=payload, capture_output=True, env=late, timeout=30)
        assert (done.returncode, done.stderr) == (0, b"")
        assert json.loads(done.stdout) == {"continue": True, "suppressOutput": True}  # fail-open: answered late
    deadline = time.monotonic() + 30  # the spooling goes on after the answer, in a process of its own
    while len(list(store.paths.spool_dir.glob("obs-*.json"))) < len(payloads) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _recorded(store) == []  # nothing was appended by the late hooks themselves
    assert b"walrus" not in b"".join(p.read_bytes() for p in store.paths.spool_dir.iterdir())  # content-free
    unlinked = _payload(repo, "UserPromptSubmit", session_id="another-session", turn_id="turn-x", prompt="hello")
    subprocess.run(HOOK, input=unlinked, capture_output=True, env=late, timeout=30)  # control: not this session's
    drain = _payload(repo, "Stop", turn_id="turn-drain", last_assistant_message="x")
    subprocess.run(HOOK, input=drain, capture_output=True, env=env, timeout=30)  # an ordinary writer drains
    recorded = _recorded(store)
    assert [kind for kind, _rid in recorded].count("source_observed") == 4
    assert [kind for kind, _rid in recorded].count("result_signal_observed") == 2  # the late Stop and the drain's
    assert all(e.task_id == task for e in store.read().events[1:])
    subprocess.run(HOOK, input=drain, capture_output=True, env=env, timeout=30)
    assert _recorded(store) == recorded  # exactly once
