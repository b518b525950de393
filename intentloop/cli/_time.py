"""An instant as a person types it on the command line (``show --as-of``), made into the tools' RFC 3339 UTC form.

The MCP tool takes only ``YYYY-MM-DDTHH:MM:SS[.fff]Z``: an agent sends exactly that. A person types a date, a local
time or a time with an offset; the CLI converts each to UTC with milliseconds and echoes the result, so what was
asked is visible beside what was answered.
"""

from __future__ import annotations

import re
from datetime import datetime

from intentloop.errors import InvalidInputError
from intentloop.model.ids import format_time

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INSTANT = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<clock>\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(?P<zone>[Zz]|[+-]\d{2}:?\d{2})?$"
)


def instant(text: str) -> str:
    """``text`` as an RFC 3339 UTC instant with milliseconds (``2026-12-01T09:00:00.000Z``).

    Accepted: a date (``2026-12-01``: local midnight at its start), a local date and time (``2026-12-01 10:00``,
    ``2026-12-01T10:00:30``: this machine's time zone) and an RFC 3339 time with ``Z`` or an offset
    (``2026-12-01T10:00:00+01:00``). Only ASCII digits.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` naming ``--as-of`` and the forms it takes.
    """
    value = text.strip()
    try:
        if not value.isascii():
            raise ValueError(value)
        if _DATE.match(value):
            moment = datetime.strptime(value, "%Y-%m-%d").astimezone()
        else:
            match = _INSTANT.match(value)
            if match is None:
                raise ValueError(value)
            clock = match["clock"]
            whole, _, fraction = clock.partition(".")
            if whole.count(":") == 1:
                whole += ":00"
            moment = datetime.strptime(f"{match['date']}T{whole}", "%Y-%m-%dT%H:%M:%S")
            if fraction:
                moment = moment.replace(microsecond=int((fraction + "000000")[:6]))
            zone = match["zone"]
            if zone is None:
                moment = moment.astimezone()  # a local time: this machine's zone, daylight saving included
            else:
                offset = "+00:00" if zone in "Zz" else zone
                moment = datetime.fromisoformat(moment.isoformat() + offset)
    except (ValueError, OverflowError):
        raise InvalidInputError(
            f"--as-of {text!r} is not a time: give a date (2026-12-01), a local time (2026-12-01 10:00) or an "
            "RFC 3339 time (2026-12-01T10:00:00Z, 2026-12-01T11:00:00+01:00)"
        ) from None
    return format_time(moment)


__all__ = ["instant"]
