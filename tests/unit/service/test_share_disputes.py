"""Disagreements between principals (``intentloop/service/_share_disputes.py``): which references a task or a peer
fold makes, which of them apply for the reader and which are disputes."""

from __future__ import annotations

from intentloop.model import EventDraft, SourceRef, make_claim, new_uuid, project, seal, utc_now
from intentloop.model.projection import TaskState
from intentloop.service._share_disputes import Ref, applied, disputes, task_refs

TASK = new_uuid()


def _task(*drafts: tuple[str, dict[str, object]]) -> TaskState:
    events = []
    for index, (kind, payload) in enumerate((("task_started", {"mode": "on"}), *drafts)):
        draft = EventDraft(event_type=kind, task_id=TASK, actor="user", request_id=f"r-{index}", payload=payload)
        events.append(seal(draft, project_id="a" * 64, prev_hash=events[-1].event_hash if events else None))
    return project(events).tasks[TASK]


def _claim(statement: str, supersedes: tuple[str, ...] = ()) -> dict[str, dict[str, object]]:
    claim = make_claim(
        claim_id=new_uuid(),
        statement=statement,
        epistemic_status="explicit",
        source_ref=SourceRef(kind="user_event", event_id="t"),
        scope="project",
        facets=["hard_constraint"],
        now=utc_now(),
        supersedes=supersedes,
    )
    return {"claim": claim.to_wire()}


def _invalidation(claim_id: str, reason: str) -> dict[str, object]:
    return {"claim_id": claim_id, "invalidated_at": utc_now(), "reason": reason, "source_ref": {"kind": "user_event"}}


def test_only_references_to_claims_a_fold_does_not_hold_are_found() -> None:
    peer, other = new_uuid(), new_uuid()
    own = _claim("Mine")
    fix = _claim("Fix of mine", (str(own["claim"]["claim_id"]),))
    peer_fix = _claim("Not on Fridays", (peer,))
    fix_id = str(peer_fix["claim"]["claim_id"])
    task = _task(
        ("claim_added", own),
        ("claim_replaced", fix),  # a supersession within the task: applied, no reference
        ("claim_replaced", peer_fix),
        ("claim_invalidated", _invalidation(other, "wrong")),
    )
    assert task_refs(task, "bob@x") == [
        Ref(action="supersede", target=peer, by_principal="bob@x", by_claim_id=fix_id),
        Ref(action="invalidate", target=other, by_principal="bob@x", reason="wrong"),
    ]
    # the superseding claim itself withdrawn: its supersession is no reference any more
    gone = _task(("claim_replaced", peer_fix), ("claim_invalidated", _invalidation(fix_id, "x")))
    assert task_refs(gone, "bob@x") == []


def test_another_principals_claim_is_disputed_the_same_principals_is_applied_an_unknown_one_is_nothing() -> None:
    alices, bobs, unknown = new_uuid(), new_uuid(), new_uuid()
    owners = {alices: "alice@x", bobs: "bob@x"}
    refs = [
        Ref(action="supersede", target=alices, by_principal="bob@x", by_claim_id="c1"),
        Ref(action="invalidate", target=bobs, by_principal="bob@x", reason="mine"),
        Ref(action="invalidate", target=unknown, by_principal="bob@x", reason="?"),
        Ref(action="supersede", target=alices, by_principal="bob@x", by_claim_id="c1"),  # the same, twice
    ]
    assert applied(refs, owners) == {bobs}
    assert disputes(refs, owners) == [
        {
            "kind": "peer_dispute",
            "action": "supersede",
            "claim_id": alices,
            "principal": "alice@x",
            "by_principal": "bob@x",
            "by_claim_id": "c1",
            "reason": None,
        }
    ]
    # a reader without a principal of its own disputes everyone's, applies nothing
    anonymous = [Ref(action="invalidate", target=bobs, by_principal=None, reason="r")]
    assert applied(anonymous, owners) == set()
    assert [d["principal"] for d in disputes(anonymous, owners)] == ["bob@x"]
