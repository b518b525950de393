"""The ``intentloop`` console script.

``intentloop hook`` and ``intentloop serve`` branch here before typer (or anything heavy) is imported: hosts start both
on every session and hook event, and typer with its pydantic-based parsing would add ~40–140 ms to each start.
``intentloop hook --help`` goes on to typer, which prints the command's help.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and not {"--help", "-h"} & set(argv[1:]):
        from intentloop.hooks import run_hook

        raise SystemExit(run_hook(argv[1:]))
    if argv == ["serve"]:
        from intentloop.cli.serve import serve

        raise SystemExit(serve())
    from intentloop.cli.app import run_app

    run_app()
