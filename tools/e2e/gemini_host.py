"""Gemini CLI against the scripted Gemini API, configured by ``intentloop install gemini`` (route "installer": the
server and the hooks in ``~/.gemini/settings.json``; "commands": which written forms of a user's command reach the
prompt hook) or with this repository's ``gemini-extension/`` linked as a Gemini extension (route "plugin": ``gemini
extensions link``; ``intentloop`` from ``PATH``, the data root from the user's ``XDG_DATA_HOME``).

Offline as Gemini CLI 0.61 allows it: ``GEMINI_API_KEY`` set to anything, ``GOOGLE_GEMINI_BASE_URL`` on 127.0.0.1 (plain
http is accepted there), ``security.auth.selectedType: "gemini-api-key"`` in the user's settings (without it the base
URL selects an auth type that ``-p`` refuses) and a trusted folder (``GEMINI_CLI_TRUST_WORKSPACE=true``). No
``project_root`` unless asked (Gemini's MCP client advertises ``roots``), no data-root variable. Headless mode
offers a tool that needs confirmation only when it is allowed, so the run allows our three tools as a user approving
them would (``--allowed-tools``).

Every hook call is read from Gemini's own account of it: its local telemetry file (``telemetry.target: "local"``,
with ``logPrompts`` so that each call's stdout is in it), which records each hook's event, exit code, duration and
stdout.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from e2e_common import (
    Report,
    background_turn,
    base_env,
    json_lines,
    ledger_checks,
    ledger_events,
    ledger_labels,
    run,
    verify,
)
from fake_model import GEMINI_PREFIX, STATEMENT, FakeModel

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("intent_start_task", "intent_add_explicit", "intent_get_snapshot")
#: The Gemini events the installer wires, and the timeout it gives each (milliseconds).
EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd")
TIMEOUT_MS = 3000
#: Which written forms of a user's command reach Gemini's BeforeAgent hook in headless mode (measured: ``run_gemini``
#: tries both and reports a form outside this tuple as a note, so a release that changes it shows up).
EXPECTED_FORMS = ("/intent", "$intent")
RECEIPT = "[Intent Loop receipt IL-"


def _telemetry(path: Path) -> list[dict[str, Any]]:
    """The hook calls in Gemini's local telemetry file (concatenated, pretty-printed JSON records)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    calls: list[dict[str, Any]] = []
    at = 0
    while at < len(text):
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        try:
            record, at = decoder.raw_decode(text, at)
        except ValueError:
            break
        attributes = record.get("attributes") if isinstance(record, dict) else None
        if isinstance(attributes, dict) and attributes.get("event.name") == "gemini_cli.hook_call":
            calls.append(attributes)
    return calls


def _tool_results(events: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Short tool name -> (its ``tool_use`` event, its ``tool_result`` event) in a stream-json transcript."""
    uses = {str(e.get("tool_id")): e for e in events if e.get("type") == "tool_use"}
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for result in (e for e in events if e.get("type") == "tool_result"):
        use = uses.get(str(result.get("tool_id")), {})
        out[str(use.get("tool_name", "?")).removeprefix(GEMINI_PREFIX)] = (use, result)
    return out


def _output(result: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(str(result.get("output")))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _stored_files_hold(data: Path, needle: str) -> list[str]:
    files = (path for path in sorted(data.rglob("*")) if path.is_file())
    return [str(path.relative_to(data)) for path in files if needle.encode() in path.read_bytes()]


def run_gemini(report: Report, base: Path, gemini: str, intentloop: str, route: str, pass_root: bool) -> None:
    host = f"gemini/{route}"
    home, project, logs = base / "home", base / "project", base / "logs"
    # Nobody names the data root: the installer pins the per-user default under HOME; in the extension route the
    # user's XDG_DATA_HOME reaches the server and the hooks through Gemini's environment.
    xdg = base / "xdg"
    data = xdg / "intentloop" / "v1" if route == "plugin" else home / ".local" / "share" / "intentloop" / "v1"
    gemini_dir = home / ".gemini"
    telemetry = logs / "telemetry.json"
    bindir = base / "bin"
    for d in (gemini_dir, project, logs, base / "tmp", bindir):
        d.mkdir(parents=True, exist_ok=True)
    os.symlink(intentloop, bindir / "intentloop")  # the extension starts `intentloop` from PATH
    with FakeModel(logs / "model-requests.jsonl", str(project) if pass_root else None) as model:
        # The user's own settings before intentloop: the API-key auth type and Gemini's local telemetry.
        user_settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "telemetry": {"enabled": True, "target": "local", "outfile": str(telemetry), "logPrompts": True},
        }
        settings_path = gemini_dir / "settings.json"
        settings_path.write_text(json.dumps(user_settings, indent=2) + "\n", encoding="utf-8")
        before_install = settings_path.read_bytes()
        env = base_env(
            home,
            {
                "GEMINI_API_KEY": "e2e-dummy",
                "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{model.port}",
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            },
        )
        env["PATH"] = f"{bindir}:{env['PATH']}"
        if route == "plugin":
            env["XDG_DATA_HOME"] = str(xdg)
            _link_extension(report, host, gemini, env, logs)
        else:
            _install(report, host, intentloop, env, settings_path, data, user_settings, logs)
        common = ["-o", "stream-json", "--allowed-tools", ",".join(GEMINI_PREFIX + t for t in TOOLS)]
        if route == "commands":
            _commands(report, host, gemini, common, env, model, data, project, logs)
        else:
            _two_turns(report, host, gemini, intentloop, route, common, env, model, data, project, logs, telemetry)
        verify(report, host, intentloop, data, project, logs, env)
        if route == "plugin":
            return
        res = run(
            report,
            host,
            "intentloop install gemini --uninstall",
            [intentloop, "install", "gemini", "--uninstall"],
            env=env,
            log_dir=logs,
        )
        report.check(
            host,
            "uninstall: exit 0, settings.json back to the user's own bytes, no backup left",
            res.rc == 0
            and settings_path.read_bytes() == before_install
            and not list(gemini_dir.glob("*.intentloop.bak")),
            f"rc={res.rc}",
        )


def _install(
    report: Report,
    host: str,
    intentloop: str,
    env: dict[str, str],
    settings_path: Path,
    data: Path,
    user_settings: dict[str, Any],
    logs: Path,
) -> None:
    inst = run(report, host, "intentloop install gemini", [intentloop, "install", "gemini"], env=env, log_dir=logs)
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    entry = settings.get("mcpServers", {}).get("intent_loop", {})
    handlers = [h for groups in settings.get("hooks", {}).values() for g in groups for h in g.get("hooks", [])]
    report.check(
        host,
        "install: exit 0, 4 hook events (timeout 3000 ms) and mcpServers.intent_loop pinning the data root in "
        "settings.json, the user's settings kept",
        inst.rc == 0
        and tuple(settings.get("hooks", {})) == EVENTS
        and all(h.get("timeout") == TIMEOUT_MS for h in handlers)
        and entry.get("env", {}).get("INTENT_LOOP_DATA_DIR") == str(data)
        and settings.get("security") == user_settings["security"],
        f"rc={inst.rc} hooks={list(settings.get('hooks', {}))}",
    )


def _link_extension(report: Report, host: str, gemini: str, env: dict[str, str], logs: Path) -> None:
    """``gemini extensions link <repo>/gemini-extension --consent``, then ``gemini extensions list`` names it."""
    res = run(
        report,
        host,
        "gemini extensions link",
        [gemini, "extensions", "link", str(REPO / "gemini-extension"), "--consent"],
        env=env,
        log_dir=logs,
    )
    listing = run(report, host, "gemini extensions list", [gemini, "extensions", "list"], env=env, log_dir=logs)
    report.check(
        host,
        "gemini extensions link: exit 0, intent-loop listed",
        res.rc == 0 and listing.rc == 0 and "intent-loop" in listing.stdout + listing.stderr,
        f"rc={res.rc}/{listing.rc} {(res.stdout + res.stderr)[-300:]!r}",
    )


def _two_turns(
    report: Report,
    host: str,
    gemini: str,
    intentloop: str,
    route: str,
    common: list[str],
    env: dict[str, str],
    model: FakeModel,
    data: Path,
    project: Path,
    logs: Path,
    telemetry: Path,
) -> None:
    """The scenario of the other hosts: a task started and a claim added, then a resumed turn that sees the claim in
    the hook context and reads the task with ``intent_get_snapshot``; in the installer route a third turn on a large
    ledger."""
    first = run(
        report,
        host,
        "gemini -p (session 1)",
        [gemini, "-p", f"E2E-START Remember this: {STATEMENT}", *common],
        env=env,
        cwd=project,
        log_dir=logs,
    )
    events = json_lines(first.stdout)
    session = next((str(e["session_id"]) for e in events if e.get("type") == "init"), None)
    report.check(
        host, "gemini -p session 1: exit 0, session started", first.rc == 0 and session is not None, f"rc={first.rc}"
    )
    main = [r for r in model.requests() if f"{GEMINI_PREFIX}intent_start_task" in r.get("tools", [])]
    first_req = main[0] if main else {}
    offered = [t for t in first_req.get("tools", []) if t.startswith(GEMINI_PREFIX)]
    report.check(
        host,
        "the first model request offers the intent_loop tools (mcp_intent_loop_<tool>)",
        {GEMINI_PREFIX + t for t in TOOLS} <= set(offered),
        f"{len(model.requests())} request(s), ours: {offered}",
    )
    report.check(
        host,
        "SessionStart hook context (association line with this session id) reached the model",
        f'host_session_id="{session}"' in first_req.get("text", ""),
    )
    results = _tool_results(events)
    start_use, start_result = results.get("intent_start_task", ({}, {}))
    start = _output(start_result)
    task_id = start.get("task_id")
    report.check(
        host,
        "intent_start_task via Gemini CLI: ok:true, with the session id hint"
        + ("" if "project_root" in start_use.get("parameters", {}) else " and without project_root (roots)"),
        start.get("ok") is True
        and task_id is not None
        and start_use.get("parameters", {}).get("host_session_id") == session,
        json.dumps(start_use.get("parameters")),
    )
    add = _output(results.get("intent_add_explicit", ({}, {}))[1])
    report.check(host, "intent_add_explicit via Gemini CLI: ok:true", add.get("ok") is True, json.dumps(add)[:300])
    token = secrets.token_hex(12)
    second_prompt = f"E2E-SECOND what do you remember? ({token})"
    before = len(model.requests())
    second = run(
        report,
        host,
        "gemini -p --resume (turn 2)",
        [gemini, "-p", second_prompt, "--resume", str(session), *common],
        env=env,
        cwd=project,
        log_dir=logs,
    )
    events2 = json_lines(second.stdout)
    report.check(host, "gemini -p --resume: exit 0", second.rc == 0, f"rc={second.rc}")
    later = [r for r in model.requests()[before:] if f"{GEMINI_PREFIX}intent_start_task" in r.get("tools", [])]
    text = later[0].get("text", "") if later else ""
    report.note(
        host,
        f"turn 2 request carries the linked-task context {text.count('[Intent Loop linked task_id=')}x "
        "(SessionStart on resume and/or BeforeAgent)",
    )
    report.check(
        host,
        "turn 2: hook context with the linked task and the explicit claim reached the model",
        f"[Intent Loop linked task_id={task_id}" in text and STATEMENT in text,
        f"{len(later)} request(s)",
    )
    snap_use, snap_result = _tool_results(events2).get("intent_get_snapshot", ({}, {}))
    snapshot = _output(snap_result)
    report.check(
        host,
        "turn 2: the model read the linked task with intent_get_snapshot (the claim in it)",
        snapshot.get("ok") is True
        and snap_use.get("parameters", {}).get("task_id") == task_id
        and STATEMENT in json.dumps(snapshot),
        json.dumps(snap_use.get("parameters")),
    )
    ledger_checks(report, host, ledger_events(data, project), task_id)
    hits = _stored_files_hold(data, token) + _stored_files_hold(data, "what do you remember")
    hits += _stored_files_hold(data, "E2E-SNAPSHOT")
    report.check(host, "nothing of turn 2's prompt, its token or the answer is in any stored file", not hits, f"{hits}")
    if route == "installer":  # one more turn, on a large ledger the checkpoint does not vouch for (docs/HOOKS.md)
        background_turn(
            report,
            host,
            "gemini -p --resume (turn 3)",
            [gemini, "-p", "E2E-THIRD carry on", "--resume", str(session), *common],
            intentloop=intentloop,
            data_root=data,
            root=project,
            env=env,
            log_dir=logs,
        )
    _hook_calls(report, host, telemetry)


def _hook_calls(report: Report, host: str, telemetry: Path) -> None:
    """Every hook call Gemini made: exit 0 inside the timeout, one JSON object with ``continue: true`` on stdout."""
    calls = _telemetry(telemetry)
    seen = sorted({str(c.get("hook_event_name")) for c in calls})
    bad = []
    for call in calls:
        try:
            answer = json.loads(str(call.get("stdout")))
        except ValueError:
            answer = None
        ok = (
            call.get("exit_code") == 0
            and call.get("success") is True
            and float(call.get("duration_ms", TIMEOUT_MS)) < TIMEOUT_MS
            and isinstance(answer, dict)
            and answer.get("continue") is True
            and str(call.get("stdout")).count("\n") == 1
        )
        if not ok:
            bad.append(f"{call.get('hook_event_name')} rc={call.get('exit_code')} {call.get('duration_ms')} ms")
    slowest = max((float(c.get("duration_ms", 0)) for c in calls), default=0.0)
    report.check(
        host,
        "every hook call (Gemini's telemetry): exit 0 in < 3000 ms, one JSON line with continue:true",
        bool(calls) and set(seen) == set(EVENTS) and not bad,
        f"{len(calls)} calls of {seen}, slowest {slowest:.0f} ms, bad: {bad}",
    )


def _commands(
    report: Report,
    host: str,
    gemini: str,
    common: list[str],
    env: dict[str, str],
    model: FakeModel,
    data: Path,
    project: Path,
    logs: Path,
) -> None:
    """``/intent remember`` and ``$intent remember`` as headless prompts: does the BeforeAgent hook get them (after
    the ``<hook_context>`` block SessionStart put in front), record the claim and answer the receipt?"""
    statements = {"/intent": "Never deploy on a Friday.", "$intent": "Prefer small, reviewable commits."}
    for n, (form, statement) in enumerate(statements.items()):
        before = len(model.requests())
        res = run(
            report,
            host,
            f"gemini -p #{n + 1} ({form})",
            [gemini, "-p", f"{form} remember {statement}", *common],
            env=env,
            cwd=project,
            log_dir=logs,
        )
        requests = model.requests()[before:]
        text = "\n".join(str(r.get("text", "")) for r in requests)
        claims = [
            e["payload"]["claim"]
            for e in ledger_events(data, project)
            if e.get("event_type") == "claim_added" and e["payload"]["claim"].get("statement") == statement
        ]
        reached = res.rc == 0 and bool(claims) and RECEIPT in text
        calls = [r for r in requests if r.get("decision") == "call"]
        name = f"'{form} remember' reaches the BeforeAgent hook: claim on disk, receipt in the model's context"
        if form in EXPECTED_FORMS:
            detail = f"rc={res.rc}, {len(claims)} claim(s), {len(calls)} call(s)"
            report.check(host, name, reached and not calls, detail)
        else:
            report.note(host, f"{name}: {'yes' if reached else 'no'} (not among Gemini's documented forms)")
    report.note(host, f"ledger: {ledger_labels(ledger_events(data, project))}")
