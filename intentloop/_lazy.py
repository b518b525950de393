"""Lazy package faces (PEP 562), shared by ``intentloop.model``, ``intentloop.store`` and ``intentloop.service``.

A face names each public attribute's submodule and imports it on first use, so the hook path loads only what it
touches (a read-only SessionStart never imports the lock machinery, the redaction patterns or trio). Standard
library only: this module sits below every layer.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_face(
    package: str, submodule_of: Mapping[str, str], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose attribute ``name`` lives in
    ``package.<submodule_of[name]>``; a loaded attribute is kept in the package's namespace.
    """
    namespace = sys.modules[package].__dict__
    public = frozenset(names)

    def __getattr__(name: str) -> Any:
        submodule = submodule_of.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__


__all__ = ["lazy_face"]
