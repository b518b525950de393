"""The combined view (``intentloop/service/_share_view.py``): a writer's part of the teammates' count, taken without
folding, is what the fold per principal makes of the same items."""

from __future__ import annotations

from typing import Any

from intentloop.model import new_uuid
from intentloop.service._share_view import View, ViewWriter, _writer_count, peer_claims

from _support.share_world import travelling_claim


def test_a_writers_count_is_the_folds_direct_explicit_project_and_long_term_claims() -> None:
    outside, elsewhere = new_uuid(), new_uuid()
    counted = [travelling_claim("Counted"), travelling_claim("Long-term too", scope="long_term")]
    old = travelling_claim("Replaced")
    gone = travelling_claim("Withdrawn")
    others = [
        travelling_claim("Task scope", scope="task"),
        travelling_claim("Imported", source_ref={"kind": "explicit_import"}),
        travelling_claim(
            "Inferred", role="agent", epistemic_status="inferred", confidence=0.5, source_ref={"kind": "agent_turn"}
        ),
        travelling_claim("New wording", supersedes=[old["claim_id"], outside], source_ref={"kind": "agent_turn"}),
        {"claim_id": new_uuid(), "statement": "malformed"},
    ]
    bodies: list[dict[str, Any]] = [
        *({"type": "claim", "task": None, "claim": c} for c in (*counted, old, gone, *others)),
        {"type": "invalidation", "claim_id": gone["claim_id"], "invalidated_at": "2026-01-02T00:00:00.000Z"},
        {"type": "invalidation", "claim_id": elsewhere, "invalidated_at": "2026-01-02T00:00:00.000Z"},
    ]
    items = [{"seq": seq, "body": body} for seq, body in enumerate(bodies, 1)]
    writer = ViewWriter(key_id="k" * 64, principal="alice@x", seq=len(items), commit="c" * 40, items=items)
    view = View(shared=new_uuid(), principal="bob@x", writers=[writer], unknown=[], problems=[])
    folded = {
        p.claim.claim_id
        for p in peer_claims(view)
        if p.claim.is_direct_user_explicit and p.claim.scope in ("project", "long_term")
    }
    found = _writer_count(writer)
    assert set(found.counted) == folded == {c["claim_id"] for c in counted}
    assert found.outside == sorted([outside, elsewhere])
    assert found.commit == "c" * 40
