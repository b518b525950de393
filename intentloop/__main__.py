"""``python -m intentloop``: the same as the ``intentloop`` console script (the installers' fallback is ``python -P -m
intentloop``, so a project directory holding packages of its own never shadows it)."""

from intentloop.cli.entry import main

main()
