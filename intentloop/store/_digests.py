"""Remembered evidence digests: ``evidence-digests.json`` beside the ledger, so an unchanged evidence file is hashed
once, not by every process that shows it (a 3 GB file cost each ``intentloop show`` about 6 s).

An entry is a file's stat — device, inode, size, mtime and ctime, never its path — with the SHA-256 of its bytes,
sealed by an HMAC under the installation's cache key (``_keyfile.CACHE_KEY``): a program without the key cannot make
a changed file read as unchanged. It is a cache: written without the ledger lock or an fsync (the last writer wins,
atomically), at most :data:`MAX_ENTRIES` entries (least recently remembered dropped), and a missing, garbled, unsafe
or unsealed file or entry is simply not trusted. Nothing is remembered without the key (only a writer creates it).
"""

from __future__ import annotations

import hmac
import os
import uuid
from typing import Final, TypeAlias

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import create_exclusive, read_cache, unlink_quietly
from intentloop.store._keyfile import CACHE_KEY, load_key
from intentloop.store._paths import ProjectPaths

DIGESTS_NAME: Final = "evidence-digests.json"
#: A writer killed between creating its temporary file and the rename leaves one: removed by the next ledger writer
#: (``_names.remove_orphans``); a reader's temporary file removed meanwhile only costs it the update.
DIGESTS_TEMP_RE = LazyPattern(rf"^evidence-digests-{UUID_TEXT}\.tmp$")
MAX_ENTRIES: Final = 1024
_MAX_BYTES: Final = MAX_ENTRIES * 256

StatKey: TypeAlias = tuple[int, int, int, int, int]


class _Entry(msgspec.Struct, array_like=True, frozen=True):
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    sha256: str
    seal: str


_decoder = msgspec.json.Decoder(list[_Entry])


def _seal(key: bytes, stat_key: StatKey, digest: str) -> str:
    body = ",".join(map(str, stat_key)).encode() + b"\0" + digest.encode()
    return hmac.digest(key, b"intentloop-evidence-digest-v1\0" + body, "sha256").hex()


def _read(paths: ProjectPaths) -> list[_Entry]:
    return read_cache(paths.project_dir / DIGESTS_NAME, _MAX_BYTES, _decoder.decode) or []


def remembered_digest(paths: ProjectPaths, stat_key: StatKey) -> str | None:
    """The digest remembered for a file with exactly this stat, when its seal holds; ``None`` otherwise. Never
    raises."""
    try:
        key = load_key(paths.data_root, CACHE_KEY)
    except StorageError:
        return None
    if key is None:
        return None
    for entry in _read(paths):
        if (entry.device, entry.inode, entry.size, entry.mtime_ns, entry.ctime_ns) == stat_key:
            return entry.sha256 if hmac.compare_digest(entry.seal, _seal(key, stat_key, entry.sha256)) else None
    return None


def remember_digest(paths: ProjectPaths, stat_key: StatKey, digest: str) -> None:
    """Remember ``digest`` for the file with this stat (an existing project with the cache key only). Never raises:
    a cache that cannot be written costs the next reader a hash."""
    try:
        key = load_key(paths.data_root, CACHE_KEY)
        if key is None or not paths.check_project():
            return
    except StorageError:
        return
    entries = [e for e in _read(paths) if (e.device, e.inode, e.size, e.mtime_ns, e.ctime_ns) != stat_key]
    entries.append(_Entry(*stat_key, sha256=digest, seal=_seal(key, stat_key, digest)))
    data = msgspec.json.encode(entries[-MAX_ENTRIES:])
    temp = paths.project_dir / f"evidence-digests-{uuid.uuid4()}.tmp"
    try:
        create_exclusive(temp, data, sync=False)
        os.replace(temp, paths.project_dir / DIGESTS_NAME)
    except OSError:
        unlink_quietly(temp)


__all__ = ["DIGESTS_NAME", "DIGESTS_TEMP_RE", "MAX_ENTRIES", "StatKey", "remember_digest", "remembered_digest"]
