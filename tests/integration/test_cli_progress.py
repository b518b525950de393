"""The CLI's progress line, through the real ``intentloop`` process with stderr on a pseudo-terminal: a command made
slow for real (``forget`` waiting for the ledger lock another process holds) shows what it is doing and for how long;
piped, the same command prints no progress byte and its JSON stays the same; a fast command on a terminal shows none.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intentloop.model import EventDraft, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root

from _support.linked_task import linked_task_payload
from _support.lock_holder import holding_lock

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
CLAIM = "abcd1111-0000-4000-8000-000000000001"
ERASE = b"\r\x1b[K"
#: The lock wait the slow command makes: long enough for several redraws, short enough for a test.
LOCK_WAIT_S = "2"


class Project:
    def __init__(self, tmp: Path) -> None:
        self.data = tmp / "data"
        self.home = tmp / "home"
        self.home.mkdir()
        root = tmp / "repo"
        root.mkdir()
        self.pid = project_id_for(canonicalize_project_root(str(root)))
        self.store = ProjectStore(self.data, self.pid)
        payload = linked_task_payload("019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b", ["Keep it simple"], [CLAIM])
        draft = EventDraft(
            event_type="task_started",
            task_id="0d3f2f46-8f0c-4f55-9b8e-5d0c9f3b7a11",
            actor="user",
            request_id="start:1",
            payload=payload,
        )
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.append([draft])

    def env(self) -> dict[str, str]:
        return {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "INTENT_LOOP_DATA_DIR": str(self.data),
            "INTENT_LOOP_LOCK_WAIT_S": LOCK_WAIT_S,
        }

    def on_a_terminal(self, *args: str) -> tuple[int, bytes, bytes]:
        """``(exit code, stdout, what was drawn on stderr)`` with stderr on a pseudo-terminal (stdout piped)."""
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [*INTENTLOOP, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=self.env()
        )
        os.close(slave)
        drawn = b""
        while True:  # read while it runs: a pseudo-terminal's buffer is small
            if select.select([master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO once the child has closed its end
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        stdout, _ = proc.communicate(timeout=60)
        os.close(master)
        return proc.returncode, stdout, drawn

    def piped(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*INTENTLOOP, *args], capture_output=True, env=self.env(), timeout=60, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def _forget(project: Project, *extra: str) -> list[str]:
    return ["forget", "claim", CLAIM, "--yes", "--project-id", project.pid, *extra]


def test_a_slow_command_shows_what_it_does_and_for_how_long_on_a_terminal(project: Project) -> None:
    with holding_lock(project.data, project.pid):
        code, _stdout, drawn = project.on_a_terminal(*_forget(project))
    assert code == 4  # busy: it waited for the lock for real, then gave up
    assert drawn.startswith(ERASE + b"intentloop forget claim: Deleting the claim")  # what the command does
    line = b"intentloop forget claim: Deleting the claim under the ledger lock\xe2\x80\xa6 "  # and then its phase
    times = [float(t) for t in re.findall(re.escape(line) + rb"(\d+\.\d) s", drawn)]
    assert len(times) >= 5 and times[0] >= 0.5 and times == sorted(times)  # redrawn in place, the time moving on
    error = drawn.rsplit(ERASE, 1)[1]  # erased before the error is printed
    assert error.startswith(b"error[LOCK_TIMEOUT]") and b"\xe2\x80\xa6" not in error
    # positive control: with the lock free the same command succeeds
    assert project.on_a_terminal(*_forget(project))[0] == 0


def test_piped_or_with_json_the_same_slow_command_prints_no_progress(project: Project) -> None:
    with holding_lock(project.data, project.pid):
        piped = project.piped(*_forget(project))
        piped_json = project.piped(*_forget(project, "--json"))
        json_code, on_terminal_json, json_drawn = project.on_a_terminal(*_forget(project, "--json"))
        code, _stdout, drawn = project.on_a_terminal(*_forget(project))
    assert piped.returncode == 4 and piped.stdout == b""
    assert piped.stderr.startswith(b"error[LOCK_TIMEOUT]")
    assert b"\r" not in piped.stderr and b"\x1b" not in piped.stderr and b"\xe2\x80\xa6" not in piped.stderr
    assert (piped_json.returncode, piped_json.stderr) == (4, b"")
    assert json_code == 4 and json_drawn == b""  # --json prints its one object and nothing else, on a terminal too
    assert on_terminal_json == piped_json.stdout
    assert code == 4 and b"intentloop forget claim" in drawn  # positive control: the same run, shown on a terminal


@pytest.mark.parametrize("args", [["--version"]])
def test_a_fast_command_on_a_terminal_shows_no_progress(project: Project, args: list[str]) -> None:
    """(Fast even on a loaded machine: on the shared 2-core development machine at load 6, a one-project
    ``intentloop projects`` and even ``forget claim --help`` ran over half a second, and rightly showed it.)"""
    code, stdout, drawn = project.on_a_terminal(*args)
    assert code == 0 and stdout and drawn == b""
