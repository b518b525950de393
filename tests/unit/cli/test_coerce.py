"""Plain option values skip typer's pydantic coercion: read commands never import pydantic, values arrive unchanged,
and anything else (a float option, a bad value) is still typer's, with its usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.cli.app import run

_PROBE = (  # runs the console script's body in a fresh process, then reports which heavy modules it imported
    "import atexit, sys\n"
    "report = sys.argv[1]\n"
    "def done():\n"
    "    open(report, 'w').write(' '.join(m for m in ('pydantic', 'typer') if m in sys.modules))\n"
    "atexit.register(done)\n"
    "sys.argv = ['intentloop', *sys.argv[2:]]\n"
    "from intentloop.cli.entry import main\n"
    "main()\n"
)


def _imports(tmp_path: Path, *args: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    report = tmp_path / "report.txt"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"INTENT_LOOP_CATALOG": "off", "PATH": "/usr/bin:/bin", "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")},
    )
    return report.read_text(), done


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--json"],
        ["projects", "--project-root", "/nonexistent-dir"],
        ["tasks", "--project-id", "0" * 64],
        ["export", "x", "--format", "markdown", "--project-id", "0" * 64],
    ],
)
def test_read_commands_parse_their_options_without_pydantic(tmp_path: Path, args: list[str]) -> None:
    imported, done = _imports(tmp_path, *args)
    assert imported == "typer", done.stderr  # typer parsed the options; pydantic never came in


def test_a_float_option_still_goes_through_typer_and_a_bad_one_is_a_usage_error(tmp_path: Path) -> None:
    imported, done = _imports(tmp_path, "relink", "a", "--to", str(tmp_path), "--wait", "soon", "--json")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_ARGUMENTS" and "--wait" in error["message"] and "number" in error["message"]
    assert imported == "pydantic typer"  # control: the non-plain value was coerced by typer's own path


def test_str_values_arrive_exactly_as_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from intentloop.cli import _coerce

    seen: list[object] = []
    original = _coerce._TakenAsIs._coerce_value

    def spy(self: _coerce._TakenAsIs, value: object, param: object, ctx: object) -> object:
        out = original(self, value, param, ctx)  # type: ignore[arg-type]
        seen.append(out)
        return out

    monkeypatch.setattr(_coerce._TakenAsIs, "_coerce_value", spy)
    odd = "caf\u00e9 \udcff x"  # a non-UTF-8 argv byte arrives as a lone surrogate: typer's path keeps it too
    assert run(["verify", "--project-id", odd, "--json"]) != 0
    assert odd in seen
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False
