"""``python -m cli``: the same as the ``intentloop`` console script."""

from cli.entry import main

main()
