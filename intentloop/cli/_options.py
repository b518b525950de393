"""The options several commands share, spelled once so their names and help stay identical everywhere."""

from __future__ import annotations

from typing import Annotated, Any

import typer

#: ``-h`` is ``--help`` for every command and group.
HELP_OPTIONS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def command_group(name: str, help_text: str) -> typer.Typer:
    """A group of subcommands (``forget``, ``keys``, ``recover``, ``share``): its help when called bare, ``-h``."""
    return typer.Typer(
        name=name, help=help_text, no_args_is_help=True, rich_markup_mode=None, context_settings=HELP_OPTIONS
    )


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

__all__ = ["HELP_OPTIONS", "JsonOption", "ProjectIdOption", "ProjectRootOption", "command_group"]
