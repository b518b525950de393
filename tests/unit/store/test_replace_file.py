"""``replace_file``: the one way a small file is replaced whole (head.sig, the keys' directory, host configs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from intentloop.store import replace_file


def test_replaces_the_file_whole_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(b"old")
    replace_file(target, "config.tmp", b"new", durable=True, mode=0o640)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]  # no temp file left


def test_a_failing_check_before_the_rename_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "head.sig"
    target.write_bytes(b"old")

    def refuse() -> None:
        raise RuntimeError("the lock is no longer ours")

    with pytest.raises(RuntimeError):
        replace_file(target, "head.tmp", b"new", durable=False, before_replace=refuse)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["head.sig"]
    replace_file(target, "head.tmp", b"new", durable=False, before_replace=lambda: None)  # control: it passes
    assert target.read_bytes() == b"new"


def test_a_temp_name_that_exists_or_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "file"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep")
    os.symlink(elsewhere, tmp_path / "file.tmp")
    with pytest.raises(FileExistsError):
        replace_file(target, "file.tmp", b"new", durable=True)
    assert elsewhere.read_bytes() == b"keep" and not target.exists()
    assert os.path.islink(tmp_path / "file.tmp")  # someone else's file is not removed either
