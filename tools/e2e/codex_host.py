"""Codex CLI against the scripted model, in two routes: configured by ``intentloop install codex`` ("installer"), or
with a clone of the repository added as a Codex marketplace and the plugin installed from it ("plugin"). MCP tools
and trusted hooks.

Neither route sets ``INTENT_LOOP_DATA_DIR``: the server and the hooks must find the user's one data root by
themselves (``~/.local/share/intentloop/v1`` under the run's HOME), which is where the checks read the ledger.

Hook trust is granted the way Codex's own ``/hooks`` review does it: ``codex app-server`` answers ``hooks/list`` with
each hook's ``key`` and the ``currentHash`` *Codex* computed, and ``config/batchWrite`` upserts
``hooks.state.<key>.trusted_hash`` (the request the TUI sends). Nothing is hashed or forged here, and only hooks whose
command is this intentloop installation are trusted.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

from e2e_common import (
    Report,
    background_turn,
    base_env,
    ledger_checks,
    ledger_events,
    run,
    unchanged_turn_check,
    verify,
)
from fake_model import STATEMENT, FakeModel

HOST = "codex"
REPO = Path(__file__).resolve().parents[2]
#: The marketplace the repository itself is (``.agents/plugins/marketplace.json`` names it).
MARKETPLACE = json.loads((REPO / ".agents" / "plugins" / "marketplace.json").read_text(encoding="utf-8"))["name"]


class AppServer:
    """A minimal JSON-RPC client for ``codex app-server`` over stdio."""

    def __init__(self, codex: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self._next = 0
        self.call("initialize", {"clientInfo": {"name": "intentloop-e2e", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"codex app-server closed during {method}")
            msg = json.loads(line)
            if msg.get("id") == self._next and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg["result"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _our_hooks(server: AppServer, project: Path, intentloop: str) -> list[dict[str, Any]]:
    listing = server.call("hooks/list", {"cwds": [str(project)]})
    hooks = [h for entry in listing["data"] for h in entry["hooks"]]
    return [h for h in hooks if str(h.get("command", "")).startswith(intentloop + " hook ")]


def trust_hooks(report: Report, host: str, codex: str, env: dict[str, str], project: Path, intentloop: str) -> bool:
    """Review and trust the five intentloop hooks exactly as ``/hooks`` would; check before/after states."""
    start = time.monotonic()
    server = AppServer(codex, env)
    try:
        before = _our_hooks(server, project, intentloop)
        events = sorted(h["eventName"] for h in before)
        report.check(
            host,
            "hooks/list shows the 5 installed intentloop hooks, untrusted before review",
            len(before) == 5 and all(h["trustStatus"] == "untrusted" for h in before),
            f"{events}",
        )
        value = {h["key"]: {"trusted_hash": h["currentHash"]} for h in before}
        edit = {"keyPath": "hooks.state", "value": value, "mergeStrategy": "upsert"}
        server.call("config/batchWrite", {"edits": [edit], "reloadUserConfig": True})
        after = _our_hooks(server, project, intentloop)
        trusted = len(after) == 5 and all(h["trustStatus"] == "trusted" for h in after)
        report.check(host, "after the /hooks-equivalent review, all 5 are trusted", trusted)
    finally:
        server.close()
        report.timings.append((host, "hook review via codex app-server", time.monotonic() - start))
    return trusted


def _exec_events(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _tool_items(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    items: dict[str, dict[str, Any]] = {}
    for ev in events:
        item = ev.get("item") or {}
        if ev.get("type") == "item.completed" and item.get("type") == "mcp_tool_call":
            items[str(item.get("tool"))] = item
    return items


def install_plugin(report: Report, host: str, codex: str, env: dict[str, str], base: Path, logs: Path) -> bool:
    """Clone this repository and install the plugin from the clone as a marketplace, with Codex's own two commands.

    A clone, as a user has it: Codex copies the plugin folder (the clone's root) into its cache, so the run's own
    ``.venv`` and ``node_modules`` stay out. The clone holds the committed tree (``HEAD``).
    """
    clone = base / "clone"
    cloned = run(report, host, "git clone", ["git", "clone", "--quiet", str(REPO), str(clone)], env=env, log_dir=logs)
    added = run(
        report,
        host,
        "codex plugin marketplace add",
        [codex, "plugin", "marketplace", "add", str(clone)],
        env=env,
        log_dir=logs,
    )
    installed = run(
        report, host, "codex plugin add", [codex, "plugin", "add", f"intent-loop@{MARKETPLACE}"], env=env, log_dir=logs
    )
    cache = Path(env["CODEX_HOME"]) / "plugins" / "cache" / MARKETPLACE / "intent-loop"
    ok = cloned.rc == 0 and added.rc == 0 and installed.rc == 0 and any(cache.glob("*/.codex-plugin/plugin.json"))
    report.check(
        host,
        "codex plugin marketplace add <clone> + codex plugin add intent-loop@intentloop: exit 0, plugin in the cache",
        ok,
        f"rc={cloned.rc},{added.rc},{installed.rc}",
    )
    return ok


def remove_plugin(report: Report, host: str, codex: str, env: dict[str, str], logs: Path) -> None:
    """The README's way out: ``codex plugin remove``, then ``codex plugin marketplace remove``; nothing left behind."""
    removed = run(
        report,
        host,
        "codex plugin remove",
        [codex, "plugin", "remove", f"intent-loop@{MARKETPLACE}"],
        env=env,
        log_dir=logs,
    )
    dropped = run(
        report,
        host,
        "codex plugin marketplace remove",
        [codex, "plugin", "marketplace", "remove", MARKETPLACE],
        env=env,
        log_dir=logs,
    )
    cfg = tomllib.loads((Path(env["CODEX_HOME"]) / "config.toml").read_text(encoding="utf-8"))
    left = [k for k in ("marketplaces", "plugins") if cfg.get(k)]
    report.check(
        host,
        "codex plugin remove + codex plugin marketplace remove: exit 0, no marketplace or plugin left in config.toml",
        removed.rc == 0 and dropped.rc == 0 and not left,
        f"rc={removed.rc},{dropped.rc} left={left}",
    )


def write_scripted_config(codex_home: Path, port: int, grace_ms: int | None = None) -> None:
    """The user's own Codex configuration before intentloop: the scripted model provider on ``port``."""
    (codex_home / "config.toml").write_text(
        'model = "e2e-scripted"\nmodel_provider = "fake"\n'
        + (f"mcp_optional_startup_grace_ms = {grace_ms}\n" if grace_ms is not None else "")
        + '\n[model_providers.fake]\nname = "fake"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n',
        encoding="utf-8",
    )


def run_codex(
    report: Report,
    base: Path,
    codex: str,
    intentloop: str,
    route: str,
    pass_root: bool,
    trust: bool,
    grace_ms: int | None,
) -> None:
    host = f"{HOST}/{route}"
    home, project, logs = base / "home", base / "project", base / "logs"
    # Nobody names the data root: the installer route uses the per-user default under HOME; the plugin route sets
    # XDG_DATA_HOME in the user's environment, which reaches the server only through .mcp.json's env_vars.
    xdg = base / "xdg"
    data = xdg / "intentloop" / "v1" if route == "plugin" else home / ".local" / "share" / "intentloop" / "v1"
    codex_home = home / ".codex"
    bindir = base / "bin"
    for d in (codex_home, project, logs, base / "tmp", bindir):
        d.mkdir(parents=True, exist_ok=True)
    # The plugin route starts `intentloop` from PATH, as a user's shell would.
    os.symlink(intentloop, bindir / "intentloop")
    with FakeModel(logs / "model-requests.jsonl", str(project) if pass_root else None) as model:
        # The user's own configuration before intentloop: the scripted provider (the e2e README explains the grace).
        write_scripted_config(codex_home, model.port, grace_ms)
        env = base_env(home, {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": "dummy"})
        env["PATH"] = f"{bindir}:{env['PATH']}"
        if route == "plugin":
            env["XDG_DATA_HOME"] = str(xdg)
        if route == "installer":
            inst = run(
                report, host, "intentloop install codex", [intentloop, "install", "codex"], env=env, log_dir=logs
            )
            cfg = tomllib.loads((codex_home / "config.toml").read_text(encoding="utf-8"))
            entry = cfg.get("mcp_servers", {}).get("intent_loop", {})
            report.check(
                host,
                "install: exit 0, the server entry pins the per-user default root, hooks.json written",
                inst.rc == 0
                and entry.get("env", {}).get("INTENT_LOOP_DATA_DIR") == str(data)
                and (codex_home / "hooks.json").is_file(),
                f"rc={inst.rc} env={entry.get('env')}",
            )
            hook_program = intentloop
            common = ["--json", "--skip-git-repo-check", "--disable", "plugins", "-C", str(project)]
        else:
            install_plugin(report, host, codex, env, base, logs)
            hook_program = "intentloop"
            common = ["--json", "--skip-git-repo-check", "-C", str(project)]
        hooks_trusted = trust and trust_hooks(report, host, codex, env, project, hook_program)
        if not trust:
            report.note(host, "hook trust not granted (--no-trust): only the MCP part is meaningful")
        first = run(
            report,
            host,
            "codex exec (session 1)",
            [codex, "exec", *common, f"E2E-START Remember this: {STATEMENT}"],
            env=env,
            cwd=project,
            log_dir=logs,
        )
        events = _exec_events(first.stdout)
        thread = next((str(e["thread_id"]) for e in events if e.get("type") == "thread.started"), None)
        report.check(
            host,
            "codex exec session 1: exit 0, thread started",
            first.rc == 0 and thread is not None,
            f"rc={first.rc} thread={thread}",
        )
        reqs = [r for r in model.requests() if r.get("path", "").endswith("/responses")]
        first_req = reqs[0] if reqs else {}
        ours = [t for t in first_req.get("tools", []) if t.startswith("mcp__intent_loop/")]
        tools_ok = {"mcp__intent_loop/intent_start_task", "mcp__intent_loop/intent_add_explicit"} <= set(ours)
        report.check(
            host,
            "model request lists the intent_loop MCP tools (namespace mcp__intent_loop)",
            tools_ok,
            f"{len(ours)} tools in the namespace",
        )
        if not tools_ok:
            report.note(
                host,
                "the first request went out without intent_loop's tools: Codex builds its first tool catalog after "
                "waiting mcp_optional_startup_grace_ms (default 1000) for optional servers; `intentloop serve` was "
                "not ready by then (try --codex-grace-ms 0 to confirm)",
            )
        assoc = f'host_session_id="{thread}"' in first_req.get("text", "")
        report.check(host, "SessionStart hook context (association line with this session id) reached the model", assoc)
        items = _tool_items(events)
        start_item = items.get("intent_start_task", {})
        task_id = ((start_item.get("result") or {}).get("structured_content") or {}).get("task_id")
        report.check(
            host,
            "intent_start_task via Codex: completed, ok:true",
            start_item.get("status") == "completed" and task_id is not None,
            f"args={start_item.get('arguments')}",
        )
        add_item = items.get("intent_add_explicit", {})
        add_ok = ((add_item.get("result") or {}).get("structured_content") or {}).get("ok") is True
        report.check(
            host,
            "intent_add_explicit via Codex: completed, ok:true",
            add_item.get("status") == "completed" and add_ok,
            json.dumps(add_item.get("result"))[:300] if not add_ok else "",
        )
        second = run(
            report,
            host,
            "codex exec resume (session 1, turn 2)",
            [codex, "exec", "resume", *common[:-2], thread or "--last", "E2E-SECOND what do you remember?"],
            env=env,
            cwd=project,
            log_dir=logs,
        )
        report.check(host, "codex exec resume: exit 0", second.rc == 0, f"rc={second.rc}")
        later = [r for r in model.requests() if r.get("path", "").endswith("/responses")][len(reqs) :]
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
        if not hooks_trusted:
            report.note(host, "hooks were not trusted, so the hook checks are expected to fail")
        ledger_checks(report, host, ledger_events(data, project), task_id)
        verify(report, host, intentloop, data, project, logs, env)
        if route == "plugin":  # one more turn, nothing changed: the context is not injected by the prompt again
            done = len(model.requests())
            third = run(
                report,
                host,
                "codex exec resume (turn 3)",
                [codex, "exec", "resume", *common[:-2], thread or "--last", "E2E-THIRD carry on"],
                env=env,
                cwd=project,
                log_dir=logs,
            )
            newer = [r for r in model.requests()[done:] if r.get("path", "").endswith("/responses")]
            unchanged_turn_check(report, host, third, text, newer[0].get("text", "") if newer else "")
        if route == "installer":  # one more turn, on a large ledger the checkpoint does not vouch for (docs/HOOKS.md)
            background_turn(
                report,
                host,
                "codex exec resume (turn 3)",
                [codex, "exec", "resume", *common[:-2], thread or "--last", "E2E-THIRD carry on"],
                intentloop=intentloop,
                data_root=data,
                root=project,
                env=env,
                log_dir=logs,
            )
    if route == "installer":
        uninstall(report, host, env, intentloop, codex_home, logs)
    else:
        remove_plugin(report, host, codex, env, logs)


def uninstall(report: Report, host: str, env: dict[str, str], intentloop: str, codex_home: Path, logs: Path) -> None:
    """After Codex wrote its trust records, ``--uninstall`` must leave a valid config without our server."""
    res = run(
        report,
        host,
        "intentloop install codex --uninstall",
        [intentloop, "install", "codex", "--uninstall"],
        env=env,
        log_dir=logs,
    )
    text = (codex_home / "config.toml").read_text(encoding="utf-8")
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        report.check(host, "uninstall after trust: config.toml still valid TOML", False, str(exc))
        return
    report.check(
        host,
        "uninstall after trust: exit 0, server entry gone, provider config kept, hooks.json gone",
        res.rc == 0
        and "intent_loop" not in cfg.get("mcp_servers", {})
        and cfg.get("model_provider") == "fake"
        and not (codex_home / "hooks.json").exists(),
        f"rc={res.rc}",
    )
    left = sorted(cfg.get("hooks", {}).get("state", {}))
    backups = sorted(p.name for p in codex_home.glob("*.intentloop.bak"))
    report.check(
        host,
        "uninstall after trust: Codex's trust records for our hooks and the .intentloop.bak files are gone",
        not left and not backups,
        f"hooks.state left: {left}; backups left: {backups}",
    )
