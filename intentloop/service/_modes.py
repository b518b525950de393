"""Starting tasks and switching modes: on (durable), private (memory only), off (no semantic reads or writes).

Private mode has two halves that must agree: this process's in-memory ledger, and the hashed control file that tells
hooks and other processes to stay out. The control is compare-and-set under the ledger lock (a session owns at most
one task, a task at most one session); leaving private appends and removes the control in the same critical section,
so a retry after an interruption finishes the cleanup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentloop.errors import ConflictError, InvalidInputError
from intentloop.model import (
    EventDraft,
    TaskState,
    atomic_statement,
    canonical_bytes,
    deterministic_task_id,
    make_claim,
    new_uuid,
    request_fingerprint,
    sanitize_label,
    session_hash,
    sha256_hex,
    utc_now,
    validate_source_ref,
)
from intentloop.model.redaction import js_trim
from intentloop.service._rules import OP_SET_MODE, OP_START, check_request_id, check_uuid, start_fingerprint_input
from intentloop.service._state import Ctx, Engine, guard_durable, private_active, task_not_found
from intentloop.service._transaction import find_duplicate
from intentloop.service.args import MAX_INITIAL_CLAIMS, InitialExplicitItem, SetModeArgs, StartTaskArgs, opt
from intentloop.store import LockedLedger, PrivateControl
from intentloop.store.aio import open_locked_ledger

NOTE_ON = "Structured local persistence is enabled."
NOTE_OFF = "Semantic reads and writes are disabled."
NOTE_PRIVATE = "Semantic changes are memory-only; a hashed control marker suppresses separate Hook processes."
NOTE_PRIVATE_AGAIN = "Semantic changes remain memory-only; a hashed control marker suppresses separate Hook processes."
NOTE_DISCARDED_ON = "Private changes were discarded; the earlier durable task state is enabled again."
NOTE_DISCARDED_OFF = "Private changes were discarded; durable semantic reads and writes are disabled."
# Not among the original's notes: a task that was private from its start, left in the same process, had no earlier
# durable state to re-enable and lost nothing to a restart, so neither original wording would be true.
NOTE_DISCARDED_NEW_ON = "Private changes were discarded; a new empty durable task is enabled."
NOTE_RECOVERED_DURABLE = (
    "Private in-memory semantics were unavailable after restart; a new empty durable task was explicitly enabled."
)
NOTE_RECOVERED_PRIVATE = (
    "Prior private semantics were unavailable after restart; a new empty memory-only task is active."
)
_START_TYPES = ("task_started", "mode_set")


def _session_control(controls: Sequence[PrivateControl], task_id: str, session: str, *, require: bool) -> bool:
    """Check the one-to-one session↔task binding of the private controls; return whether ``session`` holds one.

    Raises:
        IntentLoopError: ``PRIVATE_SESSION_OWNED``, ``PRIVATE_TASK_OWNED``, ``PRIVATE_CONTROL_MISSING`` (``require``).
    """
    owner = next((c for c in controls if c.host_session_hash == session), None)
    if owner is not None and owner.task_id != task_id:
        raise ConflictError("host session is already bound to another private task", code="PRIVATE_SESSION_OWNED")
    if any(c.task_id == task_id and c.host_session_hash != session for c in controls):
        raise ConflictError("task is already bound to another private host session", code="PRIVATE_TASK_OWNED")
    if require and owner is None:
        raise ConflictError("private recovery control is missing or mismatched", code="PRIVATE_CONTROL_MISSING")
    return owner is not None


def _write_control(locked: LockedLedger, ctx: Ctx, task_id: str, session: str) -> None:
    control = PrivateControl(
        created_at=utc_now(), host_session_hash=session, project_id=ctx.project_id, task_id=task_id
    )
    locked.write_control(control)


def _initial_claims(items: Sequence[InitialExplicitItem | str], request_id: str) -> list[dict[str, Any]]:
    """The start's direct user claims: server-made ids and provenance, one shared user event."""
    if len(items) > MAX_INITIAL_CLAIMS:
        raise InvalidInputError(
            f"start accepts at most {MAX_INITIAL_CLAIMS} directly stated initial claims", code="INITIAL_CLAIM_LIMIT"
        )
    event_id = "start:" + sha256_hex(request_id)[:32]
    now = utc_now()
    claims: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = InitialExplicitItem(statement=item, facets=["hard_constraint"])
        statement = atomic_statement(item.statement)
        digest = sha256_hex(canonical_bytes({"request_id": request_id, "index": index, "statement": statement}))
        source = validate_source_ref({"kind": "user_event", "event_id": event_id, "sha256": digest})
        claim = make_claim(
            claim_id=new_uuid(),
            statement=statement,
            epistemic_status="explicit",
            source_ref=source,
            scope=item.scope,
            facets=item.facets,
            now=now,
        )
        claims.append(claim.to_wire())
    return claims


async def start_task(engine: Engine, ctx: Ctx, args: StartTaskArgs) -> dict[str, Any]:
    """Start a task (or re-associate an existing one) and return its snapshot.

    Raises:
        IntentLoopError: ``INVALID_REQUEST_ID``, ``SENSITIVE_ID_REJECTED``, ``INVALID_ID``, ``MODE_OFF_SEMANTIC_INPUT``,
            ``INVALID_LABEL``, ``INITIAL_CLAIM_LIMIT``, ``INVALID_STATEMENT``, ``RAW_PROMPT_REJECTED``,
            ``PRIVATE_SESSION_TOKEN_REQUIRED``, ``REQUEST_ID_REUSED``, ``TASK_ALREADY_STARTED``,
            ``SESSION_ALREADY_ASSOCIATED``, ``PRIVATE_SESSION_OWNED``, ``PRIVATE_TASK_OWNED``,
            ``PRIVATE_SESSION_ACTIVE``, ``PRIVATE_CONTROL_MISSING``, ``CORRUPT_PRIVATE_STATE``; storage errors.
    """
    request_id = check_request_id(opt(args.request_id) or f"start:{new_uuid()}")
    task_id = check_uuid(opt(args.task_id) or deterministic_task_id(ctx.project_id, request_id), "task_id")
    mode = args.mode
    raw_label = opt(args.label)
    if mode == "off" and raw_label is not None and js_trim(raw_label):
        raise InvalidInputError("off mode does not persist a semantic label", code="MODE_OFF_SEMANTIC_INPUT")
    if mode == "off" and args.initial_explicit:
        raise InvalidInputError("off mode does not persist initial semantic claims", code="MODE_OFF_SEMANTIC_INPUT")
    label = None if mode == "off" else sanitize_label(raw_label)
    claims = [] if mode == "off" else _initial_claims(args.initial_explicit, request_id)
    host_session_id = opt(args.host_session_id)
    session = session_hash(host_session_id) if host_session_id is not None else None
    fingerprint = request_fingerprint(OP_START, start_fingerprint_input(task_id, mode, label, session, claims))
    payload = {
        "mode": mode,
        "label": label,
        "host_session_hash": session,
        "initial_claims": claims,
        "request_fingerprint": fingerprint,
    }
    if mode == "private":
        return await _start_private(engine, ctx, task_id, request_id, session, claims, payload)
    async with open_locked_ledger(ctx.store) as locked:
        if session is not None:
            owner = locked.session_task(session)
            if owner is not None and owner.task_id != task_id:
                raise ConflictError(
                    "host session is already associated with another task", code="SESSION_ALREADY_ASSOCIATED"
                )
        task = locked.view.task(task_id)
        guard_durable(task)
        drafts: list[EventDraft] = []
        if find_duplicate(task, request_id, _START_TYPES, fingerprint) is None:
            if task is not None and task.started:
                if claims:
                    raise ConflictError(
                        "initial claims are accepted only when a task is first started", code="TASK_ALREADY_STARTED"
                    )
                body: dict[str, Any] = {"mode": mode, "request_fingerprint": fingerprint}
                if session is not None:
                    body["host_session_hash"] = session
                drafts.append(_draft("mode_set", task_id, request_id, body))
            else:
                drafts.append(_draft("task_started", task_id, request_id, payload))
        controls = ctx.store.read_controls()
        holds = False
        if session is None:
            if engine.controls_for(controls, task_id):
                raise private_active()
        else:
            holds = _session_control(controls, task_id, session, require=False)
        locked.append(drafts)
        if holds and session is not None:
            locked.remove_control(session)
        result = locked.view.task(task_id)
        assert result is not None  # started or set just above
    if session is not None:
        engine.private.drop_session(ctx.project_id, session)
    return engine.snapshot(ctx, result)


async def _start_private(
    engine: Engine,
    ctx: Ctx,
    task_id: str,
    request_id: str,
    session: str | None,
    claims: list[dict[str, Any]],
    payload: dict[str, Any],
) -> dict[str, Any]:
    if session is None:
        raise ConflictError(
            "private mode requires the hidden host_session_id so separate Hook processes can be suppressed safely",
            code="PRIVATE_SESSION_TOKEN_REQUIRED",
        )
    existing = engine.private_task(ctx, task_id)
    if existing is not None:
        if find_duplicate(existing, request_id, _START_TYPES, payload["request_fingerprint"]) is None and claims:
            raise ConflictError(
                "initial claims are accepted only when a task is first started", code="TASK_ALREADY_STARTED"
            )
        return engine.snapshot(ctx, existing)
    async with open_locked_ledger(ctx.store) as locked:
        task = locked.view.task(task_id)
        guard_durable(task)
        if task is not None and claims:
            raise ConflictError(
                "initial claims are accepted only when a task is first started", code="TASK_ALREADY_STARTED"
            )
        owner = locked.session_task(session)
        if owner is not None and owner.task_id != task_id:
            raise ConflictError(
                "host session is already associated with another task", code="SESSION_ALREADY_ASSOCIATED"
            )
        if not _session_control(ctx.store.read_controls(), task_id, session, require=False):
            _write_control(locked, ctx, task_id, session)
        base = list(locked.view.by_task(task_id))
    if base:
        body = {"mode": "private", "host_session_hash": session, "request_fingerprint": payload["request_fingerprint"]}
        engine.private.open(ctx.project_id, task_id, base, _draft("mode_set", task_id, request_id, body))
    else:
        engine.private.open(ctx.project_id, task_id, [], _draft("task_started", task_id, request_id, payload))
    return engine.snapshot(ctx, _private_task_or_fail(engine, ctx, task_id))


def _private_task_or_fail(engine: Engine, ctx: Ctx, task_id: str) -> TaskState:
    task = engine.private_task(ctx, task_id)
    if task is None:  # pragma: no cover - opened just above
        raise task_not_found()
    return task


def _draft(event_type: str, task_id: str, request_id: str, payload: dict[str, Any]) -> EventDraft:
    return EventDraft(event_type=event_type, task_id=task_id, actor="user", request_id=request_id, payload=payload)


def _recovered_start(mode: str, session: str | None, fingerprint: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "label": None,
        "host_session_hash": session,
        "initial_claims": [],
        "recovered_from_private": True,
        "request_fingerprint": fingerprint,
    }


def _durable_duplicate(task: TaskState | None, request_id: str, fingerprint: str) -> bool:
    duplicate = find_duplicate(task, request_id, ("mode_set", "task_started"), fingerprint)
    if (
        duplicate is not None
        and duplicate.event_type == "task_started"
        and not duplicate.payload.get("recovered_from_private")
    ):
        raise ConflictError("request_id was already used by the original task start", code="REQUEST_ID_REUSED")
    return duplicate is not None


async def set_mode(engine: Engine, ctx: Ctx, args: SetModeArgs) -> dict[str, Any]:
    """Switch a task's mode; returns ``{mode, persistence_note}``.

    Raises:
        IntentLoopError: ``INVALID_ID``, ``INVALID_REQUEST_ID``, ``TASK_NOT_FOUND``, ``REQUEST_ID_REUSED``,
            ``PRIVATE_SESSION_TOKEN_REQUIRED``, ``PRIVATE_CONTROL_MISMATCH``, ``PRIVATE_CONTROL_MISSING``,
            ``PRIVATE_SESSION_OWNED``, ``PRIVATE_TASK_OWNED``, ``PRIVATE_SESSION_ACTIVE``, ``CORRUPT_PRIVATE_STATE``.
    """
    task_id = check_uuid(args.task_id, "task_id")
    request_id = check_request_id(args.request_id)
    mode = args.mode
    fingerprint = request_fingerprint(OP_SET_MODE, {"task_id": task_id, "mode": mode})
    private = engine.private_task(ctx, task_id)
    if private is not None:
        if mode == "private":
            if find_duplicate(private, request_id, ("mode_set",), fingerprint) is None:
                body = {"mode": "private", "request_fingerprint": fingerprint}
                engine.private.append(ctx.project_id, task_id, _draft("mode_set", task_id, request_id, body))
            return {"mode": "private", "persistence_note": NOTE_PRIVATE_AGAIN}
        session = private.host_session_hash
        assert session is not None  # private_task() guarantees it
        recovered = await _leave_private(engine, ctx, task_id, request_id, mode, fingerprint, session)
        engine.private.drop(ctx.project_id, task_id)
        if mode == "off":
            return {"mode": mode, "persistence_note": NOTE_DISCARDED_OFF}
        return {"mode": mode, "persistence_note": NOTE_DISCARDED_NEW_ON if recovered else NOTE_DISCARDED_ON}
    if mode == "private":
        return await _enter_private(engine, ctx, task_id, request_id, fingerprint)
    control = engine.control_for_task(ctx, task_id)
    recovery = control.host_session_hash if control is not None else None
    recovered = await _leave_private(engine, ctx, task_id, request_id, mode, fingerprint, recovery)
    if mode == "off":
        return {"mode": mode, "persistence_note": NOTE_OFF}
    return {"mode": mode, "persistence_note": NOTE_RECOVERED_DURABLE if recovered else NOTE_ON}


async def _leave_private(
    engine: Engine,
    ctx: Ctx,
    task_id: str,
    request_id: str,
    mode: str,
    fingerprint: str,
    session: str | None,
) -> bool:
    """Append the durable ``mode_set`` (or the recovered ``task_started``) and clear the control; True if recovered."""
    if not ctx.store.exists():
        raise task_not_found()
    async with open_locked_ledger(ctx.store) as locked:
        task = locked.view.task(task_id)
        guard_durable(task)
        recovered = False
        drafts: list[EventDraft] = []
        if not _durable_duplicate(task, request_id, fingerprint):
            started = task is not None and task.started
            if not started:
                if session is None:
                    raise task_not_found()
                recovered = True
                drafts.append(_draft("task_started", task_id, request_id, _recovered_start(mode, session, fingerprint)))
            else:
                assert task is not None
                if session is not None and task.host_session_hash not in (None, session):
                    raise ConflictError(
                        "durable task is associated with another host session", code="PRIVATE_CONTROL_MISMATCH"
                    )
                body: dict[str, Any] = {"mode": mode, "request_fingerprint": fingerprint}
                if session is not None:
                    body["host_session_hash"] = session
                drafts.append(_draft("mode_set", task_id, request_id, body))
        controls = ctx.store.read_controls()
        if session is None:
            if engine.controls_for(controls, task_id):
                raise private_active()
        else:
            _session_control(controls, task_id, session, require=True)
        locked.append(drafts)
        if session is not None:
            locked.remove_control(session)
    return recovered


async def _enter_private(engine: Engine, ctx: Ctx, task_id: str, request_id: str, fingerprint: str) -> dict[str, Any]:
    """Make a durable task (or a lost private one, after a restart) private in this process."""
    task = engine.precheck_task(ctx, task_id)
    guard_durable(task)
    control = engine.control_for_task(ctx, task_id)
    started = task is not None and task.started
    if not started and control is None:
        raise task_not_found()
    session = control.host_session_hash if control is not None else (task.host_session_hash if task else None)
    if session is None:
        raise ConflictError(
            "this durable task has no host_session_id; start a private task with the hidden session token instead",
            code="PRIVATE_SESSION_TOKEN_REQUIRED",
        )
    if started and task is not None and task.host_session_hash not in (None, session):
        raise ConflictError("private control does not match the current host session", code="PRIVATE_CONTROL_MISMATCH")
    async with open_locked_ledger(ctx.store) as locked:
        current = locked.view.task(task_id)
        guard_durable(current)
        if not (current is not None and current.started) and control is None:
            raise task_not_found()
        if not _session_control(ctx.store.read_controls(), task_id, session, require=False):
            _write_control(locked, ctx, task_id, session)
        base = list(locked.view.by_task(task_id))
    if base:
        body = {"mode": "private", "host_session_hash": session, "request_fingerprint": fingerprint}
        engine.private.open(ctx.project_id, task_id, base, _draft("mode_set", task_id, request_id, body))
        return {"mode": "private", "persistence_note": NOTE_PRIVATE}
    draft = _draft("task_started", task_id, request_id, _recovered_start("private", session, fingerprint))
    engine.private.open(ctx.project_id, task_id, [], draft)
    return {"mode": "private", "persistence_note": NOTE_RECOVERED_PRIVATE}


__all__ = ["set_mode", "start_task"]
