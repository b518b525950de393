"""The synchronous service operations behind ``intentloop hook``: session context and hook observations.

Why synchronous and light: a hook is a fresh process with a 2.5 s budget, so this module imports only the standard
library, msgspec and the store/model faces (never trio), takes the ledger lock with a deadline, and projects only the
task bound to the session; redaction, the digest key and the draft types are imported only when an observation is
recorded, so a read-only SessionStart never compiles the redaction patterns. Why a keyed digest (docs/HOOKS.md):
without an opaque turn id the only identity of a turn is its text, and a plain hash of a prompt with nothing to redact
is the hash of the prompt itself. Why a cap on the observed text (:data:`MAX_OBSERVED_CHARS`): only its redacted
form's length and keyed digest are kept, and redacting a whole 1 MiB payload costs up to ~1.5 s of adversarial
input (the high-entropy rule, linear but in Python) against a 2.5 s budget; 64 Ki characters cost ~0.1 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import (
    TaskState,
    association_context,
    linked_task_context,
    private_control_context,
    session_hash,
)
from intentloop.model.hook_events import HOOK_EVENT_BY_NAME
from intentloop.store import PrivateControl, ProjectRoot, ProjectStore, locate_project, require_vouched

if TYPE_CHECKING:
    from intentloop.model import EventDraft
    from intentloop.model.claims import Claim
    from intentloop.model.compact import TeamCount
    from intentloop.store._sessions import SessionTask

#: The hook redacts and digests at most this many characters of a prompt or message (the rest is only counted).
MAX_OBSERVED_CHARS: Final = 65_536
#: A ledger this large, when its checkpoint does not vouch for it (written before checkpoints existed, extended by
#: another program, or a writer killed between append and checkpoint), takes an observation to the background (the
#: hook plans with this limit, :func:`plan_observation`, and answers its host before reading). Why 16 MiB: a whole
#: read with verification, then the rebuild of the checkpoint and index under the lock, took ~14 ms per MiB here
#: (1.4 s for 100,000 events, 97 MiB), so 16 MiB costs the host ~0.25 s once, and ~0.75 s on a machine three times as
#: busy, within the 2.5 s budget; past it, the hook used to spend its whole budget, be killed before the checkpoint was
#: written, and do the same at the next prompt.
SLOW_READ_BYTES: Final = 16 * 1024 * 1024


class Observation(msgspec.Struct, frozen=True, kw_only=True):
    """What a hook saw: never stored as such (the text is redacted, counted and at most keyed-hashed).

    Attributes:
        event: ``UserPromptSubmit``, ``PostCompact``, ``Stop`` or ``SessionEnd``.
        session_id: the host's session id.
        turn_id: the host's opaque id of the turn (Codex ``turn_id``, Claude Code ``prompt_id``), if any.
        text: the prompt or the last assistant message, if any.
    """

    event: str
    session_id: str
    turn_id: str | None = None
    text: str | None = None


class HookOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Whether an observation was appended (or, the lock being busy until the deadline, spooled for the next writer),
    the context text for the host (``None``: inject nothing), and whether that text is a linked task's context (the
    one :func:`context_once` leaves out when the session has it already)."""

    recorded: bool
    context: str | None = None
    spooled: bool = False
    linked: bool = False


def _own_peers(data_root: Path, located: ProjectRoot, task: TaskState | None) -> tuple[list[Claim], TeamCount | None]:
    """The user's own claims from their other machines that a linked task's context carries beside its own, and the
    count of teammates' claims it only counts (the same as SessionStart's, so the prompt hook injects what
    SessionStart does; docs/SYNC.md)."""
    if task is None or task.mode != "on":
        return [], None
    from intentloop.service._share_view import own_hook_claims

    return own_hook_claims(data_root, located.root, located.project_id)


def _open_store(data_root: Path, cwd: str) -> tuple[ProjectStore, ProjectRoot]:
    """The store of the project ``cwd`` belongs to, and how it was found.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID`` for a relative, missing or non-directory ``cwd``.
    """
    located = locate_project(cwd, data_root)
    return ProjectStore(data_root, located.project_id), located


def _decide(
    task: TaskState | None,
    controls: Iterable[PrivateControl],
    control: PrivateControl | None,
    session_id: str,
    *,
    recovery_packet: bool = False,
    peers: Sequence[Claim] = (),
    team: TeamCount | None = None,
) -> tuple[TaskState | None, str]:
    """(the task an observation may be recorded into, the context text), per docs/HOOKS.md.

    ``task`` is the session's bound task (``ProjectStore.session_task``), ``control`` the session's own private control;
    ``recovery_packet`` asks for the post-compaction packet as the linked task's context; ``peers`` are the user's
    own claims from their other machines (docs/SYNC.md), injected beside the task's; ``team`` counts teammates'.
    """
    if control is not None:
        return None, private_control_context(control.task_id, session_id)
    if task is None:
        return None, association_context(session_id)
    if any(c.task_id == task.task_id for c in controls):
        return None, private_control_context(task.task_id)
    if task.mode != "on":
        return None, association_context(session_id)
    return task, linked_task_context(task, recovery_packet=recovery_packet, peers=peers, team=team)


COMPACT_SOURCE: Final = "compact"


def session_context(
    data_root: Path,
    cwd: str,
    session_id: str,
    source: str | None = None,
    *,
    whole_read_limit: int | None = None,
    note: bool = True,
) -> str | None:
    """SessionStart's context for ``session_id`` in the project at ``cwd``; creates nothing. A linked task's context
    (not the recovery packet) is noted as the session's last injection where the prompt hook's memory of injections
    already exists (``intentloop/store/_injected.py``), so the session's next prompt does not inject it again; not
    with ``note`` false (a refused ``/intent`` command, which writes nothing at all).

    ``source`` is SessionStart's ``source``; after compaction (``"compact"``) a linked task's context is the
    recovery packet (hard constraints and outcomes first, within a reserved budget). With ``whole_read_limit``, a
    ledger the task index cannot answer for and larger than that many bytes is not read: the answer is then ``None``.

    Returns:
        The private-control notice, the linked task with its direct user-explicit claims, or the association hint.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``.
        StorageError: a damaged ledger (``CORRUPT_LEDGER`` …), an unreadable control, an unsafe path.
    """
    store, located = _open_store(data_root, cwd)
    shash = session_hash(session_id)
    control = store.read_control(shash)
    if control is not None:
        return private_control_context(control.task_id, session_id)
    found = store.session_task(shash, whole_read_limit=whole_read_limit)
    if not found.answered:
        return None
    if found.task is not None:
        require_vouched(store)  # forged text is never injected as the user's words
    peers, team = _own_peers(data_root, located, found.task)
    recovery = source == COMPACT_SOURCE
    controls = store.read_controls()
    task, context = _decide(found.task, controls, None, session_id, recovery_packet=recovery, peers=peers, team=team)
    if task is not None and not recovery and note:
        from intentloop.store import note_injection

        note_injection(store.paths, shash, context)
    return context


Identity = tuple[str, str, str | None, int]


def _identity(obs: Observation, key: Callable[[], bytes | None]) -> Identity | None:
    """(request-id hash, source sha256, source event id, char count); ``None`` when the key is needed but absent.

    Priority: a valid opaque turn id; else a keyed digest (HMAC-SHA-256 under ``key()``) of the redacted text (of
    its first :data:`MAX_OBSERVED_CHARS` characters and its length, when longer); else ``sha256("<Event>:none")``.
    Neither the text nor an unkeyed hash of it is ever returned; the count is the redacted length (of the first
    characters, plus the rest's raw length).
    """
    import hmac
    from hashlib import sha256

    from intentloop.model import is_opaque_id, redact, sha256_hex

    uses_text = HOOK_EVENT_BY_NAME[obs.event].text_field is not None
    text = obs.text if uses_text and obs.text else ""
    redacted = redact(text[:MAX_OBSERVED_CHARS]).text if text else ""
    beyond = len(text) - MAX_OBSERVED_CHARS
    count = len(redacted) + max(0, beyond)
    if beyond > 0:  # two long texts sharing their first characters differ at least in length
        redacted = f"{redacted}\0{len(text)}"
    if obs.turn_id and is_opaque_id(obs.turn_id):
        digest = sha256_hex(obs.turn_id)
        return digest[:24], digest, obs.turn_id, count
    if redacted:
        secret = key()
        if secret is None:
            return None
        digest = hmac.new(secret, redacted.encode("utf-8"), sha256).hexdigest()
        return digest[:24], digest, None, count
    return sha256_hex("none")[:24], sha256_hex(f"{obs.event}:none"), None, count


def _draft(obs: Observation, task_id: str, identity: Identity) -> EventDraft:
    from intentloop.model import Candidate, EventDraft, SourceRef, new_uuid, utc_now

    records = HOOK_EVENT_BY_NAME[obs.event].records
    assert records is not None  # plan_observation refused the others
    request_hash, digest, event_id, count = identity
    now = utc_now()
    candidate = Candidate(
        candidate_id=new_uuid(),
        candidate_type=records.candidate_type,
        source_ref=SourceRef(kind=records.source_kind, event_id=event_id, sha256=digest),
        created_at=now,
    )
    return EventDraft(
        event_type=records.event_type,
        task_id=task_id,
        actor=records.actor,
        request_id=f"hook:{obs.event}:{request_hash}",
        payload={"candidate": candidate.to_wire(), "char_count": count},
        occurred_at=now,
    )


class ObservationPlan:
    """What recording an observation would do, decided lock-free (:func:`plan_observation`); act on it with
    :func:`record_planned`.

    Attributes:
        context: the context text for the host (SessionStart's), whatever is recorded.
        linked: whether ``context`` is a linked task's context.
        task_id: the task the observation would be recorded into; ``None``: nothing to record.
        whole_read_bytes: set instead of a decision when deciding needs a whole read of a ledger of this size
            (larger than the plan was allowed to read): plan again without the limit, in the background if possible.
    """

    __slots__ = (
        "_identity",
        "_peers",
        "_read",
        "_shash",
        "_store",
        "_team",
        "context",
        "data_root",
        "linked",
        "obs",
        "task_id",
    )

    def __init__(
        self,
        data_root: Path,
        store: ProjectStore,
        obs: Observation,
        shash: str,
        context: str,
        *,
        read: SessionTask | None = None,
        linked: bool = False,
        task_id: str | None = None,
        identity: Identity | None = None,
        peers: Sequence[Claim] = (),
        team: TeamCount | None = None,
    ) -> None:
        self.data_root = data_root
        self._store = store
        self._peers = peers
        self._team = team
        self.obs = obs
        self._shash = shash
        self.context = context
        self.linked = linked
        self._read = read
        self.task_id = task_id
        self._identity = identity

    @property
    def whole_read_bytes(self) -> int | None:
        return None if self._read is None else self._read.whole_read_bytes


def plan_observation(
    data_root: Path, cwd: str, obs: Observation, *, whole_read_limit: int | None = None
) -> ObservationPlan:
    """Decide, lock-free, whether ``obs`` is recorded for the task bound to the session: not when the session is
    private, unlinked, its task off or private, or the observation a repeat (most sessions are not linked: no lock,
    no write). A ledger the task index cannot answer for and larger than ``whole_read_limit`` bytes is not read: the
    plan then only says how large it is (:attr:`ObservationPlan.whole_read_bytes`).

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``, or an event that records nothing.
        StorageError: a damaged ledger, an unreadable control, an unsafe path.
    """
    event = HOOK_EVENT_BY_NAME.get(obs.event)
    if event is None or event.records is None:
        raise InvalidInputError(f"{obs.event} records no observation", code="INVALID_ARGUMENTS")
    store, located = _open_store(data_root, cwd)
    shash = session_hash(obs.session_id)
    control = store.read_control(shash)
    if control is not None:
        return ObservationPlan(data_root, store, obs, shash, private_control_context(control.task_id, obs.session_id))
    read = store.session_task(shash, whole_read_limit=whole_read_limit)
    if not read.answered:
        return ObservationPlan(data_root, store, obs, shash, "", read=read)
    if read.task is not None:
        require_vouched(store)  # forged text is never injected as the user's words
    peers, team = _own_peers(data_root, located, read.task)
    task, context = _decide(read.task, store.read_controls(), None, obs.session_id, peers=peers, team=team)
    if task is None:
        return ObservationPlan(data_root, store, obs, shash, context, read=read)
    from intentloop.service._hookkey import load_hook_key

    identity = _identity(obs, lambda: load_hook_key(data_root))
    if identity is not None and f"hook:{obs.event}:{identity[0]}" in task.requests:
        return ObservationPlan(data_root, store, obs, shash, context, read=read, linked=True)
    return ObservationPlan(
        data_root,
        store,
        obs,
        shash,
        context,
        read=read,
        linked=True,
        task_id=task.task_id,
        identity=identity,
        peers=peers,
        team=team,
    )


def record_planned(
    plan: ObservationPlan, *, deadline: float | None, with_context: bool = False, patient: bool = False
) -> HookOutcome:
    """Act on ``plan``: decide again under the lock, which is acquired by ``deadline`` (a ``time.monotonic()``
    value) or not at all, and append. Without the lock in time the observation's draft (content-free: keyed digests
    and a character count) is spooled for the next writer to append (``HookOutcome.spooled``), so contention does not
    lose it.

    Args:
        with_context: also return the context text (UserPromptSubmit answers with SessionStart's context).
        patient: the host has had its answer (a background write): wait for the lock until ``deadline`` even without
            owner progress, so the checkpoint this write leaves is built.

    Raises:
        InvalidInputError: a plan that still needs a whole read (plan again without the limit).
        StorageError: a damaged ledger, an unreadable control, an unsafe path, a failed write or spool.
    """
    if plan.whole_read_bytes is not None:
        raise InvalidInputError("the plan needs a whole read of the ledger first", code="INVALID_ARGUMENTS")
    if plan.task_id is None:
        return HookOutcome(recorded=False, context=_if(with_context, plan.context), linked=plan.linked)
    store = plan._store
    if patient and deadline is not None:
        store = _patient(store, deadline - time.monotonic())
    try:
        return _record_locked(store, plan, deadline, with_context)
    except StorageError as exc:
        if exc.code != "LOCK_TIMEOUT":
            raise
    # The lock stayed busy until the deadline: leave the observation for the next writer (the spool), decided on the
    # lock-free read like the rest of the plan; the drain under the lock skips it if it is recorded meanwhile.
    from intentloop.service._hookkey import load_or_create_hook_key

    identity = plan._identity
    if identity is None:
        identity = _identity(plan.obs, lambda: load_or_create_hook_key(plan.data_root))  # atomic, lock or not
    if identity is None:  # load_or_create_hook_key returns a key or raises: unreachable
        raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
    spooled = store.spool(_draft(plan.obs, plan.task_id, identity))
    return HookOutcome(recorded=False, spooled=spooled, context=_if(with_context, plan.context), linked=True)


def record_observation(
    data_root: Path, cwd: str, obs: Observation, *, deadline: float | None, with_context: bool = False
) -> HookOutcome:
    """Plan and record ``obs`` in one step, reading the whole ledger if the task index cannot answer
    (:func:`plan_observation`, then :func:`record_planned`).

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``, or an event that records nothing.
        StorageError: a damaged ledger, an unreadable control, an unsafe path, a failed write or spool.
    """
    plan = plan_observation(data_root, cwd, obs)
    return record_planned(plan, deadline=deadline, with_context=with_context)


def _record_locked(
    store: ProjectStore, plan: ObservationPlan, deadline: float | None, with_context: bool
) -> HookOutcome:
    """The decision again under the lock (taken by ``deadline`` or ``LOCK_TIMEOUT``), and the append; the
    session's task is the lock-free one when the store can tell that it still holds (``LockedLedger.session_task``).
    """
    from intentloop.service._hookkey import load_or_create_hook_key

    obs = plan.obs
    with store.locked(deadline, lazy=True) as ledger:
        control = store.read_control(plan._shash)
        bound = ledger.session_task(plan._shash, since=plan._read)
        on = bound is not None and bound.mode == "on"
        peers, team = (plan._peers, plan._team) if on else ((), None)
        task, context = _decide(bound, store.read_controls(), control, obs.session_id, peers=peers, team=team)
        if task is None:
            return HookOutcome(recorded=False, context=_if(with_context, context))
        identity = plan._identity
        if identity is None:
            identity = _identity(obs, lambda: load_or_create_hook_key(plan.data_root))
        if identity is None:  # load_or_create_hook_key returns a key or raises: unreachable
            raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
        if f"hook:{obs.event}:{identity[0]}" in task.requests:
            return HookOutcome(recorded=False, context=_if(with_context, context), linked=True)
        ledger.append([_draft(obs, task.task_id, identity)])
    return HookOutcome(recorded=True, context=_if(with_context, context), linked=True)


def context_once(plan: ObservationPlan, outcome: HookOutcome) -> str | None:
    """The context to answer ``outcome`` with when the host keeps every copy: a linked task's context only when it is
    not exactly what was last injected into the session (then it is remembered as the last injection,
    ``intentloop/store/_injected.py``); any other context (the association hint, a private control's notice) as it
    is. Never raises: a memory that cannot be read or written means injecting."""
    if outcome.context is None or not outcome.linked:
        return outcome.context
    from intentloop.store import inject_once

    return outcome.context if inject_once(plan._store.paths, plan._shash, outcome.context) else None


def forget_injected(plan: ObservationPlan) -> None:
    """Forget what was last injected into the plan's session (its conversation was compacted), so the next prompt
    injects the task's context again. Never raises; creates nothing."""
    from intentloop.store import forget_injection

    forget_injection(plan._store.paths, plan._shash)


def spool_observation(data_root: Path, cwd: str, obs: Observation) -> bool:
    """Leave ``obs`` in the spool by its session, without reading the ledger or taking the lock: the next writer
    records it into the session's task if the hook would have (``intentloop/store/_spool.py``). For a hook that
    cannot find out in time which task that is: its child was killed at the deadline, or another hook's child is
    reading the same large ledger. ``False``: nothing spooled (an event that records nothing, no such project, a
    private session, a full spool).

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``.
        StorageError: an unsafe path, an unreadable control, a failed write.
    """
    event = HOOK_EVENT_BY_NAME.get(obs.event)
    if event is None or event.records is None:
        return False
    store, _located = _open_store(data_root, cwd)
    if not store.exists():
        return False
    shash = session_hash(obs.session_id)
    if store.read_control(shash) is not None:
        return False
    from intentloop.service._hookkey import load_or_create_hook_key

    identity = _identity(obs, lambda: load_or_create_hook_key(data_root))
    if identity is None:  # load_or_create_hook_key returns a key or raises: unreachable
        raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
    return store.spool(_draft(obs, "", identity), session_hash=shash)


def take_background_slot(plan: ObservationPlan) -> bool:
    """Take the project's one background slot for the rest of this process (``intentloop/store/_background.py``);
    ``False`` when another hook's child holds it: then spool the observation (:func:`spool_observation`) instead of
    reading the ledger too.

    Raises:
        StorageError: an unsafe project folder or lock file.
    """
    from intentloop.store._background import take_background_slot as take

    return take(plan._store.paths)


def rebuild_index(plan: ObservationPlan, deadline: float) -> bool:
    """For a plan that needs a whole read (:attr:`ObservationPlan.whole_read_bytes`), carried out in the background:
    take the lock once, waiting patiently until ``deadline``, to have the ledger verified a chunk at a time and its
    checkpoint and task index rebuilt (what a writer does on entering when no checkpoint vouches for the file), so
    the next plan reads through the index; ``False`` when the lock stayed busy.

    Why: in the background the session's task is then read through the index; a lock-free whole read held every
    decoded event (4.0 GB at 1,000,000 events) while the rebuild holds a chunk (docs/BENCHMARK.md).

    Raises:
        CorruptLedgerError: the ledger is damaged.
        StorageError: anything but ``LOCK_TIMEOUT``.
    """
    store = _patient(plan._store, deadline - time.monotonic())
    try:
        with store.locked(deadline, lazy=True):
            pass
    except StorageError as exc:
        if exc.code != "LOCK_TIMEOUT":
            raise
        return False
    return True


def _patient(store: ProjectStore, seconds: float) -> ProjectStore:
    """The same project, whose lock waiter keeps waiting for ``seconds`` even without owner progress: in the
    background nobody waits for the hook, and a waiter that gave up would leave the checkpoint unbuilt (the
    observation itself would go to the spool)."""
    config = msgspec.structs.replace(
        store.config, wait_s=max(store.config.wait_s, seconds), ceiling_s=max(store.config.ceiling_s, seconds)
    )
    return ProjectStore(store.data_root, store.project_id, config=config)


def _if(wanted: bool, text: str) -> str | None:
    return text if wanted else None


__all__ = [
    "COMPACT_SOURCE",
    "MAX_OBSERVED_CHARS",
    "SLOW_READ_BYTES",
    "HookOutcome",
    "Observation",
    "ObservationPlan",
    "context_once",
    "forget_injected",
    "plan_observation",
    "rebuild_index",
    "record_observation",
    "record_planned",
    "session_context",
    "spool_observation",
    "take_background_slot",
]
