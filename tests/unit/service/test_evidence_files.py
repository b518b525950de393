"""Evidence bound to project files: `evidence_path`, the stored `evidence_file`, `evidence_stale` at read time."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.service import _evidence

# The claim keys the original implementation's strict import accepts.
ORIGINAL_CLAIM_KEYS = {
    "claim_id",
    "statement",
    "role",
    "epistemic_status",
    "source_ref",
    "scope",
    "confidence",
    "valid_from",
    "last_confirmed",
    "supersedes",
    "facets",
    "related_claim_ids",
    "review_after",
    "result_feedback_class",
}
ORIGINAL_GRAPH_KEYS = {
    "format",
    "schema_version",
    "exported_at",
    "source_project_id",
    "source_task_id",
    "history_complete",
    "claims",
    "invalidated_claim_ids",
    "candidates",
}


async def _evidence_claim(h: Any, task: str, path: str | None, **extra: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "task_id": task,
        "request_id": extra.pop("request_id", h.rid()),
        "statement": extra.pop("statement", "the build log shows the failure"),
        "source_ref": {"kind": "tool_result", "event_id": "ci-1"},
        "facets": ["result_feedback"],
        **extra,
    }
    if path is not None:
        arguments["evidence_path"] = path
    result: dict[str, Any] = await h.call("intent_add_evidence", **arguments)
    return result


def _by_statement(claims: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["statement"]: c for c in claims}


async def test_evidence_goes_stale_when_the_file_changes_or_disappears(h: Any) -> None:
    log = Path(h.project_root) / "logs" / "build.log"
    log.parent.mkdir()
    log.write_bytes(b"FAILED test_login\n")
    task = await h.start("keep the API")
    claim = await _evidence_claim(h, task, "logs/build.log")
    assert claim["evidence_file"] == {
        "path": "logs/build.log",
        "sha256": hashlib.sha256(b"FAILED test_login\n").hexdigest(),
    }
    plain = await _evidence_claim(h, task, None, statement="a claim without a file")
    assert "evidence_file" not in plain

    async def stale() -> bool:
        snap = await h.snapshot(task)
        claims = _by_statement(snap["active_claims"])
        assert "evidence_stale" not in claims["a claim without a file"]  # only bound claims are marked
        assert "evidence_stale" not in claims["keep the API"]
        return bool(claims["the build log shows the failure"]["evidence_stale"])

    assert await stale() is False  # positive control: the file is as recorded
    log.write_bytes(b"passed\n")
    assert await stale() is True
    log.write_bytes(b"FAILED test_login\n")
    assert await stale() is False  # the same bytes again: fresh again
    log.unlink()
    assert await stale() is True
    graph = await h.call("intent_export", task_id=task)
    assert _by_statement(graph["claims"])["the build log shows the failure"]["evidence_stale"] is True


async def test_absolute_paths_inside_the_root_are_stored_relative(h: Any) -> None:
    (Path(h.project_root) / "report.txt").write_text("ok", encoding="utf-8")
    task = await h.start()
    claim = await _evidence_claim(h, task, str(Path(h.project_root) / "sub" / ".." / "report.txt"))
    assert claim["evidence_file"]["path"] == "report.txt"


async def test_paths_outside_the_project_are_refused(h: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    root = Path(h.project_root)
    (root / "inside.txt").write_text("fine", encoding="utf-8")
    (root / "link-out").symlink_to(outside)
    (root / "link-in").symlink_to(root / "inside.txt")
    task = await h.start()
    for path in (str(outside), "../outside.txt", "link-out", f"{root}/../{root.name}-other/x"):
        await h.fails("PATH_ESCAPE", "intent_add_evidence", **_args(h, task, path))
    # positive controls: the same file through a link that stays inside, and the file itself
    assert (await _evidence_claim(h, task, "link-in"))["evidence_file"]["path"] == "inside.txt"
    assert (await _evidence_claim(h, task, "inside.txt"))["evidence_file"]["path"] == "inside.txt"
    assert b"secret" not in h.disk_bytes()


async def test_only_regular_files_can_be_bound(h: Any) -> None:
    root = Path(h.project_root)
    (root / "a-dir").mkdir()
    os.mkfifo(root / "a-fifo")
    task = await h.start()
    for path in ("a-dir", "missing.txt", "a-fifo", ".", "bad\0name"):
        await h.fails("INVALID_EVIDENCE_PATH", "intent_add_evidence", **_args(h, task, path))
    (root / "a-dir" / "file.txt").write_text("x", encoding="utf-8")
    assert (await _evidence_claim(h, task, "a-dir/file.txt"))["evidence_file"]["path"] == "a-dir/file.txt"
    await h.fails("INVALID_ARGUMENTS", "intent_add_evidence", **_args(h, task, ""))


def _args(h: Any, task: str, path: str) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": h.rid(),
        "statement": "bound evidence",
        "source_ref": {"kind": "tool_result", "event_id": "ci-2"},
        "facets": ["result_feedback"],
        "evidence_path": path,
    }


async def test_a_retry_after_the_file_changed_returns_the_original_claim(h: Any) -> None:
    log = Path(h.project_root) / "out.log"
    log.write_text("one", encoding="utf-8")
    task = await h.start()
    first = await _evidence_claim(h, task, "out.log", request_id="ev-1")
    log.write_text("two", encoding="utf-8")
    assert await _evidence_claim(h, task, "out.log", request_id="ev-1") == first
    (Path(h.project_root) / "other.log").write_text("one", encoding="utf-8")
    with pytest.raises(Exception) as info:  # the same call bound to another file is another request
        await _evidence_claim(h, task, "other.log", request_id="ev-1")
    assert getattr(info.value, "code", None) == "REQUEST_ID_REUSED"


async def test_export_for_the_original_leaves_intentloops_fields_out(h: Any, make_harness: Any) -> None:
    (Path(h.project_root) / "out.log").write_text("one", encoding="utf-8")
    task = await h.start()
    await _evidence_claim(h, task, "out.log")
    full = await h.call("intent_export", task_id=task)
    [claim] = full["claims"]
    assert set(claim) - ORIGINAL_CLAIM_KEYS == {"evidence_file", "evidence_stale"}
    original = await h.call("intent_export", task_id=task, original_format=True)
    assert set(original) <= ORIGINAL_GRAPH_KEYS
    assert all(set(c) <= ORIGINAL_CLAIM_KEYS for c in original["claims"])
    # an export carrying the evidence fields imports; the binding survives and staleness is judged here
    other = make_harness()
    other.data_root, other.service = h.data_root, h.service
    target = await other.start()
    snap = await other.call("intent_import", task_id=target, request_id="imp-1", graph=full)
    [imported] = [c for c in snap["active_claims"] if c["statement"] == claim["statement"]]
    assert imported["evidence_file"] == claim["evidence_file"]
    assert imported["evidence_stale"] is True  # no out.log in the other project
    (Path(other.project_root) / "out.log").write_text("one", encoding="utf-8")
    assert _by_statement((await other.snapshot(target))["active_claims"])[claim["statement"]]["evidence_stale"] is False


async def test_hashing_does_not_block_the_servers_other_calls(h: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (Path(h.project_root) / "huge.bin").write_bytes(b"x")
    task = await h.start("alpha")
    release = threading.Event()
    real = _evidence.file_sha256

    def slow_hash(path: str) -> str | None:
        # Stands for hashing a very large file: it returns only after another call completed meanwhile (or after
        # 30 s, when hashing held the event loop and nothing else could run — then the test fails below).
        release.wait(30)
        return real(path)

    monkeypatch.setattr(_evidence, "file_sha256", slow_hash)
    order: list[str] = []

    async def add() -> None:
        await _evidence_claim(h, task, "huge.bin")
        order.append("evidence")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(add)
        await trio.sleep(0.05)
        await h.snapshot(task)
        order.append("snapshot")
        release.set()
    assert order == ["snapshot", "evidence"]
