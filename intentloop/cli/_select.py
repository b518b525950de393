"""Name a project, a task or a claim on the command line: the current directory by default, ids as unique prefixes.

Ids are matched like git abbreviations: any unique prefix, in either case. A prefix that matches nothing is the
matching ``*_NOT_FOUND`` (exit 5); one that matches several is ``AMBIGUOUS_ID`` listing them (exit 2). Everything
here reads only: naming a project that has no data creates nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from intentloop.cli._target import Target, locate_option
from intentloop.errors import CorruptLedgerError, ErrorCode, IntentLoopError, InvalidInputError, StorageError

if TYPE_CHECKING:
    from intentloop.model import Event, ProjectState

_PREFIX_RE = re.compile(r"^[0-9a-f-]{1,64}$")
_SHOWN_MATCHES = 5


def unique_match(kind: str, prefix: str, known: Iterable[str], *, not_found: ErrorCode, invalid: ErrorCode) -> str:
    """The one id of ``known`` that starts with ``prefix`` (case-insensitive).

    Args:
        kind: what is named (``"project"``, ``"task"``, ``"claim"``), for messages.
        prefix: what the user typed.
        known: every id that could be meant.
        not_found: the code when nothing matches.
        invalid: the code when ``prefix`` cannot be an id at all.

    Raises:
        IntentLoopError: ``not_found``, ``invalid`` or ``AMBIGUOUS_ID``.
    """
    wanted = prefix.strip().lower()
    if not _PREFIX_RE.match(wanted):
        raise IntentLoopError(f"{prefix!r} is not a {kind} id or a prefix of one", code=invalid)
    matches = sorted({k for k in known if k.lower().startswith(wanted)})
    if not matches:
        raise IntentLoopError(f"no {kind} id starts with {wanted}", code=not_found)
    if len(matches) > 1:
        shown = ", ".join(matches[:_SHOWN_MATCHES]) + (", …" if len(matches) > _SHOWN_MATCHES else "")
        raise InvalidInputError(
            f"{wanted} is the start of {plural(len(matches), kind + ' id')}: {shown}", code="AMBIGUOUS_ID"
        )
    return matches[0]


#: The commands that ask first (``forget``, ``relink``, ``recover quarantine``, ``recover salvage``, ``verify
#: --accept``) take no id prefix shorter than this (``/intent forget`` in a prompt asks the same): one typed character
#: would name whichever single claim, task or project happens to start with it.
MIN_DESTRUCTIVE_PREFIX = 4


def destructive_prefix(kind: str, prefix: str, action: str = "delete", *, option: str | None = None) -> str:
    """``prefix`` unchanged when it has at least :data:`MIN_DESTRUCTIVE_PREFIX` characters.

    Args:
        kind: what the prefix names (``"claim"``, ``"task"``, ``"project"``).
        prefix: what the user typed.
        action: what the command is about to do to it, for the message.
        option: the option that carried it (``"--project-id"``), named first in the message.

    Raises:
        InvalidInputError: ``INVALID_ID`` for a shorter one.
    """
    if len(prefix.strip()) < MIN_DESTRUCTIVE_PREFIX:
        named = f"{option} {prefix.strip()!r}" if option else repr(prefix.strip())
        raise InvalidInputError(
            f"{named} is too short to name the {kind} to {action}: give at least {MIN_DESTRUCTIVE_PREFIX} "
            f"characters of its id",
            code="INVALID_ID",
        )
    return prefix


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 event``, ``2 events``, ``0 events`` (``plural_form`` for irregular nouns)."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def select_project(
    project_root: str | None, project_id: str | None, *, must_exist: bool = True, option: str = "--project-root"
) -> Target:
    """The project named by ``--project-root`` or ``--project-id`` (a unique prefix), else the current directory's.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` (both options), ``PROJECT_ROOT_INVALID``.
        StorageError: ``DATA_DIR_REQUIRED``, ``INVALID_PROJECT_ID``, ``PROJECT_NOT_FOUND``, ``AMBIGUOUS_ID``,
            ``PATH_ESCAPE``, ``INVALID_DATA_DIR``.
    """
    from intentloop.recovery import list_project_ids
    from intentloop.store import ProjectStore, locate_project, resolve_data_root

    if project_root is not None and project_id is not None:
        raise InvalidInputError("pass either --project-root or --project-id, not both")
    if project_id is not None:
        if not _PREFIX_RE.match(project_id.strip().lower()) or "-" in project_id:
            raise StorageError(f"{project_id!r} is not a project id or a prefix of one", code="INVALID_PROJECT_ID")
        data_root = resolve_data_root()
        pid = unique_match(
            "project",
            project_id,
            list_project_ids(data_root),
            not_found="PROJECT_NOT_FOUND",
            invalid="INVALID_PROJECT_ID",
        )
        return Target(data_root=data_root, project_id=pid, project_root=None, store=ProjectStore(data_root, pid))
    named = project_root is not None
    data_root = resolve_data_root()
    located = (
        locate_option(project_root, data_root, option)
        if project_root is not None
        else locate_project(os.getcwd(), data_root)
    )
    store = ProjectStore(data_root, located.project_id)
    if must_exist and not store.exists():
        hint = "" if named else " (the current directory; name another with --project-root P or --project-id ID)"
        raise StorageError(
            f"the project at {located.root}{hint} has no data under {data_root}", code="PROJECT_NOT_FOUND"
        )
    return Target(
        data_root=data_root, project_id=located.project_id, project_root=located.root, store=store, located=located
    )


def verified_events(target: Target) -> tuple[Sequence[Event], CorruptLedgerError | None]:
    """The verified prefix of the project's ledger and the damage after it (``None`` when intact); lock-free."""
    stored = target.store.read_raw()
    if stored is None:
        return (), None
    _data, verification = stored
    return verification.events, verification.error


def project_state(events: Sequence[Event]) -> ProjectState:
    from intentloop.model import project

    return project(events)


def select_task(state: ProjectState, prefix: str, *, extra: Iterable[str] = ()) -> str:
    """The started task (or a task only a private control names, ``extra``) whose id starts with ``prefix``.

    Raises:
        IntentLoopError: ``TASK_NOT_FOUND``, ``INVALID_ID``, ``AMBIGUOUS_ID``.
    """
    known = [tid for tid, task in state.tasks.items() if task.started]
    return unique_match("task", prefix, [*known, *extra], not_found="TASK_NOT_FOUND", invalid="INVALID_ID")


def select_claim(state: ProjectState, prefix: str) -> tuple[str, str]:
    """``(task_id, claim_id)`` of the claim whose id starts with ``prefix``, in any started task.

    Raises:
        IntentLoopError: ``CLAIM_NOT_FOUND``, ``INVALID_ID``, ``AMBIGUOUS_ID``.
    """
    owner = {cid: tid for tid, task in state.tasks.items() if task.started for cid in task.claims}
    claim_id = unique_match("claim", prefix, owner, not_found="CLAIM_NOT_FOUND", invalid="INVALID_ID")
    return owner[claim_id], claim_id


#: How many characters of a project id every human output prints (``--json`` always carries the whole id): enough
#: to be a unique prefix for ``--project-id`` among any realistic number of projects.
PROJECT_ID_WIDTH = 12


def short(identifier: str, length: int = PROJECT_ID_WIDTH) -> str:
    """The first ``length`` characters of an id, as tables show it (``--json`` always carries the full id)."""
    return identifier[:length]


__all__ = [
    "MIN_DESTRUCTIVE_PREFIX",
    "PROJECT_ID_WIDTH",
    "destructive_prefix",
    "plural",
    "project_state",
    "select_claim",
    "select_project",
    "select_task",
    "short",
    "unique_match",
    "verified_events",
]
