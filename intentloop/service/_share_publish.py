"""What travels: the items a shared project's stream carries, derived from this installation's ledgers.

One rule (docs/SYNC.md, "What travels"): user-explicit and evidence claims of scope ``project`` and ``long_term`` of
every task that is ``on`` and not private anywhere; every user-explicit and evidence claim of a task the user
published (``share publish TASK``) with the task's label; inferred claims only when the user opted in; the
invalidations of the claims that travel; and a task's references to peer claims (a ``supersedes`` id or an
invalidation naming a claim of the combined view, never one of this installation's that does not travel), which
readers show as disputes or apply (``_share_disputes.py``). Nothing else: no candidate (hook observations, long-term
signals), no session hash, request id, fingerprint, host turn id or source digest (a claim's ``source_ref`` keeps
only its ``kind`` and ``excerpt``), nothing of a task that is off or private, no tombstone, lock record or
quarantine. Every text is redacted again here; a text with anything left to redact is refused and stops the push
(``SHARE_REDACTION_HIT``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from intentloop.model import redact
from intentloop.model.claims import Claim
from intentloop.model.projection import TaskState
from intentloop.store import ProjectStore, require_vouched
from intentloop.store._share import Settings

_SHARED_SCOPES = frozenset({"project", "long_term"})


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """A text that may not travel: which item, which field, which kinds of secret (never the text)."""

    item: str
    field: str
    kinds: list[str]


class PublishSet(msgspec.Struct, kw_only=True):
    """``items``: item → body, in a stable order; ``refused``: what redaction stopped."""

    items: dict[str, dict[str, Any]]
    refused: list[Refusal]


def _travels(claim: Claim, task_published: bool, inferences: bool) -> bool:
    kind_ok = (
        claim.is_user_explicit
        or (claim.epistemic_status == "evidence" and claim.role == "evidence")
        or (inferences and claim.epistemic_status == "inferred")
    )
    return kind_ok and (task_published or claim.scope in _SHARED_SCOPES)


def publish_set(data_root: Path, project_ids: list[str], settings: Settings) -> PublishSet:
    """The items the stream of a shared project must carry now, from the ledgers of ``project_ids``.

    Raises:
        IntentLoopError: storage, corruption and ``SIGNATURE_INVALID`` errors of a ledger read.
    """
    chosen: list[tuple[TaskState, list[Claim], bool]] = []
    published_tasks = set(settings.tasks)
    for project_id in project_ids:
        store = ProjectStore(data_root, project_id)
        if not store.exists():
            continue
        require_vouched(store)
        view = store.read()
        private = {control.task_id for control in store.read_controls()}
        for task_id in view.task_ids():
            task = view.task(task_id)
            if task is None or not task.started or task.mode != "on" or task_id in private:
                continue
            published = task_id in published_tasks
            claims = [c for c in task.claims.values() if _travels(c, published, settings.inferences)]
            if claims or published or any(cid not in task.claims for cid in task.invalidations):
                chosen.append((task, claims, published))
    ids = {c.claim_id for _task, claims, _p in chosen for c in claims}
    items: dict[str, dict[str, Any]] = {}
    refused: list[Refusal] = []
    for task, claims, published in chosen:
        if published:
            _put(items, refused, f"task:{task.task_id}", {"type": "task", "task": task.task_id, "label": task.label})
        for claim in claims:
            _put(items, refused, f"claim:{claim.claim_id}", _claim_body(task, claim, ids))
        travelling = {c.claim_id for c in claims}
        for claim_id, gone in task.invalidations.items():
            if claim_id in travelling or claim_id not in task.claims:  # a peer claim's: a reference
                body = {
                    "type": "invalidation",
                    "task": task.task_id,
                    "claim_id": claim_id,
                    "invalidated_at": gone.invalidated_at,
                    "reason": gone.reason,
                    "source_kind": gone.source_ref.kind if gone.source_ref is not None else None,
                }
                _put(items, refused, f"invalidation:{claim_id}", body)
    return PublishSet(items=dict(sorted(items.items())), refused=refused)


def _claim_body(task: TaskState, claim: Claim, published: set[str]) -> dict[str, Any]:
    """A claim as it travels; its ``supersedes`` keeps the claims that travel and the peer claims it names (ids the
    task does not hold: the tools accept only those of the combined view)."""
    wire = claim.to_wire()
    source: dict[str, Any] = {"kind": claim.source_ref.kind}
    if claim.source_ref.excerpt is not None:
        source["excerpt"] = claim.source_ref.excerpt
    wire["source_ref"] = source
    wire["supersedes"] = [cid for cid in claim.supersedes if cid in published or cid not in task.claims]
    wire["related_claim_ids"] = [cid for cid in claim.related_claim_ids if cid in published]
    return {"type": "claim", "task": task.task_id, "claim": wire}


def _texts(body: dict[str, Any]) -> list[tuple[str, Any]]:
    if body["type"] == "claim":
        claim = body["claim"]
        found = [("statement", claim.get("statement")), ("excerpt", claim["source_ref"].get("excerpt"))]
        evidence = claim.get("evidence_file")
        if isinstance(evidence, dict):
            found.append(("evidence_file", evidence.get("path")))
        return found
    if body["type"] == "invalidation":
        return [("reason", body.get("reason"))]
    return [("label", body.get("label"))]


def _put(items: dict[str, dict[str, Any]], refused: list[Refusal], item: str, body: dict[str, Any]) -> None:
    hits = False
    for field, text in _texts(body):
        if isinstance(text, str) and text:
            found = redact(text)
            if found.count:
                refused.append(Refusal(item=item, field=field, kinds=sorted(set(found.kinds))))
                hits = True
    if not hits:
        items[item] = body


__all__ = ["PublishSet", "Refusal", "publish_set"]
