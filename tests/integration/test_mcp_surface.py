"""The MCP surface end to end against real ``intentloop serve`` subprocesses and real storage: two servers racing on
one request id, private mode leaving no semantic byte on disk, deletion leaving no byte of the item, cross-project
reads refused, and every error code a tool call can reach — each rejection beside a positive control.

One server process per test keeps the file fast. Codes of ``intentloop/errors.py`` that no tool call can produce (read
from ``intentloop/service/``): INITIAL_CLAIM_LIMIT, INVALID_SCOPE, INVALID_FACETS and REPLACEMENT_TARGET_REQUIRED (the
strict schema answers INVALID_ARGUMENTS first), INVALID_DISPUTE (a statement is required non-blank), INVALID_CLAIM_ROLE
(the role is derived from the status; an import answers INVALID_IMPORT), INTERNAL_ERROR and SKILL_NOT_FOUND.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import trio

from _support import mcp_client as H
from _support.mcp_client import META_KEY, Surface, source
from _support.tool_args import (
    evidence as _evidence,
    explicit as _explicit,
    inference as _inference,
    statements as _statements,
)

NIL_UUID = "00000000-0000-0000-0000-000000000000"  # passes the published schema pattern, not the service's check
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # the shape of a GitHub token, 36 characters after ghp_


def _ghost_task() -> str:
    return str(uuid.uuid4())


async def _start(s: Any, request_id: str, **extra: Any) -> str:
    return str((await s.ok("intent_start_task", {"request_id": request_id, **extra}))["task_id"])


async def _concurrently(tool: str, *calls: tuple[Any, dict[str, Any]]) -> list[dict[str, Any]]:
    """``tool`` through each ``(surface, arguments)`` at the same time; the envelopes in call order."""
    results: list[dict[str, Any]] = [{} for _ in calls]

    async def run(index: int, surface: Any, arguments: dict[str, Any]) -> None:
        results[index] = await surface.call(tool, arguments)

    async with trio.open_nursery() as nursery:
        for index, (surface, arguments) in enumerate(calls):
            nursery.start_soon(run, index, surface, arguments)
    return results


def _events_with(data_root: Path, project: Path, request_id: str) -> list[dict[str, Any]]:
    return [event for event in H.ledger_events(data_root, project) if event["request_id"] == request_id]


# ------------------------------------------------------------------------------------------ two servers racing
async def test_two_servers_racing_on_one_request_id(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as first, H.server(data_root, command=H.SERVE_SCRIPT) as second:
        a, b = Surface(first, project), Surface(second, project)
        start = {"request_id": "race-start", "initial_explicit": ["Started through two servers at once"]}
        answers = await _concurrently("intent_start_task", (a, start), (b, start))
        assert all(answer["ok"] for answer in answers), answers
        task = answers[0]["result"]["task_id"]
        assert answers[1]["result"]["task_id"] == task  # a snapshot each, of one task with one initial claim
        assert answers[0]["result"]["active_claims"] == answers[1]["result"]["active_claims"]
        assert len(answers[0]["result"]["active_claims"]) == 1
        assert len(_events_with(data_root, project, "race-start")) == 1
        builders = {
            "intent_add_explicit": _explicit,
            "intent_add_inference": _inference,
            "intent_add_evidence": _evidence,
        }
        for tool, build in builders.items():
            # the same call through both servers at once: one claim, both answers carry it, one event
            same = build(task, f"{tool}-same", f"Same statement through two servers for {tool}")
            answers = await _concurrently(tool, (a, same), (b, same))
            assert all(answer["ok"] for answer in answers), answers
            assert answers[0]["result"] == answers[1]["result"]
            assert len(_events_with(data_root, project, same["request_id"])) == 1
            replay = await b.ok(tool, same)  # and a later retry replays it
            assert replay["claim_id"] == answers[0]["result"]["claim_id"]

            # the same request id with different statements: exactly one wins, the other is REQUEST_ID_REUSED
            left = build(task, f"{tool}-reused", f"Left statement for {tool}")
            right = build(task, f"{tool}-reused", f"Right statement for {tool}")
            answers = await _concurrently(tool, (a, left), (b, right))
            winners = [answer for answer in answers if answer["ok"]]
            losers = [answer for answer in answers if not answer["ok"]]
            assert len(winners) == 1 and len(losers) == 1, answers
            assert losers[0]["error"]["code"] == "REQUEST_ID_REUSED" and losers[0]["error"]["retryable"] is False
            (event,) = _events_with(data_root, project, left["request_id"])
            assert event["payload"]["claim"]["statement"] == winners[0]["result"]["statement"]

            # positive control: distinct request ids through the two servers both append
            one = build(task, f"{tool}-one", f"First distinct statement for {tool}")
            two = build(task, f"{tool}-two", f"Second distinct statement for {tool}")
            answers = await _concurrently(tool, (a, one), (b, two))
            assert all(answer["ok"] for answer in answers), answers
            assert answers[0]["result"]["claim_id"] != answers[1]["result"]["claim_id"]
            assert len(_events_with(data_root, project, one["request_id"])) == 1
            assert len(_events_with(data_root, project, two["request_id"])) == 1
        events = H.ledger_events(data_root, project)
        assert len(events) == 1 + 4 * len(builders)  # the start, then same + reused + one + two per tool
        assert len({event["request_id"] for event in events}) == len(events)


# ------------------------------------------------------------------------------------------------ private mode
async def test_private_mode_leaves_no_semantic_byte_on_disk(data_root: Path, project: Path) -> None:
    marker = uuid.uuid4().hex[:12]
    session = f"host-session-{marker}"
    texts = {
        "label": f"private label {marker}",
        "initial": f"Initial private constraint {marker}",
        "explicit": f"Explicit private wish {marker}",
        "inferred": f"Inferred private preference {marker}",
        "evidence": f"Private evidence observed {marker}",
        "excerpt": f"private excerpt words {marker}",
    }
    async with H.server(data_root) as first:
        s = Surface(first, project)
        durable = await _start(s, "durable-start", initial_explicit=[f"Durable neighbour {marker}"])
        started = await s.ok(
            "intent_start_task",
            {
                "request_id": "private-start",
                "mode": "private",
                "host_session_id": session,
                "label": texts["label"],
                "initial_explicit": [texts["initial"]],
            },
        )
        task = started["task_id"]
        assert started["mode"] == "private"
        await s.ok("intent_add_explicit", _explicit(task, "p-explicit", texts["explicit"]))
        await s.ok("intent_add_inference", _inference(task, "p-inferred", texts["inferred"]))
        evidence = _evidence(task, "p-evidence", texts["evidence"])
        evidence["source_ref"] = {**evidence["source_ref"], "excerpt": texts["excerpt"]}
        await s.ok("intent_add_evidence", evidence)

        # a durable task switched to private keeps its new claims in memory too
        switched = await _start(s, "switch-start", host_session_id=f"switch-{session}")
        await s.ok("intent_set_mode", {"task_id": switched, "request_id": "to-private", "mode": "private"})
        texts["switched"] = f"Added after switching to private {marker}"
        await s.ok("intent_add_explicit", _explicit(switched, "p-switched", texts["switched"]))
        assert _statements(await s.ok("intent_get_snapshot", {"task_id": switched})) == {texts["switched"]}

        # positive control: the same server shows all of it
        snapshot = await s.ok("intent_get_snapshot", {"task_id": task})
        assert {texts["initial"], texts["explicit"], texts["inferred"], texts["evidence"]} <= _statements(snapshot)
        status = await s.ok("intent_status", {"task_id": task})
        assert status["mode"] == "private" and status["data_directory"] is None

        # ... and no file under the data root holds any of it (the durable neighbour proves the scan sees files)
        assert H.files_containing(data_root, *texts.values(), session) == {}
        assert H.files_containing(data_root, f"Durable neighbour {marker}")
        assert len(list((H.project_dir(data_root, project) / "private-sessions").iterdir())) == 2

        # a second server process fails closed for that task, and still serves the durable one
        async with H.server(data_root, command=H.SERVE_SCRIPT) as second:
            other = Surface(second, project)
            for tool, arguments in (
                ("intent_get_snapshot", {"task_id": task}),
                ("intent_export", {"task_id": task}),
                ("intent_list_candidates", {"task_id": task}),
                ("intent_add_explicit", _explicit(task, "p-other", "Written from elsewhere")),
                ("intent_get_snapshot", {"task_id": switched}),
            ):
                await other.fail(tool, arguments, "PRIVATE_SESSION_ACTIVE")
            lost = await other.ok("intent_status", {"task_id": task})
            assert lost["mode"] == "private" and lost["semantic_state_available"] is False
            neighbour = await other.ok("intent_get_snapshot", {"task_id": durable})
            assert _statements(neighbour) == {f"Durable neighbour {marker}"}
        assert H.files_containing(data_root, *texts.values(), session) == {}


# ---------------------------------------------------------------------------------------------------- deletion
async def test_deletion_leaves_no_byte_of_the_item(data_root: Path, project: Path) -> None:
    marker = uuid.uuid4().hex[:12]
    keep_text, doomed_text = f"Keep this constraint {marker}", f"Forget this constraint {marker}"
    async with H.server(data_root) as client, H.server(data_root) as watcher_client:
        s, watcher = Surface(client, project), Surface(watcher_client, project)
        initial_text = f"Initial constraint to forget {marker}"
        started = await s.ok("intent_start_task", {"request_id": "del-start", "initial_explicit": [initial_text]})
        task, initial = started["task_id"], started["active_claims"][0]["claim_id"]
        keep = await s.ok("intent_add_explicit", _explicit(task, "del-keep", keep_text))
        doomed = await s.ok("intent_add_explicit", _explicit(task, "del-doomed", doomed_text))
        # another server process has read (and may cache) the task before the deletion
        assert doomed_text in _statements(await watcher.ok("intent_get_snapshot", {"task_id": task}))
        # references to the doomed claim from another record, which deletion must remove as well
        await s.ok(
            "intent_mark_dispute",
            {
                "task_id": task,
                "request_id": "del-dispute",
                "statement": f"Keep and forget disagree {marker}",
                "source_ref": source("user_event", "turn-3"),
                "facets": ["tradeoff"],
                "related_claim_ids": [keep["claim_id"], doomed["claim_id"]],
            },
        )
        ledger = H.ledger_path(data_root, project)
        before = ledger.read_bytes()
        for wrong in (
            f"DELETE CLAIM {keep['claim_id']}",
            f"delete claim {doomed['claim_id']}",
            f"DELETE CLAIM {doomed['claim_id']} ",
            f"DELETE TASK {task}",
        ):
            arguments = {"task_id": task, "target": "claim", "claim_id": doomed["claim_id"], "confirmation": wrong}
            await s.fail("intent_delete", arguments, "CONFIRMATION_REQUIRED")
        assert ledger.read_bytes() == before
        assert doomed_text in _statements(await s.ok("intent_get_snapshot", {"task_id": task}))

        confirmation = f"DELETE CLAIM {doomed['claim_id']}"
        deleted = await s.ok(
            "intent_delete",
            {"task_id": task, "target": "claim", "claim_id": doomed["claim_id"], "confirmation": confirmation},
        )
        assert deleted["deleted"] == "claim" and deleted["claim_id"] == doomed["claim_id"]
        assert H.files_containing(data_root, doomed["claim_id"], doomed_text) == {}
        # positive control: the kept claim is still on disk and in the view
        assert set(H.files_containing(data_root, keep["claim_id"], keep_text)) == {keep["claim_id"], keep_text}
        for surface in (s, watcher):
            snapshot = await surface.ok("intent_get_snapshot", {"task_id": task})
            assert keep_text in _statements(snapshot) and doomed_text not in _statements(snapshot)
            exported = json.dumps(await surface.ok("intent_export", {"task_id": task}), ensure_ascii=False)
            assert doomed["claim_id"] not in exported and doomed_text not in exported and keep_text in exported

        # a claim that lives inside the task_started event (an initial claim)
        confirmation = f"DELETE CLAIM {initial}"
        await s.ok(
            "intent_delete", {"task_id": task, "target": "claim", "claim_id": initial, "confirmation": confirmation}
        )
        assert H.files_containing(data_root, initial, initial_text) == {}
        assert _statements(await watcher.ok("intent_get_snapshot", {"task_id": task})) == {
            keep_text,
            f"Keep and forget disagree {marker}",
        }

        # a whole task, including its id inside another task's long-term candidate
        other = await _start(s, "del-other", initial_explicit=[f"Other task constraint {marker}"])
        await s.ok("intent_add_evidence", _evidence(other, "del-other-ev", f"Other task evidence {marker}"))
        for index, owner in enumerate((other, task)):
            long_term = _inference(owner, f"del-lt-{index}", f"Long-term signal {marker}", signal_key="sig-del")
            await s.ok("intent_add_inference", {**long_term, "scope": "long_term"})
        (candidate,) = await s.ok("intent_list_candidates", {"task_id": task})
        assert other in candidate["task_ids"]
        before = ledger.read_bytes()
        await s.fail(
            "intent_delete", {"task_id": other, "target": "task", "confirmation": other}, "CONFIRMATION_REQUIRED"
        )
        assert ledger.read_bytes() == before
        deleted = await s.ok(
            "intent_delete", {"task_id": other, "target": "task", "confirmation": f"DELETE TASK {other}"}
        )
        assert deleted["deleted"] == "task" and deleted["task_id"] == other
        assert (
            H.files_containing(data_root, other, f"Other task constraint {marker}", f"Other task evidence {marker}")
            == {}
        )
        await s.fail("intent_get_snapshot", {"task_id": other}, "TASK_NOT_FOUND")
        (candidate,) = await s.ok("intent_list_candidates", {"task_id": task})
        assert other not in candidate["task_ids"] and task in candidate["task_ids"]
        assert keep_text in _statements(await s.ok("intent_get_snapshot", {"task_id": task}))
        assert H.files_containing(data_root, task)  # positive control: the remaining task's id is on disk


# -------------------------------------------------------------------------------------------- cross project
async def test_cross_project_reads_are_refused(data_root: Path, project: Path, other_project: Path) -> None:
    async with H.server(data_root) as client:
        a = Surface(client, project)
        b = a.on(other_project)
        task = await _start(a, "xp-start", initial_explicit=["Only project A may read this"])
        claim = (await a.ok("intent_get_snapshot", {"task_id": task}))["active_claims"][0]["claim_id"]
        reads = [
            ("intent_get_snapshot", {"task_id": task}),
            ("intent_export", {"task_id": task}),
            ("intent_export", {"task_id": task, "detail": "summary"}),
            ("intent_list_candidates", {"task_id": task}),
            ("intent_status", {"task_id": task}),
        ]
        writes = [
            ("intent_add_explicit", _explicit(task, "xp-write", "Written through project B")),
            ("intent_delete", {"task_id": task, "target": "task", "confirmation": f"DELETE TASK {task}"}),
            (
                "intent_delete",
                {"task_id": task, "target": "claim", "claim_id": claim, "confirmation": f"DELETE CLAIM {claim}"},
            ),
            ("intent_set_mode", {"task_id": task, "request_id": "xp-off", "mode": "off"}),
        ]
        for tool, arguments in reads:  # project B has no storage yet, and reading creates none
            await b.fail(tool, arguments, "TASK_NOT_FOUND")
        assert not H.project_dir(data_root, other_project).exists()
        await _start(b, "xp-b-start")  # now project B has a ledger of its own
        for tool, arguments in reads + writes:
            error = await b.fail(tool, arguments, "TASK_NOT_FOUND")
            assert "Only project A" not in error["message"]
        # the same task through sandbox metadata naming B (and no project_root argument) is refused too
        await b.on(None).fail(
            "intent_get_snapshot",
            {"task_id": task},
            "TASK_NOT_FOUND",
            meta={META_KEY: {"sandboxCwd": other_project.as_uri()}},
        )
        for tool, arguments in reads:
            await a.ok(tool, arguments)
        await a.on(None).ok("intent_get_snapshot", {"task_id": task}, meta={META_KEY: {"sandboxCwd": project.as_uri()}})
        assert "Only project A" not in H.ledger_path(data_root, other_project).read_text()


# ------------------------------------------------------------------------------------------------ error codes
async def test_project_root_errors(data_root: Path, project: Path, other_project: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    uri = {META_KEY: {"sandboxCwd": project.as_uri()}}
    async with H.server(data_root) as client:
        s = Surface(client, project)
        bare = s.on(None)
        await s.ok("intent_status", {})  # positive control for every case below
        await bare.ok("intent_status", {}, meta=uri)
        await bare.ok("intent_status", {}, meta={META_KEY: {"sandboxCwd": str(project), "sandboxPolicy": {}}})
        await bare.ok("intent_status", {"project_root": str(project)}, meta=uri)

        await s.fail("intent_status", {"project_root": 7}, "INVALID_ARGUMENTS")
        await s.fail("intent_status", {"bogus": 1}, "INVALID_ARGUMENTS")
        await s.fail("intent_get_snapshot", {"task_id": "not-a-uuid"}, "INVALID_ARGUMENTS")
        await s.fail("intent_get_snapshot", {"task_id": _ghost_task(), "max_characters": 499}, "INVALID_ARGUMENTS")
        await s.fail("intent_start_task", {"request_id": "r", "initial_explicit": ["x"] * 13}, "INVALID_ARGUMENTS")
        await s.fail(
            "intent_add_explicit", {**_explicit(_ghost_task(), "r", "x"), "scope": "galaxy"}, "INVALID_ARGUMENTS"
        )

        required = await bare.fail("intent_status", {}, "PROJECT_ROOT_REQUIRED")
        assert "project_root" in required["message"]
        for bad_root in ("relative/path", str(tmp_path / "missing"), str(tmp_path / "a-file")):
            await bare.fail("intent_status", {"project_root": bad_root}, "PROJECT_ROOT_INVALID")
        assert (await bare.call("intent_status", {"project_root": "relative/path"}))["project_id"] is None
        await bare.fail("intent_status", {"project_root": str(tmp_path / "missing")}, "PROJECT_ROOT_INVALID", meta=uri)
        for bad_meta in ("file:///", {"sandboxCwd": ""}, {"sandboxCwd": "relative"}, {"sandboxCwd": "https://x/y"}, {}):
            await bare.fail("intent_status", {}, "PROJECT_ROOT_METADATA_INVALID", meta={META_KEY: bad_meta})
        await bare.fail("intent_status", {"project_root": str(other_project)}, "PROJECT_ROOT_MISMATCH", meta=uri)
    assert not (data_root / "projects").exists() or not any((data_root / "projects").iterdir())


async def test_data_dir_required_without_a_data_root(data_root: Path, project: Path, tmp_path: Path) -> None:
    async with H.server(None, env={"HOME": ""}, cwd=tmp_path) as client:  # no HOME, no INTENT_LOOP_DATA_DIR
        s = Surface(client, project)
        await s.fail("intent_status", {}, "DATA_DIR_REQUIRED")
        await s.fail("intent_start_task", {"request_id": "no-root"}, "DATA_DIR_REQUIRED")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]
    home = tmp_path / "home"
    home.mkdir()
    async with H.server(None, env={"HOME": str(home)}, cwd=tmp_path) as client:  # HOME alone is enough
        s = Surface(client, project)
        await s.ok("intent_status", {})
        await s.ok("intent_start_task", {"request_id": "no-root"})
    assert (home / ".local" / "share" / "intentloop" / "v1" / "projects").is_dir()
    async with H.server(data_root) as client:  # and the override wins
        s = Surface(client, project)
        await s.ok("intent_status", {})
        await s.ok("intent_start_task", {"request_id": "no-root"})


class Contrast:
    """A rejection beside its positive control: the bad call fails with the code (and its documented retryability)
    and leaves the ledger byte for byte as it was; the good call — the same call with one thing fixed — succeeds."""

    def __init__(self, surface: Any, data_root: Path, project: Path) -> None:
        self.s = surface
        self.ledger = H.ledger_path(data_root, project)

    async def __call__(self, code: str, tool: str, bad: dict[str, Any], good: dict[str, Any] | None = None) -> Any:
        before = self.ledger.read_bytes()
        await self.s.fail(tool, bad, code)
        assert self.ledger.read_bytes() == before, f"{code}: a rejected {tool} changed the ledger"
        return None if good is None else await self.s.ok(tool, good)


def _with(arguments: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**arguments, **changes}


async def test_input_validation_errors(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "input-start")
        check = Contrast(s, data_root, project)

        await check("INVALID_ID", "intent_get_snapshot", {"task_id": NIL_UUID}, {"task_id": task})
        await check("INVALID_ID", "intent_status", {"task_id": NIL_UUID}, {"task_id": task})
        add = _explicit(task, "rid", "Request id check")
        await check("INVALID_REQUEST_ID", "intent_add_explicit", _with(add, request_id="rid\n"), add)
        await check("SENSITIVE_ID_REJECTED", "intent_add_explicit", _with(add, request_id=f"r-{GITHUB_TOKEN}"), add)
        event = _explicit(task, "event", "Event id check")
        leaky = _with(event, source_ref=source("user_event", f"ev-{GITHUB_TOKEN}"))
        await check("SENSITIVE_ID_REJECTED", "intent_add_explicit", leaky, event)
        signal = {**_inference(task, "signal", "Prefers tabs over spaces"), "scope": "long_term", "signal_key": "tabs"}
        await check(
            "SENSITIVE_ID_REJECTED", "intent_add_inference", _with(signal, signal_key=f"k-{GITHUB_TOKEN}"), signal
        )
        await check("INVALID_SIGNAL_KEY", "intent_add_inference", _with(signal, signal_key="not a key!"), signal)

        await check("INVALID_SOURCE", "intent_add_explicit", _with(event, source_ref=source("agent_turn", "t")), event)
        evidence = _evidence(task, "evidence", "Source check")
        for bad_source in (
            {"kind": "tool_result", "excerpt": "an excerpt but neither event_id nor sha256"},
            source("tool_result", "a path/with spaces"),
            source("explicit_import", "import-1"),  # evidence may not claim to be an import
        ):
            await check("INVALID_SOURCE", "intent_add_evidence", _with(evidence, source_ref=bad_source), evidence)

        statement = _explicit(task, "statement", "x" * 500)
        await check("INVALID_STATEMENT", "intent_add_explicit", _with(statement, statement=" \t "), statement)
        await check("INVALID_STATEMENT", "intent_add_explicit", _with(statement, statement="y" * 501), statement)
        two_lines = _with(statement, statement="First line of a pasted prompt\nSecond line")
        await check("RAW_PROMPT_REJECTED", "intent_add_explicit", two_lines, statement)
        start = {"request_id": "start-2", "label": "l" * 120, "initial_explicit": ["One line"]}
        await check("RAW_PROMPT_REJECTED", "intent_start_task", _with(start, initial_explicit=["One\r\nTwo"]), start)
        await check("INVALID_LABEL", "intent_start_task", _with(start, label="l" * 121), start)
        await check("INVALID_LABEL", "intent_start_task", _with(start, label="two\nlines"), start)


async def test_task_and_mode_errors(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "mode-start", host_session_id="session-one")
        check = Contrast(s, data_root, project)

        ghost = _ghost_task()
        for tool, arguments in (
            ("intent_get_snapshot", {"task_id": ghost}),
            ("intent_status", {"task_id": ghost}),
            ("intent_export", {"task_id": ghost}),
            ("intent_add_explicit", _explicit(ghost, "ghost", "To nowhere")),
            ("intent_set_mode", {"task_id": ghost, "request_id": "ghost-mode", "mode": "off"}),
            ("intent_delete", {"task_id": ghost, "target": "task", "confirmation": f"DELETE TASK {ghost}"}),
        ):
            real = json.loads(json.dumps(arguments).replace(ghost, task))
            if tool != "intent_delete":
                await check("TASK_NOT_FOUND", tool, arguments, real)
            else:
                await check("TASK_NOT_FOUND", tool, arguments)
        await s.ok("intent_set_mode", {"task_id": task, "request_id": "ghost-on", "mode": "on"})

        write = _explicit(task, "off-write", "Written while off")
        await s.ok("intent_set_mode", {"task_id": task, "request_id": "off", "mode": "off"})
        for tool, arguments in (
            ("intent_get_snapshot", {"task_id": task}),
            ("intent_export", {"task_id": task}),
            ("intent_list_candidates", {"task_id": task}),
            ("intent_add_explicit", write),
            ("intent_add_evidence", _evidence(task, "off-evidence", "Evidence while off")),
        ):
            await check("MODE_OFF", tool, arguments)
        assert (await s.ok("intent_status", {"task_id": task}))["mode"] == "off"  # status works while off
        await s.ok("intent_set_mode", {"task_id": task, "request_id": "on", "mode": "on"})
        await s.ok("intent_add_explicit", write)  # positive control for all of the above
        await s.ok("intent_get_snapshot", {"task_id": task})

        off = {"request_id": "off-start", "mode": "off", "label": "  "}
        await check("MODE_OFF_SEMANTIC_INPUT", "intent_start_task", _with(off, label="secret plan"), off)
        await check("MODE_OFF_SEMANTIC_INPUT", "intent_start_task", _with(off, initial_explicit=["A wish"]), off)

        private = {"request_id": "private-start", "mode": "private", "host_session_id": "session-private"}
        no_token = {"request_id": "private-start", "mode": "private"}
        await check("PRIVATE_SESSION_TOKEN_REQUIRED", "intent_start_task", no_token, private)
        sessionless = await _start(s, "sessionless")
        to_private = {"task_id": sessionless, "request_id": "to-private", "mode": "private"}
        await check("PRIVATE_SESSION_TOKEN_REQUIRED", "intent_set_mode", to_private, _with(to_private, task_id=task))
        await s.ok("intent_set_mode", {"task_id": task, "request_id": "back-on", "mode": "on"})

        again = {"request_id": "again", "task_id": task}
        await check("TASK_ALREADY_STARTED", "intent_start_task", _with(again, initial_explicit=["Late wish"]), again)
        second = {"request_id": "second", "host_session_id": "session-two"}
        await check(
            "SESSION_ALREADY_ASSOCIATED", "intent_start_task", _with(second, host_session_id="session-one"), second
        )

        reused = _with(write, statement="A different statement under a used request id")
        await check("REQUEST_ID_REUSED", "intent_add_explicit", reused, write)
        await check("REQUEST_ID_REUSED", "intent_start_task", _with(second, label="a new label"), second)


async def test_claim_rule_errors(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        started = await s.ok("intent_start_task", {"request_id": "rules-start", "initial_explicit": ["Initial wish"]})
        task, initial = started["task_id"], started["active_claims"][0]["claim_id"]
        explicit = (await s.ok("intent_add_explicit", _explicit(task, "e", "Explicit wish")))["claim_id"]
        inferred = [
            (await s.ok("intent_add_inference", _inference(task, f"i{n}", f"Inference {n}")))["claim_id"]
            for n in range(3)
        ]
        check = Contrast(s, data_root, project)

        def replace(request_id: str, kind: str, target: str, **extra: Any) -> dict[str, Any]:
            return {
                "task_id": task,
                "request_id": request_id,
                "statement": f"Replacement {request_id}",
                "source_ref": source("agent_turn", "turn-5"),
                "facets": ["outcome"],
                "replacement_kind": kind,
                "supersedes": [target],
                **extra,
            }

        user = source("user_event", "turn-6")
        good = replace("r0", "explicit", inferred[0], source_ref=user, confirmation_reason="direct_statement")
        await check(
            "EXPLICIT_SOURCE_REQUIRED", "intent_replace_claim", _with(good, source_ref=source("agent_turn", "t"))
        )
        no_reason = {k: v for k, v in good.items() if k != "confirmation_reason"}
        await check("EXPLICIT_SOURCE_REQUIRED", "intent_replace_claim", no_reason, good)
        good = replace("r1", "inferred", inferred[1], confidence=0.4)
        bad = {k: v for k, v in good.items() if k != "confidence"}
        r1 = await check("CONFIDENCE_REQUIRED", "intent_replace_claim", bad, good)
        good = replace("r2", "unknown", inferred[2])
        await check("CONFIDENCE_NOT_ALLOWED", "intent_replace_claim", _with(good, confidence=0.5), good)
        good = replace("r3", "inferred", r1["claim_id"], confidence=0.5)
        r3 = await check(
            "LONG_TERM_CONFIRMATION_REQUIRED", "intent_replace_claim", _with(good, scope="long_term"), good
        )
        good = _explicit(task, "lt", "Always use tabs", scope="long_term")
        bad = _with(good, confirmation_reason="confirmed_candidate")  # no three-task candidate exists
        await check("LONG_TERM_CONFIRMATION_REQUIRED", "intent_add_explicit", bad, good)

        good = replace("r4", "unknown", r3["claim_id"])
        await check("CLAIM_NOT_ACTIVE", "intent_replace_claim", _with(good, supersedes=[inferred[1]]), good)
        good = replace("r5", "explicit", explicit, source_ref=user, confirmation_reason="direct_statement")
        bad = replace("r5", "unknown", explicit)
        r5 = await check("EXPLICIT_REPLACEMENT_REQUIRES_USER", "intent_replace_claim", bad, good)
        invalidate = {
            "task_id": task,
            "request_id": "v1",
            "claim_id": initial,
            "reason": "Withdrawn",
            "source_ref": user,
        }
        bad = _with(invalidate, source_ref=source("agent_turn", "turn-7"))
        await check("EXPLICIT_INVALIDATION_REQUIRES_USER", "intent_invalidate", bad, invalidate)
        await check("CLAIM_NOT_ACTIVE", "intent_invalidate", _with(invalidate, request_id="v2"))  # already invalid
        await check("CLAIM_NOT_ACTIVE", "intent_invalidate", _with(invalidate, request_id="v3", claim_id=explicit))
        reason = _with(invalidate, request_id="v4", claim_id=r5["claim_id"], reason="r" * 240)
        await check("INVALID_STATEMENT", "intent_invalidate", _with(reason, reason="r" * 241), reason)

        other = await s.ok("intent_start_task", {"request_id": "other", "initial_explicit": ["Wish of another task"]})
        foreign = other["active_claims"][0]["claim_id"]
        dispute = {
            "task_id": task,
            "request_id": "d1",
            "statement": "Two wishes disagree",
            "source_ref": user,
            "facets": ["tradeoff"],
            "related_claim_ids": [initial, explicit],  # inactive claims of the task may be related
        }
        await check("RELATED_CLAIM_NOT_FOUND", "intent_mark_dispute", _with(dispute, related_claim_ids=[_ghost_task()]))
        await check(
            "RELATED_CLAIM_NOT_FOUND", "intent_mark_dispute", _with(dispute, related_claim_ids=[foreign]), dispute
        )

        graph = await s.ok("intent_export", {"task_id": other["task_id"]})
        wrong_role = json.loads(json.dumps(graph))
        wrong_role["claims"][0]["role"] = "agent"
        dangling = _with(graph, invalidated_claim_ids=[_ghost_task()])
        target = await _start(s, "import-target")
        imported = {"task_id": target, "request_id": "imp", "graph": graph}
        await check("INVALID_IMPORT", "intent_import", _with(imported, graph=dangling))
        await check("INVALID_IMPORT", "intent_import", _with(imported, graph=wrong_role), imported)

        delete_task = {"task_id": target, "target": "task", "confirmation": f"DELETE TASK {target}"}
        await check("CONFIRMATION_REQUIRED", "intent_delete", _with(delete_task, confirmation="yes"), delete_task)
        ghost = _ghost_task()
        delete = {"task_id": task, "target": "claim", "claim_id": explicit, "confirmation": f"DELETE CLAIM {explicit}"}
        no_id = {k: v for k, v in delete.items() if k != "claim_id"}
        await check("CLAIM_ID_REQUIRED", "intent_delete", no_id)
        await check(
            "CLAIM_NOT_FOUND", "intent_delete", _with(delete, claim_id=foreign, confirmation=f"DELETE CLAIM {foreign}")
        )
        await check(
            "CLAIM_NOT_FOUND",
            "intent_delete",
            _with(delete, claim_id=ghost, confirmation=f"DELETE CLAIM {ghost}"),
            delete,
        )


# ------------------------------------------------------------------------------------------------ storage errors
async def test_corrupt_middle_line_is_reported_with_its_line_number(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "corrupt-start")
        for index in range(3):
            await s.ok("intent_add_explicit", _explicit(task, f"corrupt-{index}", f"Stored wish number {index}"))
        ledger = H.ledger_path(data_root, project)
        original = ledger.read_bytes()
        await s.ok("intent_get_snapshot", {"task_id": task})  # positive control before the damage
        lines = original.splitlines(keepends=True)
        assert len(lines) == 4
        for damaged_line, bad in (
            (3, lines[2].replace(b"Stored wish number 1", b"Stored wish number 9")),  # valid JSON, wrong hash
            (2, b'{"not": "an event"\n'),  # not even JSON
        ):
            ledger.write_bytes(b"".join(bad if n == damaged_line else line for n, line in enumerate(lines, 1)))
            damaged = ledger.read_bytes()
            for tool, arguments in (
                ("intent_get_snapshot", {"task_id": task}),
                ("intent_status", {}),
                ("intent_export", {"task_id": task}),
                ("intent_add_explicit", _explicit(task, "after-damage", "Written after damage")),
                ("intent_start_task", {"request_id": "after-damage"}),
            ):
                error = await s.fail(tool, arguments, "CORRUPT_LEDGER")
                assert f"line {damaged_line}" in error["message"], error
            assert ledger.read_bytes() == damaged  # fail-closed: nothing repaired, nothing appended
            assert not (H.project_dir(data_root, project) / "quarantine").exists()
        ledger.write_bytes(original)  # positive control: the intact bytes read and write again
        await s.ok("intent_get_snapshot", {"task_id": task})
        await s.ok("intent_add_explicit", _explicit(task, "after-damage", "Written after damage"))


async def test_torn_tail_is_retryable_on_read_and_repaired_by_the_next_write(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "torn-start", initial_explicit=["Survives the crash"])
        ledger = H.ledger_path(data_root, project)
        partial = b'{"actor":"user","event_hash":"torn-write-'
        with ledger.open("ab") as handle:
            handle.write(partial)
        torn = ledger.read_bytes()
        for tool, arguments in (("intent_get_snapshot", {"task_id": task}), ("intent_status", {})):
            error = await s.fail(tool, arguments, "CORRUPT_TRAILING_EVENT")
            assert error["retryable"] is True
        assert ledger.read_bytes() == torn  # a read changes nothing
        quarantine = H.project_dir(data_root, project) / "quarantine"
        assert not quarantine.exists()

        await s.ok("intent_add_explicit", _explicit(task, "torn-write", "Written after the crash"))
        repaired = ledger.read_bytes()
        assert repaired.startswith(torn[: -len(partial)]) and repaired.endswith(b"\n") and partial not in repaired
        assert [json.loads(line)["request_id"] for line in repaired.splitlines()] == ["torn-start", "torn-write"]
        summaries = [json.loads(path.read_bytes()) for path in quarantine.iterdir()]
        assert [summary["byte_length"] for summary in summaries] == [len(partial)]
        assert H.files_containing(data_root, partial.decode()) == {}  # only a summary, never the raw bytes
        snapshot = await s.ok("intent_get_snapshot", {"task_id": task})
        assert _statements(snapshot) == {"Survives the crash", "Written after the crash"}


async def test_every_mutation_repairs_a_torn_tail(data_root: Path, project: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "torn-all", host_session_id="torn-session")
        claim = (await s.ok("intent_add_explicit", _explicit(task, "torn-claim", "To be deleted")))["claim_id"]
        ledger = H.ledger_path(data_root, project)
        for tool, arguments in (
            ("intent_add_explicit", _explicit(task, "torn-control", "Positive control: a claim write repairs")),
            (
                "intent_delete",
                {"task_id": task, "target": "claim", "claim_id": claim, "confirmation": f"DELETE CLAIM {claim}"},
            ),
            ("intent_set_mode", {"task_id": task, "request_id": "torn-private", "mode": "private"}),
            ("intent_delete", {"task_id": task, "target": "task", "confirmation": f"DELETE TASK {task}"}),
        ):
            with ledger.open("ab") as handle:
                handle.write(b'{"actor":"agent","event_hash":"')
            for _attempt in range(2):  # the error says "retryable": a retry must get through
                envelope = await s.call(tool, arguments)
                if envelope["ok"]:
                    break
                assert envelope["error"]["code"] == "CORRUPT_TRAILING_EVENT", envelope
            assert envelope["ok"] is True, (tool, envelope)
            repaired = ledger.read_bytes()  # empty once the task (its only events) is deleted
            assert repaired == b"" or repaired.endswith(b"\n"), tool  # no torn line left behind


HOLD_LOCK = """
import sys
from intentloop.store import ProjectStore
with ProjectStore(sys.argv[1], sys.argv[2]).locked():
    print("held", flush=True)
    sys.stdin.read()
print("released", flush=True)
"""


async def test_lock_timeout_is_retryable_and_bounded(data_root: Path, project: Path) -> None:
    lock_env = {"INTENT_LOOP_LOCK_WAIT_S": "0.3", "INTENT_LOOP_LOCK_CEILING_S": "1"}
    async with H.server(data_root, env=lock_env) as client:
        s = Surface(client, project)
        task = await _start(s, "lock-start")
        ledger = H.ledger_path(data_root, project)
        before = ledger.read_bytes()
        holder_env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP_LOCK_")}
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(data_root), s.project_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=holder_env,
        )
        try:
            assert holder.stdout is not None and holder.stdin is not None
            with trio.fail_after(10):
                assert await trio.to_thread.run_sync(holder.stdout.readline) == b"held\n"
            write = _explicit(task, "lock-write", "Written once the lock is free")
            started = time.monotonic()
            error = await s.fail("intent_add_explicit", write, "LOCK_TIMEOUT")
            assert error["retryable"] is True and time.monotonic() - started < 5
            await s.fail("intent_start_task", {"request_id": "lock-start-2"}, "LOCK_TIMEOUT")
            assert ledger.read_bytes() == before
            await s.ok("intent_get_snapshot", {"task_id": task})  # reads are lock-free: positive control
            holder.stdin.close()
            with trio.fail_after(10):
                assert await trio.to_thread.run_sync(holder.stdout.readline) == b"released\n"
                await trio.to_thread.run_sync(holder.wait)
        finally:
            if holder.poll() is None:
                holder.kill()
            holder.wait()
            for stream in (holder.stdin, holder.stdout):
                if stream is not None:
                    stream.close()
        claim = await s.ok("intent_add_explicit", write)  # the retry now succeeds
        assert claim["statement"] == "Written once the lock is free"
        assert len(_events_with(data_root, project, "lock-write")) == 1


def _rehashed(event: dict[str, Any], **changes: Any) -> bytes:
    """``event`` with ``changes`` and a recomputed ``event_hash``: a well-formed line the chain check accepts."""
    body = {key: value for key, value in {**event, **changes}.items() if key != "event_hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["event_hash"] = hashlib.sha256(canonical.encode()).hexdigest()
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


async def test_unsafe_ledger_files_and_unknown_schema_versions(data_root: Path, project: Path, tmp_path: Path) -> None:
    async with H.server(data_root) as client:
        s = Surface(client, project)
        task = await _start(s, "unsafe-start")
        await s.ok("intent_add_explicit", _explicit(task, "unsafe-1", "Stored before the tampering"))
        ledger = H.ledger_path(data_root, project)
        original = ledger.read_bytes()
        write = _explicit(task, "unsafe-2", "Written after the tampering")
        read = {"task_id": task}

        os.link(ledger, tmp_path / "hard-link")  # a second name could be written through
        await s.fail("intent_get_snapshot", read, "UNSAFE_DATA_FILE")
        await s.fail("intent_add_explicit", write, "UNSAFE_DATA_FILE")
        (tmp_path / "hard-link").unlink()
        await s.ok("intent_get_snapshot", read)

        elsewhere = tmp_path / "elsewhere.jsonl"
        elsewhere.write_bytes(original)
        ledger.unlink()
        ledger.symlink_to(elsewhere)
        await s.fail("intent_get_snapshot", read, "PATH_ESCAPE")
        await s.fail("intent_add_explicit", write, "PATH_ESCAPE")
        assert elsewhere.read_bytes() == original
        ledger.unlink()
        ledger.write_bytes(original)
        ledger.chmod(0o600)
        await s.ok("intent_get_snapshot", read)

        first, last = original.splitlines(keepends=True)
        for version, code in ((2, "FUTURE_SCHEMA"), (0, "MIGRATION_UNAVAILABLE")):
            ledger.write_bytes(first + _rehashed(json.loads(last), schema_version=version))
            error = await s.fail("intent_get_snapshot", read, code)
            assert "line 2" in error["message"], error
            await s.fail("intent_add_explicit", write, code)
        ledger.write_bytes(first + _rehashed(json.loads(last)))  # positive control: the same rewrite, version 1
        await s.ok("intent_add_explicit", write)
