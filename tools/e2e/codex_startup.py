"""Does Codex offer our tools on the first turn when the machine is busy? (issue: start-up before the host asks)

Runs the Codex end-to-end scenario of ``run_hosts.py`` N times while busy-loop processes load every core, with the
server behind ``timed_serve.py`` so each run also records when the first ``tools/list`` answer left for Codex
(measured from the server's spawn; an upper bound, see ``timed_serve.py``). Codex sends its first turn ~1 s after
spawning its MCP servers; a run passes when that first model request already lists our tools.

    npm ci --prefix tools/e2e && python tools/e2e/codex_startup.py [--runs 20] [--busy 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codex_host
from codex_host import run_codex
from e2e_common import Report, enter_netns

ORIGINAL_RUN = codex_host.run
FIRST_TURN_CHECK = "model request lists the intent_loop MCP tools (namespace mcp__intent_loop)"


def _timed_server(directory: Path, log: Path) -> Path:
    """A stand-in for the server command: the timing proxy in front of the real ``intentloop serve``."""
    script = directory / "timed-intentloop"
    proxy = Path(__file__).resolve().with_name("timed_serve.py")
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {proxy} "$1" {log}\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def _route_server_through(wrapper: Path) -> None:
    """After ``intentloop install codex`` (run by ``run_codex``), point the installed server entry at ``wrapper``."""
    original = codex_host.run

    def run(report: Report, host: str, step: str, argv: Any, **kwargs: Any) -> Any:
        result = original(report, host, step, argv, **kwargs)
        if step == "intentloop install codex":
            config = Path(kwargs["env"]["CODEX_HOME"]) / "config.toml"
            text = config.read_text(encoding="utf-8")
            real = argv[0]
            old = f'command = "{real}", args = ["serve"]'
            assert old in text, "the installer's server entry changed shape"
            config.write_text(text.replace(old, f'command = "{wrapper}", args = ["{real}"]'), encoding="utf-8")
        return result

    codex_host.run = run  # type: ignore[assignment]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=4, help="busy-loop processes running during every run")
    parser.add_argument("--codex", default=str(Path(__file__).resolve().parent / "node_modules" / ".bin" / "codex"))
    parser.add_argument("--intentloop", default=str(Path(sys.executable).parent / "intentloop"))
    args = parser.parse_args()
    enter_netns(__file__)
    top = Path(tempfile.mkdtemp(prefix="intentloop-codex-startup-"))
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    offered, times, server_times, asked_times = 0, [], [], []
    try:
        for n in range(args.runs):
            base = top / f"run-{n}"
            (base / "bin").mkdir(parents=True)
            log = base / "serve-timing.jsonl"
            report = Report()
            _route_server_through(_timed_server(base / "bin", log))
            run_codex(report, base, args.codex, args.intentloop, "installer", False, True, None)
            codex_host.run = ORIGINAL_RUN
            ok = any(check.name == FIRST_TURN_CHECK and check.ok for check in report.checks)
            offered += ok
            lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
            record = json.loads(lines[0]) if lines else None
            first = record["tools_list_answered_ms"] if record else None
            if record is not None:
                times.append(record["tools_list_answered_ms"])
                server_times.append(record["server_answered_ms"])
                asked_times.append(record["server_asked_ms"])
            print(
                f"run {n + 1}: tools on the first turn: {ok}; first tools/list answered {first} ms after spawn"
                + (
                    f" (server: asked at {record['server_asked_ms']} ms, answered at {record['server_answered_ms']}"
                    " ms after its own spawn)"
                    if record
                    else ""
                )
            )
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        shutil.rmtree(top, ignore_errors=True)
    summary = {
        "runs": args.runs,
        "busy_loops": args.busy,
        "offered_on_first_turn": offered,
        "first_tools_list_ms_median": statistics.median(times) if times else None,
        "first_tools_list_ms_max": max(times) if times else None,
        "server_answered_ms_median": statistics.median(server_times) if server_times else None,
        "server_answered_ms_max": max(server_times) if server_times else None,
        "server_asked_ms_median": statistics.median(asked_times) if asked_times else None,
    }
    print(json.dumps(summary))
    return 0 if offered == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
