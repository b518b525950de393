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

The set-up up to B's sync (:func:`codex_claim_synced`) and B's two Claude Code turns (:func:`claude_linked_then`)
are shared with the team scenario (``team_hosts.py``), which runs them with two principals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_host import scripted_env
from codex_host import write_scripted_config
from e2e_common import LINKED_MARK, Report, Run, base_env, json_lines, ledger_events, run
from fake_model import LINK_MARK, PROJECT_MARK, START_MARK, STATEMENT, FakeModel

HOST = "sync/codex-to-claude"
PRINCIPAL = "me@example.org"
#: How Claude Code names the tools of the user-scope server ``intentloop install claude`` writes.
CLAUDE_PREFIX = "mcp__intent_loop__"


@dataclass
class Members:
    """Two installations sharing one project: A (Codex) and B (Claude Code), after A's claim reached B's view."""

    env_a: dict[str, str]
    env_b: dict[str, str]
    clone_a: Path
    clone_b: Path
    data_b: Path
    keys: dict[str, dict[str, Any]]  # "A" / "B" -> that side's ``share keys --json`` answer
    logs: Path
    intentloop: str


def as_json(stdout: str) -> dict[str, Any]:
    try:
        value = json.loads(stdout)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def git(report: Report, host: str, step: str, argv: list[str], env: dict[str, str], cwd: Path, logs: Path) -> bool:
    res = run(report, host, step, ["git", *argv], env=env, cwd=cwd, log_dir=logs)
    if res.rc != 0:
        report.check(host, f"{step}: exit 0", False, f"rc={res.rc} {res.stderr[-300:]}")
    return res.rc == 0


def _project(
    report: Report, host: str, base: Path, env: dict[str, str], intentloop: str, principals: tuple[str, str]
) -> tuple[Path, Path] | None:
    """The project repository (``origin.git``) with the shared id committed, and its two clones (A's, B's), each
    with its side's ``user.email``; ``None`` when a step failed."""
    origin, a, b = base / "origin.git", base / "a" / "project", base / "b" / "project"
    logs = base / "logs"
    steps: list[tuple[str, list[str], Path]] = [
        ("git init --bare origin", ["init", "-q", "--bare", str(origin)], base),
        ("git clone origin (A)", ["clone", "-q", str(origin), str(a)], base),
        ("git config user.email (A)", ["config", "user.email", principals[0]], a),
    ]
    if not all(git(report, host, step, argv, env, cwd, logs) for step, argv, cwd in steps):
        return None
    init = run(report, host, "intentloop share init (A)", [intentloop, "share", "init", "--json"], env=env, cwd=a)
    report.check(
        host,
        "share init on A: exit 0, .intentloop/project.json written",
        init.rc == 0 and (a / ".intentloop" / "project.json").is_file(),
        f"rc={init.rc} {init.stderr[-300:]}",
    )
    steps = [
        ("git add (A)", ["add", ".intentloop/project.json"], a),
        ("git commit (A)", ["-c", "user.name=A", "commit", "-qm", "intentloop: shared project id"], a),
        ("git push (A)", ["push", "-q", "origin", "HEAD"], a),
        ("git clone origin (B)", ["clone", "-q", str(origin), str(b)], base),
        ("git config user.email (B)", ["config", "user.email", principals[1]], b),
    ]
    if not all(git(report, host, step, argv, env, cwd, logs) for step, argv, cwd in steps):
        return None
    return a, b


def _keys(
    report: Report, host: str, intentloop: str, sides: list[tuple[str, dict[str, str], Path, str]], remote: Path
) -> dict[str, dict[str, Any]]:
    """``share remote`` on each side; returns each side's ``share keys`` answer, whose principal must be its
    clone's ``user.email``."""
    keys = {}
    for name, env, clone, principal in sides:
        set_remote = run(
            report,
            host,
            f"share remote ({name})",
            [intentloop, "share", "remote", f"file://{remote}"],
            env=env,
            cwd=clone,
        )
        shown = run(report, host, f"share keys ({name})", [intentloop, "share", "keys", "--json"], env=env, cwd=clone)
        keys[name] = as_json(shown.stdout)
        report.check(
            host,
            f"share remote + share keys on {name}: exit 0, an ssh-ed25519 key, principal {principal}",
            set_remote.rc == 0
            and str(keys[name].get("public_key", "")).startswith("ssh-ed25519 ")
            and keys[name].get("principal") == principal,
            f"rc={set_remote.rc},{shown.rc} principal={keys[name].get('principal')}",
        )
    return keys


def _trust(
    report: Report,
    host: str,
    intentloop: str,
    sides: list[tuple[str, dict[str, str], Path, str]],
    keys: dict[str, dict[str, Any]],
) -> None:
    """Each side trusts the other's key with the principal its ``share keys`` named (``share trust``)."""
    for name, env, clone, _principal in sides:
        other = keys["B" if name == "A" else "A"]
        argv = [intentloop, "share", "trust", str(other.get("public_key")), "--principal", str(other.get("principal"))]
        trusted = run(report, host, f"share trust ({name})", [*argv, "--json"], env=env, cwd=clone)
        report.check(
            host, f"share trust on {name}: exit 0", trusted.rc == 0, f"rc={trusted.rc} {trusted.stderr[-300:]}"
        )


def _allowed_signers(
    report: Report,
    host: str,
    sides: list[tuple[str, dict[str, str], Path, str]],
    keys: dict[str, dict[str, Any]],
    logs: Path,
) -> None:
    """A commits ``.intentloop/allowed_signers`` with both members' lines (as ``share keys`` printed them) and pushes
    it; B pulls it: the team's members are whom the repository lists, as a team sets it up (no ``share trust``)."""
    (_a, env_a, clone_a, _pa), (_b, _env_b, clone_b, _pb) = sides
    listed = "".join(f"{keys[name].get('allowed_signers')}\n" for name in ("A", "B"))
    (clone_a / ".intentloop" / "allowed_signers").write_text(f"# the team's intentloop writers\n{listed}")
    steps: list[tuple[str, list[str], dict[str, str], Path]] = [
        ("git add allowed_signers (A)", ["add", ".intentloop/allowed_signers"], env_a, clone_a),
        ("git commit allowed_signers (A)", ["-c", "user.name=A", "commit", "-qm", "intentloop: team"], env_a, clone_a),
        ("git push (A)", ["push", "-q", "origin", "HEAD"], env_a, clone_a),
        ("git pull (B)", ["pull", "-q", "--ff-only"], env_a, clone_b),
    ]
    ok = all(git(report, host, step, argv, env, cwd, logs) for step, argv, env, cwd in steps)
    report.check(
        host,
        "A commits .intentloop/allowed_signers listing both members' share keys lines; B pulls it",
        ok and (clone_b / ".intentloop" / "allowed_signers").read_text().count("namespaces=") == 2,
        f"lines: {listed!r}",
    )


def codex_claim_synced(
    report: Report,
    host: str,
    base: Path,
    model: FakeModel,
    codex: str,
    intentloop: str,
    principals: tuple[str, str],
    *,
    team_file: bool = False,
) -> Members | None:
    """Set up A and B (principals ``principals``; keys trusted both ways with ``share trust``, or with
    ``team_file`` listed in a committed ``.intentloop/allowed_signers``), let Codex on A record a project-scope
    explicit claim through the scripted model, then ``intentloop sync`` on A and on B, which must accept A's stream
    under A's principal; ``None`` when the set-up failed before the hosts ran."""
    logs = base / "logs"
    home_a, home_b = base / "a" / "home", base / "b" / "home"
    for d in (logs, base / "tmp", home_a / ".codex", home_b / ".claude"):
        d.mkdir(parents=True, exist_ok=True)
    remote = base / "share.git"
    env_a = base_env(home_a, {"CODEX_HOME": str(home_a / ".codex"), "FAKE_MODEL_KEY": "dummy"})
    clones = _project(report, host, base, env_a, intentloop, principals)
    if clones is None or not git(
        report, host, "git init --bare share remote", ["init", "-q", "--bare", str(remote)], env_a, base, logs
    ):
        return None
    clone_a, clone_b = clones
    write_scripted_config(home_a / ".codex", model.port, 60000)
    env_b = scripted_env(home_b, home_b / ".claude", model.port, MCP_CONNECTION_NONBLOCKING="0")
    sides = [("A", env_a, clone_a, principals[0]), ("B", env_b, clone_b, principals[1])]
    keys = _keys(report, host, intentloop, sides, remote)
    if team_file:
        _allowed_signers(report, host, sides, keys, logs)
    else:
        _trust(report, host, intentloop, sides, keys)
    # A: Codex, configured by the installer, records a project-scope explicit claim.
    inst = run(report, host, "intentloop install codex (A)", [intentloop, "install", "codex"], env=env_a)
    report.check(host, "install codex on A: exit 0", inst.rc == 0, f"rc={inst.rc}")
    common = ["--json", "--skip-git-repo-check", "--disable", "plugins", "-C", str(clone_a)]
    prompt = f"{START_MARK} {PROJECT_MARK} Remember this for the whole project: {STATEMENT}"
    first = run(report, host, "codex exec (A)", [codex, "exec", *common, prompt], env=env_a, cwd=clone_a, log_dir=logs)
    added = [
        (e.get("item") or {}).get("result")
        for e in json_lines(first.stdout)
        if (e.get("item") or {}).get("tool") == "intent_add_explicit" and e.get("type") == "item.completed"
    ]
    ok = bool(added) and ((added[0] or {}).get("structured_content") or {}).get("ok") is True
    report.check(host, "codex exec on A: exit 0, intent_add_explicit ok:true", first.rc == 0 and ok, f"rc={first.rc}")
    # sync on A (pushes its stream), then on B (pulls and accepts it).
    sync_a = run(report, host, "intentloop sync (A)", [intentloop, "sync", "--json"], env=env_a, cwd=clone_a)
    pushed = as_json(sync_a.stdout).get("own", {})
    report.check(
        host,
        "sync on A: exit 0, its stream pushed with the claim",
        sync_a.rc == 0 and pushed.get("pushed") is True and pushed.get("added", 0) >= 1,
        f"rc={sync_a.rc} own={pushed} {sync_a.stderr[-300:]}",
    )
    sync_b = run(report, host, "intentloop sync (B)", [intentloop, "sync", "--json"], env=env_b, cwd=clone_b)
    writers = {w.get("writer"): w for w in as_json(sync_b.stdout).get("writers", [])}
    seen = writers.get(keys["A"].get("key_id"), {})
    report.check(
        host,
        f"sync on B: exit 0, A's stream accepted as {principals[0]}'s",
        sync_b.rc == 0 and seen.get("status") == "accepted" and seen.get("principal") == principals[0],
        f"rc={sync_b.rc} writers={list(writers.values())} {sync_b.stderr[-300:]}",
    )
    data_b = home_b / ".local" / "share" / "intentloop" / "v1"
    return Members(env_a, env_b, clone_a, clone_b, data_b, keys, logs, intentloop)


def claude_linked_then(
    report: Report, host: str, claude: str, members: Members, model: FakeModel, prompt: str, tools: list[str]
) -> tuple[list[Run], list[dict[str, Any]]]:
    """On B, Claude Code configured by the installer: session 1, in which the model links the session to a task of
    B's own, then a resumed turn with ``prompt`` (``tools``, our short tool names, allowed); returns both runs and
    the requests with our tools the model received during the resumed turn."""
    env, clone, logs = members.env_b, members.clone_b, members.logs
    inst = run(report, host, "intentloop install claude (B)", [members.intentloop, "install", "claude"], env=env)
    report.check(host, "install claude on B: exit 0", inst.rc == 0, f"rc={inst.rc}")
    allowed = ",".join(f"{CLAUDE_PREFIX}{t}" for t in tools)
    common = ["--output-format", "stream-json", "--verbose", "--allowedTools", allowed]
    link = [claude, "-p", f"{LINK_MARK} start a task", *common]
    first = run(report, host, "claude -p (B, session 1)", link, env=env, cwd=clone, log_dir=logs)
    init = next((e for e in json_lines(first.stdout) if e.get("subtype") == "init"), {})
    session = init.get("session_id")
    report.check(host, "claude -p on B: exit 0, a session", first.rc == 0 and session is not None, f"rc={first.rc}")
    before = len(model.requests())
    resume = [claude, "-p", "--resume", str(session), prompt, *common]
    second = run(report, host, "claude -p --resume (B, turn 2)", resume, env=env, cwd=clone, log_dir=logs)
    ours = f"{CLAUDE_PREFIX}intent_start_task"
    return [first, second], [r for r in model.requests()[before:] if ours in r.get("tools", [])]


def run_sync(report: Report, base: Path, codex: str, claude: str, intentloop: str) -> None:
    (base / "logs").mkdir(parents=True, exist_ok=True)
    with FakeModel(base / "logs" / "model-requests.jsonl") as model:
        members = codex_claim_synced(report, HOST, base, model, codex, intentloop, (PRINCIPAL, PRINCIPAL))
        if members is None:
            return
        runs, later = claude_linked_then(
            report, HOST, claude, members, model, "E2E-SECOND what do you remember?", ["intent_start_task"]
        )
        second = runs[1]
        text = later[0].get("text", "") if later else ""
        # the last SessionStart context in the conversation is the resumed session's (the first, session 1's start)
        sent = text.rsplit("SessionStart hook additional context:", 1)[-1].split("hook additional context:", 1)[0]
        hook = session_start_context(second.stdout)
        claims_b = [e for e in ledger_events(members.data_b, members.clone_b) if e.get("event_type") == "claim_added"]
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


def hook_contexts(stdout: str) -> list[tuple[str, str]]:
    """Every hook answer's ``additionalContext`` Claude Code reports in its stream-json output (``hook_response``),
    as ``(hook event, context)`` in order; a hook that injected nothing gives ``""``."""
    found = []
    for event in json_lines(stdout):
        if event.get("subtype") == "hook_response":
            answer = as_json(str(event.get("output", "")))
            context = str((answer.get("hookSpecificOutput") or {}).get("additionalContext", ""))
            found.append((str(event.get("hook_event")), context))
    return found


def session_start_context(stdout: str) -> str:
    """The ``additionalContext`` of the SessionStart hook's answer; empty when there is none."""
    return next((context for event, context in hook_contexts(stdout) if event == "SessionStart"), "")
