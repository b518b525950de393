"""`intentloop demo` runs its whole tour (real server, real hook, real verify) to exit 0 in a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]


@pytest.mark.slow
def test_demo_runs_to_exit_0_and_tells_the_whole_story(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    real = tmp_path / "real-data"  # a data root in the environment must stay untouched by the demo
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "INTENT_LOOP_DATA_DIR": str(real),
    }
    done = subprocess.run([*INTENTLOOP, "demo"], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for step in range(1, 8):
        assert f"\n{step}. " in out
    assert "Add a CSV export of invoices" in out  # the user's words, in the snapshot and the hook context
    assert "✗" not in out and out.count("✓") >= 7
    assert "exit 1" in out and "exit 0" in out  # verify found the torn line, then the repaired ledger
    assert "All steps held" in out
    assert list(home.iterdir()) == []  # nothing written to the user's home
    assert not real.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("intentloop-demo-")]  # cleaned up
