"""The catalog's keyword prefilter never turns away a text the catalog would report: checked against the real library
on the recall corpus (built from the catalog's documented examples), the held-out set, the identifiers and generated
text; and it does turn
away ordinary statements (what it is for). Also: the literal derivation on known patterns, and the keyword file's
validation (owner-only, this version, well formed), each refusal beside its positive control.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from intentloop.store import catalog
from intentloop.store._catalog_keywords import (
    KEYWORDS_NAME,
    PLAIN_LIMIT,
    KeywordFile,
    Prefilter,
    RuleKeys,
    derive,
    mandatory_literals,
    python_pattern,
    read_keywords,
    write_keywords,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))  # the corpus helpers
from test_redaction_heldout import load_heldout
from test_redaction_recall import SURROUNDINGS, load_corpus
from test_redaction_secrets import _benign

#: Ordinary statements an agent or a user stores: none holds anything a catalog rule could match.
ORDINARY = (
    "keep the retry budget at three attempts and log each failure with its request id",
    "rotate the api key in config.py before v1.2 ships.",
    "the secret key lives in vault; use 100% of the budget | done",
    "fix(auth): refresh the session token before it expires",
    "use the staging bucket for box uploads and keep the password policy at 12 characters",
    "the user prefers small commits and a test beside every change (see docs/CONTRIBUTING.md)",
)


@pytest.fixture(scope="module")
def library(catalog_env: dict[str, str]) -> Iterator[tuple[Any, Any, KeywordFile]]:
    """The real rules and scanner from the session's warm cache, and the keyword file written beside them."""
    import kingfisher_sdk

    version = catalog.catalog_state(catalog_env).version
    assert version is not None
    folder = catalog.cache_dir(catalog_env, version)
    rules = kingfisher_sdk.Rules(cache_dir=folder)
    keywords = read_keywords(folder, version)
    assert keywords is not None
    yield rules, kingfisher_sdk.Scanner(rules, base64=False), keywords


def _unexplained(scanner: Any, keywords: KeywordFile, text: str) -> list[str]:
    """The rules that report ``text`` although the prefilter says no rule may match it (must be none), and, rule by
    rule, the reporting rules whose keywords or pattern the text does not hold."""
    found = {finding.rule_id for finding in scanner.scan(text) if finding.visible}
    if not found:
        return []
    wrong = [] if Prefilter(keywords).may_match(text) else sorted(found)
    by_id = {rule.id: rule for rule in keywords.rules}
    folded = text.casefold()
    for rule_id in sorted(found):
        rule = by_id[rule_id]
        if rule.keywords and not any(word in folded for word in rule.keywords):
            wrong.append(f"{rule_id}: no keyword")
        elif Prefilter(KeywordFile(2, keywords.version, [rule])).may_match(text) is False:
            wrong.append(f"{rule_id}: pattern")
    return wrong


def _uncovered(scanner: Any, keywords: KeywordFile, text: str) -> list[str]:
    """The secrets the library finds in ``text`` that the prefilter's spans do not cover (must be none: a short text
    is redacted by those spans alone, without the library)."""
    spans = Prefilter(keywords).spans(text)
    if spans is None:  # the library would scan it
        return []
    return [
        text[start:end]
        for start, end in catalog._spans(scanner, text)
        if not any(low <= start and end <= high for low, high in spans)
    ]


def _texts() -> Iterator[str]:
    for entry in load_corpus():
        for wrap in SURROUNDINGS.values():
            yield wrap(entry["example"])
        yield entry["example"]
        for left, right in (("Schlüssel—", "—fertig"), ("«", "»"), ("é", "é"), ("🚀 ", " ✓"), ("ā", "…")):
            yield left + entry["example"] + right  # the catalog reads bytes: a neighbour's bytes can complete a match
    for entry in load_heldout():
        for wrap in SURROUNDINGS.values():
            yield wrap(entry["example"])
    yield from _benign()


def test_no_text_the_catalog_reports_is_turned_away_and_every_secret_it_finds_is_covered(
    library: tuple[Any, Any, KeywordFile],
) -> None:
    _, scanner, keywords = library
    reported = answered = 0
    for text in _texts():
        assert _unexplained(scanner, keywords, text) == [], text
        assert _uncovered(scanner, keywords, text) == [], text
        found = any(f.visible for f in scanner.scan(text))
        reported += found
        answered += found and Prefilter(keywords).spans(text) is not None
    assert reported > 600  # the check ran on many texts the catalog reports (669 on 2026-12-03)
    assert answered == reported  # and the patterns answered every one of them (none is long or of several lines)


def _pieces() -> list[str]:
    pieces: list[str] = []
    for entry in load_corpus()[::3]:
        pieces += entry["example"].split()[:4]
        pieces.append(entry["secret"])
    return pieces


_PIECES = _pieces()


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.sampled_from(_PIECES), st.sampled_from([" ", "=", ": ", '"', "'", "\n", "", ",", "/", "."])),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["", "x", "Ünïcödé ", "\t", "—", "ā"]),
)
def test_generated_text_the_catalog_reports_gets_through(
    library: tuple[Any, Any, KeywordFile], parts: list[tuple[str, str]], prefix: str
) -> None:
    _, scanner, keywords = library
    text = prefix + "".join(piece + separator for piece, separator in parts)
    assert _unexplained(scanner, keywords, text) == []
    assert _uncovered(scanner, keywords, text) == []


#: What may follow a secret: nothing, prose, characters a secret's class takes, the ones that end it (``\\n`` written
#: out, a quote, ``/``), so that the catalog's reading of the text cut at a match's end is exercised.
_TAILS = ("", " end", "x end", "Zq9 end", "\\x", "==j.", '"', "/abc", "-9", "_k", "\\", ".", "\\n])")


_FROM_RULE: dict[str, st.SearchStrategy[str]] = {}


def _drawn_from(rule: RuleKeys) -> st.SearchStrategy[str]:
    """Printable ASCII text of under 800 characters that a rule's Python pattern matches, one strategy per rule (a
    strategy built anew in every example makes Hypothesis's generation inconsistent)."""
    if rule.id not in _FROM_RULE:
        assert rule.pattern is not None
        pattern = re.compile(rule.pattern, re.MULTILINE)
        strategy = st.from_regex(pattern, fullmatch=False, alphabet=st.characters(min_codepoint=32, max_codepoint=126))
        _FROM_RULE[rule.id] = strategy.filter(lambda text: len(text) < 800)
    return _FROM_RULE[rule.id]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_text_generated_from_every_rules_own_pattern_is_covered(
    library: tuple[Any, Any, KeywordFile], data: st.DataObject
) -> None:
    """Text drawn from a rule's own pattern (printable ASCII, one line) between a prefix and a tail: whatever the
    library finds in it, the patterns' spans cover (the corpus exercises 100 of the 441 rules; this, all of them)."""
    _, scanner, keywords = library
    rule = data.draw(st.sampled_from(keywords.rules))
    body = data.draw(_drawn_from(rule))
    text = data.draw(st.sampled_from(["", "note: ", "k=", '"'])) + body + data.draw(st.sampled_from(_TAILS))
    assert _unexplained(scanner, keywords, text) == []
    assert _uncovered(scanner, keywords, text) == []


def test_ordinary_statements_are_turned_away(library: tuple[Any, Any, KeywordFile]) -> None:
    _, scanner, keywords = library
    prefilter = Prefilter(keywords)
    for text in ORDINARY:
        assert not any(f.visible for f in scanner.scan(text)), text
        assert not prefilter.may_match(text), text
    assert prefilter.may_match(load_heldout()[0]["example"])  # the control: a secret gets through


def test_every_visible_rule_has_keywords_and_a_pattern(library: tuple[Any, Any, KeywordFile]) -> None:
    """What the derivation achieves on this catalog (docs/REDACTION.md): no rule is open to any text."""
    rules, _, keywords = library
    visible = {rule["id"] for rule in rules.metadata() if rule["visible"]}
    assert {rule.id for rule in keywords.rules} == visible
    assert keywords.open_rules() == []
    assert all(rule.pattern is not None for rule in keywords.rules)


def test_a_long_or_unprintable_text_with_a_keyword_may_match() -> None:
    """Beyond a printable line of :data:`PLAIN_LIMIT` characters the patterns are not searched: a keyword is enough."""
    keywords = KeywordFile(2, "v", [RuleKeys("r", ["ghp_"], python_pattern(r"\bghp_[A-Za-z0-9]{36}\b"), 0)])
    prefilter = Prefilter(keywords)
    assert not prefilter.may_match("the ghp_ prefix names GitHub tokens — für alle")  # searched: no token
    assert prefilter.may_match("the ghp_ prefix names GitHub tokens" + " " * PLAIN_LIMIT)
    assert prefilter.may_match("the ghp_ prefix names GitHub tokens\x1b")
    assert not prefilter.may_match("nothing here — für alle\x1b" + " " * PLAIN_LIMIT)  # no keyword: turned away


def test_non_ascii_text_is_searched_as_bytes_too() -> None:
    """The catalog reads bytes: ``—`` is three, the last (0x94) inside ``[\\x7b-\\xff]``; as one character it is
    outside. Either reading lets the text through."""
    prefilter = Prefilter(KeywordFile(2, "v", [RuleKeys("r", ["zz"], python_pattern(r"[\x7b-\xff]zz\b"), 0)]))
    assert prefilter.may_match("a —zz here")  # the bytes' reading
    assert prefilter.may_match("a ézz here")  # both readings
    assert not prefilter.may_match("a -zz here")  # the control: outside the class either way


def _spans(pattern: str, text: str, group: int = 0) -> list[tuple[int, int]] | None:
    rule = RuleKeys("r", sorted(mandatory_literals(pattern) or ()), python_pattern(pattern), group)
    return Prefilter(KeywordFile(2, "v", [rule])).spans(text)


def test_spans_are_the_secret_group() -> None:
    """Group 0 is the first group that matched something, else the whole match; a named group is that group, and
    when it took no part, the whole match (more, never less)."""
    text = "key: twilio=0123456789abcdef0123456789abcdef ok"
    secret = (text.index("0123"), text.index(" ok"))
    assert _spans(r"twilio=([a-f0-9]{32})", text) == [secret]
    assert _spans(r"twilio=(x)?([a-f0-9]{32})", text) == [secret]  # the first group took no part
    assert _spans(r"twilio=[a-f0-9]{32}", text) == [(text.index("twilio"), secret[1])]  # no group: the match
    assert _spans(r"(twilio)=([a-f0-9]{32})", text, group=2) == [secret]
    assert _spans(r"(twilio)=([a-f0-9]{32})(x)?", text, group=3) == [(text.index("twilio"), secret[1])]
    assert _spans(r"twilio=([a-f0-9]{32})", "key: twilio=not-hex") == []  # the control: no match, nothing


def test_spans_are_searched_from_every_match_start() -> None:
    """Python reads the pattern case-insensitively, so it may match where the catalog does not, one character
    earlier; searching on only after that match would miss the catalog's own match overlapping it."""
    assert _spans(r"x[a-z]{4}", "Xxabcd") == [(0, 6)]  # the catalog's match is (1, 6): covered
    assert _spans(r"x[a-z]{4}", "xabcd") == [(0, 5)]  # the control: one match


def test_spans_take_in_what_ends_a_match_when_the_text_is_cut_there() -> None:
    """The catalog runs a rule's expression on the text cut at a match's end, where ``$`` holds too: a secret class
    that takes a backslash and ``n`` then takes the ``\\n`` that ended the match in the whole text."""
    pattern = r"(tok[a-z\\]{4,})(?:\\n|;|$)"
    assert _spans(pattern, "tokabcd\\n]) end") == [(0, 9)]  # the whole text alone gives (0, 7)
    assert _spans(pattern, "tokabcd; end") == [(0, 7)]  # the control: what ends it is not in the class


def test_what_the_catalog_finds_in_a_text_cut_at_a_match_end_is_covered(library: tuple[Any, Any, KeywordFile]) -> None:
    """Two texts drawn from rules' patterns where the catalog's secret runs past where the whole text's match of the
    same pattern ends: a JWT before ``\\n])`` and a Slack cookie whose ending ``\\z`` holds at the cut."""
    _, scanner, keywords = library
    jwt = (
        "{scalrkey ,eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJ1c2VyIiwianRpIjoiYXQty_oh84mqQnXS0dQCItLt3ocp."
        "orRBcFG30lrayArbzz0t07I_tWzzEKOMXamw_n8VPwG\\n])C_k"
    )
    cookie = (
        "note: gxoxd-XHZG\\8SSoHL/10hbmWjOnK795y3N_gVC0eR963flUX5xkS0M6S675yvW2b4FEygk9XC+00nYl\\uK_FVXXxM4Tqi-S-2bxc"
        "aZLkJ-pbbd/wwR\\9mWdSoW\\fV/IMCpC==jT.#bgm< end"
    )
    for text in (jwt, cookie):
        assert any(finding.visible for finding in scanner.scan(text))  # the control: the catalog reports it
        assert _uncovered(scanner, keywords, text) == []


def test_spans_of_non_ascii_text_cover_whole_characters() -> None:
    """A match in the bytes' reading may start inside a character: the span widens to the whole character."""
    assert _spans(r"[\x7b-\xff]zz\b", "a —zz here") == [(2, 5)]
    assert _spans(r"[\x7b-\xff]zz\b", "a -zz here") == []


def test_a_long_or_unprintable_text_with_a_keyword_has_no_answer() -> None:
    """Such a text is left to the library (``None``); without a keyword, it needs nothing (``[]``)."""
    assert _spans(r"\bghp_[A-Za-z0-9]{36}\b", "the ghp_ prefix" + " " * PLAIN_LIMIT) is None
    assert _spans(r"\bghp_[A-Za-z0-9]{36}\b", "the ghp_ prefix\nof GitHub tokens") is None
    assert _spans(r"\bghp_[A-Za-z0-9]{36}\b", "nothing here\n" + " " * PLAIN_LIMIT) == []
    assert _spans(r"\bghp_[A-Za-z0-9]{36}\b", "the ghp_ prefix of GitHub tokens") == []


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"\bghp_[A-Za-z0-9]{36}\b", {"ghp_"}),
        (r"(?i)(?:twilio)(?:[ \t\w.-]{0,20})=([a-f0-9]{32})", {"twilio"}),
        (r"(?:AKIA|ASIA)[A-Z2-7]{16}", {"akia", "asia"}),
        (r"\b(pat[[:alnum:]]{14}\.[a-f0-9]{64})\b", {"pat"}),
        (r"[Ss][Kk]-[0-9a-f]{32}", {"sk-"}),
        (r"xox[bp]-[0-9]+", {"xoxb-", "xoxp-"}),
        (r"a?bcd", {"abcd", "bcd"}),
        (r"-----BEGIN[ A-Z]{0,20}PRIVATE KEY-----", {"private key-----"}),
    ],
)
def test_mandatory_literals_of_known_patterns(pattern: str, literals: set[str]) -> None:
    assert mandatory_literals(pattern) == literals


@pytest.mark.parametrize(
    "pattern",
    [r"[a-f0-9]{32}", r"(?:abc)?[0-9]{10}", r"(?:abc|[0-9]+)x?", r"(?<name>abc)", r"[[:^space:]]abc", r"([0-9])\1"],
)
def test_no_literal_is_invented(pattern: str) -> None:
    """Optional parts, an alternative without a literal, a construct Python reads otherwise: no mandatory literal."""
    literals = mandatory_literals(pattern)
    assert literals is None or all(len(word) == 0 for word in literals)


def _file(folder: Path, version: str = "1.5.0") -> Path:
    folder.mkdir(mode=0o700, exist_ok=True)
    write_keywords(folder, derive(version, [("r", r"\bghp_[A-Za-z0-9]{36}\b", 0)]))
    return folder / KEYWORDS_NAME


def test_a_valid_keyword_file_is_read(tmp_path: Path) -> None:
    path = _file(tmp_path / "cache")
    assert path.stat().st_mode & 0o777 == 0o600
    read = read_keywords(path.parent, "1.5.0")
    assert read is not None and read.rules == [RuleKeys("r", ["ghp_"], r"\bghp_[A-Za-z0-9]{36}\b", 0)]


def test_a_keyword_file_of_another_version_is_ignored(tmp_path: Path) -> None:
    path = _file(tmp_path / "cache", version="1.4.0")
    assert read_keywords(path.parent, "1.5.0") is None


def test_a_keyword_file_others_can_write_is_ignored(tmp_path: Path) -> None:
    path = _file(tmp_path / "cache")
    os.chmod(path, 0o620)
    assert read_keywords(path.parent, "1.5.0") is None
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o770)
    assert read_keywords(path.parent, "1.5.0") is None


def test_a_linked_or_malformed_keyword_file_is_ignored(tmp_path: Path) -> None:
    real = _file(tmp_path / "real")
    linked = tmp_path / "linked"
    linked.mkdir(mode=0o700)
    (linked / KEYWORDS_NAME).symlink_to(real)
    assert read_keywords(linked, "1.5.0") is None
    for data in (b"{", b'{"format": 1, "version": "1.5.0", "rules": []}', msgspec.json.encode({"format": 1})):
        real.write_bytes(data)
        assert read_keywords(real.parent, "1.5.0") is None
    shouting = KeywordFile(2, "1.5.0", [RuleKeys("r", ["GHP_"], None, 0)])  # not case-folded: would never be found
    real.write_bytes(msgspec.json.encode(shouting))
    assert read_keywords(real.parent, "1.5.0") is None
