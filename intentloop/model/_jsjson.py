"""JavaScript's ``JSON.stringify`` for a parsed JSON tree, so JSON-mode redaction writes what the original wrote.

Why not ``json.dumps``: JavaScript orders integer-like keys first, prints every number as a double in its own shortest
form (``1`` not ``1.0``, ``1e+21``, ``1e-7``) and escapes lone surrogates; a statement stored by either implementation
from the same input must be the same bytes, or request fingerprints and retries would disagree.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_NUMBER = re.compile(r"-?(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX_LIMIT = 2**32 - 1


def js_number(value: float) -> str:
    """``Number.prototype.toString()`` for a finite double (``NaN``/``Infinity`` print ``null`` as in JSON)."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    match = _NUMBER.fullmatch(repr(abs(value)))
    if match is None:  # pragma: no cover - repr of a finite float always matches
        raise ValueError(f"unexpected float repr {value!r}")
    whole, frac, exp = match.group(1), match.group(2) or "", int(match.group(3) or 0)
    digits = whole + frac
    point = len(whole) + exp  # value = 0.<digits> × 10^point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    sign = "-" if value < 0 else ""
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def _js_string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _is_array_index(key: str) -> bool:
    return len(key) <= 10 and key.isascii() and key.isdigit() and str(int(key)) == key and int(key) < _ARRAY_INDEX_LIMIT


def _js_key_order(keys: list[str]) -> list[str]:
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


def js_stringify(value: Any) -> str:
    """Compact ``JSON.stringify(value)`` for dicts, lists, str, float/int, bool and ``None``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number(float(value))
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, list):
        return "[" + ",".join(js_stringify(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = _js_key_order(list(value))
        return "{" + ",".join(_js_string(k) + ":" + js_stringify(value[k]) for k in keys) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


__all__ = ["js_number", "js_stringify"]
