"""End-to-end: do the real Codex CLI, Claude Code and Gemini CLI run our server and hooks, installed either way?

Part of CI (``.ci/run``). The hosts come from npm at the versions pinned in ``tools/e2e/package.json`` /
``package-lock.json``. The script re-executes itself inside ``unshare -n`` (a network namespace with loopback only),
so the hosts can reach nothing but the scripted model server on 127.0.0.1.

Usage::

    (cd tools/e2e && npm ci)
    python tools/e2e/run_hosts.py [--hosts codex,claude,gemini,sync,team] [--routes installer,plugin,commands] [--keep]
                                  [--no-trust]

Each host and route gets its own temporary HOME (with CODEX_HOME / CLAUDE_CONFIG_DIR / .gemini below it) and project
folder, and no data-root variable: route "installer" runs ``intentloop install codex|claude|gemini``, route "plugin"
installs this repository as a Codex plugin (``codex plugin marketplace add`` + ``codex plugin add``), loads it as a
Claude Code plugin (``--plugin-dir``) or links its ``gemini-extension/`` as a Gemini CLI extension (``gemini
extensions link``). The model calls ``intent_start_task`` and ``intent_add_explicit``; a resumed second turn
shows whether the hooks linked the session; in the installer route a third turn runs on the ledger padded past the
hooks' background threshold with its checkpoint removed and the lock held by another process, whose prompt must be
recorded in the background once the lock is free. Claude Code also runs one interactive session on a terminal that
the user ends with ``/exit``: its SessionEnd hook must record the session's observation. Checks: the hosts' JSON
output, the requests the model received, the ledger under the per-user default root and a bare ``intentloop verify
--json``. Host "sync" (``sync_hosts.py``, one run whatever the routes) shares one project between two installations
through git: a claim recorded from Codex on one must reach Claude Code's SessionStart on the other after
``intentloop sync`` on both. Host "team" (``team_hosts.py``, one run likewise) is the same with two members of
different principals: A's hard constraint must reach B's Claude Code in a snapshot with ``include_peers``, labelled
with A's principal, and never in B's hook context. Prints PASS/FAIL per host, route and check; exits 0 only when
every check passed.

Codex's grace for optional MCP servers is raised to 60 s in the run's config (``--codex-grace-ms``): Codex sends its
first turn after that grace even when a server is still starting, and on a loaded CI machine ``intentloop serve``
may need more than Codex's default 1 s. Codex stops waiting as soon as the server has listed its tools, so a
healthy run is not slower; ``--codex-grace-ms 1000`` runs with Codex's default.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_host import run_claude
from codex_host import run_codex
from e2e_common import Report, enter_netns
from gemini_host import run_gemini
from sync_hosts import run_sync
from team_hosts import run_team


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else "?"


def _run_one(report: Report, args: argparse.Namespace, host: str, route: str, base: Path, intentloop: str) -> None:
    if route not in ("installer", "plugin", "commands"):
        report.check(f"{host}/{route}", "known route", False, "expected installer, plugin or commands")
    elif host == "sync":  # Codex on installation A, Claude Code on installation B, both installer route
        run_sync(report, base, args.codex, args.claude, intentloop)
    elif host == "team":  # the same two installations as two members with different principals
        run_team(report, base, args.codex, args.claude, intentloop)
    elif host == "gemini":
        print(f"gemini/{route}: {_version([args.gemini, '--version'])}", flush=True)
        run_gemini(report, base, args.gemini, intentloop, route, args.project_root_arg)
    elif route == "commands":  # the user's /intent commands, handled by the prompt hook while the model calls no tool
        from intent_commands import run_claude_commands, run_codex_commands

        if host == "codex":
            run_codex_commands(report, base, args.codex, intentloop)
        else:
            run_claude_commands(report, base, args.claude, intentloop)
    elif host == "codex":
        print(f"codex/{route}: {_version([args.codex, '--version'])}", flush=True)
        run_codex(
            report,
            base,
            args.codex,
            intentloop,
            route,
            args.project_root_arg,
            not args.no_trust,
            args.codex_grace_ms,
        )
    elif host == "claude":
        print(f"claude/{route}: {_version([args.claude, '--version'])}", flush=True)
        run_claude(
            report,
            base,
            args.claude,
            intentloop,
            route,
            args.project_root_arg,
            not args.claude_default_mcp_connect,
        )
    else:
        report.check(host, "known host", False, "expected codex, claude, gemini, sync or team")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--hosts", default="codex,claude,gemini,sync,team")
    parser.add_argument("--routes", default="installer,plugin,commands")
    parser.add_argument("--codex", default=str(here / "node_modules" / ".bin" / "codex"))
    parser.add_argument("--claude", default=str(here / "node_modules" / ".bin" / "claude"))
    parser.add_argument("--gemini", default=str(here / "node_modules" / ".bin" / "gemini"))
    parser.add_argument("--intentloop", default=str(Path(sys.executable).parent / "intentloop"))
    parser.add_argument("--project-root-arg", action="store_true", help="pass project_root in every tool call")
    parser.add_argument("--no-trust", action="store_true", help="Codex: do not review/trust the hooks")
    parser.add_argument(
        "--codex-grace-ms",
        type=int,
        default=60000,
        help="Codex: mcp_optional_startup_grace_ms in the run's config (default 60000; Codex's own default is 1000)",
    )
    parser.add_argument(
        "--claude-default-mcp-connect",
        action="store_true",
        help="Claude Code: leave MCP_CONNECTION_NONBLOCKING unset (users' default) instead of 0",
    )
    parser.add_argument("--repeat", type=int, default=1, help="run each host this many times")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (logs, ledgers)")
    parser.add_argument("--no-netns", action="store_true", help="debugging only: run without unshare -n")
    args = parser.parse_args()
    if not args.no_netns:
        enter_netns(__file__)
    hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    intentloop = str(Path(args.intentloop).absolute())
    report = Report()
    meta = "import importlib.metadata as m; print(m.version('intentloop'))"
    print(f"intentloop: {intentloop} ({_version([str(Path(intentloop).parent / 'python'), '-c', meta])})", flush=True)
    top = Path(tempfile.mkdtemp(prefix="intentloop-e2e-"))
    started = time.monotonic()
    try:
        # "sync" and "team" are one run across two installations each (docs/SYNC.md), whatever the routes
        once = ("sync", "team")
        runs = [(h, r) for h in hosts for r in (["installer"] if h in once else routes) for _ in range(args.repeat)]
        for n, (host, route) in enumerate(runs):
            base = top / f"{host}-{route}-{n}"
            base.mkdir()
            host_start = time.monotonic()
            try:
                _run_one(report, args, host, route, base, intentloop)
            except Exception as exc:  # a crashed run is a failed check, never a silent pass
                report.check(f"{host}/{route}", "the run completed", False, f"{type(exc).__name__}: {exc}")
            report.timings.append((f"{host}/{route}", "total", time.monotonic() - host_start))
    finally:
        print(report.render())
        print(f"total wall time: {time.monotonic() - started:.1f} s")
        if args.keep:
            print(f"kept: {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
