"""Turn ``--project-root`` / ``--project-id`` into a project of the resolved data root.

The ledger never stores a project's root, so a project can be named either by its folder (hashed into its id) or
directly by the id that ``intentloop status`` lists. Usage errors are raised before the data root is consulted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from intentloop.errors import IntentLoopError, InvalidInputError

if TYPE_CHECKING:
    from intentloop.store import ProjectRoot, ProjectStore


def option_path(value: str) -> str:
    """A folder given on the command line, absolute: ``~`` expanded, a relative path taken from the working directory
    (as every shell tool takes it; the MCP tools still require absolute roots)."""
    return os.path.abspath(os.path.expanduser(value))


def locate_option(value: str, data_root: Path, option: str) -> ProjectRoot:
    """The project the folder given as ``option`` (``--project-root``, ``--to``) belongs to.

    Raises:
        IntentLoopError: ``PROJECT_ROOT_INVALID`` naming ``option`` and what was typed; storage errors.
    """
    from intentloop.store import locate_project

    try:
        return locate_project(option_path(value), data_root)
    except IntentLoopError as exc:
        if exc.code != "PROJECT_ROOT_INVALID":
            raise
        reason = exc.message.removeprefix("project_root ")
        raise InvalidInputError(f"{option} {value}: the folder {reason}", code=exc.code) from None


@dataclass(frozen=True)
class Target:
    """A project named on the command line.

    Attributes:
        data_root: the resolved storage root ``R``.
        project_id: the project's id.
        project_root: the project's canonical root (``None`` when it was named by ``--project-id``).
        store: the project's store (constructing it touches nothing).
        located: which root the directory given (``--project-root`` or the working directory) was found to belong
            to, and why (``None`` when named by ``--project-id``).
    """

    data_root: Path
    project_id: str
    project_root: str | None
    store: ProjectStore
    located: ProjectRoot | None = None

    def fields(self) -> dict[str, object]:
        """The target as JSON fields."""
        return {
            "data_root": str(self.data_root),
            "project_id": self.project_id,
            "project_root": self.project_root,
        }


def project_id_of(project_root: str | None, project_id: str | None) -> tuple[str, str | None]:
    """Validate the two options and return ``(project_id, canonical_root | None)``.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` (neither or both given), ``PROJECT_ROOT_INVALID``.
        StorageError: ``INVALID_PROJECT_ID``.
    """
    from intentloop.store import resolve_data_root, validate_project_id

    if project_root is not None and project_id is not None:
        raise InvalidInputError("pass either --project-root or --project-id, not both")
    if project_root is not None:
        located = locate_option(project_root, resolve_data_root(), "--project-root")
        return located.project_id, located.root
    if project_id is not None:
        return validate_project_id(project_id), None
    raise InvalidInputError("name the project with --project-root P or --project-id ID")


def resolve_target(
    project_root: str | None, project_id: str | None, *, must_exist: bool = True, asks_to: str | None = None
) -> Target:
    """Resolve the options and the data root into a :class:`Target`; creates nothing.

    Without either option the project is the current directory's; ``--project-id`` may be a unique prefix of an id
    (in either case). See :func:`cli._select.select_project`. ``asks_to`` names what a command that asks first is
    about to do to the project (``"quarantine"``): its ``--project-id`` then needs at least 4 characters.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS``, ``PROJECT_ROOT_INVALID``, ``INVALID_ID`` (a short prefix).
        StorageError: ``INVALID_PROJECT_ID``, ``DATA_DIR_REQUIRED``, ``PROJECT_NOT_FOUND``, ``AMBIGUOUS_ID``,
            ``PATH_ESCAPE``, ``INVALID_DATA_DIR``.
    """
    from intentloop.cli._select import destructive_prefix, select_project

    if asks_to is not None and project_id is not None:
        destructive_prefix("project", project_id, asks_to, option="--project-id")
    return select_project(project_root, project_id, must_exist=must_exist)


__all__ = ["Target", "locate_option", "option_path", "project_id_of", "resolve_target"]
