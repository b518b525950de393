"""What the rule catalog costs a hook: ``/intent remember`` and a plain prompt, catalog off and on (warm cache),
interleaved in the same rounds on one seeded ledger (docs/REDACTION.md, "A maintained rule catalog").

Run: ``python tools/bench/catalog_hook.py [--runs 15] [--events 200]``. Each run is a real ``intentloop hook``
process (UserPromptSubmit) with a new ``turn_id``; every ``/intent remember`` must answer its receipt. Two statements:
``remember`` an ordinary one (no catalog rule's keyword: the prefilter turns it away, nothing is loaded) and
``remember_secret`` one holding a token only the catalog knows (the rules' patterns find it: still nothing loaded;
until 2026-12-03 the library loaded for it). Reported:
medians of wall time and of CPU time (user + system of the process and its forked child), and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from prompt_ab import _timed
from run import INTENTLOOP, SESSION_ID, _env, seed_ledger

STATEMENT = "keep the retry budget at three attempts and log each failure with its request id"
#: A Harness personal access token (random, in its documented shape): the own rules miss it, a catalog rule has it.
SECRET = "pat.u8jzPde0IgxLd6GncfBAep.2d1371c17149d439536b3216.FRIBXuDL7DxtpYlSXpfK"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument(
        "--deadline", default="10", help="the hooks' deadline in s (a loaded machine: the cost, not it)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    data_root, project, cache = work / "data", work / "project", work / "rules"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    seed_ledger(data_root, project, args.events)
    base_env = {**_env(data_root), "INTENT_LOOP_HOOK_DEADLINE_S": args.deadline}
    envs = {
        "off": {**base_env, "INTENT_LOOP_CATALOG": "off"},
        "on": {**base_env, "INTENT_LOOP_CATALOG": "on", "INTENT_LOOP_CATALOG_CACHE": str(cache)},
    }
    from intentloop.store.catalog import warm_cache

    warm_cache(envs["on"])  # the warm case: what a hook finds once the cache is built
    base = {"session_id": SESSION_ID, "cwd": str(project), "transcript_path": "/nonexistent", "model": "bench"}
    _timed([INTENTLOOP, "hook"], json.dumps({**base, "hook_event_name": "SessionStart", "source": "startup"}).encode())
    samples: dict[str, list[tuple[float, float]]] = {}
    for i in range(args.runs):
        order = list(envs.items()) if i % 2 == 0 else list(envs.items())[::-1]
        for name, env in order:
            for kind, prompt in (
                ("remember", f"/intent remember {STATEMENT} ({name} {i})"),
                ("remember_secret", f"/intent remember deploy with {SECRET} from now on ({name} {i})"),
                ("prompt", "go on"),
            ):
                payload = {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"{kind}-{name}-{i}"}
                wall, cpu, out = _timed([INTENTLOOP, "hook"], json.dumps({**payload, "prompt": prompt}).encode(), env)
                if kind != "prompt" and "Intent Loop receipt" not in out.decode():
                    raise RuntimeError(f"{name} {kind}: /intent remember was not recorded: {out!r}")
                samples.setdefault(f"{kind}_catalog_{name}", []).append((wall, cpu))
    row: dict[str, Any] = {"events": args.events, "deadline_s": args.deadline, "load_average": os.getloadavg()[0]}
    for key, values in sorted(samples.items()):
        row[key] = {
            "wall_ms": round(statistics.median(v[0] for v in values), 1),
            "cpu_ms": round(statistics.median(v[1] for v in values), 1),
            "runs": len(values),
        }
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
