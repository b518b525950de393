"""Sharing settings: a project's shared identity, this installation's principal, the keys it trusts, per-project
sharing choices.

Why a shared id apart from ``project_id``: ``project_id`` hashes the local realpath, so every clone, worktree and
machine has its own. ``intentloop share init`` writes ``.intentloop/project.json`` = ``{"format": 1, "project":
"<uuid4>"}`` at the project root, committed by the user, so every copy that holds it is the same shared project; a
checkout that cannot carry the file is bound by ``share join ID`` (``R/share/bindings/<project_id>.json``). The
local ``project_id`` and its ledger never change: the shared id is looked up beside them.

Everything here is a small JSON file under ``R/share/`` (0700), replaced whole; no token or credential is ever
stored (git's own credential helpers do that). Reading creates nothing, so ``status`` and hooks may call it.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path
from typing import Any, Final

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import read_regular, replace_file

SHARE_DIR: Final = "share"
PROJECT_FILE: Final = (".intentloop", "project.json")
FORMAT: Final = 1
_UUID_RE: Final = re.compile(rf"^(?=.{{14}}4.{{4}}[89ab]){UUID_TEXT}\Z")
_MAX_FILE: Final = 1 << 20


class SharedIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """A project's shared id and where it came from: ``file`` (``.intentloop/project.json``) or ``binding``."""

    shared_id: str
    source: str
    path: str


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """What one installation does with one shared project (``R/share/projects/<shared>/settings.json``).

    Attributes:
        remote: the git URL streams travel through (``share remote URL``); ``None``: nothing travels.
        tasks: task ids the user published (``share publish TASK``).
        inferences: whether inferred claims travel too (``share publish --inferences``).
        locals: the local project ids seen with this shared id (clones and worktrees on this machine), so one
            installation publishes one stream per shared project.
        sync_every_s: how often a running MCP server syncs this project in the background
            (``share auto-sync``); ``None``: only ``intentloop sync`` does.
    """

    format: int = FORMAT
    remote: str | None = None
    tasks: list[str] = msgspec.field(default_factory=list)
    inferences: bool = False
    locals: list[str] = msgspec.field(default_factory=list)
    sync_every_s: int | None = None


class TrustedKey(msgspec.Struct, frozen=True, kw_only=True):
    """A writer this installation trusts: its OpenSSH public key, key id and principal.

    Attributes:
        admin: the key's principal may erase other principals' items (``intentloop-admin`` in allowed_signers).
        valid_after, valid_before: the key's window (UTC ``YYYY-MM-DDTHH:MM:SSZ``): records the writer dates
            outside it are ignored.
        source: ``local`` (``share trust``) or ``allowed_signers`` (the project's committed file).
    """

    key_id: str
    public_key: str
    principal: str
    admin: bool = False
    valid_after: str | None = None
    valid_before: str | None = None
    source: str = "local"


class Quotas(msgspec.Struct, frozen=True, kw_only=True):
    """What a reader admits from one writer (docs/SYNC.md, "Teams: quotas and erases"); :data:`QUOTAS` is the one
    source of the limits.

    Attributes:
        records_per_sync: records of one writer admitted by one sync (the rest wait for the next syncs).
        payload_bytes: the largest payload blob a put may carry (a larger one is refused and never shown).
        live_items: live items of one writer a reader shows (a put beyond it waits until the writer erases some).
    """

    records_per_sync: int = 5000
    payload_bytes: int = 64 * 1024
    live_items: int = 50_000


QUOTAS: Final = Quotas()


class _Trust(msgspec.Struct, kw_only=True):
    format: int = FORMAT
    keys: list[TrustedKey] = msgspec.field(default_factory=list)


class _Identity(msgspec.Struct, kw_only=True):
    format: int = FORMAT
    principal: str | None = None


def share_dir(data_root: Path) -> Path:
    return data_root / SHARE_DIR


def project_dir(data_root: Path, shared_id: str) -> Path:
    return share_dir(data_root) / "projects" / check_shared_id(shared_id)


def check_shared_id(value: object) -> str:
    """A shared id is a lowercase UUID version 4.

    Raises:
        InvalidInputError: ``SHARE_FILE_INVALID``.
    """
    if not isinstance(value, str) or not _UUID_RE.match(value):
        raise InvalidInputError("a shared project id is a lowercase UUID version 4", code="SHARE_FILE_INVALID")
    return value


def read_json(path: Path, kind: type[Any], max_bytes: int = _MAX_FILE) -> Any:
    """The JSON file ``path`` decoded as ``kind`` (``None`` when missing).

    Raises:
        StorageError: ``STORAGE_READ_FAILED`` (garbled, or above ``max_bytes``), and as ``read_regular``.
    """
    opened = read_regular(path)
    if opened is None:
        return None
    if len(opened[0]) > max_bytes:
        raise StorageError(f"{path.name} is too large", code="STORAGE_READ_FAILED")
    try:
        return msgspec.json.decode(opened[0], type=kind)
    except msgspec.DecodeError as exc:
        raise StorageError(f"{path.name} under the data root is garbled", code="STORAGE_READ_FAILED") from exc


def write_json(path: Path, value: Any) -> None:
    write_bytes(path, msgspec.json.encode(value) + b"\n")


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` (under ``R/share/``, folders made 0700) with ``data``, durably.

    Raises:
        StorageError: ``STORAGE_WRITE_FAILED``.
    """
    try:
        _make_dirs(path.parent)
        replace_file(path, f".{path.name}.{uuid.uuid4().hex}.tmp", data, durable=True)
    except OSError as exc:
        raise StorageError(f"writing {path.name} failed", code="STORAGE_WRITE_FAILED") from exc


def _make_dirs(directory: Path) -> None:
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(each, 0o700)


def project_file(root: str) -> Path:
    return Path(root, *PROJECT_FILE)


def read_project_file(root: str) -> str | None:
    """The shared id ``.intentloop/project.json`` at ``root`` names (``None`` without the file).

    Raises:
        InvalidInputError: ``SHARE_FILE_INVALID`` (not the JSON ``share init`` writes).
    """
    path = project_file(root)
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_FILE)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise StorageError("reading .intentloop/project.json failed", code="STORAGE_READ_FAILED") from exc
    try:
        found = msgspec.json.decode(data)
    except msgspec.DecodeError:
        found = None
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        raise InvalidInputError(
            ".intentloop/project.json is not {format: 1, project: <uuid4>}", code="SHARE_FILE_INVALID"
        )
    return check_shared_id(found.get("project"))


def write_project_file(root: str, shared_id: str) -> Path:
    """Write ``.intentloop/project.json`` (2-space JSON, trailing newline: a file meant to be committed)."""
    path = project_file(root)
    text = msgspec.json.format(msgspec.json.encode({"format": FORMAT, "project": shared_id}), indent=2) + b"\n"
    try:
        os.makedirs(path.parent, exist_ok=True)
        replace_file(path, f".project.json.{uuid.uuid4().hex}.tmp", text, durable=True, mode=0o644)
    except OSError as exc:
        raise StorageError("writing .intentloop/project.json failed", code="STORAGE_WRITE_FAILED") from exc
    return path


def _binding_path(data_root: Path, project_id: str) -> Path:
    return share_dir(data_root) / "bindings" / f"{project_id}.json"


def read_binding(data_root: Path, project_id: str) -> str | None:
    found = read_json(_binding_path(data_root, project_id), dict)
    if found is None:
        return None
    return check_shared_id(found.get("project"))


def write_binding(data_root: Path, project_id: str, shared_id: str) -> Path:
    path = _binding_path(data_root, project_id)
    write_json(path, {"format": FORMAT, "project": check_shared_id(shared_id)})
    return path


def shared_identity(data_root: Path | None, root: str, project_id: str) -> SharedIdentity | None:
    """The shared id of the project at ``root``: its ``.intentloop/project.json``, else this installation's binding
    of ``project_id``; ``None`` when it is not shared. Creates nothing."""
    found = read_project_file(root)
    if found is not None:
        return SharedIdentity(shared_id=found, source="file", path=str(project_file(root)))
    if data_root is None:
        return None
    bound = read_binding(data_root, project_id)
    if bound is None:
        return None
    return SharedIdentity(shared_id=bound, source="binding", path=str(_binding_path(data_root, project_id)))


def new_shared_id() -> str:
    return str(uuid.uuid4())


def read_settings(data_root: Path, shared_id: str) -> Settings:
    found = read_json(project_dir(data_root, shared_id) / "settings.json", Settings)
    return found if found is not None else Settings()


def write_settings(data_root: Path, shared_id: str, settings: Settings) -> None:
    write_json(project_dir(data_root, shared_id) / "settings.json", settings)


def note_local(data_root: Path, shared_id: str, project_id: str) -> Settings:
    """Record that local ``project_id`` is a copy of ``shared_id`` here (its ledger feeds this stream)."""
    settings = read_settings(data_root, shared_id)
    if project_id not in settings.locals:
        settings.locals.append(project_id)
        write_settings(data_root, shared_id, settings)
    return settings


class _Erased(msgspec.Struct, kw_only=True):
    digests: list[str]


#: Keyed digests of the statements peers erased: 8 MiB holds about 120,000.
_MAX_ERASED: Final = 8 << 20


def read_erased(data_root: Path, shared_id: str) -> frozenset[str]:
    """The keyed digests of the statements that peers' streams of ``shared_id`` erased (``erased.json``); an import
    into a project of ``shared_id`` leaves those statements out.

    Raises:
        StorageError: ``STORAGE_READ_FAILED`` (garbled), and as ``read_regular``.
    """
    found = read_json(project_dir(data_root, shared_id) / "erased.json", _Erased, _MAX_ERASED)
    return frozenset(found.digests) if found is not None else frozenset()


def add_erased(data_root: Path, shared_id: str, digests: set[str]) -> None:
    """Add ``digests`` to ``erased.json`` (under the sync lock, the only writer).

    Raises:
        StorageError: ``STORAGE_WRITE_FAILED``, and as :func:`read_erased`.
    """
    known = read_erased(data_root, shared_id)
    if digests - known:
        write_json(project_dir(data_root, shared_id) / "erased.json", _Erased(digests=sorted(known | digests)))


def read_principal(data_root: Path) -> str | None:
    """The principal set with ``share principal NAME`` (``None``: the project repository's ``user.email``)."""
    found = read_json(share_dir(data_root) / "identity.json", _Identity)
    return None if found is None else found.principal


def write_principal(data_root: Path, principal: str) -> None:
    write_json(share_dir(data_root) / "identity.json", _Identity(principal=check_principal(principal)))


def check_principal(value: str) -> str:
    """A principal is one printable line without spaces (an email, as git and allowed_signers use).

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS``.
    """
    if not value or len(value) > 200 or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise InvalidInputError("a principal is 1-200 printable characters without spaces (an email)")
    return value


def trusted_keys(data_root: Path) -> list[TrustedKey]:
    found = read_json(share_dir(data_root) / "trusted.json", _Trust)
    return [] if found is None else list(found.keys)


def trust_key(data_root: Path, key: TrustedKey) -> None:
    """Trust ``key`` (replacing the principal of a key already trusted)."""
    keys = [k for k in trusted_keys(data_root) if k.key_id != key.key_id]
    keys.append(key)
    write_json(share_dir(data_root) / "trusted.json", _Trust(keys=sorted(keys, key=lambda k: k.key_id)))


__all__ = [
    "FORMAT",
    "PROJECT_FILE",
    "QUOTAS",
    "Quotas",
    "Settings",
    "SharedIdentity",
    "TrustedKey",
    "add_erased",
    "check_principal",
    "check_shared_id",
    "new_shared_id",
    "note_local",
    "project_dir",
    "project_file",
    "read_binding",
    "read_erased",
    "read_json",
    "read_principal",
    "read_project_file",
    "read_settings",
    "share_dir",
    "shared_identity",
    "trust_key",
    "trusted_keys",
    "write_binding",
    "write_bytes",
    "write_json",
    "write_principal",
    "write_project_file",
    "write_settings",
]
