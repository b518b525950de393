"""A real process that holds a project's ledger lock until its stdin is closed (or it is killed)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLDER = """
import sys, time
from intentloop.store import ProjectStore
store = ProjectStore(sys.argv[1], sys.argv[2])
with store.locked(time.monotonic() + 10):
    print("locked", flush=True)
    sys.stdin.read()
"""


def start_holder(data_root: Path, project_id: str) -> subprocess.Popen[bytes]:
    """Start the holder and return it once it has the lock; close its stdin to release it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_root), project_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


@contextmanager
def holding_lock(data_root: Path, project_id: str) -> Iterator[subprocess.Popen[bytes]]:
    """Yield the holder once it has the lock; close its stdin to release it. Killed on exit if still running."""
    with start_holder(data_root, project_id) as holder:
        yield holder
        if holder.poll() is None:
            holder.kill()
