"""Generate ``tool_schemas.json`` (the published catalog) from the service's argument structs.

``intentloop/service/args.py`` is the one source: :data:`~intentloop.service.args.TOOLS` gives each tool's title,
description and hints, its argument struct gives the input schema (types, limits, patterns, defaults and required
fields from the annotations; descriptions and formats from ``msgspec.Meta``), and :class:`EnvelopeShape` here gives
the output schema every tool declares. The JSON file stays checked in because the server reads it at start instead of
importing the structs and building schemas (start-up time); ``tests/unit/mcp/test_schemagen.py`` fails when the file is
not byte for byte what :func:`render` writes, so neither side can be edited alone.

Why our own walk over the annotations and not ``msgspec.json.schema_components`` directly: msgspec sorts ``Literal``
values and puts union branches in its own order, and the published bytes (the original's zod-generated schemas) keep
the declaration order. The walk keeps it; ``tests/unit/mcp/test_catalog.py`` compares its output with msgspec's
schema field by field, so both describe exactly what the decoder accepts.

Run ``python -m intentloop.mcp.schemagen`` to rewrite the file, ``--check`` to only compare (exit 1 on a difference).
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
from msgspec import NODEFAULT, UNSET, Meta, Struct, UnsetType

from intentloop import SCHEMA_VERSION
from intentloop.mcp.catalog import SCHEMA_FILE
from intentloop.service.args import TOOLS

SCHEMA_PATH = Path(__file__).with_name(SCHEMA_FILE)
_COMMAND = "python -m intentloop.mcp.schemagen"


class ErrorShape(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The envelope's ``error`` member."""

    code: str
    message: str
    retryable: bool


class EnvelopeShape(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The answer envelope every tool declares as ``outputSchema`` (built by ``intentloop/mcp/envelope.py``)."""

    ok: bool
    schema_version: Literal[1]
    operation: str
    project_id: str | None
    task_id: str | None
    result: Any = UNSET
    error: ErrorShape | UnsetType = UNSET


# Key order of every schema node, as published (the original's schemas put ``default`` first; the boolean flags
# intentloop added publish it after ``type``, see _ordered).
_KEY_ORDER = (
    "description",
    "default",
    "minItems",
    "maxItems",
    "type",
    "format",
    "const",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
)
# The Meta attributes the walk turns into schema keywords; any other set attribute is refused, so a constraint the
# generator does not know cannot silently go unpublished.
_META_KEYWORDS = {
    "min_length": ("minLength", "minItems"),
    "max_length": ("maxLength", "maxItems"),
    "pattern": ("pattern", "pattern"),
    "ge": ("minimum", "minimum"),
    "le": ("maximum", "maximum"),
}
_UNSUPPORTED_META = ("gt", "lt", "multiple_of", "tz", "title", "examples", "extra")
_LITERAL_TYPES = {str: "string", bool: "boolean", int: "number", float: "number"}


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    unknown = set(node) - set(_KEY_ORDER)
    if unknown:
        raise ValueError(f"no published position for schema keywords {sorted(unknown)}")
    order = list(_KEY_ORDER)
    if node.get("type") == "boolean":  # intentloop's boolean flags: "type" then "default"
        order.remove("default")
        order.insert(order.index("type") + 1, "default")
    return {key: node[key] for key in order if key in node}


def _split_annotated(annotation: Any) -> tuple[Any, list[Meta]]:
    metas: list[Meta] = []
    while get_origin(annotation) is Annotated:
        metas = [*(m for m in annotation.__metadata__ if isinstance(m, Meta)), *metas]
        annotation = annotation.__origin__
    return annotation, metas


def _schema(annotation: Any) -> dict[str, Any]:
    """The published schema of one annotation (without ``default``, which belongs to the field)."""
    base, metas = _split_annotated(annotation)
    node: dict[str, Any] = {}
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        members = [arg for arg in get_args(base) if arg is not UnsetType]
        if len(members) == 1:
            node = _schema(members[0])
        else:
            node["anyOf"] = [{"type": "null"} if arg is type(None) else _schema(arg) for arg in members]
    elif origin is Literal:
        values = get_args(base)
        kinds = {_LITERAL_TYPES[type(value)] for value in values}
        if len(kinds) != 1:
            raise ValueError(f"a published Literal has values of one JSON type: {base}")
        node["type"] = kinds.pop()
        if len(values) == 1:
            node["const"] = values[0]
        else:
            node["enum"] = list(values)
    elif origin is list:
        (item,) = get_args(base)
        node = {"type": "array", "items": _schema(item)}
    elif isinstance(base, type) and issubclass(base, Struct):
        node = _object_schema(base)
    elif base is Any:
        node = {}
    elif base in (str, bool, int, float):
        node["type"] = {str: "string", bool: "boolean", int: "integer", float: "number"}[base]
    else:
        raise ValueError(f"no published schema for {base!r}")
    for meta in metas:
        for attribute in _UNSUPPORTED_META:
            if getattr(meta, attribute) is not None:
                raise ValueError(f"Meta({attribute}=...) is not published by the generator")
        for attribute, (scalar_key, array_key) in _META_KEYWORDS.items():
            value = getattr(meta, attribute)
            if value is not None:
                node[array_key if node.get("type") == "array" else scalar_key] = value
        if meta.description is not None:
            node["description"] = meta.description
        node.update(meta.extra_json_schema or {})
    return _ordered(node) if node else node


def _object_schema(struct: type[Struct]) -> dict[str, Any]:
    if not struct.__struct_config__.forbid_unknown_fields:
        raise ValueError(f"{struct.__name__}: a published object is closed (forbid_unknown_fields=True)")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in msgspec.structs.fields(struct):
        node = _schema(field.type)
        if field.default is not NODEFAULT and field.default is not UNSET:
            node = _ordered({**node, "default": field.default})
        elif field.default_factory is not NODEFAULT:
            node = _ordered({**node, "default": field.default_factory()})
        properties[field.encode_name] = node
        if field.required:
            required.append(field.encode_name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return _ordered(schema)


def build_document() -> dict[str, Any]:
    """The catalog document: the envelope schema and the 15 tools in their published order."""
    if get_args(msgspec.structs.fields(EnvelopeShape)[1].type) != (SCHEMA_VERSION,):
        raise ValueError("EnvelopeShape.schema_version must be the Literal of SCHEMA_VERSION")
    tools = [
        {
            "name": name,
            "title": tool.title,
            "description": tool.description,
            "annotations": {
                "readOnlyHint": tool.read_only,
                "destructiveHint": tool.destructive,
                "idempotentHint": tool.idempotent,
                "openWorldHint": False,
            },
            "inputSchema": _object_schema(tool.args),
        }
        for name, tool in TOOLS.items()
    ]
    return {"envelope": _object_schema(EnvelopeShape), "tools": tools}


def render() -> bytes:
    """The bytes of ``tool_schemas.json``: one-space indentation, UTF-8, a final newline."""
    return (json.dumps(build_document(), indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite ``tool_schemas.json`` from the structs; with ``--check``, only report whether it is current."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--check"]):
        print(f"usage: {_COMMAND} [--check]", file=sys.stderr)
        return 2
    rendered = render()
    current = SCHEMA_PATH.read_bytes() if SCHEMA_PATH.exists() else b""
    if rendered == current:
        print(f"{SCHEMA_PATH} is up to date")
        return 0
    if args == ["--check"]:
        print(f"{SCHEMA_PATH} differs from the argument structs: run {_COMMAND}", file=sys.stderr)
        return 1
    SCHEMA_PATH.write_bytes(rendered)
    print(f"wrote {SCHEMA_PATH}")
    return 0


__all__ = ["SCHEMA_PATH", "EnvelopeShape", "ErrorShape", "build_document", "main", "render"]

if __name__ == "__main__":
    raise SystemExit(main())
