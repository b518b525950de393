"""The verified checkpoint beside the ledger: what the last intentloop writer verified and wrote.

``ledger.checkpoint.json`` records the ledger file's device, inode, size, mtime and ctime right after a write, with
the line count and head hash of the chain it holds. A process whose ``stat`` of the ledger matches every one of those
fields trusts that chain without reading it again: an append in place changes size, mtime and ctime, and ctime cannot
be set back by an ordinary program, so any edit since (even one followed by a well-chained append) shows as a
mismatch and costs a full verification. The file is a cache: it is written without fsync (it never claims more than
the fsynced ledger holds) and a missing, garbled or unsafe one is simply not trusted.
"""

from __future__ import annotations

import os
import uuid

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import create_exclusive, read_regular, unlink_quietly
from intentloop.store._paths import ProjectPaths

CHECKPOINT_NAME = "ledger.checkpoint.json"
CHECKPOINT_VERSION = 1
_MAX_BYTES = 4096
CHECKPOINT_TEMP_RE = LazyPattern(rf"^checkpoint-{UUID_TEXT}\.tmp$")


def checkpoint_temp_name() -> str:
    return f"checkpoint-{uuid.uuid4()}.tmp"


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What was verified: the ledger file's identity and stat after the write, and the chain it holds."""

    version: int
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    lines: int
    head: str | None
    index: str | None = None  # the task index directory (``_index``) covering the first ``indexed`` lines
    indexed: int = 0
    bindings: int = 0  # how many binding records the index holds

    def matches(self, st: os.stat_result) -> bool:
        """Whether ``st`` is exactly the file this checkpoint describes."""
        return self.version == CHECKPOINT_VERSION and (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
        ) == (self.device, self.inode, self.size, self.mtime_ns, self.ctime_ns)

    def covering_index(self) -> tuple[str, int] | None:
        """The task index and its binding count, when the index covers every line this checkpoint vouches for (only
        then may a reader trust it or a writer extend it)."""
        if self.index is None or self.indexed != self.lines:
            return None
        return self.index, self.bindings


_decoder = msgspec.json.Decoder(Checkpoint)


def read_checkpoint(paths: ProjectPaths) -> Checkpoint | None:
    """The checkpoint, or ``None`` when it is missing, unsafe (symlink, hard link) or garbled: never an error."""
    try:
        got = read_regular(paths.project_dir / CHECKPOINT_NAME)
    except StorageError:
        return None
    if got is None or len(got[0]) > _MAX_BYTES:
        return None
    try:
        return _decoder.decode(got[0])
    except msgspec.DecodeError:
        return None


def write_checkpoint(
    paths: ProjectPaths,
    st: os.stat_result | None,
    lines: int,
    head: str | None,
    index: str | None = None,
    bindings: int = 0,
) -> None:
    """Record the ledger's ``st`` after a write with its chain (under the lock). Failures only cost the next reader
    time: a stale checkpoint matches no later file, and one that cannot be written is removed."""
    target = paths.project_dir / CHECKPOINT_NAME
    if st is None:
        unlink_quietly(target)
        return
    record = Checkpoint(
        version=CHECKPOINT_VERSION,
        device=st.st_dev,
        inode=st.st_ino,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        lines=lines,
        head=head,
        index=index,
        indexed=lines if index is not None else 0,
        bindings=bindings,
    )
    temp = paths.project_dir / checkpoint_temp_name()
    try:
        create_exclusive(temp, msgspec.json.encode(record), sync=False)
        os.replace(temp, target)
    except OSError:
        unlink_quietly(temp)
        unlink_quietly(target)


__all__ = ["CHECKPOINT_NAME", "CHECKPOINT_TEMP_RE", "Checkpoint", "read_checkpoint", "write_checkpoint"]
