"""The 15 tools as published: names, titles, annotations, input schemas and the envelope output schema.

The schemas are data (``tool_schemas.json``, generated from the service's argument structs by
``python -m intentloop.mcp.schemagen``; a test keeps the two byte for byte equal), so the server reads one file at start
instead of importing the structs and building schemas; loading enforces ``additionalProperties: false`` on every
object schema so no edit of the file can quietly make an input lenient. It is read with msgspec into msgspec
structs: ``json``, ``dataclasses`` and ``importlib.resources`` (with ``zipfile``) would add ~10 ms to the server's
start, and nothing else on its start-up path needs them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

from intentloop.service import TOOL_NAMES  # the service's 15 operations, in their published order

SCHEMA_FILE = "tool_schemas.json"


_ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One published tool.

    Attributes:
        name: the wire name, e.g. ``intent_status``.
        title: the human title the original shows.
        description: what the tool does, for the model.
        annotations: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint`` (always false).
        input_schema: the JSON Schema of the arguments (every object closed).
        properties: the top-level argument names, in schema order.
    """

    name: str
    title: str
    description: str
    annotations: Mapping[str, bool]
    input_schema: Mapping[str, Any]
    properties: tuple[str, ...]


class Catalog(msgspec.Struct, frozen=True, kw_only=True):
    """All tools plus the envelope schema every tool declares as ``outputSchema``."""

    tools: tuple[ToolSpec, ...]
    envelope_schema: Mapping[str, Any]

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or ``None``."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


def iter_object_schemas(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(path, schema)`` for every schema node that describes a JSON object, at any depth."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield path, schema
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for prop, sub in value.items():
                    yield from iter_object_schemas(sub, f"{path}.{prop}")
            elif key in ("items", "additionalProperties"):
                yield from iter_object_schemas(value, f"{path}[]")
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
                for index, sub in enumerate(value):
                    yield from iter_object_schemas(sub, f"{path}|{index}")


def close_object_schemas(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``schema`` in which every object schema has ``additionalProperties: false``."""
    closed = copy.deepcopy(schema)
    for _, node in iter_object_schemas(closed):
        node["additionalProperties"] = False
    return closed


def parse_catalog(document: Mapping[str, Any]) -> Catalog:
    """Build the catalog from the JSON document.

    Raises:
        ValueError: the document does not list exactly :data:`TOOL_NAMES` with complete annotations.
    """
    tools: list[ToolSpec] = []
    for entry in document["tools"]:
        annotations = {key: bool(entry["annotations"][key]) for key in _ANNOTATION_KEYS}
        if annotations["openWorldHint"]:
            raise ValueError(f"{entry['name']}: openWorldHint must be false")
        schema = close_object_schemas(entry["inputSchema"])
        if schema.get("type") != "object":
            raise ValueError(f"{entry['name']}: input schema must describe an object")
        tools.append(
            ToolSpec(
                name=entry["name"],
                title=entry["title"],
                description=entry["description"],
                annotations=annotations,
                input_schema=schema,
                properties=tuple(schema.get("properties", {})),
            )
        )
    names = tuple(tool.name for tool in tools)
    if sorted(names) != sorted(TOOL_NAMES) or len(set(names)) != len(names):
        raise ValueError(f"the schema file must list exactly the 15 tools, got {names}")
    by_name = {tool.name: tool for tool in tools}
    envelope = close_object_schemas(document["envelope"])
    return Catalog(tools=tuple(by_name[name] for name in TOOL_NAMES), envelope_schema=envelope)


@cache
def load_catalog() -> Catalog:
    """The packaged catalog, parsed once per process."""
    return parse_catalog(msgspec.json.decode(Path(__file__).with_name(SCHEMA_FILE).read_bytes()))


__all__ = [
    "TOOL_NAMES",
    "Catalog",
    "ToolSpec",
    "close_object_schemas",
    "iter_object_schemas",
    "load_catalog",
    "parse_catalog",
]
