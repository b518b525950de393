"""The published catalog is generated from the argument structs: the checked-in file is exactly what they give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from msgspec import Meta

from intentloop.mcp import schemagen
from intentloop.service import args


def test_the_checked_in_file_is_exactly_what_the_structs_generate() -> None:
    assert schemagen.render() == schemagen.SCHEMA_PATH.read_bytes()


def test_a_struct_changed_alone_no_longer_matches_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    class WiderLabel(args.StartTaskArgs, frozen=True, kw_only=True):
        label: Annotated[str, Meta(max_length=501)] | msgspec.UnsetType = msgspec.UNSET

    tools = dict(args.TOOLS)
    tools["intent_start_task"] = msgspec.structs.replace(tools["intent_start_task"], args=WiderLabel)
    monkeypatch.setattr(schemagen, "TOOLS", tools)
    rendered = schemagen.render()
    assert rendered != schemagen.SCHEMA_PATH.read_bytes()
    start = json.loads(rendered)["tools"][1]
    assert start["inputSchema"]["properties"]["label"] == {"type": "string", "maxLength": 501}


def test_a_description_changed_alone_no_longer_matches_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = dict(args.TOOLS)
    tools["intent_status"] = msgspec.structs.replace(tools["intent_status"], description="Something else.")
    monkeypatch.setattr(schemagen, "TOOLS", tools)
    assert schemagen.render() != schemagen.SCHEMA_PATH.read_bytes()


def test_check_refuses_a_hand_edited_file_and_the_generator_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    published = schemagen.SCHEMA_PATH.read_bytes()
    target = tmp_path / "tool_schemas.json"
    target.write_bytes(published.replace(b'"maxLength": 500', b'"maxLength": 501', 1))
    monkeypatch.setattr(schemagen, "SCHEMA_PATH", target)
    assert schemagen.main(["--check"]) == 1
    assert "differs" in capsys.readouterr().err
    assert schemagen.main([]) == 0
    assert target.read_bytes() == published
    assert schemagen.main(["--check"]) == 0  # positive control: a regenerated file passes


def test_the_module_command_checks_the_real_file() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "intentloop.mcp.schemagen", "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "intentloop.mcp.schemagen", "--bogus"], capture_output=True, text=True, check=False
    )
    assert wrong.returncode == 2 and "usage" in wrong.stderr


def _schema_of(annotation: Any) -> dict[str, Any]:
    probe = msgspec.defstruct("Probe", [("value", annotation)], forbid_unknown_fields=True)
    document: dict[str, Any] = schemagen._object_schema(probe)
    return dict(document["properties"]["value"])


def test_the_walk_keeps_declaration_order_of_literals_and_unions() -> None:
    # msgspec's own schema sorts these; the published order is the declaration order.
    assert _schema_of(Literal["on", "private", "off"]) == {"type": "string", "enum": ["on", "private", "off"]}
    assert _schema_of(Literal[1]) == {"type": "number", "const": 1}
    union = _schema_of(args.InitialExplicitItem | args.Statement)
    assert [branch["type"] for branch in union["anyOf"]] == ["object", "string"]


def test_the_walk_refuses_what_it_cannot_publish() -> None:
    with pytest.raises(ValueError, match="gt"):
        _schema_of(Annotated[int, Meta(gt=0)])
    with pytest.raises(ValueError, match="one JSON type"):
        _schema_of(Literal["a", 1])

    class Open(msgspec.Struct):
        value: int

    with pytest.raises(ValueError, match="closed"):
        schemagen._object_schema(Open)
    assert _schema_of(Annotated[int, Meta(ge=0)]) == {"type": "integer", "minimum": 0}  # positive control


def test_the_server_start_up_does_not_load_the_generator() -> None:
    code = (
        "import sys, intentloop.mcp.server as server\n"
        "from intentloop.mcp.protocol import negotiate\n"
        "server.McpServer().tools(negotiate('2025-06-18'))\n"
        "print('intentloop.mcp.schemagen' in sys.modules, 'json' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
