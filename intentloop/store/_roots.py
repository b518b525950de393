"""Which project a working directory belongs to: the one rule every face applies to a directory it is given.

A directory inside a project is that project: the nearest enclosing directory whose project already has memory (a
ledger under the data root), else the top of the enclosing git work tree, else the directory itself — the original's
rule, so ledgers recorded from a subfolder keep their ids and are still found there. The search for memory stops at
the git work tree's top when there is one, and neither search climbs to the user's home directory or the file
system's root (memory recorded there, or a dotfiles repository at ``~``, would otherwise swallow every folder below
it), though either is its own project when it is the directory given. Why: a hook run from ``repo/backend`` found
an empty, different project where the session's task had been recorded from ``repo``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

from intentloop.model.ids import project_id_for
from intentloop.store._paths import ProjectPaths, canonicalize_project_root

#: Why a root was chosen, as ``intentloop status`` shows it.
REASONS = {
    "memory": "the nearest enclosing directory whose project has memory",
    "git": "the top of the enclosing git work tree (no enclosing project has memory yet)",
    "directory": "the directory itself (no enclosing project has memory and it is not in a git work tree)",
}


class ProjectRoot(NamedTuple):
    """The project a directory belongs to.

    Attributes:
        root: the project's canonical root.
        project_id: ``project_id_for(root)``.
        reason: ``memory``, ``git`` or ``directory`` (:data:`REASONS`).
        given: the canonical directory asked about.
    """

    root: str
    project_id: str
    reason: str
    given: str


def locate_project(raw: object, data_root: Path | None) -> ProjectRoot:
    """Canonicalize ``raw`` and apply the rule above (without a data root, no project has memory). Creates nothing.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID`` (from :func:`canonicalize_project_root`).
    """
    given = canonicalize_project_root(raw)
    home = _home()
    chain = [given]  # the directory, then each enclosing one below the home directory and the file system's root
    while (parent := os.path.dirname(chain[-1])) != chain[-1] and parent != home and os.path.dirname(parent) != parent:
        chain.append(parent)
    top = next((directory for directory in chain if _is_work_tree_top(directory)), None)
    if top is not None:
        chain = chain[: chain.index(top) + 1]
    if data_root is not None:
        for directory in chain:
            pid = project_id_for(directory)
            if _has_memory(data_root, pid):
                return ProjectRoot(directory, pid, "memory", given)
    if top is not None:
        return ProjectRoot(top, project_id_for(top), "git", given)
    return ProjectRoot(given, project_id_for(given), "directory", given)


def _is_work_tree_top(directory: str) -> bool:
    """A ``.git`` directory or file (a linked worktree, a submodule) marks a work tree's top."""
    return os.path.lexists(os.path.join(directory, ".git"))


def _home() -> str:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    with contextlib.suppress(OSError, ValueError):
        home = os.path.realpath(home)
    return home.casefold() if os.name == "nt" else home


def _has_memory(data_root: Path, project_id: str) -> bool:
    return os.path.lexists(ProjectPaths(data_root, project_id).ledger_path)


__all__ = ["REASONS", "ProjectRoot", "locate_project"]
