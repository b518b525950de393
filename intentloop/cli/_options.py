"""The options several commands share, spelled once so their names and help stay identical everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

ProjectRootOption = Annotated[
    str | None,
    typer.Option(
        "--project-root",
        metavar="P",
        help="The project's folder (an existing directory, absolute or relative; default: the current directory).",
        show_default=False,
    ),
]
ProjectIdOption = Annotated[
    str | None,
    typer.Option(
        "--project-id",
        metavar="ID",
        help="The project's id, or a unique prefix of it (as `intentloop projects` lists them).",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print one machine-readable JSON object on stdout instead of tables."),
]

__all__ = ["JsonOption", "ProjectIdOption", "ProjectRootOption"]
