"""A small in-memory ledger builder: real sealed, hash-chained v1 events, as the store would hand them over."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from intentloop.model import (
    Claim,
    Event,
    EventDraft,
    SourceRef,
    format_time,
    make_claim,
    new_uuid,
    seal,
    sha256_hex,
)

PROJECT_ID = sha256_hex("project under test")
BASE_TIME = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)


class Ledger:
    """Appends sealed events one second apart (or at an explicit time)."""

    def __init__(self, project_id: str = PROJECT_ID) -> None:
        self.project_id = project_id
        self.events: list[Event] = []
        self._clock = BASE_TIME
        self._n = 0

    def now(self) -> str:
        return format_time(self._clock)

    def advance(self, **delta: float) -> None:
        self._clock += timedelta(**delta)

    def add(
        self,
        event_type: str,
        task_id: str,
        payload: dict[str, Any],
        *,
        actor: str = "user",
        request_id: str | None = None,
        at: str | None = None,
    ) -> Event:
        self._n += 1
        self._clock += timedelta(seconds=1)
        draft = EventDraft(
            event_type=event_type,
            task_id=task_id,
            actor=actor,
            request_id=request_id or f"req-{self._n}",
            payload=payload,
            occurred_at=at or self.now(),
        )
        event = seal(draft, project_id=self.project_id, prev_hash=self.events[-1].event_hash if self.events else None)
        self.events.append(event)
        return event

    def start(
        self,
        task_id: str,
        *,
        mode: str = "on",
        label: str | None = None,
        session: str | None = None,
        initial_claims: Sequence[Claim] = (),
        request_id: str | None = None,
    ) -> Event:
        payload = {
            "mode": mode,
            "label": label,
            "host_session_hash": session,
            "initial_claims": [c.to_wire() for c in initial_claims],
            "request_fingerprint": sha256_hex(f"start {task_id}"),
        }
        return self.add("task_started", task_id, payload, request_id=request_id)

    def set_mode(self, task_id: str, mode: str, **extra: Any) -> Event:
        return self.add("mode_set", task_id, {"mode": mode, **extra, "request_fingerprint": sha256_hex(mode)})

    def new_claim(
        self,
        *,
        status: str = "explicit",
        statement: str = "Keep the output JSON.",
        facets: Iterable[str] = ("outcome",),
        source_kind: str | None = None,
        scope: str = "task",
        confidence: float | None = None,
        supersedes: Iterable[str] = (),
        related: Iterable[str] = (),
        valid_from: str | None = None,
    ) -> Claim:
        kind = source_kind or ("user_event" if status == "explicit" else "agent_turn")
        if status == "inferred" and confidence is None:
            confidence = 0.62
        return make_claim(
            claim_id=new_uuid(),
            statement=statement,
            epistemic_status=status,
            source_ref=SourceRef(kind=kind, event_id=f"src-{self._n}"),
            scope=scope,
            facets=facets,
            now=valid_from or self.now(),
            confidence=confidence,
            supersedes=supersedes,
            related_claim_ids=related,
        )

    def claim(self, task_id: str, event_type: str = "claim_added", **kwargs: Any) -> Claim:
        claim = self.new_claim(**kwargs)
        self.add(event_type, task_id, {"claim": claim.to_wire(), "request_fingerprint": sha256_hex(claim.claim_id)})
        return claim

    def invalidate(self, task_id: str, claim_id: str, reason: str = "No longer wanted.") -> Event:
        payload = {
            "claim_id": claim_id,
            "invalidated_at": self.now(),
            "reason": reason,
            "source_ref": {"kind": "user_event", "event_id": "inv-1"},
            "request_fingerprint": sha256_hex(claim_id),
        }
        return self.add("claim_invalidated", task_id, payload)

    def observe(self, task_id: str, event_type: str = "source_observed", candidate_type: str = "prompt_update") -> str:
        candidate_id = new_uuid()
        candidate = {
            "candidate_id": candidate_id,
            "candidate_type": candidate_type,
            "source_ref": {"kind": "user_event", "sha256": sha256_hex(candidate_id)},
            "created_at": self.now(),
        }
        self.add(event_type, task_id, {"candidate": candidate, "char_count": 12}, actor="agent")
        return candidate_id


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()
