"""End-to-end: a user's ``/intent`` command typed into Codex CLI and Claude Code is recorded by the prompt hook alone.

For each host, configured by ``intentloop install`` exactly as in ``run_hosts.py`` (same scripted model, same
offline network namespace), one headless prompt per command form is sent — ``/intent remember …`` and
``$intent remember …`` — while the scripted model calls no tool at all (it answers every prompt that lacks the
``E2E-`` marker with plain text). Checks, per form: the host exits 0; the claim is on disk (``claim_added``, the
facet from the prefix, a ``user_event`` source carrying the host's own turn/prompt id); the hook's receipt
``[Intent Loop receipt IL-…]`` with the stored statement reached the model's request; no tool call was made; and
``intentloop verify`` finds the chain intact. A statement holding a credential is stored redacted and the raw value
appears in no stored file. Then one host session, resumed turn by turn, runs every command — remember, show,
correct, feedback, forget last, off (a remember is then refused), on, private (refused) — each checked on disk and
in the model's context, still without a tool call. ``intentloop install claude`` installs the bundled skill as a
Claude Code user skill, so ``/intent`` reaches the hook there too; its ``--uninstall`` removes the skill again.

Entry points: :func:`run_codex_commands` and :func:`run_claude_commands` take the ``Report`` of ``e2e_common`` and a
fresh base folder, like ``run_codex``/``run_claude``; ``run_hosts.py`` runs them as its ``commands`` route::

    npm ci --prefix tools/e2e && python tools/e2e/run_hosts.py --routes commands

``EXPECTED_FORMS`` records which written forms reach the hook in each host's headless mode; a form outside it is
still tried and reported as a note, so a host release that changes its handling shows up in the output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e_common import Report, base_env, json_lines, ledger_events, run, verify
from fake_model import FakeModel

#: The written forms that must reach the prompt hook, per host (headless: ``codex exec``, ``claude -p``).
#: Claude Code answers an unknown slash command itself ("Unknown command: /intent") and never runs the prompt hook:
#: ``/intent`` reaches the hook there because ``intentloop install claude`` installs the skill named ``intent``.
EXPECTED_FORMS: dict[str, tuple[str, ...]] = {"codex": ("/intent", "$intent"), "claude": ("/intent", "$intent")}
FORMS = ("/intent", "$intent")
STATEMENTS = {"/intent": "Never deploy on a Friday.", "$intent": "Prefer small, reviewable commits."}
FACETS = {"/intent": ("constraint", "hard_constraint"), "$intent": ("preference", "soft_constraint")}
SECRET = "sk-proj-" + "Ee2Tq8xW3vR7tY2uI9oP4aS6dF1gH5jK"
SECRET_STATEMENT = f"Deploy only from CI with key {SECRET} there."
RECEIPT = "[Intent Loop receipt IL-"


def _claims(data: Path, project: Path) -> list[dict[str, Any]]:
    return [
        e["payload"]["claim"]
        for e in ledger_events(data, project)
        if e.get("event_type") == "claim_added" and isinstance(e.get("payload", {}).get("claim"), dict)
    ]


def _stored_files_hold(data: Path, needle: str) -> list[str]:
    hits = []
    for path in sorted(data.rglob("*")):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path.relative_to(data)))
    return hits


def _check_form(
    report: Report,
    host: str,
    form: str,
    send: Callable[[str], tuple[int, list[dict[str, Any]]]],
    model: FakeModel,
    data: Path,
    project: Path,
) -> None:
    """One ``<form> remember <prefix>: <statement>`` prompt; the hook alone must record it and answer a receipt."""
    prefix, facet = FACETS[form]
    statement = STATEMENTS[form]
    before = len(model.requests())
    rc, events = send(f"{form} remember {prefix}: {statement}")
    requests = model.requests()[before:]
    model_text = "\n".join(str(r.get("text", "")) for r in requests)
    calls = [r for r in requests if r.get("decision") == "call"]
    tool_events = [e for e in events if _is_tool_event(e)]
    stored = [c for c in _claims(data, project) if c.get("statement") == statement]
    source = stored[0].get("source_ref", {}) if stored else {}
    reached = bool(stored) and RECEIPT in model_text
    expected = form in EXPECTED_FORMS[host]
    name = f"'{form} remember' reaches the prompt hook: claim on disk, receipt in the model's context"
    if expected:
        report.check(host, f"{name} (host exit 0)", rc == 0 and reached, f"rc={rc}, {len(stored)} claim(s)")
        report.check(
            host,
            f"'{form}': claim is user-explicit, facet {facet}, user_event source with the host's turn id",
            bool(stored)
            and stored[0].get("role") == "user"
            and stored[0].get("epistemic_status") == "explicit"
            and stored[0].get("facets") == [facet]
            and source.get("kind") == "user_event"
            and bool(source.get("event_id")),
            json.dumps(source),
        )
        report.check(
            host,
            f"'{form}': the receipt carries the stored statement",
            any(RECEIPT in t and statement in t for t in model_text.split("\n")),
        )
    else:
        report.note(host, f"{name}: {'yes' if reached else 'no'} (not among this host's documented forms)")
    report.check(
        host,
        f"'{form}': the scripted model called no tool",
        not calls and not tool_events,
        f"{len(requests)} model request(s), {len(calls)} tool call(s)",
    )


def _is_tool_event(event: dict[str, Any]) -> bool:
    item = event.get("item") or {}
    if item.get("type") in ("mcp_tool_call", "function_call", "command_execution"):
        return True
    content = (event.get("message") or {}).get("content")
    return any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content or [] if isinstance(content, list))


def _check_secret(
    report: Report,
    host: str,
    send: Callable[[str], tuple[int, list[dict[str, Any]]]],
    model: FakeModel,
    data: Path,
    project: Path,
) -> None:
    before = len(model.requests())
    form = EXPECTED_FORMS[host][0]
    rc, _events = send(f"{form} remember {SECRET_STATEMENT}")
    model_text = "\n".join(str(r.get("text", "")) for r in model.requests()[before:])
    stored = [c for c in _claims(data, project) if "Deploy only from CI" in str(c.get("statement"))]
    redacted = bool(stored) and SECRET not in stored[0]["statement"] and "[REDACTED:" in stored[0]["statement"]
    report.check(host, "a credential in the statement is stored redacted", rc == 0 and redacted)
    report.check(host, "the raw credential is in no stored file", not _stored_files_hold(data, SECRET))
    report.check(
        host,
        "the receipt shows the redacted statement, not the credential",
        bool(stored) and stored[0]["statement"] in model_text and f"{RECEIPT}" in model_text,
    )


def _events(data: Path, project: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in ledger_events(data, project) if e.get("event_type") == kind]


def _session_of(events: list[dict[str, Any]]) -> str | None:
    """The host's session: Codex's ``thread.started`` thread id, Claude Code's ``init`` session id."""
    for event in events:
        if event.get("type") == "thread.started":
            return str(event.get("thread_id"))
        if event.get("type") == "system" and event.get("subtype") == "init":
            return str(event.get("session_id"))
    return None


Send = Callable[..., tuple[int, list[dict[str, Any]]]]


def _check_every_command(report: Report, host: str, send: Send, model: FakeModel, data: Path, project: Path) -> None:
    """remember, show, correct, feedback, forget, off, on and private in one host session (resumed turn by turn),
    each answered by the hook alone: the session's task is the one the first command started."""
    form = EXPECTED_FORMS[host][0]
    session: list[str | None] = [None]

    def turn(command: str) -> tuple[int, str, int]:
        before = len(model.requests())
        rc, events = send(f"{form} {command}", resume=session[0])
        session[0] = session[0] or _session_of(events)
        requests = model.requests()[before:]
        calls = sum(r.get("decision") == "call" for r in requests) + sum(map(_is_tool_event, events))
        return rc, "\n".join(str(r.get("text", "")) for r in requests), calls

    statement = "Rotate the staging keys every month."
    rc, text, calls = turn(f"remember constraint: {statement}")
    target = next((c for c in _claims(data, project) if c.get("statement") == statement), {"claim_id": "?"})
    report.check(host, "one session: remember", rc == 0 and not calls and session[0] is not None and RECEIPT in text)
    prefix = str(target["claim_id"])[:8]
    rc, text, calls = turn("show")
    report.check(
        host,
        f"'{form} show' (resumed session): the receipt lists the claim by its id prefix",
        rc == 0 and not calls and RECEIPT in text and f"- {prefix} [task; hard_constraint] {statement}" in text,
    )
    rc, text, calls = turn(f"correct {prefix} => Rotate the staging keys every week.")
    replaced = [
        e
        for e in _events(data, project, "claim_replaced")
        if e["payload"]["claim"].get("supersedes") == [target["claim_id"]]
    ]
    report.check(
        host,
        f"'{form} correct': an explicit replacement on disk, receipt in context, no tool call",
        rc == 0 and not calls and RECEIPT in text and len(replaced) == 1,
    )
    rc, text, calls = turn("feedback implementation_change: the deploy script is too slow")
    evidence = [c for c in _claims(data, project) if c.get("result_feedback_class") == "implementation_change"]
    report.check(
        host, f"'{form} feedback': result evidence with its class on disk", rc == 0 and not calls and bool(evidence)
    )
    newest = replaced[0]["payload"]["claim"]["claim_id"] if replaced else None
    rc, text, calls = turn("forget last")
    gone = newest is not None and all(newest not in json.dumps(e) for e in ledger_events(data, project))
    report.check(
        host,
        f"'{form} forget last': the replacement (the newest explicit claim) is gone from the ledger",
        rc == 0 and not calls and RECEIPT in text and gone,
    )
    rc, text, calls = turn("off")
    modes = [e["payload"].get("mode") for e in _events(data, project, "mode_set")]
    report.check(host, f"'{form} off': the task is off", rc == 0 and not calls and modes[-1:] == ["off"])
    rc, text, calls = turn("remember This must not be recorded.")
    report.check(
        host,
        f"'{form} remember' while off: not recorded, and the model is told so",
        rc == 0
        and not calls
        and "[Intent Loop: not recorded — Intent Loop is off for this task" in text
        and not any(c.get("statement") == "This must not be recorded." for c in _claims(data, project)),
    )
    rc, text, calls = turn("on")
    modes = [e["payload"].get("mode") for e in _events(data, project, "mode_set")]
    report.check(host, f"'{form} on': the task is on again", rc == 0 and not calls and modes[-1:] == ["on"])
    semantic = ("task_started", "mode_set", "claim_added", "claim_replaced", "claim_invalidated")
    before = [e for e in ledger_events(data, project) if e.get("event_type") in semantic]
    rc, text, calls = turn("private")
    after = [e for e in ledger_events(data, project) if e.get("event_type") in semantic]
    report.check(
        host,
        f"'{form} private': refused with the way through the tools, nothing semantic stored",
        rc == 0
        and not calls
        and "[Intent Loop: not recorded — private mode cannot be turned on" in text
        and "intent_set_mode" in text
        and after == before,
    )


def run_codex_commands(report: Report, base: Path, codex: str, intentloop: str) -> None:
    """Codex CLI (``codex exec``): install, trust the hooks as ``/hooks`` would, send the command prompts."""
    from codex_host import trust_hooks, write_scripted_config

    host = "codex"
    home, project, logs = base / "home", base / "project", base / "logs"
    data = home / ".local" / "share" / "intentloop" / "v1"  # the per-user default root the installer pins
    codex_home = home / ".codex"
    for d in (codex_home, project, logs, base / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    with FakeModel(logs / "model-requests.jsonl") as model:
        write_scripted_config(codex_home, model.port)
        env = base_env(home, {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": "dummy"})
        inst = run(
            report,
            host,
            "intentloop install codex",
            [intentloop, "install", "codex"],
            env=env,
            log_dir=logs,
        )
        report.check(host, "install: exit 0", inst.rc == 0, f"rc={inst.rc}")
        trust_hooks(report, host, codex, env, project, intentloop)
        common = ["--json", "--skip-git-repo-check", "--disable", "plugins", "-C", str(project)]
        counter = iter(range(1, 100))

        def send(prompt: str, resume: str | None = None) -> tuple[int, list[dict[str, Any]]]:
            argv = (
                [codex, "exec", *common, prompt]
                if resume is None
                else [codex, "exec", "resume", *common[:-2], resume, prompt]
            )
            res = run(report, host, f"codex exec #{next(counter)}", argv, env=env, cwd=project, log_dir=logs)
            return res.rc, json_lines(res.stdout)

        for form in FORMS:
            _check_form(report, host, form, send, model, data, project)
        _check_secret(report, host, send, model, data, project)
        _check_every_command(report, host, send, model, data, project)
    verify(report, host, intentloop, data, project, logs, env)


def run_claude_commands(report: Report, base: Path, claude: str, intentloop: str) -> None:
    """Claude Code (``claude -p``): install, send the command prompts."""
    from claude_host import scripted_env

    host = "claude"
    home, project, logs = base / "home", base / "project", base / "logs"
    data = home / ".local" / "share" / "intentloop" / "v1"  # the per-user default root the installer pins
    config_dir = home / ".claude"
    for d in (config_dir, project, logs, base / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    with FakeModel(logs / "model-requests.jsonl") as model:
        env = scripted_env(home, config_dir, model.port, MCP_CONNECTION_NONBLOCKING="0")
        inst = run(
            report,
            host,
            "intentloop install claude",
            [intentloop, "install", "claude"],
            env=env,
            log_dir=logs,
        )
        skill = config_dir / "skills" / "intent" / "SKILL.md"
        report.check(
            host, "install: exit 0, the intent skill in place", inst.rc == 0 and skill.is_file(), f"rc={inst.rc}"
        )
        counter = iter(range(1, 100))

        def send(prompt: str, resume: str | None = None) -> tuple[int, list[dict[str, Any]]]:
            argv = [claude, "-p", *(["--resume", resume] if resume else []), prompt]
            argv += ["--output-format", "stream-json", "--verbose"]
            res = run(report, host, f"claude -p #{next(counter)}", argv, env=env, cwd=project, log_dir=logs)
            return res.rc, json_lines(res.stdout)

        for form in FORMS:
            _check_form(report, host, form, send, model, data, project)
        _check_secret(report, host, send, model, data, project)
        _check_every_command(report, host, send, model, data, project)
    verify(report, host, intentloop, data, project, logs, env)
    gone = run(
        report,
        host,
        "intentloop install claude --uninstall",
        [intentloop, "install", "claude", "--uninstall"],
        env=env,
        log_dir=logs,
    )
    report.check(
        host,
        "uninstall: exit 0, the intent skill and its folders gone",
        gone.rc == 0 and not (config_dir / "skills").exists(),
        f"rc={gone.rc}",
    )
