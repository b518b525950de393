"""What a new user of the CLI tripped over (issue 26), as real `intentloop` subprocesses: times and ids, output,
paths, off tasks and the small things.

The memory is written through the real service (``Memory`` of test_cli_people) and read back only through the CLI.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from integration.test_cli_people import INTENTLOOP, Memory, _bytes_under, _on_terminal, memory
from integration.test_hook_commands import Hosts, _receipt, _refusal, hosts

from intentloop.cli.install import HOSTS
from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT
from intentloop.model.hook_events import EVENT_BY_ARGUMENT

__all__ = ["hosts", "memory"]  # the fixtures, shared


def _ms(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ------------------------------------------------------------------------------------------------- times and ids


def test_as_of_takes_a_date_a_local_time_and_an_offset_and_echoes_the_utc_instant(memory: Memory) -> None:
    ids = memory.populate()
    started = datetime.strptime(
        memory.json("show", ids["a"])[1]["snapshot"]["active_claims"][0]["valid_from"], "%Y-%m-%dT%H:%M:%S.%fZ"
    ).replace(tzinfo=UTC)
    later = started + timedelta(hours=1)
    memory.env["TZ"] = "UTC-02"  # POSIX: two hours east of UTC, no tz database needed
    local = (later + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")
    offset = (later + timedelta(hours=5, minutes=30)).strftime("%Y-%m-%dT%H:%M:%S") + "+05:30"
    whole_second = _ms(later.replace(microsecond=0))
    for typed, expected in ((local, whole_second), (offset, whole_second), (_ms(later), _ms(later))):
        code, body = memory.json("show", ids["a"], "--as-of", typed)
        assert code == 0 and body["as_of"] == expected, (typed, body)
        assert body["snapshot"]["active_claims"]
    human = memory.run("show", ids["a"], "--as-of", offset)
    assert f"as recorded at {whole_second} (UTC; --as-of {offset})" in human.stdout
    # a date is its local midnight: the day after the task started shows it, the day before it did not exist yet
    next_day = (started + timedelta(days=1, hours=2)).strftime("%Y-%m-%d")
    code, body = memory.json("show", ids["a"], "--as-of", next_day)
    assert code == 0 and body["as_of"].endswith("T22:00:00.000Z")  # 00:00 at UTC+2
    day_before = (started - timedelta(days=1)).strftime("%Y-%m-%d")
    code, body = memory.json("show", ids["a"], "--as-of", day_before)
    assert code == 5 and body["error"]["code"] == "TASK_NOT_FOUND"
    assert "did not exist yet" in body["error"]["message"] and "not associated" not in body["error"]["message"]
    # what is not a time names the option and the forms it takes
    code, body = memory.json("show", ids["a"], "--as-of", "yesterday")
    assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS" and "--as-of" in body["error"]["message"]


def test_destructive_commands_need_four_characters_of_an_id(memory: Memory) -> None:
    ids = memory.populate()
    before = memory.tree()
    for kind, key in (("claim", "other"), ("task", "b")):
        for prefix in (ids[key][:1], ids[key][:3]):
            code, body = memory.json("forget", kind, prefix, "--yes")
            assert code == 2 and body["error"]["code"] == "INVALID_ID", (kind, prefix, body)
            assert "at least 4 characters" in body["error"]["message"]
    assert memory.tree() == before
    # control: four characters are enough
    code, body = memory.json("forget", "claim", ids["other"][:4], "--yes")
    assert code == 0 and body["claim_id"] == ids["other"]


def test_every_command_that_asks_first_needs_four_characters_of_a_project_id(memory: Memory) -> None:
    ids = memory.populate()
    elsewhere = memory.tmp / "elsewhere"
    elsewhere.mkdir()
    short, enough = memory.pid[:3], memory.pid[:4]
    asking = {
        ("forget", "task", ids["b"], "--project-id"): "--project-id",
        ("recover", "quarantine", "--project-id"): "--project-id",
        ("recover", "salvage", "--project-id"): "--project-id",
        ("verify", "--accept", "--project-id"): "--project-id",
        ("relink", "--to", str(elsewhere), "--from"): "--from",
    }
    before = memory.tree()
    for words, option in asking.items():
        code, body = memory.json(*words, short, "--yes", cwd=memory.tmp)
        assert code == 2 and body["error"]["code"] == "INVALID_ID", (words, body)
        assert f"{option} '{short}' is too short" in body["error"]["message"]
        assert "at least 4 characters" in body["error"]["message"]
    assert memory.tree() == before
    # control: a command that only reads takes any unique prefix, and four characters are enough for the others
    assert memory.json("tasks", "--project-id", memory.pid[:1])[0] == 0
    for words in asking:
        code, body = memory.json(*words, enough, "--yes", cwd=memory.tmp)
        assert code == 0, (words, body)


def test_verify_counts_signed_events_in_words(memory: Memory) -> None:
    memory.call("intent_start_task", {"request_id": "one", "label": "one event"})
    code, body = memory.json("verify")
    assert code == 0 and body["events"] == 1 and body["signed_events"] == 1
    out = memory.run("verify").stdout
    assert "(1 event signed)" in out and "events signed" not in out
    memory.populate()  # control: more than one is plural
    code, body = memory.json("verify")
    assert f"({body['signed_events']} events signed)" in memory.run("verify").stdout


def test_the_confirmation_shows_the_claim_and_takes_the_prefix_as_typed(memory: Memory) -> None:
    ids = memory.populate()
    prefix = ids["other"][:6]
    code, _stdout, seen = _on_terminal(
        memory, ["forget", "claim", prefix], f"DELETE CLAIM {prefix}\n".encode(), b"to confirm:"
    )
    shown = seen.decode()
    assert code == 0, shown
    assert "Nothing else" in _stdout + shown  # the claim's text, before the question
    assert f"DELETE CLAIM {prefix}" in shown
    assert ids["other"].encode() not in _bytes_under(memory.dir)
    # control: another prefix than the one typed is not the confirmation
    task = ids["a"][:6]
    code, _stdout, seen = _on_terminal(memory, ["forget", "task", task], b"DELETE TASK 0000\n", b"to confirm:")
    assert code == 1 and ids["a"].encode() in _bytes_under(memory.dir)


def test_project_ids_have_one_printed_width_everywhere(memory: Memory) -> None:
    memory.populate()
    widths = {}
    for command in (["status"], ["projects"], ["tasks"], ["verify"]):
        out = memory.run(*command).stdout
        printed = {
            word.strip("()") for word in out.split() if word.strip("()") and memory.pid.startswith(word.strip("()"))
        }
        printed = {word for word in printed if len(word) >= 8}
        assert printed, (command, out)
        widths[command[0]] = {len(word) for word in printed}
    assert set().union(*widths.values()) == {12}, widths


# ------------------------------------------------------------------------------------------------- output


def _run(memory: Memory, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*INTENTLOOP, *args],
        capture_output=True,
        text=True,
        env={**memory.env, **env},
        cwd=memory.root,
        timeout=60,
        input="",
    )


def test_piped_output_is_not_hard_wrapped_and_columns_is_honoured(memory: Memory) -> None:
    ids = memory.populate()
    long = "Keep " + "-".join(["segment"] * 40) + " intact"  # one 330-character line
    memory.claim(ids["a"], "long", long)
    piped = _run(memory, "show", ids["a"][:8])
    assert piped.returncode == 0
    assert any(long in line for line in piped.stdout.splitlines()), piped.stdout  # never folded, however long
    narrow = _run(memory, "show", ids["a"][:8], COLUMNS="80")
    assert narrow.returncode == 0 and narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80


def test_install_dry_run_prints_a_diff_that_patch_applies(memory: Memory, tmp_path: Path) -> None:
    home = tmp_path / "host-home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    original = (
        'model = "' + "x" * 300 + '"\n[projects."' + str(tmp_path / ("deep/" * 40)) + '"]\ntrust_level = "trusted"\n'
    )
    config = codex / "config.toml"
    config.write_text(original)
    env = {"HOME": str(home), "CODEX_HOME": str(codex)}
    dry = _run(memory, "install", "codex", "--dry-run", **env)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    start = lines.index(f"--- {config}")
    end = next(i for i in range(start + 2, len(lines)) if lines[i].startswith("--- "))
    diff = "\n".join(lines[start:end]) + "\n"
    assert all(line[:1] in " +-@" for line in diff.splitlines()), diff  # no line folded into a non-diff line
    copy = tmp_path / "copy.toml"
    copy.write_text(original)
    patched = subprocess.run(["patch", "-s", str(copy)], input=diff, capture_output=True, text=True, timeout=30)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    assert _run(memory, "install", "codex", **env).returncode == 0
    assert copy.read_text() == config.read_text()  # the diff shown is exactly the change made


def test_export_to_stdout_with_a_dash_and_format_in_any_case(memory: Memory) -> None:
    ids = memory.populate()
    done = _run(memory, "export", ids["a"][:8], "--format", "JSON", "--out", "-")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "intent-loop-export"
    assert not (memory.root / "-").exists()
    markdown = _run(memory, "export", ids["a"][:8], "--format", "Markdown")
    assert markdown.returncode == 0 and markdown.stdout.startswith("#")
    # control: a format that is none of them is still refused
    assert _run(memory, "export", ids["a"][:8], "--format", "yaml").returncode == 2


def _command_paths() -> list[list[str]]:
    from typer.main import get_command

    from intentloop.cli.app import build_app

    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(get_command(build_app()), [])
    return paths


def test_dash_h_is_help_for_every_command(memory: Memory) -> None:
    paths = _command_paths()
    assert ["forget", "claim"] in paths and ["recover", "salvage"] in paths and len(paths) > 20
    for path in paths:
        done = _run(memory, *path, "-h")
        assert done.returncode == 0 and done.stdout.startswith("Usage: intentloop"), (path, done.stderr)


def _complete(memory: Memory, words: str) -> list[str]:
    done = _run(
        memory, _INTENTLOOP_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(len(words.split(" ")) - 1)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_completion_offers_hosts_hook_events_and_formats(memory: Memory) -> None:
    assert _complete(memory, "intentloop install ") == list(HOSTS)
    assert _complete(memory, "intentloop install cl") == ["claude"]
    events = _complete(memory, "intentloop hook ")
    assert events == [*EVENT_BY_ARGUMENT, *GEMINI_EVENT_BY_ARGUMENT] and "session-start" in events
    assert _complete(memory, "intentloop export abcd --format ") == ["markdown", "json"]
    # control: a command word completes as before
    assert "forget" in _complete(memory, "intentloop fo")


def test_remedies_name_the_command_never_a_placeholder(memory: Memory) -> None:
    for args, command in (
        (["show"], "intentloop show --help"),
        (["recover", "export"], "intentloop recover export --help"),
        (["forget", "claim"], "intentloop forget claim --help"),
        (["nonsense"], "intentloop --help"),
        (["recover", "nonsense"], "intentloop recover --help"),
    ):
        done = _run(memory, *args)
        assert done.returncode == 2 and f"`{command}`" in done.stderr, (args, done.stderr)
        assert "<command>" not in done.stderr
    code, body = memory.json("show")
    assert code == 2 and body["error"]["remedy"].endswith("`intentloop show --help`")


def test_a_conflicting_mcp_table_has_its_own_code(memory: Memory, tmp_path: Path) -> None:
    home = tmp_path / "host-home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text('[mcp_servers.intent_loop]\ncommand = "elsewhere"\n')
    env = {"HOME": str(home), "CODEX_HOME": str(codex)}
    done = _run(memory, "install", "codex", "--json", **env)
    body = json.loads(done.stdout)
    assert done.returncode == 2 and body["error"]["code"] == "INSTALL_TABLE_CONFLICT", body
    assert "by hand" in body["error"]["remedy"]
    assert (codex / "config.toml").read_text() == '[mcp_servers.intent_loop]\ncommand = "elsewhere"\n'
    # control: without that table the install goes through
    (codex / "config.toml").write_text('model = "o3"\n')
    assert _run(memory, "install", "codex", **env).returncode == 0


def test_a_missing_output_folder_is_a_usage_error_not_a_full_disk(memory: Memory, tmp_path: Path) -> None:
    ids = memory.populate()
    for args in (["export", ids["a"][:8]], ["recover", "export"]):
        code, body = memory.json(*args, "--out", str(tmp_path / "no-such-folder" / "out.file"))
        assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS", (args, body)
        assert "folder of --out does not exist" in body["error"]["message"]
        assert "space" not in body["error"]["remedy"]
    # control: an existing folder is written
    assert memory.json("export", ids["a"][:8], "--out", str(tmp_path / "out.md"))[0] == 0


# ------------------------------------------------------------------------------------------------- paths


def test_relative_paths_are_taken_from_the_working_directory_and_errors_name_the_option(memory: Memory) -> None:
    ids = memory.populate()
    parent = memory.root.parent
    done = subprocess.run(
        [*INTENTLOOP, "tasks", "--project-root", memory.root.name, "--json"],
        capture_output=True,
        text=True,
        env=memory.env,
        cwd=parent,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["project_id"] == memory.pid
    for option, args in (
        ("--project-root", ["tasks", "--project-root", "no-such-folder"]),
        ("--to", ["relink", "--from", f"./{memory.root.name}", "--to", "no-such-folder", "--yes"]),
    ):
        bad = subprocess.run(
            [*INTENTLOOP, *args, "--json"], capture_output=True, text=True, env=memory.env, cwd=parent, timeout=60
        )
        body = json.loads(bad.stdout)
        assert bad.returncode == 2 and body["error"]["code"] == "PROJECT_ROOT_INVALID", body
        assert body["error"]["message"].startswith(f"{option} no-such-folder: "), body
    code, body = memory.json("relink", "--from", "gone-folder", "--to", str(memory.root), "--yes")
    assert code == 5 and body["error"]["message"].startswith("--from gone-folder: "), body
    # --from and --to relative, from the parent folder: the memory moves
    moved = parent / "moved"
    moved.mkdir()
    done = subprocess.run(
        [*INTENTLOOP, "relink", "--from", memory.root.name, "--to", "moved", "--yes", "--json"],
        capture_output=True,
        text=True,
        env=memory.env,
        cwd=parent,
        timeout=60,
    )
    body = json.loads(done.stdout)
    assert done.returncode == 0 and body["from_project_id"] == memory.pid, body
    assert body["to_project_root"] == os.path.realpath(moved)
    assert ids["a"] in {
        t["task_id"]
        for t in json.loads(
            subprocess.run(
                [*INTENTLOOP, "tasks", "--project-root", "moved", "--json"],
                capture_output=True,
                text=True,
                env=memory.env,
                cwd=parent,
                timeout=60,
            ).stdout
        )["tasks"]
    }


# ------------------------------------------------------------------------------------------------- small things


def test_a_hook_problem_names_its_event_and_project_and_status_says_when_it_is_resolved(memory: Memory) -> None:
    memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    intact = ledger.read_bytes()
    lines = intact.splitlines(keepends=True)
    ledger.write_bytes(b"".join([lines[0], b"this is not a ledger line\n", *lines[2:]]))
    payload = {"session_id": "s-9", "cwd": str(memory.root), "hook_event_name": "SessionStart", "source": "startup"}
    hook = subprocess.run(  # the plugin's form: no event argument, the payload names it
        [*INTENTLOOP, "hook"], input=json.dumps(payload), capture_output=True, text=True, env=memory.env, timeout=60
    )
    assert hook.returncode == 0 and json.loads(hook.stdout)["continue"] is True
    [line] = [json.loads(raw) for raw in (memory.data_root / "hook-problems.log").read_text().splitlines()]
    assert (line["event"], line["project_id"], line["code"]) == ("SessionStart", memory.pid, "CORRUPT_LEDGER")
    code, body = memory.json("status")
    assert code == 0 and body["last_hook_problem"]["resolved"] is False
    human = memory.run("status").stdout
    assert f"SessionStart project {memory.pid[:12]}" in human and "remedy:" in human
    # repaired: the line stays in the log, and status says it is resolved instead of offering a remedy
    assert memory.json("recover", "quarantine", "--yes")[0] == 0
    code, body = memory.json("status")
    assert code == 0 and body["last_hook_problem"]["resolved"] is True
    human = memory.run("status").stdout
    assert "resolved since" in human and "remedy: save what verifies" not in human


def test_a_project_emptied_by_relink_is_not_listed_as_a_project(memory: Memory) -> None:
    memory.populate()
    moved = memory.tmp / "moved-here"
    moved.mkdir()
    assert memory.json("relink", "--from", str(memory.root), "--to", str(moved), "--yes")[0] == 0
    new_pid = json.loads(memory.run("status", "--json", "--project-root", str(moved)).stdout)["projects"][0]
    code, body = memory.json("projects")
    assert code == 0 and [row["project_id"] for row in body["projects"]] == [new_pid["project_id"]]
    assert body["moved"] == [{"project_id": memory.pid, "to_project_id": new_pid["project_id"]}]
    human = memory.run("projects").stdout
    assert f"{memory.pid[:12]} → {new_pid['project_id'][:12]}" in human
    code, body = memory.json("status")
    states = {row["project_id"]: row["moved_to"] for row in body["projects"]}
    assert states == {memory.pid: new_pid["project_id"], new_pid["project_id"]: None}
    assert f"moved to {new_pid['project_id'][:12]} by relink" in memory.run("status").stdout
    # control: the old folder used again is a project again
    memory.call("intent_start_task", {"request_id": "again", "label": "again"})
    code, body = memory.json("projects")
    assert memory.pid in [row["project_id"] for row in body["projects"]] and body["moved"] == []


@pytest.mark.slow
def test_demo_keep_prints_how_to_point_the_cli_at_what_it_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
    }
    done = subprocess.run([*INTENTLOOP, "demo", "--keep"], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    [export] = [line.strip() for line in lines if line.strip().startswith("export INTENT_LOOP_DATA_DIR=")]
    [change] = [line.strip() for line in lines if line.strip().startswith("cd ") and "intentloop tasks" in line]
    data_root = shlex.split(export.removeprefix("export "))[0].split("=", 1)[1]
    folder = shlex.split(change)[1]
    listed = subprocess.run(
        [*INTENTLOOP, "tasks", "--json"],
        capture_output=True,
        text=True,
        env={**env, "INTENT_LOOP_DATA_DIR": data_root},
        cwd=folder,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert json.loads(listed.stdout)["tasks"]  # the tour's task, seen through the printed environment


def test_a_dollar_intent_command_is_answered_as_dollar_intent(hosts: Hosts) -> None:
    _receipt(hosts.prompt("$intent remember Keep the diff small"))
    assert "until '$intent on'" in _receipt(hosts.prompt("$intent off"))[1]
    refused = _refusal(hosts.prompt("$intent remember Add telemetry"))
    assert "'$intent on' turns it back on" in refused and "/intent" not in refused
    _receipt(hosts.prompt("$INTENT on"))
    usage = _refusal(hosts.prompt("$intent forget x"))
    assert "usage: $intent forget" in usage and "/intent" not in usage
    # control: the slash form keeps its own spelling
    assert "usage: /intent forget" in _refusal(hosts.prompt("/intent forget x"))


def test_show_counts_claims_in_words_and_the_limit_named_is_the_real_one(hosts: Hosts) -> None:
    _receipt(hosts.prompt("/intent remember Keep the diff small"))
    assert "show: 1 user-explicit claim of this task" in _receipt(hosts.prompt("/intent show"))[1]
    _receipt(hosts.prompt("/intent remember Tests must pass"))
    assert "show: 2 user-explicit claims of this task" in _receipt(hosts.prompt("/intent show"))[1]
    for length in (600, 5000):  # past the statement limit, and past the raw prompt limit
        refused = _refusal(hosts.prompt("/intent remember " + "word " * (length // 5)))
        assert "500 characters" in refused and "4000" not in refused, refused


def test_a_task_started_by_a_command_has_a_label_a_person_recognises(hosts: Hosts) -> None:
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    secret_words = "Keep the diff small"
    _receipt(hosts.prompt(f"/intent remember {secret_words}"))
    label = hosts.state().label
    assert label is not None and label.startswith("Session task of ") and label.endswith(" UTC, Codex")
    stamp = label.removeprefix("Session task of ").removesuffix(", Codex")
    at = datetime.strptime(stamp, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
    assert before <= at <= datetime.now(UTC)
    assert secret_words not in label


@pytest.mark.parametrize(("id_key", "host"), [("prompt_id", "Claude Code"), ("neither", None)])
def test_the_label_names_the_host_its_payload_shows(tmp_path: Path, id_key: str, host: str | None) -> None:
    hosts = Hosts(tmp_path)
    _receipt(hosts.prompt("/intent remember Keep the diff small", id_key=id_key))
    label = hosts.state().label
    assert label is not None and label.startswith("Session task of ")
    assert label.endswith(f" UTC, {host}") if host is not None else label.endswith(" UTC")


def test_tasks_counts_the_hooks_observations_apart_from_candidates(memory: Memory) -> None:
    task = memory.call("intent_start_task", {"request_id": "linked", "host_session_id": "sess-1", "label": "linked"})
    for turn in range(3):
        payload = {
            "session_id": "sess-1",
            "cwd": str(memory.root),
            "hook_event_name": "UserPromptSubmit",
            "turn_id": f"turn-{turn}",
            "prompt": f"an ordinary prompt {turn}",
        }
        hook = subprocess.run(
            [*INTENTLOOP, "hook", "user-prompt"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=memory.env,
            timeout=60,
        )
        assert hook.returncode == 0
    memory.call(  # one candidate of another kind: a long-term inference
        "intent_add_inference",
        {
            "task_id": task["task_id"],
            "request_id": "lt",
            "statement": "The user prefers small commits",
            "source_ref": {"kind": "agent_turn", "event_id": "t-9"},
            "facets": ["soft_constraint"],
            "confidence": 0.6,
            "scope": "long_term",
        },
    )
    code, body = memory.json("tasks")
    [row] = [r for r in body["tasks"] if r["task_id"] == task["task_id"]]
    assert code == 0 and (row["candidates"], row["observations"]) == (1, 3), row
    human = memory.run("tasks").stdout
    assert "observed" in human
    # the MCP answers keep the original's meaning: every candidate, prompt observations included
    assert memory.call("intent_get_snapshot", {"task_id": task["task_id"]})["candidate_count"] == 4
    assert len(memory.call("intent_list_candidates", {"task_id": task["task_id"]})) == 4


def _with_files(
    memory: Memory, limit: int, argv: list[str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv`` run in the project as a process that may open at most ``limit`` files."""

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=memory.env, cwd=memory.root, timeout=60, preexec_fn=low
    )


def test_running_out_of_file_descriptors_is_no_bug_report(memory: Memory) -> None:
    ids = memory.populate()
    seen: set[str] = set()
    for limit in range(5, 17):
        # a write: the lock, the service and trio need files
        done = _with_files(memory, limit, [*INTENTLOOP, "mode", ids["a"][:8], "off"])
        assert "Traceback" not in done.stderr and "INTERNAL_ERROR" not in done.stderr, (limit, done.stderr)
        seen.add("ok" if done.returncode == 0 else done.stderr.splitlines()[0])
    assert "ok" in seen, seen  # the limit was met from both sides
    assert any("ulimit -n" in line for line in seen), seen
    assert not any("LOCK_COMPROMISED" in line for line in seen), seen  # the lock never changed hands


def test_a_hook_out_of_file_descriptors_names_the_limit_not_a_lost_lock(memory: Memory) -> None:
    """An /intent command under every low limit: a receipt, or "not recorded" with a storage failure that names
    it; never a lock that "changed hands" (an owner record that could not be opened is not another writer's)."""
    answers: dict[int, str] = {}
    for limit in range(8, 21):
        payload = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": f"fd-{limit}",
            "cwd": str(memory.root),
            "prompt": f"/intent remember keep the limit {limit} in mind",
        }
        done = _with_files(memory, limit, [*INTENTLOOP, "hook"], json.dumps(payload))
        answer = json.loads(done.stdout)
        assert done.returncode == 0 and answer["continue"] is True, (limit, done.stdout, done.stderr)
        answers[limit] = answer["hookSpecificOutput"]["additionalContext"].splitlines()[0]
    assert any("receipt" in line for line in answers.values()), answers  # the limit was met from both sides
    assert any("not recorded" in line for line in answers.values()), answers
    assert not any("LOCK_COMPROMISED" in line for line in answers.values()), answers
