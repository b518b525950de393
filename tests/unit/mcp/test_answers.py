"""The answers shared by the front loop and the trio server: one tool list per revision, whatever was built first."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from intentloop.mcp.protocol import REVISIONS

_TOOLS_OF = """
import json, sys
from intentloop.mcp.answers import tools
from intentloop.mcp.protocol import REVISIONS
for version in sys.argv[1:]:
    built = tools(REVISIONS[version])
print(json.dumps(built))
"""


def tools_built_after(*versions: str) -> object:
    """The tool list of the last of ``versions``, in a fresh process that built the others' lists first."""
    done = subprocess.run(
        [sys.executable, "-c", _TOOLS_OF, *versions], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("version", sorted(REVISIONS))
def test_each_revision_gets_its_own_tool_list_whatever_was_built_before(version: str) -> None:
    alone = tools_built_after(version)
    for other in sorted(REVISIONS):
        # Key order is part of the bytes: compare the encoded lists, not the parsed ones.
        assert json.dumps(tools_built_after(other, version)) == json.dumps(alone), (other, version)


def test_the_eras_order_schema_keys_differently() -> None:
    """Control: 2025-06-18 and 2026-07-28 have the same fields but not the same key order."""
    handshake, modern = tools_built_after("2025-06-18"), tools_built_after("2026-07-28")
    assert isinstance(handshake, list) and isinstance(modern, list)
    assert handshake[0]["inputSchema"] == modern[0]["inputSchema"]
    assert list(handshake[0]["inputSchema"]) != list(modern[0]["inputSchema"])
