"""``intentloop install`` builds the redaction rule catalog's cache and its keywords, so the first ``/intent`` command
finds them ready (docs/REDACTION.md); not with the catalog off, not in a dry run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_SCRIPT = Path(sys.executable).with_name("intentloop")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]


def _install(tmp_path: Path, *extra: str, catalog: str) -> dict[str, Any]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "INTENT_LOOP_CATALOG": catalog,
        "INTENT_LOOP_CATALOG_CACHE": str(tmp_path / "rules"),
    }
    done = subprocess.run(
        [*CLI, "install", "claude", *extra, "--json"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_install_builds_the_rule_cache_once(tmp_path: Path) -> None:
    assert _install(tmp_path, catalog="on")["rule_cache"] == "built"
    (folder,) = (tmp_path / "rules").iterdir()
    assert list(folder.glob("*.vscdb")) and (folder / "keywords.json").is_file()
    assert _install(tmp_path, catalog="on")["rule_cache"] == "warm"  # a second install finds it ready


def test_not_with_the_catalog_off_nor_in_a_dry_run(tmp_path: Path) -> None:
    assert _install(tmp_path, catalog="off")["rule_cache"] == "off"
    assert _install(tmp_path, "--dry-run", catalog="on")["rule_cache"] is None
    assert not (tmp_path / "rules").exists()  # nothing compiled
