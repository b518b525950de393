"""A/B of the writing hook: two installations' ``intentloop hook`` (UserPromptSubmit) and ``intentloop verify``,
interleaved in the same rounds, beside the floors of ``run.py`` (method: docs/BENCHMARK.md, "A/B of two builds").

Run: ``python tools/bench/prompt_ab.py --a /path/to/old/venv/bin/intentloop --b /path/to/new/venv/bin/intentloop
[--sizes 200,100000] [--runs 15] [--verify-runs 3]``.

Both builds write into the same seeded ledgers (the format is the same), each hook run with a new ``turn_id`` so every
run takes the lock and appends (checked: one observation per run); the order of A and B alternates from round to
round. A build that injects a linked task's unchanged context once per session (docs/HOOKS.md, "Once per session")
answers the repeated prompts without it: that is its ordinary path, the one measured. Reported per size: medians of
wall time and of CPU time (user + system of the process and its forked child, which moves less with the machine's
load than wall time), the floors measured in the same rounds with this interpreter, and the load average.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import PROMPT_FLOORS, SESSION_ID, _env, _load, seed_ledger  # the same seeding and floors


def _timed(cmd: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    """(wall ms, CPU ms of the process and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, proc.stdout


def measure(builds: dict[str, str], n: int, work: Path, runs: int, verify_runs: int) -> dict[str, Any]:
    data_root, project = work / f"data-{n}", work / f"project-{n}"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    project_id, task_ids = seed_ledger(data_root, project, n)
    env = _env(data_root)
    base = {"session_id": SESSION_ID, "cwd": str(project), "transcript_path": "/nonexistent", "model": "bench"}
    samples: dict[str, list[tuple[float, float]]] = {}
    # The first write builds the checkpoint and the task index (a full verification, longer than a hook's deadline at
    # 100,000 events): not a figure, and given the time it needs.
    first = {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"warm-{n}", "prompt": "go on"}
    warm_env = {**env, "INTENT_LOOP_HOOK_DEADLINE_S": "60"}
    _, _, out = _timed([next(iter(builds.values())), "hook"], json.dumps(first).encode(), warm_env)
    if task_ids[0] not in out.decode():
        raise RuntimeError(f"the first write did not answer with the linked task: {out!r}")
    for i in range(runs):
        order = list(builds.items()) if i % 2 == 0 else list(builds.items())[::-1]
        for name, exe in order:
            payload = {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"t-{n}-{name}-{i}", "prompt": "go on"}
            wall, cpu, out = _timed([exe, "hook"], json.dumps(payload).encode(), env)
            if task_ids[0] not in out.decode() and json.loads(out) != {"continue": True, "suppressOutput": True}:
                raise RuntimeError(f"{name}: the hook answered neither the linked task nor the bare line: {out!r}")
            samples.setdefault(f"prompt_hook_{name}", []).append((wall, cpu))
        for floor, args in PROMPT_FLOORS.items():
            wall, cpu, _ = _timed([sys.executable, *args])
            samples.setdefault(floor, []).append((wall, cpu))
    ledger = next((data_root / "projects").glob("*/ledger.jsonl")).read_bytes()
    observed = ledger.count(b'"request_id":"hook:UserPromptSubmit:')
    if observed != 1 + runs * len(builds):  # every run took the linked path: none failed open unseen
        raise RuntimeError(f"{observed} prompt observations for {1 + runs * len(builds)} hook runs")
    for i in range(verify_runs):
        order = list(builds.items()) if i % 2 == 0 else list(builds.items())[::-1]
        for name, exe in order:
            wall, cpu, _ = _timed([exe, "verify", "--project-id", project_id, "--json"], env=env)
            samples.setdefault(f"verify_{name}", []).append((wall, cpu))
    row: dict[str, Any] = {"events": n}
    for key, values in samples.items():
        row[key] = {
            "wall_ms": round(statistics.median(v[0] for v in values), 1),
            "cpu_ms": round(statistics.median(v[1] for v in values), 1),
            "runs": len(values),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="the old build's intentloop executable")
    parser.add_argument("--b", required=True, help="the new build's intentloop executable")
    parser.add_argument("--sizes", default="200,100000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--verify-runs", type=int, default=3)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    builds = {"A": args.a, "B": args.b}
    result: dict[str, Any] = {"builds": builds, "load_before": _load(), "sizes": []}
    with tempfile.TemporaryDirectory(prefix="intentloop-ab-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            result["sizes"].append(measure(builds, n, Path(tmp), args.runs, args.verify_runs))
            print(json.dumps(result["sizes"][-1]), flush=True)
    result["load_after"] = _load()
    print(f"load average before/after: {result['load_before']} / {result['load_after']}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
