"""``intentloop forget claim CLAIM`` and ``forget task TASK``: physical deletion, exactly as ``intent_delete``.

The deletion is the service's own operation (the CLI only names the target and passes the tool's confirmation text),
so the ledger rewrite, the removal of private controls and quarantine records, and the byte scan that proves no copy
of the id remains are the tool's, not a second implementation. On a terminal the user types the confirmation text
(``DELETE CLAIM <id>`` / ``DELETE TASK <id>``); without one ``--yes`` is required.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cli._exit import DAMAGED, OK
from cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from cli._output import Output, key_value_table
from cli._select import plural
from cli.views import TaskArgument
from intentloop.errors import InvalidInputError

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

    Asks you to type `DELETE CLAIM <id>` unless --yes. Exit 0 deleted, 1 declined or failed, 5 no such claim.
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
    """Delete a task for good: all its events, its private controls and the project's quarantine records; verify that
    no byte of its id remains. Asks you to type `DELETE TASK <id>` unless --yes. Exit 0 deleted, 1 declined or
    failed, 5 no such task.
    """
    out = Output("forget task", json_mode=json_output)
    return out.guard(lambda: _run(out, "task", task, project_root, project_id, yes=yes))


def _run(out: Output, kind: str, prefix: str, project_root: str | None, project_id: str | None, *, yes: bool) -> int:
    from cli._confirm import ask
    from cli._select import project_state, select_claim, select_project, verified_events
    from cli._service import call_tool
    from cli.views import resolve_task

    target = select_project(project_root, project_id)
    arguments: dict[str, Any]
    if kind == "claim":
        task_id, claim_id = select_claim(project_state(verified_events(target)[0]), prefix)
        expected = f"DELETE CLAIM {claim_id}"
        arguments = {"task_id": task_id, "target": "claim", "claim_id": claim_id, "confirmation": expected}
        rows = [("claim", claim_id), ("task", task_id)]
    else:
        task_id, task = resolve_task(target, prefix)
        expected = f"DELETE TASK {task_id}"
        arguments = {"task_id": task_id, "target": "task", "confirmation": expected}
        rows = [("task", task_id)]
        if task is not None:
            rows += [
                ("label", task.label or "-"),
                (
                    "holds",
                    f"{plural(task.claims, 'claim')}, {plural(task.candidates, 'candidate')}, "
                    f"{plural(task.events, 'event')}",
                ),
            ]
    fields: dict[str, Any] = {**target.fields(), "target": kind, "task_id": task_id}
    if kind == "claim":
        fields["claim_id"] = arguments["claim_id"]
    if not yes:
        if not out.json_mode:
            out.show(key_value_table(f"About to delete this {kind} physically (it cannot be undone)", rows))
        answer = ask(f"Type {expected} to confirm: ", what=f"forget {kind} deletes data")
        if answer != expected:
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
