"""The lock timings: defaults, the INTENT_LOOP_LOCK_* variables and the invariants between them."""

from __future__ import annotations

import pytest

from intentloop.store import LockConfig


def test_lock_config_from_environment():
    env = {
        "INTENT_LOOP_LOCK_HEARTBEAT_S": "2",
        "INTENT_LOOP_LOCK_STALE_S": "12.5",
        "INTENT_LOOP_LOCK_WAIT_S": "1",
        "INTENT_LOOP_LOCK_CEILING_S": "8",
    }
    assert LockConfig.from_env(env) == LockConfig(heartbeat_s=2, stale_s=12.5, wait_s=1, ceiling_s=8)
    assert LockConfig.from_env({}) == LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=30)
    bad = {key: value for key, value in zip(env, ["x", "-1", "nan", "0"], strict=True)}
    assert LockConfig.from_env(bad) == LockConfig()
    assert LockConfig(heartbeat_s=20, stale_s=10).heartbeat_s == 5  # heartbeat stays below half the stale window
    assert LockConfig(wait_s=9, ceiling_s=1).ceiling_s == 9


def test_the_six_timings_are_given_by_name_only() -> None:
    # Six floats in a row: a positional call would silently swap a wait for a stale window.
    with pytest.raises(TypeError):
        LockConfig(10, 30)  # type: ignore[misc]
    assert LockConfig(heartbeat_s=10, stale_s=30) == LockConfig()  # control: the same values by name
