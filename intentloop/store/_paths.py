"""Where data lives (docs/STORAGE.md): the data root, canonical project roots and the paths of one project.

Reads only ``lstat`` and never create; :meth:`ProjectPaths.ensure` is the single place that creates directories
(0700 whatever the umask), and it is only called on the way into the lock.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Final, Literal

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.store._fs import check_dir, make_dir

PROJECT_ID_RE = LazyPattern(r"^[a-f0-9]{64}$")

#: The variable that overrides every other source of the data root.
DATA_DIR_ENV: Final = "INTENT_LOOP_DATA_DIR"
#: The variables the rule reads besides ``HOME`` (a Codex plugin's ``.mcp.json`` forwards exactly these to the server
#: with ``env_vars``, because Codex gives an MCP server only HOME, PATH, USER, LANG, TERM, TMPDIR and its ``env``).
ROOT_ENV_VARS: Final = (DATA_DIR_ENV, "XDG_DATA_HOME", "CODEX_HOME")
#: The per-user default, below ``$XDG_DATA_HOME`` (default ``~/.local/share``).
DEFAULT_SUBDIR: Final = ("intentloop", "v1")
#: Where the original intent-loop plugin keeps its data, below ``$CODEX_HOME`` (default ``~/.codex``).
ORIGINAL_SUBDIR: Final = ("plugin-data", "intent-loop", "v1")

DataRootSource = Literal["INTENT_LOOP_DATA_DIR", "original", "default"]


class DataRoot(msgspec.Struct, frozen=True, kw_only=True):
    """The resolved storage root ``R`` and how it was chosen (``intentloop status`` prints both).

    Attributes:
        path: the absolute root (it may not exist yet; nothing is created by resolving it).
        source: ``INTENT_LOOP_DATA_DIR`` (the override), ``original`` (the original plugin's existing data, adopted
            in place) or ``default`` (the per-user default).
        reason: one human sentence saying why this root was chosen.
    """

    path: Path
    source: DataRootSource
    reason: str


def _home(environ: Mapping[str, str]) -> str | None:
    """The user's home folder from the environment alone (``HOME``; ``USERPROFILE`` on Windows), absolute or None.

    No password-database fallback: every host gives its processes HOME, and a process without one must fail loudly
    rather than guess a root another process of the same user might not guess.
    """
    home = environ.get("HOME", "") or (environ.get("USERPROFILE", "") if os.name == "nt" else "")
    return home if os.path.isabs(home) else None


def locate_data_root(env: Mapping[str, str] | None = None) -> DataRoot:
    """The storage root ``R`` of this user, the same for the server, every hook, the CLI and both installers.

    1. ``INTENT_LOOP_DATA_DIR=D`` (non-empty) → ``D`` (made absolute against the current directory).
    2. The per-user default ``N`` = ``$XDG_DATA_HOME/intentloop/v1`` (an absolute ``XDG_DATA_HOME`` only, as the XDG
       spec says) else ``$HOME/.local/share/intentloop/v1``.
    3. The original plugin's root ``O`` = ``$CODEX_HOME/plugin-data/intent-loop/v1`` (``CODEX_HOME`` default
       ``~/.codex``): when ``O/projects`` is a directory and ``N`` does not exist, ``O`` is used in place (adopted:
       nothing is copied or moved, and the original, if still installed, keeps sharing the same ledgers).
    4. Otherwise ``N``.

    Only ``HOME``, ``XDG_DATA_HOME`` and ``CODEX_HOME`` are read: every host gives its
    processes HOME, the installers pin the result, and the plugin's ``.mcp.json`` forwards the other two. Nothing is
    created, and the program's own location, ``PLUGIN_DATA`` or the workspace never decide (a plugin cache is
    replaced on every update; ``PLUGIN_DATA`` reaches hooks but never Codex's MCP server).

    Args:
        env: the environment to consult (default ``os.environ``).

    Raises:
        StorageError: ``DATA_DIR_REQUIRED`` when ``INTENT_LOOP_DATA_DIR`` is unset and HOME is not an absolute path.
    """
    environ = os.environ if env is None else env
    if data_dir := environ.get(DATA_DIR_ENV, ""):
        return DataRoot(path=Path(os.path.abspath(data_dir)), source=DATA_DIR_ENV, reason=f"{DATA_DIR_ENV} is set")
    home = _home(environ)
    if home is None:
        raise StorageError(f"no data root: HOME is not set and {DATA_DIR_ENV} is not set", code="DATA_DIR_REQUIRED")
    xdg = environ.get("XDG_DATA_HOME", "")
    base, base_name = (
        (xdg, "$XDG_DATA_HOME") if os.path.isabs(xdg) else (os.path.join(home, ".local", "share"), "~/.local/share")
    )
    new = Path(base, *DEFAULT_SUBDIR)
    codex_home = environ.get("CODEX_HOME", "")
    original = Path(os.path.abspath(codex_home) if codex_home else os.path.join(home, ".codex"), *ORIGINAL_SUBDIR)
    if not os.path.lexists(new) and os.path.isdir(original / "projects"):
        return DataRoot(
            path=original,
            source="original",
            reason=f"the original intent-loop plugin's data exists there and {new} does not (adopted in place)",
        )
    return DataRoot(path=new, source="default", reason=f"the per-user default ({base_name}/{'/'.join(DEFAULT_SUBDIR)})")


def resolve_data_root(env: Mapping[str, str] | None = None) -> Path:
    """The storage root ``R``: :func:`locate_data_root`'s path.

    Raises:
        StorageError: ``DATA_DIR_REQUIRED`` when ``INTENT_LOOP_DATA_DIR`` is unset and HOME is not an absolute path.
    """
    return locate_data_root(env).path


def canonicalize_project_root(raw: object) -> str:
    """The canonical form of a project root: the realpath of an absolute, existing, local directory.

    On Windows UNC and device paths are refused before the file system is touched and the result is case-folded.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``.
    """
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise InvalidInputError("project_root must be a non-empty path", code="PROJECT_ROOT_INVALID")
    if os.name == "nt" and (raw.startswith(("\\\\", "//")) or raw[:4] in ("\\\\?\\", "\\\\.\\")):
        raise InvalidInputError("project_root must be a local path", code="PROJECT_ROOT_INVALID")
    if not os.path.isabs(raw):
        raise InvalidInputError("project_root must be an absolute path", code="PROJECT_ROOT_INVALID")
    try:
        real = os.path.realpath(raw, strict=True)
    except (OSError, ValueError) as exc:
        raise InvalidInputError("project_root does not exist", code="PROJECT_ROOT_INVALID") from exc
    if not os.path.isdir(real):
        raise InvalidInputError("project_root is not a directory", code="PROJECT_ROOT_INVALID")
    return real.casefold() if os.name == "nt" else real


def validate_project_id(project_id: object) -> str:
    """Raises: StorageError: ``INVALID_PROJECT_ID`` unless 64 lowercase hex digits."""
    if not isinstance(project_id, str) or not PROJECT_ID_RE.match(project_id):
        raise StorageError("project id must be 64 lowercase hex digits", code="INVALID_PROJECT_ID")
    return project_id


class ProjectPaths(msgspec.Struct, frozen=True, dict=True):
    """The paths of one project under a data root; constructing it touches nothing (a frozen struct, not a dataclass:
    the hook never imports dataclasses). Each path is built once (``dict=True`` lets ``cached_property`` keep it): a
    write asked for ``project_dir`` 42 times, ~3 µs a time.

    Raises:
        StorageError: ``INVALID_PROJECT_ID``.
    """

    data_root: Path
    project_id: str

    def __post_init__(self) -> None:
        validate_project_id(self.project_id)
        msgspec.structs.force_setattr(self, "data_root", Path(os.path.abspath(self.data_root)))

    @cached_property
    def projects_dir(self) -> Path:
        return self.data_root / "projects"

    @cached_property
    def project_dir(self) -> Path:
        return self.projects_dir / self.project_id

    @cached_property
    def ledger_path(self) -> Path:
        return self.project_dir / "ledger.jsonl"

    @cached_property
    def lock_path(self) -> Path:
        return self.project_dir / "ledger.lock"

    @cached_property
    def private_dir(self) -> Path:
        return self.project_dir / "private-sessions"

    @cached_property
    def quarantine_dir(self) -> Path:
        return self.project_dir / "quarantine"

    @cached_property
    def spool_dir(self) -> Path:
        return self.project_dir / "spool"

    @cached_property
    def tombstones_path(self) -> Path:
        """Keyed digests of the requests whose claims were deleted (no claim id, no text)."""
        return self.project_dir / "deleted-requests.json"

    def check_project(self) -> bool:
        """Whether the project directory exists; refuses a symlinked or escaping ``projects`` or project directory.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR`` or ``STORAGE_READ_FAILED``.
        """
        if not check_dir(self.projects_dir, missing_ok=True):
            return False
        if not check_dir(self.project_dir, missing_ok=True):
            return False
        self.check_inside(self.project_dir, self.projects_dir)
        return True

    def check_inside(self, path: Path, parent: Path | None = None) -> None:
        """Refuse a path whose resolved location is not directly inside its (resolved) parent.

        Raises:
            StorageError: ``PATH_ESCAPE``.
        """
        parent = self.project_dir if parent is None else parent
        try:
            real_parent = os.path.realpath(parent, strict=True)
            real = os.path.realpath(path)
        except OSError as exc:
            raise StorageError(f"{path.name} cannot be resolved", code="PATH_ESCAPE") from exc
        if os.path.dirname(real) != real_parent or os.path.basename(real) != path.name:
            raise StorageError(f"{path.name} resolves outside its directory", code="PATH_ESCAPE")

    def check_subdir(self, path: Path) -> bool:
        """Whether an internal directory (``private-sessions``, ``quarantine``, ``spool``) exists; refuses unsafe ones.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR`` or ``STORAGE_READ_FAILED``.
        """
        if not self.check_project():
            return False
        if not check_dir(path, missing_ok=True):
            return False
        self.check_inside(path)
        return True

    def ensure(self) -> None:
        """Create the data root, ``projects`` and the project directory as needed (0700), then check them.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR`` or ``STORAGE_WRITE_FAILED``.
        """
        ensure_data_root(self.data_root)
        if not check_dir(self.projects_dir, missing_ok=True):
            make_dir(self.projects_dir)
        check_dir(self.projects_dir, missing_ok=False)
        if not check_dir(self.project_dir, missing_ok=True):
            make_dir(self.project_dir)
        if not self.check_project():
            raise StorageError("the project directory vanished", code="INVALID_DATA_DIR")
        for directory in (self.data_root, self.projects_dir, self.project_dir):
            _tighten(directory)

    def ensure_subdir(self, path: Path) -> None:
        """Create ``private-sessions``, ``quarantine`` or ``spool`` (0700) if missing, then check it.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR`` or ``STORAGE_WRITE_FAILED``.
        """
        if not self.check_subdir(path):
            make_dir(path)
            if not self.check_subdir(path):
                raise StorageError(f"{path.name} vanished", code="INVALID_DATA_DIR")


def ensure_data_root(data_root: Path) -> None:
    """Create the data root and its missing parents (0700) when it does not exist yet.

    Raises:
        StorageError: ``INVALID_DATA_DIR`` (it is not a directory) or ``STORAGE_WRITE_FAILED``.
    """
    missing: list[Path] = []
    probe = data_root
    while not os.path.lexists(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        make_dir(path)
    if not os.path.isdir(data_root):
        raise StorageError("the data root is not a directory", code="INVALID_DATA_DIR")


def _tighten(directory: Path) -> None:
    """Make a directory of ours that others may read or enter 0700 (a data root made with ``mkdir`` under a lax umask,
    or opened up by hand): what it holds is private. One that belongs to another user is refused.

    Raises:
        StorageError: ``INVALID_DATA_DIR`` (another user's, open to others), ``STORAGE_WRITE_FAILED``.
    """
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise StorageError(f"cannot check {directory}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    if not st.st_mode & 0o077:
        return
    if st.st_uid != os.geteuid():
        raise StorageError(
            f"{directory} belongs to another user and others may read it; use a data directory of your own",
            code="INVALID_DATA_DIR",
        )
    try:
        os.chmod(directory, 0o700)
    except OSError as exc:
        raise StorageError(
            f"cannot make {directory} private (0700): {exc.strerror}", code="STORAGE_WRITE_FAILED"
        ) from exc


__all__ = [
    "DATA_DIR_ENV",
    "PROJECT_ID_RE",
    "ROOT_ENV_VARS",
    "DataRoot",
    "DataRootSource",
    "ProjectPaths",
    "canonicalize_project_root",
    "ensure_data_root",
    "locate_data_root",
    "resolve_data_root",
    "validate_project_id",
]
