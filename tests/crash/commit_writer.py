"""Append one event through the store with the fault layer killing this process at call ``--kill-at`` (a helper
script for the crash-point tests; prints ``ACK`` after the append returned)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_layer import FaultLayer

from intentloop.model import EventDraft
from intentloop.store import LockConfig, ProjectStore


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_root")
    parser.add_argument("project_id")
    parser.add_argument("task_id")
    parser.add_argument("request_id")
    parser.add_argument("--kill-at", type=int, default=None)
    args = parser.parse_args()
    store = ProjectStore(
        args.data_root, args.project_id, config=LockConfig(heartbeat_s=10, stale_s=30, wait_s=2, ceiling_s=5)
    )
    store.read()  # warm, as a server is: the enumeration covers the locked part
    draft = EventDraft(
        event_type="claim_added", task_id=args.task_id, actor="user", request_id=args.request_id, payload={}
    )
    layer = FaultLayer(args.kill_at, kill=True)
    with layer, store.locked(time.monotonic() + 5) as ledger:
        ledger.append([draft])
    print("ACK", len(layer.calls), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
