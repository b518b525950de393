"""``intentloop hook [EVENT]``: listed here for ``--help``; ``cli/entry.py`` runs hooks before typer is imported."""

from __future__ import annotations

from typing import Annotated

import typer

from intentloop.cli._complete import hook_events
from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT
from intentloop.model.hook_events import EVENT_BY_ARGUMENT


def hook(
    ctx: typer.Context,
    event: Annotated[
        str | None,
        typer.Argument(
            metavar="[EVENT]",
            help=f"one of {', '.join(EVENT_BY_ARGUMENT)}, or for Gemini CLI {', '.join(GEMINI_EVENT_BY_ARGUMENT)} "
            "(default: the payload's own).",
            autocompletion=hook_events,
        ),
    ] = None,
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            help="The data root to use instead of the one every process resolves (what `intentloop install` writes).",
        ),
    ] = None,
) -> int:
    """Handle one host hook: read the JSON payload on stdin, print one JSON line, always exit 0.

    Never blocks, never imports typer, rich or mcp on its real path (the console script branches before them).
    """
    from intentloop.hooks import run_hook

    argv = (["--data-dir", data_dir] if data_dir is not None else []) + ([event] if event is not None else [])
    argv += list(ctx.args)
    return run_hook(argv)


__all__ = ["hook"]
