"""``intentloop recover salvage``: re-append the intact events of quarantined suffixes (see ``recovery/salvaging.py``).

Shows what it would give back (lock-free) and asks, unless ``--yes``; then decides again under the lock and appends
through the store's one write path. Running it again changes nothing.
"""

from __future__ import annotations

import time

from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import plural
from intentloop.cli.recover_quarantine import WaitOption, YesOption


def salvage(
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    yes: YesOption = False,
    wait: WaitOption = 10.0,
    json_output: JsonOption = False,
) -> int:
    """Re-append every event of the quarantined suffixes whose own hash still verifies, as new events of this chain.

    Type, task, actor, request id, time and payload are kept; the new event ids are recorded beside the originals in
    quarantine/salvaged-*.json. Events whose request the task already holds are skipped, so a second run changes
    nothing. Asks first unless --yes. Exit 0 done (or nothing to do), 1 declined or the ledger is damaged, 4 busy.
    """
    out = Output("recover salvage", json_mode=json_output)
    return out.guard(lambda: _run(out, project_root, project_id, yes=yes, wait=wait))


def _run(out: Output, project_root: str | None, project_id: str | None, *, yes: bool, wait: float) -> int:
    from intentloop.cli._confirm import confirm, declined
    from intentloop.cli._target import resolve_target
    from intentloop.recovery import salvage as run_salvage

    target = resolve_target(project_root, project_id, asks_to="salvage into")
    with out.progress("Reading quarantine/"):
        plan = run_salvage(target.store, dry_run=True)
    if not plan.appended:
        if out.json_mode:
            out.json_object({**target.fields(), "action": "none", **plan.to_dict()}, exit_code=OK)
            return OK
        _show_sources(out, plan.sources)
        out.line(f"Nothing to salvage ({plural(len(plan.skipped), 'line')} looked at, none to give back).")
        _show_set_aside(out, plan.skipped)
        return OK
    if not out.json_mode:
        _show_sources(out, plan.sources)
        out.line(f"Will re-append {plural(len(plan.appended), 'event')}; skip {plural(len(plan.skipped), 'line')}.")
        for item in plan.skipped:
            out.line(f"  skip line {item['line']} of {item['record']}: {item['reason']}")
        _show_set_aside(out, plan.skipped)
    if not yes and not confirm(
        f"Re-append {plural(len(plan.appended), 'intact event')} to the ledger?", what="salvage changes the ledger"
    ):
        return declined(out, target.fields(), exit_code=DAMAGED)
    with out.progress("Appending under the ledger lock"):
        result = run_salvage(target.store, deadline=time.monotonic() + wait)
    action = "salvaged" if result.appended else "none"
    if out.json_mode:
        out.json_object({**target.fields(), "action": action, **result.to_dict()}, exit_code=OK)
        return OK
    out.show(
        key_value_table(
            "Salvaged",
            [
                ("appended", plural(len(result.appended), "event")),
                ("skipped", plural(len(result.skipped), "line")),
                ("ledger", f"{plural(result.events, 'event')}, head {result.head_hash or '-'}"),
                ("provenance", result.record or "-"),
            ],
        )
    )
    return OK


def _show_set_aside(out: Output, skipped: list[dict[str, object]]) -> None:
    """Name the events kept in quarantine because their task's start is lost (no view would show them)."""
    aside = [item for item in skipped if item.get("set_aside")]
    if aside:
        tasks = sorted({str(item["task_id"]) for item in aside})
        out.line(
            f"Set aside, not re-appended: {plural(len(aside), 'intact event')} of {plural(len(tasks), 'task')} whose "
            f"task_started was the damaged line ({', '.join(tasks)}); their bytes stay in quarantine/."
        )


def _show_sources(out: Output, sources: list[dict[str, object]]) -> None:
    if not sources:
        out.line("No quarantine records with damaged bytes in this project.")
    for source in sources:
        note = source.get("note") or f"{plural(int(str(source.get('lines', 0))), 'line')} of raw bytes"
        out.line(f"{source['record']}: {note}")


__all__ = ["salvage"]
