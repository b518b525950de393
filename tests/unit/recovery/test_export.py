"""Export writes exactly the verified prefix, verifies on its own, and never touches the live ledger."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from intentloop.errors import InvalidInputError, StorageError
from intentloop.recovery import export_verified_prefix
from intentloop.store import verify_ledger_bytes


def test_export_of_an_intact_ledger_is_a_byte_identical_copy(project, tmp_path: Path) -> None:
    lines = project.write_lines(4)
    out = tmp_path / "export.jsonl"
    result = export_verified_prefix(project.store, out)
    assert out.read_bytes() == b"".join(lines)
    assert result.ledger_intact and result.events == 4 and result.omitted_bytes == 0
    assert result.sha256 == hashlib.sha256(b"".join(lines)).hexdigest()


def test_export_of_a_tampered_ledger_holds_exactly_the_verified_prefix(project, tmp_path: Path) -> None:
    lines = project.write_lines(5)
    lines[3] = project.tamper(lines[3])
    live = project.write(b"".join(lines))
    out = tmp_path / "export.jsonl"
    result = export_verified_prefix(project.store, out)
    exported = out.read_bytes()
    assert exported == b"".join(lines[:3])
    independent = verify_ledger_bytes(exported, project_id=project.project_id)
    assert independent.ok and len(independent.events) == 3
    assert independent.head_hash == result.head_hash
    assert not result.ledger_intact and result.first_bad_line == 4 and result.code == "CORRUPT_LEDGER"
    assert result.omitted_bytes == len(b"".join(lines[3:]))
    assert project.ledger.read_bytes() == live  # the live ledger is unchanged


def test_export_of_a_torn_tail_leaves_the_partial_line_out(project, tmp_path: Path) -> None:
    lines = project.write_lines(2)
    live = project.write(b"".join(lines) + lines[1][:25])
    out = tmp_path / "export.jsonl"
    export_verified_prefix(project.store, out)
    assert out.read_bytes() == b"".join(lines)
    assert project.ledger.read_bytes() == live


def test_export_file_is_private(project, tmp_path: Path) -> None:
    project.write_lines(1)
    out = tmp_path / "export.jsonl"
    export_verified_prefix(project.store, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_export_refuses_to_overwrite_unless_asked(project, tmp_path: Path) -> None:
    lines = project.write_lines(2)
    out = tmp_path / "export.jsonl"
    out.write_bytes(b"precious")
    with pytest.raises(StorageError) as caught:
        export_verified_prefix(project.store, out)
    assert caught.value.code == "OUTPUT_EXISTS"
    assert out.read_bytes() == b"precious"
    export_verified_prefix(project.store, out, overwrite=True)  # positive control
    assert out.read_bytes() == b"".join(lines)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_export_never_writes_through_a_symlink(project, tmp_path: Path) -> None:
    project.write_lines(1)
    target = tmp_path / "target"
    target.write_bytes(b"keep me")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(StorageError):
        export_verified_prefix(project.store, link)
    assert target.read_bytes() == b"keep me"


def test_export_refuses_a_destination_inside_the_live_storage(project, tmp_path: Path) -> None:
    project.write_lines(1)
    for inside in (project.dir / "copy.jsonl", project.store.data_root / "copy.jsonl"):
        with pytest.raises(InvalidInputError) as info:
            export_verified_prefix(project.store, inside)
        assert info.value.code == "OUTPUT_INSIDE_DATA_ROOT" and not inside.exists()
    export_verified_prefix(project.store, tmp_path / "copy.jsonl")  # positive control: outside is fine


def test_export_needs_an_existing_folder(project, tmp_path: Path) -> None:
    project.write_lines(1)
    with pytest.raises(InvalidInputError):
        export_verified_prefix(project.store, tmp_path / "missing" / "export.jsonl")
