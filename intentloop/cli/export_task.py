"""``intentloop export TASK --format markdown|json [--out FILE]``: a readable record of a task, or its portable graph.

Both come from ``intent_export`` run through the service (so a private task is refused as the tool refuses it; a
task that is off is exported: a person's own copy is not an agent's semantic use): ``json`` is the portable graph
exactly as the tool returns it (``intent_import`` takes it back); ``markdown`` is the same graph written for people —
every claim with its status (active, superseded, invalidated), provenance and times, then the unconfirmed
candidates. FILE is created 0600 and never overwritten unless ``--overwrite`` (``--out -`` is stdout).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from intentloop.cli._complete import formats
from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table
from intentloop.cli._select import plural
from intentloop.cli.views import TaskArgument, bound_file, claim_status

if TYPE_CHECKING:
    from intentloop.model import TaskState

Format = Literal["markdown", "json"]
FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        metavar="markdown|json",
        help="markdown (for people) or json (the portable graph), in any case.",
        autocompletion=formats,
    ),
]
OutOption = Annotated[
    str | None,
    typer.Option(
        "--out",
        metavar="FILE",
        help="Write to FILE (new, mode 0600) instead of stdout; - is stdout.",
        show_default=False,
    ),
]
OverwriteOption = Annotated[bool, typer.Option("--overwrite", help="Replace FILE if it exists (atomically).")]
FORMATS: tuple[Format, ...] = ("markdown", "json")
_STATUS_ORDER = ("active", "superseded", "invalidated")


def export(
    task: TaskArgument,
    format_name: FormatOption = "markdown",
    out: OutOption = None,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    overwrite: OverwriteOption = False,
    json_output: JsonOption = False,
) -> int:
    """Export one task (TASK: an id or a unique prefix) as Markdown or as the portable JSON graph.

    Without --out the document goes to stdout; with --json the document (or the file written) is reported inside
    the command's JSON object. Reads only, except FILE.
    """
    output = Output("export", json_mode=json_output)
    return output.guard(lambda: _run(output, task, format_name, out, project_root, project_id, overwrite))


def _run(
    output: Output,
    prefix: str,
    format_name: str,
    out: str | None,
    project_root: str | None,
    project_id: str | None,
    overwrite: bool,
) -> int:
    from intentloop.cli._select import select_project
    from intentloop.cli._service import call_tool
    from intentloop.cli.views import resolve_task
    from intentloop.errors import InvalidInputError

    format_name = format_name.strip().lower()
    if format_name not in FORMATS:
        raise InvalidInputError(f"--format must be markdown or json, not {format_name!r}")
    if out == "-":
        out = None
    target = select_project(project_root, project_id)
    task_id, _summary = resolve_task(target, prefix)
    graph = call_tool(target, "intent_export", {"task_id": task_id, "detail": "portable"}, reads_off=True)
    if format_name == "json":
        text = json.dumps(graph, ensure_ascii=False, indent=2) + "\n"
    else:
        task = target.store.task(task_id)  # the statuses and invalidation reasons: the task's own events only
        text = render_markdown(graph, task if task is not None and task.started else None, project_id=target.project_id)
    data = text.encode("utf-8")
    fields: dict[str, Any] = {**target.fields(), "task_id": task_id, "format": format_name}
    if out is None:
        if output.json_mode:
            output.json_object({**fields, "document": graph if format_name == "json" else text}, exit_code=OK)
        else:
            import sys

            sys.stdout.write(text)
            sys.stdout.flush()
        return OK
    from intentloop.recovery import refuse_inside_data_root, write_private_file

    path = Path(out)
    refuse_inside_data_root(path, target.store.data_root)
    write_private_file(path, data, overwrite=overwrite)
    written = {"out": str(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if output.json_mode:
        output.json_object({**fields, **written}, exit_code=OK)
        return OK
    rows = [("task", task_id), ("format", format_name), ("file", f"{path} (mode 0600)"), ("bytes", str(len(data)))]
    output.show(key_value_table("Exported", rows))
    return OK


def render_markdown(graph: dict[str, Any], task: TaskState | None, *, project_id: str) -> str:
    """The portable graph of one task as a Markdown record for people (no information beyond the graph's own, plus
    the label and the invalidation reasons the projection keeps)."""
    claims: list[dict[str, Any]] = graph["claims"]
    label = task.label if task is not None else None
    lines = [f"# Intent record: {_inline(label or graph['source_task_id'])}", ""]
    lines += [
        f"- task id: `{graph['source_task_id']}`",
        f"- project id: `{project_id}`",
        f"- exported at: {graph['exported_at']}",
        f"- {plural(len(claims), 'claim')}, {plural(len(graph['candidates']), 'unconfirmed candidate')}",
        "",
    ]
    groups: dict[str, list[dict[str, Any]]] = {name: [] for name in _STATUS_ORDER}
    for claim in claims:
        groups[_status(task, claim, graph)].append(claim)
    for name in _STATUS_ORDER:
        members = groups[name]
        lines += [f"## {name.capitalize()} claims ({len(members)})", ""]
        if not members:
            lines += ["None.", ""]
        for claim in members:
            lines += _claim_lines(claim, task)
    lines += [f"## Unconfirmed candidates ({len(graph['candidates'])})", ""]
    if not graph["candidates"]:
        lines += ["None.", ""]
    for candidate in graph["candidates"]:
        summary = candidate.get("summary")
        head = f"- {candidate['candidate_type']}" + (f": {_inline(summary)}" if isinstance(summary, str) else "")
        lines += [head, f"  - id `{candidate['candidate_id']}`, recorded {candidate.get('created_at', '-')}"]
    lines.append("")
    return "\n".join(lines)


def _status(task: TaskState | None, claim: dict[str, Any], graph: dict[str, Any]) -> str:
    claim_id = claim["claim_id"]
    if task is not None and claim_id in task.claims:
        return claim_status(task, claim_id)
    if claim_id in graph["invalidated_claim_ids"]:
        return "invalidated"
    if any(claim_id in other.get("supersedes", []) for other in graph["claims"]):
        return "superseded"
    return "active"


def _claim_lines(claim: dict[str, Any], task: TaskState | None) -> list[str]:
    source = claim["source_ref"]
    provenance = source.get("kind", "?") + (f" (event `{source['event_id']}`)" if source.get("event_id") else "")
    details = [
        f"### {_inline(claim['statement'])}",
        "",
        f"- claim id: `{claim['claim_id']}`",
        f"- {claim['epistemic_status']} / {claim['role']}, scope {claim['scope']}, facets: "
        + (", ".join(claim["facets"]) or "none"),
        f"- provenance: {provenance}",
        f"- valid from {claim['valid_from']}; last confirmed {claim.get('last_confirmed') or 'never'}",
    ]
    if claim.get("confidence") is not None:
        details.append(f"- confidence: {claim['confidence']}")
    if claim.get("supersedes"):
        details.append("- supersedes: " + ", ".join(f"`{c}`" for c in claim["supersedes"]))
    if claim.get("related_claim_ids"):
        details.append("- related: " + ", ".join(f"`{c}`" for c in claim["related_claim_ids"]))
    file = bound_file(claim)
    if file is not None:
        details.append(f"- evidence file: `{file[0]}` ({file[1]})")
    invalidation = task.invalidations.get(claim["claim_id"]) if task is not None else None
    if invalidation is not None:
        reason = f": {_inline(invalidation.reason)}" if invalidation.reason else ""
        details.append(f"- invalidated at {invalidation.invalidated_at}{reason}")
    return [*details, ""]


def _inline(text: str) -> str:
    """One Markdown line: newlines folded, so a statement cannot start a heading or a list of its own, and terminal
    controls escaped (a ledger written before statements were stored escaped may hold them)."""
    from intentloop.model.printable import escape_controls

    return escape_controls(" ".join(text.split()))


__all__ = ["export", "render_markdown"]
