"""The operations behind the 15 tools: rules, projection, snapshots, modes, import/export, delete.

The face stays import-light for the hook path (``intentloop.service.hookops`` lives in this package): the trio-based
:class:`~intentloop.service.intent_service.IntentService` and the argument structs are loaded only when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop._lazy import lazy_face

if TYPE_CHECKING:  # what mypy checks: `X as X` re-exports each name, so a misspelt import fails it
    from intentloop.service.args import TOOL_NAMES as TOOL_NAMES, decode_arguments as decode_arguments
    from intentloop.service.intent_service import IntentService as IntentService
else:  # the same names, each loaded from its submodule on first use (PEP 562)
    __getattr__, __dir__, __all__ = lazy_face(
        __name__,
        {
            "args": ["TOOL_NAMES", "decode_arguments"],
            "intent_service": ["IntentService"],
        },
    )
