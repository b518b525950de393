"""Evidence bound to project files: resolving ``evidence_path``, hashing it, and ``evidence_stale`` at read time.

Why hashing runs in a worker thread (``trio.to_thread``): an evidence file can be a multi-gigabyte log, and the
server answers every other call on the one trio thread. Files are opened without following a final symlink and
non-blocking (a FIFO swapped in after the check cannot hang the hash), and only a regular file is read. Staleness is
never stored; each read asks for the file's digest, which this process and the project's digest cache (the store's
``evidence-digests.json``, shared by every process) remember by the file's stat (device, inode, size, mtime, ctime),
so an unchanged file is hashed once, not at every snapshot or by every CLI run. A file changed within
:data:`RACY_WINDOW_NS` of its hash is not remembered (git's "racily clean" problem: a second change in the same
timestamp tick can leave the stat as it was).
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeAlias

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import EvidenceFile
from intentloop.model.printable import escape_controls
from intentloop.model.redaction import secret_kinds
from intentloop.store import ProjectPaths, remember_digest, remembered_digest

#: the claim lists of a snapshot (and ``history`` entries' claims) and of a portable export that may hold evidence.
_SNAPSHOT_LISTS = ("active_claims", "unknowns", "disagreements", "stale_long_term")
_CHUNK = 1 << 20
#: How recent a file's last change (mtime or ctime) may be, measured from when its hash began, for its digest to be
#: remembered: 3 s covers the coarsest common timestamp granularity (FAT's 2 s; HFS+ and many network filesystems
#: keep whole seconds), a kernel's coarse clock lagging the wall clock, and small clock differences.
RACY_WINDOW_NS: Final = 3_000_000_000
_MAX_DIGESTS: Final = 4096  # remembered files per process, least recently used dropped first

StatKey: TypeAlias = tuple[int, int, int, int, int]
_digests: OrderedDict[StatKey, str] = OrderedDict()
_digests_lock = threading.Lock()  # worker threads hash concurrently


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_evidence_path(project_root: str, evidence_path: str) -> tuple[str, str]:
    """``(absolute real path, project-relative "/"-separated path)`` of an evidence file.

    Args:
        project_root: the canonical (real, absolute) project root.
        evidence_path: relative to the root, or absolute inside it.

    Raises:
        StorageError: ``PATH_ESCAPE`` when the path (symlinks resolved) lies outside the project root.
        InvalidInputError: ``SENSITIVE_ID_REJECTED`` when the project-relative path (the one stored) holds anything
            redaction finds; ``INVALID_EVIDENCE_PATH`` when it is empty, holds a NUL, a terminal control or a
            bidirectional override, or is not a regular file.
    """
    if not evidence_path or "\0" in evidence_path:
        raise InvalidInputError("evidence_path must be a non-empty path", code="INVALID_EVIDENCE_PATH")
    real = os.path.realpath(os.path.join(project_root, evidence_path))
    if not _inside(project_root, real):
        raise StorageError("evidence_path resolves outside the project root", code="PATH_ESCAPE")
    relative = os.path.relpath(real, project_root).replace(os.sep, "/")
    check_stored_path(relative)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        mode = 0
    if not stat.S_ISREG(mode):
        raise InvalidInputError("evidence_path is not a regular file", code="INVALID_EVIDENCE_PATH")
    return real, relative


def check_stored_path(path: str) -> None:
    """Refuse a path that must not be stored as an evidence binding: it is kept verbatim (a path cannot be redacted
    and still name its file), so it is held to the rule of the ids stored verbatim, and shown to people as it is.

    Raises:
        InvalidInputError: ``SENSITIVE_ID_REJECTED`` when redaction finds anything in it (a token as a file or folder
            name); ``INVALID_EVIDENCE_PATH`` when it holds a terminal control or a bidirectional override.
    """
    if secret_kinds(path):
        raise InvalidInputError(
            "evidence_path must not contain a credential or access token", code="SENSITIVE_ID_REJECTED"
        )
    if escape_controls(path) != path:
        raise InvalidInputError(
            "evidence_path must not contain terminal control or bidirectional-override characters",
            code="INVALID_EVIDENCE_PATH",
        )


def _stat_key(st: os.stat_result) -> StatKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _remember(key: StatKey, digest: str) -> None:
    with _digests_lock:
        _digests[key] = digest
        _digests.move_to_end(key)
        while len(_digests) > _MAX_DIGESTS:
            _digests.popitem(last=False)


def _remembered(key: StatKey) -> str | None:
    with _digests_lock:
        digest = _digests.get(key)
        if digest is not None:
            _digests.move_to_end(key)
        return digest


def file_sha256(path: str, paths: ProjectPaths | None = None) -> str | None:
    """The hex SHA-256 of the regular file at ``path`` (no final symlink followed), ``None`` when it is not one.

    Read only when neither this process nor the project's digest cache (``paths``: the store's
    ``evidence-digests.json``, shared by every process) remembers the digest of the file as its stat now is. It is
    remembered
    when the stat did not change while the file was read and its last change is older than :data:`RACY_WINDOW_NS`
    before the read began; a file changed since has another stat (a new inode, size, mtime or ctime: a rewrite that
    puts the mtime back still moves the ctime) and is read again.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            return None
        key = _stat_key(before)
        remembered = _remembered(key)
        if remembered is None and paths is not None:
            remembered = remembered_digest(paths, key)
            if remembered is not None:
                _remember(key, remembered)
        if remembered is not None:
            return remembered
        started = time.time_ns()
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        hexdigest = digest.hexdigest()
        settled = max(before.st_mtime_ns, before.st_ctime_ns) < started - RACY_WINDOW_NS
        if settled and _stat_key(os.fstat(fd)) == key:
            _remember(key, hexdigest)
            if paths is not None:
                remember_digest(paths, key, hexdigest)
        return hexdigest
    except OSError:
        return None
    finally:
        os.close(fd)


async def bind_evidence_file(project_root: str, evidence_path: str) -> EvidenceFile:
    """Resolve and hash ``evidence_path`` (the hash in a worker thread).

    Raises:
        StorageError: ``PATH_ESCAPE``.
        InvalidInputError: ``SENSITIVE_ID_REJECTED``; ``INVALID_EVIDENCE_PATH`` (also when the file vanished or
            changed kind while hashed).
    """
    real, relative = resolve_evidence_path(project_root, evidence_path)
    import trio  # here: a one-shot read (the CLI's) marks evidence without loading trio

    digest = await trio.to_thread.run_sync(file_sha256, real, abandon_on_cancel=True)  # nothing written yet
    if digest is None:
        raise InvalidInputError("evidence_path is not a regular file", code="INVALID_EVIDENCE_PATH")
    return EvidenceFile(path=relative, sha256=digest)


def current_sha256(project_root: str, relative: str, paths: ProjectPaths | None = None) -> str | None:
    """The digest of a stored evidence path now; ``None`` when it is gone, escapes the root or is no regular file."""
    try:
        real, _ = resolve_evidence_path(project_root, relative)
    except (InvalidInputError, StorageError):
        return None
    return file_sha256(real, paths)


def _claims_of(result: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(result, dict):
        return
    for key in (*_SNAPSHOT_LISTS, "claims"):
        items = result.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))
    history = result.get("history")
    if isinstance(history, list):
        yield from (
            entry["claim"] for entry in history if isinstance(entry, dict) and isinstance(entry.get("claim"), dict)
        )


def _bound(claim: Mapping[str, Any]) -> tuple[str, str] | None:
    bound = claim.get("evidence_file")
    if isinstance(bound, dict) and isinstance(bound.get("path"), str) and isinstance(bound.get("sha256"), str):
        return bound["path"], bound["sha256"]
    return None


def _stale_marker(project_root: str, result: Any, paths: ProjectPaths | None) -> Callable[[], Any] | None:
    """What marking ``result`` takes: ``None`` when no claim is bound to a file (or there is no root), else a function
    that hashes each distinct path once and marks every bound claim."""
    claims = [(claim, bound) for claim in _claims_of(result) if (bound := _bound(claim)) is not None]
    if not claims or not project_root:
        return None

    def mark() -> Any:
        now = {path: current_sha256(project_root, path, paths) for path in sorted({p for _c, (p, _d) in claims})}
        for claim, (path, digest) in claims:
            claim["evidence_stale"] = now[path] != digest
        return result

    return mark


async def mark_evidence_stale(project_root: str, result: Any, paths: ProjectPaths | None = None) -> Any:
    """Add ``evidence_stale`` to every claim of a snapshot or export result that carries ``evidence_file``.

    Claims without ``evidence_file`` are untouched (the answer stays the original's); each distinct path is hashed
    once, all of them in one worker thread. With no ``project_root`` (the CLI naming a project by its id: the root is
    never stored) nothing is marked: a relative path would otherwise be judged against the working directory.
    """
    mark = _stale_marker(project_root, result, paths)
    if mark is None:
        return result
    import trio

    # read-only: a cancelled call (or a server going away) leaves the thread behind instead of waiting for it
    return await trio.to_thread.run_sync(mark, abandon_on_cancel=True)


def mark_evidence_stale_inline(project_root: str, result: Any, paths: ProjectPaths | None = None) -> Any:
    """:func:`mark_evidence_stale` in the calling thread, for a process that answers one read and exits."""
    mark = _stale_marker(project_root, result, paths)
    return result if mark is None else mark()


def strip_extensions(graph: dict[str, Any]) -> dict[str, Any]:
    """The export without intentloop's own fields (``signature``, ``evidence_file``, ``evidence_stale``).

    What is left is the original implementation's portable graph, which its strict import accepts.
    """
    graph.pop("signature", None)
    for claim in graph.get("claims", []):
        if isinstance(claim, dict):
            claim.pop("evidence_file", None)
            claim.pop("evidence_stale", None)
    return graph


__all__ = [
    "bind_evidence_file",
    "check_stored_path",
    "current_sha256",
    "file_sha256",
    "mark_evidence_stale",
    "mark_evidence_stale_inline",
    "resolve_evidence_path",
    "strip_extensions",
]
