"""``python -m intentloop``: the same as the ``intentloop`` console script.

The one place where the ``intentloop`` package reaches up into the ``cli`` layer: it only hands the process over
(import-linter's layer contract lists this import as its single allowed exception).
"""

from cli.entry import main

main()
