"""Every face answers what a fresh full fold of the same ledger answers: the MCP tools (a fresh service), the hooks'
session context, and the CLI (``tasks``, ``show``, ``projects``), over random ledgers written through the real
service and hooks, and random damage to the caches beside the ledger (the checkpoint and the task index), which may
cost a face a slower read but never a different answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings, strategies as st

from intentloop.errors import IntentLoopError
from intentloop.model import (
    association_context,
    linked_task_context,
    project,
    project_id_for,
    session_hash,
    task_for_session,
)
from intentloop.service import IntentService
from intentloop.service.hookops import Observation, record_observation, session_context
from intentloop.store import CHECKPOINT_NAME, INDEX_DIR_RE, verify_ledger_bytes
from intentloop.store._summary import OBSERVATION_TYPES

from _support.tool_args import evidence, explicit, inference

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
SESSIONS = ("face-session-a", "face-session-b", "face-session-c")

# One operation: (kind, session or task slot, claim slot, text number).
_op = st.tuples(
    st.sampled_from(["start", "explicit", "inference", "evidence", "invalidate", "replace", "mode", "observe"]),
    st.integers(0, 2),
    st.integers(0, 3),
    st.integers(0, 40),
)
DAMAGES = (
    "none",
    "no checkpoint",
    "garbled checkpoint",
    "no index",
    "emptied index files",
    "garbled index counts",
    "stale checkpoint size",
)


async def _write(data: Path, root: str, ops: list[tuple[str, int, int, int]]) -> None:
    service = IntentService(lambda: data)
    pid = project_id_for(root)
    tasks: list[str] = []
    claims: dict[str, list[str]] = {}
    n = 0

    async def call(tool: str, **arguments: Any) -> Any:
        return await service.dispatch(tool, arguments, project_root=root, project_id=pid)

    for kind, slot, claim_slot, text in ops:
        n += 1
        if kind == "start" or not tasks:
            try:
                snap = await call(
                    "intent_start_task",
                    request_id=f"start-{n}",
                    label=f"task {n}",
                    host_session_id=SESSIONS[slot],
                    initial_explicit=[f"Initial rule {text}"] if text % 2 else [],
                )
            except IntentLoopError:  # the session is bound to another task already: a refusal the rules make
                snap = await call("intent_start_task", request_id=f"start-{n}", label=f"task {n}")
            tasks.append(snap["task_id"])
            claims[snap["task_id"]] = [c["claim_id"] for c in snap["active_claims"]]
            continue
        task = tasks[slot % len(tasks)]
        own = claims[task]
        try:
            if kind == "explicit":
                own.append((await call("intent_add_explicit", **explicit(task, f"r{n}", f"Rule {text}")))["claim_id"])
            elif kind == "inference":
                added = await call("intent_add_inference", **inference(task, f"r{n}", f"Guess {text}"))
                own.append(added.get("claim_id") or added.get("candidate_id") or "")
            elif kind == "evidence":
                own.append((await call("intent_add_evidence", **evidence(task, f"r{n}", f"Result {text}")))["claim_id"])
            elif kind == "invalidate" and own:
                target = own[claim_slot % len(own)]
                await call(
                    "intent_invalidate",
                    task_id=task,
                    request_id=f"r{n}",
                    claim_id=target,
                    reason="withdrawn",
                    source_ref={"kind": "user_event", "event_id": f"turn-{n}"},
                )
            elif kind == "replace" and own:
                arguments = explicit(task, f"r{n}", f"Changed rule {text}", event_id=f"turn-{n}")
                arguments.update(replacement_kind="explicit", supersedes=[own[claim_slot % len(own)]])
                own.append((await call("intent_replace_claim", **arguments))["claim_id"])
            elif kind == "mode":
                await call("intent_set_mode", task_id=task, request_id=f"r{n}", mode="off" if text % 2 else "on")
            elif kind == "observe":
                obs = Observation(event="UserPromptSubmit", session_id=SESSIONS[slot], turn_id=f"turn-{n}", text="hi")
                record_observation(data, root, obs, deadline=time.monotonic() + 10)
        except IntentLoopError:  # a refusal the rules make (an off task, an invalidated claim): nothing written
            pass


def _damage(project_dir: Path, damage: str) -> None:
    checkpoint = project_dir / CHECKPOINT_NAME
    indexes = [p for p in project_dir.iterdir() if INDEX_DIR_RE.match(p.name)]
    if damage == "no checkpoint":
        checkpoint.unlink(missing_ok=True)
    elif damage == "garbled checkpoint" and checkpoint.exists():
        checkpoint.write_bytes(b'{"version": 1, "size": "x"')
    elif damage == "no index":
        for index in indexes:
            shutil.rmtree(index)
    elif damage == "emptied index files":
        for index in indexes:
            for file in index.iterdir():
                if file.name != "counts.json":
                    file.write_bytes(b"")
    elif damage == "garbled index counts":
        for index in indexes:
            (index / "counts.json").write_bytes(b"[1, 2")
    elif damage == "stale checkpoint size" and checkpoint.exists():
        doc = json.loads(checkpoint.read_bytes())
        doc["size"] = max(0, doc["size"] - 1)
        checkpoint.write_text(json.dumps(doc))


def _lifecycle(task: Any) -> dict[str, int]:
    counts = {"active": 0, "superseded": 0, "invalidated": 0}
    for claim_id in task.claims:
        if claim_id in task.invalidations:
            counts["invalidated"] += 1
        elif claim_id in task.superseded_by:
            counts["superseded"] += 1
        else:
            counts["active"] += 1
    return counts


def _cli(data: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP")} | {"INTENT_LOOP_CATALOG": "off"}
    env["INTENT_LOOP_DATA_DIR"] = str(data)
    done = subprocess.run([*INTENTLOOP, *args, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(ops=st.lists(_op, min_size=1, max_size=14), damage=st.sampled_from(DAMAGES))
def test_every_face_answers_what_a_fresh_fold_answers(ops: list[tuple[str, int, int, int]], damage: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data, root_dir = Path(tmp) / "data", Path(tmp) / "repo"
        root_dir.mkdir()
        root = str(root_dir.resolve())
        trio.run(_write, data, root, ops)
        pid = project_id_for(root)
        project_dir = data / "projects" / pid
        _damage(project_dir, damage)

        # The reference: the ledger's bytes verified and folded from scratch, no cache consulted.
        verified = verify_ledger_bytes((project_dir / "ledger.jsonl").read_bytes(), project_id=pid)
        assert verified.error is None
        state = project(verified.events)
        started = {tid: t for tid, t in state.tasks.items() if t.started}
        assert started  # positive control: every example starts a task

        # The hooks: each session's context.
        for session in SESSIONS:
            bound = task_for_session(state, session_hash(session))
            expected = (
                linked_task_context(bound) if bound is not None and bound.mode == "on" else association_context(session)
            )
            assert session_context(data, root, session) == expected, (session, damage)

        # The tools, through a fresh service (a restarted server): each started task's snapshot.
        async def snapshots() -> dict[str, Any]:
            service = IntentService(lambda: data)
            found: dict[str, Any] = {}
            for tid in started:
                try:
                    found[tid] = await service.dispatch(
                        "intent_get_snapshot", {"task_id": tid}, project_root=root, project_id=pid
                    )
                except IntentLoopError as exc:
                    found[tid] = exc.code
            return found

        for tid, snapshot in trio.run(snapshots).items():
            task = started[tid]
            if task.mode == "off":
                assert snapshot == "MODE_OFF"
                continue
            active = sorted(cid for cid in task.claims if task.is_active(cid))
            listed = {c["claim_id"] for key in ("active_claims", "unknowns", "disagreements") for c in snapshot[key]}
            listed |= {c["claim_id"] for c in snapshot["stale_long_term"]}
            assert sorted(listed) == active, (tid, damage)
            assert snapshot["candidate_count"] == len(task.candidates)

        # The CLI: the task list, and one task shown.
        listed_tasks = {row["task_id"]: row for row in _cli(data, "tasks", "--project-root", root)["tasks"]}
        assert set(listed_tasks) == set(started)
        for tid, task in started.items():
            row = listed_tasks[tid]
            assert (row["label"], row["mode"], row["started_at"]) == (task.label, task.mode, task.started_at)
            assert row["claims"] == _lifecycle(task)
            observed = sum(1 for c in task.candidates if c.candidate_type in OBSERVATION_TYPES)
            assert (row["candidates"], row["observations"]) == (len(task.candidates) - observed, observed)
        projects = {p["project_id"]: p for p in _cli(data, "projects")["projects"]}
        assert projects[pid]["events"] == len(verified.events)
        assert projects[pid]["tasks"] == len(started)
        assert projects[pid]["claims"] == sum(len(t.claims) for t in started.values())
        on = [tid for tid, t in started.items() if t.mode == "on"]
        if on:
            shown = _cli(data, "show", on[-1], "--project-root", root)["snapshot"]
            active = sorted(cid for cid in started[on[-1]].claims if started[on[-1]].is_active(cid))
            assert sorted(
                c["claim_id"] for key in ("active_claims", "unknowns", "disagreements") for c in shown[key]
            ) == [c for c in active if c not in {s["claim_id"] for s in shown["stale_long_term"]}]
