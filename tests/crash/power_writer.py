"""A writer process for the power-loss simulation across processes (run as a script; not a test module).

Every writer process wraps ``os.fsync``: after the real call it records what the fsync made durable — a regular
file's bytes (by inode), or the project directory's entries (name → inode) — in a log shared by all writers, under an
exclusive ``flock`` so the records are in the order the fsyncs happened. The fsync that brings the shared count to
``--cut-after`` is the power cut: it writes the ``cut`` marker and the process kills itself with SIGKILL; every
writer that reaches an fsync or an acknowledgement after the marker kills itself too, and the test SIGKILLs the rest
at once. An acknowledgement (``ack`` record) is logged after the commit returned, under the same lock, so exactly the
acknowledgements logged before the cut count. :func:`replay` rebuilds the state the cut left from the log.

``--skip file|dir`` is the mutation control: the append's file fsync, or its directory fsync on create, records
nothing (as if it were not made).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

from intentloop.errors import IntentLoopError
from intentloop.model import EventDraft
from intentloop.store import LockConfig, ProjectStore

CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=20)
CUT = "cut"
LOG = "log.jsonl"
LOCK = "lock"
COUNT = "fsyncs"


def from_append() -> bool:
    """Whether the fsync being simulated was called by the store's append (``append_durably``), at any depth."""
    frame = sys._getframe(2)  # 0: this function, 1: the fsync stand-in, 2: its caller
    while frame is not None:
        if frame.f_code.co_name == "append_durably":
            return True
        frame = frame.f_back
    return False


class SharedDurability:
    def __init__(self, state: Path, directory: Path, cut_after: int, skip: str | None) -> None:
        self.state = state
        self.directory = directory
        self.cut_after = cut_after
        self.skip = skip
        self._real = os.fsync
        self._lock_fd = os.open(state / LOCK, os.O_RDWR | os.O_CREAT, 0o600)

    def _record(self, record: dict[str, object]) -> None:
        with open(self.state / LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")

    def _die_if_cut(self) -> None:
        if (self.state / CUT).exists():
            os.kill(os.getpid(), signal.SIGKILL)

    def fsync(self, fd: int) -> None:
        self._real(fd)
        st = os.fstat(fd)
        skipped = self.skip is not None and from_append()
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._die_if_cut()
            if stat.S_ISDIR(st.st_mode):
                if os.readlink(f"/proc/self/fd/{fd}") == str(self.directory) and not (skipped and self.skip == "dir"):
                    entries = {
                        name: os.lstat(self.directory / name).st_ino
                        for name in os.listdir(self.directory)
                        if os.path.lexists(self.directory / name)
                    }
                    self._record({"kind": "dir", "entries": entries})
                else:
                    self._record({"kind": "other"})
            elif stat.S_ISREG(st.st_mode) and not (skipped and self.skip == "file"):
                with open(f"/proc/self/fd/{fd}", "rb") as handle:  # the descriptor may be write-only
                    self._record({"kind": "file", "inode": st.st_ino, "data": handle.read().hex()})
            else:
                self._record({"kind": "other"})
            counter = self.state / COUNT
            count = (int(counter.read_text()) if counter.exists() else 0) + 1
            counter.write_text(str(count))
            if count >= self.cut_after:
                (self.state / CUT).write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)  # the power goes, for this writer first
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def ack(self, request_id: str) -> None:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._die_if_cut()
            self._record({"kind": "ack", "request_id": request_id})
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)


def replay(state: Path) -> tuple[bytes | None, list[str], int]:
    """(the ledger's bytes after the cut, ``None`` when it has no durable entry; the acknowledged request ids; the
    number of fsyncs recorded). Every record in the log precedes the cut: after it nobody records."""
    entries: dict[str, int] = {}
    contents: dict[int, bytes] = {}
    acked: list[str] = []
    fsyncs = 0
    for line in (state / LOG).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "ack":
            acked.append(record["request_id"])
            continue
        fsyncs += 1
        if record["kind"] == "dir":
            entries = dict(record["entries"])
        elif record["kind"] == "file":
            contents[record["inode"]] = bytes.fromhex(record["data"])
    inode = entries.get("ledger.jsonl")
    return (None if inode is None else contents.get(inode, b"")), acked, fsyncs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_root")
    parser.add_argument("project_id")
    parser.add_argument("task_id")
    parser.add_argument("state")
    parser.add_argument("name")
    parser.add_argument("--cut-after", type=int, required=True)
    parser.add_argument("--skip", choices=["file", "dir"], default=None)
    parser.add_argument("--go-at", type=float, required=True)
    args = parser.parse_args()
    store = ProjectStore(Path(args.data_root), args.project_id, config=CONFIG)
    durability = SharedDurability(Path(args.state), store.project_dir, args.cut_after, args.skip)
    os.fsync = durability.fsync  # type: ignore[assignment]
    time.sleep(max(0.0, args.go_at - time.time()))  # all writers start together
    for index in range(40):
        request_id = f"{args.name}-{index}"
        draft = EventDraft(
            event_type="claim_added", task_id=args.task_id, actor="user", request_id=request_id, payload={}
        )
        try:
            with store.locked(time.monotonic() + 8) as ledger:
                if ledger.view.find_request(args.task_id, request_id) is None:
                    ledger.append([draft])
        except IntentLoopError:
            continue
        durability.ack(request_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
