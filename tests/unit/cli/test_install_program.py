"""How installers start intentloop, and which existing host entries they recognise as theirs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from intentloop.cli import install
from intentloop.cli._install_edit import is_our_hook_command, is_our_program


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
