"""The operations behind the 15 tools: rules, projection, snapshots, modes, import/export, delete.

The face stays import-light for the hook path (``intentloop.service.hookops`` lives in this package): the trio-based
:class:`~intentloop.service.intent_service.IntentService` and the argument structs are loaded only when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop._lazy import lazy_face

if TYPE_CHECKING:
    from intentloop.service.args import TOOL_NAMES, decode_arguments
    from intentloop.service.intent_service import IntentService

_LAZY = {"IntentService": "intent_service", "TOOL_NAMES": "args", "decode_arguments": "args"}

__all__ = ["TOOL_NAMES", "IntentService", "decode_arguments"]

__getattr__, __dir__ = lazy_face(__name__, _LAZY, __all__)
