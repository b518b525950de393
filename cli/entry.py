"""The ``intentloop`` console script. ``intentloop hook`` branches here before typer (or anything heavy) is imported;
``intentloop hook --help`` goes on to typer, which prints the command's help."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and not {"--help", "-h"} & set(argv[1:]):
        from hooks import run_hook

        raise SystemExit(run_hook(argv[1:]))
    from cli.app import run_app

    run_app()


if __name__ == "__main__":  # `python -m cli.entry`, the installer's fallback when no console script exists
    main()
