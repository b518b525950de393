"""What the prompt hook last injected per session: ``injected-context.json`` beside the ledger, so an unchanged task
context is injected once per session, not on every prompt (the host keeps every copy in its conversation).

An entry is the session's hash (``session_hash``, as the ledger's bindings hold it) with an HMAC of the injected text
under the installation's cache key (``_keyfile.CACHE_KEY``): content-free, and a program without the key cannot
tell which text it stands for. It is a cache the prompt hook writes anyway (it records the prompt's observation):
written without the ledger lock or an fsync (the last writer wins, atomically), at most :data:`MAX_ENTRIES` entries
(the session injected into longest ago dropped), and a missing, garbled or unsafe file, or no key, only means the
context is injected again. SessionStart never creates it, but where it exists it notes what SessionStart injected
(a resumed session's first prompt would otherwise inject the same context a second time, right after SessionStart's);
so the write that binds a session to a task (the ledger's append) creates it empty: a session's first link is made by
a tool call after that session's prompt hook ran, and the next SessionStart (a resumed session) is the first hook with
a context to inject. Compaction forgets the session's entry (the host's copy went with the compacted conversation).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import uuid
from typing import Final

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import create_exclusive, read_cache, unlink_quietly
from intentloop.store._keyfile import CACHE_KEY, load_key
from intentloop.store._paths import ProjectPaths

INJECTED_NAME: Final = "injected-context.json"
#: A writer killed between creating its temporary file and the rename leaves one: removed by the next ledger writer
#: (``_names.remove_orphans``).
INJECTED_TEMP_RE = LazyPattern(rf"^injected-context-{UUID_TEXT}\.tmp$")
#: Sessions remembered per project: a session beyond them is injected into once more, nothing worse.
MAX_ENTRIES: Final = 256
_MAX_BYTES: Final = MAX_ENTRIES * 192

_decoder = msgspec.json.Decoder(list[tuple[str, str]])


def _digest(key: bytes, shash: str, text: str) -> str:
    return hmac.digest(
        key, b"intentloop-injected-context-v1\0" + shash.encode() + b"\0" + text.encode(), "sha256"
    ).hex()


def _read(paths: ProjectPaths) -> list[tuple[str, str]] | None:
    """The entries, or ``None`` when there is no usable file (missing, garbled or unsafe)."""
    found: list[tuple[str, str]] | None = read_cache(paths.project_dir / INJECTED_NAME, _MAX_BYTES, _decoder.decode)
    return found


def _write(paths: ProjectPaths, entries: list[tuple[str, str]]) -> None:
    temp = paths.project_dir / f"injected-context-{uuid.uuid4()}.tmp"
    try:
        create_exclusive(temp, msgspec.json.encode(entries[-MAX_ENTRIES:]), sync=False)
        os.replace(temp, paths.project_dir / INJECTED_NAME)
    except OSError:
        unlink_quietly(temp)


def _remember(paths: ProjectPaths, shash: str, text: str, *, create: bool) -> bool:
    """Remember ``text`` as the last injection into the session ``shash`` (creating the file only when ``create``);
    whether it already was. ``False`` too when nothing can be remembered (no project, no cache key). Never raises."""
    try:
        key = load_key(paths.data_root, CACHE_KEY)
        if key is None or not paths.check_project():
            return False
    except StorageError:
        return False
    entries = _read(paths)
    if entries is None and not create:
        return False
    entries = entries or []
    digest = _digest(key, shash, text)
    if any(s == shash and hmac.compare_digest(d, digest) for s, d in entries):
        return True
    _write(paths, [e for e in entries if e[0] != shash] + [(shash, digest)])
    return False


def inject_once(paths: ProjectPaths, shash: str, text: str) -> bool:
    """Whether ``text`` is to be injected into the session ``shash``: ``False`` when it is exactly what was last
    injected there; otherwise ``True``, and it is remembered as the last injection (an existing project with the
    cache key only). Never raises: whatever cannot be read or written means injecting."""
    return not _remember(paths, shash, text, create=True)


def note_injection(paths: ProjectPaths, shash: str, text: str) -> None:
    """Remember ``text`` as what was last injected into the session ``shash`` (SessionStart's context), only where
    the file already exists: SessionStart creates nothing. Never raises."""
    _remember(paths, shash, text, create=False)


def prepare_injection_memory(paths: ProjectPaths) -> None:
    """Create the file empty where it is missing (a session was just bound to a task, under the ledger lock), so
    SessionStart, which creates nothing, can note what it injects. Never raises: without it the context is only
    injected once more."""
    with contextlib.suppress(OSError):
        create_exclusive(paths.project_dir / INJECTED_NAME, b"[]", sync=False)


def forget_injection(paths: ProjectPaths, shash: str) -> None:
    """Forget what was last injected into the session ``shash`` (its conversation was compacted): the next prompt
    injects again. Never raises, and creates nothing."""
    try:
        if not paths.check_project():
            return
    except StorageError:
        return
    entries = _read(paths) or []
    if any(s == shash for s, _ in entries):
        _write(paths, [e for e in entries if e[0] != shash])


__all__ = [
    "INJECTED_NAME",
    "INJECTED_TEMP_RE",
    "MAX_ENTRIES",
    "forget_injection",
    "inject_once",
    "note_injection",
    "prepare_injection_memory",
]
