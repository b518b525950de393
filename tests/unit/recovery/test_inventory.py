"""The data-root inventory behind ``intentloop status``: read-only, and honest about damaged projects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.recovery import list_project_ids, summarize_all, summarize_project


def test_a_missing_data_root_lists_nothing_and_creates_nothing(data_root: Path) -> None:
    assert list_project_ids(data_root) == []
    assert not data_root.exists()


def test_projects_are_listed_by_id_ignoring_strays_and_symlinks(new_project, data_root: Path, tmp_path: Path) -> None:
    a, b = new_project("a"), new_project("b")
    a.write_lines(1)
    b.write_lines(1)
    projects = data_root / "projects"
    (projects / "not-a-project").mkdir()
    (projects / ("f" * 64)).symlink_to(tmp_path)
    assert list_project_ids(data_root) == sorted([a.project_id, b.project_id])


def test_a_symlinked_projects_folder_is_refused(data_root: Path, tmp_path: Path) -> None:
    data_root.mkdir()
    (tmp_path / "real").mkdir()
    (data_root / "projects").symlink_to(tmp_path / "real")
    with pytest.raises(StorageError) as caught:
        list_project_ids(data_root)
    assert caught.value.code == "PATH_ESCAPE"


def test_summary_counts_tasks_candidates_and_private_controls(project) -> None:
    project.write_lines(8, tasks=2, candidates=3)
    private = project.dir / "private-sessions"
    private.mkdir(mode=0o700)
    (private / f"{'a' * 64}.json").write_text("{}")
    summary = summarize_project(project.store)
    assert summary.intact and summary.status == "intact"
    assert (summary.events, summary.tasks, summary.candidates, summary.private_controls) == (8, 2, 3, 1)
    assert not summary.lock_held


def test_a_damaged_project_counts_only_its_verified_prefix(project) -> None:
    lines = project.write_lines(6, tasks=1, candidates=4)
    lines[3] = project.tamper(lines[3]) if b"number" in lines[3] else b"broken\n"
    project.write(b"".join(lines))
    summary = summarize_project(project.store)
    assert not summary.intact and summary.first_bad_line == 4 and summary.code == "CORRUPT_LEDGER"
    assert summary.events == 3 and summary.candidates == 2


def test_an_unsafe_project_is_reported_not_raised(project, tmp_path: Path) -> None:
    lines = project.write_lines(2)
    (tmp_path / "elsewhere").write_bytes(b"".join(lines))
    project.ledger.unlink()
    project.ledger.symlink_to(tmp_path / "elsewhere")
    summary = summarize_project(project.store)
    assert summary.status == "unreadable" and summary.code == "PATH_ESCAPE"


def test_a_held_lock_is_shown(project, hold_lock) -> None:
    project.write_lines(1)
    hold_lock(project)
    [summary] = summarize_all(project.data_root, [project.project_id])
    assert summary.lock_held and summary.intact
    assert os.path.isdir(project.dir / "ledger.lock")
