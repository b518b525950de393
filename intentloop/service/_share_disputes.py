"""Disagreements between the members of a shared project: one principal superseding or invalidating another's claim.

A supersession or an invalidation applies only within one principal (the fold of ``_share_view.py``: your own
machines). Naming another principal's claim is a **dispute**: both claims stay active, neither wins, and a snapshot
with ``include_peers`` lists it among its ``disagreements`` (docs/SYNC.md, "Teams: whose words and disagreements").
Why nothing is applied across principals: no member may remove another member's words from anyone's view; the people
settle it (the author's own correction, or a reader's ``share adopt``).

A reference is found the same way wherever it was recorded: a claim's ``supersedes`` or an invalidation naming a claim
id its own principal's fold does not hold (another writer's stream, or this installation's own task). Whether it is a
dispute depends on whose the named claim is: another principal's active claim is disputed; a claim of the same
principal (the user's own other machine) is superseded or invalidated for this reader too; an id no active claim has
is nothing to show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec

from intentloop.model.projection import TaskState


class Ref(msgspec.Struct, frozen=True, kw_only=True):
    """A principal's supersession (``by_claim_id`` the superseding claim) or invalidation (``reason``) of a claim id
    its own fold does not hold."""

    action: Literal["supersede", "invalidate"]
    target: str
    by_principal: str | None
    by_claim_id: str | None = None
    reason: str | None = None


def task_refs(task: TaskState, principal: str | None) -> list[Ref]:
    """The references of ``task``'s active claims and of its invalidations to claims it does not hold, as
    ``principal``'s (a peer fold's state, or this installation's own task)."""
    found: list[Ref] = []
    for claim in task.active_claims():
        for target in claim.supersedes:
            if target not in task.claims:
                found.append(Ref(action="supersede", target=target, by_principal=principal, by_claim_id=claim.claim_id))
    for target, gone in task.invalidations.items():
        if target not in task.claims:
            found.append(Ref(action="invalidate", target=target, by_principal=principal, reason=gone.reason))
    return found


def view_refs(folds: Iterable[Any]) -> list[Ref]:
    """The references of every principal's fold (``_share_view.Fold``) of a view."""
    return [ref for one in folds for ref in task_refs(one.state, one.principal)]


def applied(refs: Iterable[Ref], owners: Mapping[str, str | None]) -> set[str]:
    """The claim ids ``refs`` remove for this reader: those whose owner (``owners``: active claim id → principal) is
    the reference's own principal."""
    return {ref.target for ref in refs if ref.target in owners and owners[ref.target] == ref.by_principal}


def disputes(refs: Iterable[Ref], owners: Mapping[str, str | None]) -> list[dict[str, Any]]:
    """The disputes among ``refs``: each reference to an active claim (``owners``: claim id → principal) of another
    principal, as a snapshot lists it (ordered by disputed claim, then who disputes it, once each)."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for ref in refs:
        if ref.target not in owners or owners[ref.target] == ref.by_principal:
            continue
        entry = {
            "kind": "peer_dispute",
            "action": ref.action,
            "claim_id": ref.target,
            "principal": owners[ref.target],
            "by_principal": ref.by_principal,
            "by_claim_id": ref.by_claim_id,
            "reason": ref.reason,
        }
        found.setdefault((ref.target, ref.by_principal or "", ref.action, ref.by_claim_id or ""), entry)
    return [found[key] for key in sorted(found)]


__all__ = ["Ref", "applied", "disputes", "task_refs", "view_refs"]
