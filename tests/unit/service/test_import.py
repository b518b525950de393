"""Import validation: every INVALID_IMPORT rule, collisions, and a valid graph beside each refusal."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from intentloop.service import _import

A = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
B = "1a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
C = "2a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
CAND = "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
TASK_REF = "4a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def claim(claim_id: str, statement: str, *, at: str = "2026-01-01T00:00:00.000Z", **extra: Any) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "statement": statement,
        "role": "user",
        "epistemic_status": "explicit",
        "source_ref": {"kind": "user_event", "event_id": "turn"},
        "scope": "task",
        "valid_from": at,
        "last_confirmed": None,
        "supersedes": [],
        "facets": ["outcome"],
        "related_claim_ids": [],
        **extra,
    }


def graph(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "intent-loop-export",
        "schema_version": 1,
        "exported_at": "2026-02-01T00:00:00.000Z",
        "source_project_id": "d" * 64,
        "source_task_id": "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "history_complete": False,
        "claims": [
            claim(A, "first"),
            claim(B, "second", at="2026-01-02T00:00:00.000Z", supersedes=[A], related_claim_ids=[A]),
        ],
        "invalidated_claim_ids": [],
        "candidates": [
            {
                "candidate_id": CAND,
                "candidate_type": "long_term_preference",
                "source_ref": {"kind": "agent_turn", "event_id": "t"},
                "created_at": "2026-01-03T00:00:00.000Z",
                "summary": "likes tea",
                "task_ids": [TASK_REF],
            }
        ],
    }
    base.update(overrides)
    return base


def _mutated(path: str, value: Any) -> dict[str, Any]:
    g = graph()
    target: Any = g
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return g


BAD_GRAPHS = {
    "role does not match status": _mutated("claims.0.role", "agent"),
    "inferred without confidence": _mutated("claims.0.epistemic_status", "inferred"),
    "confidence on explicit": _mutated("claims.0.confidence", 0.5),
    "valid_from without seconds": _mutated("claims.0.valid_from", "2026-01-01T00:00Z"),
    "last_confirmed without seconds": _mutated("claims.0.last_confirmed", "2026-01-01T00:00Z"),
    "review_after without seconds": _mutated("claims.0.review_after", "2026-01-01T00:00Z"),
    "exported_at without seconds": graph(exported_at="2026-02-01T00:00Z"),
    "created_at without seconds": _mutated("candidates.0.created_at", "2026-01-03T00:00Z"),
    "duplicate claim ids": graph(claims=[claim(A, "x"), claim(A, "y")]),
    "duplicate candidate ids": graph(candidates=[graph()["candidates"][0]] * 2),
    "missing superseded claim": graph(claims=[claim(A, "x", supersedes=[C])]),
    "missing related claim": graph(claims=[claim(A, "x", related_claim_ids=[C])]),
    "self supersession": graph(claims=[claim(A, "x", supersedes=[A])]),
    "supersession cycle": graph(
        claims=[claim(A, "x", supersedes=[B]), claim(B, "y", supersedes=[C]), claim(C, "z", supersedes=[A])]
    ),
    "replacement older than target": graph(
        claims=[claim(A, "x"), claim(B, "y", at="2025-12-31T00:00:00.000Z", supersedes=[A])]
    ),
    "invalidated id not in claims": graph(invalidated_claim_ids=[C]),
    "combined item limit": graph(
        claims=[claim(f"{i:08x}-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "s") for i in range(1000)],
        invalidated_claim_ids=[f"{i:08x}-4e5f-4a6b-8c7d-9e0f1a2b3c4d" for i in range(1000)],
    ),
    "combined relation limit": graph(
        claims=[
            claim(f"{i:08x}-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "s", related_claim_ids=[A] * 20, supersedes=[A])
            for i in range(1000)
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
async def test_invalid_import(h: Any, case: str) -> None:
    task = await h.start()
    await h.fails(
        "INVALID_IMPORT", "intent_import", task_id=task, request_id="bad", graph=copy.deepcopy(BAD_GRAPHS[case])
    )
    assert not [line for line in h.ledger_lines() if b"graph_imported" in line]


async def test_valid_graph_imports_with_fresh_ids_and_relations_kept(h: Any) -> None:
    task = await h.start()
    snap = await h.call("intent_import", task_id=task, request_id="ok", graph=graph())
    (active,) = snap["active_claims"]
    assert active["statement"] == "second"
    assert active["claim_id"] not in (A, B)
    assert len(active["supersedes"]) == 1 and active["supersedes"] == active["related_claim_ids"]
    (candidate,) = await h.call("intent_list_candidates", task_id=task)
    assert candidate["candidate_id"] != CAND
    assert candidate["task_ids"] != [TASK_REF] and len(candidate["task_ids"]) == 1
    assert candidate["source_ref"]["kind"] == "explicit_import"
    assert snap["candidate_count"] == 1


async def test_invalid_ids_inside_a_graph(h: Any) -> None:
    task = await h.start()
    nil = "00000000-0000-0000-0000-000000000000"
    await h.fails("INVALID_ID", "intent_import", task_id=task, request_id="n", graph=graph(source_task_id=nil))
    await h.fails("INVALID_ID", "intent_import", task_id=task, request_id="n2", graph=graph(claims=[claim(nil, "x")]))


async def test_import_collision(h: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    task = await h.start("existing")
    existing = (await h.snapshot(task))["active_claims"][0]["claim_id"]
    monkeypatch.setattr(_import, "new_uuid", lambda: existing)
    await h.fails("IMPORT_COLLISION", "intent_import", task_id=task, request_id="c", graph=graph())
    monkeypatch.undo()
    assert await h.call("intent_import", task_id=task, request_id="c", graph=graph())


async def test_import_redacts_before_storage_and_hashes_only_redacted_text(h: Any) -> None:
    task = await h.start()
    secret = "sk-test-1234567890abcdef"
    leaky = graph(
        claims=[
            claim(A, f"use key {secret} here", source_ref={"kind": "user_event", "event_id": "t", "excerpt": secret})
        ],
        candidates=[{**graph()["candidates"][0], "summary": f"summary {secret}"}],
    )
    snap = await h.call("intent_import", task_id=task, request_id="r", graph=leaky)
    assert snap["active_claims"][0]["statement"] == "use key [REDACTED:openai-key] here"
    assert secret.encode() not in h.disk_bytes()
    retry = await h.call("intent_import", task_id=task, request_id="r", graph=leaky)
    assert len(retry["active_claims"]) == 1
    await h.fails("MODE_OFF", "intent_import", task_id=await h.start(mode="off"), request_id="r", graph=graph())
