"""``intentloop demo``: a guided tour in a throwaway data root, through the real surfaces only.

Everything runs as it would for a user: ``intentloop serve`` as a subprocess driven by the official MCP client, a real
``intentloop hook`` process, a real ``intentloop verify``. Each step also checks what it shows, so the demo doubles as
a smoke test: it exits 0 only when every promise it makes on screen held.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from intentloop.cli._exit import OK
from intentloop.cli._output import Output
from intentloop.cli._table import Panel, Table
from intentloop.errors import IntentLoopError

if TYPE_CHECKING:
    from intentloop.cli._demo_client import DemoSession

KeepOption = Annotated[
    bool,
    typer.Option("--keep", help="Keep the temporary folder afterwards; print its path and how to point the CLI at it."),
]

USER_OUTCOME = "Add a CSV export of invoices to the reports page."
USER_CONSTRAINT = "Do not change the public API of the billing module."
INFERENCE = "The user probably wants ISO 8601 dates in the CSV."
EVIDENCE = "pytest tests/reports passed: 42 passed, 0 failed."
UNKNOWN = "Should archived invoices be included in the export?"


def demo(keep: KeepOption = False) -> int:
    """A self-contained walkthrough: a real MCP client talks to a real `intentloop serve` in a temporary data root.

    Starts a task with the user's words, adds an inference and evidence, shows the snapshot and what a hook
    injects, simulates a crash that tears the ledger's last line, and shows `verify` finding it and the next
    write repairing it. Touches nothing outside its temporary folder. Exit 0 when every step held.
    """
    out = Output("demo", json_mode=False)
    return out.guard(lambda: _run(out, keep=keep))


@dataclass(frozen=True)
class _Setup:
    """Where the tour happens and how it starts intentloop."""

    work: Path
    data_root: Path
    project: Path
    program: tuple[str, ...]
    env: dict[str, str]
    session_id: str


def _catalog_settings() -> dict[str, str]:
    """The redaction rule catalog's variables of this environment, for the demo's server (the MCP SDK passes a server
    only a few safe variables): the tour redacts as the user's own installation does, with its rule cache."""
    from intentloop.store.catalog import ENV_CATALOG, ENV_CATALOG_CACHE

    return {name: os.environ[name] for name in (ENV_CATALOG, ENV_CATALOG_CACHE, "XDG_CACHE_HOME") if name in os.environ}


def _run(out: Output, *, keep: bool) -> int:
    import anyio

    from intentloop.cli.install import default_program

    work = Path(tempfile.mkdtemp(prefix="intentloop-demo-"))
    project = work / "project"
    project.mkdir()
    setup = _Setup(
        work=work,
        data_root=work / "data",
        project=Path(os.path.realpath(project)),
        program=default_program(),
        env={"INTENT_LOOP_DATA_DIR": str(work / "data"), **_catalog_settings()},
        session_id=f"demo-session-{uuid.uuid4()}",
    )
    started = time.monotonic()
    try:
        anyio.run(_tour, out, setup, backend="trio")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    where = f"kept in {work}" if keep else "removed (use --keep to inspect it)"
    out.line("")
    out.line(f"All steps held, in {elapsed:.1f} s. The temporary folder was {where}.", style="bold green")
    if keep:
        import shlex

        out.line("To look at what it kept with the CLI, point it at the demo's data root and project:")
        out.line(f"  export INTENT_LOOP_DATA_DIR={shlex.quote(str(setup.data_root))}")
        out.line(f"  cd {shlex.quote(str(setup.project))} && intentloop tasks")
    return OK


async def _tour(out: Output, setup: _Setup) -> None:
    from intentloop.cli._demo_client import open_demo_session

    out.show(
        Panel(
            "intentloop keeps what the user of a coding agent actually wants: small claims with their source,\n"
            "in a hash-chained ledger per project. This tour runs the real server, hook and CLI in a\n"
            f"throwaway folder:\n  data root  {setup.data_root}\n  project    {setup.project}",
            title="intentloop demo",
        )
    )
    _step(out, 1, "Start `intentloop serve` and connect the official MCP client over stdio")
    async with open_demo_session([*setup.program, "serve"], setup.env) as session:
        facts = session.facts
        out.line(f"   connected to {facts.name} {facts.version} over MCP {facts.protocol_version}")
        out.line(f"   {len(facts.tools)} tools, intent_status ... intent_delete; this tour uses five of them")
        task_id, project_id = await _start_task(out, session, setup)
        await _add_agent_records(out, session, setup, task_id)
        await _show_snapshot(out, session, setup, task_id)
        await _show_hook(out, setup, task_id)
        await _crash_and_repair(out, session, setup, task_id, project_id)


def _step(out: Output, number: int, title: str) -> None:
    out.line("")
    out.line(f"{number}. {title}", style="bold cyan")


def _args(setup: _Setup, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"project_root": str(setup.project)}
    if task_id is not None:
        base["task_id"] = task_id
    return {**base, **extra}


def _ok(envelope: dict[str, Any], what: str) -> Any:
    if not envelope.get("ok"):
        error = envelope.get("error") or {}
        raise IntentLoopError(f"demo step failed: {what}: {error.get('code')}: {error.get('message')}")
    return envelope.get("result")


async def _start_task(out: Output, session: DemoSession, setup: _Setup) -> tuple[str, str]:
    _step(out, 2, "The user says what they want: intent_start_task with the user's own words")
    out.line(f'   user: "{USER_OUTCOME}"')
    out.line(f'   user: "{USER_CONSTRAINT}"')
    envelope = await session.call(
        "intent_start_task",
        _args(
            setup,
            request_id="demo-start",
            label="CSV export",
            host_session_id=setup.session_id,
            initial_explicit=[
                {"statement": USER_OUTCOME, "scope": "task", "facets": ["outcome"]},
                {"statement": USER_CONSTRAINT, "scope": "project", "facets": ["hard_constraint"]},
            ],
        ),
    )
    snapshot = _ok(envelope, "intent_start_task")
    task_id = str(envelope.get("task_id") or snapshot["task_id"])
    project_id = str(envelope["project_id"])
    out.line(f"   task {task_id} started with {len(snapshot['active_claims'])} user-explicit claims")
    return task_id, project_id


async def _add_agent_records(out: Output, session: DemoSession, setup: _Setup, task_id: str) -> None:
    _step(out, 3, "The agent adds an inference and a piece of evidence (never mistaken for the user's words)")
    inference = _ok(
        await session.call(
            "intent_add_inference",
            _args(
                setup,
                task_id,
                request_id="demo-inference",
                statement=INFERENCE,
                source_ref={"kind": "agent_turn", "event_id": "turn-1"},
                facets=["soft_constraint"],
                confidence=0.6,
            ),
        ),
        "intent_add_inference",
    )
    out.line(f'   inference (confidence {inference.get("confidence")}): "{INFERENCE}"')
    _ok(
        await session.call(
            "intent_add_evidence",
            _args(
                setup,
                task_id,
                request_id="demo-evidence",
                statement=EVIDENCE,
                source_ref={"kind": "tool_result", "event_id": "pytest-run-1"},
                facets=["success_signal"],
                feedback_class="keep",
            ),
        ),
        "intent_add_evidence",
    )
    out.line(f'   evidence (tool result): "{EVIDENCE}"')


async def _show_snapshot(out: Output, session: DemoSession, setup: _Setup, task_id: str) -> None:
    _step(out, 4, "The snapshot: what an agent reads back with intent_get_snapshot")
    snapshot = _ok(await session.call("intent_get_snapshot", _args(setup, task_id)), "intent_get_snapshot")
    table = Table()
    table.add_column("status")
    table.add_column("role")
    table.add_column("facets")
    table.add_column("statement")
    for claim in snapshot["active_claims"]:
        table.add_row(
            str(claim["epistemic_status"]),
            str(claim["role"]),
            ", ".join(claim.get("facets", [])),
            str(claim["statement"]),
        )
    out.show(table)
    out.show(Panel(str(snapshot["compact_text"]), title="compact_text"))


async def _show_hook(out: Output, setup: _Setup, task_id: str) -> None:
    _step(out, 5, "The hook: what a host injects at SessionStart (a real `intentloop hook` process)")
    payload = {
        "hook_event_name": "SessionStart",
        "session_id": setup.session_id,
        "cwd": str(setup.project),
        "source": "startup",
        "transcript_path": str(setup.work / "no-transcript.jsonl"),
        "model": "demo",
    }
    answer = await _run_cli(setup, ["hook"], stdin=json.dumps(payload).encode())
    try:
        context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError) as exc:
        raise IntentLoopError("demo step failed: the hook gave no context for the linked session") from exc
    out.show(Panel(str(context), title="additionalContext"))
    checks = [
        (USER_OUTCOME in context and USER_CONSTRAINT in context, "the user's words are there"),
        (INFERENCE not in context, "the inference is not (agents cannot put words in the user's mouth)"),
        (EVIDENCE not in context, "the evidence is not (tool output is never an instruction channel)"),
        (task_id in context, "the task id links the session to its task"),
    ]
    _checks(out, checks)


async def _crash_and_repair(out: Output, session: DemoSession, setup: _Setup, task_id: str, project_id: str) -> None:
    from intentloop.store import ProjectStore

    store = ProjectStore(setup.data_root, project_id)
    _step(out, 6, "A crash: a writer dies halfway through its line, leaving the ledger's last line torn")
    ledger = store.ledger_path
    lines = ledger.read_bytes().splitlines(keepends=True)
    torn = lines[-1][: len(lines[-1]) // 2]  # half of a line, no newline: what a killed writer leaves
    with ledger.open("ab") as handle:
        handle.write(torn)
    out.line(f"   appended {len(torn)} bytes without a newline after line {len(lines)} of {ledger.name}")
    report = await _verify(out, setup, project_id, expect_intact=False)
    out.line(
        f"   `intentloop verify` exit 1: line {report['first_bad_line']}: {report['reason']} "
        f"({report['error']['code']}); {report['events']} events still verify"
    )
    read = await session.call("intent_get_snapshot", _args(setup, task_id))
    code = (read.get("error") or {}).get("code") if not read.get("ok") else "ok"
    out.line(f"   a read meanwhile answers {code}: reads never repair, and never guess")

    _step(out, 7, "The next write repairs it under the lock; the torn bytes are summarised, not kept")
    _ok(
        await session.call(
            "intent_mark_unknown",
            _args(
                setup,
                task_id,
                request_id="demo-unknown",
                statement=UNKNOWN,
                source_ref={"kind": "agent_turn", "event_id": "turn-2"},
                facets=["unknown"],
            ),
        ),
        "intent_mark_unknown",
    )
    out.line(f'   intent_mark_unknown: "{UNKNOWN}" -> ok')
    after = await _verify(out, setup, project_id, expect_intact=True)
    out.line(f"   `intentloop verify` exit 0: {after['events']} events, head {str(after['head_hash'])[:16]}...")
    records = sorted(store.quarantine_dir.glob("*.json")) if store.quarantine_dir.is_dir() else []
    raw_kept = [p for p in store.quarantine_dir.iterdir() if p.suffix != ".json"] if records else []
    summaries = [json.loads(p.read_bytes()) for p in records]
    for summary in summaries:
        out.line(
            f"   quarantine/ holds a summary: byte_length {summary.get('byte_length')}, "
            f"sha256 {str(summary.get('sha256'))[:16]}..., observed_at {summary.get('observed_at')}"
        )
    _checks(
        out,
        [
            (any(s.get("byte_length") == len(torn) for s in summaries), "the torn bytes were summarised"),
            (not raw_kept, "no raw damaged bytes were kept"),
            (after["events"] == report["events"] + 1, "nothing verified was lost, the new write is there"),
        ],
    )


async def _verify(out: Output, setup: _Setup, project_id: str, *, expect_intact: bool) -> dict[str, Any]:
    answer = await _run_cli(setup, ["verify", "--project-id", project_id, "--json"])
    try:
        report: dict[str, Any] = json.loads(answer.stdout)
    except ValueError as exc:
        raise IntentLoopError("demo step failed: `intentloop verify --json` printed no JSON") from exc
    expected = 0 if expect_intact else 1
    if answer.returncode != expected or bool(report.get("intact")) != expect_intact:
        raise IntentLoopError(f"demo step failed: verify exited {answer.returncode}, expected {expected}")
    return report


async def _run_cli(setup: _Setup, args: Sequence[str], stdin: bytes = b"") -> Any:
    import anyio

    env = {**os.environ, **setup.env}
    return await anyio.run_process([*setup.program, *args], input=stdin, env=env, check=False)


def _checks(out: Output, checks: Sequence[tuple[bool, str]]) -> None:
    for held, text in checks:
        out.line(f"   {'✓' if held else '✗'} {text}", style="green" if held else "bold red")
    failed = [text for held, text in checks if not held]
    if failed:
        raise IntentLoopError(f"demo check failed: {failed[0]}")


__all__ = ["demo"]
