"""Claude Code against the scripted Anthropic Messages model, in two routes: configured by ``intentloop install
claude`` ("installer": ``$CLAUDE_CONFIG_DIR/settings.json`` hooks and the user-scope ``mcpServers`` in
``$CLAUDE_CONFIG_DIR/.claude.json``), or loading this repository as a Claude Code plugin (``--plugin-dir``: its
``.claude-plugin/plugin.json``, ``.mcp.json`` and ``hooks/hooks.json``). No ``--mcp-config``, no ``project_root``
unless asked — the server must find the project through the client's roots — and no ``INTENT_LOOP_DATA_DIR``: the
processes must agree on the user's one data root by themselves. In both routes one session also runs on a terminal
(``pty``) and ends with ``/exit``, the ordinary way out, whose SessionEnd reason (``prompt_input_exit``) the ``-p``
runs (reason ``other``) never send.
"""

from __future__ import annotations

import json
import os
import re
import select
import time
from pathlib import Path
from typing import Any

from e2e_common import (
    Report,
    background_turn,
    base_env,
    ledger_checks,
    ledger_events,
    ledger_labels,
    run,
    unchanged_turn_check,
    verify,
)
from fake_model import START_MARK, STATEMENT, FakeModel

REPO = Path(__file__).resolve().parents[2]
#: How Claude Code names our tools: a user-scope server ``intent_loop``, or the plugin ``intent-loop``'s server.
PREFIX = {"installer": "mcp__intent_loop__", "plugin": "mcp__plugin_intent-loop_intent_loop__"}
#: How Claude Code names the server in its init event.
SERVER = {"installer": "intent_loop", "plugin": "plugin:intent-loop:intent_loop"}


def _stream(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _tool_results(events: list[dict[str, Any]]) -> dict[str, str]:
    """Tool name -> the text of its result, from the stream-json transcript."""
    names: dict[str, str] = {}
    results: dict[str, str] = {}
    for ev in events:
        content = (ev.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name")).rsplit("__", 1)[-1]
            elif block.get("type") == "tool_result":
                results[names.get(str(block.get("tool_use_id")), "?")] = json.dumps(block.get("content"))
    return results


def scripted_env(home: Path, config_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """Claude Code's environment against the scripted model on ``port``, offline, with ``extra`` variables."""
    return base_env(
        home,
        {
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            **extra,
        },
    )


def interactive_exit(
    report: Report,
    host: str,
    claude: str,
    argv: list[str],
    env: dict[str, str],
    config_dir: Path,
    data: Path,
    project: Path,
    logs: Path,
) -> None:
    """An interactive session (a terminal: ``pty``) in a project of its own: the model starts a task linked to the
    session, then the user types ``/exit`` — Claude Code's ordinary exit, SessionEnd reason ``prompt_input_exit``.
    The SessionEnd hook must run and record the session's result observation (a matcher ``other`` missed it)."""
    import pty

    project.mkdir(parents=True, exist_ok=True)
    state_path = config_dir / ".claude.json"  # no onboarding, trust or API-key question on the terminal
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
    approved = {"approved": [env["ANTHROPIC_API_KEY"][-20:]], "rejected": []}
    state.update({"hasCompletedOnboarding": True, "customApiKeyResponses": approved})
    state.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True}
    state_path.write_text(json.dumps(state, indent=2), encoding="utf-8")
    started = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:  # the child: Claude Code on the terminal
        os.chdir(project)
        os.execve(claude, [claude, *argv], {**env, "TERM": "xterm-256color"})
    screen = bytearray()
    closed = False
    status: int | None = None  # Claude Code's wait status, once it has exited

    def pump_until(done: Any, seconds: float) -> bool:
        nonlocal closed
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if done():
                return True
            if closed:  # the terminal is gone: Claude Code is exiting
                time.sleep(0.2)
                continue
            ready, _w, _x = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    screen.extend(os.read(fd, 65536))
                except OSError:
                    closed = True
        return bool(done())

    def has_exited() -> bool:
        nonlocal status
        if status is None:
            reaped, wait_status = os.waitpid(pid, os.WNOHANG)
            status = wait_status if reaped else None
        return status is not None

    def type_line(text: str) -> None:
        # Text and Enter arriving together read as a paste (the Enter becomes part of the input): type, pause, Enter.
        os.write(fd, text.encode())
        pump_until(lambda: False, 1.5)
        os.write(fd, b"\r")

    try:
        pump_until(lambda: b"shortcuts" in screen, 60)  # the prompt is ready (words are drawn apart by escapes)
        type_line(f"{START_MARK} Remember this: {STATEMENT}")
        linked = pump_until(lambda: "Stop" in ledger_labels(ledger_events(data, project)), 90)
        labels = ledger_labels(ledger_events(data, project))
        report.check(host, "interactive session: the model started a task linked to the session", linked, f"{labels}")
        pump_until(lambda: False, 2)  # the turn's end reaches the screen
        type_line("/exit")
        exited = pump_until(has_exited, 60)
    finally:
        (logs / f"{host.replace('/', '-')}-interactive.screen").write_bytes(bytes(screen))
        if not has_exited():
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
    report.timings.append((host, "claude (interactive, /exit)", time.monotonic() - started))
    labels = ledger_labels(ledger_events(data, project))
    report.check(
        host,
        "interactive /exit (SessionEnd reason prompt_input_exit): the SessionEnd hook ran and recorded its observation",
        exited and status == 0 and labels.count("SessionEnd") == 1,
        f"exited={exited} status={status} ledger: {labels}",
    )


def run_claude(
    report: Report, base: Path, claude: str, intentloop: str, route: str, pass_root: bool, blocking: bool
) -> None:
    host = f"claude/{route}"
    home, project, logs = base / "home", base / "project", base / "logs"
    # Nobody names the data root: the installer route uses the per-user default under HOME; the plugin route sets
    # XDG_DATA_HOME in the user's environment, which reaches the server only through .mcp.json's env_vars.
    xdg = base / "xdg"
    data = xdg / "intentloop" / "v1" if route == "plugin" else home / ".local" / "share" / "intentloop" / "v1"
    config_dir = home / ".claude"
    bindir = base / "bin"
    for d in (config_dir, project, logs, base / "tmp", bindir):
        d.mkdir(parents=True, exist_ok=True)
    os.symlink(intentloop, bindir / "intentloop")  # the plugin route starts `intentloop` from PATH
    with FakeModel(logs / "model-requests.jsonl", str(project) if pass_root else None) as model:
        env = scripted_env(home, config_dir, model.port)
        env["PATH"] = f"{bindir}:{env['PATH']}"
        if route == "plugin":
            env["XDG_DATA_HOME"] = str(xdg)
        if blocking:
            env["MCP_CONNECTION_NONBLOCKING"] = "0"
        tools = f"{PREFIX[route]}intent_start_task,{PREFIX[route]}intent_add_explicit"
        common = ["--output-format", "stream-json", "--verbose", "--allowedTools", tools]
        if route == "installer":
            inst = run(
                report, host, "intentloop install claude", [intentloop, "install", "claude"], env=env, log_dir=logs
            )
            settings = json.loads((config_dir / "settings.json").read_text(encoding="utf-8"))
            state = json.loads((config_dir / ".claude.json").read_text(encoding="utf-8"))
            entry = state.get("mcpServers", {}).get("intent_loop", {})
            report.check(
                host,
                "install: exit 0, 5 hook events in settings.json, user-scope mcpServers.intent_loop pins the data root",
                inst.rc == 0
                and len(settings.get("hooks", {})) == 5
                and entry.get("env", {}).get("INTENT_LOOP_DATA_DIR") == str(data),
                f"rc={inst.rc}",
            )
        else:
            common += ["--plugin-dir", str(REPO)]
        first = run(
            report,
            host,
            "claude -p (session 1)",
            [claude, "-p", f"E2E-START Remember this: {STATEMENT}", *common],
            env=env,
            cwd=project,
            log_dir=logs,
        )
        events = _stream(first.stdout)
        init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
        session = init.get("session_id")
        servers = {s.get("name"): s.get("status") for s in init.get("mcp_servers", [])}
        report.check(
            host,
            "claude -p session 1: exit 0, MCP server intent_loop connected",
            first.rc == 0 and servers.get(SERVER[route]) == "connected",
            f"rc={first.rc} session={session} mcp={servers}",
        )
        main = [r for r in model.requests() if f"{PREFIX[route]}intent_start_task" in r.get("tools", [])]
        report.check(
            host,
            "model request lists the intent_loop MCP tools",
            bool(main),
            f"{len(model.requests())} request(s), {len(main)} with our tools",
        )
        first_req = main[0] if main else {}
        assoc = f'host_session_id="{session}"' in first_req.get("text", "")
        report.check(host, "SessionStart hook context (association line with this session id) reached the model", assoc)
        results = _tool_results(events)
        start = results.get("intent_start_task", "")
        found = re.search(r'task_id\\*"\s*:\s*\\*"([0-9a-f-]{36})', start)
        task_id = found.group(1) if found else None
        report.check(
            host,
            "intent_start_task via Claude Code: ok:true (project found from roots)"
            if not pass_root
            else "intent_start_task via Claude Code: ok:true",
            '\\"ok\\":true' in start.replace(" ", "") and task_id is not None,
            start[:300],
        )
        add = results.get("intent_add_explicit", "")
        report.check(
            host, "intent_add_explicit via Claude Code: ok:true", '\\"ok\\":true' in add.replace(" ", ""), add[:300]
        )
        before = len(model.requests())
        second = run(
            report,
            host,
            "claude -p --resume (turn 2)",
            [claude, "-p", "--resume", str(session), "E2E-SECOND what do you remember?", *common],
            env=env,
            cwd=project,
            log_dir=logs,
        )
        events2 = _stream(second.stdout)
        init2 = next((e for e in events2 if e.get("type") == "system" and e.get("subtype") == "init"), {})
        report.check(
            host, "claude -p --resume: exit 0", second.rc == 0, f"rc={second.rc} session={init2.get('session_id')}"
        )
        later = [r for r in model.requests()[before:] if f"{PREFIX[route]}intent_start_task" in r.get("tools", [])]
        text = later[0].get("text", "") if later else ""
        linked = f"[Intent Loop linked task_id={task_id}" in text and STATEMENT in text
        copies = text.count("[Intent Loop linked task_id=")
        report.check(  # SessionStart on resume injects it and notes it; the prompt hook then leaves it out
            host, "turn 2: the linked-task context reaches the model once", copies == 1, f"{copies} copies"
        )
        report.check(
            host,
            "turn 2: hook context with the linked task and the explicit claim reached the model",
            linked,
            f"{len(later)} request(s)",
        )
        ledger_checks(report, host, ledger_events(data, project), task_id)
        verify(report, host, intentloop, data, project, logs, env)
        if route == "plugin":  # one more turn, nothing changed: the context is not injected by the prompt again
            done = len(model.requests())
            third = run(
                report,
                host,
                "claude -p --resume (turn 3)",
                [claude, "-p", "--resume", str(session), "E2E-THIRD carry on", *common],
                env=env,
                cwd=project,
                log_dir=logs,
            )
            newer = [r for r in model.requests()[done:] if f"{PREFIX[route]}intent_start_task" in r.get("tools", [])]
            unchanged_turn_check(report, host, third, text, newer[0].get("text", "") if newer else "")
        terminal_argv = common[common.index("--allowedTools") :]  # no stream-json: the session is on a terminal
        interactive_exit(report, host, claude, terminal_argv, env, config_dir, data, base / "project-i", logs)
        if route == "installer":  # one more turn, on a large ledger the checkpoint does not vouch for (docs/HOOKS.md)
            background_turn(
                report,
                host,
                "claude -p --resume (turn 3)",
                [claude, "-p", "--resume", str(session), "E2E-THIRD carry on", *common],
                intentloop=intentloop,
                data_root=data,
                root=project,
                env=env,
                log_dir=logs,
            )
