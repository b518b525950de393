"""The rule catalog's keywords and patterns: what its rules may find in a text, answered without loading it.

Why: loading the catalog costs a hook most of a second of CPU and the server ~40 MB (its 488 patterns compile on every
load), and most statements cannot match any of its rules. Kingfisher does not publish keywords, so they are derived
once, when the rule cache is built, from each visible rule's detection pattern: for every rule a set of literals one
of which every match contains (case-folded; a rule with none would make the prefilter useless, and is counted). A text
that contains none of them cannot be matched. The derivation is sound, never complete: anything it does not
understand (a class, a repeat that may be empty, a back-reference, an unknown escape) breaks a run of literals, so it
can only give up a literal, never invent one.

Beside the keywords each rule keeps its pattern in Python's syntax and the group that holds its secret, and
:meth:`Prefilter.spans` redacts a one-line text of at most 1,000 characters with them, without the library: a
superset of what the library reports (``tests/unit/store/test_catalog_keywords.py`` checks it against the catalog's
own findings on 6,770 corpus texts and on text drawn from every rule's pattern: none uncovered), over-redacting only
where the library's filters drop a match (6 of the corpus texts). An ``/intent remember`` holding a catalog-only
token went from +0.72 s of CPU to nothing measurable.

The keywords are stored beside the compiled rules (``keywords.json``, owner-only, named by the library's version and
the file's format); a file that is missing, not owner-only, of another version or format or not well formed is
ignored (a hook then treats the cache as cold).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from re import _constants as C, _parser  # type: ignore[attr-defined]  # the parsed form of a pattern
from typing import Any, AnyStr, Final

import msgspec

KEYWORDS_NAME: Final = "keywords.json"
_MAX_SET: Final = 32  # the most alternatives a literal set keeps before it stops growing
_MAX_CLASS: Final = 4  # a character class of at most this many literal members is expanded
_FORMAT: Final = 2  # 2: each rule names its secret group
_REPEATS: Final = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))
_POSIX_CLASS: Final = r"\[:(\^?[a-z]+):\]"
_POSIX: Final = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9a-fA-F",
}
_FLAGS: Final = re.IGNORECASE | re.MULTILINE
#: The longest text the prefilter searches with the rules' patterns (a bound on backtracking); a longer one may match.
PLAIN_LIMIT: Final = 1000


class RuleKeys(msgspec.Struct, frozen=True, array_like=True, forbid_unknown_fields=True):
    """One visible rule: its id, the literals one of which every match contains (empty: unknown), its pattern in
    Python's syntax when Python reads it the same way (``None`` otherwise), and the group that holds its secret (the
    catalog's ``betterleaks_secret_group``: 0 is the first group that matched something, else the whole match)."""

    id: str
    keywords: list[str]
    pattern: str | None
    group: int


class KeywordFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``keywords.json`` holds: the format (1), the library version whose rules it was derived from, and one
    :class:`RuleKeys` per visible rule."""

    format: int
    version: str
    rules: list[RuleKeys]

    def open_rules(self) -> list[str]:
        """The rules without a mandatory literal: any text may match them."""
        return [rule.id for rule in self.rules if not rule.keywords]


def _fold(text: str) -> str:
    return text.casefold()


def python_pattern(pattern: str) -> str | None:
    """``pattern`` (Rust regex syntax) in Python's, to be compiled with ``re.IGNORECASE | re.MULTILINE``, or ``None``
    when a construct may read differently. Case flags go (the whole pattern is case-insensitive: it can only match
    more), ``\\z`` is Python's ``\\Z``, POSIX classes are spelled out; anything Python reads differently or refuses
    (a nested set, an unknown POSIX class, an unknown escape) gives ``None``."""
    pattern = re.sub(r"\(\?i\)", "", pattern)
    pattern = re.sub(r"\(\?-?i:", "(?:", pattern)
    pattern = pattern.replace("\\z", "\\Z")
    unknown: list[str] = []

    def posix(match: re.Match[str]) -> str:
        spelled = _POSIX.get(match.group(1))
        if spelled is None:
            unknown.append(match.group(0))
        return spelled or ""

    pattern = re.sub(_POSIX_CLASS, posix, pattern)
    if unknown:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "possible nested set": Python would read a Rust class differently
        try:
            re.compile(pattern, _FLAGS)
        except (re.error, FutureWarning, ValueError, RecursionError, OverflowError):
            return None
    return pattern


# The facts about one parsed node: ``exact`` the set of every string it matches (``None`` when it is not a small
# finite set), ``needed`` a set of literals one of which every match contains (``None`` when none is known).
_Facts = tuple[frozenset[str] | None, frozenset[str] | None]
_EMPTY: Final[frozenset[str]] = frozenset({""})


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two literal sets: the longer shortest literal, then the fewer literals."""
    usable = [s for s in (a, b) if s and "" not in s]
    if not usable:
        return None
    return max(usable, key=lambda s: (min(len(x) for x in s), -len(s)))


def _product(a: frozenset[str], b: frozenset[str]) -> frozenset[str] | None:
    if len(a) * len(b) > _MAX_SET:
        return None
    return frozenset(x + y for x in a for y in b)


def _literal(code: int) -> frozenset[str] | None:
    char = chr(code)
    return frozenset({_fold(char)}) if char.isascii() else None


def _node(op: Any, av: Any) -> _Facts:
    if op is C.LITERAL:
        return _literal(av), None
    if op is C.IN:
        members: set[str] = set()
        for member_op, member in av:
            folded = _literal(member) if member_op is C.LITERAL else None
            if folded is None:
                return None, None
            members |= folded
        return (frozenset(members), None) if 0 < len(members) <= _MAX_CLASS else (None, None)
    if op is C.SUBPATTERN:
        return _sequence(av[3])
    if op is C.ATOMIC_GROUP:
        return _sequence(av)
    if op is C.BRANCH:
        facts = [_sequence(branch) for branch in av[1]]
        exacts = [exact for exact, _ in facts]
        exact: frozenset[str] | None = None
        if all(e is not None for e in exacts):
            union = frozenset().union(*(e for e in exacts if e is not None))
            exact = union if len(union) <= _MAX_SET else None
        needs = [_better(e, n) for e, n in facts]
        needed: frozenset[str] | None = None
        if all(n is not None for n in needs):
            union = frozenset().union(*(n for n in needs if n is not None))
            needed = union if len(union) <= _MAX_SET else None
        return exact, needed
    if op in _REPEATS:
        low, high, item = av
        inner_exact, inner_needed = _sequence(item)
        if low == 0:
            return (_EMPTY | inner_exact if high == 1 and inner_exact is not None else None), None
        return (inner_exact if low == high == 1 else None), _better(inner_exact, inner_needed)
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):  # anchors and lookarounds match no text of their own
        return _EMPTY, None
    return None, None  # ANY, CATEGORY, NOT_LITERAL, RANGE, GROUPREF …: not a literal


def _sequence(items: Iterable[Any]) -> _Facts:
    """A concatenation: adjacent exact sets multiply into literals (a run), and the best run or the best inner
    literal set is what every match needs."""
    run: frozenset[str] | None = _EMPTY
    whole: frozenset[str] | None = _EMPTY
    best: frozenset[str] | None = None
    for op, av in items:
        exact, needed = _node(op, av)
        best = _better(best, needed)
        if exact is None:
            best = _better(best, run)
            run, whole = _EMPTY, None
            continue
        grown = _product(run, exact) if run is not None else None
        if grown is None:  # too many alternatives: close the run, start a new one with this node
            best = _better(best, run)
            grown = exact
        run = grown
        whole = _product(whole, exact) if whole is not None else None
    best = _better(best, run)
    return whole, best


def mandatory_literals(pattern: str) -> frozenset[str] | None:
    """A set of case-folded literals one of which every match of ``pattern`` (Rust regex syntax) contains, or
    ``None`` when none is known (including a pattern this parser cannot read)."""
    translated = python_pattern(pattern)
    if translated is None:
        return None
    parsed = _parser.parse(translated, _FLAGS)
    exact, needed = _sequence(list(parsed))
    return _better(exact, needed)


def derive(version: str, rules: Sequence[tuple[str, str, int]]) -> KeywordFile:
    """The keyword file for the ``(rule id, detection pattern, secret group)`` of the visible rules."""
    entries = []
    for rule_id, pattern, group in rules:
        literals = mandatory_literals(pattern)
        entries.append(RuleKeys(rule_id, sorted(literals or ()), python_pattern(pattern), max(group, 0)))
    return KeywordFile(_FORMAT, version, entries)


def write_keywords(folder: Path, keywords: KeywordFile) -> None:
    """Write ``keywords.json`` into the (owner-only) cache folder, whole or not at all. Never raises."""
    temporary = folder / f".{KEYWORDS_NAME}.{os.getpid()}"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(msgspec.json.encode(keywords))
        os.replace(temporary, folder / KEYWORDS_NAME)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def read_keywords(folder: Path, version: str) -> KeywordFile | None:
    """The cache folder's keywords for library ``version``, or ``None`` when the file is missing, can be written by
    others (the folder or the file), is a link, or is not a well-formed file of this version."""
    path = folder / KEYWORDS_NAME
    try:
        owner = os.getuid()
        folder_stat = os.stat(folder)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        file_stat = os.fstat(descriptor)
        for info in (folder_stat, file_stat):
            if info.st_uid != owner or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
        if not stat.S_ISREG(file_stat.st_mode) or file_stat.st_size > 1 << 20:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read()
    except OSError:
        return None
    finally:
        os.close(descriptor)
    try:
        keywords = msgspec.json.decode(data, type=KeywordFile)
    except msgspec.DecodeError:
        return None
    if keywords.format != _FORMAT or keywords.version != version or not keywords.rules:
        return None
    for rule in keywords.rules:
        if rule.group < 0 or any(not word or word != _fold(word) or not word.isascii() for word in rule.keywords):
            return None
    return keywords


class Prefilter:
    """What the catalog's rules may find in a text, from the keyword file alone (no library loaded).

    A rule is a candidate when the case-folded text contains one of its keywords (or it has none). When the text is
    printable and at most :data:`PLAIN_LIMIT` characters long (one line bounds the search) and every candidate has a
    Python pattern, the candidates' patterns are searched and the secret part of every match is the answer
    (:meth:`spans`): for ASCII text Rust's and Python's regular expressions agree on where a pattern matches, and the
    Python pattern, case-insensitive throughout, can only match more. For other text the catalog matches bytes (a
    class such as ``[\\x7b-\\xff]`` takes a byte of ``—``), so the pattern is searched in both readings, over the
    UTF-8 bytes and over the characters, and both readings' matches count. Any other text with a candidate cannot be
    answered here: the library must scan it.

    Matches are searched from every position a match starts at plus one, not only after the previous match: a match
    Python finds and the catalog does not (it is case-sensitive where Python is not) can then never hide a later one
    the catalog reports. And each match is searched for again in the text cut at its end: the catalog finds a match's
    end with Vectorscan and then runs the rule's expression on the text cut there, where an end anchor holds too, so
    the generic rules' ``(?:['"]|[\\s;]|\\[nr]|$)`` ending lets their secret take in what ended it (``…secret\\n``
    in ``…secret\\n])``), a match the whole text does not have.
    """

    def __init__(self, keywords: KeywordFile) -> None:
        self._open = [rule for rule in keywords.rules if not rule.keywords]
        self._rules_of: dict[str, list[RuleKeys]] = {}
        for rule in keywords.rules:
            for word in rule.keywords:
                self._rules_of.setdefault(word, []).append(rule)
        self._compiled: dict[str, tuple[re.Pattern[str], re.Pattern[bytes] | None] | None] = {}

    def _candidates(self, folded: str) -> list[RuleKeys]:
        """The rules with one of their keywords in ``folded``, and the open ones (a substring test a keyword: ~0.2 ms
        for 500 characters, less than a pass over its positions in Python or one pattern of every keyword)."""
        found = [word for word in self._rules_of if word in folded]
        rules = {rule.id: rule for word in found for rule in self._rules_of[word]}
        return self._open + list(rules.values())

    def may_match(self, text: str) -> bool:
        """Whether a catalog rule may report something in ``text``."""
        return self.spans(text) != []

    def spans(self, text: str) -> list[tuple[int, int]] | None:
        """The secret parts of every match of the catalog's rules in ``text``, as sorted, disjoint character spans
        (a superset of what the catalog reports: ``tests/unit/store/test_catalog_keywords.py`` checks it against the
        library), or ``None`` when that cannot be told without the library (a long or unprintable text, a rule
        without a Python pattern)."""
        candidates = self._candidates(_fold(text))
        if not candidates:
            return []
        if len(text) > PLAIN_LIMIT or not text.isprintable():
            return None
        data = None if text.isascii() else text.encode("utf-8", "surrogatepass")
        found: list[tuple[int, int]] = []
        for rule in candidates:
            compiled = self._compile(rule.pattern) if rule.pattern is not None else None
            if compiled is None:
                return None
            as_text, as_bytes = compiled
            found += _secrets(as_text, text, rule.group)
            if data is not None:
                if as_bytes is None:
                    return None
                found += [_characters(data, start, end) for start, end in _secrets(as_bytes, data, rule.group)]
        return merge_spans(found)

    def _compile(self, pattern: str) -> tuple[re.Pattern[str], re.Pattern[bytes] | None] | None:
        if pattern not in self._compiled:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    as_text = re.compile(pattern, _FLAGS)
                except (re.error, FutureWarning, ValueError, RecursionError, OverflowError):
                    self._compiled[pattern] = None
                    return None
                try:
                    as_bytes: re.Pattern[bytes] | None = re.compile(pattern.encode("ascii"), _FLAGS)
                except (re.error, FutureWarning, ValueError, RecursionError, OverflowError, UnicodeEncodeError):
                    as_bytes = None
            self._compiled[pattern] = (as_text, as_bytes)
        return self._compiled[pattern]


def _secrets(pattern: re.Pattern[AnyStr], text: AnyStr, group: int) -> list[tuple[int, int]]:
    """The secret part of every match of ``pattern`` in ``text``, searched from each match's start plus one, and of
    the match in the text cut at each match's end (see :meth:`Prefilter.spans`)."""
    spans: list[tuple[int, int]] = []
    match = pattern.search(text)
    while match is not None:
        spans.append(_secret(match, group))
        if match.end() < len(text):
            cut = pattern.search(text, match.start(), match.end())
            if cut is not None:
                spans.append(_secret(cut, group))
        match = pattern.search(text, match.start() + 1) if match.start() < len(text) else None
    return [(start, end) for start, end in spans if end > start]


def _secret(match: re.Match[AnyStr], group: int) -> tuple[int, int]:
    """Group ``group`` when it matched something, for 0 the first group that did; else the whole match (more, never
    less)."""
    groups = match.re.groups
    for index in (group,) if 0 < group <= groups else range(1, groups + 1):
        if match.end(index) > match.start(index):
            return match.span(index)
    return match.span()


def _characters(data: bytes, start: int, end: int) -> tuple[int, int]:
    """A span of UTF-8 ``data`` in characters, widened to whole characters (a match may end inside one)."""
    return len(data[:start].decode("utf-8", "ignore")), len(data[:end].decode("utf-8", "replace"))


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, with overlapping and touching ones merged."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


__all__ = [
    "KEYWORDS_NAME",
    "PLAIN_LIMIT",
    "KeywordFile",
    "Prefilter",
    "RuleKeys",
    "derive",
    "mandatory_literals",
    "merge_spans",
    "python_pattern",
    "read_keywords",
    "write_keywords",
]
