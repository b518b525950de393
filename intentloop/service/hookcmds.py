"""The user's own ``/intent`` commands, run by the prompt hook through the service: no model decides whether to record.

Every command that changes something is one call of the tool an agent would make (``intent_add_explicit``,
``intent_replace_claim``, ``intent_add_evidence``, ``intent_delete``, ``intent_set_mode``, ``intent_start_task``), made
through :class:`~intentloop.service.intent_service.IntentService` itself, so the rules, argument decoding, redaction,
idempotency and the locked write path are the tools' own, not a copy. Why the async service in a hook whose ordinary
path is synchronous and trio-free: one implementation of the rules is worth more than the cost, and only a prompt that
starts with a command pays it (~130–160 ms more than an ordinary prompt, docs/BENCHMARK.md), every other prompt keeps
the light path. Lock waits end at the hook's deadline
through the store (``ProjectStore(deadline=…)``): a write is never cancelled half-way. The session's task is found
through the task index, never by a whole read before that wait: at 100,000 events the read alone (2.4 s) outlived the
deadline while another process held the lock, and the host got the bare fail-open line, neither receipt nor refusal.

A command that needs a task and has none first passes the tool's own argument decoding and claim rules on its input
(so a statement the tool would refuse starts no task), then starts the session's task as ``intent_start_task`` with
``host_session_id`` does, then makes its call; only a failure between those two calls (the lock held past the deadline)
leaves the started, empty task behind.

Idempotency is keyed on the host's opaque turn id (Codex ``turn_id``, Claude Code ``prompt_id``; without one, a keyed
digest of the redacted prompt): each command's request id derives from it, so a re-delivered prompt replays the
original result. Deletion leaves nothing to replay against, so ``forget`` first looks for the prompt's own
observation (recorded right after every command, as for any prompt) and does nothing when this prompt was handled.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from intentloop.errors import ConflictError, IntentLoopError, InvalidInputError, StorageError
from intentloop.model import Claim, TaskState, session_hash, sha256_hex
from intentloop.model.commands import LAST, RECEIPT_HEAD, IntentCommand, spelled
from intentloop.service.hookops import (
    SLOW_READ_BYTES,
    Identity,
    Observation,
    _identity,
    record_observation,
    session_context,
)
from intentloop.store import ProjectStore, locate_project, resolve_data_root

NOT_RECORDED: Final = "[Intent Loop: not recorded — "
MODEL_NOTE: Final = (
    "(The user's /intent command above was handled by the Intent Loop prompt hook itself; no intent_* tool call is "
    "needed for it. Confirm the receipt to the user in one short line.)"
)
PRIVATE_REFUSAL: Final = (
    "private mode cannot be turned on from the prompt hook: a hook process ends after each prompt and cannot keep "
    'memory-only state. Ask the agent to call intent_set_mode with mode "private" (or intent_start_task with mode '
    "\"private\" and the session's host_session_id); Intent Loop then keeps this task only in its server's memory"
)
#: Seconds a command needs at least (loading the service, taking the lock, writing): with less left it is refused
#: rather than cut off by the watchdog.
MIN_COMMAND_BUDGET_S: Final = 0.3
#: How often a command waiting for another process's rewrite looks again whether the index answers.
_BUSY_POLL_S: Final = 0.05
_PROMPT_EVENT: Final = "UserPromptSubmit"
_PLACEHOLDER_TASK: Final = "00000000-0000-4000-8000-000000000000"
_REASONS: Final[dict[str, str]] = {
    "RAW_PROMPT_REJECTED": "a statement must be one line of 1–500 characters",
    "INVALID_STATEMENT": "a statement must be 1–500 characters after trimming and redaction",
    "INVALID_ARGUMENTS": "the statement is too long (at most 500 characters)",
    "MODE_OFF": "Intent Loop is off for this task; '/intent on' turns it back on",
    "PRIVATE_SESSION_ACTIVE": "this session or task is in private mode; the hook records and reads nothing for it",
    "LOCK_TIMEOUT": "the ledger was busy until the hook's deadline; try again",
    "DATA_DIR_REQUIRED": "no Intent Loop data directory is configured for this host",
}


class CommandAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What the hook answers to a command prompt.

    Attributes:
        receipt: the receipt (``[Intent Loop receipt IL-…] …``) or the refusal (``[Intent Loop: not recorded — …]``),
            shown to the user and given to the model.
        context: the hook's usual context after the command (the linked task's user-explicit claims …), if any.
        done: whether the command did what it says (a refusal: ``False``).
    """

    receipt: str
    context: str | None = None
    done: bool = False

    @property
    def additional_context(self) -> str:
        parts = [self.receipt]
        if self.done:
            parts.append(MODEL_NOTE)
        if self.context:
            parts.append(self.context)
        return "\n".join(parts)


def receipt_id(digest: str) -> str:
    """``IL-<8 hex>``: the same for every delivery of one prompt."""
    return "IL-" + sha256_hex("intent-loop-receipt-v1\0" + digest)[:8]


def refusal(reason: str) -> str:
    return f"{NOT_RECORDED}{reason}]"


def _reason(exc: IntentLoopError) -> str:
    return f"{_REASONS.get(exc.code, str(exc))} ({exc.code})"


def _short(claim_id: str) -> str:
    return claim_id[:8]


class _Run:
    """One command of one prompt: project, session, identity and the service calls."""

    def __init__(
        self,
        data_root: Path,
        cwd: str,
        session_id: str,
        turn_id: str | None,
        prompt: str,
        deadline: float | None,
        host: str | None = None,
    ) -> None:
        self.data_root = data_root
        self.host = host
        located = locate_project(cwd, data_root)
        self.project_root, self.project_id = located.root, located.project_id
        self.store = ProjectStore(data_root, self.project_id, deadline=deadline)
        self.session_id = session_id
        self.shash = session_hash(session_id)
        self.obs = Observation(event=_PROMPT_EVENT, session_id=session_id, turn_id=turn_id, text=prompt)
        self.deadline = deadline

    @functools.cached_property
    def _identity(self) -> Identity:
        """(request-id hash, source digest, host turn id or ``None``, count), as the prompt's observation has it.

        Without a usable host turn id the digest is keyed: the key is created here when there is none yet (with the
        project folder it belongs beside), so a command refused before it needs an identity creates nothing.
        """
        from intentloop.service._hookkey import load_hook_key, load_or_create_hook_key

        def key() -> bytes:
            existing = load_hook_key(self.data_root)
            if existing is not None:
                return existing
            self.store.paths.ensure()
            return load_or_create_hook_key(self.data_root)

        identity = _identity(self.obs, key)
        if identity is None:  # key() returns a key or raises: unreachable
            raise StorageError("the hook digest key is unavailable", code="STORAGE_READ_FAILED")
        return identity

    @property
    def request_hash(self) -> str:
        return self._identity[0]

    @property
    def receipt(self) -> str:
        return receipt_id(self._identity[1])

    def request_id(self, verb: str) -> str:
        return f"hook:intent:{verb}:{self.request_hash}"

    def source_ref(self) -> dict[str, str]:
        _hash, digest, event_id, _count = self._identity
        ref = {"kind": "user_event", "sha256": digest}
        if event_id is not None:
            ref["event_id"] = event_id
        return ref

    def done(self, text: str) -> str:
        return f"{RECEIPT_HEAD}{self.receipt}] {text}"

    def bound_task(self) -> TaskState | None:
        """The session's bound task, through the task index when it answers, else from the whole ledger.

        A large ledger the index cannot answer for while another process holds the lock is being rewritten or
        repaired by it (forget, relink, recovery): its whole read would not fit the hook's budget, so the command
        waits for that process, as its own lock wait would, until the deadline.

        Raises:
            StorageError: ``LOCK_TIMEOUT`` when that process still holds the lock at the deadline.
        """
        while True:
            held = self.deadline is not None and os.path.lexists(self.store.lock_path)
            found = self.store.session_task(self.shash, whole_read_limit=SLOW_READ_BYTES if held else None)
            if found.answered:
                return found.task
            assert self.deadline is not None  # only a held lock sets a limit
            if time.monotonic() >= self.deadline:
                raise StorageError("another process held the ledger until the hook's deadline", code="LOCK_TIMEOUT")
            time.sleep(_BUSY_POLL_S)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """One tool call through the service (trio and the service are loaded here: only command prompts pay)."""
        from intentloop.service._blocking import call_tool_blocking

        return call_tool_blocking(
            tool,
            arguments,
            data_root=self.data_root,
            project_root=self.project_root,
            project_id=self.project_id,
            lock_deadline=self.deadline,
        )

    def task_for_write(self, mode: str = "on") -> tuple[str, bool]:
        """(the session's bound task, whether it was started now), starting it as ``intent_start_task`` would.

        A task started here is labelled with the minute it was started and the host, when its payload says
        (``Session task of 2026-12-02 18:25 UTC, Codex``), so a person recognises it in ``intentloop tasks``; never
        with prompt text. An ``off`` task keeps no label.
        """
        task = self.bound_task()
        if task is not None:
            return task.task_id, False
        arguments = {"request_id": self.request_id("start"), "host_session_id": self.session_id, "mode": mode}
        if mode != "off":
            label = "Session task of " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            arguments["label"] = label if self.host is None else f"{label}, {self.host}"
        try:
            snapshot = self.call("intent_start_task", arguments)
        except IntentLoopError as exc:
            # the same prompt delivered twice across a minute's turn: the other delivery started the task
            started = self.bound_task() if exc.code == "REQUEST_ID_REUSED" else None
            if started is None:
                raise
            return started.task_id, False
        return str(snapshot["task_id"]), True


def _resolve(task: TaskState, prefix: str, *, active_only: bool) -> str:
    """The one claim id of ``task`` starting with ``prefix``.

    Raises:
        IntentLoopError: ``CLAIM_NOT_FOUND`` (no match), ``AMBIGUOUS_CLAIM_PREFIX`` (more than one).
    """
    ids = [cid for cid in task.claims if cid.startswith(prefix) and (not active_only or task.is_active(cid))]
    if not ids:
        kind = "active claim" if active_only else "claim"
        raise IntentLoopError(f"no {kind} of this task starts with {prefix}", code="CLAIM_NOT_FOUND")
    if len(ids) > 1:
        raise InvalidInputError(
            f"{prefix} matches {len(ids)} claims of this task; type more characters of the id",
            code="AMBIGUOUS_CLAIM_PREFIX",
        )
    return ids[0]


def _last_explicit(task: TaskState) -> str:
    """The newest active direct user-explicit claim (``forget last``).

    Raises:
        IntentLoopError: ``CLAIM_NOT_FOUND``.
    """
    explicit = [c for c in task.active_claims() if c.is_direct_user_explicit]
    if not explicit:
        raise IntentLoopError("this task has no active user-explicit claim to forget", code="CLAIM_NOT_FOUND")
    order = {cid: index for index, cid in enumerate(task.claims)}
    return max(explicit, key=lambda c: (c.valid_from, order[c.claim_id])).claim_id


def _task_or_fail(run: _Run, what: str) -> TaskState:
    task = run.bound_task()
    if task is None:
        raise IntentLoopError(f"no task is linked to this session yet; nothing to {what}", code="TASK_NOT_FOUND")
    return task


def _precheck(tool: str, arguments: dict[str, Any], status: str, feedback_class: str | None = None) -> None:
    """Before a task is started for the command: the tool's own argument decoding and claim rules, on the command's
    input, so a statement the tool would refuse starts no task (the tool applies them again under the lock).

    Raises:
        IntentLoopError: ``INVALID_ARGUMENTS``, ``INVALID_STATEMENT``, ``RAW_PROMPT_REJECTED`` …
    """
    from intentloop.model import make_claim, new_uuid, utc_now, validate_source_ref
    from intentloop.service.args import decode_arguments

    placeholder = {"kind": "user_event", "sha256": "0" * 64}
    stand_ins = {"task_id": _PLACEHOLDER_TASK, "request_id": "check", "source_ref": placeholder}
    decode_arguments(tool, {**arguments, **stand_ins})
    make_claim(
        claim_id=new_uuid(),
        statement=arguments["statement"],
        epistemic_status=status,
        source_ref=validate_source_ref(placeholder),
        scope="task",
        facets=arguments["facets"],
        now=utc_now(),
        result_feedback_class=feedback_class,
    )


def _remember(run: _Run, cmd: IntentCommand) -> str:
    arguments: dict[str, Any] = {
        "statement": cmd.statement,
        "facets": [cmd.facet],
        "confirmation_reason": "direct_statement",
    }
    _precheck("intent_add_explicit", arguments, "explicit")
    task_id, _started = run.task_for_write()
    claim = run.call(
        "intent_add_explicit",
        {**arguments, "task_id": task_id, "request_id": run.request_id("remember"), "source_ref": run.source_ref()},
    )
    return run.done(f"remembered as claim {_short(claim['claim_id'])} ({cmd.facet}): {claim['statement']}")


def _feedback(run: _Run, cmd: IntentCommand) -> str:
    arguments: dict[str, Any] = {
        "statement": cmd.statement,
        "facets": ["result_feedback"],
        "feedback_class": cmd.feedback_class,
    }
    _precheck("intent_add_evidence", arguments, "evidence", cmd.feedback_class)
    task_id, _started = run.task_for_write()
    claim = run.call(
        "intent_add_evidence",
        {**arguments, "task_id": task_id, "request_id": run.request_id("feedback"), "source_ref": run.source_ref()},
    )
    return run.done(
        f"recorded feedback {_short(claim['claim_id'])} ({cmd.feedback_class}) as result evidence: {claim['statement']}"
    )


def _correct(run: _Run, cmd: IntentCommand) -> str:
    task = _task_or_fail(run, "correct")
    request_id = run.request_id("correct")
    earlier = task.requests.get(request_id)
    if earlier is not None and isinstance(earlier.payload.get("claim"), dict):  # a re-delivered prompt
        stored = Claim.from_wire(earlier.payload["claim"])
        target = stored.supersedes[0] if stored.supersedes else ""
    else:
        assert cmd.target is not None
        target = _resolve(task, cmd.target, active_only=True)
        old = task.claims[target]
        stored = Claim.from_wire(
            run.call(
                "intent_replace_claim",
                {
                    "task_id": task.task_id,
                    "request_id": request_id,
                    "statement": cmd.statement,
                    "source_ref": run.source_ref(),
                    "scope": old.scope,
                    "facets": list(old.facets),
                    "replacement_kind": "explicit",
                    "supersedes": [target],
                    "confirmation_reason": "direct_statement",
                },
            )
        )
    return run.done(f"replaced claim {_short(target)} with claim {_short(stored.claim_id)}: {stored.statement}")


def _forget(run: _Run, cmd: IntentCommand) -> str:
    task = _task_or_fail(run, "forget")
    if f"hook:{_PROMPT_EVENT}:{run.request_hash}" in task.requests:
        return run.done("forget: this prompt was already handled (delivered again); nothing more was deleted")
    assert cmd.target is not None
    claim_id = _last_explicit(task) if cmd.target == LAST else _resolve(task, cmd.target, active_only=False)
    result = run.call(
        "intent_delete",
        {"task_id": task.task_id, "target": "claim", "claim_id": claim_id, "confirmation": f"DELETE CLAIM {claim_id}"},
    )
    return run.done(
        f"forgot claim {_short(claim_id)}: physically deleted from the ledger, "
        f"{result['persistent_files_scanned']} stored files verified free of it"
    )


def _mode(run: _Run, cmd: IntentCommand) -> str:
    mode = cmd.verb
    task_id, started = run.task_for_write(mode)
    if not started:
        run.call("intent_set_mode", {"task_id": task_id, "request_id": run.request_id(mode), "mode": mode})
    if mode == "off":
        text = "Intent Loop is off for this task: nothing more is recorded or injected until '/intent on'"
        return run.done(spelled(text, cmd.word))
    return run.done("Intent Loop is on for this task: durable local memory is enabled")


def _show(run: _Run, _cmd: IntentCommand) -> str:
    task = run.bound_task()
    if task is None:
        return run.done("show: no task is linked to this session yet; nothing is recorded")
    snapshot = run.call("intent_get_snapshot", {"task_id": task.task_id})
    claims = [Claim.from_wire(c) for c in snapshot["active_claims"]]
    explicit = [c for c in claims if c.is_direct_user_explicit]
    count = len(explicit)
    lines = [f"show: {count} user-explicit {'claim' if count == 1 else 'claims'} of this task"]
    lines += [f"- {_short(c.claim_id)} [{c.scope}; {','.join(c.facets)}] {c.statement}" for c in explicit]
    others = len(claims) - len(explicit)
    if others or snapshot["candidate_count"]:
        lines.append(
            f"- other active records, not shown here: {others}; candidates: {snapshot['candidate_count']} "
            "(inspect them with intent_get_snapshot)"
        )
    return run.done("\n".join(lines))


_HANDLERS: Final[dict[str, Callable[[_Run, IntentCommand], str]]] = {
    "remember": _remember,
    "show": _show,
    "forget": _forget,
    "correct": _correct,
    "feedback": _feedback,
    "off": _mode,
    "on": _mode,
}


def run_command(
    env: Mapping[str, str],
    cwd: str,
    session_id: str,
    turn_id: str | None,
    prompt: str,
    command: IntentCommand,
    *,
    deadline: float | None,
    host: str | None = None,
) -> CommandAnswer:
    """Run ``command`` (parsed from ``prompt``) for the session; never raises an :class:`IntentLoopError`.

    A refused or failed command stores nothing at all and answers ``[Intent Loop: not recorded — <reason>]`` with
    the session's usual context; a done command answers its receipt, and then the prompt's usual observation is
    recorded and its context taken, as for any prompt.

    Args:
        deadline: a ``time.monotonic()`` value at which lock waits give up (the hook's lock deadline).
        host: the host that sent the prompt, when its payload says (the label of a task started here names it).
    """
    if command.problem is not None:
        return _with_context(env, cwd, session_id, turn_id, prompt, deadline, refusal(command.problem), False)
    if command.verb == "private":
        return _with_context(env, cwd, session_id, turn_id, prompt, deadline, refusal(PRIVATE_REFUSAL), False)
    try:
        data_root = resolve_data_root(env)
        run = _Run(data_root, cwd, session_id, turn_id, prompt, deadline, host)
        control = run.store.read_control(run.shash)
        if control is not None:
            raise ConflictError(
                "this session is in private mode: the hook records and reads nothing", code="PRIVATE_SESSION_ACTIVE"
            )
        if deadline is not None and deadline - time.monotonic() < MIN_COMMAND_BUDGET_S:
            raise StorageError("the hook's time ran out before the command could run", code="LOCK_TIMEOUT")
        if command.statement is not None:  # the catalog only when its cache is warm (intentloop/store/catalog.py)
            from intentloop.store.catalog import load_catalog

            load_catalog(env, cold_ok=False)
        receipt = _HANDLERS[command.verb](run, command)
    except IntentLoopError as exc:
        reason = spelled(_reason(exc), command.word)
        return _with_context(env, cwd, session_id, turn_id, prompt, deadline, refusal(reason), False)
    except Exception as exc:  # a defect: the user still learns that the command did not report success
        reason = f"an internal error stopped the command ({type(exc).__name__}); '/intent show' tells what is stored"
        return _with_context(
            env, cwd, session_id, turn_id, prompt, deadline, refusal(spelled(reason, command.word)), False
        )
    return _with_context(env, cwd, session_id, turn_id, prompt, deadline, receipt, True, data_root)


def _with_context(
    env: Mapping[str, str],
    cwd: str,
    session_id: str,
    turn_id: str | None,
    prompt: str,
    deadline: float | None,
    receipt: str,
    done: bool,
    data_root: Path | None = None,
) -> CommandAnswer:
    """The usual context: after a done command, with the prompt's usual observation recorded (read-only after a
    refusal, which stores nothing); a failure there leaves the receipt alone."""
    try:
        root = data_root if data_root is not None else resolve_data_root(env)
        if not done:
            # A refusal's context that would need a whole read of a large ledger is left out: the refusal comes in time.
            context = session_context(root, cwd, session_id, whole_read_limit=SLOW_READ_BYTES, note=False)
            return CommandAnswer(receipt=receipt, context=context, done=False)
        outcome = record_observation(
            root,
            cwd,
            Observation(event=_PROMPT_EVENT, session_id=session_id, turn_id=turn_id, text=prompt),
            deadline=deadline,
            with_context=True,
        )
    except IntentLoopError:
        return CommandAnswer(receipt=receipt, done=done)
    return CommandAnswer(receipt=receipt, context=outcome.context, done=done)


__all__ = ["MODEL_NOTE", "NOT_RECORDED", "RECEIPT_HEAD", "CommandAnswer", "receipt_id", "refusal", "run_command"]
