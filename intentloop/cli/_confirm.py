"""Asking before a command changes or destroys data: on a terminal only; without one, ``--yes`` is required."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from intentloop.errors import InvalidInputError

if TYPE_CHECKING:
    from intentloop.cli._output import Output


def stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return False


def ask(question: str, *, what: str) -> str:
    """Print ``question`` on stderr and return the answer typed on the terminal (stripped).

    Raises:
        IntentLoopError: ``CONFIRMATION_REQUIRED`` when stdin is not a terminal (``what`` says what needs it).
    """
    if not stdin_is_terminal():
        raise InvalidInputError(f"{what} and there is no terminal to confirm on", code="CONFIRMATION_REQUIRED")
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline().strip()


def confirm(question: str, *, what: str) -> bool:
    """A ``[y/N]`` question; true only for ``y`` or ``yes``."""
    return ask(f"{question} [y/N] ", what=what).lower() in ("y", "yes")


def declined(out: Output, fields: Mapping[str, object], *, exit_code: int) -> int:
    """Report that the user did not confirm (nothing was changed) and return ``exit_code``."""
    error = InvalidInputError("not confirmed: nothing was changed", code="CONFIRMATION_REQUIRED")
    if out.json_mode:
        out.json_object({**fields, "action": "cancelled"}, exit_code=exit_code, error=error)
    else:
        sys.stderr.write("cancelled: nothing was changed\n")
    return exit_code


__all__ = ["ask", "confirm", "declined", "stdin_is_terminal"]
