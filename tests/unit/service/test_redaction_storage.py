"""Redaction happens before anything is stored: no secret reaches any file, benign identifiers survive."""

from __future__ import annotations

from typing import Any

import pytest

SECRETS = {
    "openai": "sk-test-1234567890abcdef",
    "github": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "AKIAABCDEFGHIJKLMNOP",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
    "bearer": "Bearer abcdefghijklmnopqrstuvwxyz123456",
    "password": "password=hunter2secretvalue",
}
BENIGN = [
    "/home/dev/project/src/intentloop/service/intent_service.py",
    "9b0f3c4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "parse_config_v2_from_env",
]


def _secret_values() -> list[bytes]:
    values = []
    for value in SECRETS.values():
        values.append(value.split("=", 1)[1].encode() if "=" in value else value.split()[-1].encode())
    return values


@pytest.mark.parametrize("kind", sorted(SECRETS))
async def test_every_text_field_is_redacted_before_storage(h: Any, kind: str) -> None:
    secret = SECRETS[kind]
    task = await h.start(f"initial {secret}", label=f"label {secret}")
    claim = await h.explicit(task, f"explicit {secret}", source_ref=h.user_src(excerpt=f"excerpt {secret}"))
    await h.inferred(task, f"inferred {secret}")
    await h.inferred(task, f"long term {secret}", scope="long_term")
    await h.call(
        "intent_add_evidence",
        task_id=task,
        request_id=h.rid(),
        statement=f"evidence {secret}",
        source_ref={"kind": "tool_result", "event_id": "t", "excerpt": secret},
        facets=["result_feedback"],
    )
    await h.call(
        "intent_mark_unknown",
        task_id=task,
        request_id=h.rid(),
        statement=f"unknown {secret}",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
    )
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id=h.rid(),
        claim_id=claim["claim_id"],
        reason=f"reason {secret}",
        source_ref=h.user_src(),
    )
    ledger = h.ledger.read_bytes()
    assert secret.split()[-1].split("=")[-1].encode() not in h.disk_bytes()
    assert b"[REDACTED:" in ledger
    assert ledger.count(b"[REDACTED:") >= 8
    # positive control: the words around the secret are stored
    for word in (b"initial", b"label", b"explicit", b"excerpt", b"inferred", b"long term", b"evidence", b"reason"):
        assert word in ledger


async def test_benign_identifiers_survive(h: Any) -> None:
    text = "keep " + " and ".join(BENIGN)
    task = await h.start(text)
    snap = await h.snapshot(task)
    assert snap["active_claims"][0]["statement"] == text
    ledger = h.ledger.read_bytes()
    for item in BENIGN:
        assert item.encode() in ledger
    for secret in _secret_values():
        assert secret not in ledger
