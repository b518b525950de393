"""Power-loss simulation: at a cut, every byte and directory entry not yet made durable by fsync is dropped.

A layer over ``os.fsync`` records, per inode, the bytes a file held when it was last fsynced and, per directory, the
entries (name → inode) it held when it was last fsynced; the state a power cut leaves is the project directory's
durable entries, each with its inode's durable bytes (an inode never fsynced: empty). Writers are threads of this
process, each committing through the store's lock and write path and recording an acknowledgement only after the
commit returned. At each of 8 cuts, taken at a random fsync across three concurrent writers, the surviving ledger must
verify and hold every acknowledged event. The mutation controls remove one fsync of the append path (the file's, or
the directory's when the append creates the file) and show that the same test then loses acknowledged events.

The same cuts run with the writers as separate processes (``power_writer.py``): each records what its fsyncs made
durable in a log shared under ``flock``, the fsync that reaches the cut kills its process and marks the cut, the test
kills the others at once, and the state the cut left is replayed from the log. The thread version stays beside it:
it cuts in the middle of the other writers' system calls without a kill's timing, and runs in a fraction of the time.
"""

from __future__ import annotations

import os
import random
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from power_writer import CUT, from_append, replay

from intentloop.errors import IntentLoopError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore, verify_ledger_bytes

PID = project_id_for("/power/loss")
TASK = str(uuid.uuid4())
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=20)


class Cut(Exception):
    pass


class Durability:
    """The durable state of one directory and the files in it, as fsync made it."""

    def __init__(self, directory: Path, cut_after: int, skip: str | None) -> None:
        self.directory = directory
        self.cut_after = cut_after
        self.skip = skip  # "file": the append's file fsync is a no-op; "dir": its directory fsync on create is
        self.mutex = threading.Lock()
        self.entries: dict[str, int] = {}
        self.contents: dict[int, bytes] = {}
        self.acked: list[str] = []
        self.snapshot: tuple[dict[str, int], dict[int, bytes], list[str]] | None = None
        self.fsyncs = 0
        self._real = os.fsync

    def ack(self, request_id: str) -> None:
        with self.mutex:
            self.acked.append(request_id)

    def fsync(self, fd: int) -> None:
        self._real(fd)
        st = os.fstat(fd)
        with self.mutex:
            if self.snapshot is not None:
                raise Cut()
            skipped = self.skip is not None and from_append()
            if stat.S_ISDIR(st.st_mode):
                if os.readlink(f"/proc/self/fd/{fd}") == str(self.directory) and not (skipped and self.skip == "dir"):
                    self.entries = {
                        name: os.lstat(self.directory / name).st_ino
                        for name in os.listdir(self.directory)
                        if os.path.lexists(self.directory / name)
                    }
            elif stat.S_ISREG(st.st_mode) and not (skipped and self.skip == "file"):
                with open(f"/proc/self/fd/{fd}", "rb") as handle:  # the descriptor may be write-only
                    self.contents[st.st_ino] = handle.read()
            self.fsyncs += 1
            if self.fsyncs >= self.cut_after:
                self.snapshot = (dict(self.entries), dict(self.contents), list(self.acked))
                raise Cut()

    def survivor(self) -> tuple[bytes | None, list[str]]:
        """The ledger's bytes after the cut (``None``: no durable entry) and the acknowledged request ids."""
        assert self.snapshot is not None
        entries, contents, acked = self.snapshot
        inode = entries.get("ledger.jsonl")
        return (None if inode is None else contents.get(inode, b"")), acked


def _writer(store: ProjectStore, name: str, durability: Durability) -> None:
    for index in range(40):
        request_id = f"{name}-{index}"
        draft = EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={})
        try:
            with store.locked(time.monotonic() + 8) as ledger:
                if ledger.view.find_request(TASK, request_id) is None:
                    ledger.append([draft])
        except Cut:
            return
        except IntentLoopError:
            if durability.snapshot is not None:
                return
            continue
        durability.ack(request_id)
        if durability.snapshot is not None:
            return


def run_cut(root: Path, seed: int, skip: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes | None, list[str]]:
    store = ProjectStore(root, PID, config=CONFIG)
    store.paths.ensure()
    rng = random.Random(seed)
    durability = Durability(store.project_dir, cut_after=rng.randint(4, 40), skip=skip)
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", durability.fsync)
        threads = [
            threading.Thread(target=_writer, args=(ProjectStore(root, PID, config=CONFIG), f"w{i}", durability))
            for i in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(t.is_alive() for t in threads)
    assert durability.snapshot is not None, "the cut never came"
    return durability.survivor()


def lost(data: bytes | None, acked: list[str]) -> list[str]:
    """Acknowledged request ids missing from the surviving ledger (which must verify, or be a torn tail only)."""
    if data is None:
        return acked
    verification = verify_ledger_bytes(data, project_id=PID)
    assert verification.error is None or verification.error.code == "CORRUPT_TRAILING_EVENT", verification.error
    present = {e.request_id for e in verification.events}
    return [r for r in acked if r not in present]


@pytest.mark.slow
def test_eight_cuts_across_concurrent_writers_lose_no_acknowledged_event(tmp_path, monkeypatch):
    acknowledged = 0
    for seed in range(8):
        data, acked = run_cut(tmp_path / f"cut-{seed}", seed, None, monkeypatch)
        assert lost(data, acked) == [], seed
        acknowledged += len(acked)
    assert acknowledged > 8  # the cuts came after real acknowledged writes


@pytest.mark.slow
@pytest.mark.parametrize("skip", ["file", "dir"], ids=["without-file-fsync", "without-dir-fsync-on-create"])
def test_mutation_control_the_same_cuts_lose_events_without_an_fsync(tmp_path, monkeypatch, skip):
    losses = 0
    for seed in range(8):
        data, acked = run_cut(tmp_path / f"cut-{seed}", seed, skip, monkeypatch)
        losses += bool(lost(data, acked))
    assert losses > 0


WRITER = str(Path(__file__).resolve().parent / "power_writer.py")


def run_cut_in_processes(root: Path, seed: int, skip: str | None) -> tuple[bytes | None, list[str]]:
    """:func:`run_cut` with three writer processes; the cut kills them all."""
    store = ProjectStore(root, PID, config=CONFIG)
    store.paths.ensure()
    state = root / "power-state"
    state.mkdir()
    cut_after = random.Random(seed).randint(4, 40)
    go_at = time.time() + 1.5  # every writer imported and waiting: they start writing together
    options = ["--cut-after", str(cut_after), "--go-at", str(go_at), *(["--skip", skip] if skip else [])]
    writers = [
        subprocess.Popen([sys.executable, WRITER, str(root), PID, TASK, str(state), f"w{i}", *options])
        for i in range(3)
    ]
    try:
        limit = time.monotonic() + 90
        while not (state / CUT).exists() and any(w.poll() is None for w in writers) and time.monotonic() < limit:
            time.sleep(0.002)
    finally:
        for writer in writers:  # the power cut: everyone still running dies at once
            writer.kill()
            writer.wait()
    assert (state / CUT).exists(), "the cut never came"
    data, acked, fsyncs = replay(state)
    assert fsyncs == cut_after  # the log holds exactly the fsyncs up to the cut
    return data, acked


@pytest.mark.slow
def test_eight_cuts_across_concurrent_writer_processes_lose_no_acknowledged_event(tmp_path):
    acknowledged = 0
    for seed in range(8):
        data, acked = run_cut_in_processes(tmp_path / f"cut-{seed}", seed, None)
        assert lost(data, acked) == [], seed
        acknowledged += len(acked)
    assert acknowledged > 8  # the cuts came after real acknowledged writes


@pytest.mark.slow
@pytest.mark.parametrize("skip", ["file", "dir"], ids=["without-file-fsync", "without-dir-fsync-on-create"])
def test_mutation_control_writer_processes_lose_events_without_an_fsync(tmp_path, skip):
    losses = 0
    for seed in range(8):
        data, acked = run_cut_in_processes(tmp_path / f"cut-{seed}", seed, skip)
        losses += bool(lost(data, acked))
    assert losses > 0
