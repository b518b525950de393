"""Explicit import of a portable graph into a task, as incomplete external history (``intent_import``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from intentloop.errors import ConflictError
from intentloop.model import EventDraft, TaskState, new_uuid
from intentloop.service._delete import erased_statement_digest
from intentloop.service._graph import import_payload, validate_graph
from intentloop.service._hookkey import load_hook_key
from intentloop.service._rules import check_request_id, check_uuid
from intentloop.service._state import Ctx, Engine
from intentloop.service._transaction import semantic_write
from intentloop.service.args import ImportArgs, PortableGraphArg
from intentloop.store import LedgerView, export_signature_status
from intentloop.store._share import read_erased, shared_identity


async def import_graph(
    engine: Engine, ctx: Ctx, args: ImportArgs, *, adopted: dict[str, str] | None = None
) -> dict[str, Any]:
    """Validate and import a portable graph into a task as incomplete external history; returns the snapshot.

    ``adopted`` names the teammate's claim a graph of one claim copies (``intentloop share adopt``: its writer,
    principal and claim id); the record keeps it under ``imported_from.adopted``.

    A graph carrying a ``signature`` block imports whatever its verdict (unsigned, foreign or tampered graphs are
    external history like any other); the snapshot then reports ``signature_status`` (``valid``, ``invalid`` or
    ``unknown_key``).

    Raises:
        IntentLoopError: ``INVALID_ID``, ``INVALID_REQUEST_ID``, ``INVALID_IMPORT``, ``INVALID_STATEMENT``,
            ``RAW_PROMPT_REJECTED``, ``IMPORT_COLLISION``, ``REQUEST_ID_REUSED``, ``TASK_NOT_FOUND``, ``MODE_OFF``,
            ``PRIVATE_SESSION_ACTIVE``; storage errors.
    """
    task_id = check_uuid(args.task_id, "task_id")
    request_id = check_request_id(args.request_id)
    validate_graph(args.graph)
    payload = import_payload(args.graph, task_id, new_uuid)
    left_out = _leave_out_erased(ctx, args.graph, payload)
    if adopted is not None:
        payload["imported_from"]["adopted"] = dict(adopted)

    def decide(task: TaskState, view: Callable[[], LedgerView]) -> list[EventDraft]:
        existing = engine.all_claim_ids(ctx, view())
        existing.update(task.claims)
        for claim in payload["claims"]:
            if claim["claim_id"] in existing:
                raise ConflictError(f"claim {claim['claim_id']} already exists", code="IMPORT_COLLISION")
        return [
            EventDraft(
                event_type="graph_imported", task_id=task_id, actor="user", request_id=request_id, payload=payload
            )
        ]

    await semantic_write(engine, ctx, task_id, request_id, ("graph_imported",), payload["request_fingerprint"], decide)
    result = engine.snapshot(ctx, engine.semantic_task(ctx, task_id))
    if left_out:
        result["erased_left_out"] = left_out
    if args.graph.signature is not msgspec.UNSET:  # intentloop's own: only a graph that carries a block is judged
        result["signature_status"] = export_signature_status(ctx.store.data_root, msgspec.to_builtins(args.graph))
    return result


def _leave_out_erased(ctx: Ctx, graph: PortableGraphArg, payload: dict[str, Any]) -> list[str]:
    """Drop from ``payload`` the claims whose statements are erased here (keyed digests: this project's tombstones,
    and the digests of the statements peers erased in its shared project) and every reference to them; returns the
    graph's ids of the dropped claims.

    Raises:
        StorageError: a garbled tombstone or erased-digest file, an unreadable key.
    """
    data_root = ctx.store.data_root
    digests = ctx.store.read_tombstones()
    shared = shared_identity(data_root, ctx.project_root, ctx.project_id)
    if shared is not None:
        digests |= read_erased(data_root, shared.shared_id)
    key = load_hook_key(data_root) if digests else None
    if key is None:
        return []
    gone = {
        index
        for index, claim in enumerate(payload["claims"])
        if erased_statement_digest(key, claim["statement"]) in digests
    }
    if not gone:
        return []
    dropped = {payload["claims"][index]["claim_id"] for index in gone}
    kept = [claim for index, claim in enumerate(payload["claims"]) if index not in gone]
    for claim in kept:
        claim["supersedes"] = [cid for cid in claim["supersedes"] if cid not in dropped]
        claim["related_claim_ids"] = [cid for cid in claim["related_claim_ids"] if cid not in dropped]
    payload["claims"] = kept
    payload["invalidated_claim_ids"] = [cid for cid in payload["invalidated_claim_ids"] if cid not in dropped]
    return [graph.claims[index].claim_id for index in sorted(gone)]


__all__ = ["import_graph"]
