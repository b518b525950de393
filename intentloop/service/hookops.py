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

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import (
    TaskState,
    association_context,
    linked_task_context,
    private_control_context,
    project,
    project_id_for,
    session_hash,
    task_for_session,
)
from intentloop.model.projection import BINDING_EVENTS
from intentloop.store import LedgerView, PrivateControl, ProjectStore, canonicalize_project_root

if TYPE_CHECKING:
    from intentloop.model import EventDraft

#: hook event → (event_type, actor, candidate_type, source kind, whether the observed text counts).
_OBSERVATIONS: Final[dict[str, tuple[str, str, str, str, bool]]] = {
    "UserPromptSubmit": ("source_observed", "user", "prompt_update", "user_event", True),
    "PostCompact": ("compaction_observed", "agent", "recovery_needed", "agent_turn", False),
    "Stop": ("result_signal_observed", "agent", "result_feedback", "agent_turn", True),
    "SessionEnd": ("result_signal_observed", "agent", "result_feedback", "agent_turn", True),
}
#: The hook redacts and digests at most this many characters of a prompt or message (the rest is only counted).
MAX_OBSERVED_CHARS: Final = 65_536
#: A ledger this large, when its checkpoint does not vouch for it (written before checkpoints existed, extended by
#: another program, or a writer killed between append and checkpoint), takes an observation to the background
#: (:func:`record_observation`'s ``background``). Why 16 MiB: a whole read with verification, then the rebuild of the
#: checkpoint and index under the lock, took ~14 ms per MiB here (1.4 s for 100,000 events, 97 MiB), so 16 MiB costs the
#: host ~0.25 s once, and ~0.75 s on a machine three times as busy, within the 2.5 s budget; past it, the hook used to
#: spend its whole budget, be killed before the checkpoint was written, and do the same at the next prompt.
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
    and the context text for the host (``None``: inject nothing)."""

    recorded: bool
    context: str | None = None
    spooled: bool = False


def _open_store(data_root: Path, cwd: str) -> ProjectStore:
    """Raises: InvalidInputError: ``PROJECT_ROOT_INVALID`` for a relative, missing or non-directory ``cwd``."""
    return ProjectStore(data_root, project_id_for(canonicalize_project_root(cwd)))


def _session_task(view: LedgerView, shash: str) -> TaskState | None:
    """The task bound to ``shash`` (as :func:`task_for_session` picks it), projecting only the bound tasks.

    Two passes over the events and no index building: at 10,000 events the view's indexes cost more than the rest.
    """
    bindings = project(e for e in view.events if e.event_type in BINDING_EVENTS)
    bound = {t.task_id for t in bindings.tasks.values() if t.started and t.host_session_hash == shash}
    if not bound:
        return None
    return task_for_session(project(e for e in view.events if e.task_id in bound), shash)


_UNKNOWN: Final = object()


def _indexed_session_task(store: ProjectStore, shash: str) -> TaskState | object | None:
    """:func:`_session_task` through the task index: the binding events and the bound tasks' lines only, never the
    whole ledger. ``_UNKNOWN`` when the index cannot answer (no checkpoint matching the file, no index): read it all.
    """
    indexed = store.indexed()
    if indexed is None:
        return _UNKNOWN
    try:
        bindings_events = indexed.binding_events()
        if bindings_events is None:
            return _UNKNOWN
        bindings = project(bindings_events)
        bound = sorted(t.task_id for t in bindings.tasks.values() if t.started and t.host_session_hash == shash)
        if not bound:
            return None
        events = []
        for task_id in bound:
            task_events = indexed.task_events(task_id)
            if task_events is None:
                return _UNKNOWN
            events += task_events
    finally:
        indexed.close()
    return task_for_session(project(events), shash)


def _ledger_stamp(store: ProjectStore) -> tuple[int, int, int, int, int] | None:
    """What any change of the ledger file changes (device, inode, size, mtime, ctime); ``None`` when it is missing.

    Every commit appends (the size grows), truncates a torn tail or replaces the file (another inode), and moves the
    ctime, which no ordinary program can set back: an equal stamp means no commit in between.
    """
    try:
        st = os.lstat(store.ledger_path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _bound_task(
    store: ProjectStore, shash: str, before_whole_read: Callable[[], bool] | None = None
) -> tuple[TaskState | None, LedgerView | None]:
    """The session's bound task, through the index when it can answer (then no view), else from the whole ledger
    (``before_whole_read`` is called first; when it returns true it has rebuilt the index: that is asked again)."""
    found = _indexed_session_task(store, shash)
    if found is _UNKNOWN and before_whole_read is not None and before_whole_read():
        found = _indexed_session_task(store, shash)
    if found is not _UNKNOWN:
        assert found is None or isinstance(found, TaskState)
        return found, None
    view = store.read()
    return _session_task(view, shash), view


def _decide(
    task: TaskState | None,
    controls: Iterable[PrivateControl],
    control: PrivateControl | None,
    session_id: str,
    *,
    recovery_packet: bool = False,
) -> tuple[TaskState | None, str]:
    """(the task an observation may be recorded into, the context text), per docs/HOOKS.md.

    ``task`` is the session's bound task (:func:`_session_task`), ``control`` the session's own private control;
    ``recovery_packet`` asks for the post-compaction packet as the linked task's context.
    """
    if control is not None:
        return None, private_control_context(control.task_id, session_id)
    if task is None:
        return None, association_context(session_id)
    if any(c.task_id == task.task_id for c in controls):
        return None, private_control_context(task.task_id)
    if task.mode != "on":
        return None, association_context(session_id)
    return task, linked_task_context(task, recovery_packet=recovery_packet)


COMPACT_SOURCE: Final = "compact"


def session_context(data_root: Path, cwd: str, session_id: str, source: str | None = None) -> str:
    """SessionStart's context for ``session_id`` in the project at ``cwd``; reads only, creates nothing.

    ``source`` is SessionStart's ``source``; after compaction (``"compact"``) a linked task's context is the
    recovery packet (hard constraints and outcomes first, within a reserved budget).

    Returns:
        The private-control notice, the linked task with its direct user-explicit claims, or the association hint.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``.
        StorageError: a damaged ledger (``CORRUPT_LEDGER`` …), an unreadable control, an unsafe path.
    """
    store = _open_store(data_root, cwd)
    shash = session_hash(session_id)
    control = store.read_control(shash)
    if control is not None:
        return private_control_context(control.task_id, session_id)
    task, _view = _bound_task(store, shash)
    recovery = source == COMPACT_SOURCE
    return _decide(task, store.read_controls(), None, session_id, recovery_packet=recovery)[1]


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

    uses_text = _OBSERVATIONS[obs.event][4]
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

    event_type, actor, candidate_type, kind, _ = _OBSERVATIONS[obs.event]
    request_hash, digest, event_id, count = identity
    now = utc_now()
    candidate = Candidate(
        candidate_id=new_uuid(),
        candidate_type=candidate_type,
        source_ref=SourceRef(kind=kind, event_id=event_id, sha256=digest),
        created_at=now,
    )
    return EventDraft(
        event_type=event_type,
        task_id=task_id,
        actor=actor,
        request_id=f"hook:{obs.event}:{request_hash}",
        payload={"candidate": candidate.to_wire(), "char_count": count},
        occurred_at=now,
    )


def record_observation(
    data_root: Path,
    cwd: str,
    obs: Observation,
    *,
    deadline: float | None,
    with_context: bool = False,
    background: Callable[[], float | None] | None = None,
) -> HookOutcome:
    """Append one hook observation for the task bound to the session, unless private, off, unlinked or a repeat.

    The decision is taken lock-free first (most sessions are not linked: no lock, no write), then again under the
    lock, which is acquired by ``deadline`` (a ``time.monotonic()`` value) or not at all: then the observation's draft
    (content-free: keyed digests and a character count) is spooled for the next writer to append
    (``HookOutcome.spooled``), so contention does not lose it.

    Args:
        with_context: also return the context text (UserPromptSubmit answers with SessionStart's context).
        background: called once, before a whole read of a ledger larger than :data:`SLOW_READ_BYTES`; when it
            returns a deadline the host has had its answer (the outcome is then nobody's answer) and the observation
            is recorded by that deadline instead, the lock waited for until then even without owner progress; else
            (``None``) everything goes on as before.

    Raises:
        InvalidInputError: ``PROJECT_ROOT_INVALID``, or an event that records nothing.
        StorageError: a damaged ledger, an unreadable control, an unsafe path, a failed write or spool.
    """
    if obs.event not in _OBSERVATIONS:
        raise InvalidInputError(f"{obs.event} records no observation", code="INVALID_ARGUMENTS")
    store = _open_store(data_root, cwd)
    shash = session_hash(obs.session_id)
    control = store.read_control(shash)
    if control is not None:
        return HookOutcome(
            recorded=False, context=_if(with_context, private_control_context(control.task_id, obs.session_id))
        )
    stamp = _ledger_stamp(store)  # before the read: a commit after it changes the stamp

    def before_whole_read() -> bool:
        nonlocal deadline, store
        if background is None or stamp is None or stamp[2] <= SLOW_READ_BYTES:
            return False
        later = background()
        if later is None:
            return False
        deadline = later
        store = _patient(store, later - time.monotonic())
        return _rebuild_index(store, deadline)

    bound, view = _bound_task(store, shash, before_whole_read)
    task, context = _decide(bound, store.read_controls(), None, obs.session_id)
    if task is None:
        return HookOutcome(recorded=False, context=_if(with_context, context))
    from intentloop.service._hookkey import load_hook_key, load_or_create_hook_key

    identity = _identity(obs, lambda: load_hook_key(data_root))
    if identity is not None and f"hook:{obs.event}:{identity[0]}" in task.requests:
        return HookOutcome(recorded=False, context=_if(with_context, context))
    try:
        return _record_locked(store, data_root, obs, shash, view, bound, identity, deadline, with_context, stamp)
    except StorageError as exc:
        if exc.code != "LOCK_TIMEOUT":
            raise
    # The lock stayed busy until the deadline: leave the observation for the next writer (the spool), decided on the
    # lock-free view like the rest of this call; the drain under the lock skips it if it is recorded meanwhile.
    if identity is None:
        identity = _identity(obs, lambda: load_or_create_hook_key(data_root))  # publication is atomic, lock or not
    if identity is None:  # load_or_create_hook_key returns a key or raises: unreachable
        raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
    spooled = store.spool(_draft(obs, task.task_id, identity))
    return HookOutcome(recorded=False, spooled=spooled, context=_if(with_context, context))


def _record_locked(
    store: ProjectStore,
    data_root: Path,
    obs: Observation,
    shash: str,
    view: LedgerView | None,
    bound: TaskState | None,
    identity: Identity | None,
    deadline: float | None,
    with_context: bool,
    stamp: tuple[int, int, int, int, int] | None,
) -> HookOutcome:
    """The decision again under the lock (taken by ``deadline`` or ``LOCK_TIMEOUT``), and the append.

    The bound task is read again unless the lock-free read went through the index and the ledger file is provably
    the one it read (:func:`_ledger_stamp`, taken before that read, unchanged under the lock): then it would read the
    same lines again. Why: reading a task through the index costs ~30 µs per event of the task (measured on the
    loaded 2-core development machine, a 300-event task: 9 ms), and every prompt adds an event to its task.
    """
    from intentloop.service._hookkey import load_or_create_hook_key

    with store.locked(deadline, lazy=True) as ledger:
        control = store.read_control(shash)
        unchanged = view is None and stamp is not None and _ledger_stamp(store) == stamp
        found = _UNKNOWN if unchanged else _indexed_session_task(store, shash)  # the index as of the last commit
        if unchanged:
            pass  # the lock-free decision read this very file through the index: ``bound`` stands
        elif found is not _UNKNOWN:
            assert found is None or isinstance(found, TaskState)
            bound = found
        elif ledger.view is not view:  # the ledger changed since the lock-free read
            bound = _session_task(ledger.view, shash)
        task, context = _decide(bound, store.read_controls(), control, obs.session_id)
        if task is None:
            return HookOutcome(recorded=False, context=_if(with_context, context))
        if identity is None:
            identity = _identity(obs, lambda: load_or_create_hook_key(data_root))
        if identity is None:  # load_or_create_hook_key returns a key or raises: unreachable
            raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
        if f"hook:{obs.event}:{identity[0]}" in task.requests:
            return HookOutcome(recorded=False, context=_if(with_context, context))
        ledger.append([_draft(obs, task.task_id, identity)])
    return HookOutcome(recorded=True, context=_if(with_context, context))


def _rebuild_index(store: ProjectStore, deadline: float) -> bool:
    """Take the lock once to have the ledger verified a chunk at a time and its checkpoint and task index rebuilt (what
    a writer does on entering when no checkpoint vouches for the file); ``False`` when the lock stayed busy.

    Why: in the background the session's task is then read through the index; a lock-free whole read held every
    decoded event (4.0 GB at 1,000,000 events) while the rebuild holds a chunk (docs/BENCHMARK.md).

    Raises:
        CorruptLedgerError: the ledger is damaged.
        StorageError: anything but ``LOCK_TIMEOUT``.
    """
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
    "record_observation",
    "session_context",
]
