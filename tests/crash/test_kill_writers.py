"""kill -9 of writer processes, mostly while they hold the lock: nothing acknowledged is lost or doubled."""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore, head_signature_status
from intentloop.store._checkpoint import CHECKPOINT_NAME

WRITER = Path(__file__).with_name("ledger_writer.py")
PID = project_id_for("/crash/kill")
WRITERS, APPENDS, KILLS = 8, 40, 24


class Writer:
    def __init__(self, name: str, data_root: Path, task: str) -> None:
        self.name, self.data_root, self.task = name, data_root, task
        self.next_index = 0
        self.acked: list[str] = []
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        count = APPENDS - self.next_index
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), "append", str(self.data_root), PID, self.task, "--writer", self.name,
             "--start", str(self.next_index), "--count", str(count)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def collect(self) -> int:
        assert self.process is not None
        out, _err = self.process.communicate(timeout=120)
        lines = [line.split()[1] for line in out.splitlines() if line.startswith("ACK ")]
        self.acked += lines
        if lines:
            self.next_index = int(lines[-1].rsplit("-", 1)[1]) + 1
        return self.process.returncode

    @property
    def done(self) -> bool:
        return self.next_index >= APPENDS


def lock_holder_pid(project_dir: Path) -> int | None:
    try:
        return int(json.loads((project_dir / "ledger.lock" / "owner.json").read_bytes())["pid"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.slow
def test_random_kill_9_of_writers_loses_and_doubles_nothing(data_root):
    rng = random.Random(20261130)
    task = str(uuid.uuid4())
    project_dir = data_root / "projects" / PID
    writers = [Writer(f"w{n}", data_root, task) for n in range(WRITERS)]
    for writer in writers:
        writer.start()
    kills = holder_kills = 0
    deadline = time.monotonic() + 120
    while kills < KILLS and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.01, 0.08))
        running = [w for w in writers if w.process is not None and w.process.poll() is None]
        if not running:
            break
        victims: list[Writer] = []
        for _ in range(50 if kills % 3 != 2 else 0):  # two kills in three aim at the lock holder mid-append
            holder = lock_holder_pid(project_dir)
            victims = [w for w in running if w.process is not None and w.process.pid == holder]
            if victims:
                break
            time.sleep(0.001)
        holder = lock_holder_pid(project_dir)
        victim = victims[0] if victims else rng.choice(running)
        assert victim.process is not None
        os.kill(victim.process.pid, signal.SIGKILL)
        holder_kills += victim.process.pid == holder
        kills += 1
        assert victim.collect() == -signal.SIGKILL or victim.done
        if not victim.done:
            victim.start()
    for writer in writers:
        assert writer.collect() == 0 or writer.done
        while not writer.done:
            writer.start()
            assert writer.collect() == 0
    assert kills >= 20, f"only {kills} kills"

    store = ProjectStore(data_root, PID, config=LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=30))
    with store.locked() as ledger:  # the next write cleans up after the killed writers
        ledger.append([EventDraft(event_type="mode_set", task_id=task, actor="user", request_id="final", payload={})])
    view = store.read()
    counts = collections.Counter(event.request_id for event in view.events)
    acked = [request_id for writer in writers for request_id in writer.acked]
    assert set(acked) <= set(counts) and set(counts.values()) == {1}
    assert len(counts) == WRITERS * APPENDS + 1  # every request landed once, acknowledged before a kill or not
    assert sorted(n for n in os.listdir(project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]  # no temp files, no lock remnants
    assert head_signature_status(store.paths, view.events) == ("valid", len(view))  # the last commit signed its head
    print(f"\n{kills} kills ({holder_kills} of the lock holder), {len(view)} events")


def test_killed_lock_holder_is_reclaimed_before_the_stale_window(data_root):
    task = str(uuid.uuid4())
    holder = subprocess.Popen(
        [sys.executable, str(WRITER), "hold", str(data_root), PID, task], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
    store = ProjectStore(data_root, PID, config=LockConfig())  # default 30 s stale window
    os.kill(holder.pid, signal.SIGKILL)
    try:
        started = time.monotonic()  # the killed holder is still an unreaped zombie here: it counts as dead
        with store.locked() as ledger:
            ledger.append([EventDraft(event_type="mode_set", task_id=task, actor="user", request_id="r", payload={})])
        # The defect this catches is waiting out the 30 s stale window; a third of it is a bound no loaded machine
        # crosses. The real figure (~0.01 s) is the benchmark's dead_owner_s.
        assert time.monotonic() - started < LockConfig().stale_s / 3
    finally:
        holder.communicate()  # reap it and close its pipe
    assert len(store.read()) == 1
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]
