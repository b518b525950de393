"""Which project a directory belongs to: the nearest enclosing directory with memory, else the git work tree's top,
else the directory itself — never memory or a work tree at the home directory or the file system's root."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from intentloop.errors import InvalidInputError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import ProjectStore, locate_project


def remember(data_root: Path, directory: Path) -> None:
    """Give ``directory``'s own project memory (a ledger under the data root)."""
    store = ProjectStore(data_root, project_id_for(str(directory)))
    draft = EventDraft(event_type="task_started", task_id=str(uuid.uuid4()), actor="user", request_id="r", payload={})
    with store.locked() as ledger:
        ledger.append([draft])


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "repo" / "backend" / "api").mkdir(parents=True)
    (home / "plain" / "sub").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home.resolve()


def test_a_plain_directory_is_its_own_project(tree: Path, data_root: Path) -> None:
    found = locate_project(str(tree / "plain" / "sub"), data_root)
    assert (found.root, found.reason) == (str(tree / "plain" / "sub"), "directory")
    assert found.project_id == project_id_for(found.root) and found.given == found.root


def test_a_subfolder_of_a_work_tree_is_the_work_trees_project(tree: Path, data_root: Path) -> None:
    assert locate_project(str(tree / "repo" / "backend"), data_root).reason == "directory"  # control: no .git yet
    (tree / "repo" / ".git").mkdir()
    api = str(tree / "repo" / "backend" / "api")
    found = locate_project(api, data_root)
    assert (found.root, found.reason, found.given) == (str(tree / "repo"), "git", api)


def test_a_git_file_marks_a_linked_worktree_or_submodule(tree: Path, data_root: Path) -> None:
    (tree / "repo" / ".git").mkdir()
    (tree / "repo" / "backend" / ".git").write_text("gitdir: ../.git/modules/backend\n")
    assert locate_project(str(tree / "repo" / "backend" / "api"), data_root).root == str(tree / "repo" / "backend")


def test_the_nearest_enclosing_memory_wins_inside_the_work_tree(tree: Path, data_root: Path) -> None:
    (tree / "repo" / ".git").mkdir()
    remember(data_root, tree / "repo")
    found = locate_project(str(tree / "repo" / "backend" / "api"), data_root)
    assert (found.root, found.reason) == (str(tree / "repo"), "memory")
    remember(data_root, tree / "repo" / "backend")  # a ledger recorded from the subfolder keeps its id
    found = locate_project(str(tree / "repo" / "backend" / "api"), data_root)
    assert (found.root, found.reason) == (str(tree / "repo" / "backend"), "memory")
    assert locate_project(str(tree / "repo" / "backend" / "api"), None).reason == "git"  # no data root: no memory


def test_memory_above_the_work_tree_is_not_this_projects(tree: Path, data_root: Path) -> None:
    (tree / "repo" / "backend" / ".git").mkdir()
    remember(data_root, tree / "repo")
    found = locate_project(str(tree / "repo" / "backend" / "api"), data_root)
    assert (found.root, found.reason) == (str(tree / "repo" / "backend"), "git")
    (tree / "repo" / "backend" / ".git").rmdir()  # control: without that work tree, the memory above is found
    assert locate_project(str(tree / "repo" / "backend" / "api"), data_root).root == str(tree / "repo")


def test_the_home_directory_never_swallows_the_folders_below_it(tree: Path, data_root: Path) -> None:
    remember(data_root, tree)
    (tree / ".git").mkdir()  # a dotfiles repository at ~
    found = locate_project(str(tree / "plain" / "sub"), data_root)
    assert (found.root, found.reason) == (str(tree / "plain" / "sub"), "directory")
    assert locate_project(str(tree), data_root).root == str(tree)  # ~ itself is still its own project
    remember(data_root, tree / "plain")  # control: memory below ~ is found
    assert locate_project(str(tree / "plain" / "sub"), data_root).root == str(tree / "plain")


@pytest.mark.parametrize("raw", ["relative/path", "", "/no/such/dir/anywhere"])
def test_a_directory_that_is_not_one_is_refused(raw: str, data_root: Path) -> None:
    with pytest.raises(InvalidInputError) as caught:
        locate_project(raw, data_root)
    assert caught.value.code == "PROJECT_ROOT_INVALID"
