"""intentloop benchmark: medians through the public surfaces only (method and figures: docs/BENCHMARK.md).

Run: ``python tools/bench/run.py [--sizes 200,10000,100000] [--sizes-only | --forget-only | --cli-reads] [--out FILE]``;
``--whole-ledger [--compare-with DIR] --repeats 3`` measures only the whole-ledger commands (cold ``verify``, the
checkpoint and index rebuild, ``recover export``), time and peak RSS of each process beside ``intentloop --version``.

Each figure is reported at each size, with the ratio of its value at the largest size to its value at the smallest
(measured in the same run, so machine load affects both) and the load average before and after the sizes.

Start-up is measured over raw pipes (no client library in the way), interleaved with its floor, a bare
``python -c "import trio, msgspec"`` process, in the same run; the project's modules are byte-compiled first, as a
user's ``pip install`` leaves them.

Ledgers are grown quickly by writing valid v1 events directly (the format is public and hash-checked), then every
figure is measured through a real surface: the MCP server over stdio with the official client, the hook process, and
the CLI. The lock holder of ``dead_owner_s`` and ``hook_held_lock_ms`` is a separate process that takes the ledger lock
through ``intentloop.store`` and is then killed (or kept alive).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from intentloop.model import canonical_bytes, event_line, project_id_for, seal, session_hash, sha256_hex
from intentloop.model.events import EventDraft
from intentloop.store import CHECKPOINT_NAME
from intentloop.store._injected import INJECTED_NAME

INTENTLOOP = shutil.which("intentloop") or str(Path(sys.executable).with_name("intentloop"))
SESSION_ID = "bench-session-0001"
TASKS = 50


# --------------------------------------------------------------------------------------------------- seeding
def _claim(statement: str, *, status: str, now: str, confidence: float | None = None) -> dict[str, Any]:
    role = {"explicit": "user", "inferred": "agent", "evidence": "evidence"}[status]
    kind = {"explicit": "user_event", "inferred": "agent_turn", "evidence": "tool_result"}[status]
    claim: dict[str, Any] = {
        "claim_id": str(uuid.uuid4()),
        "statement": statement,
        "role": role,
        "epistemic_status": status,
        "source_ref": {"kind": kind, "sha256": sha256_hex(statement)},
        "scope": "task",
        "valid_from": now,
        "last_confirmed": now if status == "explicit" else None,
        "supersedes": [],
        "facets": ["hard_constraint" if status == "explicit" else "outcome"],
        "related_claim_ids": [],
    }
    if confidence is not None:
        claim["confidence"] = confidence
    return claim


def seed_ledger(data_root: Path, project_root: Path, n_events: int) -> tuple[str, list[str]]:
    """Write ``n_events`` valid events over ``TASKS`` tasks; returns (project_id, task_ids)."""
    pid = project_id_for(os.path.realpath(project_root))
    pdir = data_root / "projects" / pid
    pdir.mkdir(parents=True, mode=0o700)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    task_ids = [str(uuid.uuid4()) for _ in range(TASKS)]
    lines: list[bytes] = []
    prev: str | None = None

    def add(draft: EventDraft) -> None:
        nonlocal prev
        ev = seal(draft, project_id=pid, prev_hash=prev)
        prev = ev.event_hash
        lines.append(event_line(ev))

    for i, tid in enumerate(task_ids):
        payload = {
            "mode": "on",
            "label": f"bench task {i}",
            "host_session_hash": session_hash(SESSION_ID) if i == 0 else None,
            "initial_claims": [],
            "request_fingerprint": sha256_hex(f"start-{i}"),
        }
        add(EventDraft(event_type="task_started", task_id=tid, actor="user", request_id=f"start-{i}", payload=payload))
    k = 0
    while len(lines) < n_events:  # the session's task (0) stays small: figures show the ledger's growth, not its own
        tid = task_ids[1 + k % (TASKS - 1)]
        status = ("explicit", "inferred", "evidence")[k % 3]
        claim = _claim(
            f"bench statement number {k} about keeping the public API stable",
            status=status,
            now=now,
            confidence=0.5 if status == "inferred" else None,
        )
        payload = {"claim": claim, "request_fingerprint": sha256_hex(canonical_bytes(claim))}
        add(
            EventDraft(
                event_type="claim_added", task_id=tid, actor=claim["role"], request_id=f"seed-{k}", payload=payload
            )
        )
        k += 1
    ledger = pdir / "ledger.jsonl"
    fd = os.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.writelines(lines)
    return pid, task_ids


# --------------------------------------------------------------------------------------------------- helpers
def _env(data_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTENT_LOOP_", "CODEX_HOME", "PLUGIN_DATA"))}
    env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    return env


def _server(data_root: Path) -> Client:
    params = StdioServerParameters(command=INTENTLOOP, args=["serve"], env={"INTENT_LOOP_DATA_DIR": str(data_root)})
    return Client(params, mode="legacy")


def _envelope(result: Any) -> dict[str, Any]:
    env = result.structured_content if hasattr(result, "structured_content") else result.structuredContent
    if not env or not env.get("ok"):
        raise RuntimeError(f"tool call failed: {env}")
    return dict(env)


def _hook(data_root: Path, payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [INTENTLOOP, "hook"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=_env(data_root),
        timeout=10,
        check=True,
    )
    elapsed = (time.perf_counter() - t0) * 1000
    return elapsed, json.loads(proc.stdout)


def _hold_lock(data_root: Path, project_id: str) -> subprocess.Popen[bytes]:
    """A separate process that takes the ledger lock through the store and sleeps while holding it."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from intentloop.store import ProjectStore\n"
        "store = ProjectStore(Path(sys.argv[1]), sys.argv[2])\n"
        "with store.locked():\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(data_root), project_id], stdout=subprocess.PIPE, env=_env(data_root)
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"held":
        raise RuntimeError("lock holder did not start")
    return proc


def _children_rss_mb(name: str) -> float:
    """Peak RSS (VmHWM) of this process's children whose command line contains ``name``."""
    best = 0.0
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if ppid != me or name not in cmd:
                continue
            for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]) / 1024)
        except (OSError, ValueError, IndexError):
            continue
    return best


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


# --------------------------------------------------------------------------------------------------- start-up
_INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
).encode()
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
_LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'


def _spawn_answers(data_root: Path, lines: list[bytes], answers: int) -> tuple[list[float], float]:
    """Spawn ``intentloop serve``, write ``lines`` at once; ms from spawn to each of the first ``answers`` answers,
    then ms from closing stdin to the process being gone."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [INTENTLOOP, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(data_root),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line + b"\n" for line in lines))
    proc.stdin.flush()
    times: list[float] = []
    buffer = b""
    while len(times) < answers:
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise RuntimeError("the server closed stdout before answering")
        buffer += chunk
        while b"\n" in buffer and len(times) < answers:
            _, buffer = buffer.split(b"\n", 1)
            times.append((time.perf_counter() - t0) * 1000)
    t1 = time.perf_counter()
    proc.stdin.close()
    proc.wait(timeout=30)
    exit_ms = (time.perf_counter() - t1) * 1000
    proc.stdout.close()
    return times, exit_ms


#: Floors of the hook figures, measured in the rounds of ``prompt_hook_ms``: a bare interpreter (``-S``: no ``site``),
#: the interpreter with ``site`` as this installation runs it (an editable install adds its finder, ~13 ms here, which
#: a user's install does not have), the libraries a reading hook (SessionStart) cannot do without — msgspec (imported
#: as the hook imports it), hashlib and pathlib — and those a writing hook cannot do without: the same, ctypes
#: (``renameat2`` for the lock) and cryptography's Ed25519 (the signed head).
PROMPT_FLOORS: dict[str, list[str]] = {
    "python_bare_ms": ["-S", "-c", "pass"],
    "python_site_ms": ["-c", "pass"],
    "read_libraries_ms": [
        "-c",
        "from intentloop.hooks._run import import_msgspec_alone; import_msgspec_alone(); import hashlib, pathlib",
    ],
    "hook_libraries_ms": [
        "-c",
        "from intentloop.hooks._run import import_msgspec_alone; import_msgspec_alone(); "
        "import hashlib, pathlib, ctypes; import cryptography.hazmat.primitives.asymmetric.ed25519",
    ],
}


def _process_ms(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True)
    return (time.perf_counter() - t0) * 1000


def _floor_ms() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import trio, msgspec"], check=True)
    return (time.perf_counter() - t0) * 1000


def _floor_ready_ms() -> float:
    """Spawn → the bare imports done (the line it prints after them): the floor without interpreter shutdown."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import trio, msgspec; print(1, flush=True)"], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    ready = (time.perf_counter() - t0) * 1000
    proc.wait()
    proc.stdout.close()
    return ready


def _busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def measure_startup(data_root: Path, runs: int = 11) -> dict[str, Any]:
    """Spawn → ``initialize`` and → ``tools/list`` answered, stdin closed → gone; beside the floor, same run."""
    floors, readies, starts, lists, exits, busy_lists, busy_floors = [], [], [], [], [], [], []
    for _ in range(runs):
        floors.append(_floor_ms())
        readies.append(_floor_ready_ms())
        (start,), exit_ms = _spawn_answers(data_root, [_INIT], 1)
        starts.append(start)
        exits.append(exit_ms)
        (_, listed), _ = _spawn_answers(data_root, [_INIT, _INITIALIZED, _LIST], 2)
        lists.append(listed)
    loops = _busy_loops(2)
    try:
        for _ in range(runs):
            busy_floors.append(_floor_ms())
            (_, listed), _ = _spawn_answers(data_root, [_INIT, _INITIALIZED, _LIST], 2)
            busy_lists.append(listed)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    floor = _median(floors)
    ready = _median(readies)
    return {
        "floor_ms": floor,
        "floor_ready_ms": ready,
        "start_ratio_to_ready": round(_median(starts) / ready, 2),
        "list_ratio_to_ready": round(_median(lists) / ready, 2),
        "start_ms": _median(starts),
        "start_ratio": round(_median(starts) / floor, 2),
        "list_ms": _median(lists),
        "list_ratio": round(_median(lists) / floor, 2),
        "list_busy_ms": _median(busy_lists),
        "floor_busy_ms": _median(busy_floors),
        "exit_ms": _median(exits),
        "runs": runs,
    }


def _compile_project() -> None:
    """Byte-compile the project's packages, as ``pip install`` does for a user (this machine may forbid writing
    bytecode at import time, which would charge every start with compiling)."""
    import compileall

    import intentloop

    compileall.compile_dir(str(Path(intentloop.__file__).parent), quiet=1)
    # and the redaction rule catalog's cache, as ``intentloop install`` builds it: on by default, it would otherwise be
    # compiled by the first server or hook measured (docs/REDACTION.md)
    from intentloop.store.catalog import ensure_rule_cache

    ensure_rule_cache(os.environ)


# --------------------------------------------------------------------------------------------------- forget
# Runs the command given as arguments; prints its wall time (s) and the peak RSS (KiB) of that child alone (a small
# parent: a large one's figure would be carried across fork + exec).
_CHILD_PEAK = (
    "import resource, subprocess, sys, time\n"
    "t0 = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "elapsed = time.perf_counter() - t0\n"
    "sys.stderr.buffer.write(done.stderr)\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(done.returncode, elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)\n"
)


def _child_run(data_root: Path, args: list[str]) -> tuple[float, float, float]:
    """(seconds, peak RSS in MB, CPU seconds: user + system) of one ``intentloop`` process. The CPU time is the figure
    a loaded machine moves least: on 2 cores shared with other work the wall time can be several times the CPU time."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_PEAK, INTENTLOOP, *args], capture_output=True, env=_env(data_root), check=True
    )
    code, elapsed, peak, cpu = done.stdout.split()
    if int(code) != 0:
        raise RuntimeError(f"intentloop {' '.join(args)} failed: {done.stderr.decode()[-500:]}")
    return float(elapsed), int(peak) / 1024, float(cpu)


def _claims_at(ledger: Path, count: int) -> list[str]:
    """Claim ids spread over the ledger (the deletion re-chains everything after its claim: the middle is typical)."""
    total = ledger.stat().st_size
    ids = []
    with ledger.open("rb") as fh:
        for i in range(count):
            fh.seek(total * (i + 1) // (count + 2))
            fh.readline()
            event = json.loads(fh.readline())
            ids.append(event["payload"]["claim"]["claim_id"])
    return ids


def measure_forget(data_root: Path, project_id: str, repeats: int = 3) -> dict[str, Any]:
    """``intentloop forget claim ID --yes`` (the whole operation: a fresh process, the lock, the streamed rewrite and
    the read-back scans), its child's peak RSS and CPU time, beside the floor ``intentloop --version`` measured after
    each deletion (same load). The ledger has a checkpoint (written by an earlier write, as any ledger intentloop has
    written to), each deletion removing a claim from another place of the ledger."""
    ledger = data_root / "projects" / project_id / "ledger.jsonl"
    claims = _claims_at(ledger, repeats)
    runs: dict[str, list[float]] = {name: [] for name in ("s", "rss", "cpu", "floor_s", "floor_rss", "floor_cpu")}
    for claim in claims:
        args = ["forget", "claim", claim, "--project-id", project_id, "--yes", "--json"]
        for prefix, command in (("", args), ("floor_", ["--version"])):
            elapsed, peak, cpu = _child_run(data_root, command)
            runs[prefix + "s"].append(elapsed)
            runs[prefix + "rss"].append(peak)
            runs[prefix + "cpu"].append(cpu)
    return {
        "forget_claim_s": round(statistics.median(runs["s"]), 3),
        "forget_claim_cpu_s": round(statistics.median(runs["cpu"]), 3),
        "forget_claim_rss_mb": round(max(runs["rss"]), 1),
        "version_s": round(statistics.median(runs["floor_s"]), 3),
        "version_cpu_s": round(statistics.median(runs["floor_cpu"]), 3),
        "version_rss_mb": round(max(runs["floor_rss"]), 1),
    }


def _prime(data_root: Path, project_id: str, task_id: str) -> None:
    """One ordinary write to a freshly seeded ledger (verified a chunk at a time on entering the lock), so it has the
    checkpoint and the task index every ledger intentloop has written to has."""
    from intentloop.store import ProjectStore

    draft = EventDraft(
        event_type="mode_set", task_id=task_id, actor="user", request_id="bench-prime", payload={"mode": "on"}
    )
    with ProjectStore(data_root, project_id).locked() as ledger:
        ledger.append([draft])


# --------------------------------------------------------------------------------------------------- figures
async def measure_size(n: int, work: Path, repeats: int) -> dict[str, Any]:
    data_root = work / f"data-{n}"
    project = work / f"project-{n}"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    project_id, task_ids = seed_ledger(data_root, project, n)
    root = str(project)
    row: dict[str, Any] = {"events": n}

    async with _server(data_root) as client:
        started = _envelope(
            await client.call_tool("intent_start_task", {"project_root": root, "request_id": "bench-measured"})
        )
        task = started["task_id"]
        adds = []
        for i in range(repeats):
            args = {
                "project_root": root,
                "task_id": task,
                "request_id": f"bench-add-{i}",
                "statement": f"the user probably prefers small commits ({i})",
                "source_ref": {"kind": "agent_turn", "event_id": f"turn-{i}"},
                "facets": ["soft_constraint"],
                "confidence": 0.6,
            }
            t0 = time.perf_counter()
            _envelope(await client.call_tool("intent_add_inference", args))
            adds.append((time.perf_counter() - t0) * 1000)
        snaps = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _envelope(await client.call_tool("intent_get_snapshot", {"project_root": root, "task_id": task}))
            snaps.append((time.perf_counter() - t0) * 1000)
        row["add_ms"] = _median(adds)
        row["snapshot_ms"] = _median(snaps)
        row["peak_rss_mb"] = round(_children_rss_mb("serve"), 1)

    base = {"session_id": SESSION_ID, "cwd": root, "transcript_path": "/nonexistent", "model": "bench"}
    hooks = []
    for _ in range(max(7, repeats // 2)):
        ms, out = _hook(data_root, {**base, "hook_event_name": "SessionStart", "source": "startup"})
        if task_ids[0] not in json.dumps(out):
            raise RuntimeError(f"SessionStart did not link the seeded task: {out}")
        hooks.append(ms)
    row["hook_ms"] = _median(hooks)
    prompts: list[float] = []
    floors: dict[str, list[float]] = {name: [] for name in PROMPT_FLOORS}
    # The prompt hook leaves out a context it already injected into the session (docs/HOOKS.md): each run forgets that,
    # so every run measures the whole path, the context answered included, as before that memory existed.
    injected = data_root / "projects" / project_id / INJECTED_NAME
    for i in range(max(15, repeats)):
        payload = {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"turn-{n}-{i}", "prompt": "go on"}
        injected.unlink(missing_ok=True)
        ms, out = _hook(data_root, payload)
        if task_ids[0] not in json.dumps(out):
            raise RuntimeError(f"UserPromptSubmit did not answer with the linked task: {out}")
        prompts.append(ms)
        for name, code in PROMPT_FLOORS.items():  # interleaved: the same load as the hook beside them
            floors[name].append(_process_ms(code))
    row["prompt_hook_ms"] = _median(prompts)
    for name, values in floors.items():
        row[name] = _median(values)
    # The first prompt after the checkpoint is gone (written before checkpoints existed, a foreign append, a writer
    # killed before it): how long the host waits, and how long until the checkpoint vouches for the file again.
    checkpoint = data_root / "projects" / project_id / CHECKPOINT_NAME
    colds, rebuilt, answered = [], [], []
    for i in range(3):
        # Each run starts vouched: at 1,000,000 events an earlier hook's background child may still be writing the
        # checkpoint (a rebuild takes ~20 s there), and a cold prompt's child defers to a child already running.
        _wait_for(checkpoint)
        checkpoint.unlink()
        payload = {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"turn-{n}-cold-{i}", "prompt": "go on"}
        injected.unlink(missing_ok=True)
        t0 = time.perf_counter()
        ms, out = _hook(data_root, payload)
        while not checkpoint.exists() and time.perf_counter() - t0 < 120:
            time.sleep(0.005)
        colds.append(ms)
        rebuilt.append(time.perf_counter() - t0)
        answered.append(task_ids[0] in json.dumps(out))
    row["cold_prompt_hook_ms"] = _median(colds)
    row["cold_rebuilt_s"] = round(statistics.median(rebuilt), 3)
    row["cold_prompt_with_context"] = sum(answered)
    verifies = []
    verified = True
    for _ in range(3):
        t0 = time.perf_counter()
        verify = subprocess.run(
            [INTENTLOOP, "verify", "--project-id", project_id, "--json"], capture_output=True, env=_env(data_root)
        )
        verifies.append(time.perf_counter() - t0)
        verified = verified and verify.returncode == 0
    row["verify_s"] = round(statistics.median(verifies), 3)
    row["verified"] = verified
    row.update(measure_forget(data_root, project_id))
    row.update(measure_cli_reads(data_root, project_id, task, rounds=max(5, repeats // 3)))
    return row


def _wait_for(path: Path, timeout_s: float = 600) -> None:
    """Wait until ``path`` exists (a background child writes it after the hook has answered)."""
    t0 = time.perf_counter()
    while not path.exists():
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"{path.name} did not appear within {timeout_s:.0f} s")
        time.sleep(0.05)


def measure_cli_size(n: int, work: Path, rounds: int) -> dict[str, Any]:
    """The CLI read figures alone (``--cli-reads``): a seeded ledger, one prompt hook that records an observation (its
    write leaves the checkpoint and the task index, as any write does), then the read commands on the session's task
    (one observation, no claim)."""
    data_root = work / f"data-cli-{n}"
    project = work / f"project-cli-{n}"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    project_id, task_ids = seed_ledger(data_root, project, n)
    base = {"session_id": SESSION_ID, "cwd": str(project), "transcript_path": "/nonexistent", "model": "bench"}
    checkpoint = data_root / "projects" / project_id / CHECKPOINT_NAME
    _hook(data_root, {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"cli-{n}", "prompt": "go on"})
    _wait_for(checkpoint)
    return {"events": n, **measure_cli_reads(data_root, project_id, task_ids[0], rounds)}


#: The CLI's read commands measured beside their floor, ``intentloop --version`` (the same entry point, no fast path
#: of its own), in interleaved rounds: (figure name, arguments after ``intentloop``; ``{pid}``/``{task}`` filled in).
CLI_READS: list[tuple[str, list[str]]] = [
    ("version", ["--version"]),
    ("status", ["status"]),
    ("projects", ["projects"]),
    ("tasks", ["tasks", "--project-id", "{pid}"]),
    ("show", ["show", "{task}", "--project-id", "{pid}"]),
    ("export_markdown", ["export", "{task}", "--format", "markdown", "--project-id", "{pid}"]),
]


#: Runs a command and reports its wall time and peak RSS. Why a small intermediate process: ``ru_maxrss`` counts the
#: pages a forked child shares with its parent before ``exec``, so a command forked from this (large) process would
#: show this process's size; forked from an interpreter started without ``site`` it shows the command's own.
_MEASURE = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
cpu = (usage.ru_utime + usage.ru_stime) * 1000
sys.stderr.write("\\nmeasured %.3f %d %.3f\\n" % ((time.perf_counter() - t0) * 1000, usage.ru_maxrss, cpu))
sys.exit(os.waitstatus_to_exitcode(status))
"""


#: Floors beside ``--version``: what a command pays before it reads anything — the CLI with typer's option parsing
#: (typer imports pydantic to coerce any option; ``--version`` has none), and that plus trio and the service (``show``
#: and ``export`` run the tool through the service under ``trio.run``).
CLI_FLOORS: list[tuple[str, list[str]]] = [
    ("floor_options", ["-c", "import intentloop.cli.app, typer._adapters"]),
    ("floor_service", ["-c", "import intentloop.cli.app, typer._adapters, trio, intentloop.service.intent_service"]),
]


def _cli_run(data_root: Path, args: list[str], program: str = INTENTLOOP) -> tuple[float, float, float]:
    """Fork → exit of one ``intentloop`` command (ms), its peak RSS (MB, ``wait4``'s ``ru_maxrss`` of it) and its CPU
    time (user + system, ms: what a loaded machine moves least)."""
    proc = subprocess.run(
        [sys.executable, "-S", "-c", _MEASURE, program, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(data_root),
        check=False,
    )
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"intentloop {' '.join(args)} exited {proc.returncode}: {err}")
    _label, ms, kb, cpu = err.rsplit("\n", 2)[-2].split()
    return float(ms), int(kb) / 1024, float(cpu)


def measure_cli_reads(data_root: Path, project_id: str, task_id: str, rounds: int) -> dict[str, Any]:
    """Median time and peak RSS of each read command, each round running every command once (same load for all),
    and each command's time as a multiple of ``intentloop --version``'s in the same rounds."""
    times: dict[str, list[float]] = {name: [] for name, _ in [*CLI_READS, *CLI_FLOORS]}
    rss: dict[str, list[float]] = {name: [] for name, _ in [*CLI_READS, *CLI_FLOORS]}
    cpu: dict[str, list[float]] = {name: [] for name, _ in [*CLI_READS, *CLI_FLOORS]}
    for _ in range(rounds):
        runs = [(name, [a.format(pid=project_id, task=task_id) for a in t], INTENTLOOP) for name, t in CLI_READS]
        for name, args, program in [*runs, *((name, args, sys.executable) for name, args in CLI_FLOORS)]:
            ms, mb, cpu_ms = _cli_run(data_root, args, program=program)
            times[name].append(ms)
            rss[name].append(mb)
            cpu[name].append(cpu_ms)
    floor = statistics.median(times["version"])
    floor_cpu = statistics.median(cpu["version"])
    out: dict[str, Any] = {}
    for name, _ in [*CLI_READS, *CLI_FLOORS]:
        out[f"cli_{name}_ms"] = _median(times[name])
        out[f"cli_{name}_cpu_ms"] = _median(cpu[name])
        out[f"cli_{name}_rss_mb"] = round(max(rss[name]), 1)
        if name != "version":
            out[f"cli_{name}_x_version"] = round(statistics.median(times[name]) / floor, 2)
            out[f"cli_{name}_cpu_x_version"] = round(statistics.median(cpu[name]) / floor_cpu, 2)
    return out


FIGURES = [
    "add_ms",
    "snapshot_ms",
    "hook_ms",
    "prompt_hook_ms",
    *PROMPT_FLOORS,
    "cold_prompt_hook_ms",
    "cold_rebuilt_s",
    "peak_rss_mb",
    "verify_s",
    "forget_claim_s",
    "forget_claim_cpu_s",
    "forget_claim_rss_mb",
    "version_s",
    "version_cpu_s",
    *(f"cli_{name}_{unit}" for name, _ in CLI_READS for unit in ("ms", "rss_mb")),
]


# ------------------------------------------------------------------------------------------ whole-ledger work
#: Runs its arguments as one child; prints the child's wall time (s), peak RSS (KiB, Linux ``ru_maxrss``), exit code
#: and CPU time (user + system, s: it moves less with the machine's load than wall time).
_PEAK = (
    "import resource, subprocess, sys, time\n"
    "t0 = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(time.perf_counter() - t0, usage.ru_maxrss, code, usage.ru_utime + usage.ru_stime)\n"
)
#: A writer's first write when no checkpoint vouches for the ledger: through the store, as a hook's background child
#: and every other cold writer enter the lock (the checkpoint and the task index are rebuilt on the way), with the
#: cyclic garbage collector off as in the hook process (``hooks/_run.py``) and in ``intentloop verify``.
_FIRST_WRITE = (
    "import gc, sys\n"
    "gc.disable()\n"
    "from intentloop.model import EventDraft\n"
    "from intentloop.store import ProjectStore\n"
    "with ProjectStore(sys.argv[1], sys.argv[2]).locked(lazy=True) as ledger:\n"
    "    ledger.append([EventDraft(event_type='claim_added', task_id=sys.argv[3], actor='user',\n"
    "                              request_id=sys.argv[4], payload={'n': 1})])\n"
)


def _peak(command: list[str], env: dict[str, str]) -> tuple[float, float, int, float]:
    """(seconds, peak RSS in MB, exit code, CPU seconds) of ``command`` run alone under a wrapper process."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, *command], env=env, capture_output=True, check=True, timeout=3600
    ).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2]), float(out[3])


def _drop_caches(project_dir: Path) -> None:
    """Remove the checkpoint and every task index (as a foreign append or an upgrade leaves the ledger)."""
    (project_dir / CHECKPOINT_NAME).unlink(missing_ok=True)
    for entry in project_dir.iterdir():
        if entry.name.startswith("index-"):
            shutil.rmtree(entry)


def _hook_children_peak(data_root: Path, payload: dict[str, Any], env: dict[str, str]) -> tuple[float, float, int]:
    """A UserPromptSubmit hook process on a ledger nothing vouches for: (seconds until every ``intentloop hook``
    process it left is gone, the highest ``VmHWM`` any of them reached in MB, its exit code). Above 16 MiB its child
    answers at once and rebuilds the checkpoint in the background (docs/HOOKS.md); that child is sampled every 10 ms
    from ``/proc`` (its peak, a high-water mark, is only read until it exits: a lower bound within 10 ms)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [INTENTLOOP, "hook"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    mine = f"INTENT_LOOP_DATA_DIR={data_root}".encode()
    peak = 0.0
    seen = True
    while (seen or proc.poll() is None) and time.perf_counter() - t0 < 300:
        seen = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if INTENTLOOP.encode() not in cmd or b"hook" not in cmd:
                    continue
                if mine not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    continue  # another data root's hook (tests, another run)
                for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
                        seen = True
            except (OSError, ValueError):
                continue
        time.sleep(0.01)
    code = proc.wait()
    return time.perf_counter() - t0, peak, code


def measure_whole_ledger(n: int, work: Path, runs: int, checkouts: dict[str, str | None]) -> dict[str, Any]:
    """Cold ``verify``, the checkpoint and index rebuild (first write) and ``recover export``: medians of time and
    peak RSS, each beside the floor ``intentloop --version`` measured in the same rounds, for each checkout."""
    data_root = work / f"whole-{n}"
    project = work / f"whole-project-{n}"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    t0 = time.perf_counter()
    project_id, task_ids = seed_ledger(data_root, project, n)
    project_dir = data_root / "projects" / project_id
    row: dict[str, Any] = {
        "events": n,
        "ledger_mb": round((project_dir / "ledger.jsonl").stat().st_size / 1e6, 1),
        "seed_s": round(time.perf_counter() - t0, 1),
    }
    for label, code in checkouts.items():
        env = _env(data_root)
        if code is not None:
            env["PYTHONPATH"] = code
        figures: dict[str, list[tuple[float, float, int, float]]] = {}
        for round_ in range(runs):
            figures.setdefault("floor", []).append(_peak([INTENTLOOP, "--version"], env))
            figures.setdefault("verify", []).append(
                _peak([INTENTLOOP, "verify", "--project-id", project_id, "--json"], env)
            )
            _drop_caches(project_dir)
            request = f"bench-first-write-{label}-{round_}"
            first_write = [sys.executable, "-P", "-c", _FIRST_WRITE, str(data_root), project_id, task_ids[1], request]
            figures.setdefault("rebuild", []).append(_peak(first_write, env))
            _drop_caches(project_dir)
            payload = {
                "session_id": SESSION_ID,
                "cwd": str(project),
                "transcript_path": "/nonexistent",
                "model": "bench",
                "hook_event_name": "UserPromptSubmit",
                "turn_id": f"whole-{label}-{round_}",
                "prompt": "go on",
            }
            seconds, peak, code = _hook_children_peak(data_root, payload, env)
            figures.setdefault("hook_background", []).append((seconds, peak, code, 0.0))
            out = work / f"export-{n}.jsonl"
            export = [INTENTLOOP, "recover", "export", "--project-id", project_id, "--out", str(out), "--overwrite"]
            figures.setdefault("recover_export", []).append(_peak(export, env))
            out.unlink(missing_ok=True)
        for name, values in figures.items():
            if any(code != 0 for _s, _mb, code, _cpu in values):
                raise RuntimeError(f"{label} {name} failed at {n} events: {values}")
            row[f"{label}_{name}_s"] = round(statistics.median(s for s, _mb, _c, _cpu in values), 3)
            row[f"{label}_{name}_cpu_s"] = round(statistics.median(cpu for _s, _mb, _c, cpu in values), 3)
            row[f"{label}_{name}_mb"] = round(statistics.median(mb for _s, mb, _c, _cpu in values), 1)
    shutil.rmtree(data_root)
    return row


async def whole_ledger_main(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    checkouts: dict[str, str | None] = {"this": None}
    if args.compare_with:
        checkouts["other"] = str(Path(args.compare_with).resolve())
    _compile_project()
    rows = []
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="intentloop-bench-") as tmp:
        for n in sizes:
            rows.append(measure_whole_ledger(n, Path(tmp), args.repeats, checkouts))
            print(json.dumps(rows[-1]), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "command": "python tools/bench/run.py " + " ".join(sys.argv[1:]),
        "load_average": {"before_sizes": load_before, "after_sizes": _load()},
        "checkouts": {label: code or "this checkout" for label, code in checkouts.items()},
        "whole_ledger": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


def ratios(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each figure at the largest size divided by the same figure at the smallest (same run)."""
    small, large = rows[0], rows[-1]
    return {f: (round(large[f] / small[f], 2) if small.get(f) else None) for f in FIGURES}


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


async def _writer(data_root: Path, root: str, idx: int, writes: int) -> str:
    """One writer process: its own server, ``writes`` acknowledged evidence writes; prints ``acked first last``."""
    acked = 0
    async with _server(data_root) as client:
        started = _envelope(
            await client.call_tool("intent_start_task", {"project_root": root, "request_id": f"writer-{idx}"})
        )
        first = time.time()
        for i in range(writes):
            args = {
                "project_root": root,
                "task_id": started["task_id"],
                "request_id": f"w{idx}-{i}",
                "statement": f"writer {idx} observed result {i}",
                "source_ref": {"kind": "tool_result", "event_id": f"w{idx}-{i}"},
                "facets": ["result_feedback"],
            }
            _envelope(await client.call_tool("intent_add_evidence", args))
            acked += 1
        last = time.time()
    return f"{acked} {first} {last}"


async def measure_writers(work: Path, writers: int = 8, writes: int = 50) -> dict[str, Any]:
    data_root = work / "data-writers"
    project = work / "project-writers"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    project_id, _ = seed_ledger(data_root, project, 200)
    procs = []
    t0 = time.perf_counter()
    for i in range(writers):
        cmd = [sys.executable, __file__, "--writer", str(i), "--writes", str(writes), str(data_root), str(project)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE))
    acked = 0
    firsts, lasts = [], []
    for p in procs:
        out, _ = p.communicate(timeout=900)
        count, first, last = out.split()
        acked += int(count)
        firsts.append(float(first))
        lasts.append(float(last))
    elapsed = time.perf_counter() - t0
    # Throughput while the writers overlap: from the first write of any writer to the last write of any writer
    # (server start-up excluded); the wall time including 8 server start-ups is reported beside it.
    write_window = max(lasts) - min(firsts)
    verify = subprocess.run(
        [INTENTLOOP, "verify", "--project-id", project_id, "--json"], capture_output=True, env=_env(data_root)
    )
    report = json.loads(verify.stdout or b"{}")
    return {
        "writers": writers,
        "writes_each": writes,
        "acknowledged": acked,
        "writers_per_s": round(acked / write_window, 1),
        "wall_s_incl_startup": round(elapsed, 2),
        "events_after": report.get("events"),
        "verified": verify.returncode == 0,
    }


async def measure_lock_faults(work: Path) -> dict[str, Any]:
    data_root = work / "data-locks"
    project = work / "project-locks"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    project_id, _ = seed_ledger(data_root, project, 200)
    root = str(project)
    out: dict[str, Any] = {}
    async with _server(data_root) as client:
        started = _envelope(await client.call_tool("intent_start_task", {"project_root": root, "request_id": "lk"}))
        holder = _hold_lock(data_root, project_id)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        t0 = time.perf_counter()
        args = {
            "project_root": root,
            "task_id": started["task_id"],
            "request_id": "after-kill",
            "statement": "the write after a killed lock holder",
            "source_ref": {"kind": "tool_result", "event_id": "after-kill"},
            "facets": ["result_feedback"],
        }
        _envelope(await client.call_tool("intent_add_evidence", args))
        out["dead_owner_s"] = round(time.perf_counter() - t0, 3)

    holder = _hold_lock(data_root, project_id)
    try:
        payload = {
            "session_id": SESSION_ID,
            "cwd": root,
            "transcript_path": "/nonexistent",
            "hook_event_name": "UserPromptSubmit",
            "turn_id": "held-lock-turn",
            "prompt": "while the lock is held",
        }
        ms, answer = _hook(data_root, payload)
        out["hook_held_lock_ms"] = round(ms, 1)
        out["hook_held_lock_continue"] = answer.get("continue") is True
    finally:
        holder.kill()
        holder.wait()
    out["hook_stuck_stdin_ms"] = _median([_stuck_stdin_ms(data_root) for _ in range(5)])
    out["hook_stuck_stdin_deadline_ms"] = STUCK_STDIN_DEADLINE_S * 1000
    return out


STUCK_STDIN_DEADLINE_S = 0.6


def _stuck_stdin_ms(data_root: Path) -> float:
    """Spawn → exit of a hook whose stdin never ends, under a 0.6 s deadline (its watchdog answers fail-open)."""
    env = {**_env(data_root), "INTENT_LOOP_HOOK_DEADLINE_S": str(STUCK_STDIN_DEADLINE_S)}
    t0 = time.perf_counter()
    with subprocess.Popen(
        [INTENTLOOP, "hook"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"hook_event_name": "SessionStart"')  # and never close it
        proc.stdin.flush()
        answer = proc.stdout.read()
        proc.wait(timeout=30)
        elapsed = (time.perf_counter() - t0) * 1000
    if b'"continue":true' not in answer:
        raise RuntimeError(f"the stuck hook did not answer fail-open: {answer!r}")
    return elapsed


def _machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


async def main(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    _compile_project()
    if args.forget_only:
        await forget_only(sizes, args.out)
        return
    if args.cli_reads:
        cli_rows = []
        with tempfile.TemporaryDirectory(prefix="intentloop-bench-") as tmp:
            for n in sizes:
                cli_rows.append(measure_cli_size(n, Path(tmp), args.repeats))
                print(json.dumps(cli_rows[-1]), flush=True)
        cli_result = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": _machine(),
            "command": "python tools/bench/run.py " + " ".join(sys.argv[1:]),
            "load_average_after": _load(),
            "cli_reads": cli_rows,
        }
        print(json.dumps(cli_result, indent=1))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(cli_result, indent=1) + "\n")
        return
    with tempfile.TemporaryDirectory(prefix="intentloop-bench-") as tmp:
        work = Path(tmp)
        startup: dict[str, Any] = {}
        if not args.sizes_only:
            startup = measure_startup(work / "data-startup")
            print(json.dumps({"startup": startup}, indent=1), flush=True)
        load_before = _load()
        rows = []
        for n in sizes:
            rows.append(await measure_size(n, work, args.repeats))
            print(json.dumps(rows[-1]), flush=True)
        load_after = _load()
        writers: dict[str, Any] = {}
        locks: dict[str, Any] = {}
        if not args.sizes_only:
            writers = await measure_writers(work)
            locks = await measure_lock_faults(work)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "command": "python tools/bench/run.py " + " ".join(sys.argv[1:]),
        "load_average": {"before_sizes": load_before, "after_sizes": load_after},
        "startup": startup,
        "sizes": rows,
        "ratio_largest_to_smallest": ratios(rows),
        "writers": writers,
        "locks": locks,
    }
    cols = ["events", *FIGURES, "verified"]
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row.get(c)) for c in cols))
    print("ratio " + " | ".join(str(result["ratio_largest_to_smallest"][f]) for f in FIGURES))
    print(f"load average before/after the sizes: {load_before} / {load_after}")
    print(json.dumps({"startup": startup, "writers": writers, "locks": locks}, indent=1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


async def forget_only(sizes: list[int], out: str) -> None:
    """Only the deletion figures: seed each size, then :func:`measure_forget` (``--forget-only``)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="intentloop-bench-") as tmp:
        for n in sizes:
            data_root, project = Path(tmp) / f"data-{n}", Path(tmp) / f"project-{n}"
            data_root.mkdir(mode=0o700)
            project.mkdir()
            t0 = time.perf_counter()
            project_id, tasks = seed_ledger(data_root, project, n)
            _prime(data_root, project_id, tasks[1])
            seeded = round(time.perf_counter() - t0, 1)
            load = _load()
            row = {"events": n, "seed_s": seeded, "load_average_before": load, **measure_forget(data_root, project_id)}
            row["load_average_after"] = _load()
            rows.append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(data_root)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "command": "python tools/bench/run.py " + " ".join(sys.argv[1:]),
        "sizes": rows,
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


def _writer_main(argv: list[str]) -> None:
    idx, writes, data_root, project = int(argv[0]), int(argv[1]), Path(argv[2]), argv[3]
    print(anyio.run(_writer, data_root, project, idx, writes, backend="trio"))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        _writer_main([sys.argv[2], sys.argv[4], sys.argv[5], sys.argv[6]])
        raise SystemExit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,10000,100000")
    parser.add_argument("--sizes-only", action="store_true", help="skip start-up, writers and lock figures")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--forget-only", action="store_true", help="only seed each size and measure forget claim")
    parser.add_argument("--out", default="tools/bench/results/latest.json")
    parser.add_argument(
        "--cli-reads", action="store_true", help="only the CLI read commands beside --version (--repeats rounds)"
    )
    parser.add_argument(
        "--whole-ledger",
        action="store_true",
        help="only cold verify, the checkpoint rebuild and recover export (time and peak RSS beside the floor)",
    )
    parser.add_argument(
        "--compare-with",
        metavar="DIR",
        help="with --whole-ledger: also measure the checkout at DIR (first on PYTHONPATH) on the same ledgers",
    )
    parsed = parser.parse_args()
    anyio.run(whole_ledger_main if parsed.whole_ledger else main, parsed, backend="trio")
