"""Every `intentloop …` command the README and docs/ show, run as a real subprocess against a scratch data root.

Each command is read from the pages (inline code and code blocks), its synopsis brackets dropped and its placeholders
(``TASK``, ``CLAIM``, ``P``, ``FILE`` …) filled with real values of a scratch project; each then runs in a fresh copy
of that data root, with HOME, CODEX_HOME and CLAUDE_CONFIG_DIR pointing into the scratch folder, so even ``install``
only ever touches scratch files. A documented command must exist, take every option the page shows it with, and end
without a usage error or an internal error. The few commands that need more than a command line (a host on stdin,
the user's shell) are listed in ``EXCLUDED`` with the reason and the test that covers them instead.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.model import project_id_for
from intentloop.service import IntentService

REPO = Path(__file__).resolve().parents[2]
PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "intentloop"]

_INLINE = re.compile(r"`(?:\$ )?(intentloop(?: [^`]*)?)`")
_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.S)
_OPTION = re.compile(r"--[a-z][a-z-]*")
_PROGRESS = re.compile(r"^intentloop[a-z ]*: ")  # a progress or debug line quoted as output, not a command
_BLOCK_COMMAND = re.compile(r"^intentloop(?: [-a-z]|$)")
_MENTION_ONLY = re.compile(r"Missing (?:argument|option) ")

#: Commands shown in the docs that this test does not run, with why and what covers them instead.
EXCLUDED: dict[str, str] = {
    "intentloop serve": "waits for an MCP client on stdin; test_cli_commands and test_mcp_stdio drive it",
    "intentloop demo": "a whole walkthrough with its own server; test_demo.py runs it",
    "intentloop --install-completion": "writes into the user's shell start-up files; test_cli_people checks it",
}


@dataclass(frozen=True)
class Documented:
    page: str
    text: str  # as shown (normalised: one line, comments and `$ ` dropped, `\|` → `|`)


def documented_commands(pages: tuple[Path, ...] = PAGES) -> list[Documented]:
    """Every distinct command shown on ``pages``, in order of first appearance."""
    found: dict[str, Documented] = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        candidates = [m.group(1) for m in _INLINE.finditer(text)]
        for block in _BLOCK.findall(text):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                if _BLOCK_COMMAND.match(line):
                    candidates.append(line)
        for raw in candidates:
            command = " ".join(raw.split("#", 1)[0].replace("\\|", "|").split())
            if _PROGRESS.match(command) or command in found:
                continue
            found[command] = Documented(page.name, command)
    return list(found.values())


class Scratch:
    """A template data root with one project (a task with three claims) and the folders the commands name."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "project"
        self.root.mkdir()
        self.new_root = tmp / "moved"
        self.new_root.mkdir()
        self.template = tmp / "template"
        canonical = os.path.realpath(self.root)
        self.pid = project_id_for(canonical)
        service = IntentService(lambda: self.template)

        def call(tool: str, arguments: dict[str, Any]) -> Any:
            async def run() -> Any:
                return await service.dispatch(tool, arguments, project_root=canonical, project_id=self.pid)

            return trio.run(run)

        started = call("intent_start_task", {"request_id": "s", "label": "docs", "initial_explicit": ["Keep it"]})
        self.task = started["task_id"]
        self.claim = started["active_claims"][0]["claim_id"]
        self.at = started["active_claims"][0]["valid_from"]

    def fill(self, command: str, run_dir: Path) -> list[str]:
        """The command's words with its optional parts dropped and its placeholders filled for this scratch."""
        command = re.sub(r"\[[^\[\]]*\]", "", command)  # optional parts, innermost first is enough here
        values = {
            "TASK": self.task[:8],
            "1d11c0": self.task[:8],
            "1D11C0": self.task[:8].upper(),
            "CLAIM": self.claim[:8],
            "ID": self.claim[:8],
            "P": str(self.root),
            "FILE": str(run_dir / "out.file"),
            "backup.jsonl": str(run_dir / "backup.jsonl"),
            "~/intent-ledger-backup.jsonl": str(run_dir / "backup2.jsonl"),
            "OLD": str(self.root),
            "OLD_ROOT_OR_ID": str(self.root),
            "NEW_ROOT": str(self.new_root),
            "9f2c…": self.pid[:8],
            "TIME": self.at,
            "SECONDS": "1",
            "EVERY": "5m",
            "S": "1",
            "EVENT": "session-start",
            "DIR": str(run_dir / "data"),
            "<argument>": "session-start",
        }
        words = []
        try:  # a quoted argument (`share trust 'ssh-ed25519 AAAA…'`) is one word, as a shell reads it
            split = shlex.split(command)
        except ValueError:
            split = command.split()
        for word in split[1:]:
            if word in ("…", "PROJECT"):
                continue
            if "|" in word:  # alternatives: the first one (each is checked against the help below)
                word = word.split("|")[0]
            words.append(values.get(word, word))
        if words[:2] in (["forget", "claim"], ["forget", "task"], ["keys", "rotate"]):
            words.append("--yes")  # no terminal here: these need --yes (the questions themselves are tested elsewhere)
        return words

    def run(self, words: list[str], run_dir: Path) -> subprocess.CompletedProcess[str]:
        data = run_dir / "data"
        shutil.copytree(self.template, data)
        if words[:2] == ["keys", "rotate"]:  # it replaces a missing key only: the situation it is documented for
            (data / "keys" / "ed25519.key").unlink()
        home = run_dir / "home"
        home.mkdir()
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "INTENT_LOOP_DATA_DIR": str(data),
            "CODEX_HOME": str(home / ".codex"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
        return subprocess.run(
            [*INTENTLOOP, *words], capture_output=True, text=True, env=env, cwd=self.root, input="", timeout=120
        )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("docs-commands"))


def _help(scratch: Scratch, path: list[str], cache: dict[str, str | None]) -> str | None:
    """The command's ``--help`` text, or ``None`` when there is no such command."""
    key = " ".join(path)
    if key not in cache:
        run_dir = Path(tempfile.mkdtemp(prefix="help-", dir=scratch.tmp))
        done = scratch.run([*path, "--help"], run_dir)
        cache[key] = done.stdout if done.returncode == 0 else None
    return cache[key]


_CHOICES = re.compile(r"\{([a-z-]+(?:\|[a-z-]+)+)\}|--[a-z-]+ ([a-z-]+(?:\|[a-z-]+)+)")


def unlisted_choices(word: str, usage: str) -> list[str]:
    """The choices of the help's choice list (``{codex|claude|gemini}``, ``--format markdown|json``) that a
    documented list of alternatives (``codex|claude``) leaves out: a reader takes the list shown for all there is."""
    if "|" not in word:
        return []
    shown = set(word.strip("[]").split("|"))
    for match in _CHOICES.finditer(usage):
        offered = set((match.group(1) or match.group(2)).split("|"))
        if shown < offered:
            return sorted(offered - shown)
    return []


_GROUPS = {"forget", "recover", "keys", "share"}
_GLOBAL = {"--version", "--install-completion", "--show-completion", "--help"}


def test_the_pages_show_commands_and_the_reader_finds_them(tmp_path: Path) -> None:
    commands = [d.text for d in documented_commands()]
    assert len(commands) > 60, commands  # a reader that finds nothing cannot pass
    page = tmp_path / "page.md"
    page.write_text("Run `intentloop show 1d11c0` or\n```bash\n$ intentloop verify   # check\n```\n`intentloop x: 3`\n")
    assert [d.text for d in documented_commands((page,))] == ["intentloop show 1d11c0", "intentloop verify"]


def test_every_documented_command_runs_as_the_docs_say(scratch: Scratch) -> None:
    helps: dict[str, str | None] = {}
    failures: list[str] = []
    ran = 0
    for index, documented in enumerate(documented_commands()):
        command = documented.text
        if command in EXCLUDED or command == "intentloop" or re.sub(r"\s*\[.*", "", command) in EXCLUDED:
            continue
        words = command.split()[1:]
        path = words[:2] if words[:1] and words[0] in _GROUPS and len(words) > 1 else words[:1]
        path = [w for w in path if not w.startswith("-") and w.islower() and "|" not in w and w != "…"]
        # every option the page shows must be one the command takes
        shown = set(_OPTION.findall(command)) - _GLOBAL
        if "PROJECT" in command.split() or "[PROJECT]" in command:
            shown |= {"--project-root", "--project-id"}
        usage = _help(scratch, path, helps)
        if usage is None:
            failures.append(f"{documented.page}: `{command}`: there is no command `intentloop {' '.join(path)}`")
            continue
        missing = sorted(option for option in shown if option not in usage)
        if missing:
            failures.append(f"{documented.page}: `{command}`: `{' '.join(path)} --help` has no {missing}")
        for word in words:  # alternatives (`codex|claude`, `markdown|json`, hook events) must each be accepted
            if "|" in word and not word.startswith("-"):
                for choice in word.strip("[]").split("|"):
                    if choice not in usage:
                        failures.append(f"{documented.page}: `{command}`: {choice!r} is not in the help")
                left_out = unlisted_choices(word, usage)
                if left_out:
                    failures.append(f"{documented.page}: `{command}`: leaves out {left_out}, which the help offers")
        run_dir = scratch.tmp / f"run-{index}"
        run_dir.mkdir()
        done = scratch.run(scratch.fill(command, run_dir), run_dir)
        ran += 1
        codes = set(re.findall(r"error\[([A-Z_]+)\]", done.stderr))
        if re.fullmatch(r"intentloop( [a-z]+)*", command) and _MENTION_ONLY.search(done.stderr):
            continue  # a command named in prose (`intentloop show`), not a command line: its help was checked
        if codes & {"INVALID_ARGUMENTS", "INTERNAL_ERROR"} or "Traceback" in done.stderr:
            failures.append(f"{documented.page}: `{command}` → exit {done.returncode}: {done.stderr.strip()}")
    assert ran > 40
    assert not failures, "\n".join(failures)


def test_a_list_of_alternatives_that_leaves_a_choice_out_is_reported() -> None:
    usage = "Usage: intentloop install [OPTIONS] {codex|claude|gemini}\n  --format markdown|json  the format"
    assert unlisted_choices("codex|claude", usage) == ["gemini"]
    assert unlisted_choices("[markdown]", usage) == []  # not a list of alternatives
    assert unlisted_choices("json|markdown", usage) == []  # control: every choice shown, in any order
    assert unlisted_choices("codex|claude|gemini", usage) == []
    assert unlisted_choices("init|join", usage) == []  # subcommands, not one of the help's choice lists


def test_the_bare_command_prints_its_help_and_exits_2(scratch: Scratch, tmp_path: Path) -> None:
    done = scratch.run([], tmp_path)
    assert done.returncode == 2
    assert "Usage: intentloop" in done.stderr


def test_a_command_the_program_does_not_have_would_fail_here(scratch: Scratch, tmp_path: Path) -> None:
    # the positive control of the runner's judgement: an option no command takes is a usage error it reports
    done = scratch.run(["show", scratch.task[:8], "--no-such-option"], tmp_path)
    assert "error[INVALID_ARGUMENTS]" in done.stderr
    helps: dict[str, str | None] = {}
    assert "--no-such-option" not in (_help(scratch, ["show"], helps) or "")
    assert _help(scratch, ["no-such-command"], helps) is None
