"""A real process that holds a project's ledger lock until its stdin is closed (or it is killed)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLDER = """
import os, sys, time
from intentloop.store import ProjectStore
store = ProjectStore(sys.argv[1], sys.argv[2])
with store.locked(time.monotonic() + 10):
    if sys.argv[3] == "rewrite":  # the same bytes in a new file: the checkpoint no longer vouches for it
        temp = store.ledger_path.with_name("ledger.rewrite.tmp")
        temp.write_bytes(store.ledger_path.read_bytes())
        os.chmod(temp, 0o600)
        os.replace(temp, store.ledger_path)
    print("locked", flush=True)
    sys.stdin.read()
"""


def start_holder(data_root: Path, project_id: str, *, rewrite: bool = False) -> subprocess.Popen[bytes]:
    """Start the holder and return it once it has the lock; close its stdin to release it.

    With ``rewrite`` it first replaces the ledger with a copy of itself, as a deletion's rewrite does before the new
    checkpoint is written: until another writer verifies it, the task index answers nothing.
    """
    argv = [sys.executable, "-c", _HOLDER, str(data_root), project_id, "rewrite" if rewrite else "hold"]
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


@contextmanager
def holding_lock(data_root: Path, project_id: str, *, rewrite: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """Yield the holder once it has the lock; close its stdin to release it. Killed on exit if still running."""
    with start_holder(data_root, project_id, rewrite=rewrite) as holder:
        yield holder
        if holder.poll() is None:
            holder.kill()
