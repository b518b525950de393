"""A writer process for the multi-process and crash tests (run as a script; not a test module).

Modes:
  append  commit ``<writer>-<i>`` for i in [start, start+count) and print ``ACK <request id>`` after each commit;
          a request already in the ledger (a retry after a kill) is acknowledged without a second event.
  hold    take the lock, print ``HELD`` and sleep (to be killed while holding it).
  race    wait until ``--go-at`` (a ``time.time()`` value), then commit ``--request-id`` with ``--fingerprint`` the way
          the service does (decide under the lock with ``view.find_request``) and print ``CREATED`` or
          ``EXISTING same|different``.
"""

from __future__ import annotations

import argparse
import sys
import time

from intentloop.errors import IntentLoopError
from intentloop.model import Event, EventDraft
from intentloop.store import ProjectStore


def commit(store: ProjectStore, task_id: str, request_id: str, fingerprint: str) -> tuple[bool, Event]:
    """Append unless the request id is already in the task; retry retryable errors (lock timeouts)."""
    while True:
        try:
            with store.locked() as ledger:
                existing = ledger.view.find_request(task_id, request_id)
                if existing is not None:
                    return False, existing
                draft = EventDraft(
                    event_type="claim_added",
                    task_id=task_id,
                    actor="user",
                    request_id=request_id,
                    payload={"request_fingerprint": fingerprint, "statement": f"claim {request_id}"},
                )
                return True, ledger.append([draft])[0]
        except IntentLoopError as exc:
            if not exc.retryable:
                raise
            time.sleep(0.005)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["append", "hold", "race"])
    parser.add_argument("data_root")
    parser.add_argument("project_id")
    parser.add_argument("task_id")
    parser.add_argument("--writer", default="w")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--request-id", default="race")
    parser.add_argument("--fingerprint", default="f" * 64)
    parser.add_argument("--go-at", type=float, default=0.0)
    args = parser.parse_args()
    store = ProjectStore(args.data_root, args.project_id)
    if args.mode == "append":
        for index in range(args.start, args.start + args.count):
            request_id = f"{args.writer}-{index}"
            commit(store, args.task_id, request_id, "a" * 64)
            sys.stdout.write(f"ACK {request_id}\n")
            sys.stdout.flush()
    elif args.mode == "hold":
        with store.locked():
            sys.stdout.write("HELD\n")
            sys.stdout.flush()
            time.sleep(3600)
    else:
        time.sleep(max(0.0, args.go_at - time.time()))
        created, event = commit(store, args.task_id, args.request_id, args.fingerprint)
        if created:
            sys.stdout.write("CREATED\n")
        else:
            same = event.payload.get("request_fingerprint") == args.fingerprint
            sys.stdout.write(f"EXISTING {'same' if same else 'different'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
