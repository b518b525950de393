"""Sharing across installations with the real hosts (docs/SYNC.md): a claim recorded from Codex on installation A
reaches Claude Code's SessionStart context on installation B after ``intentloop sync`` on both.

Two HOMEs (two data roots, each the per-user default ``intentloop install`` pins), two clones of one project
repository whose ``.intentloop/project.json`` (``intentloop share init``) is committed, one bare ``file://``
repository as the share remote, and both installations' keys trusted both ways with the same principal (the clones'
``git config user.email``). On A, Codex (installer route) records a project-scope explicit claim through the scripted
model; ``intentloop sync`` runs on A, then on B; on B, Claude Code (installer route) starts a session the model links
to a task of B's own (no claim), and the resumed turn's SessionStart must inject A's claim: the checks read the
hook's answer in Claude Code's own stream-json output (its ``hook_response`` event), the request the model received
(as ``claude_host`` checks hook context), and B's ledger, which must hold no such claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_host import scripted_env
from codex_host import write_scripted_config
from e2e_common import LINKED_MARK, Report, base_env, json_lines, ledger_events, run
from fake_model import LINK_MARK, PROJECT_MARK, START_MARK, STATEMENT, FakeModel

HOST = "sync/codex-to-claude"
PRINCIPAL = "me@example.org"


def _json(stdout: str) -> dict[str, Any]:
    try:
        value = json.loads(stdout)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _git(report: Report, step: str, argv: list[str], env: dict[str, str], cwd: Path, logs: Path) -> bool:
    res = run(report, HOST, step, ["git", *argv], env=env, cwd=cwd, log_dir=logs)
    if res.rc != 0:
        report.check(HOST, f"{step}: exit 0", False, f"rc={res.rc} {res.stderr[-300:]}")
    return res.rc == 0


def _project(report: Report, base: Path, env: dict[str, str], intentloop: str, logs: Path) -> tuple[Path, Path]:
    """The project repository (``origin.git``) with the shared id committed, and its two clones (A's, B's)."""
    origin, a, b = base / "origin.git", base / "a" / "project", base / "b" / "project"
    for step, argv, cwd in (
        ("git init --bare origin", ["init", "-q", "--bare", str(origin)], base),
        ("git clone origin (A)", ["clone", "-q", str(origin), str(a)], base),
        ("git config user.email (A)", ["config", "user.email", PRINCIPAL], a),
    ):
        if not _git(report, step, argv, env, cwd, logs):
            return a, b
    init = run(report, HOST, "intentloop share init (A)", [intentloop, "share", "init", "--json"], env=env, cwd=a)
    report.check(
        HOST,
        "share init on A: exit 0, .intentloop/project.json written",
        init.rc == 0 and (a / ".intentloop" / "project.json").is_file(),
        f"rc={init.rc} {init.stderr[-300:]}",
    )
    for step, argv, cwd in (
        ("git add (A)", ["add", ".intentloop/project.json"], a),
        ("git commit (A)", ["-c", "user.name=me", "commit", "-qm", "intentloop: shared project id"], a),
        ("git push (A)", ["push", "-q", "origin", "HEAD"], a),
        ("git clone origin (B)", ["clone", "-q", str(origin), str(b)], base),
        ("git config user.email (B)", ["config", "user.email", PRINCIPAL], b),
    ):
        if not _git(report, step, argv, env, cwd, logs):
            break
    return a, b


def _pair(
    report: Report, intentloop: str, sides: list[tuple[str, dict[str, str], Path]], remote: Path
) -> dict[str, dict[str, Any]]:
    """``share remote`` on both sides, then each trusts the other's key with the principal its ``share keys`` names;
    returns each side's ``share keys`` answer."""
    keys = {}
    for name, env, clone in sides:
        set_remote = run(
            report,
            HOST,
            f"share remote ({name})",
            [intentloop, "share", "remote", f"file://{remote}"],
            env=env,
            cwd=clone,
        )
        shown = run(report, HOST, f"share keys ({name})", [intentloop, "share", "keys", "--json"], env=env, cwd=clone)
        keys[name] = _json(shown.stdout)
        report.check(
            HOST,
            f"share remote + share keys on {name}: exit 0, an ssh-ed25519 key, principal {PRINCIPAL}",
            set_remote.rc == 0
            and str(keys[name].get("public_key", "")).startswith("ssh-ed25519 ")
            and keys[name].get("principal") == PRINCIPAL,
            f"rc={set_remote.rc},{shown.rc} principal={keys[name].get('principal')}",
        )
    for name, env, clone in sides:
        other = keys["B" if name == "A" else "A"]
        argv = [intentloop, "share", "trust", str(other.get("public_key")), "--principal", str(other.get("principal"))]
        trusted = run(report, HOST, f"share trust ({name})", [*argv, "--json"], env=env, cwd=clone)
        report.check(
            HOST, f"share trust on {name}: exit 0", trusted.rc == 0, f"rc={trusted.rc} {trusted.stderr[-300:]}"
        )
    return keys


def run_sync(report: Report, base: Path, codex: str, claude: str, intentloop: str) -> None:
    logs = base / "logs"
    home_a, home_b = base / "a" / "home", base / "b" / "home"
    data_b = home_b / ".local" / "share" / "intentloop" / "v1"
    for d in (logs, base / "tmp", home_a / ".codex", home_b / ".claude"):
        d.mkdir(parents=True, exist_ok=True)
    remote = base / "share.git"
    env_a = base_env(home_a, {"CODEX_HOME": str(home_a / ".codex"), "FAKE_MODEL_KEY": "dummy"})
    clone_a, clone_b = _project(report, base, env_a, intentloop, logs)
    if not _git(report, "git init --bare share remote", ["init", "-q", "--bare", str(remote)], env_a, base, logs):
        return
    with FakeModel(logs / "model-requests.jsonl") as model:
        write_scripted_config(home_a / ".codex", model.port, 60000)
        env_b = scripted_env(home_b, home_b / ".claude", model.port, MCP_CONNECTION_NONBLOCKING="0")
        keys = _pair(report, intentloop, [("A", env_a, clone_a), ("B", env_b, clone_b)], remote)
        # A: Codex, configured by the installer, records a project-scope explicit claim.
        inst = run(report, HOST, "intentloop install codex (A)", [intentloop, "install", "codex"], env=env_a)
        report.check(HOST, "install codex on A: exit 0", inst.rc == 0, f"rc={inst.rc}")
        common = ["--json", "--skip-git-repo-check", "--disable", "plugins", "-C", str(clone_a)]
        prompt = f"{START_MARK} {PROJECT_MARK} Remember this for the whole project: {STATEMENT}"
        first = run(
            report, HOST, "codex exec (A)", [codex, "exec", *common, prompt], env=env_a, cwd=clone_a, log_dir=logs
        )
        added = [
            (e.get("item") or {}).get("result")
            for e in json_lines(first.stdout)
            if (e.get("item") or {}).get("tool") == "intent_add_explicit" and e.get("type") == "item.completed"
        ]
        ok = bool(added) and ((added[0] or {}).get("structured_content") or {}).get("ok") is True
        report.check(
            HOST, "codex exec on A: exit 0, intent_add_explicit ok:true", first.rc == 0 and ok, f"rc={first.rc}"
        )
        # sync on A (pushes its stream), then on B (pulls and accepts it).
        sync_a = run(report, HOST, "intentloop sync (A)", [intentloop, "sync", "--json"], env=env_a, cwd=clone_a)
        pushed = _json(sync_a.stdout).get("own", {})
        report.check(
            HOST,
            "sync on A: exit 0, its stream pushed with the claim",
            sync_a.rc == 0 and pushed.get("pushed") is True and pushed.get("added", 0) >= 1,
            f"rc={sync_a.rc} own={pushed} {sync_a.stderr[-300:]}",
        )
        sync_b = run(report, HOST, "intentloop sync (B)", [intentloop, "sync", "--json"], env=env_b, cwd=clone_b)
        writers = {w.get("writer"): w.get("status") for w in _json(sync_b.stdout).get("writers", [])}
        report.check(
            HOST,
            "sync on B: exit 0, A's stream accepted",
            sync_b.rc == 0 and writers.get(keys["A"].get("key_id")) == "accepted",
            f"rc={sync_b.rc} writers={writers} {sync_b.stderr[-300:]}",
        )
        # B: Claude Code, configured by the installer; the model links the session to a task of B's own.
        inst = run(report, HOST, "intentloop install claude (B)", [intentloop, "install", "claude"], env=env_b)
        report.check(HOST, "install claude on B: exit 0", inst.rc == 0, f"rc={inst.rc}")
        tools = "mcp__intent_loop__intent_start_task"
        common = ["--output-format", "stream-json", "--verbose", "--allowedTools", tools]
        link = [claude, "-p", f"{LINK_MARK} start a task", *common]
        first_b = run(report, HOST, "claude -p (B, session 1)", link, env=env_b, cwd=clone_b, log_dir=logs)
        init = next((e for e in json_lines(first_b.stdout) if e.get("subtype") == "init"), {})
        session = init.get("session_id")
        report.check(
            HOST, "claude -p on B: exit 0, a session", first_b.rc == 0 and session is not None, f"rc={first_b.rc}"
        )
        before = len(model.requests())
        resume = [claude, "-p", "--resume", str(session), "E2E-SECOND what do you remember?", *common]
        second = run(report, HOST, "claude -p --resume (B, turn 2)", resume, env=env_b, cwd=clone_b, log_dir=logs)
        later = [r for r in model.requests()[before:] if tools in r.get("tools", [])]
        text = later[0].get("text", "") if later else ""
        # the last SessionStart context in the conversation is the resumed session's (the first, session 1's start)
        sent = text.rsplit("SessionStart hook additional context:", 1)[-1].split("hook additional context:", 1)[0]
        hook = _session_start_context(second.stdout)
        claims_b = [e for e in ledger_events(data_b, clone_b) if e.get("event_type") == "claim_added"]
        report.check(
            HOST,
            "turn 2 on B: Claude Code's SessionStart hook answered B's linked task with A's claim, which B's ledger "
            "never held",
            second.rc == 0 and hook.startswith(LINKED_MARK) and STATEMENT in hook and not claims_b,
            f"rc={second.rc} hook context: {hook[:300]!r}; B's claims: {len(claims_b)}",
        )
        report.check(
            HOST,
            "turn 2 on B: the request the model received carries that SessionStart context",
            LINKED_MARK in sent and STATEMENT in sent,
            f"{len(later)} request(s)",
        )


def _session_start_context(stdout: str) -> str:
    """The ``additionalContext`` of the SessionStart hook's answer, as Claude Code reports it in its stream-json
    output (``hook_response``); empty when there is none."""
    for event in json_lines(stdout):
        if event.get("subtype") == "hook_response" and event.get("hook_event") == "SessionStart":
            answer = _json(str(event.get("output", "")))
            return str((answer.get("hookSpecificOutput") or {}).get("additionalContext", ""))
    return ""
