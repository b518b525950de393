"""The operations behind the 15 tools: rules, projection, snapshots, modes, import/export, delete.

The face stays import-light for the hook path (``intentloop.service.hookops`` lives in this package): the trio-based
:class:`~intentloop.service.aio.IntentService` and the argument structs are loaded only when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intentloop.service.aio import IntentService
    from intentloop.service.args import TOOL_NAMES, decode_arguments

_LAZY = {
    "IntentService": "intentloop.service.aio",
    "TOOL_NAMES": "intentloop.service.args",
    "decode_arguments": "intentloop.service.args",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'intentloop.service' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["TOOL_NAMES", "IntentService", "decode_arguments"]
