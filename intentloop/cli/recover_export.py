"""``intentloop recover export``: save the verified prefix of a ledger to a file, changing nothing in the data root."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from intentloop.cli._exit import OK
from intentloop.cli._options import JsonOption, ProjectIdOption, ProjectRootOption
from intentloop.cli._output import Output, key_value_table

OutOption = Annotated[
    str,
    typer.Option(
        "--out", metavar="FILE", help="Where to write the export (a new file, mode 0600).", show_default=False
    ),
]
OverwriteOption = Annotated[
    bool, typer.Option("--overwrite", help="Replace FILE if it exists (atomically); refused otherwise.")
]


def export(
    out: OutOption,
    project_root: ProjectRootOption = None,
    project_id: ProjectIdOption = None,
    overwrite: OverwriteOption = False,
    json_output: JsonOption = False,
) -> int:
    """Write the verified prefix of a project's ledger to FILE: whole lines exactly as stored, chain intact.

    Nothing is edited or invented and the live ledger is not touched. FILE is verified again after writing.
    Exit 0 when written (even from a damaged ledger: the report says what was left out).
    """
    output = Output("recover export", json_mode=json_output)
    return output.guard(lambda: _run(output, project_root, project_id, Path(out), overwrite))


def _run(output: Output, project_root: str | None, project_id: str | None, out: Path, overwrite: bool) -> int:
    from intentloop.cli._target import resolve_target
    from intentloop.recovery import export_verified_prefix

    target = resolve_target(project_root, project_id)
    with output.progress("Verifying the ledger and writing the export"):
        result = export_verified_prefix(target.store, out, overwrite=overwrite)
    if output.json_mode:
        output.json_object({**target.fields(), **result.to_dict()}, exit_code=OK)
        return OK
    rows = [
        ("file", f"{result.out} (mode 0600)"),
        ("events", str(result.events)),
        ("bytes", str(result.bytes)),
        ("sha256", result.sha256),
        ("head hash", result.head_hash or "-"),
    ]
    if result.ledger_intact:
        rows.append(("ledger", "intact: the export is a complete copy"))
    else:
        rows += [
            ("ledger", f"damaged at line {result.first_bad_line}: {result.reason} ({result.code})"),
            ("left out", f"{result.omitted_bytes} bytes after the verified prefix"),
        ]
    output.show(key_value_table("Exported the verified prefix", rows))
    if not result.ledger_intact:
        output.line(
            "Next: `intentloop recover quarantine` sets the damaged bytes aside and keeps this prefix as the ledger."
        )
    return OK


__all__ = ["export"]
