"""hooks/_guard.py: a child that answers early (``detach``) leaves the host's pipes and goes on, for a bounded time.

Each case runs ``answer_in_child`` in a fresh interpreter (it forks), its pipes captured as a host captures them: the
process has answered only once its stdout and stderr are closed and it has exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

_SCRIPT = """
import os, sys, time
from pathlib import Path
import intentloop.hooks._guard as guard

mode, where = sys.argv[1], Path(sys.argv[2])
guard.BACKGROUND_LIMIT_S = 2 if mode == "stuck" else 60

def work(detach):
    if mode != "inline":
        detach(b'{"early":true}\\n')
    (where / "pid").write_text(f"{os.getpid()} {os.getpgrp()} {os.getsid(0)}")
    started = time.monotonic()
    while not (where / "go").exists() and time.monotonic() - started < 30:
        time.sleep(0.02)
    if mode == "stuck":
        time.sleep(60)  # past BACKGROUND_LIMIT_S: the kernel ends the child
    (where / "done").write_text("done")
    return b'{"late":true}\\n'

fire_in = 1.0 if mode == "inline" else 30.0
guard.answer_in_child(work, time.monotonic() + fire_in, send=lambda line: sys.stdout.buffer.write(line))
sys.stdout.flush()
"""


def _run(mode: str, where: Path) -> subprocess.CompletedProcess[bytes]:
    # A timeout far below the 30 s the parent would wait for a child that does not answer early
    return subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(where)], capture_output=True, timeout=20)


def _wait_for(path: Path, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.02)
    return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def test_an_early_answer_returns_at_once_and_the_work_goes_on(tmp_path: Path) -> None:
    done = _run("early", tmp_path)  # returns although the child waits for "go": it holds none of our pipes
    assert (done.returncode, done.stdout, done.stderr) == (0, b'{"early":true}\n', b"")
    assert _wait_for(tmp_path / "pid")
    pid, group, session = map(int, (tmp_path / "pid").read_text().split())
    assert group == session == pid != os.getsid(0)  # its own session: ending the host's group leaves it be
    assert not (tmp_path / "done").exists()  # the work is still going on
    (tmp_path / "go").write_text("")
    assert _wait_for(tmp_path / "done")  # and finishes after the host had its answer


def test_without_an_early_answer_the_parent_answers_at_its_deadline_and_ends_the_child(tmp_path: Path) -> None:
    done = _run("inline", tmp_path)  # control: the child never answers, so the parent waits for its deadline (1 s)
    assert (done.returncode, done.stdout) == (0, b'{"continue":true,"suppressOutput":true}\n')
    (tmp_path / "go").write_text("")
    pid, group, _session = map(int, (tmp_path / "pid").read_text().split())
    assert group != pid  # control: a child that did not answer early stays in the process group
    assert _wait_for_gone(pid)
    assert not (tmp_path / "done").exists()  # killed at the deadline: it never finished


def test_a_child_that_goes_on_is_ended_after_the_background_limit(tmp_path: Path) -> None:
    done = _run("stuck", tmp_path)
    assert done.stdout == b'{"early":true}\n'
    (tmp_path / "go").write_text("")
    pid = int((tmp_path / "pid").read_text().split()[0]) if _wait_for(tmp_path / "pid") else -1
    assert _wait_for_gone(pid, 30.0)  # SIGALRM after 2 s, although it sleeps for 60
    assert not (tmp_path / "done").exists()


def _wait_for_gone(pid: int, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    os.kill(pid, 9)
    return False
