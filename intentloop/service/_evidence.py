"""Evidence bound to project files: resolving ``evidence_path``, hashing it, and ``evidence_stale`` at read time.

Why hashing runs in a worker thread (``trio.to_thread``): an evidence file can be a multi-gigabyte log, and the
server answers every other call on the one trio thread; SHA-256 runs at about 1.5 GB/s here (in memory), slower
from a cold disk. Files are opened
without following a final symlink and non-blocking (a FIFO swapped in after the check cannot hang the hash), and
only a regular file is read. Staleness is never stored: every snapshot and export hashes the file again.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any

import trio

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import EvidenceFile

#: the claim lists of a snapshot (and ``history`` entries' claims) and of a portable export that may hold evidence.
_SNAPSHOT_LISTS = ("active_claims", "unknowns", "disagreements", "stale_long_term")
_CHUNK = 1 << 20


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_evidence_path(project_root: str, evidence_path: str) -> tuple[str, str]:
    """``(absolute real path, project-relative "/"-separated path)`` of an evidence file.

    Args:
        project_root: the canonical (real, absolute) project root.
        evidence_path: relative to the root, or absolute inside it.

    Raises:
        StorageError: ``PATH_ESCAPE`` when the path (symlinks resolved) lies outside the project root.
        InvalidInputError: ``INVALID_EVIDENCE_PATH`` when it is empty, holds a NUL, or is not a regular file.
    """
    if not evidence_path or "\0" in evidence_path:
        raise InvalidInputError("evidence_path must be a non-empty path", code="INVALID_EVIDENCE_PATH")
    real = os.path.realpath(os.path.join(project_root, evidence_path))
    if not _inside(project_root, real):
        raise StorageError("evidence_path resolves outside the project root", code="PATH_ESCAPE")
    try:
        mode = os.stat(real).st_mode
    except OSError:
        mode = 0
    if not stat.S_ISREG(mode):
        raise InvalidInputError("evidence_path is not a regular file", code="INVALID_EVIDENCE_PATH")
    relative = os.path.relpath(real, project_root).replace(os.sep, "/")
    return real, relative


def file_sha256(path: str) -> str | None:
    """The hex SHA-256 of the regular file at ``path`` (no final symlink followed), ``None`` when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


async def bind_evidence_file(project_root: str, evidence_path: str) -> EvidenceFile:
    """Resolve and hash ``evidence_path`` (the hash in a worker thread).

    Raises:
        StorageError: ``PATH_ESCAPE``.
        InvalidInputError: ``INVALID_EVIDENCE_PATH`` (also when the file vanished or changed kind while hashed).
    """
    real, relative = resolve_evidence_path(project_root, evidence_path)
    digest = await trio.to_thread.run_sync(file_sha256, real)
    if digest is None:
        raise InvalidInputError("evidence_path is not a regular file", code="INVALID_EVIDENCE_PATH")
    return EvidenceFile(path=relative, sha256=digest)


def current_sha256(project_root: str, relative: str) -> str | None:
    """The digest of a stored evidence path now; ``None`` when it is gone, escapes the root or is no regular file."""
    try:
        real, _ = resolve_evidence_path(project_root, relative)
    except (InvalidInputError, StorageError):
        return None
    return file_sha256(real)


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


async def mark_evidence_stale(project_root: str, result: Any) -> Any:
    """Add ``evidence_stale`` to every claim of a snapshot or export result that carries ``evidence_file``.

    Claims without ``evidence_file`` are untouched (the answer stays the original's); each distinct path is hashed
    once, all of them in one worker thread.
    """
    claims = [(claim, bound) for claim in _claims_of(result) if (bound := _bound(claim)) is not None]
    if not claims:
        return result
    paths = sorted({path for _claim, (path, _digest) in claims})

    def hash_all() -> dict[str, str | None]:
        return {path: current_sha256(project_root, path) for path in paths}

    now = await trio.to_thread.run_sync(hash_all)
    for claim, (path, digest) in claims:
        claim["evidence_stale"] = now[path] != digest
    return result


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
    "current_sha256",
    "file_sha256",
    "mark_evidence_stale",
    "resolve_evidence_path",
    "strip_extensions",
]
