"""The ``task_started`` payload a session-linked task begins with: user-explicit hard constraints, as a tool writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentloop.model import new_uuid, session_hash, utc_now


def linked_task_payload(
    session: str, statements: Sequence[str], claim_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """The payload of a task bound to ``session`` whose claims are ``statements`` (ids new unless given)."""
    now = utc_now()
    ids = list(claim_ids) if claim_ids is not None else [new_uuid() for _ in statements]
    claims = [
        {
            "claim_id": claim_id,
            "statement": statement,
            "role": "user",
            "epistemic_status": "explicit",
            "source_ref": {"kind": "user_event", "event_id": f"start-{i}"},
            "scope": "task",
            "valid_from": now,
            "last_confirmed": now,
            "supersedes": [],
            "facets": ["hard_constraint"],
            "related_claim_ids": [],
        }
        for i, (claim_id, statement) in enumerate(zip(ids, statements, strict=True))
    ]
    return {
        "mode": "on",
        "label": None,
        "host_session_hash": session_hash(session),
        "initial_claims": claims,
        "request_fingerprint": "0" * 64,
    }
