"""``intentloop forget claim CLAIM`` and ``forget task TASK``: physical deletion, exactly as ``intent_delete``.

The deletion is the service's own operation (the CLI only names the target and passes the tool's confirmation text),
so the ledger rewrite, the removal of private controls and of the quarantine lines that hold the target, and the byte
scan that proves no copy of the id remains are the tool's, not a second implementation. An id needs at least 4
characters here (one character would name whichever claim starts with it). On a terminal the claim's text is shown
and the user types the confirmation text (``DELETE CLAIM <id>`` / ``DELETE TASK <id>``, the id or the prefix as
typed); without one ``--yes`` is required.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import _PREFIX_RE, plural
from intentloop.cli.views import TaskArgument
from intentloop.errors import InvalidInputError

if TYPE_CHECKING:
    from intentloop.cli._target import Target
    from intentloop.model import ProjectState

ClaimArgument = Annotated[str, typer.Argument(metavar="CLAIM", help="A claim id, or a unique prefix of one.")]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Do not ask (required without a terminal); passes the confirmation text.")
]


def forget_claim(
    claim: ClaimArgument,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    yes: YesOption = False,
    json_output: JsonOption = False,
) -> int:
    """Delete one claim for good: its record, its invalidation and every reference to it; verify no byte remains.

    CLAIM needs at least 4 characters of the id. Shows the claim's text, then asks you to type `DELETE CLAIM <id>`
    (the id, or the prefix as you typed it) unless --yes. Exit 0 deleted, 1 declined or failed, 5 no such claim.
    """
    out = Output("forget claim", json_mode=json_output)
    return out.guard(lambda: _run(out, "claim", claim, project_root, project_id, yes=yes))


def forget_task(
    task: TaskArgument,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    yes: YesOption = False,
    json_output: JsonOption = False,
) -> int:
    """Delete a task for good: all its events, its private controls and the lines of the project's quarantine records
    that hold it (other lines stay); verify that no byte of its id remains.

    TASK needs at least 4 characters of the id. Asks you to type `DELETE TASK <id>` (the id, or the prefix as you
    typed it) unless --yes. Exit 0 deleted, 1 declined or failed, 5 no such task.
    """
    out = Output("forget task", json_mode=json_output)
    return out.guard(lambda: _run(out, "task", task, project_root, project_id, yes=yes))


def _folded(target: Target, task_ids: Iterable[str]) -> ProjectState:
    """The started tasks among ``task_ids``, each folded from its own events (never the whole ledger)."""
    from intentloop.model import ProjectState, project
    from intentloop.store import task_events

    state = ProjectState()
    for task_id in sorted(task_ids):
        task = project(task_events(target.store.paths, task_id)).started_task(task_id)
        if task is not None:
            state.tasks[task_id] = task
    return state


_STARTED = b'"event_type":"task_started"'
_UUID_LENGTH = 36


def _claim_owners(target: Target, prefix: str) -> ProjectState:
    """The started tasks that can hold a claim whose id starts with ``prefix`` (any case), with those claims.

    A whole claim id is looked up by the lines that hold it (and the ``task_started`` lines): every event that
    records it is among them, so their fold has the claim as the whole task's fold has it, without the rest of the
    task (a task of 20,000 claims folded whole took ~80 MB). A shorter prefix may be in many lines: the tasks whose
    lines hold it are folded one at a time instead.
    """
    from intentloop.model import project
    from intentloop.store import events_holding, tasks_holding

    wanted = prefix.strip().lower()
    if not _PREFIX_RE.match(wanted):
        return _folded(target, ())  # unique_match explains why the prefix names nothing
    if len(wanted) < _UUID_LENGTH:
        return _folded(target, tasks_holding(target.store.paths, [wanted.encode()], lowered=True))
    state = project(events_holding(target.store.paths, [wanted.encode(), _STARTED], lowered=True))
    for task_id in [t for t, task in state.tasks.items() if not task.started]:
        del state.tasks[task_id]
    return state


def _started(target: Target) -> ProjectState:
    """The started tasks, folded from their ``task_started`` events alone: enough to name one (its full fold is
    read only to show what it holds)."""
    from intentloop.model import project
    from intentloop.store import events_holding

    return project(e for e in events_holding(target.store.paths, [_STARTED]) if e.event_type == "task_started")


def _run(out: Output, kind: str, prefix: str, project_root: str | None, project_id: str | None, *, yes: bool) -> int:
    from intentloop.cli._confirm import ask
    from intentloop.cli._select import destructive_prefix, select_claim, select_project, select_task
    from intentloop.cli._service import call_tool
    from intentloop.model.printable import escape_controls

    destructive_prefix(kind, prefix)
    if project_id is not None:
        destructive_prefix("project", project_id, option="--project-id")
    target = select_project(project_root, project_id)
    arguments: dict[str, Any]
    if kind == "claim":
        owners = _claim_owners(target, prefix)
        task_id, claim_id = select_claim(owners, prefix)
        expected = f"DELETE CLAIM {claim_id}"
        arguments = {"task_id": task_id, "target": "claim", "claim_id": claim_id, "confirmation": expected}
        claim = owners.tasks[task_id].claims[claim_id]
        rows = [("claim", claim_id), ("task", task_id), ("statement", escape_controls(claim.statement))]
    else:
        private = {c.task_id for c in target.store.read_controls()}
        task_id = select_task(_started(target), prefix, extra=private)
        expected = f"DELETE TASK {task_id}"
        arguments = {"task_id": task_id, "target": "task", "confirmation": expected}
        rows = [("task", task_id)]
        task = None if yes or out.json_mode else _folded(target, [task_id]).started_task(task_id)
        if task is not None:
            rows += [
                ("label", task.label or "-"),
                (
                    "holds",
                    f"{plural(len(task.claims), 'claim')}, {plural(len(task.candidates), 'candidate')}, "
                    f"{plural(task.event_count, 'event')}",
                ),
            ]
    fields: dict[str, Any] = {**target.fields(), "target": kind, "task_id": task_id}
    if kind == "claim":
        fields["claim_id"] = arguments["claim_id"]
    if not yes:
        if not out.json_mode:
            out.show(key_value_table(f"About to delete this {kind} physically (it cannot be undone)", rows))
        typed = f"DELETE {kind.upper()} {prefix.strip()}"
        question = expected if typed == expected else f"{typed} (or {expected})"
        answer = ask(f"Type {question} to confirm: ", what=f"forget {kind} deletes data")
        if answer not in (expected, typed):
            declined = InvalidInputError("not confirmed: nothing was deleted", code="CONFIRMATION_REQUIRED")
            if out.json_mode:
                out.json_object({**fields, "action": "cancelled"}, exit_code=DAMAGED, error=declined)
            else:
                sys.stderr.write("cancelled: the confirmation text did not match; nothing was deleted\n")
            return DAMAGED
    with out.progress(f"Deleting the {kind} under the ledger lock"):
        result = call_tool(target, "intent_delete", arguments)
    scanned = result["persistent_files_scanned"]
    fields.update(action="deleted", persistent_files_scanned=scanned, project_dir=str(target.store.project_dir))
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
        return OK
    identifier = fields.get("claim_id", task_id)
    out.line(f"Deleted {kind} {identifier}.")
    out.line(
        f"Scanned {plural(scanned, 'file')} under {target.store.project_dir} after the rewrite: "
        "no byte of its id remains."
    )
    return OK


__all__ = ["forget_claim", "forget_task"]
