"""``intentloop relink --from OLD_ROOT_OR_ID --to NEW_ROOT``: a moved project keeps its memory.

Plain relink moves every event, re-chained for the new id, through the store's lock and rewrite path (see
``recovery/relink.py``), so the new ledger is the old history event for event. When the new root already has a memory
it refuses (``RELINK_TARGET_EXISTS``) unless ``--merge``: then each task of the old project is exported and imported
into the new one through the service (``intent_export`` / ``intent_start_task`` / ``intent_import``: current claims,
invalidations and candidates, marked as incomplete external history, fresh claim ids), and only then is the old
ledger emptied.
"""

from __future__ import annotations

import os
import time
from typing import Annotated, Any

import typer

from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import plural, short
from intentloop.cli.recover_quarantine import WaitOption, YesOption
from intentloop.errors import ConflictError, IntentLoopError, InvalidInputError

FromOption = Annotated[
    str,
    typer.Option(
        "--from",
        metavar="OLD_ROOT_OR_ID",
        help="The project's old folder (it may no longer exist) or its id (a unique prefix).",
        show_default=False,
    ),
]
ToOption = Annotated[
    str, typer.Option("--to", metavar="NEW_ROOT", help="The project's folder now (must exist).", show_default=False)
]
MergeOption = Annotated[
    bool, typer.Option("--merge", help="If NEW_ROOT already has a memory, import the old tasks into it.")
]


def relink(
    from_: FromOption,
    to: ToOption,
    merge: MergeOption = False,
    yes: YesOption = False,
    wait: WaitOption = 10.0,
    json_output: JsonOption = False,
) -> int:
    """Move the memory of a project whose folder moved: from the old folder's (or id's) ledger to NEW_ROOT's.

    Every event is kept and re-chained for the new id; the old ledger is emptied afterwards and a record of the move
    stays in its quarantine/. Refused when NEW_ROOT already has a memory, unless --merge. Asks first unless --yes.
    """
    out = Output("relink", json_mode=json_output)
    return out.guard(lambda: _run(out, from_, to, merge=merge, yes=yes, wait=wait))


def old_project_id(value: str) -> str:
    """The id an OLD_ROOT_OR_ID names: a path is hashed as the folder was, even if it no longer exists; anything else
    is a unique id prefix of the projects under the data root. A path is what has a ``/`` or starts with ``~`` or
    ``.``, an existing folder (relative to the working directory, like ``--to``), or a word no id can start with.

    Raises:
        IntentLoopError: ``PROJECT_NOT_FOUND``, ``AMBIGUOUS_ID``, ``INVALID_PROJECT_ID``, ``INVALID_ID`` (an id prefix
            shorter than 4 characters; each naming ``--from``).
    """
    from intentloop.cli._select import _PREFIX_RE, destructive_prefix, unique_match
    from intentloop.cli._target import option_path
    from intentloop.model import project_id_for
    from intentloop.recovery import list_project_ids
    from intentloop.store import resolve_data_root

    looks_like_id = bool(_PREFIX_RE.match(value.strip().lower()))
    if os.sep in value or value.startswith(("~", ".")) or os.path.isdir(value) or not looks_like_id:
        path = os.path.realpath(option_path(value))
        return project_id_for(path.casefold() if os.name == "nt" else path)
    try:
        destructive_prefix("project", value, "move", option="--from")
    except InvalidInputError as exc:  # INVALID_ID
        raise InvalidInputError(
            f"{exc.message} (a folder that no longer exists: write ./NAME)", code="INVALID_ID"
        ) from None
    ids = list_project_ids(resolve_data_root())
    try:
        return unique_match("project", value, ids, not_found="PROJECT_NOT_FOUND", invalid="INVALID_PROJECT_ID")
    except IntentLoopError as exc:
        hint = " (a folder that no longer exists: write ./NAME)" if exc.code == "PROJECT_NOT_FOUND" else ""
        raise IntentLoopError(f"--from {value}: {exc.message}{hint}", code=exc.code) from None


def _summary(store: Any) -> tuple[int, str | None, list[str]]:
    """(events, head hash, started task ids in order of first appearance) of a project's ledger, read a chunk at a
    time: relink never holds a whole ledger."""
    from intentloop.store import stream_events

    count, head = 0, None
    first: dict[str, None] = {}  # every task, in order of its first event (as the fold orders them)
    started: set[str] = set()
    for chunk in stream_events(store.paths, torn_ok=False):
        for event in chunk:
            count, head = count + 1, event.event_hash
            first.setdefault(event.task_id)
            if event.event_type == "task_started":
                started.add(event.task_id)
    return count, head, [task_id for task_id in first if task_id in started]


def _run(out: Output, from_: str, to: str, *, merge: bool, yes: bool, wait: float) -> int:
    from intentloop.cli._confirm import confirm, declined
    from intentloop.cli._select import select_project
    from intentloop.cli._target import Target
    from intentloop.errors import StorageError
    from intentloop.store import ProjectStore, resolve_data_root

    new = select_project(to, None, must_exist=False, option="--to")
    data_root = resolve_data_root()
    old_id = old_project_id(from_)
    old_store = ProjectStore(data_root, old_id)
    if not old_store.exists():
        raise StorageError(
            f"--from {from_}: the old project {short(old_id)} has no data under {data_root}", code="PROJECT_NOT_FOUND"
        )
    if old_id == new.project_id:
        raise InvalidInputError("--from and --to name the same project", code="INVALID_ARGUMENTS")
    old = Target(data_root=data_root, project_id=old_id, project_root=None, store=old_store)
    old_events, old_head, task_ids = _summary(old_store)
    target_events = _summary(new.store)[0] if new.store.exists() else 0
    fields: dict[str, Any] = {
        "data_root": str(data_root),
        "from_project_id": old_id,
        "to_project_id": new.project_id,
        "to_project_root": new.project_root,
        "mode": "merge" if target_events else "move",
    }
    if not old_events:
        if out.json_mode:
            out.json_object({**fields, "action": "none", "events": 0}, exit_code=OK)
        else:
            out.line(f"Nothing to move: project {old_id} holds no events.")
        return OK
    if target_events and not merge:
        raise ConflictError(
            f"{new.project_root} already has a memory ({plural(target_events, 'event')}); nothing was moved",
            code="RELINK_TARGET_EXISTS",
        )
    if not out.json_mode:
        how = "import its tasks into the memory already there" if target_events else "move every event, re-chained"
        out.show(
            key_value_table(
                "Relink",
                [
                    ("from", short(old_id)),
                    ("to", f"{short(new.project_id)} ({new.project_root})"),
                    ("holds", f"{plural(old_events, 'event')}, {plural(len(task_ids), 'task')}"),
                    ("how", how),
                ],
            )
        )
    if not yes and not confirm("Move this memory?", what="relink changes two ledgers"):
        return declined(out, fields, exit_code=DAMAGED)
    deadline = time.monotonic() + wait
    if target_events:
        result = _merge(out, old, new, task_ids, old_head, deadline)
    else:
        from intentloop.recovery import relink_project

        with out.progress("Moving the ledger under both locks"):
            result = relink_project(old_store, new.store, deadline=deadline).to_dict()
    left = _left_behind(old_store.quarantine_dir)
    if out.json_mode:
        out.json_object({**fields, "action": "relinked", **result, "left_in_old_quarantine": left}, exit_code=OK)
        return OK
    out.line(
        f"Moved {plural(result['events'], 'event')} ({plural(result['tasks'], 'task')}) to {new.project_root}; "
        f"the old ledger is empty and the move is recorded in {result['record']}."
    )
    if left:
        out.line(
            f"Note: {plural(len(left), 'earlier quarantine file')} stayed in {old_store.quarantine_dir} with the old "
            "id (forget in the new project does not reach them; salvage before relinking, or remove them by hand)."
        )
    return OK


def _left_behind(directory: Any) -> list[str]:
    """Quarantine files of the old project other than relink records (damage summaries, raw bytes, salvage records)."""
    from intentloop.recovery.relink import RELINK_PREFIX

    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith(RELINK_PREFIX))


def _merge(out: Output, old: Any, new: Any, task_ids: list[str], head: str | None, deadline: float) -> dict[str, Any]:
    """Export each old task, start it in the new project if needed, import it; then empty the old ledger. Each task
    is folded from its own events when its turn comes (never every task at once)."""
    from intentloop.cli._service import call_tool
    from intentloop.model import TaskState, project
    from intentloop.recovery import retire_after_merge
    from intentloop.store import task_events

    def fold(store: Any, task_id: str) -> TaskState | None:
        return project(task_events(store.paths, task_id)).started_task(task_id)

    off = [task_id for task_id in task_ids if (task := fold(old.store, task_id)) is not None and task.mode == "off"]
    if off:
        raise ConflictError(
            f"{plural(len(off), 'task')} of the old project {'is' if len(off) == 1 else 'are'} off ({off[0]}) and "
            "cannot be exported for a merge; nothing was changed",
            code="MODE_OFF",
        )
    if old.store.read_controls():
        raise ConflictError(
            "a private session of the old project holds a control; end private mode first",
            code="PRIVATE_SESSION_ACTIVE",
        )
    merged: list[dict[str, Any]] = []
    tag = old.project_id[:16]
    with out.progress("Importing tasks", total=len(task_ids)) as tick:
        for task_id in task_ids:
            task = fold(old.store, task_id)
            assert task is not None
            graph = call_tool(old, "intent_export", {"task_id": task.task_id, "detail": "portable"})
            present = fold(new.store, task.task_id) is not None
            if not present:
                start: dict[str, Any] = {"task_id": task.task_id, "request_id": f"relink-start-{tag}"}
                if task.label:
                    start["label"] = task.label
                call_tool(new, "intent_start_task", start)
            request = f"relink-import-{tag}-{head[:16] if head else 'none'}"
            again = False
            try:
                call_tool(new, "intent_import", {"task_id": task.task_id, "request_id": request, "graph": graph})
            except IntentLoopError as exc:
                # This request id names exactly this old head merged into this task: a merge interrupted after this
                # import and run again finds it done (its export time differs, so the tool calls it reused).
                if exc.code != "REQUEST_ID_REUSED":
                    raise
                again = True
            merged.append(
                {
                    "task_id": task.task_id,
                    "claims": len(graph["claims"]),
                    "started_here": not present,
                    "already_imported": again,
                }
            )
            tick.advance()
    events = _summary(old.store)[0]
    record = retire_after_merge(old.store, new.store, expected_head=head, deadline=deadline)
    return {"events": events, "tasks": len(merged), "merged": merged, "record": record}


__all__ = ["old_project_id", "relink"]
