"""Lock timings (docs/STORAGE.md) and the environment variables that set them (documented in docs/STORAGE.md).

A value that is missing, not a number or not positive falls back to its default: a typo in the environment must not
make hooks fail or a lock wait forever. The heartbeat is kept below half the stale window so that a live owner can
never look stale to a waiter.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import msgspec

ENV_HEARTBEAT = "INTENT_LOOP_LOCK_HEARTBEAT_S"
ENV_STALE = "INTENT_LOOP_LOCK_STALE_S"
ENV_WAIT = "INTENT_LOOP_LOCK_WAIT_S"
ENV_CEILING = "INTENT_LOOP_LOCK_CEILING_S"
_HEARTBEAT_S, _STALE_S, _WAIT_S, _CEILING_S = 10.0, 30.0, 5.0, 30.0


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


class LockConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Timings of the ledger lock, in seconds (a frozen struct, not a dataclass: the hook never imports dataclasses).

    Attributes:
        heartbeat_s: how often a holder refreshes ``heartbeat_at`` in ``owner.json``.
        stale_s: an owner of unknown liveness (garbled record, other host) may be displaced after this long without
            any sign of life; a live owner never is.
        wait_s: a waiter gives up (``LOCK_TIMEOUT``) after this long without owner progress (a new owner token or a
            heartbeat).
        ceiling_s: a waiter always gives up after this long, progress or not.
        poll_min_s, poll_max_s: bounds of the randomised delay between two acquisition attempts.
    """

    heartbeat_s: float = _HEARTBEAT_S
    stale_s: float = _STALE_S
    wait_s: float = _WAIT_S
    ceiling_s: float = _CEILING_S
    poll_min_s: float = 0.002
    poll_max_s: float = 0.05

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "heartbeat_s", min(self.heartbeat_s, self.stale_s / 2))
        msgspec.structs.force_setattr(self, "ceiling_s", max(self.ceiling_s, self.wait_s))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LockConfig:
        """Read ``INTENT_LOOP_LOCK_{HEARTBEAT,STALE,WAIT,CEILING}_S`` (defaults 10, 30, 5, 30)."""
        environ = os.environ if env is None else env
        return cls(
            heartbeat_s=_seconds(environ, ENV_HEARTBEAT, _HEARTBEAT_S),
            stale_s=_seconds(environ, ENV_STALE, _STALE_S),
            wait_s=_seconds(environ, ENV_WAIT, _WAIT_S),
            ceiling_s=_seconds(environ, ENV_CEILING, _CEILING_S),
        )


__all__ = ["ENV_CEILING", "ENV_HEARTBEAT", "ENV_STALE", "ENV_WAIT", "LockConfig"]
