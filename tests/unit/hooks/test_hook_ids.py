"""A hook turn id that looks like a secret is not stored: the observation falls back to the keyed digest."""

from __future__ import annotations

import time
from typing import Any

import pytest

from intentloop.service.hookops import Observation, record_observation

SESSION = "session-0001"


def _record(project: Any, turn_id: str) -> None:
    obs = Observation(event="UserPromptSubmit", session_id=SESSION, turn_id=turn_id, text="go on")
    assert record_observation(project.data_root, project.root, obs, deadline=time.monotonic() + 2).recorded


@pytest.mark.parametrize(
    "turn_id",
    ["xK9mP2qR7vL4nT8wZ3bY6cF1hJ5", "k3j9x2m8q7w1z5v4b6n0p2r8tq", "sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2"],
    ids=["base62", "base36", "stripe"],
)
def test_a_secret_looking_turn_id_is_not_stored(project: Any, turn_id: str) -> None:
    project.start_task(SESSION)
    _record(project, turn_id)
    (event,) = [e for e in project.events() if e.request_id.startswith("hook:")]
    assert "event_id" not in event.payload["candidate"]["source_ref"]
    assert turn_id.encode() not in project.store.ledger_path.read_bytes()


def test_an_ordinary_turn_id_is_stored(project: Any) -> None:  # the positive control
    project.start_task(SESSION)
    _record(project, "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b")
    (event,) = [e for e in project.events() if e.request_id.startswith("hook:")]
    assert event.payload["candidate"]["source_ref"]["event_id"] == "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
