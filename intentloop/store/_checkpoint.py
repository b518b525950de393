"""The verified checkpoint beside the ledger: what the last intentloop writer verified and wrote.

``ledger.checkpoint.json`` records the ledger file's device, inode, size, mtime and ctime right after a write, with
the line count and head hash of the chain it holds. A process whose ``stat`` of the ledger matches every one of those
fields trusts that chain without reading it again: an append in place changes size, mtime and ctime, and ctime cannot
be set back by an ordinary program, so any edit since (even one followed by a well-chained append) shows as a
mismatch and costs a full verification. The file is a cache: it is written without fsync (it never claims more than
the fsynced ledger holds) and a missing, garbled or unsafe one is simply not trusted.

The task index it names is sealed to it: ``seal`` is an HMAC, under the installation's cache key
(``R/keys/cache-seal.key``), of the checkpoint's fields and the index's record counts. A reader trusts the index only
under a valid seal, and with the counts vouched for, a task's records must be exactly its lines (each record is
verified as a whole line of the task, offsets strictly increase, and the count is the task's number of lines), so
dropping or replacing a record costs a full read. Why a key: the checkpoint and the index are rewritten by every
writer, so an unkeyed digest would be recomputed by whoever edits them.
"""

from __future__ import annotations

import hmac
import os
import uuid

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import create_exclusive, read_cache, read_regular, unlink_quietly
from intentloop.store._keyfile import CACHE_KEY, load_key, load_or_create_key
from intentloop.store._paths import ProjectPaths

CHECKPOINT_NAME = "ledger.checkpoint.json"
CHECKPOINT_VERSION = 1
_MAX_BYTES = 4096
CHECKPOINT_TEMP_RE = LazyPattern(rf"^checkpoint-{UUID_TEXT}\.tmp$")
#: The file of the index's record counts (``_index``): what the seal covers beside the checkpoint's fields.
COUNTS = "counts.json"


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
    seal: str | None = None  # HMAC of the other fields and the index's counts (see the module docstring)

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

    def vouched_index(self, paths: ProjectPaths) -> tuple[str, int, bytes] | None:
        """:meth:`covering_index` with its counts file's bytes, when the seal vouches for both under this
        installation's cache key (no key, no seal, other counts: ``None``, and the ledger is read instead). Never
        raises."""
        covering = self.covering_index()
        if covering is None or self.seal is None:
            return None
        try:
            key = load_key(paths.data_root, CACHE_KEY)
            got = read_regular(paths.project_dir / covering[0] / COUNTS)
        except Exception:
            return None
        if key is None or got is None or not hmac.compare_digest(_seal(key, self, got[0]), self.seal):
            return None
        return covering[0], covering[1], got[0]


_decoder = msgspec.json.Decoder(Checkpoint)


def _seal(key: bytes, record: Checkpoint, counts: bytes) -> str:
    body = msgspec.json.encode(msgspec.structs.replace(record, seal=None))
    return hmac.digest(key, b"intentloop-index-seal-v1\0" + body + b"\0" + counts, "sha256").hex()


def read_checkpoint(paths: ProjectPaths) -> Checkpoint | None:
    """The checkpoint, or ``None`` when it is missing, unsafe (symlink, hard link) or garbled: never an error."""
    return read_cache(paths.project_dir / CHECKPOINT_NAME, _MAX_BYTES, _decoder.decode)


def write_checkpoint(
    paths: ProjectPaths,
    st: os.stat_result | None,
    lines: int,
    head: str | None,
    index: str | None = None,
    bindings: int = 0,
) -> None:
    """Record the ledger's ``st`` after a write with its chain (under the lock), sealing the index it names to it.
    Failures only cost the next reader time: a stale checkpoint matches no later file, one that cannot be written is
    removed, and an index that cannot be sealed is not named."""
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
    if index is not None:
        record = _sealed(paths, record, index)
    temp = paths.project_dir / checkpoint_temp_name()
    try:
        create_exclusive(temp, msgspec.json.encode(record), sync=False)
        os.replace(temp, target)
    except OSError:
        unlink_quietly(temp)
        unlink_quietly(target)


def _sealed(paths: ProjectPaths, record: Checkpoint, index: str) -> Checkpoint:
    """``record`` with the seal of ``index``'s counts as they now are, or without the index when it cannot be sealed
    (no counts file, no key to be had)."""
    unnamed = msgspec.structs.replace(record, index=None, indexed=0, bindings=0)
    try:
        got = read_regular(paths.project_dir / index / COUNTS)
        key = load_or_create_key(paths.data_root, CACHE_KEY)
    except (OSError, StorageError):
        return unnamed
    if got is None:
        return unnamed
    return msgspec.structs.replace(record, seal=_seal(key, record, got[0]))


__all__ = [
    "CHECKPOINT_NAME",
    "CHECKPOINT_TEMP_RE",
    "COUNTS",
    "Checkpoint",
    "read_checkpoint",
    "write_checkpoint",
]
