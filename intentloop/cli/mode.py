"""``intentloop mode TASK on|off``: turn a task off (nothing recorded or injected for it) or back on, from the CLI.

It is ``intent_set_mode`` run through the service, so the mode event is the one the tool and ``/intent on|off`` write.
``private`` is not offered: a CLI process ends after the command and cannot keep a task's memory-only state (ask the
agent for ``intent_set_mode`` with mode ``private``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output
from intentloop.cli.views import TaskArgument

MODES = ("on", "off")
ModeArgument = Annotated[
    str,
    typer.Argument(metavar="on|off", help="on: recorded and injected again; off: nothing recorded or injected."),
]


def mode(
    task: TaskArgument,
    new_mode: ModeArgument,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    json_output: JsonOption = False,
) -> int:
    """Turn a task off (hooks and tools record and inject nothing for it) or back on.

    TASK is a task id or a unique prefix of one. The change is the mode event intent_set_mode writes (none when the
    task already has that mode). Exit 0 done, 5 no such task.
    """
    out = Output("mode", json_mode=json_output)
    return out.guard(lambda: _run(out, task, new_mode, project_root, project_id))


def _run(out: Output, prefix: str, new_mode: str, project_root: str | None, project_id: str | None) -> int:
    from intentloop.cli._select import select_project
    from intentloop.cli._service import call_tool
    from intentloop.cli.views import resolve_task
    from intentloop.errors import InvalidInputError
    from intentloop.model import new_uuid

    wanted = new_mode.strip().lower()
    if wanted not in MODES:
        raise InvalidInputError(
            f"the mode must be on or off, not {new_mode!r} (private needs a running server: ask the agent for "
            "intent_set_mode with mode private)"
        )
    target = select_project(project_root, project_id)
    task_id, task = resolve_task(target, prefix)
    before = task.mode if task is not None else None
    changed = before != wanted
    result: dict[str, Any] = {"mode": wanted}
    if changed:  # the same mode again writes no event
        arguments = {"task_id": task_id, "request_id": f"cli-mode-{new_uuid()}", "mode": wanted}
        result = call_tool(target, "intent_set_mode", arguments)
    fields = {**target.fields(), "task_id": task_id, "previous_mode": before, "changed": changed, **result}
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
        return OK
    out.line(f"Task {task_id} is {result['mode']}{'' if changed else ' (it already was; nothing was written)'}.")
    return OK


__all__ = ["mode"]
