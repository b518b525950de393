"""Private-mode control files: ``private-sessions/<session_hash>.json`` (docs/STORAGE.md).

A control holds no semantic content, only who is private: ``{created_at, host_session_hash, mode: "private",
project_id, schema_version: 1, task_id}``. Privacy fails closed: a control that cannot be read is an error, never
silently ignored, so a damaged control can never let a hook write what should have stayed in memory.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.canonical import canonical_bytes
from intentloop.model.ids import HEX64_RE, RFC3339_UTC_RE, UUID_RE
from intentloop.store._fs import read_regular, storage_error
from intentloop.store._paths import ProjectPaths

_CONTROL_NAME_RE = LazyPattern(r"^([a-f0-9]{64})\.json$")


class PrivateControl(msgspec.Struct, frozen=True, kw_only=True):
    """One private-mode control marker; field names are the stored names."""

    created_at: str
    host_session_hash: str
    project_id: str
    task_id: str
    mode: str = "private"
    schema_version: int = 1

    def to_bytes(self) -> bytes:
        return canonical_bytes(msgspec.to_builtins(self)) + b"\n"


_decoder = msgspec.json.Decoder(PrivateControl)


def check_session_hash(session_hash: object) -> str:
    """Raises: InvalidInputError: ``INVALID_SESSION_HASH`` unless 64 lowercase hex digits."""
    if not isinstance(session_hash, str) or not HEX64_RE.match(session_hash):
        raise InvalidInputError("a session hash must be 64 lowercase hex digits", code="INVALID_SESSION_HASH")
    return session_hash


def control_path(paths: ProjectPaths, session_hash: str) -> Path:
    return paths.private_dir / f"{check_session_hash(session_hash)}.json"


def control_problem(control: PrivateControl, *, session_hash: str, project_id: str) -> str:
    """What is wrong with a control for this project and file name, or ``""``."""
    if control.host_session_hash != session_hash:
        return "its host_session_hash does not match its file name"
    if control.project_id != project_id:
        return "it belongs to another project"
    if control.mode != "private" or control.schema_version != 1:
        return "its mode or schema_version is not private/1"
    if not UUID_RE.match(control.task_id):
        return "its task_id is not a UUID"
    if not RFC3339_UTC_RE.match(control.created_at):
        return "its created_at is not an RFC 3339 UTC time"
    return ""


def parse_control(data: bytes, *, session_hash: str, project_id: str) -> PrivateControl:
    """Decode and check one control file's bytes.

    Raises:
        StorageError: ``CORRUPT_PRIVATE_CONTROL`` (retryable).
    """
    try:
        control = _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise StorageError("a private-session control file is malformed", code="CORRUPT_PRIVATE_CONTROL") from exc
    problem = control_problem(control, session_hash=session_hash, project_id=project_id)
    if problem:
        raise StorageError(f"a private-session control file is invalid: {problem}", code="CORRUPT_PRIVATE_CONTROL")
    return control


def read_control(paths: ProjectPaths, session_hash: str) -> PrivateControl | None:
    """The control of one session, or ``None``; lock-free and creates nothing.

    Raises:
        InvalidInputError: ``INVALID_SESSION_HASH``.
        StorageError: ``CORRUPT_PRIVATE_CONTROL``, ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``.
    """
    path = control_path(paths, session_hash)
    if not paths.check_subdir(paths.private_dir):
        return None
    found = read_regular(path)
    if found is None:
        return None
    return parse_control(found[0], session_hash=session_hash, project_id=paths.project_id)


def read_controls(paths: ProjectPaths) -> list[PrivateControl]:
    """Every control of the project, sorted by session hash; lock-free and creates nothing.

    Raises:
        StorageError: ``INVALID_SESSION_HASH`` for a file that is not named like a control (privacy fails closed),
            ``CORRUPT_PRIVATE_CONTROL``, ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``.
    """
    if not paths.check_subdir(paths.private_dir):
        return []
    try:
        names = sorted(os.listdir(paths.private_dir))
    except OSError as exc:
        raise storage_error(exc, "listing private-sessions", code="STORAGE_READ_FAILED") from exc
    from intentloop.store._names import CONTROL_TEMP_RE  # here: _names loads the lock's liveness machinery

    controls: list[PrivateControl] = []
    for name in names:
        if CONTROL_TEMP_RE.match(name):
            continue
        match = _CONTROL_NAME_RE.match(name)
        if match is None:
            raise StorageError(
                "private-sessions holds a file that is not named <session hash>.json", code="INVALID_SESSION_HASH"
            )
        found = read_regular(paths.private_dir / name)
        if found is not None:
            controls.append(parse_control(found[0], session_hash=match.group(1), project_id=paths.project_id))
    return controls


__all__ = [
    "PrivateControl",
    "check_session_hash",
    "control_path",
    "control_problem",
    "parse_control",
    "read_control",
    "read_controls",
]
