"""Evidence bound to project files: `evidence_path`, the stored `evidence_file`, `evidence_stale` at read time."""

from __future__ import annotations

import hashlib
import os
import threading
import time
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


GITHUB_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"


async def test_a_path_holding_a_credential_is_refused_and_never_stored(h: Any) -> None:
    root = Path(h.project_root)
    (root / f"{GITHUB_TOKEN}.log").write_text("one", encoding="utf-8")
    (root / AWS_KEY_ID).mkdir()
    (root / AWS_KEY_ID / "out.log").write_text("two", encoding="utf-8")
    (root / "clean.log").write_text("three", encoding="utf-8")
    (root / "innocent.log").symlink_to(root / f"{GITHUB_TOKEN}.log")  # the stored path is the target's
    (root / f"{AWS_KEY_ID}.link").symlink_to(root / "clean.log")  # only the resolved path is stored
    task = await h.start()
    for path in (f"{GITHUB_TOKEN}.log", f"{AWS_KEY_ID}/out.log", str(root / AWS_KEY_ID / "out.log"), "innocent.log"):
        error = await h.fails("SENSITIVE_ID_REJECTED", "intent_add_evidence", **_args(h, task, path))
        assert GITHUB_TOKEN not in error.message and AWS_KEY_ID not in error.message
    # positive controls: an ordinary name, a UUID and a hex digest in a name, and a token-named link to a clean file
    (root / "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a.json").write_text("{}", encoding="utf-8")
    (root / f"{'ab' * 32}.tar").write_bytes(b"x")
    assert (await _evidence_claim(h, task, "clean.log"))["evidence_file"]["path"] == "clean.log"
    assert (await _evidence_claim(h, task, "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a.json"))["evidence_file"]
    assert (await _evidence_claim(h, task, f"{'ab' * 32}.tar"))["evidence_file"]["path"] == f"{'ab' * 32}.tar"
    assert (await _evidence_claim(h, task, f"{AWS_KEY_ID}.link"))["evidence_file"]["path"] == "clean.log"
    disk = h.disk_bytes()
    assert GITHUB_TOKEN.encode() not in disk and AWS_KEY_ID.encode() not in disk


async def test_a_path_with_terminal_controls_is_refused(h: Any) -> None:
    root = Path(h.project_root)
    names = ("clip\x1b]52;c;aGk=\x07.log", "title\x1b]0;pwned\x07.log", "rtl\u202egol.txt", "del\x7f.log")
    for name in names:
        (root / name).write_text("x", encoding="utf-8")
    task = await h.start()
    for name in names:
        await h.fails("INVALID_EVIDENCE_PATH", "intent_add_evidence", **_args(h, task, name))
    (root / "plain name.log").write_text("x", encoding="utf-8")  # control: spaces are ordinary
    assert (await _evidence_claim(h, task, "plain name.log"))["evidence_file"]["path"] == "plain name.log"
    ledger = h.ledger.read_bytes()  # JSON writes an ESC as \u001b; a stored name would show up as that
    assert b"\\u001b" not in ledger and "\u202e".encode() not in ledger and b"plain name.log" in ledger


# ------------------------------------------------------------------------------------ the digest cache (racy-git)
SIZE = 64 << 20


def _bytes_read() -> int:
    """This process's ``rchar``: every byte its read() calls returned, page cache included (Linux)."""
    for line in Path("/proc/self/io").read_text(encoding="ascii").splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _reads(path: Path) -> tuple[str | None, int]:
    before = _bytes_read()
    digest = _evidence.file_sha256(str(path))
    return digest, _bytes_read() - before


def _settled(path: Path) -> None:
    """Wait until the file's last change is older than the window in which a timestamp may not have ticked yet."""
    st = path.stat()
    changed = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    while time.time() <= changed + _evidence.RACY_WINDOW_NS / 1e9:
        time.sleep(0.1)


def _sparse(path: Path, size: int = SIZE) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_an_unchanged_file_is_hashed_once(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big.bin")
    _settled(big)
    digest, read = _reads(big)
    assert read >= SIZE  # control: the first digest reads the file
    assert digest == hashlib.sha256(bytes(SIZE)).hexdigest()
    for _ in range(3):
        again, read = _reads(big)
        assert again == digest and read < SIZE // 8, read  # remembered by its stat: not read again


def test_a_change_is_seen_whatever_the_mtime_says(tmp_path: Path) -> None:
    big = _sparse(tmp_path / "big.bin")
    _settled(big)
    zeros, _ = _reads(big)
    before = big.stat()
    with big.open("r+b") as handle:  # same size, and the mtime put back as it was: only the ctime tells
        handle.write(b"changed")
    os.utime(big, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert big.stat().st_size == before.st_size and big.stat().st_mtime_ns == before.st_mtime_ns
    changed, read = _reads(big)
    assert read >= SIZE and changed != zeros
    assert changed == hashlib.sha256(b"changed" + bytes(SIZE - 7)).hexdigest()
    big.unlink()
    _sparse(tmp_path / "big.bin")  # replaced by another file (another inode) with the first one's bytes
    assert _reads(big)[0] == zeros


def test_a_file_changed_just_now_is_not_trusted_to_stay_unchanged(tmp_path: Path) -> None:
    # A change within the filesystem's timestamp granularity of the hash may leave the stat as it was (git's "racily
    # clean" entries): such a file is hashed again at every read until its last change is old enough.
    fresh = _sparse(tmp_path / "fresh.bin")
    for _ in range(2):
        _digest, read = _reads(fresh)
        assert read >= SIZE
    _settled(fresh)
    _reads(fresh)
    assert _reads(fresh)[1] < SIZE // 8  # control: once settled, it is remembered


@pytest.mark.parametrize(
    ("path", "code"),
    [(f"logs/{GITHUB_TOKEN}.log", "SENSITIVE_ID_REJECTED"), ("logs/a\x1b]0;x\x07.log", "INVALID_EVIDENCE_PATH")],
)
async def test_an_imported_binding_is_held_to_the_same_rule(h: Any, path: str, code: str) -> None:
    (Path(h.project_root) / "out.log").write_text("one", encoding="utf-8")
    task = await h.start()
    await _evidence_claim(h, task, "out.log")
    graph = await h.call("intent_export", task_id=task)
    [claim] = graph["claims"]
    target = await h.start()
    bad = {**graph, "claims": [{**claim, "evidence_file": {**claim["evidence_file"], "path": path}}]}
    await h.fails(code, "intent_import", task_id=target, request_id="imp-bad", graph=bad)
    assert GITHUB_TOKEN.encode() not in h.disk_bytes() and b"\\u001b" not in h.ledger.read_bytes()
    snap = await h.call("intent_import", task_id=target, request_id="imp-good", graph=graph)  # control
    assert [c["evidence_file"]["path"] for c in snap["active_claims"] if "evidence_file" in c] == ["out.log"]
