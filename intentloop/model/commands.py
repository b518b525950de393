"""The user's ``/intent`` commands, as typed at the very start of a prompt: recognised and parsed, nothing more.

A prompt is a command only when its first word is ``/intent`` or ``$intent`` and the second is one of
:data:`COMMAND_VERBS`; any other text — ``/intent`` later in a prompt, ``/intentional``, or a verb the prompt hook
does not handle such as ``/intent start`` or ``/intent export`` — is left to the agent and its tools. Parsing checks
only the command's own syntax (verb, facet prefix, claim-id prefix, feedback class); the statement itself goes to the
service unchanged, so it meets exactly the validation and redaction of the tools.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from intentloop.model._lazyre import LazyPattern
from intentloop.model.claims import FEEDBACK_CLASSES

#: The verbs the prompt hook runs itself.
COMMAND_VERBS: Final = ("remember", "show", "forget", "correct", "feedback", "off", "on", "private")
#: The written forms of the command word.
COMMAND_WORDS: Final = ("/intent", "$intent")
#: How every answer of a command starts (``[Intent Loop receipt IL-…] …``): a stored statement may not hold it, so no
#: stored text can pass for a receipt when it is injected later (``atomic_statement`` refuses it).
RECEIPT_HEAD: Final = "[Intent Loop receipt "
#: ``remember <prefix>: …`` → the claim's facet (no prefix: ``outcome``).
REMEMBER_FACETS: Final[dict[str, str]] = {
    "outcome": "outcome",
    "constraint": "hard_constraint",
    "preference": "soft_constraint",
    "success": "success_signal",
    "failure": "failure_signal",
    "tradeoff": "tradeoff",
}
DEFAULT_FACET: Final = "outcome"
#: ``forget last``: the newest active direct user-explicit claim.
LAST: Final = "last"
#: A claim-id prefix as the user types it: at least 4 characters of a UUID.
MIN_PREFIX: Final = 4

_COMMAND_STARTS: Final = tuple({word[0] for word in COMMAND_WORDS})
# ASCII case-insensitivity only: Unicode folding would take ``/ıntent`` or ``/İntent`` (Turkish i) for the command.
_HEAD = LazyPattern("(?:" + "|".join(map(re.escape, COMMAND_WORDS)) + r")(?=\s|$)", re.IGNORECASE | re.ASCII)
_WORD = LazyPattern(r"(\S+)")
_PREFIX = LazyPattern(r"[0-9a-f][0-9a-f-]{" + str(MIN_PREFIX - 1) + ",35}")
_FACET_PREFIX = LazyPattern("(" + "|".join(REMEMBER_FACETS) + r"):[ \t]*", re.IGNORECASE | re.ASCII)
_FEEDBACK = LazyPattern(r"([A-Za-z_]+)[ \t]*:[ \t]*(.*)", re.DOTALL)
_ARROW = "=>"


class IntentCommand(msgspec.Struct, frozen=True, kw_only=True):
    """One parsed command.

    Attributes:
        verb: one of :data:`COMMAND_VERBS`.
        statement: ``remember``'s statement, ``correct``'s replacement or ``feedback``'s text (unvalidated).
        facet: ``remember``'s facet.
        target: ``forget``/``correct``: a lowercase claim-id prefix, or ``"last"`` (``forget`` only).
        feedback_class: ``feedback``'s class.
        problem: why the command cannot run (a syntax error); ``None`` when it can.
        word: the command word as typed (``/intent`` or ``$intent``, lower case): every text that names a command
            back to the user spells it this way.
    """

    verb: str
    statement: str | None = None
    facet: str | None = None
    target: str | None = None
    feedback_class: str | None = None
    problem: str | None = None
    word: str = "/intent"


def _usage(verb: str) -> str:
    return {
        "remember": "/intent remember [outcome:|constraint:|preference:|success:|failure:|tradeoff:] <one statement>",
        "forget": "/intent forget <claim-id prefix, at least 4 characters> or /intent forget last",
        "correct": "/intent correct <claim-id prefix> => <replacement statement>",
        "feedback": "/intent feedback <" + "|".join(FEEDBACK_CLASSES) + ">: <text>",
    }.get(verb, f"/intent {verb}")


def _claim_prefix(text: str, verb: str, *, allow_last: bool) -> tuple[str | None, str | None]:
    """(target, problem)."""
    value = text.strip().lower()
    if allow_last and value == LAST:
        return LAST, None
    if _PREFIX.fullmatch(value):
        return value, None
    return None, f"a claim-id prefix of at least {MIN_PREFIX} hex characters is needed; usage: {_usage(verb)}"


def parse_intent_command(prompt: str) -> IntentCommand | None:
    """The command at the very start of ``prompt``, or ``None`` when the prompt is not a hook command.

    Leading and trailing whitespace of the prompt is ignored; a line break inside a statement is kept (the service
    rejects it: a claim is one line).
    """
    text = prompt.strip()
    if not text.startswith(_COMMAND_STARTS):  # what every command word starts with: most prompts compile nothing
        return None
    head = _HEAD.match(text)
    if head is None:
        return None
    rest = text[head.end() :].lstrip()
    word = _WORD.match(rest)
    if word is None:
        return None
    verb = word.group(1).lower()
    if verb not in COMMAND_VERBS or not word.group(1).isascii():  # the Kelvin sign lowers to an ASCII k
        return None
    return as_typed(_parsed(verb, rest[word.end() :]), head.group(0).lower())


def _parsed(verb: str, args: str) -> IntentCommand:
    if verb == "remember":
        return _remember(args)
    if verb in ("forget", "correct"):
        return _forget(args) if verb == "forget" else _correct(args)
    if verb == "feedback":
        return _feedback(args)
    if args.strip():
        return IntentCommand(verb=verb, problem=f"{_usage(verb)} takes no arguments")
    return IntentCommand(verb=verb)


def as_typed(command: IntentCommand, word: str) -> IntentCommand:
    """``command`` with the command word the user typed, its usage text (never the user's words) spelled the same."""
    if word == command.word:
        return command
    problem = None if command.problem is None else spelled(command.problem, word)
    return msgspec.structs.replace(command, word=word, problem=problem)


def spelled(text: str, word: str) -> str:
    """intentloop's own ``text`` naming commands as ``word`` (``$intent remember …``) instead of ``/intent``."""
    return text.replace("/intent ", f"{word} ")


def _remember(args: str) -> IntentCommand:
    body = args.lstrip(" \t")
    facet = DEFAULT_FACET
    prefix = _FACET_PREFIX.match(body)
    if prefix is not None:
        facet = REMEMBER_FACETS[prefix.group(1).lower()]
        body = body[prefix.end() :]
    if not body.strip():
        return IntentCommand(verb="remember", facet=facet, problem=f"nothing to remember; usage: {_usage('remember')}")
    return IntentCommand(verb="remember", statement=body, facet=facet)


def _forget(args: str) -> IntentCommand:
    if "\n" in args.strip() or "\r" in args.strip():
        return IntentCommand(verb="forget", problem=f"the command must be one line; usage: {_usage('forget')}")
    target, problem = _claim_prefix(args, "forget", allow_last=True)
    return IntentCommand(verb="forget", target=target, problem=problem)


def _correct(args: str) -> IntentCommand:
    left, arrow, right = args.partition(_ARROW)
    if not arrow:
        return IntentCommand(verb="correct", problem=f"'=>' is missing; usage: {_usage('correct')}")
    target, problem = _claim_prefix(left, "correct", allow_last=False)
    if problem is None and not right.strip():
        problem = f"the replacement statement is empty; usage: {_usage('correct')}"
    return IntentCommand(verb="correct", target=target, statement=right.lstrip(" \t"), problem=problem)


def _feedback(args: str) -> IntentCommand:
    match = _FEEDBACK.fullmatch(args.lstrip(" \t"))
    if match is None or match.group(1).lower() not in FEEDBACK_CLASSES:
        return IntentCommand(verb="feedback", problem=f"a feedback class is needed; usage: {_usage('feedback')}")
    text = match.group(2)
    if not text.strip():
        return IntentCommand(verb="feedback", problem=f"the feedback text is empty; usage: {_usage('feedback')}")
    return IntentCommand(verb="feedback", statement=text, feedback_class=match.group(1).lower())


__all__ = [
    "COMMAND_VERBS",
    "COMMAND_WORDS",
    "DEFAULT_FACET",
    "LAST",
    "MIN_PREFIX",
    "RECEIPT_HEAD",
    "REMEMBER_FACETS",
    "IntentCommand",
    "as_typed",
    "parse_intent_command",
    "spelled",
]
