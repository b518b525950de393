"""End-to-end: do Codex CLI and Claude Code, configured by ``intentloop install``, really run our server and hooks?

Developer script, not part of CI (nothing imports it). It re-executes itself inside ``unshare -n`` (a network
namespace with loopback only), so the hosts can reach nothing but the scripted model server on 127.0.0.1.

Usage::

    npm install --prefix /tmp/hosts @openai/codex @anthropic-ai/claude-code
    python tools/e2e/run_hosts.py [--hosts codex,claude] [--keep] [--project-root-arg] [--no-trust]

Each host gets its own temporary HOME / CODEX_HOME / CLAUDE_CONFIG_DIR, project folder and data root; the installer
runs against them; the model calls ``intent_start_task`` and ``intent_add_explicit``; a second turn shows whether the
hooks linked the session. Checks: the hosts' JSON output, the requests the model received, the ledger and
``intentloop verify --json``. Prints PASS/FAIL per host and check; exits 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_host import run_claude
from codex_host import run_codex
from e2e_common import Report

NETNS_MARK = "INTENTLOOP_E2E_IN_NETNS"


def _enter_netns() -> None:
    """Re-run this script under ``unshare -n`` (``-r`` too when not root) and bring loopback up inside."""
    if os.environ.get(NETNS_MARK) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    flags = "-n" if os.geteuid() == 0 else "-rn"
    env = dict(os.environ, **{NETNS_MARK: "1"})
    argv = ["unshare", flags, "--", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]]
    os.execvpe("unshare", argv, env)


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", default="codex,claude")
    parser.add_argument("--codex", default="/tmp/hosts/node_modules/.bin/codex")
    parser.add_argument("--claude", default="/tmp/hosts/node_modules/.bin/claude")
    parser.add_argument("--intentloop", default=str(Path(sys.executable).parent / "intentloop"))
    parser.add_argument("--project-root-arg", action="store_true", help="pass project_root in every tool call")
    parser.add_argument("--no-trust", action="store_true", help="Codex: do not review/trust the hooks")
    parser.add_argument(
        "--codex-grace-ms",
        type=int,
        default=None,
        help="Codex: write mcp_optional_startup_grace_ms into the user's config (default: Codex's own, 1000)",
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
        _enter_netns()
    hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
    intentloop = str(Path(args.intentloop).absolute())
    report = Report()
    meta = "import importlib.metadata as m; print(m.version('intentloop'))"
    print(f"intentloop: {intentloop} ({_version([str(Path(intentloop).parent / 'python'), '-c', meta])})", flush=True)
    top = Path(tempfile.mkdtemp(prefix="intentloop-e2e-"))
    started = time.monotonic()
    try:
        for n, host in enumerate(h for h in hosts for _ in range(args.repeat)):
            base = top / f"{host}-{n}"
            base.mkdir()
            host_start = time.monotonic()
            if host == "codex":
                print(f"codex: {_version([args.codex, '--version'])}", flush=True)
                run_codex(
                    report,
                    base,
                    args.codex,
                    intentloop,
                    args.project_root_arg,
                    not args.no_trust,
                    args.codex_grace_ms,
                )
            elif host == "claude":
                print(f"claude: {_version([args.claude, '--version'])}", flush=True)
                run_claude(
                    report, base, args.claude, intentloop, args.project_root_arg, not args.claude_default_mcp_connect
                )
            else:
                report.check(host, "known host", False, "expected codex or claude")
            report.timings.append((host, "total", time.monotonic() - host_start))
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
