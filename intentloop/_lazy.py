"""Lazy package faces (PEP 562), shared by ``intentloop.model``, ``intentloop.store`` and ``intentloop.service``.

A face names each public attribute's submodule and imports it on first use, so the hook path loads only what it
touches (a read-only SessionStart never imports the lock machinery, the redaction patterns or trio). Standard
library only: this module sits below every layer.

A face writes its names twice, on purpose: as ``X as X`` imports under ``TYPE_CHECKING`` (what mypy checks, so a
misspelt ``from intentloop.store import ...`` fails it: a module-level ``__getattr__`` visible to mypy would make every
name an ``Any``) and as the submodule table given here at run time (an import statement would load the submodule).
``tests/unit/test_lazy_faces.py`` checks that the two name the same attributes in the same submodules.

The first name a face loads imports msgspec the hook's and the server's way (``_startup.import_msgspec_alone``), so a
CLI command does not pay ~9 ms for ``typing_extensions`` either.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from intentloop._startup import import_msgspec_alone


def lazy_face(
    package: str, names_by_submodule: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package``, whose public attribute ``name`` lives in
    ``package.<submodule>`` for the submodule that lists it; a loaded attribute is kept in the package's namespace.
    """
    namespace = sys.modules[package].__dict__
    submodule_of = {name: submodule for submodule, names in names_by_submodule.items() for name in names}

    def __getattr__(name: str) -> Any:
        submodule = submodule_of.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import_msgspec_alone()
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *submodule_of})

    return __getattr__, __dir__, sorted(submodule_of)


__all__ = ["lazy_face"]
