"""``intentloop hook`` as a real process: every event, every failure path, the deadline, the import budget.

Every answer must be exactly one JSON line with ``continue: true``, exit status 0, nothing on stderr, and arrive
before the hook's own deadline — with a damaged ledger and with the lock held by another live process too.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from intentloop.hooks._problems import LOG_NAME
from intentloop.model import EventDraft, association_context, new_uuid, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root

from _support.linked_task import linked_task_payload
from _support.lock_holder import holding_lock

SESSION = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
FAIL_OPEN = b'{"continue":true,"suppressOutput":true}\n'
# Only a hook that waits forever (for stdin, for the lock) crosses it; how close to its deadline a hook answers on a
# loaded machine is a benchmark figure, not a timed assertion.
HANG_BOUND_S = 8.0
_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]
FORBIDDEN = ("mcp", "typer", "rich", "pydantic", "trio", "anyio", "click", "httpx", "cryptography")


class Env:
    """A temporary home, data root and project root, and a way to run the hook against them."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.data = tmp / "data"
        self.repo = tmp / "repo"
        self.repo.mkdir()
        self.store = ProjectStore(self.data, project_id_for(canonicalize_project_root(str(self.repo))))

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        env["INTENT_LOOP_DATA_DIR"] = str(self.data)
        env.update(extra)
        return {k: v for k, v in env.items() if v != ""}

    def payload(self, event: str, **fields: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "session_id": SESSION,
            "transcript_path": str(self.home / "transcript.jsonl"),
            "cwd": str(self.repo),
            "hook_event_name": event,
            "model": "gpt-5",
        }
        return {**base, **fields}

    def run(
        self, stdin: bytes | Mapping[str, Any], *args: str, env: Mapping[str, str] | None = None, timeout: float = 10
    ) -> tuple[bytes, bytes, float]:
        data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
        started = time.monotonic()
        proc = subprocess.run(
            [*HOOK, *args], input=data, capture_output=True, env=env or self.environ(), timeout=timeout, check=False
        )
        elapsed = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr
        # The hook keeps its deadline by its own clock (from its process start); seen from here a loaded machine adds
        # spawn and reaping time, so only a hook that ignores its deadline crosses this bound.
        assert elapsed < HANG_BOUND_S
        return proc.stdout, proc.stderr, elapsed

    def answer(self, stdin: bytes | Mapping[str, Any], *args: str, **kw: Any) -> dict[str, Any]:
        """Run, check the process contract, and return the decoded answer."""
        out, err, _ = self.run(stdin, *args, **kw)
        assert err == b""
        assert out.endswith(b"\n") and out.count(b"\n") == 1
        answer = json.loads(out)
        assert answer["continue"] is True and answer["suppressOutput"] is True
        return answer

    def append(self, drafts: list[EventDraft]) -> None:
        with self.store.locked(time.monotonic() + 5) as ledger:
            ledger.append(drafts)

    def link(self, statements: tuple[str, ...] = ("Use PostgreSQL only",)) -> str:
        task_id = new_uuid()
        payload = linked_task_payload(SESSION, statements)
        self.append(
            [
                EventDraft(
                    event_type="task_started", task_id=task_id, actor="user", request_id="start:1", payload=payload
                )
            ]
        )
        return task_id

    def hook_events(self) -> list[Any]:
        return [e for e in self.store.read().events if e.request_id.startswith("hook:")]

    def files(self) -> dict[str, bytes]:
        if not self.data.exists():
            return {}
        return {str(p.relative_to(self.data)): p.read_bytes() for p in sorted(self.data.rglob("*")) if p.is_file()}


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def _context(answer: dict[str, Any]) -> str | None:
    spec = answer.get("hookSpecificOutput")
    return None if spec is None else spec["additionalContext"]


# ------------------------------------------------------------------------------------------------ every event


def test_unlinked_session_start_and_prompt_answer_the_association_hint(env: Env) -> None:
    for event in ("SessionStart", "UserPromptSubmit"):
        answer = env.answer(env.payload(event, source="startup", turn_id="t1", prompt="hello"))
        assert answer["hookSpecificOutput"] == {
            "hookEventName": event,
            "additionalContext": association_context(SESSION),
        }
    assert env.files() == {}  # reads and unlinked prompts create nothing


def test_linked_session_every_event(env: Env) -> None:
    task = env.link()
    start = env.answer(env.payload("SessionStart", source="resume"))
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = _context(start) or ""
    assert context.startswith(f"[Intent Loop linked task_id={task}.")
    assert context.endswith("- [task; hard_constraint] Use PostgreSQL only")
    prompt = env.answer(env.payload("UserPromptSubmit", permission_mode="default", turn_id="turn-1", prompt="go"))
    assert "hookSpecificOutput" not in prompt  # SessionStart injected this very text and noted it (once per session)
    for event, extra in (
        ("PostCompact", {"turn_id": "turn-1", "trigger": "auto"}),
        ("Stop", {"turn_id": "turn-1", "stop_hook_active": False, "last_assistant_message": "Done."}),
        ("SessionEnd", {"reason": "other"}),
    ):
        out, err, _ = env.run(env.payload(event, **extra))
        assert (out, err) == (FAIL_OPEN, b"")
    observed = [(e.event_type, e.actor, e.request_id.split(":")[1]) for e in env.hook_events()]
    assert observed == [
        ("source_observed", "user", "UserPromptSubmit"),
        ("compaction_observed", "agent", "PostCompact"),
        ("result_signal_observed", "agent", "Stop"),
        ("result_signal_observed", "agent", "SessionEnd"),
    ]
    assert all(e.task_id == task for e in env.hook_events())


def test_claude_code_prompt_id_is_the_turn_identity(env: Env) -> None:
    env.link()
    prompt_id = "8d1f6d3c-6f43-4c52-9a55-0d2f2f8f7a11"
    payload = env.payload("UserPromptSubmit", permission_mode="default", prompt_id=prompt_id, prompt="go")
    del payload["model"]
    env.answer(payload)
    env.answer(payload)  # the same turn again: still one observation
    [event] = env.hook_events()
    assert event.payload["candidate"]["source_ref"] == {
        "kind": "user_event",
        "event_id": prompt_id,
        "sha256": hashlib.sha256(prompt_id.encode()).hexdigest(),
    }


def test_forced_event_and_data_dir_argument(env: Env) -> None:
    env.link()
    payload = env.payload("SessionStart")
    del payload["hook_event_name"]
    state = env.home / "state"  # where the problem of the call without a root is logged (never the real home's)
    no_root = env.environ(INTENT_LOOP_DATA_DIR="", HOME="", XDG_STATE_HOME=str(state))
    assert _context(env.answer(payload, "session-start", "--data-dir", str(env.data), env=no_root))
    assert _context(env.answer(payload, "session-start", env=no_root)) is None  # no data root: fail open
    assert json.loads((state / "intentloop" / LOG_NAME).read_bytes())["code"] == "DATA_DIR_REQUIRED"
    assert _context(env.answer(payload)) is None  # no event at all: fail open
    # a forced event overrides the payload's name
    forced = env.answer(env.payload("Stop"), "session-start")
    assert forced["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_without_an_override_the_hook_uses_the_per_user_default(env: Env, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    plugin = {"PLUGIN_DATA": str(tmp_path / "plugin-data"), "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data")}
    no_override = env.environ(INTENT_LOOP_DATA_DIR="", CODEX_HOME=str(codex_home), **plugin)
    payload = env.payload("UserPromptSubmit", turn_id="t-1", prompt="hello")
    assert _context(env.answer(payload, env=no_override)) == association_context(SESSION)  # nothing linked there
    env.data = env.home / ".local" / "share" / "intentloop" / "v1"
    env.store = ProjectStore(env.data, env.store.project_id)
    task = env.link()  # a task linked to the session under the per-user default root
    assert task in str(_context(env.answer(payload, env=no_override)))
    assert not codex_home.exists() and not (tmp_path / "plugin-data").exists()


# ------------------------------------------------------------------------------------------------ failure paths


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"   \n", id="blank"),
        pytest.param(b"{not json", id="bad-json"),
        pytest.param(b"[1, 2, 3]", id="not-an-object"),
        pytest.param(b'{"hook_event_name": "SessionStart"', id="truncated"),
        pytest.param(b"\xff\xfe\x00", id="not-utf8"),
    ],
)
def test_unusable_input_fails_open(env: Env, stdin: bytes) -> None:
    env.link()
    assert env.run(stdin)[:2] == (FAIL_OPEN, b"")


def test_oversized_payload_fails_open_and_one_mebibyte_is_accepted(env: Env) -> None:
    env.link()
    payload = env.payload("SessionStart")
    body = json.dumps({**payload, "padding": ""}).encode()
    exact = json.dumps({**payload, "padding": "x" * (1_048_576 - len(body))}).encode()
    assert len(exact) == 1_048_576
    assert _context(env.answer(exact))  # positive control: exactly 1 MiB is read and answered
    assert env.run(exact + b" ")[:2] == (FAIL_OPEN, b"")


@pytest.mark.parametrize(
    "motif",
    ["eyJ-", 'password=\\"', "xK9mP2qR7vL4nT8wZ3bY6cF1hJ5/", "aB3-"],
    ids=["jwt", "credential", "entropy-slashed", "entropy-parts"],
)
def test_a_crafted_one_mebibyte_prompt_is_recorded_in_time(env: Env, motif: str) -> None:
    """A prompt built against a redaction rule, filling the 1 MiB payload: answered with the context (not by the
    deadline's fail-open line) and recorded, because the hook redacts at most its first 64 Ki characters."""
    env.link()
    payload = env.payload("UserPromptSubmit", prompt="")
    room = 1_048_576 - len(json.dumps(payload).encode()) - 64
    prompt = motif * (room // (len(json.dumps(motif)) - 2)) + '"'
    data = json.dumps({**payload, "prompt": prompt}).encode()
    assert 1_040_000 < len(data) <= 1_048_576
    answer = env.answer(data)
    assert _context(answer)  # answered by the handler, not by the deadline
    (event,) = env.hook_events()
    assert event.payload["char_count"] >= len(prompt) - 65_536
    assert motif.encode() not in env.store.ledger_path.read_bytes()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"session_id": None}, id="no-session"),
        pytest.param({"session_id": 12}, id="numeric-session"),
        pytest.param({"cwd": None}, id="no-cwd"),
        pytest.param({"cwd": "repo"}, id="relative-cwd"),
        pytest.param({"cwd": "/nonexistent/intentloop/repo"}, id="missing-cwd"),
        pytest.param({"hook_event_name": None}, id="no-event"),
        pytest.param({"hook_event_name": "PreToolUse"}, id="other-event"),
    ],
)
def test_missing_or_bad_fields_fail_open(env: Env, change: dict[str, Any]) -> None:
    env.link()
    payload = {
        k: v for k, v in {**env.payload("UserPromptSubmit", turn_id="t", prompt="p"), **change}.items() if v is not None
    }
    assert env.run(payload)[:2] == (FAIL_OPEN, b"")
    assert env.hook_events() == []
    assert _context(env.answer(env.payload("UserPromptSubmit", turn_id="t", prompt="p")))  # positive control


def test_cwd_that_is_a_file_fails_open(env: Env) -> None:
    file = env.repo / "file.txt"
    file.write_text("x")
    assert env.run(env.payload("SessionStart", cwd=str(file)))[:2] == (FAIL_OPEN, b"")


def test_no_data_root_fails_open(env: Env) -> None:
    """Without HOME the problems log falls back to the password database's home: the test names a state folder of
    its own, so running the suite never writes a problem into the real user's ``~/.local/state``."""
    state = env.home / "state"
    no_root = env.environ(INTENT_LOOP_DATA_DIR="", HOME="", XDG_STATE_HOME=str(state))
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert env.run(env.payload(event, prompt="p"), env=no_root)[:2] == (FAIL_OPEN, b"")
    logged = [json.loads(line) for line in (state / "intentloop" / LOG_NAME).read_bytes().splitlines()]
    assert [(p["event"], p["code"]) for p in logged] == [
        (event, "DATA_DIR_REQUIRED") for event in ("SessionStart", "UserPromptSubmit", "Stop")
    ]


def test_damaged_ledger_fails_open_and_stays_untouched(env: Env) -> None:
    env.link()
    env.answer(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))
    lines = env.store.ledger_path.read_bytes().splitlines(keepends=True)
    damaged = lines[0].replace(b"PostgreSQL", b"PostgreSQX") + b"".join(lines[1:])
    env.store.ledger_path.write_bytes(damaged)
    before = env.files()
    for event in ("SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd"):
        out, err, elapsed = env.run(env.payload(event, turn_id="turn-2", prompt="again", last_assistant_message="x"))
        assert (out, err) == (FAIL_OPEN, b"") and elapsed < HANG_BOUND_S
    after = env.files()
    problems = [json.loads(line) for line in after.pop(LOG_NAME).splitlines()]  # the ledger is untouched, and
    assert after == before and {p["code"] for p in problems} == {"CORRUPT_LEDGER"}  # the user can find out why


def _quarantined(env: Env) -> list[dict[str, Any]]:
    quarantine = env.store.quarantine_dir
    return [json.loads(p.read_bytes()) for p in sorted(quarantine.glob("*.json"))] if quarantine.exists() else []


def test_a_prompt_repairs_a_torn_tail_under_the_lock(env: Env) -> None:
    """A crashed write's torn last line no longer switches the hooks off: SessionStart reads the verified prefix, and
    the prompt's observation, a mutation like any other, repairs the tail under the lock and is recorded."""
    env.link()
    torn = b'{"actor":"user","event_hash":"'
    with env.store.ledger_path.open("ab") as fh:
        fh.write(torn)
    start = env.answer(env.payload("SessionStart", source="resume"))
    assert (_context(start) or "").endswith("Use PostgreSQL only")  # the user's words, before any repair
    assert env.store.ledger_path.read_bytes().endswith(torn)  # SessionStart only reads
    prompt = env.answer(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))
    assert _context(prompt) is None  # SessionStart injected the same text and noted it
    assert [e.request_id.split(":")[1] for e in env.hook_events()] == ["UserPromptSubmit"]  # read() verifies it all
    [record] = _quarantined(env)  # the torn bytes are summarised, never kept
    assert record["byte_length"] == len(torn) and record["sha256"] == hashlib.sha256(torn).hexdigest()
    assert not (env.data / LOG_NAME).exists()  # nothing went wrong


def test_a_prompt_keeps_a_whole_last_event_that_lacks_only_its_newline(env: Env) -> None:
    env.link()
    data = env.store.ledger_path.read_bytes()
    env.store.ledger_path.write_bytes(data[:-1])  # the task's event is whole: only its newline is missing
    env.answer(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))
    lines = env.store.ledger_path.read_bytes().splitlines(keepends=True)
    assert lines[0] == data and len(lines) == 2  # the event kept, the observation after it
    assert [e.request_id.split(":")[1] for e in env.hook_events()] == ["UserPromptSubmit"]
    assert _quarantined(env) == []


def test_an_unlinked_prompt_writes_nothing_on_a_torn_tail(env: Env) -> None:
    """Control: a session that records nothing takes no lock and repairs nothing; it is answered all the same."""
    env.link()
    with env.store.ledger_path.open("ab") as fh:
        fh.write(b'{"actor":"user","event_hash":"')
    before = env.files()
    payload = env.payload("UserPromptSubmit", session_id="another-session", turn_id="turn-1", prompt="go")
    assert _context(env.answer(payload)) == association_context("another-session")
    assert env.files() == before


@pytest.fixture
def lock_holder(env: Env) -> Iterator[subprocess.Popen[bytes]]:
    env.link()
    with holding_lock(env.data, env.store.project_id) as holder:
        yield holder


def test_lock_held_by_a_live_process_spools_before_the_deadline(env: Env, lock_holder: subprocess.Popen[bytes]) -> None:
    out, err, elapsed = env.run(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))
    assert err == b"" and _context(json.loads(out))  # still answers with the linked task's context
    # Waited for the lock, then spooled the observation: the hook's own clock keeps it inside its 2.5 s budget; the
    # upper bound here is one only a hook that waits for the lock forever crosses (the figure: tools/bench, locks).
    assert 1.0 < elapsed < HANG_BOUND_S
    out, err, elapsed = env.run(
        env.payload("Stop", turn_id="turn-1", last_assistant_message="x"),
        env=env.environ(INTENT_LOOP_HOOK_DEADLINE_S="1.5"),
    )
    assert (out, err) == (FAIL_OPEN, b"") and elapsed < HANG_BOUND_S
    # SessionStart only reads: the held lock does not matter
    assert _context(env.answer(env.payload("SessionStart")))
    assert env.hook_events() == []
    assert lock_holder.stdin is not None
    lock_holder.stdin.close()
    lock_holder.wait(timeout=10)
    assert len(list(env.store.paths.spool_dir.iterdir())) == 2  # both observations wait in the spool
    env.answer(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))  # the next writer drains them
    assert sorted(e.request_id.split(":")[1] for e in env.hook_events()) == ["Stop", "UserPromptSubmit"]
    assert list(env.store.paths.spool_dir.iterdir()) == []


def test_lock_of_a_killed_owner_is_reclaimed(env: Env, lock_holder: subprocess.Popen[bytes]) -> None:
    lock_holder.send_signal(signal.SIGKILL)
    lock_holder.wait(timeout=10)
    env.answer(env.payload("UserPromptSubmit", turn_id="turn-1", prompt="go"))
    assert len(env.hook_events()) == 1


def test_stuck_stdin_is_answered_by_the_watchdog(env: Env) -> None:
    with subprocess.Popen(
        HOOK,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env.environ(INTENT_LOOP_HOOK_DEADLINE_S="0.6"),
    ) as proc:
        started = time.monotonic()
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b'{"hook_event_name": "SessionStart"')  # and never close it
        proc.stdin.flush()
        try:
            proc.wait(timeout=HANG_BOUND_S + 2)
        finally:
            if proc.poll() is None:
                proc.kill()
        elapsed = time.monotonic() - started
        assert (proc.returncode, proc.stdout.read(), proc.stderr.read()) == (0, FAIL_OPEN, b"")
        # Without the watchdog the hook would wait for stdin forever (killed after the bound above); how close to its
        # 0.6 s deadline it answers is a benchmark figure (tools/bench/run.py, locks: hook_stuck_stdin_ms).
        assert elapsed < HANG_BOUND_S


_CRASH = """
import sys
import intentloop.service.hookops as ops
def boom(*args, **kwargs):
    raise RuntimeError("internal failure")
ops.session_context = boom
ops.plan_observation = boom
sys.argv = ["intentloop", "hook"]
from intentloop.cli.entry import main
main()
"""


_STUCK_IN_C = """
import os, re, sys
import intentloop.service.hookops as ops
pid_file = sys.argv[1]
def stuck(*args, **kwargs):
    with open(pid_file, "w") as fh:
        fh.write(str(os.getpid()))
    # catastrophic backtracking inside the re engine: C code that holds the GIL for far longer than any deadline
    re.match(r"(a+)+$", "a" * 64 + "b")
    raise AssertionError("unreachable")
ops.session_context = stuck
ops.plan_observation = stuck
sys.argv = ["intentloop", "hook"]
from intentloop.cli.entry import main
main()
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_a_handler_stuck_in_c_code_still_answers_before_the_deadline(env: Env, tmp_path: Path, event: str) -> None:
    """The real hook entry with its handler stuck in the regex engine (the GIL held, no Python thread can run):
    the answer still comes, fail-open, long before a bound only a defect crosses (a defect: minutes)."""
    env.link()
    pid_file = tmp_path / "worker.pid"
    deadline = 1.0
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _STUCK_IN_C, str(pid_file)],
        input=json.dumps(env.payload(event, prompt="go")).encode(),
        capture_output=True,
        env=env.environ(INTENT_LOOP_HOOK_DEADLINE_S=str(deadline)),
        timeout=30,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, FAIL_OPEN, b"")
    assert elapsed < HANG_BOUND_S, elapsed  # a defect holds the hook for minutes
    worker = int(pid_file.read_text())  # positive control: the handler really ran and got stuck
    gone_by = time.monotonic() + 5
    while _running(worker) and time.monotonic() < gone_by:
        time.sleep(0.05)
    assert not _running(worker)  # the stuck worker does not outlive the answer


def test_internal_exception_fails_open_silently_and_debug_explains(env: Env) -> None:
    env.link()
    payload = json.dumps(env.payload("SessionStart")).encode()
    quiet = subprocess.run([sys.executable, "-c", _CRASH], input=payload, capture_output=True, env=env.environ())
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, FAIL_OPEN, b"")
    loud = subprocess.run(
        [sys.executable, "-c", _CRASH], input=payload, capture_output=True, env=env.environ(INTENT_LOOP_DEBUG="1")
    )
    assert (loud.returncode, loud.stdout) == (0, FAIL_OPEN)
    assert b"RuntimeError" in loud.stderr  # positive control: stderr is silenced, not empty by accident


def test_never_reads_the_transcript(env: Env) -> None:
    env.link()
    fifo = env.home / "transcript.jsonl"
    os.mkfifo(fifo)  # opening it to read would block until the watchdog answers fail-open
    fast = env.environ(INTENT_LOOP_HOOK_DEADLINE_S="1.0")
    # the prompt first: after SessionStart noted the same text, it would leave it out
    assert _context(env.answer(env.payload("UserPromptSubmit", transcript_path=str(fifo), prompt="p"), env=fast))
    assert _context(env.answer(env.payload("SessionStart", transcript_path=str(fifo)), env=fast))
    for event in ("PostCompact", "Stop", "SessionEnd"):
        assert env.run(env.payload(event, transcript_path=str(fifo)), env=fast)[:2] == (FAIL_OPEN, b"")
    assert len(env.hook_events()) == 4  # every event really ran its handler


# ------------------------------------------------------------------------------------------------ start fast

# The handler runs in a forked child that ends with os._exit: the report is written there, just before it exits.
_MODULES = """
import json, os, sys
report = sys.argv[1]
def in_child():
    real_exit = os._exit
    def exit_after_report(code):
        open(report, "w").write(json.dumps(sorted(sys.modules)))
        real_exit(code)
    os._exit = exit_after_report
os.register_at_fork(after_in_child=in_child)
sys.argv = ["intentloop", "hook"]
from intentloop.cli.entry import main
main()
"""


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "Stop"])
def test_hook_path_loads_only_stdlib_msgspec_and_intentloop(env: Env, tmp_path: Path, event: str) -> None:
    env.link(("Use PostgreSQL only",))
    report = tmp_path / "modules.json"
    payload = json.dumps(env.payload(event, prompt="deploy, password=hunter2", last_assistant_message="ok")).encode()
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, str(report)], input=payload, capture_output=True, env=env.environ()
    )
    assert proc.returncode == 0 and proc.stderr == b""
    modules = json.loads(report.read_text())
    tops = {name.split(".")[0] for name in modules}
    forbidden = set(FORBIDDEN) - ({"cryptography"} if event != "SessionStart" else set())  # writers sign (below)
    assert not tops & forbidden, tops & forbidden
    allowed = set(sys.stdlib_module_names) | {
        "msgspec",
        "typing_extensions",
        "intentloop",
        "hooks",
        "cli",
        "_distutils_hack",
        "__main__",
    }
    if event != "SessionStart":
        # A hook that writes signs the new head: only cryptography's Ed25519 module and what it needs (its Rust and
        # cffi bindings), never the rest of the package (x509, serialization, ciphers).
        allowed |= {"cryptography", "_cffi_backend", "_openssl", "_rust"}
        signing = {m for m in modules if m.startswith("cryptography.")}
        assert "cryptography.hazmat.primitives.asymmetric.ed25519" in signing  # positive control: it signed
        assert not {m for m in signing if ".x509" in m or ".ciphers" in m or m.endswith(".serialization")}
    else:
        assert "cryptography" not in tops  # a read-only hook never loads it
    foreign = {t for t in tops if t not in allowed and not t.startswith("__editable__")}
    assert foreign == set()
    assert {m for m in modules if m.startswith("intentloop.cli.")} == {"intentloop.cli.entry"}
    assert "intentloop.service.hookops" in modules  # positive control: the handler really ran
    if event != "SessionStart":
        assert len(env.hook_events()) == 1


_WRITE_ONLY = (
    "intentloop.store._lock",
    "intentloop.store._ledger",
    "intentloop.store._liveness",
    "intentloop.store._names",
    "intentloop.model.redaction",
    "intentloop.model.validation",
)
#: What the write path no longer needs (measured, `python -X importtime`): dataclasses with inspect ~6 ms, shutil
#: ~2 ms, random and secrets ~1.5 ms.
_NEVER_ON_THE_HOOK_PATH = frozenset({"dataclasses", "inspect", "shutil", "random", "secrets"})


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_session_start_reads_without_loading_the_write_path(env: Env, tmp_path: Path, event: str) -> None:
    """A read-only SessionStart starts faster: no lock machinery, no redaction patterns (a prompt needs both), and
    msgspec is imported without typing_extensions either way."""
    env.link(("Use PostgreSQL only",))
    report = tmp_path / "modules.json"
    payload = json.dumps(env.payload(event, turn_id="turn-1", prompt="go on")).encode()
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, str(report)], input=payload, capture_output=True, env=env.environ()
    )
    assert proc.returncode == 0 and proc.stderr == b""
    assert b"Use PostgreSQL only" in proc.stdout  # the linked task's context was really answered
    modules = set(json.loads(report.read_text()))
    assert "msgspec" in modules and "typing_extensions" not in modules  # msgspec alone: ~9 ms less start-up
    loaded = modules & set(_WRITE_ONLY)
    if event == "SessionStart":
        assert loaded == set()
        assert not modules & {"dataclasses", "inspect"}  # ~7 ms: the read path's records are msgspec structs
    else:  # control: recording an observation takes the lock and redacts
        assert loaded == set(_WRITE_ONLY)
        assert len(env.hook_events()) == 1  # it really wrote (and released the lock)
    assert not modules & _NEVER_ON_THE_HOOK_PATH, modules & _NEVER_ON_THE_HOOK_PATH
