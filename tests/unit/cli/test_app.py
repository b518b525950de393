"""The typer app in process: usage errors become INVALID_ARGUMENTS with exit 2, help works, the hook path is light."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.cli.app import build_app, run


def test_every_documented_command_is_registered() -> None:
    from typer.main import get_command

    group = get_command(build_app())
    assert set(group.commands) == {  # type: ignore[attr-defined]
        *("status", "verify", "recover", "serve", "hook", "install", "demo"),
        *("projects", "tasks", "show", "export", "forget", "relink", "keys", "mode", "share", "sync"),
    }
    assert set(group.commands["share"].commands) == {  # type: ignore[attr-defined]
        *("init", "join", "remote", "auto-sync", "publish", "preview", "keys", "trust", "principal", "members"),
        *("quotas", "retract", "adopt"),
    }
    assert set(group.commands["keys"].commands) == {"show", "rotate"}  # type: ignore[attr-defined]
    assert set(group.commands["recover"].commands) == {"export", "quarantine", "salvage"}  # type: ignore[attr-defined]
    assert set(group.commands["forget"].commands) == {"claim", "task"}  # type: ignore[attr-defined]


def test_install_help_counts_each_hosts_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    from intentloop.model.gemini_events import GEMINI_EVENTS
    from intentloop.model.hook_events import HOOK_EVENTS

    words = {4: "four", 5: "five"}
    assert run(["install", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"hooks ({words[len(HOOK_EVENTS)]}; {words[len(GEMINI_EVENTS)]} on Gemini CLI)" in text


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    assert "verify" in capsys.readouterr().out


def test_unknown_option_is_a_usage_error_with_code_and_remedy(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "error[INVALID_ARGUMENTS]" in err and "--bogus" in err and "remedy:" in err


def test_usage_error_in_json_mode_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["recover", "export", "--json"]) == 2
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False and body["command"] == "recover export"
    assert body["error"]["code"] == "INVALID_ARGUMENTS" and "out" in body["error"]["message"]


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["frobnicate"]) == 2
    assert "error[INVALID_ARGUMENTS]" in capsys.readouterr().err


def test_no_command_shows_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([]) == 2
    assert "Usage" in capsys.readouterr().err


def test_both_project_options_are_refused_before_anything_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(tmp_path / "data"))
    assert run(["verify", "--project-root", str(tmp_path), "--project-id", "a" * 64]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_hook_path_never_imports_typer_rich_or_mcp(tmp_path: Path) -> None:
    probe = (  # the hook process ends with os._exit once it has answered: the report is written there
        "import sys, io, os\n"
        "report, parent, real_exit = sys.argv[1], os.getpid(), os._exit\n"
        "def report_and_exit(code):\n"
        "    if os.getpid() == parent:\n"
        "        heavy = sorted(m for m in ('typer', 'rich', 'mcp', 'pydantic') if m in sys.modules)\n"
        "        open(report, 'w').write(f'{code} {heavy}')\n"
        "    real_exit(code)\n"
        "os._exit = report_and_exit\n"
        "sys.argv = ['intentloop', 'hook']\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'))\n"
        "from intentloop.cli.entry import main\n"
        "main()\n"
    )
    report = tmp_path / "report.txt"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(report)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"INTENT_LOOP_CATALOG": "off", "PATH": "/usr/bin:/bin"},
    )
    assert report.read_text() == "0 []", done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["continue"] is True
    # control: the admin path does import typer
    admin = subprocess.run(
        [sys.executable, "-c", "import sys; import intentloop.cli.app; print('typer' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert admin.stdout.strip() == "True"


def test_verify_says_it_is_the_one_o_n_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "The one O(n) command" in out and "checkpoint" in out


@pytest.mark.parametrize("enabled", [True, False])
def test_verify_restores_the_garbage_collector_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], enabled: bool
) -> None:
    """The collector is off only while the command runs (its process), and restored in a process that runs the app
    in-process, also when the command fails."""
    import gc

    from intentloop.cli.verify import without_cyclic_gc

    seen: list[bool] = []
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(tmp_path / "nowhere"))
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert without_cyclic_gc(lambda: seen.append(gc.isenabled()) or 0) == 0
        assert seen == [False] and gc.isenabled() is enabled
        assert run(["verify", "--project-id", "0" * 64, "--json"]) != 0  # a failing verify (no such project)
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError):
            without_cyclic_gc(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    capsys.readouterr()
