"""``intentloop status``: versions, the resolved data root and how it was chosen, and every project's counts and
corruption status.

Status reads only: a missing data root is reported as missing, never created, and a damaged project is shown with
its first bad line instead of failing the whole listing. Its exit code is 0 whenever it could look (use ``verify`` to
gate on damage); 3 when there is no data root to look at.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from intentloop import SCHEMA_VERSION, SERVER_NAME, __version__
from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import plural, short
from intentloop.cli._table import Cell, Table
from intentloop.errors import StorageError

if TYPE_CHECKING:
    from intentloop.recovery import ProjectSummary


def status(project_root: ProjectRootOption = None, json_output: JsonOption = False) -> int:
    """Show versions, the data root, and per project: events, tasks, candidates, corruption, private controls.

    Creates nothing, even when the data root does not exist. With --project-root, only that project is shown.
    """
    out = Output("status", json_mode=json_output)
    return out.guard(lambda: _run(out, project_root))


def versions() -> dict[str, str | int]:
    """The versions ``status`` reports (the installed distributions' folder names: nothing is imported)."""
    from intentloop._startup import installed_version

    found: dict[str, str | int] = {
        "intentloop": __version__,
        "ledger_schema": SCHEMA_VERSION,
        "server_name": SERVER_NAME,
        "python": platform.python_version(),
    }
    for dist in ("mcp", "msgspec", "trio", "typer"):
        found[dist] = installed_version(dist) or "not installed"
    return found


def _run(out: Output, project_root: str | None) -> int:
    from intentloop.cli._target import project_id_of
    from intentloop.recovery import list_project_ids, summarize_all
    from intentloop.store import locate_data_root

    fields: dict[str, Any] = {"versions": versions()}
    only: str | None = None
    if project_root is not None:
        only, _ = project_id_of(project_root, None)
        fields["project_root"] = project_root
    fields["last_hook_problem"] = _last_hook_problem()
    fields["redaction"] = _redaction()
    try:
        located = locate_data_root()
    except StorageError as exc:
        return out.failure(exc, fields=fields) if out.json_mode else _no_root(out, fields, exc)
    data_root = located.path
    exists = data_root.is_dir()
    try:
        ids = [only] if only is not None else list_project_ids(data_root)
    except StorageError as exc:  # e.g. the root is a file: still say which root, why, and the last hook problem
        fields["data_root"] = {"path": str(data_root), "exists": exists, "source": located.source}
        fields["data_root"]["reason"] = located.reason
        return out.failure(exc, fields=fields) if out.json_mode else _no_root(out, fields, exc, str(data_root))
    summaries: list[ProjectSummary] = []
    with out.progress("Verifying projects", total=len(ids)) as tick:
        for summary in summarize_all(data_root, ids):
            summaries.append(summary)
            tick.advance()
    fields["data_root"] = {
        "path": str(data_root),
        "exists": exists,
        "source": located.source,
        "reason": located.reason,
    }
    fields["project"] = _this_project(project_root, data_root)
    moved = _moved(data_root, summaries)
    fields["projects"] = [{**s.to_dict(), "moved_to": moved.get(s.project_id)} for s in summaries]
    if fields["last_hook_problem"] is not None:
        fields["last_hook_problem"]["resolved"] = _resolved(fields["last_hook_problem"], summaries, exists)
    fields["totals"] = {
        "projects": sum(1 for s in summaries if s.project_exists),
        "events": sum(s.events for s in summaries),
        "tasks": sum(s.tasks for s in summaries),
        "candidates": sum(s.candidates for s in summaries),
        "private_controls": sum(s.private_controls for s in summaries),
        "damaged": sum(1 for s in summaries if s.project_exists and not s.intact),
    }
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
        return OK
    _show(out, fields, summaries, moved)
    return OK


def _moved(data_root: Path, summaries: list[ProjectSummary]) -> dict[str, str]:
    """project id → the project ``relink`` moved its memory to, for the projects whose ledgers it emptied."""
    from intentloop.recovery import moved_to
    from intentloop.store import ProjectStore

    found: dict[str, str] = {}
    for s in summaries:
        if s.project_exists and s.events == 0:
            target = moved_to(ProjectStore(data_root, s.project_id))
            if target is not None:
                found[s.project_id] = target
    return found


def _redaction() -> dict[str, Any]:
    """Which layers redact, found out without importing the rule catalog (intentloop/store/catalog.py)."""
    import os

    from intentloop.store.catalog import catalog_state

    state = catalog_state(os.environ)
    return {
        "catalog": "on" if state.enabled else "off",
        "catalog_version": state.version,
        "rule_cache": state.cache_dir,
        "rule_cache_warm": state.warm,
        "rule_keywords": state.keywords,
        "catalog_failure": state.failure,
        "summary": state.describe(),
    }


def _this_project(project_root: str | None, data_root: Path) -> dict[str, Any] | None:
    """The project the directory given (``--project-root``, else the working directory) belongs to, and why that
    root (``None``: the working directory is gone or not a local directory)."""
    import os

    from intentloop.cli._target import locate_option
    from intentloop.errors import IntentLoopError
    from intentloop.store import locate_project
    from intentloop.store._roots import REASONS
    from intentloop.store._share import shared_identity

    try:
        located = (
            locate_option(project_root, data_root, "--project-root")
            if project_root is not None
            else locate_project(os.getcwd(), data_root)
        )
    except (IntentLoopError, OSError):
        return None
    try:
        shared = shared_identity(data_root, located.root, located.project_id)
    except IntentLoopError:  # a garbled project.json: status still shows the project
        shared = None
    return {
        "directory": located.given,
        "root": located.root,
        "project_id": located.project_id,
        "reason": located.reason,
        "why": REASONS[located.reason],
        "shared_id": None if shared is None else shared.shared_id,
        "shared_source": None if shared is None else shared.source,
    }


def _last_hook_problem() -> dict[str, Any] | None:
    """The newest line of the hook problem logs, with the remedy for its code (``None``: no problem logged)."""
    import os

    from intentloop.cli._exit import remedy_for
    from intentloop.hooks._problems import BROKEN_INSTALLATION, last_problem

    found = last_problem(os.environ)
    if found is None:
        return None
    code = str(found.get("code"))
    remedy = (
        "reinstall intentloop, then re-run `intentloop install codex|claude|gemini` (or check the hook command)"
        if code == BROKEN_INSTALLATION
        else remedy_for(code)
    )
    return {**found, "remedy": remedy}


#: Problems of the data root itself: gone once the root is a usable folder.
_ROOT_PROBLEMS = frozenset({"DATA_DIR_REQUIRED", "INVALID_DATA_DIR"})


def _resolved(problem: dict[str, Any], summaries: list[ProjectSummary], root_exists: bool) -> bool | None:
    """Whether what the logged problem was about holds no more: its project (named by the line) now verifies with a
    valid or absent signature, or the data root it lacked now exists. ``None``: this cannot be told (a broken
    installation, a line without a project)."""
    code = problem.get("code")
    if code in _ROOT_PROBLEMS:
        return root_exists
    project_id = problem.get("project_id")
    for summary in summaries:
        if project_id is not None and summary.project_id == project_id and summary.project_exists:
            return summary.intact and summary.signature != "invalid"
    return None


def _problem_text(problem: dict[str, Any]) -> str:
    event = f" {problem['event']}" if problem.get("event") else ""
    project = f" project {short(problem['project_id'])}" if problem.get("project_id") else ""
    head = f"last hook problem ({problem['at']}{event}{project}): {problem['code']}: {problem.get('message', '')}"
    if problem.get("resolved"):
        return f"{head}\n  resolved since: what it was about is fine now\n  log: {problem['log']}"
    return f"{head}\n  remedy: {problem['remedy']}\n  log: {problem['log']}"


def _no_root(out: Output, fields: dict[str, Any], exc: StorageError, root: str | None = None) -> int:
    out.show(_versions_table(fields["versions"], data_root=root or "(none: no data root is configured)"))
    if fields.get("last_hook_problem"):
        out.line(_problem_text(fields["last_hook_problem"]))
    return out.failure(exc)


def _versions_table(found: dict[str, Any], *, data_root: str, chosen: str | None = None) -> Table:
    rows = [(name, str(value)) for name, value in found.items()]
    rows.append(("data root", data_root))
    if chosen is not None:
        rows.append(("chosen because", chosen))
    return key_value_table("intentloop status", rows)


def _show(out: Output, fields: dict[str, Any], summaries: list[ProjectSummary], moved: dict[str, str]) -> None:
    root = fields["data_root"]
    where = root["path"] if root["exists"] else f"{root['path']} (does not exist yet; nothing was created)"
    out.show(_versions_table(fields["versions"], data_root=where, chosen=root["reason"]))
    here = fields.get("project")
    if here is not None:
        out.line(f"project of {here['directory']}: {here['root']} ({short(here['project_id'])}), {here['why']}")
        if here["shared_id"] is not None:
            out.line(f"shared project {here['shared_id']} (from the {here['shared_source']}; docs/SYNC.md)")
    out.line(f"redaction: {fields['redaction']['summary']}")
    if fields.get("last_hook_problem"):
        out.line(_problem_text(fields["last_hook_problem"]))
    if not summaries:
        out.line("No projects yet.")
        return
    table = Table(title="Projects")
    table.add_column("project id", no_wrap=True)
    table.add_column("status", min_width=7, max_width=44)
    for name in ("events", "tasks", "cand.", "priv.", "quar."):
        table.add_column(name, justify="right", no_wrap=True)
    for s in summaries:
        state = s.status if s.project_exists else "no data"
        if s.first_bad_line is not None:
            state = f"{s.status} at line {s.first_bad_line}: {s.reason}"
        elif s.status == "unreadable":
            state = f"unreadable ({s.code})"
        if s.signature is not None and s.signature != "valid":
            state += f"; signature {s.signature}"
        if s.adopted_events:
            state += f"; {s.adopted_events} adopted unsigned (last {s.adopted_at})"
        if s.lock_held:
            state += " (lock held)"
        if s.project_id in moved:
            state = f"moved to {short(moved[s.project_id])} by relink"
        table.add_row(
            short(s.project_id),
            Cell(state, style="" if (s.intact and s.signature != "invalid") or not s.project_exists else "bold red"),
            str(s.events),
            str(s.tasks),
            str(s.candidates),
            str(s.private_controls),
            str(s.quarantine_records),
        )
    out.show(table)
    totals = fields["totals"]
    out.line(
        f"{plural(totals['projects'], 'project')}, {plural(totals['tasks'], 'task')}, "
        f"{plural(totals['candidates'], 'candidate')}, {plural(totals['private_controls'], 'private control')}, "
        f"{totals['damaged']} damaged."
    )


__all__ = ["status", "versions"]
