"""Schema versions of ledger records and the migration steps between them (docs/EVENTS.md).

v1 is the only version: its migration is an explicit identity step, so the day a v2 appears the verifier already
routes every record through ``MIGRATIONS`` and a new step is one entry here plus its fixtures.
"""

from __future__ import annotations

from collections.abc import Callable

from intentloop.errors import CorruptLedgerError
from intentloop.model.events import Event

CURRENT_SCHEMA_VERSION = 1


def migrate_v1(event: Event) -> Event:
    """v1 → v1: the identity. The record and therefore its bytes and hash are unchanged."""
    return event


# schema_version found on disk -> step that turns such a record into the current version.
MIGRATIONS: dict[int, Callable[[Event], Event]] = {1: migrate_v1}


def schema_error(value: object, line: int) -> CorruptLedgerError | None:
    """The error for a record's ``schema_version``, or ``None`` when a migration step exists for it.

    ``FUTURE_SCHEMA`` for a number above the current version, ``MIGRATION_UNAVAILABLE`` for anything else that has
    no step (``0``, a string, a missing field).
    """
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number and value in MIGRATIONS and isinstance(value, int):
        return None
    if is_number and value > CURRENT_SCHEMA_VERSION:  # type: ignore[operator]
        return CorruptLedgerError(
            f"line {line} was written by a newer version (schema_version {value})",
            line=line,
            reason=f"schema_version {value} is newer than {CURRENT_SCHEMA_VERSION}",
            code="FUTURE_SCHEMA",
        )
    return CorruptLedgerError(
        f"line {line} has schema_version {value!r}, which cannot be migrated",
        line=line,
        reason=f"no migration from schema_version {value!r}",
        code="MIGRATION_UNAVAILABLE",
    )


def migrate(event: Event) -> Event:
    """Bring a verified record to the current schema version (identity for v1)."""
    return MIGRATIONS[event.schema_version](event)


__all__ = ["CURRENT_SCHEMA_VERSION", "MIGRATIONS", "migrate", "migrate_v1", "schema_error"]
