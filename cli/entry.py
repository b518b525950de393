"""The ``intentloop`` console script.

``intentloop hook`` and ``intentloop serve`` branch here before typer (or anything heavy) is imported: hosts start both
on every session and hook event, and typer with its pydantic-based parsing would add ~40–140 ms to each start.
``intentloop hook --help`` goes on to typer, which prints the command's help.
"""

from __future__ import annotations

import importlib.util
import os
import sys

# The repository's top-level folders install as import names of their own (see docs/ARCHITECTURE.md, "Packaging").
_OWN = ("hooks", "recovery")
_FAIL_OPEN = b'{"continue":true,"suppressOutput":true}\n'


def foreign_packages() -> list[tuple[str, str]]:
    """``(name, location)`` of each of our top-level import names that another distribution's package shadows.

    Ours sit beside ``cli`` (this package) in one installation; a ``hooks`` or ``recovery`` found elsewhere on
    ``sys.path`` first would otherwise fail later with an obscure ImportError, or run someone else's code.
    """
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for name in _OWN:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None or os.path.dirname(os.path.dirname(os.path.abspath(origin))) != home:
            found.append((name, origin or "nowhere"))
    return found


def _refuse_foreign(foreign: list[tuple[str, str]], *, hook: bool) -> None:
    for name, origin in foreign:
        sys.stderr.write(
            f"intentloop: the import name {name!r} resolves to {origin}, not to this intentloop installation; "
            "another installed distribution uses the same top-level name. Install intentloop in its own virtual "
            "environment (pipx install intentloop).\n"
        )
    if hook:  # a hook still answers its host, fail-open
        sys.stdout.buffer.write(_FAIL_OPEN)
        sys.stdout.buffer.flush()
        raise SystemExit(0)
    raise SystemExit(3)


def main() -> None:
    argv = sys.argv[1:]
    is_hook = argv[:1] == ["hook"] and not {"--help", "-h"} & set(argv[1:])
    foreign = foreign_packages()
    if foreign:
        _refuse_foreign(foreign, hook=is_hook)
    if is_hook:
        from hooks import run_hook

        raise SystemExit(run_hook(argv[1:]))
    if argv == ["serve"]:
        from cli.serve import serve

        raise SystemExit(serve())
    from cli.app import run_app

    run_app()


if __name__ == "__main__":  # `python -m cli.entry`, the installer's fallback when no console script exists
    main()
