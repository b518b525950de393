"""intentloop installs as one import name: another distribution's ``cli``/``hooks``/``recovery`` packages in the same
environment, and a project directory holding packages of those names, leave every command and every hook working.

A real environment is built per module: intentloop installed from a copy of this checkout with pip (not editable),
then a throwaway distribution that ships top-level ``cli``, ``hooks`` and ``recovery`` packages, each of which fails
when imported. The dependencies come from the test environment through a ``.pth`` line (pip fetches only the build
backend, as the Quick start's install does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHADOWS = ("cli", "hooks", "recovery")
_BOOM = "raise RuntimeError('not intentloop: {name} from another distribution')\n"
_OTHER_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "other-tools"
version = "1.0"

[tool.setuptools]
packages = ["cli", "hooks", "recovery"]
"""


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.python = str(root / "bin" / "python")
        self.script = str(root / "bin" / "intentloop")
        self.site = Path(
            subprocess.run(
                [self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )

    def pip_install(self, source: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", self.python, "install", "--quiet", "--no-deps", str(source)],
            check=True,
            capture_output=True,
            timeout=300,
        )


def _shadow_packages(parent: Path) -> None:
    for name in SHADOWS:
        (parent / name).mkdir(parents=True)
        (parent / name / "__init__.py").write_text(_BOOM.format(name=name))
        (parent / name / "entry.py").write_text(_BOOM.format(name=name))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    base = tmp_path_factory.mktemp("packaging")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=120)
    env = Env(base / "venv")
    (env.site / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    source = base / "intentloop-src"  # a copy, so building leaves nothing in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for name in ("intentloop", "skills"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    env.pip_install(source)
    other = base / "other-src"
    _shadow_packages(other)
    (other / "pyproject.toml").write_text(_OTHER_PYPROJECT)
    env.pip_install(other)
    return env


def _run(env: Env, argv: list[str], cwd: Path, data: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "INTENT_LOOP"))}
    run_env = {**clean, "INTENT_LOOP_DATA_DIR": str(data)}
    return subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True, env=run_env, timeout=120)


def test_the_installed_files_hold_one_import_name(env: Env) -> None:
    [record] = env.site.glob("intentloop-*.dist-info/RECORD")
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text().splitlines() if line}
    assert "intentloop" in tops  # positive control: the package itself is recorded
    assert not tops & set(SHADOWS)
    assert {t for t in tops if not t.startswith(("intentloop", ".."))} == set()  # dist-info, scripts and share/


def test_the_other_distribution_really_shadows_those_names(env: Env, tmp_path: Path) -> None:
    # control: the throwaway distribution is installed and its packages win for the plain names
    for name in SHADOWS:
        done = _run(env, [env.python, "-c", f"import {name}"], tmp_path, tmp_path / "data")
        assert done.returncode == 1 and "not intentloop" in done.stderr


def test_every_command_and_hook_works_beside_them(env: Env, tmp_path: Path) -> None:
    project = tmp_path / "project"  # a project of the user's with its own cli/, hooks/ and recovery/ packages
    _shadow_packages(project)
    data = tmp_path / "data"
    control = _run(env, [env.python, "-c", "import hooks"], project, data)
    assert control.returncode == 1 and "not intentloop" in control.stderr  # the folder shadows plain imports there

    for argv in ([env.script, "--version"], [env.script, "status"], [env.script, "projects"]):
        done = _run(env, argv, project, data)
        assert done.returncode == 0, (argv, done.stderr)
        assert "not intentloop" not in done.stdout + done.stderr
    verify = _run(env, [env.script, "verify"], project, data)  # recovery's command: a structured answer, no crash
    assert verify.returncode == 5 and "error[PROJECT_NOT_FOUND]" in verify.stderr

    forms = ([env.script], [env.python, "-P", "-m", "intentloop"])  # the console script, the installers' fallback
    for program in forms:
        for event in ("session-start", "user-prompt", "stop"):
            payload = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "x", "prompt": "hello"}
            done = _run(env, [*program, "hook", event], project, data, stdin=json.dumps(payload))
            assert done.returncode == 0, (program, event, done.stderr)
            answer = json.loads(done.stdout)
            assert answer["continue"] is True
            assert done.stderr == "", (program, event, done.stderr)
