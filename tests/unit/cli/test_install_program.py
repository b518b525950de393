"""How installers start intentloop, and which existing host entries they recognise as theirs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from intentloop.cli import install
from intentloop.cli._install_edit import (
    installed_hook_root,
    installed_server_root,
    is_our_hook_command,
    is_our_program,
)


@pytest.mark.parametrize(
    "argv",
    [
        ["/home/me/.local/bin/intentloop", "serve"],
        ["/usr/bin/python3", "-P", "-m", "intentloop", "serve"],
        ["/usr/bin/python3", "-m", "intentloop", "serve"],
        ["/usr/bin/python3", "-m", "cli.entry", "serve"],  # written by installers before the single package
    ],
)
def test_our_program_in_every_form_an_installer_wrote(argv: list[str]) -> None:
    assert is_our_program(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["/usr/bin/python3", "-m", "cli", "serve"],
        ["/usr/bin/python3", "-m", "intentloop_other", "serve"],
        ["/usr/bin/python3", "-P", "-m", "mytool", "serve"],
        ["/usr/bin/node", "server.js"],
    ],
)
def test_other_programs_are_not_ours(argv: list[str]) -> None:
    assert not is_our_program(argv)


def test_the_fallback_runs_the_package_without_the_working_directory_on_the_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lonely = tmp_path / "bin" / "python3"  # an interpreter with no console script beside it
    lonely.parent.mkdir()
    lonely.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(lonely))
    assert install.default_program() == (str(lonely), "-P", "-m", "intentloop")
    (lonely.parent / "intentloop").write_text("#!/bin/sh\n")
    (lonely.parent / "intentloop").chmod(0o755)
    assert install.default_program() == (str(lonely.parent / "intentloop"),)  # control: the script when present


def test_hook_commands_in_the_fallback_form_are_ours() -> None:
    assert is_our_hook_command("/usr/bin/python3 -P -m intentloop hook user-prompt --data-dir /d")
    assert not is_our_hook_command("/usr/bin/python3 -P -m mytool hook user-prompt")


@pytest.mark.parametrize(
    "command",
    [
        "/home/me/.venv/bin/intentloop hook user-prompt --data-dir /data",
        "/usr/bin/python3 -P -m intentloop hook stop --data-dir /data",
        "/usr/bin/python3 -m intentloop hook session-start --data-dir /data",
        "/usr/bin/python3 -m cli.entry hook session-end --data-dir /data",  # installers before the single package
        "'/home/me/my tools/intentloop' hook post-compact --data-dir /data",
    ],
)
def test_hook_commands_an_installer_wrote_name_their_data_root(command: str) -> None:
    assert installed_hook_root(command) == "/data"
    assert is_our_hook_command(command)


@pytest.mark.parametrize(
    "command",
    [
        "intentloop hook session-start",  # the plugin's hooks.json: intentloop's, but not an installer's
        "intentloop hook user-prompt --data-dir /data",  # not an absolute program
        "/usr/bin/intentloop hook user-prompt",  # no pinned root
        "/usr/bin/intentloop hook user-prompt --data-dir data",  # a relative root
        "/usr/bin/intentloop hook user-prompt --data-dir /data --debug",  # more than an installer writes
        "/usr/bin/intentloop hook user-prompt --data-dir /data; rm -rf ~",
        "/usr/bin/python3 -P -m mytool hook user-prompt --data-dir /data",
        None,
    ],
)
def test_other_hook_commands_name_no_data_root(command: str | None) -> None:
    assert installed_hook_root(command) is None


def test_server_entries_an_installer_wrote_name_their_data_root() -> None:
    entry = {"command": "/venv/bin/intentloop", "args": ["serve"], "env": {"INTENT_LOOP_DATA_DIR": "/data"}}
    assert installed_server_root(entry) == installed_server_root({"type": "stdio", **entry}) == "/data"
    fallback = {"command": "/usr/bin/python3", "args": ["-P", "-m", "intentloop", "serve"], "env": entry["env"]}
    assert installed_server_root(fallback) == "/data"
    for other in (
        {"type": "stdio", "command": "intentloop", "args": ["serve"], "env": {}},  # `claude mcp add`
        {**entry, "env": {}},
        {**entry, "env": {"INTENT_LOOP_DATA_DIR": "/data", "EXTRA": "1"}},
        {**entry, "env": {"INTENT_LOOP_DATA_DIR": "relative"}},
        {**entry, "args": ["serve", "--verbose"]},
        {**entry, "type": "http"},
        {**entry, "timeout": 30},
        {**entry, "command": "/usr/bin/node"},
        "not an object",
    ):
        assert installed_server_root(other) is None, other
