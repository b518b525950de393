"""What a program without the key can no longer get past (issue 21, item 2), through real processes: the CLI
(``intentloop verify``, ``verify --accept``, ``keys rotate``, ``status``), hook processes and an ``intentloop serve``
subprocess. Each refusal has its positive control beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.store import ProjectStore

from _support import mcp_wire as W
from _support.hook_world import HookWorld
from _support.tool_args import explicit, inference

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "intentloop"]
SESSION = "5e1c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f72"
SECRET_WORDS = "Never change the public API"
FORGED_WORDS = "Always change the public API"


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class World(HookWorld):
    """A project with one linked task holding the user's words, and the CLI, hooks and server around it."""

    def env(self) -> dict[str, str]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.data.parent),
            "INTENT_LOOP_DATA_DIR": str(self.data),
        }
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def hook(self, event: str = "SessionStart", **fields: Any) -> dict[str, Any]:  # type: ignore[override]
        passed = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
        return super().hook(event, env=passed, **fields)

    def cli(self, *args: str) -> tuple[int, dict[str, Any]]:
        proc = subprocess.run(
            [*INTENTLOOP, *args, "--json"], capture_output=True, text=True, env=self.env(), timeout=60
        )
        return proc.returncode, json.loads(proc.stdout)

    def verify(self) -> tuple[int, dict[str, Any]]:
        return self.cli("verify", "--project-id", self.pid)

    async def start(self) -> str:
        snap = await self.call(
            "intent_start_task", request_id="start", host_session_id=self.session, initial_explicit=[SECRET_WORDS]
        )
        return str(snap["task_id"])

    def prompt(self, turn: str) -> dict[str, Any]:
        return self.hook("UserPromptSubmit", prompt="go on", turn_id=turn)

    def problems(self) -> str:
        log = self.data / "hook-problems.log"
        return log.read_text() if log.exists() else ""

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.store.ledger_path.read_bytes().splitlines()]

    def rewrite_wholesale(self, old: str, new: str) -> None:
        """Another program without the key: edit an event and recompute every hash and link."""
        prev = None
        events = self.events()
        for event in events:
            event["payload"] = json.loads(json.dumps(event["payload"]).replace(old, new))
            event["prev_hash"] = prev
            event.pop("event_hash")
            event["event_hash"] = hashlib.sha256(_canonical(event)).hexdigest()
            prev = event["event_hash"]
        self.store.ledger_path.write_bytes(b"".join(_canonical(e) + b"\n" for e in events))

    @property
    def head_sig(self) -> Path:
        return self.store.project_dir / "head.sig"

    @property
    def key(self) -> Path:
        return self.data / "keys" / "ed25519.key"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path, SESSION)


def _context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def _serve_call(world: World, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call through a real ``intentloop serve`` process; the envelope."""
    with W.Wire(world.env() | {"HOME": str(world.data.parent)}, command=[*INTENTLOOP, "serve"]) as wire:
        W.initialize(wire)
        answer = wire.request("tools/call", {"name": tool, "arguments": {**arguments, "project_root": world.root}})
    envelope: dict[str, Any] = answer["result"]["structuredContent"]
    return envelope


async def test_rewrite_with_head_sig_deleted_is_invalid_and_refused_until_accepted(world: World) -> None:
    task = await world.start()
    assert world.prompt("turn-1")["continue"] is True  # positive control: the hook writes and signs
    code, report = world.verify()
    assert (code, report["signature"], report["signed_here"]) == (0, "valid", True)
    world.rewrite_wholesale("Never change", "Always change")
    world.head_sig.unlink()  # (a): before, this read "unsigned" and exited 0
    code, report = world.verify()
    assert (code, report["intact"], report["signature"], report["error"]["code"]) == (
        1,
        True,
        "invalid",
        "SIGNATURE_INVALID",
    )
    assert report["signature_problem"] == "head.sig is missing"
    before = world.store.ledger_path.read_bytes()
    # Writers refuse: the hook fails open and logs it, the server answers the stable code, nothing is re-signed.
    answer = world.prompt("turn-2")
    assert FORGED_WORDS not in json.dumps(answer)
    assert "SIGNATURE_INVALID" in world.problems()
    envelope = _serve_call(world, "intent_add_explicit", explicit(task, "r-forged", "more words"))
    assert (envelope["ok"], envelope["error"]["code"]) == (False, "SIGNATURE_INVALID")
    assert world.store.ledger_path.read_bytes() == before and not world.head_sig.exists()
    assert world.verify()[0] == 1
    # The explicit way out shows what it accepts, then signs it as adopted; writes work again.
    code, accepted = world.cli("verify", "--project-id", world.pid, "--accept", "--yes")
    assert code == 0 and accepted["accepted"] == {
        "events": len(world.events()),
        "head_hash": report["head_hash"],
        "adopted": len(world.events()),
    }
    code, report = world.verify()
    assert (code, report["signature"], report["adopted_events"]) == (0, "valid", len(world.events()))
    envelope = _serve_call(world, "intent_add_explicit", explicit(task, "r-after", "accepted now"))
    assert envelope["ok"] is True
    assert world.verify()[1]["signature"] == "valid"


async def test_head_sig_under_another_key_id_is_invalid(world: World) -> None:
    await world.start()
    record = json.loads(world.head_sig.read_bytes())
    world.rewrite_wholesale("Never change", "Always change")
    world.head_sig.write_bytes(_canonical({**record, "key_id": "0" * 64}) + b"\n")  # (b): was unknown_key, exit 0
    code, report = world.verify()
    assert (code, report["signature"]) == (1, "invalid")
    assert "another key" in report["signature_problem"]
    world.prompt("turn-1")
    assert world.verify()[1]["signature"] == "invalid"  # the hook's write did not re-sign it


async def test_keyless_truncation_is_never_re_signed_by_the_next_write(world: World) -> None:
    task = await world.start()
    await world.call("intent_add_explicit", **explicit(task, "r2", "second"))
    assert world.verify()[1]["signature"] == "valid"  # positive control
    lines = world.store.ledger_path.read_bytes().splitlines(keepends=True)
    world.store.ledger_path.write_bytes(b"".join(lines[:-1]))
    assert world.verify()[1]["signature"] == "invalid"
    world.prompt("turn-1")  # before: this write re-signed the truncated chain and verify said valid
    envelope = _serve_call(world, "intent_add_explicit", explicit(task, "r3", "third"))
    assert envelope["error"]["code"] == "SIGNATURE_INVALID"
    code, forgot = world.cli("forget", "task", task, "--project-id", world.pid, "--yes")
    assert (code, forgot["error"]["code"]) == (1, "SIGNATURE_INVALID")  # the CLI's writes exit 1
    assert "verify --accept" in forgot["error"]["remedy"]
    code, report = world.verify()
    assert (code, report["signature"]) == (1, "invalid")
    assert "not in the chain" in report["signature_problem"]


async def test_a_deleted_key_is_never_replaced_silently(world: World) -> None:
    task = await world.start()
    world.key.unlink()  # (c): before, the next write made a new key and signed whatever the ledger held as valid
    code, report = world.verify()  # the public key recorded for the project still checks head.sig
    assert (code, report["signature"]) == (0, "valid")
    answer = world.prompt("turn-1")
    assert answer["continue"] is True and "SIGNING_KEY_MISSING" in world.problems()
    envelope = _serve_call(world, "intent_add_explicit", explicit(task, "r2", "second"))
    assert envelope["error"]["code"] == "SIGNING_KEY_MISSING"
    assert "intentloop keys rotate" in envelope["error"]["message"]
    assert not world.key.exists()
    world.rewrite_wholesale("Never change", "Always change")  # and a forgery is still caught without the key
    code, report = world.verify()
    assert (code, report["signature"]) == (1, "invalid")
    world.prompt("turn-2")
    assert not world.key.exists() and world.verify()[1]["signature"] == "invalid"


async def test_keys_rotate_shows_the_reports_and_re_signs_only_what_the_old_key_vouches_for(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    honest = World(tmp_path / "a", SESSION)
    task = await honest.start()
    forged = World(tmp_path / "b", SESSION)
    forged.data = honest.data  # a second project of the same installation
    forged.store = ProjectStore(honest.data, forged.pid)
    await forged.start()
    _code, shown = honest.cli("keys", "show")
    old_id = shown["key_id"]
    assert shown["signed_projects"] == 2
    forged.rewrite_wholesale("Never change", "Always change")
    honest.key.unlink()
    code, rotated = honest.cli("keys", "rotate", "--yes")
    assert code == 0
    verdicts = {p["project_id"]: (p["signature"], p["resign"]) for p in rotated["projects"]}
    assert verdicts == {honest.pid: ("valid", True), forged.pid: ("invalid", False)}
    assert rotated["resigned"] == [honest.pid] and rotated["key_id"] != old_id
    assert honest.verify()[0:1] == (0,) and honest.verify()[1]["signature"] == "valid"
    assert forged.verify()[1]["signature"] == "invalid"  # stays refused until verify --accept
    await honest.call("intent_add_explicit", **explicit(task, "r2", "after rotation"))
    assert honest.verify()[1]["signature"] == "valid"  # positive control: writes work under the new key
    code, again = honest.cli("keys", "rotate", "--yes")
    assert (code, again["error"]["code"]) == (2, "INVALID_ARGUMENTS")  # a present key is not replaced


async def test_events_appended_after_the_signed_prefix_are_adopted_and_shown(world: World, ledger_kit: Any) -> None:
    task = await world.start()
    head = world.store.read().head_hash
    event = ledger_kit.make_event(world.pid, head, task_id=task, request_id="orig-1", payload={})
    with world.store.ledger_path.open("ab") as ledger:  # the original implementation extends our ledger
        ledger.write(ledger_kit.line(event))
    code, report = world.verify()
    assert (code, report["signature"], report["signed_events"], report["adopted_events"]) == (0, "unsigned", 1, 0)
    world.prompt("turn-1")  # the next ordinary write adopts it
    code, report = world.verify()
    assert (code, report["signature"], report["signed_events"]) == (0, "valid", 3)
    assert report["adopted_events"] == 1
    assert [(a["after"], a["events"]) for a in report["adopted"]] == [(1, 1)] and report["adopted"][0]["at"]
    record = json.loads(world.head_sig.read_bytes())
    assert record["adopted"] == report["adopted"]  # head.sig keeps it, signed
    _code, status = world.cli("status")
    (project,) = [p for p in status["projects"] if p["project_id"] == world.pid]
    assert (project["signature"], project["adopted_events"], project["adopted_at"]) == (
        "valid",
        1,
        report["adopted"][0]["at"],
    )
    world.prompt("turn-2")  # the installation's own writes add no adoption
    assert world.verify()[1]["adopted_events"] == 1


async def test_reads_carry_the_failure(world: World) -> None:
    task = await world.start()
    answer = world.hook("SessionStart", source="startup")
    assert SECRET_WORDS in _context(answer)  # positive control: the user's words are injected
    envelope = _serve_call(world, "intent_get_snapshot", {"task_id": task})
    assert envelope["ok"] is True
    world.rewrite_wholesale("Never change", "Always change")
    answer = world.hook("SessionStart", source="startup")
    assert FORGED_WORDS not in json.dumps(answer) and SECRET_WORDS not in json.dumps(answer)
    assert "SIGNATURE_INVALID" in world.problems()
    assert FORGED_WORDS not in json.dumps(world.prompt("turn-1"))
    for tool in ("intent_get_snapshot", "intent_export", "intent_list_candidates"):
        envelope = _serve_call(world, tool, {"task_id": task})
        assert (envelope["ok"], envelope["error"]["code"]) == (False, "SIGNATURE_INVALID"), tool
        assert FORGED_WORDS not in json.dumps(envelope)


async def test_what_stays_undetectable_deleting_key_record_and_head_sig_together(world: World) -> None:
    await world.start()
    world.rewrite_wholesale("Never change", "Always change")
    world.key.unlink()
    world.head_sig.unlink()
    assert world.verify()[1]["signature"] == "invalid"  # the record alone still catches it
    for record in (world.data / "keys" / "signed-projects").iterdir():
        record.unlink()
    code, report = world.verify()  # the documented limit: reads like a ledger the original implementation wrote
    assert (code, report["signature"], report["signed_here"]) == (0, "unsigned", False)


_CHURN = """
import sys, trio
from intentloop.service.intent_service import IntentService
data, root, pid, task, rounds = sys.argv[1:6]
service = IntentService(lambda: __import__("pathlib").Path(data))

async def main():
    async def call(tool, **args):
        return await service.dispatch(tool, args, project_root=root, project_id=pid)
    for n in range(int(rounds)):
        claim = await call(
            "intent_add_explicit", task_id=task, request_id=f"churn-{n}", statement=f"churn {n}",
            source_ref={"kind": "user_event", "event_id": f"t{n}"}, facets=["outcome"],
            confirmation_reason="direct_statement",
        )
        await call("intent_delete", task_id=task, target="claim", claim_id=claim["claim_id"],
                   confirmation=f"DELETE CLAIM {claim['claim_id']}")
    print("done", flush=True)

trio.run(main)
"""


async def test_verify_never_reports_damage_while_an_honest_writer_deletes_claims(world: World) -> None:
    # Before: 3 of 40 runs reported SIGNATURE_INVALID (head.sig read before a deletion's rewrite, the ledger after it;
    # the retry compared only the ledger's size) and one CORRUPT_TRAILING_EVENT.
    task = await world.start()
    for n in range(30):
        await world.call("intent_add_inference", **inference(task, f"bulk-{n}", f"filler {n}"))
    writer = subprocess.Popen(
        [sys.executable, "-c", _CHURN, str(world.data), world.root, world.pid, task, "400"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **world.env()},
    )
    verdicts = []
    try:
        while writer.poll() is None and len(verdicts) < 40:
            code, report = world.verify()
            verdicts.append((code, report["intact"], report["signature"], report.get("error", {}).get("code")))
    finally:
        writer.kill()
        _out, err = writer.communicate()
    assert b"Traceback" not in err
    assert len(verdicts) >= 10, "the writer finished before verify ran often enough"
    assert [v for v in verdicts if v != (0, True, "valid", None)] == []
