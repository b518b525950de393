"""Where data lives (CONTRACT §1): the data root, canonical project roots and the paths of one project.

Reads only ``lstat`` and never create; :meth:`ProjectPaths.ensure` is the single place that creates directories
(0700 whatever the umask), and it is only called on the way into the lock.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.store._fs import check_dir, make_dir

PROJECT_ID_RE = re.compile(r"^[a-f0-9]{64}$")
_CACHE_MARKER = os.sep + os.path.join("plugins", "cache") + os.sep
_APP_SUBDIR = ("intent-loop", "v1")


def resolve_data_root(env: Mapping[str, str] | None = None, argv0: str | None = None) -> Path:
    """The storage root ``R``: the first of the four sources of CONTRACT §1 that is set and non-empty.

    1. ``INTENT_LOOP_DATA_DIR=D`` → ``D``; 2. ``CODEX_HOME=C`` → ``C/plugin-data/intent-loop/v1``;
    3. ``PLUGIN_DATA=P`` → ``P/intent-loop/v1``; 4. the running program (``argv0``, default ``sys.argv[0]``) lies under
    ``<codex-home>/plugins/cache/`` → ``<codex-home>/plugin-data/intent-loop/v1``. Relative values are made absolute
    against the current directory. Nothing is created.

    Args:
        env: the environment to consult (default ``os.environ``).
        argv0: the path of the running program (default ``sys.argv[0]``).

    Raises:
        StorageError: ``DATA_DIR_REQUIRED`` when none of the four applies.
    """
    environ = os.environ if env is None else env
    if data_dir := environ.get("INTENT_LOOP_DATA_DIR", ""):
        return Path(os.path.abspath(data_dir))
    if codex_home := environ.get("CODEX_HOME", ""):
        return Path(os.path.abspath(codex_home), "plugin-data", *_APP_SUBDIR)
    if plugin_data := environ.get("PLUGIN_DATA", ""):
        return Path(os.path.abspath(plugin_data), *_APP_SUBDIR)
    program = sys.argv[0] if argv0 is None else argv0
    if program:
        absolute = os.path.abspath(program)
        index = absolute.find(_CACHE_MARKER)
        if index >= 0:
            return Path(absolute[:index] or os.sep, "plugin-data", *_APP_SUBDIR)
    raise StorageError(
        "no data directory: set INTENT_LOOP_DATA_DIR, CODEX_HOME or PLUGIN_DATA", code="DATA_DIR_REQUIRED"
    )


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


class ProjectPaths(msgspec.Struct, frozen=True):
    """The paths of one project under a data root; constructing it touches nothing (a frozen struct, not a dataclass:
    the hook never imports dataclasses).

    Raises:
        StorageError: ``INVALID_PROJECT_ID``.
    """

    data_root: Path
    project_id: str

    def __post_init__(self) -> None:
        validate_project_id(self.project_id)
        msgspec.structs.force_setattr(self, "data_root", Path(os.path.abspath(self.data_root)))

    @property
    def projects_dir(self) -> Path:
        return self.data_root / "projects"

    @property
    def project_dir(self) -> Path:
        return self.projects_dir / self.project_id

    @property
    def ledger_path(self) -> Path:
        return self.project_dir / "ledger.jsonl"

    @property
    def lock_path(self) -> Path:
        return self.project_dir / "ledger.lock"

    @property
    def private_dir(self) -> Path:
        return self.project_dir / "private-sessions"

    @property
    def quarantine_dir(self) -> Path:
        return self.project_dir / "quarantine"

    @property
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
        """Whether an internal directory (``private-sessions``, ``quarantine``) exists; refuses unsafe ones.

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
        missing: list[Path] = []
        probe = self.data_root
        while not os.path.lexists(probe) and probe.parent != probe:
            missing.append(probe)
            probe = probe.parent
        for path in reversed(missing):
            make_dir(path)
        if not os.path.isdir(self.data_root):
            raise StorageError("the data root is not a directory", code="INVALID_DATA_DIR")
        if not check_dir(self.projects_dir, missing_ok=True):
            make_dir(self.projects_dir)
        check_dir(self.projects_dir, missing_ok=False)
        if not check_dir(self.project_dir, missing_ok=True):
            make_dir(self.project_dir)
        if not self.check_project():
            raise StorageError("the project directory vanished", code="INVALID_DATA_DIR")

    def ensure_subdir(self, path: Path) -> None:
        """Create ``private-sessions`` or ``quarantine`` (0700) if missing, then check it.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR`` or ``STORAGE_WRITE_FAILED``.
        """
        if not self.check_subdir(path):
            make_dir(path)
            if not self.check_subdir(path):
                raise StorageError(f"{path.name} vanished", code="INVALID_DATA_DIR")


__all__ = [
    "PROJECT_ID_RE",
    "ProjectPaths",
    "canonicalize_project_root",
    "resolve_data_root",
    "validate_project_id",
]
