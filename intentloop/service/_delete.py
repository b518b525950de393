"""Physical deletion: the ledger rewrite that removes a task or a claim, and the byte scan that proves it.

Deletion is the one place where the append-only ledger is rewritten. Every reference to the target goes (relations,
candidate task lists, initial claims, imports, invalidations), and every request fingerprint whose input named the
target is recomputed over the stripped input, so no stored digest can confirm a guess about the deleted item.
A deleted claim's supersessions outlive it: what it superseded is invalidated in its place with a content-free reason
(:data:`SUPERSEDED_BY_DELETED`), since deleting a correction must never bring back what it corrected.

Copies are found by content, not only by id: a statement imported into another task is another claim with another
id. Why report them rather than delete them by default: a copy belongs to another task and may be the user's
deliberate record there; ``delete_copies`` removes the exact copies when asked.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from intentloop.errors import StorageError
from intentloop.model import (
    SOURCE_KINDS,
    Event,
    EventDraft,
    ProjectState,
    canonical_bytes,
    new_uuid,
    request_fingerprint,
    seal,
)
from intentloop.service._rules import OP_INVALIDATE, OP_START, claim_fingerprint_input, start_fingerprint_input
from intentloop.store import ProjectStore

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


def remove_task(event: Event, task_id: str) -> Event | None:
    """``event`` without ``task_id``: ``None`` for an event of that task, the event with every reference to it
    stripped otherwise (the same object when it names none)."""
    if event.task_id == task_id:
        return None
    payload = event.payload
    if event.event_type in _CANDIDATE_EVENTS and "candidate" in payload:
        candidate = _strip_task_from_candidate(payload["candidate"], task_id)
        if candidate != payload["candidate"]:
            return _with_payload(event, {**payload, "candidate": candidate})
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
            return _with_payload(event, new_payload)
    return event


#: The reason of the invalidation that keeps a claim out of the current view once the claim that superseded it is
#: deleted: it names nothing of the deleted claim.
SUPERSEDED_BY_DELETED = "superseded by a deleted claim"


def _superseded_by_dropped(event: Event, dropped: list[Any], claim_id: str) -> list[Event]:
    """``event`` (the edited record) followed by one ``claim_invalidated`` per claim a dropped record of ``claim_id``
    superseded, as ``intent_invalidate`` writes it, at the supersession's record time.

    Its source reference keeps only the deleted claim's source kind (who replaced the claim: a user event for an
    explicit one), its request id is new (the deleted request's id must stay unknown to the task, so a replay of it
    answers ``CLAIM_DELETED``).
    """
    out = [event]
    for record in dropped:
        if not isinstance(record, dict) or not isinstance(record.get("supersedes"), list):
            continue
        ref = record.get("source_ref")
        kind = ref.get("kind") if isinstance(ref, dict) else None
        source = {"kind": kind if kind in SOURCE_KINDS else "agent_turn"}
        for old in dict.fromkeys(record["supersedes"]):
            if not isinstance(old, str) or old == claim_id:
                continue
            fingerprint = request_fingerprint(
                OP_INVALIDATE, {"claim_id": old, "reason": SUPERSEDED_BY_DELETED, "source_ref": source}
            )
            event_id = new_uuid()
            draft = EventDraft(
                event_type="claim_invalidated",
                task_id=event.task_id,
                actor="user" if source["kind"] == "user_event" else "agent",
                request_id=f"intentloop:superseded-by-deleted:{event_id}",
                payload={
                    "claim_id": old,
                    "invalidated_at": event.occurred_at,
                    "reason": SUPERSEDED_BY_DELETED,
                    "source_ref": source,
                    "request_fingerprint": fingerprint,
                },
                occurred_at=event.occurred_at,
                event_id=event_id,
            )
            out.append(seal(draft, project_id=event.project_id, prev_hash=None))  # re-chained where it is written
    return out


def _remove_claim_from_event(event: Event, claim_id: str) -> list[Event]:
    payload = event.payload
    kind = event.event_type
    if kind in _CLAIM_EVENTS:
        claim = payload.get("claim")
        if not isinstance(claim, dict):
            return [event]
        if claim.get("claim_id") == claim_id:
            return _superseded_by_dropped(event, [claim], claim_id)[1:]
        stripped = _strip_claim(claim, claim_id)
        if stripped == claim:
            return [event]
        new_payload = {**payload, "claim": stripped}
        if "request_fingerprint" in payload:
            new_payload["request_fingerprint"] = _refingerprint_claim_event(event, claim, stripped)
        return [_with_payload(event, new_payload)]
    if kind == "task_started":
        prior = payload.get("initial_claims")
        if not isinstance(prior, list):
            return [event]
        dropped = [c for c in prior if isinstance(c, dict) and c.get("claim_id") == claim_id]
        kept = [_strip_claim(c, claim_id) for c in prior if not (isinstance(c, dict) and c.get("claim_id") == claim_id)]
        if kept == prior:
            return [event]
        new_payload = {**payload, "initial_claims": kept}
        if len(kept) != len(prior) and "request_fingerprint" in payload and not payload.get("recovered_from_private"):
            new_payload["request_fingerprint"] = request_fingerprint(
                OP_START,
                start_fingerprint_input(
                    event.task_id, payload.get("mode"), payload.get("label"), payload.get("host_session_hash"), kept
                ),
            )
        return _superseded_by_dropped(_with_payload(event, new_payload), dropped, claim_id)
    if kind == "claim_invalidated":
        return [] if payload.get("claim_id") == claim_id else [event]
    if kind == "graph_imported":
        raw_claims = payload.get("claims")
        prior_claims: list[Any] = raw_claims if isinstance(raw_claims, list) else []
        dropped = [c for c in prior_claims if isinstance(c, dict) and c.get("claim_id") == claim_id]
        claims = [
            _strip_claim(c, claim_id)
            for c in prior_claims
            if not (isinstance(c, dict) and c.get("claim_id") == claim_id)
        ]
        prior_inv = payload.get("invalidated_claim_ids")
        invalidated = [x for x in prior_inv if x != claim_id] if isinstance(prior_inv, list) else []
        new_payload = {**payload, "claims": claims, "invalidated_claim_ids": invalidated}
        if new_payload == payload:
            return [event]
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
        return _superseded_by_dropped(_with_payload(event, new_payload), dropped, claim_id)
    return [event]


def remove_claim(event: Event, task_id: str, claim_id: str) -> list[Event]:
    """``event`` without ``claim_id`` of ``task_id``, as the events that take its place: none for the claim's own
    record and its invalidation, else the event with every reference stripped (and its fingerprint recomputed) — the
    same object, alone, when it names none. A dropped record that superseded other claims is followed (or, alone,
    replaced) by their invalidations (:data:`SUPERSEDED_BY_DELETED`), so none of them becomes active again."""
    if event.task_id != task_id:
        return [event]
    return _remove_claim_from_event(event, claim_id)


#: Bytes of a file searched at a time: a file is never held whole (a ledger may be gigabytes).
_SCAN_BYTES = 1 << 20
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _needles_in(path: Path, needles: Sequence[bytes], lines: _LineSearch | None = None) -> set[bytes]:
    """Which of ``needles`` occur in the file at ``path``, read a chunk at a time (each chunk searched with the last
    bytes of the one before, so a needle across the boundary is found); with ``lines``, the same reads also give it
    every whole line of the file (the ledger's lines, for the tasks that hold a statement).

    Raises:
        StorageError: ``STORAGE_READ_FAILED``.
    """
    found: set[bytes] = set()
    keep = max(map(len, needles), default=1) - 1
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}", code="STORAGE_READ_FAILED") from exc
    try:
        tail = b""
        while chunk := os.read(fd, _SCAN_BYTES):
            window = tail + chunk
            found.update(needle for needle in needles if needle not in found and needle in window)
            tail = window[-keep:] if keep else b""
            if lines is not None:
                lines.feed(chunk)
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}", code="STORAGE_READ_FAILED") from exc
    finally:
        os.close(fd)
    return found


class _LineSearch:
    """The tasks of the ledger lines that hold one of ``needles``, fed the file a chunk at a time: what
    ``tasks_holding`` answers (whole lines only, a last line without its newline left out), without a read of its
    own."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.needles = needles
        self.tasks: set[str] = set()
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        buffer = self._pending + chunk
        end = buffer.rfind(b"\n") + 1
        body, self._pending = buffer[:end], buffer[end:]
        if any(needle in body for needle in self.needles):
            for line in body.split(b"\n"):
                if any(needle in line for needle in self.needles):
                    self.tasks.add(line[-38:-2].decode("ascii", "replace"))


def scan_project_files(store: ProjectStore, markers: Sequence[str], *, skip: frozenset[str] = frozenset()) -> int:
    """Read every persistent file of ``store``'s project (a chunk at a time); fail if a marker (a deleted id) is still
    in one, or in the name of a file or directory.

    Returns:
        The number of files scanned. The derived caches (the checkpoint and the task index) are scanned too but not
        counted, so the figure stays the one the original implementation reports for the same data.

    Raises:
        StorageError: ``PATH_ESCAPE`` for a symlink, ``UNSAFE_DATA_FILE`` for a file with more than one link,
            ``DELETE_VERIFICATION_FAILED`` when a marker remains.
    """
    return scan_after_deletion(store, markers, (), (), skip=skip).scanned


#: Statements shorter than this are too common to look for as bytes (``"x"`` is in every file); they are still
#: looked for claim by claim.
MIN_CONTENT_CHARS = 8


def statement_needles(statements: Iterable[str]) -> list[bytes]:
    """The bytes of each statement in a ledger line, whatever its length: what a line holding a copy must hold."""
    return sorted({canonical_bytes(s)[1:-1] for s in statements})


def content_needles(statements: Iterable[str]) -> list[bytes]:
    """The bytes a statement has in a ledger line (canonical JSON, without the quotes), for the long enough ones."""
    return sorted({canonical_bytes(s)[1:-1] for s in statements if len(s) >= MIN_CONTENT_CHARS})


class AfterDeletion(NamedTuple):
    """What the read-back after a deletion found (:func:`scan_after_deletion`)."""

    scanned: int  # as :func:`scan_project_files` counts
    files_with_content: list[str]  # the files (paths relative to the project directory) that hold the content
    statement_tasks: set[str]  # as ``tasks_holding`` answers for the ledger


def scan_after_deletion(
    store: ProjectStore,
    markers: Sequence[str],
    content: Sequence[bytes],
    statements: Sequence[bytes],
    *,
    skip: frozenset[str] = frozenset(),
) -> AfterDeletion:
    """:func:`scan_project_files` of ``markers``, the files holding ``content`` and ``tasks_holding`` of ``statements``
    in one read of each file: every persistent file is read whole and searched for the markers (which fail the
    deletion, as :func:`scan_project_files` does, the file names included) and for ``content``; the ledger's lines
    also for ``statements``.

    Raises:
        StorageError: as :func:`scan_project_files`.
    """
    ids = [m.encode("utf-8") for m in markers]
    wanted = list(dict.fromkeys([*ids, *content]))
    ledger = _LineSearch(statements) if statements else None
    scanned = 0
    holding: list[str] = []
    for entry in store.persistent_entries(skip=skip):
        base = entry.name.rsplit("/", 1)[-1]
        if any(needle in os.fsencode(base) for needle in ids):
            raise StorageError(
                "a deleted identifier remained in a file name under the project", code="DELETE_VERIFICATION_FAILED"
            )
        if entry.directory:
            continue
        scanned += not entry.derived
        found = _needles_in(entry.path, wanted, ledger if entry.path == store.paths.ledger_path else None)
        if any(needle in found for needle in ids):
            raise StorageError(f"a deleted identifier remained in {base}", code="DELETE_VERIFICATION_FAILED")
        if any(needle in found for needle in content):
            holding.append(entry.name)
    return AfterDeletion(scanned, holding, set() if ledger is None else ledger.tasks)


def find_copies(state: ProjectState, statements: Collection[str]) -> list[dict[str, str]]:
    """Every claim left in ``state`` that repeats a deleted statement (``same_statement``, e.g. an import into
    another task) or quotes one of :data:`MIN_CONTENT_CHARS` or more characters (``contains_statement``)."""
    quoted = [s for s in statements if len(s) >= MIN_CONTENT_CHARS]
    out: list[dict[str, str]] = []
    for task_id, task in sorted(state.tasks.items()):
        for claim_id, claim in task.claims.items():
            if claim.statement in statements:
                out.append({"task_id": task_id, "claim_id": claim_id, "match": "same_statement"})
            elif any(s in claim.statement for s in quoted):
                out.append({"task_id": task_id, "claim_id": claim_id, "match": "contains_statement"})
    return out


_TOMBSTONED_EVENTS = frozenset({"claim_added", "claim_replaced"})


def tombstone_digest(key: bytes, task_id: str, request_id: str, fingerprint: str) -> str:
    """HMAC-SHA-256 under the installation key of one request's identity: the task, the request id and the request
    fingerprint (itself a digest of the normalized input). Nothing of the claim — not its id, not its text — can be
    read from it, and without the key it cannot confirm a guess."""
    body = canonical_bytes({"request_fingerprint": fingerprint, "request_id": request_id, "task_id": task_id})
    return hmac.new(key, b"intent-loop-deleted-request-v1\0" + body, hashlib.sha256).hexdigest()


def erased_statement_digest(key: bytes, statement: str) -> str:
    """HMAC-SHA-256 under the installation key of a forgotten (or, by a peer, erased) claim's statement as it is
    stored: kept beside the request tombstones so an import of an old export cannot bring the statement back, and
    as content-free as they are."""
    return hmac.new(key, b"intent-loop-erased-statement-v1\0" + statement.encode(), hashlib.sha256).hexdigest()


def creating_request(event: Event, task_id: str, claim_ids: Collection[str]) -> tuple[str, str, str] | None:
    """(task id, request id, fingerprint) when ``event`` created one of ``claim_ids`` in ``task_id`` by a request
    (``claim_added``/``claim_replaced``; initial and imported claims answer ``REQUEST_ID_REUSED`` on a replay
    already, their events' fingerprints being recomputed without them)."""
    if event.task_id != task_id or event.event_type not in _TOMBSTONED_EVENTS:
        return None
    claim = event.payload.get("claim")
    fingerprint = event.payload.get("request_fingerprint")
    if isinstance(claim, dict) and claim.get("claim_id") in claim_ids and isinstance(fingerprint, str):
        return event.task_id, event.request_id, fingerprint
    return None


__all__ = [
    "MIN_CONTENT_CHARS",
    "SUPERSEDED_BY_DELETED",
    "AfterDeletion",
    "content_needles",
    "creating_request",
    "erased_statement_digest",
    "find_copies",
    "remove_claim",
    "remove_task",
    "scan_after_deletion",
    "scan_project_files",
    "statement_needles",
    "tombstone_digest",
]
