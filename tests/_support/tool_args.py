"""Arguments of the claim-adding tools, as an agent would send them (standard library only: the wire driver
:mod:`_support.mcp_wire` also runs as a script).
"""

from __future__ import annotations

from typing import Any


def source(kind: str, event_id: str) -> dict[str, str]:
    """A ``source_ref``."""
    return {"kind": kind, "event_id": event_id}


# Arguments of the three claim-adding tools: a direct user statement, a visible inference, a tool's evidence.
def explicit(task: str, request_id: str, statement: str, event_id: str = "turn-1", **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("user_event", event_id),
        "facets": ["hard_constraint"],
        "confirmation_reason": "direct_statement",
        **extra,
    }


def inference(task: str, request_id: str, statement: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("agent_turn", "turn-2"),
        "facets": ["soft_constraint"],
        "confidence": 0.6,
        **extra,
    }


def evidence(task: str, request_id: str, statement: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "request_id": request_id,
        "statement": statement,
        "source_ref": source("tool_result", "ci-1"),
        "facets": ["result_feedback"],
        **extra,
    }


def statements(snapshot: dict[str, Any]) -> set[str]:
    """The statements of a snapshot's active claims."""
    return {claim["statement"] for claim in snapshot["active_claims"]}


__all__ = ["evidence", "explicit", "inference", "source", "statements"]
