"""Physical deletion: the ledger rewrite that removes a task or a claim, and the byte scan that proves it.

Deletion is the one place where the append-only ledger is rewritten. Every reference to the target goes (relations,
candidate task lists, initial claims, imports, invalidations), and every request fingerprint whose input named the
target is recomputed over the stripped input, so no stored digest can confirm a guess about the deleted item.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from intentloop.errors import IntentLoopError, StorageError
from intentloop.model import Event, request_fingerprint
from intentloop.service._rules import OP_START, claim_fingerprint_input, start_fingerprint_input
from intentloop.store import CHECKPOINT_NAME, INDEX_DIR_RE

_CLAIM_EVENTS = frozenset({"claim_added", "claim_replaced"})
_CANDIDATE_EVENTS = frozenset({"candidate_added", "source_observed", "result_signal_observed", "compaction_observed"})


def _with_payload(event: Event, payload: dict[str, Any]) -> Event:
    body = event.to_dict()
    body["payload"] = payload
    return Event(**body)


def _strip_claim(claim: Any, target: str) -> Any:
    if not isinstance(claim, dict):
        return claim
    out = dict(claim)
    for key in ("supersedes", "related_claim_ids"):
        if isinstance(out.get(key), list):
            out[key] = [x for x in out[key] if x != target]
    return out


def _refingerprint_claim_event(event: Event, old_claim: dict[str, Any], new_claim: dict[str, Any]) -> str | None:
    """Recompute a claim event's fingerprint after a reference was stripped.

    The stored claim holds every input but ``require_long_term_candidate``; the stored fingerprint tells which value
    the original call used. When neither reproduces it (a foreign writer), the stripped input with ``False`` is used.
    """
    stored = event.payload.get("request_fingerprint")
    op = event.event_type
    flag = False
    for candidate in (False, True):
        if request_fingerprint(op, claim_fingerprint_input(old_claim, require_long_term_candidate=candidate)) == stored:
            flag = candidate
            break
    return request_fingerprint(op, claim_fingerprint_input(new_claim, require_long_term_candidate=flag))


def _strip_task_from_candidate(candidate: Any, task_id: str) -> Any:
    if not isinstance(candidate, dict) or not isinstance(candidate.get("task_ids"), list):
        return candidate
    out = dict(candidate)
    out["task_ids"] = [t for t in candidate["task_ids"] if t != task_id]
    return out


def remove_task(events: Sequence[Event], task_id: str) -> list[Event]:
    """Drop every event of ``task_id`` and every reference to it from the other tasks' events."""
    out: list[Event] = []
    for event in events:
        if event.task_id == task_id:
            continue
        payload = event.payload
        if event.event_type in _CANDIDATE_EVENTS and "candidate" in payload:
            candidate = _strip_task_from_candidate(payload["candidate"], task_id)
            if candidate != payload["candidate"]:
                event = _with_payload(event, {**payload, "candidate": candidate})
        elif event.event_type == "graph_imported":
            new_payload = dict(payload)
            if isinstance(payload.get("candidates"), list):
                new_payload["candidates"] = [_strip_task_from_candidate(c, task_id) for c in payload["candidates"]]
            imported = payload.get("imported_from")
            if isinstance(imported, dict):
                new_payload["imported_from"] = {
                    k: v for k, v in imported.items() if not (k in ("task_id", "source_task_id") and v == task_id)
                }
            if new_payload != payload:
                event = _with_payload(event, new_payload)
        out.append(event)
    return out


def _remove_claim_from_event(event: Event, claim_id: str) -> Event | None:
    payload = event.payload
    kind = event.event_type
    if kind in _CLAIM_EVENTS:
        claim = payload.get("claim")
        if not isinstance(claim, dict):
            return event
        if claim.get("claim_id") == claim_id:
            return None
        stripped = _strip_claim(claim, claim_id)
        if stripped == claim:
            return event
        new_payload = {**payload, "claim": stripped}
        if "request_fingerprint" in payload:
            new_payload["request_fingerprint"] = _refingerprint_claim_event(event, claim, stripped)
        return _with_payload(event, new_payload)
    if kind == "task_started":
        prior = payload.get("initial_claims")
        if not isinstance(prior, list):
            return event
        kept = [_strip_claim(c, claim_id) for c in prior if not (isinstance(c, dict) and c.get("claim_id") == claim_id)]
        if kept == prior:
            return event
        new_payload = {**payload, "initial_claims": kept}
        if len(kept) != len(prior) and "request_fingerprint" in payload and not payload.get("recovered_from_private"):
            new_payload["request_fingerprint"] = request_fingerprint(
                OP_START,
                start_fingerprint_input(
                    event.task_id, payload.get("mode"), payload.get("label"), payload.get("host_session_hash"), kept
                ),
            )
        return _with_payload(event, new_payload)
    if kind == "claim_invalidated":
        return None if payload.get("claim_id") == claim_id else event
    if kind == "graph_imported":
        raw_claims = payload.get("claims")
        prior_claims: list[Any] = raw_claims if isinstance(raw_claims, list) else []
        claims = [
            _strip_claim(c, claim_id)
            for c in prior_claims
            if not (isinstance(c, dict) and c.get("claim_id") == claim_id)
        ]
        prior_inv = payload.get("invalidated_claim_ids")
        invalidated = [x for x in prior_inv if x != claim_id] if isinstance(prior_inv, list) else []
        new_payload = {**payload, "claims": claims, "invalidated_claim_ids": invalidated}
        if new_payload == payload:
            return event
        new_payload["request_fingerprint"] = request_fingerprint(
            "import_graph_after_delete",
            {
                "task_id": event.task_id,
                "claims": claims,
                "invalidated_claim_ids": invalidated,
                "candidates": payload.get("candidates") if isinstance(payload.get("candidates"), list) else [],
                "imported_from": payload.get("imported_from"),
            },
        )
        return _with_payload(event, new_payload)
    return event


def remove_claim(events: Sequence[Event], task_id: str, claim_id: str) -> list[Event]:
    """Drop ``claim_id`` from the events of ``task_id``: its own record, its invalidation and every reference."""
    out: list[Event] = []
    for event in events:
        if event.task_id != task_id:
            out.append(event)
            continue
        kept = _remove_claim_from_event(event, claim_id)
        if kept is not None:
            out.append(kept)
    return out


def scan_project_files(project_dir: Path, markers: Sequence[str], *, skip: frozenset[str] = frozenset()) -> int:
    """Read every persistent file under ``project_dir``; fail if a marker (a deleted id) is still in one.

        The lock directory (ours, held right now) and renamed lock remnants are skipped: they hold only owner records.
        ``skip`` names top-level entries to leave out (the pre-scan skips what the deletion is about to rewrite). The
    XX
        figure stays the one the original implementation reports for the same data.

        Returns:
            The number of files scanned (derived caches not counted).

        Raises:
            StorageError: ``PATH_ESCAPE`` for a symlink, ``UNSAFE_DATA_FILE`` for a file with more than one link.
            IntentLoopError: ``DELETE_VERIFICATION_FAILED`` when a marker remains.
    """
    needles = [m.encode("utf-8") for m in markers]
    scanned = 0
    if not project_dir.exists():
        return 0
    stack = [(project_dir, False)]
    while stack:
        current, derived = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            raise StorageError(f"cannot list {current.name}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
        for entry in entries:
            if entry.name == "ledger.lock" or entry.name.startswith("ledger.lock."):
                continue
            if current == project_dir and (entry.name in skip or (skip and is_derived(entry.name))):
                continue  # the pre-scan: what the deletion rewrites (the derived caches are rebuilt with it)
            if any(needle in os.fsencode(entry.name) for needle in needles):
                raise IntentLoopError(
                    f"a deleted identifier remained in a file name under {current.name}",
                    code="DELETE_VERIFICATION_FAILED",
                )
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageError(f"cannot stat {entry.name}", code="STORAGE_READ_FAILED") from exc
            if stat.S_ISLNK(info.st_mode):
                raise StorageError(f"{entry.name} must not be a symbolic link", code="PATH_ESCAPE")
            if stat.S_ISDIR(info.st_mode):
                stack.append((Path(entry.path), derived or (current == project_dir and is_derived(entry.name))))
                continue
            if not stat.S_ISREG(info.st_mode):
                raise StorageError(f"{entry.name} is not a regular file", code="UNSAFE_DATA_FILE")
            if info.st_nlink != 1:
                raise StorageError(f"{entry.name} has more than one link", code="UNSAFE_DATA_FILE")
            try:
                data = Path(entry.path).read_bytes()
            except OSError as exc:
                raise StorageError(f"cannot read {entry.name}", code="STORAGE_READ_FAILED") from exc
            scanned += not (derived or (current == project_dir and is_derived(entry.name)))
            if any(needle in data for needle in needles):
                raise IntentLoopError(
                    f"a deleted identifier remained in {entry.name}", code="DELETE_VERIFICATION_FAILED"
                )
    return scanned


REWRITTEN_BY_DELETE = frozenset({"ledger.jsonl", "private-sessions", "quarantine", CHECKPOINT_NAME})


def is_derived(name: str) -> bool:
    """The store's derived caches beside the ledger: the checkpoint and the task index directories."""
    return name == CHECKPOINT_NAME or bool(INDEX_DIR_RE.match(name))


__all__ = [
    "REWRITTEN_BY_DELETE",
    "remove_claim",
    "remove_task",
    "scan_project_files",
]
