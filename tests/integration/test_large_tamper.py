"""A 100,000-event ledger with one byte changed in the middle (same size), and the same plus a well-chained append:
the next write refuses it (``CORRUPT_LEDGER``, nothing appended) and the next hook fails open and injects nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from intentloop.model import event_line, project_id_for, seal
from intentloop.model.events import EventDraft
from intentloop.store import canonicalize_project_root

SESSION = "5c1c2a9e-5b3d-4c8e-9a10-2b3c4d5e6f72"
_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]
EVENTS = 100_000
TASK = "7d0e4a4c-3b1f-4d2e-8f6a-1b2c3d4e5f60"  # bound to SESSION, small
FILLER = "8e1f5b5d-4c2a-4e3f-9a7b-2c3d4e5f6a71"  # holds the history
RULE = "Keep the public API stable"


def _observed(request_id: str) -> EventDraft:
    return EventDraft(event_type="source_observed", task_id=FILLER, actor="user", request_id=request_id, payload={})


_SEED = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import test_large_tamper as t
from intentloop.model import event_line, seal, session_hash, sha256_hex
from intentloop.model.events import EventDraft
from intentloop.store import ProjectStore
data_root, pid = Path(sys.argv[1]), sys.argv[2]
claim = {
    "claim_id": "0b4c1f0e-9d2a-4c3b-8e7f-6a5b4c3d2e1f", "statement": t.RULE, "role": "user",
    "epistemic_status": "explicit", "source_ref": {"kind": "user_event", "sha256": sha256_hex(t.RULE)},
    "scope": "task", "valid_from": "2026-12-01T00:00:00.000Z", "last_confirmed": "2026-12-01T00:00:00.000Z",
    "supersedes": [], "facets": ["hard_constraint"], "related_claim_ids": [],
}
start = {"mode": "on", "label": "large", "host_session_hash": session_hash(t.SESSION), "initial_claims": [claim],
         "request_fingerprint": sha256_hex("start")}
lines, prev = [], None
for index in range(t.EVENTS):
    if index == 0:
        draft = EventDraft(event_type="task_started", task_id=t.TASK, actor="user", request_id="start", payload=start)
    else:
        draft = t._observed(f"f-{index}")
    event = seal(draft, project_id=pid, prev_hash=prev)
    prev = event.event_hash
    lines.append(event_line(event))
(data_root / "projects" / pid).mkdir(parents=True, mode=0o700)
ledger = data_root / "projects" / pid / "ledger.jsonl"
ledger.write_bytes(b"".join(lines))
os.chmod(ledger, 0o600)
"""

_WRITE = """
import sys
sys.path.insert(0, sys.argv[4])
import test_large_tamper as t
from intentloop.errors import IntentLoopError
from intentloop.store import ProjectStore
try:
    with ProjectStore(sys.argv[1], sys.argv[2]).locked() as ledger:
        ledger.append([t._observed(sys.argv[3])])
    print("OK")
except IntentLoopError as exc:
    print(exc.code, getattr(exc, "line", None))
"""


def _write(base: Path, request_id: str) -> list[str]:
    """One write by another process (this one never holds the 100,000 events: later tests measure their children's
    peak RSS, which on Linux starts from the parent's size)."""
    pid = next((base / "data" / "projects").iterdir()).name
    here = str(Path(__file__).parent)
    run = subprocess.run(
        [sys.executable, "-c", _WRITE, str(base / "data"), pid, request_id, here],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return run.stdout.split()


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    """A project whose ledger holds 100,000 events: a task bound to SESSION with one explicit claim, then another
    task's history (the bound task stays small: a hook reads its lines, not the ledger's); then one write, so the
    checkpoint and the task index vouch for it."""
    base = tmp_path_factory.mktemp("large")
    repo = base / "repo"
    repo.mkdir()
    pid = project_id_for(canonicalize_project_root(str(repo)))
    here = str(Path(__file__).parent)
    subprocess.run([sys.executable, "-c", _SEED, str(base / "data"), pid, here], check=True, timeout=600)
    assert _write(base, "w") == ["OK"]
    ledger = base / "data" / "projects" / pid / "ledger.jsonl"
    return base, ledger.read_bytes(), (ledger.parent / "head.sig").read_bytes()


def _hook(base: Path, event: str, **fields: object) -> str:
    payload = {"session_id": SESSION, "cwd": str(base / "repo"), "hook_event_name": event, "transcript_path": "/t"}
    env = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", ""), "INTENT_LOOP_DATA_DIR": str(base / "data")}
    proc = subprocess.run(
        HOOK, input=json.dumps({**payload, **fields}).encode(), capture_output=True, env=env, timeout=60
    )
    assert proc.returncode == 0
    answer = json.loads(proc.stdout)
    assert answer["continue"] is True
    return proc.stdout.decode()


@pytest.mark.slow
@pytest.mark.parametrize("then_append", [False, True], ids=["same-size", "plus-chained-append"])
def test_a_middle_byte_of_a_large_ledger(large, then_append):
    base, good, signed = large
    ledger = next((base / "data" / "projects").iterdir()) / "ledger.jsonl"
    ledger.write_bytes(good)  # each case starts from the good ledger (and the head.sig that signs it: alone, the
    (ledger.parent / "head.sig").write_bytes(signed)  # earlier case's signed longer chain reads as a truncation)...
    os.chmod(ledger, 0o600)
    assert _write(base, "x") == ["OK"]  # ...and a write, so the checkpoint vouches for exactly this file
    assert RULE in _hook(base, "SessionStart")  # positive control: the hook injects the rule
    data = bytearray(ledger.read_bytes())
    middle = data.index(b'"f-50000"') + 3
    data[middle] = ord("9") if data[middle] != ord("9") else ord("8")
    with open(ledger, "r+b") as handle:  # in place: same inode, same size
        handle.write(bytes(data))
    if then_append:
        head = msgspec.json.decode(bytes(data).splitlines()[-1])
        event = seal(
            EventDraft(event_type="source_observed", task_id=TASK, actor="user", request_id="z", payload={}),
            project_id=head["project_id"],
            prev_hash=head["event_hash"],
        )
        with open(ledger, "ab") as handle:
            handle.write(event_line(event))
    before = ledger.read_bytes()
    code, line = _write(base, "y")
    assert code == "CORRUPT_LEDGER" and int(line) > 40_000
    assert ledger.read_bytes() == before  # nothing appended
    out = _hook(base, "SessionStart")
    assert RULE not in out and "additionalContext" not in out  # fails open, injects nothing from this ledger
    out = _hook(base, "UserPromptSubmit", prompt="go on", turn_id="turn-0003-abcd")
    assert RULE not in out
    assert ledger.read_bytes() == before
