"""Which project a tool call is about, decided before any storage is touched (docs/TOOLS.md, "Project-root resolution").

Order: (1) the host's sandbox metadata ``_meta["codex/sandbox-state-meta"].sandboxCwd`` (a ``file:`` URI or an
absolute path; an explicit ``project_root`` must then name the same project), (2) the ``project_root`` argument,
(3) the client's roots when exactly one local ``file:`` root is advertised, (4) otherwise ``PROJECT_ROOT_REQUIRED``.
This module holds the pure decisions; asking the client for its roots lives in :mod:`intentloop.mcp.server`.
"""

from __future__ import annotations

import ntpath
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import msgspec

from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.mcp.envelope import json_type
from intentloop.model import project_id_for

SANDBOX_META_KEY = "codex/sandbox-state-meta"
# Codex sends an identical copy under this older key; it is read only when the current key is absent.
SANDBOX_META_FALLBACK_KEY = "codex/sandbox-state"
PROJECT_ROOT_MAX_CHARS = 1000

Canonicalize = Callable[[str], str]
RootSource = Literal["sandbox", "argument", "client_roots"]


class ResolvedRoot(msgspec.Struct, frozen=True, kw_only=True):
    """A canonical project root and the project id derived from it.

    Attributes:
        root: the canonical root (realpath of an existing local directory).
        project_id: ``project_id_for(root)``.
        source: which step of the resolution order decided it.
    """

    root: str
    project_id: str
    source: RootSource


def _is_windows() -> bool:
    return sys.platform == "win32"


def _metadata_invalid(detail: str) -> IntentLoopError:
    return InvalidInputError(
        f"_meta[{SANDBOX_META_KEY!r}] is malformed: {detail}", code="PROJECT_ROOT_METADATA_INVALID"
    )


def path_from_file_uri(uri: str) -> str | None:
    """The local path named by a ``file:`` URI, or ``None`` when ``uri`` is not a usable local ``file:`` URI.

    Accepts ``file:///abs``, ``file://localhost/abs`` and ``file:/abs``; percent-escapes must decode to UTF-8.
    A remote host, a query, a fragment, a NUL or a relative path makes the URI unusable.
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() != "file" or parts.query or parts.fragment:
        return None
    if parts.netloc not in ("", "localhost"):
        return None
    try:
        path = unquote(parts.path, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        return None
    if _is_windows() and len(path) >= 3 and path[0] == "/" and path[2] == ":":
        path = path[1:]  # file:///C:/work -> C:/work
    if not path or "\0" in path or not _is_absolute(path):
        return None
    return path


def _is_absolute(path: str) -> bool:
    if _is_windows():
        return ntpath.isabs(path)
    return path.startswith("/")


def sandbox_metadata(meta: Mapping[str, Any] | None) -> tuple[bool, object]:
    """``(present, value)`` of the sandbox metadata entry, preferring the current key over the fallback copy."""
    if not meta:
        return False, None
    for key in (SANDBOX_META_KEY, SANDBOX_META_FALLBACK_KEY):
        if key in meta:
            return True, meta[key]
    return False, None


def sandbox_cwd(meta: Mapping[str, Any] | None) -> str | None:
    """The sandbox working directory the host declared, as a path, or ``None`` when the host declared none.

    Only ``sandboxCwd`` is read; every sibling key (``permissionProfile``, ``sandboxPolicy``, future ones) is ignored.

    Raises:
        IntentLoopError: ``PROJECT_ROOT_METADATA_INVALID`` when the metadata is present but not an object, or
            ``sandboxCwd`` is missing, empty, not a string, or neither a local ``file:`` URI nor an absolute path.
    """
    present, value = sandbox_metadata(meta)
    if not present:
        return None
    if not isinstance(value, Mapping):
        raise _metadata_invalid("expected an object")
    cwd = value.get("sandboxCwd")
    if not isinstance(cwd, str) or not cwd.strip():
        raise _metadata_invalid("sandboxCwd must be a non-empty string")
    if "\0" in cwd:
        raise _metadata_invalid("sandboxCwd contains a NUL character")
    if _is_absolute(cwd) and not cwd.lower().startswith("file:"):
        return cwd
    path = path_from_file_uri(cwd)
    if path is None:
        raise _metadata_invalid("sandboxCwd must be a local file: URI or an absolute path")
    return path


def project_root_argument(arguments: Mapping[str, Any]) -> str | None:
    """The ``project_root`` argument after its type check, or ``None`` when it is absent.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` naming ``$.project_root`` unless it is a string of 1..1000 chars.
    """
    if "project_root" not in arguments:
        return None
    value = arguments["project_root"]
    if not isinstance(value, str):
        raise InvalidInputError(f"Expected `str`, got `{json_type(value)}` - at `$.project_root`")
    if len(value) < 1:
        raise InvalidInputError("Expected `str` of length >= 1 - at `$.project_root`")
    if len(value) > PROJECT_ROOT_MAX_CHARS:
        raise InvalidInputError(f"Expected `str` of length <= {PROJECT_ROOT_MAX_CHARS} - at `$.project_root`")
    return value


def canonical(raw: str, canonicalize: Canonicalize, source: RootSource) -> ResolvedRoot:
    """Canonicalize ``raw`` and derive its project id.

    Raises:
        IntentLoopError: ``PROJECT_ROOT_INVALID`` (or the canonicalizer's own code) when ``raw`` is not an absolute,
            existing, local directory.
    """
    try:
        root = canonicalize(raw)
    except IntentLoopError:
        raise
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            "project root must be an absolute, existing, local directory", code="PROJECT_ROOT_INVALID"
        ) from exc
    return ResolvedRoot(root=root, project_id=project_id_for(root), source=source)


def resolve_declared(
    meta: Mapping[str, Any] | None, arguments: Mapping[str, Any], canonicalize: Canonicalize
) -> ResolvedRoot | None:
    """Steps (1) and (2): the root the host's metadata or the caller's argument declares, or ``None``.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` for a ``project_root`` of the wrong type or length.
        IntentLoopError: ``PROJECT_ROOT_METADATA_INVALID``, ``PROJECT_ROOT_INVALID`` or ``PROJECT_ROOT_MISMATCH``.
    """
    explicit = project_root_argument(arguments)
    sandbox = sandbox_cwd(meta)
    if sandbox is None:
        return None if explicit is None else canonical(explicit, canonicalize, "argument")
    resolved = canonical(sandbox, canonicalize, "sandbox")
    if explicit is not None:
        other = canonical(explicit, canonicalize, "argument")
        if other.project_id != resolved.project_id:
            raise InvalidInputError(
                "project_root names a different project than the host's sandbox working directory",
                code="PROJECT_ROOT_MISMATCH",
            )
    return resolved


def single_local_root(uris: Iterable[str]) -> str | None:
    """The path of the only local ``file:`` root among ``uris``, or ``None`` when there are zero or several."""
    paths = {path for path in (path_from_file_uri(uri) for uri in uris) if path is not None}
    return paths.pop() if len(paths) == 1 else None


def root_required() -> IntentLoopError:
    """The error for step (4): nothing declared the project."""
    return InvalidInputError(
        "no project root: pass project_root (an absolute path), or use a host that supplies sandbox metadata or "
        "exactly one local file: root",
        code="PROJECT_ROOT_REQUIRED",
    )


def default_canonicalize(raw: str) -> str:
    """The root of the project ``raw`` belongs to (``intentloop.store.locate_project``, under the data root this
    process resolves; without one, no project has memory). Imported lazily so this module stays cheap to import."""
    from intentloop.errors import StorageError
    from intentloop.store import locate_project, resolve_data_root

    try:
        data_root = resolve_data_root()
    except StorageError:  # DATA_DIR_REQUIRED: the call that follows reports it
        data_root = None
    return locate_project(raw, data_root).root


__all__ = [
    "PROJECT_ROOT_MAX_CHARS",
    "SANDBOX_META_FALLBACK_KEY",
    "SANDBOX_META_KEY",
    "Canonicalize",
    "ResolvedRoot",
    "canonical",
    "default_canonicalize",
    "path_from_file_uri",
    "project_root_argument",
    "resolve_declared",
    "root_required",
    "sandbox_cwd",
    "sandbox_metadata",
    "single_local_root",
]
