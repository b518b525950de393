"""cli/entry.py: the console script refuses loudly when another distribution shadows one of our import names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ENTRY = "import sys; from cli.entry import main; sys.argv[0] = 'intentloop'; main()"
# In a regular install sys.path order decides which ``hooks`` wins; this checkout's editable install resolves our
# names through a meta-path finder first, so the shadowing test puts the plain path search in front of it.
SHADOWED = (
    "import sys, importlib.machinery; sys.path.insert(0, sys.argv.pop(1)); "
    "sys.meta_path.insert(0, importlib.machinery.PathFinder); " + ENTRY
)


def _run(tmp_path: Path, *args: str, shadow: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-c", ENTRY, *args]
    if shadow:  # another distribution's top-level ``hooks`` package, found first on sys.path
        (tmp_path / "other" / "hooks").mkdir(parents=True)
        (tmp_path / "other" / "hooks" / "__init__.py").write_text("raise RuntimeError('not intentloop')\n")
        command = [sys.executable, "-c", SHADOWED, str(tmp_path / "other"), *args]
    return subprocess.run(command, input="{}", capture_output=True, text=True, env=env, timeout=60)


def test_a_shadowed_import_name_is_refused_loudly(tmp_path: Path) -> None:
    done = _run(tmp_path, "status", shadow=True)
    assert done.returncode == 3
    assert "'hooks' resolves to" in done.stderr and "another installed distribution" in done.stderr


def test_a_hook_still_answers_its_host_when_shadowed(tmp_path: Path) -> None:
    done = _run(tmp_path, "hook", "session-start", shadow=True)
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"continue": True, "suppressOutput": True}
    assert "'hooks' resolves to" in done.stderr


def test_our_own_packages_pass(tmp_path: Path) -> None:
    # control: the same commands in a clean environment
    assert _run(tmp_path, "status", shadow=False).returncode == 0
    hook = _run(tmp_path, "hook", "session-start", shadow=False)
    assert hook.returncode == 0 and json.loads(hook.stdout)["continue"] is True and hook.stderr == ""
