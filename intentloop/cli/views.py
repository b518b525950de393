"""``intentloop projects``, ``tasks`` and ``show TASK``: see what the memory holds, without an MCP client.

All three only read (lock-free; nothing is created, not even for a missing data root). ``projects`` and ``tasks`` ask
the store for its task listing (the per-task summaries of the task index when the checkpoint vouches for the ledger,
else the fold of its verified prefix, so a damaged ledger still shows what can be trusted and says that it is
damaged); ``show`` is ``intent_get_snapshot`` run through the service, so it refuses what the tool refuses (a private
task, a damaged ledger) but a task that is ``off``: ``off`` stops an agent's semantic use, and a person reading their
own memory is not that. Tables shorten ids; ``--json`` always carries full ids.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output
from intentloop.cli._select import plural, short
from intentloop.cli._table import Cell, Table
from intentloop.errors import IntentLoopError
from intentloop.model.printable import escape_controls

if TYPE_CHECKING:
    from intentloop.cli._target import Target
    from intentloop.model import TaskState
    from intentloop.store import ProjectStore, TaskSummary

TaskArgument = Annotated[str, typer.Argument(metavar="TASK", help="A task id, or a unique prefix of one.")]


# ----------------------------------------------------------------------------------------------------- projects
def projects(project_root: ProjectRootOption = None, json_output: JsonOption = False) -> int:
    """Every project under the data root: id, last activity, tasks, claims, damage.

    The ledger never stores a project's folder, so the folder is shown only for the current directory's project (or
    the one named with --project-root, which then is the only one listed). Creates nothing.
    """
    out = Output("projects", json_mode=json_output)
    return out.guard(lambda: _projects(out, project_root))


def _projects(out: Output, project_root: str | None) -> int:
    from intentloop.cli._target import locate_option
    from intentloop.recovery import list_project_ids, moved_to
    from intentloop.store import ProjectStore, locate_project, resolve_data_root

    data_root = resolve_data_root()
    roots: dict[str, str] = {}
    if project_root is not None:
        located = locate_option(project_root, data_root, "--project-root")
        roots[located.project_id] = located.root
        ids = list(roots)
    else:
        ids = list_project_ids(data_root)
        try:
            here = locate_project(os.getcwd(), data_root)
            roots[here.project_id] = here.root
        except (IntentLoopError, OSError):  # a deleted or non-local working directory simply has no project
            pass
    rows: list[dict[str, Any]] = []
    moved: list[dict[str, str]] = []
    with out.progress("Reading projects", total=len(ids)) as tick:
        for pid in ids:
            store = ProjectStore(data_root, pid)
            row = _project_row(store, roots.get(pid))
            target = moved_to(store) if row["events"] == 0 and project_root is None else None
            if target is not None:  # emptied by relink: its memory is a project of its own now
                moved.append({"project_id": pid, "to_project_id": target})
            else:
                rows.append(row)
            tick.advance()
    if out.json_mode:
        out.json_object({"data_root": str(data_root), "projects": rows, "moved": moved}, exit_code=OK)
        return OK
    if not rows:
        out.line(f"No projects under {data_root}.")
        _say_moved(out, moved)
        return OK
    table = Table(title=f"Projects under {data_root}")
    table.add_column("project")
    table.add_column("last activity", no_wrap=True)
    table.add_column("tasks", justify="right")
    table.add_column("claims", justify="right")
    table.add_column("ledger")
    table.add_column("folder")
    for row in rows:
        state = row["status"] if row["first_bad_line"] is None else f"{row['status']} at line {row['first_bad_line']}"
        table.add_row(
            short(row["project_id"]),
            row["last_activity"] or "-",
            str(row["tasks"]),
            str(row["claims"]),
            Cell(state, style="" if row["intact"] or not row["exists"] else "bold red"),
            row["project_root"] or "",
        )
    out.show(table)
    out.line(f"{plural(len(rows), 'project')}. `intentloop tasks --project-id ID` lists a project's tasks.")
    _say_moved(out, moved)
    return OK


def _say_moved(out: Output, moved: list[dict[str, str]]) -> None:
    if moved:
        out.line(
            f"Not listed: {plural(len(moved), 'project')} whose memory `relink` moved to another folder ("
            + ", ".join(f"{short(m['project_id'])} → {short(m['to_project_id'])}" for m in moved)
            + ")."
        )


def _project_row(store: ProjectStore, root: str | None) -> dict[str, Any]:
    """One project's row; an unreadable project is a row with its code, never a failed listing."""
    from intentloop.errors import StorageError
    from intentloop.recovery.report import STATUS_BY_CODE

    row: dict[str, Any] = {"project_id": store.project_id, "project_root": root}
    try:
        exists = store.exists()
        listing = store.tasks()
    except StorageError as exc:
        return {
            **row,
            "exists": True,
            "status": "unreadable",
            "intact": False,
            "events": 0,
            "last_activity": None,
            "tasks": 0,
            "claims": 0,
            "first_bad_line": None,
            "code": exc.code,
        }
    error = listing.damage
    return {
        **row,
        "exists": exists,
        "status": ("intact" if exists else "no data") if error is None else STATUS_BY_CODE.get(error.code, "corrupt"),
        "intact": error is None,
        "events": listing.events,
        "last_activity": listing.last_activity,
        "tasks": len(listing.started()),
        "claims": listing.claim_count,
        "first_bad_line": error.line if error is not None else None,
        "code": error.code if error is not None else None,
    }


# ----------------------------------------------------------------------------------------------------- tasks
def tasks(
    project_root: ProjectRootOption = None, project_id: ProjectIdOption = None, json_output: JsonOption = False
) -> int:
    """The tasks of a project (default: the current directory's): id, label, mode, started, claims by status.

    Reads the verified prefix (a damaged ledger is shown as far as it verifies, and says so). Creates nothing.
    """
    out = Output("tasks", json_mode=json_output)
    return out.guard(lambda: _tasks(out, project_root, project_id))


def task_row(task: TaskSummary, private: bool) -> dict[str, Any]:
    """One task as ``tasks --json`` lists it."""
    lifecycle, by_status = task.lifecycle()
    return {
        "task_id": task.task_id,
        "label": task.label,
        "mode": "private" if private else task.mode,
        "started_at": task.started_at,
        "last_event_at": task.last_event_at,
        "claims": lifecycle,
        "active_by_status": by_status,
        "candidates": task.candidates - task.observations,
        "observations": task.observations,
    }


def claim_status(task: TaskState, claim_id: str) -> str:
    """``invalidated``, ``superseded`` or ``active`` (the order the projection applies)."""
    if claim_id in task.invalidations:
        return "invalidated"
    if claim_id in task.superseded_by:
        return "superseded"
    return "active"


def _tasks(out: Output, project_root: str | None, project_id: str | None) -> int:
    from intentloop.cli._select import select_project

    target = select_project(project_root, project_id)
    listing = target.store.tasks()
    damage = listing.damage
    private = {c.task_id for c in target.store.read_controls()}
    started = listing.started()
    rows = [task_row(t, t.task_id in private) for t in started]
    started_ids = {t.task_id for t in started}
    rows += [_private_only(tid) for tid in sorted(private) if tid not in started_ids]
    fields: dict[str, Any] = {**target.fields(), "tasks": rows}
    fields["damage"] = None if damage is None else {"code": damage.code, "line": damage.line, "reason": damage.reason}
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
        return OK
    _warn_damage(damage)
    if not rows:
        out.line("No tasks in this project.")
        return OK
    table = Table(title=f"Tasks of project {short(target.project_id)}")
    for name in ("task", "label", "mode", "started"):
        table.add_column(name)
    for name in ("active", "superseded", "invalidated", "candidates", "observed"):
        table.add_column(name, justify="right")
    for row in rows:
        claims = row["claims"]
        table.add_row(
            short(row["task_id"], 8),
            row["label"] or "",
            row["mode"],
            row["started_at"] or "-",
            str(claims["active"]),
            str(claims["superseded"]),
            str(claims["invalidated"]),
            str(row["candidates"]),
            str(row["observations"]),
        )
    out.show(table)
    out.line(f"{plural(len(rows), 'task')}. `intentloop show TASK` shows one (a unique prefix of its id is enough).")
    return OK


def _private_only(task_id: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "label": None,
        "mode": "private",
        "started_at": None,
        "last_event_at": None,
        "claims": {"active": 0, "superseded": 0, "invalidated": 0},
        "active_by_status": {},
        "candidates": 0,
        "observations": 0,
    }


def _warn_damage(damage: Any) -> None:
    if damage is not None:
        import sys

        sys.stderr.write(
            f"warning[{damage.code}]: the ledger is damaged at line {damage.line}; showing what verifies before it "
            "(see `intentloop verify`)\n"
        )


# ----------------------------------------------------------------------------------------------------- show
def show(
    task: TaskArgument,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    history: Annotated[
        bool, typer.Option("--history", help="Also list superseded and invalidated claims: by what, when, why.")
    ] = False,
    peers: Annotated[
        bool,
        typer.Option(
            "--peers",
            help="Also list a shared project's peer claims, labelled with their principal, and the disputes between "
            "members (as the last `intentloop sync` accepted them).",
        ),
    ] = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="TIME",
            help="The task as recorded at that instant: a date (2026-12-01, local midnight), a local time "
            "(2026-12-01 10:00) or an RFC 3339 time (2026-12-01T10:00:00Z, …+01:00); shown converted to UTC.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> int:
    """A task's snapshot (intent_get_snapshot): active claims, unknowns, disagreements, stale long-term.

    TASK is a task id or a unique prefix of one. A private task is refused as the tool refuses it; a task that is off
    is shown (`intentloop mode TASK on` turns it back on). --history adds the claims that were superseded or
    invalidated; --as-of shows the task as it was recorded at an instant; --peers adds a shared project's peer claims
    with their principal and the disputes between members.
    """
    out = Output("show", json_mode=json_output)
    return out.guard(lambda: _show(out, task, project_root, project_id, history=history, as_of=as_of, peers=peers))


def resolve_task(target: Target, prefix: str) -> tuple[str, TaskSummary | None]:
    """The full task id for ``prefix`` (started tasks and private-only ones), and its summary if it is started.

    Read from the store's task listing (the task index when the checkpoint vouches for the ledger): naming a task
    never folds the whole ledger.

    Raises:
        IntentLoopError: ``TASK_NOT_FOUND``, ``INVALID_ID``, ``AMBIGUOUS_ID``; storage errors.
    """
    from intentloop.cli._select import unique_match

    started = {task.task_id: task for task in target.store.tasks().started()}
    private = {c.task_id for c in target.store.read_controls()}
    task_id = unique_match("task", prefix, [*started, *private], not_found="TASK_NOT_FOUND", invalid="INVALID_ID")
    return task_id, started.get(task_id)


def _show(
    out: Output,
    prefix: str,
    project_root: str | None,
    project_id: str | None,
    *,
    history: bool,
    as_of: str | None,
    peers: bool = False,
) -> int:
    from intentloop.cli._select import select_project
    from intentloop.cli._service import call_tool

    target = select_project(project_root, project_id)
    task_id, task = resolve_task(target, prefix)
    arguments: dict[str, Any] = {"task_id": task_id, "max_characters": 8000}
    if history:
        arguments["include_history"] = True
    if peers:
        arguments["include_peers"] = True
    if as_of is not None:
        from intentloop.cli._time import instant

        arguments["as_of"] = instant(as_of)
    try:
        snapshot = call_tool(target, "intent_get_snapshot", arguments, reads_off=True)
    except IntentLoopError as exc:
        started = task.started_at if task is not None else None
        if exc.code == "TASK_NOT_FOUND" and as_of is not None and started and started > arguments["as_of"]:
            raise IntentLoopError(
                f"task {task_id} did not exist yet at {arguments['as_of']}: it was started at {started}",
                code="TASK_NOT_FOUND",
            ) from None
        raise
    if out.json_mode:
        label = task.label if task is not None else None
        fields = {**target.fields(), "label": label, "snapshot": snapshot}
        if as_of is not None:
            fields["as_of"] = arguments["as_of"]
        out.json_object(fields, exit_code=OK)
        return OK
    title = f"Task {task_id}" + (f" — {task.label}" if task is not None and task.label else "")
    out.line(title, style="bold")
    if as_of is not None:
        out.line(f"as recorded at {arguments['as_of']} (UTC; --as-of {as_of})")
    out.line(f"mode {snapshot['mode']}, {plural(snapshot['candidate_count'], 'unconfirmed candidate')}")
    disputes = [d for d in snapshot["disagreements"] if d.get("kind") == "peer_dispute"]
    snapshot["disagreements"] = [d for d in snapshot["disagreements"] if d.get("kind") != "peer_dispute"]
    for key, heading in (
        ("active_claims", "Active claims"),
        ("unknowns", "Unknowns"),
        ("disagreements", "Disagreements"),
        ("stale_long_term", "Stale long-term preferences"),
        ("peer_claims", "Peer claims (not your words; `share adopt` copies one)"),
    ):
        claims = snapshot.get(key, [])
        if not claims:
            continue
        table = Table(title=f"{heading} ({len(claims)})")
        if key == "peer_claims":
            table.add_column("principal", no_wrap=True)
        table.add_column("claim", no_wrap=True)
        table.add_column("status/role", no_wrap=True)
        table.add_column("facets")
        table.add_column("statement")
        table.add_column("since", no_wrap=True)
        files = [_file_cell(claim) for claim in claims]
        if any(files):  # only a table holding evidence bound to a file gets the column
            table.add_column("evidence file")
        for claim, file in zip(claims, files, strict=True):
            table.add_row(
                *([claim["origin"]["principal"]] if key == "peer_claims" else []),
                short(claim["claim_id"], 8),
                f"{claim['epistemic_status']}/{claim['role']}",
                ",".join(claim["facets"]),
                claim["statement"],
                claim["valid_from"],
                *([file] if any(files) else []),
            )
        out.show(table)
    if not snapshot["active_claims"]:
        out.line("No active claims.")
    if disputes:
        _show_disputes(out, disputes)
    if history:
        _show_history(out, snapshot.get("history", []))
    return OK


def bound_file(claim: dict[str, Any]) -> tuple[str, str] | None:
    """The file an evidence claim is bound to and its state, for people: ``("logs/build.log", "stale")``, ``"current"``,
    or ``"not checked"`` when the project's root is unknown (named by id); ``None`` for a claim bound to no file.

    The path is redacted and its controls escaped again: a ledger written before paths were checked may hold either.
    """
    from intentloop.model import redact

    bound = claim.get("evidence_file")
    if not isinstance(bound, dict) or not isinstance(bound.get("path"), str):
        return None
    stale = claim.get("evidence_stale")
    state = "not checked" if stale is None else "stale" if stale else "current"
    return escape_controls(redact(bound["path"]).text), state


def _file_cell(claim: dict[str, Any]) -> str:
    file = bound_file(claim)
    return "" if file is None else f"{file[0]} ({file[1]})"


def _show_disputes(out: Output, disputes: list[dict[str, Any]]) -> None:
    """The disputes between members: whose claim, who disputes it and how (both claims stay active)."""
    table = Table(title=f"Disputes between members ({len(disputes)}; both claims stay active)")
    for column in ("claim", "of", "disputed by", "how"):
        table.add_column(column, no_wrap=True)
    table.add_column("reason")
    for entry in disputes:
        how = "invalidates" if entry["action"] == "invalidate" else f"superseded by {short(entry['by_claim_id'], 8)}"
        table.add_row(
            short(entry["claim_id"], 8),
            entry["principal"] or "-",
            entry["by_principal"] or "(you)",
            how,
            entry["reason"] or "",
        )
    out.show(table)


def _show_history(out: Output, entries: list[dict[str, Any]]) -> None:
    if not entries:
        out.line("No superseded or invalidated claims.")
        return
    table = Table(title=f"History ({len(entries)})")
    for column in ("claim", "status", "by", "at"):
        table.add_column(column, no_wrap=True)
    table.add_column("statement / reason")
    for entry in entries:
        claim = entry["claim"]
        reason = f" — {entry['reason']}" if entry.get("reason") else ""
        by = short(entry["by"], 8) if entry.get("by") else "—"
        table.add_row(
            short(claim["claim_id"], 8),
            entry["status"],
            by,
            entry["at"],
            claim["statement"] + reason,
        )
    out.show(table)


__all__ = ["bound_file", "claim_status", "projects", "resolve_task", "show", "task_row", "tasks"]
