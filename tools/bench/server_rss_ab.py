"""The server's peak memory (``VmHWM``) on the same seeded ledger, for two or more checkouts side by side.

Each checkout (first on ``PYTHONPATH``) runs a fresh ``python -m intentloop.mcp`` twice on a copy of one seeded
ledger and answers what ``run.py``'s size figures ask of a server: ``intent_start_task``, three
``intent_add_inference``, three ``intent_get_snapshot``. ``--prime`` gives each copy of the ledger its checkpoint and
task index first (as every ledger intentloop wrote has; a checkpoint names its file's inode, so priming before copying
left the server to rebuild the index on its first write: 72-75 MB against 48 MB at 100,000 events). The floor is the
same run at 200 events. ``--catalog-cache DIR`` runs each checkout twice more with the rule catalog on
(``INTENT_LOOP_CATALOG=on``, its rule cache in DIR, compiled first), once with the same statements (no catalog rule
may match them: it stands by, ``catalog: "standby"``) and once with a first statement holding a token only the
catalog knows (``catalog: "secret"``; the rules' patterns redact it without the library since 2026-12-03, when the
library loaded for it), beside the same run without it.

    python tools/bench/server_rss_ab.py --prime --sizes 200,100000 [--catalog-cache DIR] CHECKOUT [CHECKOUT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import run as bench  # the benchmark's seeding and envelope helpers
from mcp import Client
from mcp.client.stdio import StdioServerParameters

#: A Harness personal access token (random, in its documented shape): the own rules miss it, a catalog rule has it.
SECRET = "pat.u8jzPde0IgxLd6GncfBAep.2d1371c17149d439536b3216.FRIBXuDL7DxtpYlSXpfK"


async def _serve(data_root: Path, root: str, checkout: str, catalog: str | None, secret: bool) -> float:
    env = {"INTENT_LOOP_DATA_DIR": str(data_root), "PYTHONPATH": checkout, "PATH": os.environ["PATH"]}
    env["INTENT_LOOP_CATALOG"] = "off" if catalog is None else "on"
    if catalog is not None:
        env["INTENT_LOOP_CATALOG_CACHE"] = catalog
    params = StdioServerParameters(command=sys.executable, args=["-m", "intentloop.mcp"], env=env, cwd="/tmp")
    async with Client(params, mode="legacy") as client:
        call = client.call_tool
        task = bench._envelope(await call("intent_start_task", {"project_root": root, "request_id": "m"}))["task_id"]
        for i in range(3):
            args: dict[str, Any] = {
                "project_root": root,
                "task_id": task,
                "request_id": f"a{i}",
                "statement": f"deploy with {SECRET} ({i})"
                if secret and i == 0
                else f"the user probably prefers small commits ({i})",
                "source_ref": {"kind": "agent_turn", "event_id": f"t{i}"},
                "facets": ["soft_constraint"],
                "confidence": 0.6,
            }
            bench._envelope(await call("intent_add_inference", args))
        for _ in range(3):
            bench._envelope(await call("intent_get_snapshot", {"project_root": root, "task_id": task}))
        return bench._children_rss_mb("intentloop.mcp")


async def main(args: argparse.Namespace) -> None:
    rows: list[dict[str, Any]] = []
    if args.catalog_cache is not None:  # compiled before the first run: each server loads a warm cache
        from intentloop.store.catalog import warm_cache

        warm_cache({"INTENT_LOOP_CATALOG_CACHE": args.catalog_cache})
    for n in (int(size) for size in args.sizes.split(",")):
        work = Path(tempfile.mkdtemp())
        seed, project = work / "seed", work / "project"
        project.mkdir()
        seed.mkdir(mode=0o700)
        pid, tasks = bench.seed_ledger(seed, project, n)
        modes = ["off"] if args.catalog_cache is None else ["off", "standby", "secret"]
        for checkout in args.checkouts:
            for run in range(2):
                for mode in modes:
                    data_root = work / f"data-{run}"
                    shutil.copytree(seed, data_root)
                    if (
                        args.prime
                    ):  # after the copy: a checkpoint names its file's inode (a copied one vouches for nothing)
                        bench._prime(data_root, pid, tasks[0])
                    catalog = None if mode == "off" else args.catalog_cache
                    peak = await _serve(data_root, str(project), checkout, catalog, mode == "secret")
                    row = {"events": n, "checkout": checkout, "run": run, "peak_rss_mb": round(peak, 1)}
                    rows.append(row if args.catalog_cache is None else {**row, "catalog": mode})
                    print(json.dumps(rows[-1]), flush=True)
                    shutil.rmtree(data_root)
        shutil.rmtree(work)
    if args.out:
        Path(args.out).write_text(json.dumps({"prime": args.prime, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--sizes", default="200,100000")
    parser.add_argument("--prime", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--catalog-cache", help="also run with the rule catalog on, its cache in this folder")
    asyncio.run(main(parser.parse_args()))
