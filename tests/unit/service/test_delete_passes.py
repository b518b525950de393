"""How much of the ledger a claim deletion reads: the rewrite's own pass and one read-back of every file, not a whole
pass per question (the claim lookup, the byte scan, the copies, the files holding the statement)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads are attributed by /proc/self/fd")


class _LedgerReads:
    """Bytes read from files named ``ledger.jsonl`` (whatever the fd: the old file, the new one read back)."""

    def __init__(self) -> None:
        self.bytes = 0

    def note(self, fd: int, data: bytes) -> bytes:
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return data
        if name.rsplit("/", 1)[-1] == "ledger.jsonl":
            self.bytes += len(data)
        return data


@pytest.fixture
def ledger_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[_LedgerReads]:
    reads = _LedgerReads()
    read, pread = os.read, os.pread
    monkeypatch.setattr(os, "read", lambda fd, n: reads.note(fd, read(fd, n)))
    monkeypatch.setattr(os, "pread", lambda fd, n, at: reads.note(fd, pread(fd, n, at)))
    yield reads


async def _seeded(h: Any, statement: str) -> tuple[str, str, Path]:
    """Ten tasks of 6 claims each, their lines interleaved as a busy project's are (a task's lines further apart than
    the task index reads as one block); returns (task, claim id, ledger) of a claim in the middle of the ledger."""
    tasks = [await h.start(f"task {i} initial claim") for i in range(10)]
    doomed: tuple[str, str] | None = None
    for n in range(6):
        for i, task in enumerate(tasks):
            text = statement if (n, i) == (3, 4) else f"claim {n} of task {i}, padded to a realistic length " * 9
            claim = await h.inferred(task, text)
            if text == statement:
                doomed = task, claim["claim_id"]
    assert doomed is not None
    return doomed[0], doomed[1], h.ledger


@pytest.mark.parametrize("copies_too", [False, True])
async def test_a_claim_deletion_reads_the_ledger_about_twice(
    h: Any, ledger_reads: _LedgerReads, copies_too: bool
) -> None:
    task, claim_id, ledger = await _seeded(h, "the statement that goes QX-8812")
    size = ledger.stat().st_size
    ledger_reads.bytes = 0
    result = await h.call(
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=claim_id,
        confirmation=f"DELETE CLAIM {claim_id}",
        delete_copies=copies_too,
    )
    assert result["other_copies"] == [] and result["files_with_content"] == []
    assert claim_id.encode() not in h.disk_bytes() and b"QX-8812" not in h.disk_bytes()
    passes = ledger_reads.bytes / size
    # The rewrite reads the old file (1; its temp file, read back, has another name), the read-back after it every
    # file (1); the claim is found through the task index (a tenth of the lines here); with ``delete_copies`` the
    # copies are looked for before the rewrite (1). Before: a pass more for each of the claim lookup, the copies and
    # the files holding the statement (about 5, and 6 with ``delete_copies``).
    assert passes < (3.5 if copies_too else 2.5), passes
