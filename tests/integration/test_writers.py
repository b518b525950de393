"""Many writer processes on one project: every acknowledged event exactly once, one chain, no leftovers."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from intentloop.model import project_id_for
from intentloop.store import ProjectStore, head_signature_status
from intentloop.store._checkpoint import CHECKPOINT_NAME

WRITER = Path(__file__).parents[1] / "crash" / "ledger_writer.py"
PID = project_id_for("/integration/writers")
WRITERS, APPENDS = 8, 50


def spawn(*args: str) -> subprocess.Popen[str]:
    env = os.environ | {"INTENT_LOOP_LOCK_CEILING_S": "120", "INTENT_LOOP_LOCK_WAIT_S": "20"}
    return subprocess.Popen(
        [sys.executable, str(WRITER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.slow
def test_eight_writers_fifty_appends_each(data_root, ledger_kit):
    task = str(uuid.uuid4())
    started = time.monotonic()
    processes = [
        spawn("append", str(data_root), PID, task, "--writer", f"w{n}", "--count", str(APPENDS)) for n in range(WRITERS)
    ]
    acknowledged: list[str] = []
    for process in processes:
        out, err = process.communicate(timeout=150)
        assert process.returncode == 0, err
        acknowledged += [line.split()[1] for line in out.splitlines() if line.startswith("ACK ")]
    elapsed = time.monotonic() - started
    assert len(acknowledged) == WRITERS * APPENDS == len(set(acknowledged))
    view = ProjectStore(data_root, PID).read()  # verifies the whole chain
    counts = collections.Counter(event.request_id for event in view.events)
    assert set(counts) == set(acknowledged) and set(counts.values()) == {1}
    assert len(view) == WRITERS * APPENDS
    assert sorted(n for n in os.listdir(data_root / "projects" / PID) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]
    # every writer signed its own commit under the lock: the head on disk is the one signed
    assert head_signature_status(ProjectStore(data_root, PID).paths, view.events) == ("valid", len(view))
    print(f"\n{WRITERS}x{APPENDS} appends by {WRITERS} processes in {elapsed:.2f} s")


@pytest.mark.parametrize("fingerprints", ["same", "different"])
def test_processes_racing_one_request_id_produce_one_event(data_root, fingerprints):
    task = str(uuid.uuid4())
    for round_no in range(4):
        go_at = time.time() + 0.6
        request_id = f"race-{round_no}"
        prints = ["1" * 64, "1" * 64 if fingerprints == "same" else "2" * 64]
        processes = [
            spawn(
                "race",
                str(data_root),
                PID,
                task,
                "--request-id",
                request_id,
                "--fingerprint",
                fp,
                "--go-at",
                str(go_at),
            )
            for fp in prints
        ]
        outputs = []
        for process in processes:
            out, err = process.communicate(timeout=60)
            assert process.returncode == 0, err
            outputs.append(out.strip())
        assert sorted(outputs) == sorted(["CREATED", f"EXISTING {fingerprints}"])
        events = [e for e in ProjectStore(data_root, PID).read().events if e.request_id == request_id]
        assert len(events) == 1
