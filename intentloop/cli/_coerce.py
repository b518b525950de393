"""Option values that already are what their annotation asks for (a ``str`` for a ``str`` option, a ``bool`` for a
flag, ``None`` for an absent one) taken as they are, without typer building a pydantic ``TypeAdapter`` for them.

Why: typer coerces every option value, absent ones included, through pydantic, whose import cost a read command about
half of ``intentloop --version`` (docs/BENCHMARK.md, "CLI reads"). Any other value, and every error, is typer's own.
"""

from __future__ import annotations

from typing import Any

from typer._click import Context
from typer._coercion import RuntimeParam, build_runtime_param
from typer.core import _TyperParameter

_PLAIN = (str, bool)


class _TakenAsIs(RuntimeParam):
    """The coercion of a plain ``str`` or ``bool`` parameter: a value of exactly that type (and ``None``, which
    ``RuntimeParam.coerce`` answers before this) is what typer's pydantic path returns for it, unchanged."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        if type(value) is self.annotation:
            return value
        return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)


def _runtime_param(self: _TyperParameter) -> RuntimeParam:
    if self._runtime_param is None:
        descriptor = self.type_descriptor
        info = descriptor.parameter_info
        if descriptor.annotation in _PLAIN and info.parser is None and not descriptor.is_file:
            self._runtime_param = _TakenAsIs(annotation=descriptor.annotation, parameter_info=info)
        else:
            self._runtime_param = build_runtime_param(descriptor)
    return self._runtime_param


def take_plain_values() -> None:
    """Make every typer parameter of this process take plain values as they are (the CLI's process only)."""
    _TyperParameter.get_runtime_param = _runtime_param  # type: ignore[method-assign]


__all__ = ["take_plain_values"]
