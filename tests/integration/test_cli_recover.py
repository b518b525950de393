"""`intentloop recover export` and `recover quarantine` as real subprocesses.

Export: the file holds exactly the verified prefix and verifies on its own; the live ledger is unchanged.
Quarantine: afterwards the ledger is the verified prefix, verifies, and writes work again; raw damaged bytes are kept
by default (0600, inside quarantine/) and not with --summary-only; it counts what it sets aside and asks first,
refuses without a terminal unless --yes, and refuses while a live process holds the lock.
"""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, event_line, new_uuid, project_id_for, seal
from intentloop.store import ProjectStore, verify_ledger_bytes

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
HOLDER = """
import sys
from pathlib import Path
from intentloop.store import ProjectStore
with ProjectStore(Path(sys.argv[1]), sys.argv[2]).locked(verify=False):
    print("held", flush=True)
    sys.stdin.read()
"""


class World:
    """One project folder under a temporary data root, its ledger, and the CLI as a subprocess."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.data_root = tmp_path / "data"
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.pid = project_id_for(os.path.realpath(self.root))
        self.dir = self.data_root / "projects" / self.pid
        self.ledger = self.dir / "ledger.jsonl"
        self.quarantine = self.dir / "quarantine"
        self.env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "INTENT_LOOP_DATA_DIR": str(self.data_root),
        }

    def lines(self, count: int) -> list[bytes]:
        task, prev, out = new_uuid(), None, []
        for index in range(count):
            event_type = "task_started" if index == 0 else "claim_added"
            payload: dict[str, Any] = {"claim": {"statement": f"statement {index}"}}
            draft = EventDraft(
                event_type=event_type, task_id=task, actor="user", request_id=f"r{index}", payload=payload
            )
            event = seal(draft, project_id=self.pid, prev_hash=prev)
            prev = event.event_hash
            out.append(event_line(event))
        return out

    def write(self, data: bytes) -> bytes:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.ledger.write_bytes(data)
        return data

    def intact(self, count: int = 4) -> list[bytes]:
        lines = self.lines(count)
        self.write(b"".join(lines))
        return lines

    def torn(self) -> tuple[list[bytes], bytes]:
        lines = self.lines(3)
        tail = lines[2][:41]
        self.write(b"".join(lines) + tail)
        return lines, tail

    def tampered(self) -> tuple[list[bytes], bytes]:
        lines = self.lines(5)
        lines[3] = lines[3].replace(b"statement 3", b"statement 9")
        self.write(b"".join(lines))
        return lines[:3], b"".join(lines[3:])

    def run(
        self, *args: str, stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*INTENTLOOP, *args], capture_output=True, text=True, env=env or self.env, input=stdin, timeout=60, cwd=cwd
        )

    def json(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        done = self.run(*args, "--json", cwd=cwd, env=env)
        return done.returncode, json.loads(done.stdout)

    def can_write(self) -> bool:
        """A real write through the store's lock (what the MCP server and hooks do)."""
        store = ProjectStore(self.data_root, self.pid)
        with store.locked(time.monotonic() + 10) as ledger:
            task = ledger.view.events[0].task_id
            draft = EventDraft(event_type="mode_set", task_id=task, actor="user", request_id="later", payload={})
            ledger.append([draft])
        return self.run("verify", "--project-id", self.pid).returncode == 0


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture
def holder(world: World) -> Iterator[subprocess.Popen[bytes]]:
    """A live process holding the project's ledger lock for the length of the test."""
    world.dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(world.data_root), world.pid], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)
    proc.stdout.close()


# ------------------------------------------------------------------------------------------------------ export

EXPORT_FIELDS = {
    "ok",
    "command",
    "exit_code",
    "schema_version",
    "data_root",
    "project_id",
    "project_root",
    "out",
    "events",
    "bytes",
    "sha256",
    "head_hash",
    "ledger_intact",
    "omitted_bytes",
    "first_bad_line",
    "reason",
    "code",
}


def test_export_intact_copies_the_ledger(world: World) -> None:
    lines = world.intact()
    out = world.tmp / "export.jsonl"
    code, body = world.json("recover", "export", "--project-root", str(world.root), "--out", str(out))
    assert code == 0 and set(body) == EXPORT_FIELDS
    assert body["ledger_intact"] is True and body["events"] == 4
    assert out.read_bytes() == b"".join(lines)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("damage", ["torn", "tampered"])
def test_export_of_damage_is_exactly_the_verified_prefix(world: World, damage: str) -> None:
    prefix_lines, _suffix = world.torn() if damage == "torn" else world.tampered()
    live = world.ledger.read_bytes()
    out = world.tmp / "export.jsonl"
    code, body = world.json("recover", "export", "--project-id", world.pid, "--out", str(out))
    assert code == 0 and body["ledger_intact"] is False
    exported = out.read_bytes()
    assert exported == b"".join(prefix_lines)
    alone = verify_ledger_bytes(exported, project_id=world.pid)
    assert alone.ok and len(alone.events) == len(prefix_lines) == body["events"]
    assert world.ledger.read_bytes() == live
    assert body["omitted_bytes"] == len(live) - len(exported)


def test_export_refuses_to_overwrite_unless_asked(world: World) -> None:
    lines = world.intact()
    out = world.tmp / "export.jsonl"
    out.write_text("keep me")
    code, body = world.json("recover", "export", "--project-id", world.pid, "--out", str(out))
    assert code == 2 and body["error"]["code"] == "OUTPUT_EXISTS" and out.read_text() == "keep me"
    human = world.run("recover", "export", "--project-id", world.pid, "--out", str(out))
    assert "error[OUTPUT_EXISTS]" in human.stderr and "--overwrite" in human.stderr
    code, _ = world.json("recover", "export", "--project-id", world.pid, "--out", str(out), "--overwrite")
    assert code == 0 and out.read_bytes() == b"".join(lines)


def test_export_refuses_every_destination_inside_the_data_root(world: World) -> None:
    """A backup written under the data root kept a statement that ``forget`` deleted later (deletion reads back the
    project's folder): an export into the data root is refused however its path is spelt — relative, with ``..``,
    through a symlink that looks outside, or with the data root itself named through a symlink."""
    world.intact()
    (world.data_root / "backups").mkdir()
    looks_outside = world.tmp / "looks-outside"
    looks_outside.symlink_to(world.data_root / "backups", target_is_directory=True)
    alias = world.tmp / "alias"
    alias.symlink_to(world.data_root, target_is_directory=True)
    through_alias = {**world.env, "INTENT_LOOP_DATA_DIR": str(alias)}
    before = sorted(p.relative_to(world.data_root) for p in world.data_root.rglob("*"))
    for out, cwd, env in [
        (world.data_root / "backup.jsonl", None, None),
        (world.data_root / "backups" / "b.jsonl", None, None),
        (world.dir / "copy.jsonl", None, None),
        (Path("backup.jsonl"), world.data_root / "backups", None),
        (Path("../data/backup.jsonl"), world.root, None),
        (looks_outside / "b.jsonl", None, None),
        (world.data_root / "backup.jsonl", None, through_alias),
    ]:
        code, body = world.json("recover", "export", "--project-id", world.pid, "--out", str(out), cwd=cwd, env=env)
        assert code == 2 and body["error"]["code"] == "OUTPUT_INSIDE_DATA_ROOT", (out, body)
        assert "inside the data root" in body["error"]["message"]
    assert sorted(p.relative_to(world.data_root) for p in world.data_root.rglob("*")) == before
    human = world.run("recover", "export", "--project-id", world.pid, "--out", str(world.data_root / "b.jsonl"))
    assert "error[OUTPUT_INSIDE_DATA_ROOT]" in human.stderr and human.returncode == 2
    # positive controls: beside the data root (a sibling whose name starts the same) and through the alias, outside
    for out in (world.tmp / "export.jsonl", world.tmp / "data-backup.jsonl"):
        code, body = world.json("recover", "export", "--project-id", world.pid, "--out", str(out), env=through_alias)
        assert code == 0 and out.exists(), body


def test_export_missing_project_unknown_id_and_empty_data_root(world: World) -> None:
    out = world.tmp / "export.jsonl"
    code, body = world.json("recover", "export", "--project-root", str(world.root), "--out", str(out))
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    assert not world.data_root.exists()
    world.data_root.mkdir()
    code, body = world.json("recover", "export", "--project-id", "e" * 64, "--out", str(out))
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    code, body = world.json("recover", "export", "--project-id", "E" * 64, "--out", str(out))  # ids in either case
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    code, body = world.json("recover", "export", "--project-id", "G" * 64, "--out", str(out))
    assert code == 2 and body["error"]["code"] == "INVALID_PROJECT_ID"
    assert not out.exists() and list(world.data_root.iterdir()) == []


def test_export_works_while_a_live_process_holds_the_lock(world: World) -> None:
    lines = world.intact()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(world.data_root), world.pid], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        out = world.tmp / "export.jsonl"
        assert world.json("recover", "export", "--project-id", world.pid, "--out", str(out))[0] == 0
        assert out.read_bytes() == b"".join(lines)
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()


# -------------------------------------------------------------------------------------------------- quarantine

QUARANTINE_FIELDS = {
    "ok",
    "command",
    "exit_code",
    "schema_version",
    "data_root",
    "project_id",
    "project_root",
    "action",
    "events",
    "head_hash",
    "verified_bytes",
    "quarantined_bytes",
    "sha256",
    "first_bad_line",
    "reason",
    "code",
    "record",
    "kept_bytes_file",
    "reused_record",
    "contents",
}


@pytest.mark.parametrize("damage", ["torn", "tampered"])
def test_quarantine_keeps_the_prefix_records_a_summary_and_writes_work_again(world: World, damage: str) -> None:
    prefix_lines, suffix = world.torn() if damage == "torn" else world.tampered()
    code, body = world.json("recover", "quarantine", "--project-root", str(world.root), "--yes", "--summary-only")
    assert code == 0 and set(body) == QUARANTINE_FIELDS and body["action"] == "quarantined"
    assert world.ledger.read_bytes() == b"".join(prefix_lines)
    assert world.run("verify", "--project-id", world.pid).returncode == 0
    [record] = [json.loads(p.read_bytes()) for p in world.quarantine.glob("*.json")]
    assert record["byte_length"] == len(suffix) and record["first_bad_line"] == len(prefix_lines) + 1
    assert {"byte_length", "sha256", "observed_at", "first_bad_line", "reason"} <= set(record)
    assert not [p for p in world.quarantine.iterdir() if p.suffix != ".json"]  # --summary-only: no raw bytes kept
    assert all(suffix not in p.read_bytes() for p in world.quarantine.iterdir())
    assert world.can_write()
    again = world.json("recover", "quarantine", "--project-id", world.pid, "--yes")
    assert again[0] == 0 and again[1]["action"] == "none"  # idempotent


@pytest.mark.parametrize("flag", [[], ["--keep-bytes"]])
def test_quarantine_keeps_raw_bytes_0600_inside_quarantine_by_default(world: World, flag: list[str]) -> None:
    _prefix, suffix = world.tampered()
    code, body = world.json("recover", "quarantine", "--project-id", world.pid, "--yes", *flag)
    assert code == 0
    kept = Path(body["kept_bytes_file"])
    assert kept.parent == world.quarantine and kept.read_bytes() == suffix
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    # lines 4-5 of 5 are set aside: 2 events (line 4 tampered, line 5 intact), 2 claims, 1 task
    assert body["contents"] == {
        "bytes": len(suffix),
        "lines": 2,
        "events": 2,
        "intact_events": 1,
        "claims": 2,
        "tasks": 1,
    }
    [record] = [json.loads(p.read_bytes()) for p in world.quarantine.glob("*.json")]
    assert record["contents"] == body["contents"] and record["raw_bytes_file"] == kept.name


def test_quarantine_prints_the_counts_before_acting_and_summary_only_conflicts_with_keep_bytes(world: World) -> None:
    world.tampered()
    live = world.ledger.read_bytes()
    both = world.run("recover", "quarantine", "--project-id", world.pid, "--yes", "--summary-only", "--keep-bytes")
    assert both.returncode == 2 and "error[INVALID_ARGUMENTS]" in both.stderr
    assert world.ledger.read_bytes() == live  # positive control below: the same command without the conflict acts
    done = world.run("recover", "quarantine", "--project-id", world.pid, "--yes")
    assert done.returncode == 0, done.stderr
    assert "2 events, 2 claims, 1 task (" in done.stdout and "1 event whose own hash verifies" in done.stdout
    assert done.stdout.index("Damage found") < done.stdout.index("Quarantined")
    assert "recover salvage" in done.stdout


def test_quarantine_without_a_terminal_needs_yes(world: World) -> None:
    world.tampered()
    live = world.ledger.read_bytes()
    code, body = world.json("recover", "quarantine", "--project-id", world.pid)
    assert code == 2 and body["error"]["code"] == "CONFIRMATION_REQUIRED"
    human = world.run("recover", "quarantine", "--project-id", world.pid, stdin="y\n")  # piped "y" is not a terminal
    assert human.returncode == 2 and "error[CONFIRMATION_REQUIRED]" in human.stderr and "--yes" in human.stderr
    assert "Damage found" in human.stdout
    assert world.ledger.read_bytes() == live and not world.quarantine.exists()


def _on_terminal(world: World, answer: bytes) -> tuple[int, str, bytes]:
    """Run quarantine with stdin and stderr on a pseudo-terminal and answer its question."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*INTENTLOOP, "recover", "quarantine", "--project-id", world.pid],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=world.env,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            seen += os.read(master, 4096)
    os.write(master, answer)
    out, _ = proc.communicate(timeout=30)
    os.close(master)
    assert proc.stdout is None or proc.stdout.closed
    return proc.returncode, out.decode(), seen


def test_quarantine_asks_on_a_terminal_and_a_no_changes_nothing(world: World) -> None:
    world.tampered()
    live = world.ledger.read_bytes()
    code, _out, prompt = _on_terminal(world, b"n\n")
    assert b"[y/N]" in prompt
    assert b"Set aside 2 events, 2 claims, 1 task (" in prompt  # the counts come before the question
    assert code == 1 and world.ledger.read_bytes() == live


def test_quarantine_asks_on_a_terminal_and_a_yes_quarantines(world: World) -> None:
    prefix, _suffix = world.tampered()
    code, out, prompt = _on_terminal(world, b"y\n")
    assert b"[y/N]" in prompt
    assert code == 0 and "Quarantined" in out
    assert world.ledger.read_bytes() == b"".join(prefix)


def test_quarantine_refuses_while_a_live_process_holds_the_lock(world: World, holder: subprocess.Popen[bytes]) -> None:
    world.tampered()
    live = world.ledger.read_bytes()
    started = time.monotonic()
    code, body = world.json("recover", "quarantine", "--project-id", world.pid, "--yes", "--wait", "0.5")
    assert code == 4 and body["error"]["code"] == "LOCK_TIMEOUT" and body["error"]["retryable"] is True
    assert time.monotonic() - started < 10
    assert world.ledger.read_bytes() == live and holder.poll() is None


def test_quarantine_intact_missing_unknown_and_empty_data_root(world: World) -> None:
    code, body = world.json("recover", "quarantine", "--project-id", world.pid, "--yes")
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND" and not world.data_root.exists()
    world.data_root.mkdir()
    assert world.json("recover", "quarantine", "--project-id", "not-an-id", "--yes")[1]["error"]["code"] == (
        "INVALID_PROJECT_ID"
    )
    assert list(world.data_root.iterdir()) == []
    lines = world.intact()
    code, body = world.json("recover", "quarantine", "--project-root", str(world.root))  # no --yes needed
    assert code == 0 and body["action"] == "none"
    assert world.ledger.read_bytes() == b"".join(lines) and not world.quarantine.exists()


def test_quarantine_refuses_records_of_a_newer_version(world: World) -> None:
    lines = world.lines(2)
    future = json.dumps({"schema_version": 2, "event_type": "from_the_future"}).encode() + b"\n"
    live = world.write(b"".join(lines) + future)
    code, body = world.json("recover", "quarantine", "--project-id", world.pid, "--yes")
    assert code == 1 and body["error"]["code"] == "FUTURE_SCHEMA"
    assert world.ledger.read_bytes() == live
