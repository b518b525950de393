"""The read-back after a deletion in one read of each file (``scan_after_deletion``): it still fails on a deleted id
in any file or file name, and answers what the separate searches answered (the files holding the statement, the
ledger's tasks whose lines hold it)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from intentloop.errors import StorageError
from intentloop.service import _delete
from intentloop.service._delete import content_needles, scan_after_deletion, scan_project_files, statement_needles
from intentloop.store import ProjectStore, tasks_holding

STATEMENT = "deploy only on Fridays ZK-7781"


async def _project(h: Any) -> tuple[ProjectStore, str, str]:
    """Three tasks, two of which hold the statement (one as a quote); a stray file holds it too."""
    holder = await h.start("first task")
    quoter = await h.start("second task")
    await h.start("third task, without it")
    await h.inferred(holder, STATEMENT)
    await h.inferred(quoter, f"as said before: {STATEMENT}, really")
    (h.project_dir / "notes").mkdir()
    (h.project_dir / "notes" / "copied.txt").write_text(f"a note: {STATEMENT}\n")
    return ProjectStore(h.data_root, h.project_id), holder, quoter


def _files_holding(store: ProjectStore, needles: list[bytes]) -> list[str]:
    """What ``files_holding`` answered: each persistent file read whole and searched."""
    return [
        e.name for e in store.persistent_entries() if not e.directory and any(n in e.path.read_bytes() for n in needles)
    ]


@pytest.mark.parametrize("chunk", [_delete._SCAN_BYTES, 7, 64])
async def test_one_read_answers_what_the_separate_searches_answered(
    h: Any, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    store, holder, quoter = await _project(h)
    monkeypatch.setattr(_delete, "_SCAN_BYTES", chunk)  # small chunks: needles and lines cut across reads
    content, statements = content_needles([STATEMENT]), statement_needles([STATEMENT])
    after = scan_after_deletion(store, ["00000000-0000-4000-8000-000000000000"], content, statements)
    assert after.scanned == scan_project_files(store, ["00000000-0000-4000-8000-000000000000"])
    assert after.files_with_content == _files_holding(store, content) == ["ledger.jsonl", "notes/copied.txt"]
    assert after.statement_tasks == tasks_holding(store.paths, statements) == {holder, quoter}


async def test_no_content_and_no_statements(h: Any) -> None:
    store, _holder, _quoter = await _project(h)
    after = scan_after_deletion(store, ["00000000-0000-4000-8000-000000000000"], [], [])
    assert after.files_with_content == [] and after.statement_tasks == set()


@pytest.mark.parametrize("chunk", [_delete._SCAN_BYTES, 5])
async def test_a_deleted_id_left_in_any_file_fails_it(h: Any, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    store, _holder, _quoter = await _project(h)
    monkeypatch.setattr(_delete, "_SCAN_BYTES", chunk)
    content, statements = content_needles([STATEMENT]), statement_needles([STATEMENT])
    marker = str(uuid.uuid4())
    files = [e for e in store.persistent_entries() if not e.directory]
    assert {"ledger.jsonl", "notes/copied.txt", "ledger.checkpoint.json"} <= {e.name for e in files}
    assert any(e.derived for e in files)  # the task index too
    for entry in files:
        kept = entry.path.read_bytes()
        middle = len(kept) // 2
        entry.path.write_bytes(kept[:middle] + marker.encode() + kept[middle:])
        with pytest.raises(StorageError) as caught:
            scan_after_deletion(store, [marker], content, statements)
        assert caught.value.code == "DELETE_VERIFICATION_FAILED", entry.name
        entry.path.write_bytes(kept)
    scan_after_deletion(store, [marker], content, statements)  # control: with the marker gone, it passes
    (h.project_dir / "notes" / f"about-{marker}").write_text("nothing inside")
    with pytest.raises(StorageError) as caught:
        scan_after_deletion(store, [marker], [], [])
    assert caught.value.code == "DELETE_VERIFICATION_FAILED" and "file name" in caught.value.message
