"""Signed heads and exports, checked through ``intentloop verify --json`` (a real subprocess) and the real service.

Each refusal has its positive control: the same ledger or export, untouched, is ``valid``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import IntentLoopError
from intentloop.service.intent_service import IntentService
from intentloop.store import ProjectStore, canonicalize_project_root

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
HOOK = [*INTENTLOOP, "hook"]
SESSION = "3b1c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f71"


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class World:
    def __init__(self, tmp: Path, name: str = "data") -> None:
        self.data = tmp / name
        repo = tmp / "repo"
        repo.mkdir(exist_ok=True)
        self.root = canonicalize_project_root(str(repo))
        self.store = ProjectStore(self.data, self._pid())
        self.service = IntentService(lambda: self.data)

    def _pid(self) -> str:
        from intentloop.model import project_id_for

        return project_id_for(self.root)

    @property
    def pid(self) -> str:
        return self.store.project_id

    async def call(self, tool: str, **arguments: Any) -> Any:
        return await self.service.dispatch(tool, arguments, project_root=self.root, project_id=self.pid)

    async def task_with_claims(self, *statements: str, session: str | None = None) -> str:
        extra = {"host_session_id": session} if session else {}
        request_id = f"start-{len(statements)}-{statements[0] if statements else ''}".replace(" ", "_")
        snap = await self.call("intent_start_task", request_id=request_id, initial_explicit=list(statements), **extra)
        return str(snap["task_id"])

    def verify(self) -> tuple[int, dict[str, Any]]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.data.parent),
            "INTENT_LOOP_DATA_DIR": str(self.data),
        }
        proc = subprocess.run(
            [*INTENTLOOP, "verify", "--project-id", self.pid, "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        return proc.returncode, json.loads(proc.stdout)

    def rewrite_wholesale(self, old: str, new: str) -> None:
        """What another program without the key can do: edit an event and recompute every hash and link."""
        events = [json.loads(line) for line in self.store.ledger_path.read_bytes().splitlines()]
        prev = None
        for event in events:
            event["payload"] = json.loads(json.dumps(event["payload"]).replace(old, new))
            event["prev_hash"] = prev
            event.pop("event_hash")
            event["event_hash"] = hashlib.sha256(_canonical(event)).hexdigest()
            prev = event["event_hash"]
        self.store.ledger_path.write_bytes(b"".join(_canonical(e) + b"\n" for e in events))


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _signature(report: dict[str, Any]) -> tuple[str, Any]:
    return report["signature"], report["signed_events"]


async def test_wholesale_rewritten_chain_is_invalid(world: World) -> None:
    await world.task_with_claims("Never change the public API")
    code, report = world.verify()
    assert (code, report["intact"], _signature(report)) == (0, True, ("valid", 1))  # positive control
    world.rewrite_wholesale("Never change", "Always change")
    code, report = world.verify()
    assert report["intact"] is True  # every hash recomputed: the chain alone cannot tell
    assert (code, report["signature"], report["error"]["code"]) == (1, "invalid", "SIGNATURE_INVALID")


async def test_tampered_or_garbled_head_signature_is_invalid(world: World) -> None:
    await world.task_with_claims("Keep the output JSON")
    sig_path = world.store.project_dir / "head.sig"
    original = sig_path.read_bytes()
    record = json.loads(original)
    flipped = record["signature"][:-1] + ("0" if record["signature"][-1] != "0" else "1")
    sig_path.write_bytes(_canonical({**record, "signature": flipped}) + b"\n")
    assert world.verify()[1]["signature"] == "invalid"
    sig_path.write_bytes(b"not json")
    assert world.verify()[1]["signature"] == "invalid"
    sig_path.write_bytes(_canonical({**record, "events": record["events"] + 1}) + b"\n")  # claims more than signed
    assert world.verify()[1]["signature"] == "invalid"
    for lost in (b"", b"\0" * len(original)):  # a lost signature write reads like a deleted one: on a project
        sig_path.write_bytes(lost)  # this installation signed, that is invalid (a program without the key can delete)
        assert world.verify()[1]["signature"] == "invalid"
    sig_path.write_bytes(original)
    assert world.verify()[1]["signature"] == "valid"  # positive control


async def test_truncated_chain_is_invalid(world: World) -> None:
    task = await world.task_with_claims("first")
    await world.call(
        "intent_add_explicit",
        task_id=task,
        request_id="r2",
        statement="second",
        source_ref={"kind": "user_event", "event_id": "t2"},
        facets=["outcome"],
        confirmation_reason="direct_statement",
    )
    lines = world.store.ledger_path.read_bytes().splitlines(keepends=True)
    world.store.ledger_path.write_bytes(b"".join(lines[:-1]))
    code, report = world.verify()
    assert (code, report["intact"], report["signature"]) == (1, True, "invalid")


def test_ledger_written_by_the_original_is_unsigned(world: World, ledger_kit: Any) -> None:
    data, _events = ledger_kit.build_ledger(world.pid, 3)
    world.store.project_dir.mkdir(parents=True, mode=0o700)
    world.store.ledger_path.write_bytes(data)
    code, report = world.verify()
    assert (code, report["intact"], _signature(report)) == (0, True, ("unsigned", None))
    assert not (world.data / "keys").exists()  # reading created no key


async def test_events_appended_without_the_key_are_unsigned_until_the_next_write(world: World, ledger_kit: Any) -> None:
    task = await world.task_with_claims("signed claim")
    view = world.store.read()
    event = ledger_kit.make_event(world.pid, view.head_hash, task_id=task, request_id="orig-1", payload={})
    with world.store.ledger_path.open("ab") as ledger:  # the original implementation extends our ledger
        ledger.write(ledger_kit.line(event))
    code, report = world.verify()
    assert (code, _signature(report)) == (0, ("unsigned", 1))  # the signed prefix still verifies; the rest is not
    await world.call("intent_set_mode", task_id=task, request_id="m1", mode="on")
    assert _signature(world.verify()[1]) == ("valid", 3)


async def test_another_installations_key_is_invalid_here_and_unknown_where_nobody_signed(tmp_path: Path) -> None:
    mine = World(tmp_path, "data")
    task = await mine.task_with_claims("alpha")
    theirs = World(tmp_path, "other-data")
    await theirs.task_with_claims("alpha")
    assert theirs.verify()[1]["signature"] == "valid"  # positive control: valid where its key lives
    (mine.store.project_dir / "head.sig").write_bytes((theirs.store.project_dir / "head.sig").read_bytes())
    code, report = mine.verify()  # this installation signed the project: another key's head.sig is a forgery
    assert (code, report["signature"], report["error"]["code"]) == (1, "invalid", "SIGNATURE_INVALID")
    assert "another key" in report["signature_problem"]
    with pytest.raises(IntentLoopError) as refused:  # and no writer extends or re-signs it
        await mine.call("intent_set_mode", task_id=task, request_id="m1", mode="on")
    assert refused.value.code == "SIGNATURE_INVALID"
    # A project nobody here ever signed (its ledger and head.sig copied from another installation): unknown_key
    third = World(tmp_path, "third-data")
    third.store.project_dir.mkdir(parents=True, mode=0o700)
    for name in ("ledger.jsonl", "head.sig"):
        (third.store.project_dir / name).write_bytes((theirs.store.project_dir / name).read_bytes())
    code, report = third.verify()
    assert (code, report["signature"], report["signed_here"]) == (0, "unknown_key", False)


async def test_the_key_is_private_and_made_on_the_first_write(world: World) -> None:
    await world.call("intent_status")  # a read creates no key
    assert not (world.data / "keys" / "ed25519.key").exists()
    await world.task_with_claims("alpha")
    key = world.data / "keys" / "ed25519.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    sig = json.loads((world.store.project_dir / "head.sig").read_bytes())
    assert set(sig) == {"head_hash", "events", "key_id", "signature", "mac"}  # mac: checked without cryptography
    assert stat.S_IMODE((world.store.project_dir / "head.sig").stat().st_mode) == 0o600
    assert sig["head_hash"] == world.store.read().head_hash and sig["events"] == 1


async def test_deletion_and_torn_tail_repair_are_signed(world: World) -> None:
    keep = await world.task_with_claims("keep")
    doomed = await world.task_with_claims("doomed")
    await world.call("intent_delete", task_id=doomed, target="task", confirmation=f"DELETE TASK {doomed}")
    assert _signature(world.verify()[1]) == ("valid", len(world.store.read()))
    with world.store.ledger_path.open("ab") as ledger:
        ledger.write(b'{"actor":"user","ev')  # a crashed writer's torn tail
    await world.call("intent_set_mode", task_id=keep, request_id="m2", mode="on")  # repairs, then appends
    code, report = world.verify()
    assert (code, report["intact"], report["signature"]) == (0, True, "valid")


async def test_a_hook_that_writes_signs_too(world: World) -> None:
    await world.task_with_claims("hooked", session=SESSION)
    before = world.store.read()
    payload = {
        "session_id": SESSION,
        "cwd": world.root,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "go on",
        "turn_id": "turn-77",
    }
    env = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", ""), "INTENT_LOOP_DATA_DIR": str(world.data)}
    proc = subprocess.run(HOOK, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=30)
    assert proc.returncode == 0 and json.loads(proc.stdout)["continue"] is True
    after = world.store.read()
    assert len(after) == len(before) + 1  # the hook appended its observation
    assert _signature(world.verify()[1]) == ("valid", len(after))


async def test_exports_are_signed_and_imports_report_it(tmp_path: Path) -> None:
    world = World(tmp_path)
    task = await world.task_with_claims("exported claim")
    graph = await world.call("intent_export", task_id=task)
    assert set(graph["signature"]) == {"algorithm", "key_id", "public_key", "signature"}
    target = await world.call("intent_start_task", request_id="t2")
    snap = await world.call("intent_import", task_id=target["task_id"], request_id="i1", graph=graph)
    assert snap["signature_status"] == "valid"  # positive control
    tampered = json.loads(json.dumps(graph).replace("exported claim", "forged claim"))
    snap = await world.call("intent_import", task_id=target["task_id"], request_id="i2", graph=tampered)
    assert snap["signature_status"] == "invalid"
    assert "forged claim" in {c["statement"] for c in snap["active_claims"]}  # still imported, as history
    other = World(tmp_path, "other-data")
    foreign_task = await other.task_with_claims("foreign claim")
    foreign = await other.call("intent_export", task_id=foreign_task)
    snap = await world.call("intent_import", task_id=target["task_id"], request_id="i3", graph=foreign)
    assert snap["signature_status"] == "unknown_key"
    # an unsigned export (as the original writes it) imports as explicit_import history, with no verdict added
    unsigned = await world.call("intent_export", task_id=task, original_format=True)
    assert "signature" not in unsigned
    snap = await world.call("intent_import", task_id=target["task_id"], request_id="i4", graph=unsigned)
    assert "signature_status" not in snap
    imported = [c for c in snap["active_claims"] if c["statement"] == "exported claim"]
    assert imported and all(c["source_ref"]["kind"] == "explicit_import" for c in imported)


async def test_a_key_that_cannot_sign_refuses_the_write(world: World) -> None:
    # Before: the write was committed unsigned and head.sig removed. A writer now never extends a chain it cannot
    # sign: the unsafe key is refused before anything is written.
    task = await world.task_with_claims("alpha")
    before = world.store.ledger_path.read_bytes()
    key = world.data / "keys" / "ed25519.key"
    key.chmod(0o644)  # an unsafe key is refused: nothing can be signed with it
    with pytest.raises(IntentLoopError) as refused:
        await world.call(
            "intent_add_explicit",
            task_id=task,
            request_id="after",
            statement="written anyway",
            source_ref={"kind": "user_event", "event_id": "t9"},
            facets=["outcome"],
            confirmation_reason="direct_statement",
        )
    assert refused.value.code == "UNSAFE_DATA_FILE"
    assert world.store.ledger_path.read_bytes() == before  # nothing was committed
    key.chmod(0o600)
    assert _signature(world.verify()[1]) == ("valid", 1)
    await world.call("intent_set_mode", task_id=task, request_id="m9", mode="on")
    assert _signature(world.verify()[1]) == ("valid", len(world.store.read()))  # positive control: signed again
