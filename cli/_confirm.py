"""Asking before a command changes or destroys data: on a terminal only; without one, ``--yes`` is required."""

from __future__ import annotations

import os
import sys

from intentloop.errors import InvalidInputError


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


__all__ = ["ask", "confirm", "stdin_is_terminal"]
