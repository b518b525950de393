"""Who holds the lock, and is that process provably alive, provably dead, or unknown? (docs/STORAGE.md, "The lock")

A pid alone can be reused, so our owner record adds host, boot id and the process start time (``/proc/<pid>/stat``
field 22): the triple identifies one process for the life of a boot. A record without them (the original's
``{pid, token, acquired_at}``) is taken to come from this host, and its owner is dead when no process has its pid.
"""

from __future__ import annotations

import enum
import os
from functools import lru_cache
from typing import Any

import msgspec

from intentloop.model.ids import utc_now

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder(order="sorted")


class Liveness(enum.Enum):
    LIVE = "live"  # never robbed
    DEAD = "dead"  # reclaimed at once
    UNKNOWN = "unknown"  # reclaimed only after the stale window without heartbeat


class ProcessIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """The identity of one process: pid, host name, boot id and start time (clock ticks since boot).

    (A frozen struct, not a dataclass, like the lock's other records: ``dataclasses`` and the ``inspect`` it loads
    cost a writing hook ~6 ms of start-up, `python -X importtime`.)
    """

    pid: int
    host: str
    boot_id: str | None
    start_time: int | None


class OwnerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed ``owner.json`` (or ``reclaim.json``); only ``pid`` and ``token`` are required."""

    pid: int
    token: str
    acquired_at: str | None = None
    host: str | None = None
    boot_id: str | None = None
    start_time: int | None = None
    heartbeat_at: str | None = None

    @property
    def legacy(self) -> bool:
        """Written by the original implementation: no host, boot id or start time."""
        return self.host is None and self.boot_id is None and self.start_time is None

    def to_json(self) -> bytes:
        fields: dict[str, Any] = {"pid": self.pid, "token": self.token, "acquired_at": self.acquired_at}
        for key in ("host", "boot_id", "start_time", "heartbeat_at"):
            value = getattr(self, key)
            if value is not None:
                fields[key] = value
        return _encoder.encode(fields)


def parse_owner(data: bytes) -> OwnerRecord | None:
    """Parse an owner record leniently; ``None`` when it is empty, garbled or lacks a usable pid and token."""
    try:
        raw = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    pid, token = raw.get("pid"), raw.get("token")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    if not isinstance(token, str) or not token:
        return None

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    start = raw.get("start_time")
    acquired = raw.get("acquired_at")
    return OwnerRecord(
        pid=pid,
        token=token,
        acquired_at=acquired if isinstance(acquired, str) else None if acquired is None else str(acquired),
        host=text("host"),
        boot_id=text("boot_id"),
        start_time=start if isinstance(start, int) and not isinstance(start, bool) else None,
        heartbeat_at=text("heartbeat_at"),
    )


@lru_cache(maxsize=1)
def boot_id() -> str | None:
    """``/proc/sys/kernel/random/boot_id``, or ``None`` where there is no such file."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def host_name() -> str:
    return os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")


class _Gone:
    """Marker: no (living) process has the pid."""


GONE = _Gone()


def probe_process(pid: int) -> _Gone | int | None:
    """``GONE`` when no living process has ``pid`` (zombies count as gone), else its start time (``None`` if
    the platform does not tell)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat_line = handle.read()
    except FileNotFoundError:
        return GONE
    except OSError:
        return _probe_by_signal(pid)
    # "pid (comm) state ppid ..."; comm may contain spaces and parentheses, so split after the last ")".
    fields = stat_line[stat_line.rfind(b")") + 2 :].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return GONE
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def _probe_by_signal(pid: int) -> _Gone | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return GONE
    except OSError:
        return None  # exists (e.g. EPERM) or cannot tell
    return None


def current_identity() -> ProcessIdentity:
    pid = os.getpid()
    start = probe_process(pid)
    return ProcessIdentity(
        pid=pid, host=host_name(), boot_id=boot_id(), start_time=start if isinstance(start, int) else None
    )


def new_owner_record(token: str, me: ProcessIdentity) -> OwnerRecord:
    now = utc_now()
    return OwnerRecord(
        pid=me.pid,
        token=token,
        acquired_at=now,
        host=me.host,
        boot_id=me.boot_id,
        start_time=me.start_time,
        heartbeat_at=now,
    )


def judge(record: OwnerRecord | None, me: ProcessIdentity) -> Liveness:
    """Liveness of a record's process, as seen from ``me``.

    Unknown: no usable record, or another host. Dead: same host and a different boot, or no living process has the
    pid, or it has but started at another time (the pid was reused). Live otherwise — including a legacy record whose
    pid is alive, since it carries nothing to prove the pid was reused.
    """
    if record is None:
        return Liveness.UNKNOWN
    if not record.legacy:
        if record.host is None or record.host != me.host:
            return Liveness.UNKNOWN
        if record.boot_id is not None and me.boot_id is not None and record.boot_id != me.boot_id:
            return Liveness.DEAD
    probed = probe_process(record.pid)
    if probed is GONE:
        return Liveness.DEAD
    same_boot = record.boot_id is not None and record.boot_id == me.boot_id
    if same_boot and isinstance(probed, int) and record.start_time is not None and probed != record.start_time:
        return Liveness.DEAD
    return Liveness.LIVE


__all__ = [
    "GONE",
    "Liveness",
    "OwnerRecord",
    "ProcessIdentity",
    "boot_id",
    "current_identity",
    "host_name",
    "judge",
    "new_owner_record",
    "parse_owner",
    "probe_process",
]
