"""Shared pieces of the host end-to-end runs: the report, subprocess runs with timings, the ledger and ``verify``.

Checks read only public surfaces: the ledger file (its format: docs/EVENTS.md) and ``intentloop verify --json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Check:
    host: str
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """PASS/FAIL per host and check, plus timings of each step."""

    checks: list[Check] = field(default_factory=list)
    timings: list[tuple[str, str, float]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)

    def check(self, host: str, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(host, name, bool(ok), detail))
        mark = "PASS" if ok else "FAIL"
        print(f"[{host}] {mark} {name}" + (f" — {detail}" if detail else ""), flush=True)
        return bool(ok)

    def note(self, host: str, text: str) -> None:
        self.notes.append((host, text))
        print(f"[{host}] note: {text}", flush=True)

    def render(self) -> str:
        out = ["", "=" * 100, "SUMMARY"]
        for host in dict.fromkeys(c.host for c in self.checks):
            mine = [c for c in self.checks if c.host == host]
            verdict = "PASS" if all(c.ok for c in mine) else "FAIL"
            out.append(f"{host}: {verdict} ({sum(c.ok for c in mine)}/{len(mine)} checks)")
            for c in mine:
                out.append(f"  {'PASS' if c.ok else 'FAIL'}  {c.name}" + (f"  [{c.detail}]" if c.detail else ""))
            for h, text in self.notes:
                if h == host:
                    out.append(f"  note: {text}")
            for h, step, secs in self.timings:
                if h == host:
                    out.append(f"  time: {step:<40} {secs:7.2f} s")
        out.append("=" * 100)
        return "\n".join(out)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


@dataclass
class Run:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float


def run(
    report: Report,
    host: str,
    step: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout: float = 180,
    log_dir: Path | None = None,
) -> Run:
    """Run ``argv`` with stdin closed, record its wall time, keep its output under ``log_dir``."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = -9
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = (exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or "") + f"\nTIMEOUT {timeout}s"
    secs = time.monotonic() - start
    report.timings.append((host, step, secs))
    if log_dir is not None:
        slug = step.replace(" ", "_").replace("/", "_")
        label = host.replace("/", "-")
        (log_dir / f"{label}-{slug}.stdout").write_text(out, encoding="utf-8")
        (log_dir / f"{label}-{slug}.stderr").write_text(err, encoding="utf-8")
    return Run(list(argv), rc, out, err, secs)


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects among a host's output lines (its ``stream-json`` events), other lines skipped."""
    out = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def base_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """A minimal environment: no real HOME, no INTENT_LOOP_* leaking in from the caller."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(home.parent / "tmp"),
    }
    env.update(extra)
    return env


def project_id(root: Path) -> str:
    return hashlib.sha256(b"intent-loop-project-v1\0" + os.path.realpath(root).encode()).hexdigest()


def ledger_events(data_root: Path, root: Path) -> list[dict[str, Any]]:
    path = data_root / "projects" / project_id(root) / "ledger.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def verify(
    report: Report, host: str, intentloop: str, data_root: Path, root: Path, log_dir: Path, user_env: Mapping[str, str]
) -> None:
    """A bare ``intentloop verify --project-root ROOT --json`` (same HOME, no data-root variable) must find the same
    data root the host's processes used, exit 0 and report an intact chain."""
    env = base_env(log_dir.parent / "home", {k: v for k, v in user_env.items() if k == "XDG_DATA_HOME"})
    res = run(report, host, "intentloop verify", [intentloop, "verify", "--project-root", str(root), "--json"], env=env)
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        doc = {}
    brief = json.dumps(doc)[:300]
    ok = res.rc == 0 and doc.get("intact") is True and doc.get("data_root") == str(data_root)
    report.check(host, "bare intentloop verify --json: the same data root, exit 0, chain intact", ok, brief)


#: What the two turns must leave in the ledger: the tools' events, then one observation per hook that saw a linked
#: session (by the hook event that wrote it). Codex's SessionEnd payload carries no turn id and no text, so its
#: observation id is the constant ``hook:SessionEnd:<sha256("none")>``: the resumed run's SessionEnd is the same
#: observation as the first run's and is recorded once (an idempotent retry, as in the original). Claude Code's
#: SessionEnd carries the last ``prompt_id``, so each run's end is its own observation: one more
#: ``result_signal_observed`` than Codex.
EXPECTED_LEDGER = {
    "codex": ["task_started", "claim_added", "Stop", "SessionEnd", "UserPromptSubmit", "Stop"],
    # Gemini CLI's SessionEnd carries no text and no turn id either (its AfterAgent acts as Stop, BeforeAgent as
    # UserPromptSubmit): the same observations as Codex.
    "gemini": ["task_started", "claim_added", "Stop", "SessionEnd", "UserPromptSubmit", "Stop"],
    "claude": ["task_started", "claim_added", "Stop", "SessionEnd", "UserPromptSubmit", "Stop", "SessionEnd"],
}


def ledger_labels(events: list[dict[str, Any]]) -> list[str]:
    """Each event as its type, or for a hook observation as the hook event that wrote it."""
    out = []
    for e in events:
        request = str(e.get("request_id", ""))
        out.append(request.split(":")[1] if request.startswith("hook:") else str(e.get("event_type")))
    return out


def ledger_checks(report: Report, host: str, events: list[dict[str, Any]], task_id: str | None) -> None:
    """The tool calls and the hooks left their events in the ledger, for the task the model started."""
    types = [e.get("event_type") for e in events]
    report.note(host, f"ledger event types in order: {types}")
    expected = EXPECTED_LEDGER[host.split("/")[0]]
    report.check(
        host,
        "ledger: exactly the expected events, one observation per hook (Codex: one SessionEnd for the session)",
        ledger_labels(events) == expected,
        f"got {ledger_labels(events)}",
    )
    started = [e for e in events if e.get("event_type") == "task_started"]
    report.check(
        host, "ledger: task_started (intent_start_task landed)", bool(started) and started[0].get("task_id") == task_id
    )
    linked = bool(started) and bool(started[0].get("payload", {}).get("host_session_hash"))
    report.check(host, "ledger: task_started carries a host_session_hash (task linked to the session)", linked)
    claims = [e for e in events if e.get("event_type") == "claim_added"]
    stmt_ok = any(
        e.get("payload", {}).get("claim", {}).get("statement") == "The final report must be written in French."
        for e in claims
    )
    report.check(host, "ledger: claim_added with the statement (intent_add_explicit landed)", stmt_ok)
    report.check(
        host,
        "ledger: source_observed (UserPromptSubmit hook on the linked session)",
        "source_observed" in types,
    )
    report.check(
        host,
        "ledger: result_signal_observed (Stop hook on the linked session)",
        "result_signal_observed" in types,
    )


def pad_unvouched(data_root: Path, root: Path) -> int:
    """Grow the project's ledger past the hook's background threshold (``hookops.SLOW_READ_BYTES``) with events of a
    task of its own, through the store, then remove the checkpoint, as an upgrade or another program's append leaves
    it; returns how many UserPromptSubmit observations the ledger holds."""
    from intentloop.model import EventDraft, new_uuid
    from intentloop.service.hookops import SLOW_READ_BYTES
    from intentloop.store import ProjectStore

    store = ProjectStore(data_root, project_id(root))
    pad = 64 * 1024
    other = new_uuid()
    drafts = [EventDraft(event_type="task_started", task_id=other, actor="user", request_id="e2e-pad", payload={})]
    drafts += [
        EventDraft(
            event_type="claim_added", task_id=other, actor="agent", request_id=f"e2e-pad-{i}", payload={"p": "x" * pad}
        )
        for i in range(SLOW_READ_BYTES // pad + 1)
    ]
    with store.locked() as ledger:
        ledger.append(drafts)
    unvouch(data_root, root)
    return ledger_labels(ledger_events(data_root, root)).count("UserPromptSubmit")


def unvouch(data_root: Path, root: Path) -> None:
    """Remove the project's checkpoint: nothing vouches for the ledger until a writer verifies it again (a writer that
    enters the lock cold, such as :func:`holding_lock`'s, rebuilds it, so this runs again once that one holds it)."""
    from intentloop.store import CHECKPOINT_NAME

    (data_root / "projects" / project_id(root) / CHECKPOINT_NAME).unlink(missing_ok=True)


_HOLDER = """
import sys
from intentloop.store import ProjectStore
with ProjectStore(sys.argv[1], sys.argv[2]).locked():
    print("locked", flush=True)
    sys.stdin.read()
"""


@contextmanager
def holding_lock(data_root: Path, root: Path) -> Iterator[None]:
    """Hold the project's ledger lock in another process while the body runs (then release it): a hook that waited
    for the lock before answering would give up at its deadline and leave its observation to the spool."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_root), project_id(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n", "the lock holder did not start"
        yield
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        try:
            holder.wait(timeout=30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()


def background_checks(report: Report, host: str, data_root: Path, root: Path, prompts_before: int) -> None:
    """After a turn on a ledger padded by :func:`pad_unvouched`, run while :func:`holding_lock` held the lock: its
    prompt was recorded by the hook's background child once the lock was free (the host had long exited), and the
    checkpoint vouches for the file again. A hook that read and waited before answering would have spooled the
    observation, and with no later writer it would not be in the ledger."""
    checkpoint = data_root / "projects" / project_id(root) / "ledger.checkpoint.json"
    deadline = time.monotonic() + 60
    prompts = prompts_before
    while time.monotonic() < deadline:
        prompts = ledger_labels(ledger_events(data_root, root)).count("UserPromptSubmit")
        if prompts > prompts_before and checkpoint.exists():
            break
        time.sleep(0.1)
    report.check(
        host,
        "turn on a ledger past 16 MiB that no checkpoint vouched for: the prompt recorded in the background, the "
        "checkpoint back",
        prompts == prompts_before + 1 and checkpoint.exists(),
        f"UserPromptSubmit observations {prompts_before} -> {prompts}, checkpoint {checkpoint.exists()}",
    )


def background_turn(
    report: Report,
    host: str,
    label: str,
    argv: Sequence[str],
    *,
    intentloop: str,
    data_root: Path,
    root: Path,
    env: Mapping[str, str],
    log_dir: Path,
) -> None:
    """One more turn (``argv``, a resumed session) on the ledger padded by :func:`pad_unvouched`, with the lock held
    by another process until the host has exited; then :func:`background_checks` and ``verify``."""
    prompts = pad_unvouched(data_root, root)
    with holding_lock(data_root, root):
        unvouch(data_root, root)  # the holder's cold entry verified the ledger and wrote a checkpoint again
        res = run(
            report, host, f"{label} (large unvouched ledger, lock held)", argv, env=env, cwd=root, log_dir=log_dir
        )
    report.check(host, f"{label}: exit 0", res.rc == 0, f"rc={res.rc}")
    background_checks(report, host, data_root, root, prompts)
    verify(report, host, intentloop, data_root, root, log_dir, env)


NETNS_MARK = "INTENTLOOP_E2E_IN_NETNS"


#: What starts a linked task's context in a hook's answer (``intentloop.model.linked_task_context``).
LINKED_MARK = "[Intent Loop linked task_id="


def unchanged_turn_check(report: Report, host: str, ran: Run, turn2: str, turn3: str) -> None:
    """A third turn of the same session, nothing changed since turn 2: SessionStart (resume) injects the task's
    context again, the prompt hook does not (docs/HOOKS.md, "Once per session"). Each request carries the whole
    conversation, so turn 3 holds turn 2's copies plus at most SessionStart's one; a prompt hook that injected again
    would add a second."""
    two, three = turn2.count(LINKED_MARK), turn3.count(LINKED_MARK)
    report.check(
        host,
        "turn 3 (nothing changed): the prompt hook does not inject the linked-task context again",
        ran.rc == 0 and two >= 1 and three <= two + 1,
        f"rc={ran.rc}; copies in the request: turn 2 {two}, turn 3 {three}",
    )


def enter_netns(script: str) -> None:
    """Re-run ``script`` (the caller's ``__file__``) under ``unshare -n`` (``-rn`` when not root) with loopback up, so
    the hosts can reach nothing but the scripted model on 127.0.0.1; returns at once when already inside."""
    if os.environ.get(NETNS_MARK) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    flags = "-n" if os.geteuid() == 0 else "-rn"
    argv = ["unshare", flags, "--", sys.executable, str(Path(script).resolve()), *sys.argv[1:]]
    os.execvpe("unshare", argv, dict(os.environ, **{NETNS_MARK: "1"}))
