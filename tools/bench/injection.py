"""The characters the hooks inject over a scripted 20-prompt session, build against build (docs/BENCHMARK.md,
"Injected context over a 20-prompt session").

Run: ``python tools/bench/injection.py [--build before=/old/venv/bin/intentloop] [--build after=.venv/bin/intentloop]
[--out results.json]`` (default: this interpreter's ``intentloop`` only).

Every step is one real ``intentloop hook`` process, on a fresh data root per build, in the order a host sends them:
SessionStart (startup), then 20 prompts of one session — the user's ``/intent remember`` commands at prompts 1, 2, 3
and 10 (each adds a user-explicit claim, so the task's context changes), a compaction after prompt 15 (PostCompact,
then SessionStart with ``source: "compact"``), plain prompts otherwise. Counted per build: the characters of every
``additionalContext`` (the text the host puts into the model's context and keeps there), split into the task's
context blocks, the association hint, and command receipts, and how many answers carried a block.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SESSION = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
PROMPTS = 20
#: prompt number -> the user's command typed at the start of it (every other prompt is plain text).
COMMANDS = {
    1: "/intent remember constraint: Never deploy on a Friday.",
    2: "/intent remember outcome: The public API stays backwards compatible.",
    3: "/intent remember preference: Prefer small, reviewable commits over large ones.",
    10: "/intent remember constraint: Every migration must be reversible.",
}
COMPACT_AFTER = 15


def _script() -> list[tuple[str, dict[str, Any]]]:
    """(label, payload fields) of every hook call of the session, in order."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("SessionStart", {"hook_event_name": "SessionStart", "source": "startup"})
    ]
    for n in range(1, PROMPTS + 1):
        text = COMMANDS.get(n, f"Carry on with step {n} of the refactoring.")
        steps.append((f"prompt {n}", {"hook_event_name": "UserPromptSubmit", "turn_id": f"turn-{n}", "prompt": text}))
        if n == COMPACT_AFTER:
            steps.append(("PostCompact", {"hook_event_name": "PostCompact", "turn_id": f"turn-{n}", "trigger": "auto"}))
            steps.append(("SessionStart", {"hook_event_name": "SessionStart", "source": "compact"}))
    return steps


def _kind(context: str) -> str:
    if context.startswith("[Intent Loop linked task_id="):
        return "block"
    if context.startswith("[Intent Loop runtime]"):
        return "hint"
    return "receipt"


def run_session(intentloop: str, work: Path) -> dict[str, Any]:
    """Run the scripted session with ``intentloop`` on a fresh data root under ``work``; the counts per kind."""
    data, project = work / "data", work / "project"
    project.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTENT_LOOP_", "CODEX_HOME", "PLUGIN_DATA"))}
    env["INTENT_LOOP_DATA_DIR"] = str(data)
    totals: dict[str, Any] = {"chars": 0, "blocks": 0, "by_kind": {"block": 0, "hint": 0, "receipt": 0}, "steps": []}
    for label, fields in _script():
        payload = {"session_id": SESSION, "cwd": str(project), "transcript_path": "/nonexistent", **fields}
        proc = subprocess.run(
            [intentloop, "hook"], input=json.dumps(payload).encode(), capture_output=True, env=env, check=True
        )
        answer = json.loads(proc.stdout)
        if answer.get("continue") is not True:
            raise RuntimeError(f"{label}: not a fail-open answer: {proc.stdout!r}")
        context = (answer.get("hookSpecificOutput") or {}).get("additionalContext", "")
        kind = _kind(context) if context else None
        if kind is not None:
            totals["chars"] += len(context)
            totals["by_kind"][kind] += len(context)
            totals["blocks"] += kind == "block"
        totals["steps"].append([label, kind, len(context)])
    if totals["by_kind"]["receipt"] == 0 or totals["blocks"] == 0:
        raise RuntimeError("the commands were not recorded or no task context was injected: not a linked session")
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--build", action="append", default=[], help="NAME=PATH of an intentloop script (repeatable)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    builds = dict(b.split("=", 1) for b in args.build) or {"this": str(Path(sys.executable).with_name("intentloop"))}
    result: dict[str, Any] = {"session": {"prompts": PROMPTS, "commands": sorted(COMMANDS), "compact_after": 15}}
    with tempfile.TemporaryDirectory(prefix="intentloop-injection-") as tmp:
        for name, exe in builds.items():
            result[name] = run_session(exe, Path(tmp) / name)
    for name in builds:
        row = result[name]
        print(f"{name}: {row['chars']} characters injected, {row['blocks']} task blocks; by kind {row['by_kind']}")
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
