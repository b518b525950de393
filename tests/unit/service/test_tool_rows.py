"""One row per tool: its name, argument struct, handler and metadata; the service binds every handler from the rows."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import msgspec
import pytest

from intentloop.service.args import TOOLS, StatusArgs, Tool, _by_name
from intentloop.service.intent_service import HandlerMissingError, bind

_IMPORT_WITH_ROW = """
import msgspec
from intentloop.service import args
args.TOOLS["intent_status"] = msgspec.structs.replace(args.TOOLS["intent_status"], handler={handler!r})
try:
    import intentloop.service.intent_service
except Exception as exc:
    print(type(exc).__name__, exc)
else:
    print("imported")
"""


def _import_with_status_handler(handler: str) -> str:
    """What importing the service prints in a fresh process whose ``intent_status`` row names ``handler``."""
    code = _IMPORT_WITH_ROW.format(handler=handler)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_a_row_naming_a_missing_handler_stops_the_service_import() -> None:
    for missing in ("_reads:no_such_operation", "_no_such_module:status", "status"):
        printed = _import_with_status_handler(missing)
        assert printed.startswith("HandlerMissingError intent_status:"), (missing, printed)
        assert repr(missing) in printed
    assert _import_with_status_handler("_reads:status") == "imported"  # control: the real row imports


def test_two_rows_with_one_name_are_refused() -> None:
    row = TOOLS["intent_status"]
    with pytest.raises(ValueError, match="share a name"):
        _by_name(row, msgspec.structs.replace(row, handler="_reads:snapshot"))
    assert list(_by_name(row, TOOLS["intent_export"])) == ["intent_status", "intent_export"]  # control


async def test_a_plain_function_runs_inline_and_a_coroutine_function_is_awaited() -> None:
    seen: list[Any] = []
    row = Tool(name="t", args=StatusArgs, handler="x:y", title="t", description="d", read_only=True)

    def plain(engine: Any, ctx: Any, args: Any) -> str:
        seen.append(("plain", args))
        return "plain"

    async def coroutine(engine: Any, ctx: Any, args: Any) -> str:
        seen.append(("coroutine", args))
        return "coroutine"

    import intentloop.service._reads as reads

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reads, "plain_for_test", plain, raising=False)
        patch.setattr(reads, "coroutine_for_test", coroutine, raising=False)
        for name in ("plain", "coroutine"):
            handler = bind(msgspec.structs.replace(row, handler=f"_reads:{name}_for_test"))
            assert await handler(None, None, name) == name  # type: ignore[arg-type]
    assert seen == [("plain", "plain"), ("coroutine", "coroutine")]
    with pytest.raises(HandlerMissingError):  # and nothing is bound once the function is gone
        bind(msgspec.structs.replace(row, handler="_reads:plain_for_test"))
