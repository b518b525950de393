"""Canonical JSON, SHA-256 helpers and request fingerprints (docs/EVENTS.md).

Canonical JSON is msgspec's sorted encoding, byte-identical with ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` for everything but floats, where it matches the original's JavaScript ``JSON.stringify``
(``1e-7``); integral floats are written as integers (``1``, not ``1.0``) as JavaScript does.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder(order="sorted")


def _normalize_floats(value: Any) -> Any:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and Infinity have no canonical JSON form")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: _normalize_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize_floats(v) for v in value]
    return value


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` (dicts, lists, str, int, float, bool, None, msgspec Structs) as canonical JSON bytes."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    return _encoder.encode(_normalize_floats(value))


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def request_fingerprint(operation: str, normalized_input: Any) -> str:
    """``sha256_hex(canonical({"operation": op, "input": normalized_input}))``: no raw request body is ever stored."""
    return sha256_hex(canonical_bytes({"operation": operation, "input": normalized_input}))


__all__ = ["canonical_bytes", "canonical_text", "request_fingerprint", "sha256_hex"]
