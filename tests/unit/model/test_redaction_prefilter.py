"""The redaction prefilter skips only rules that cannot match: its literals are mandatory in every pattern, and the
prefiltered redaction equals the one that runs every pattern, byte for byte and kind for kind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from re import (
    _constants as C,  # the parsed form of a pattern: what the prefilter's literals are checked against
    _parser,
)
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from intentloop.model import redaction
from intentloop.model.redaction import _CREDENTIAL_RULES, _PATTERN_RULES, _SERVICE_KEYS, redact

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_redaction_secrets import _benign, _samples  # the recall corpus, secrets and benign text

RULES = _PATTERN_RULES + _CREDENTIAL_RULES
_BREAK: Any = (None, None)  # anything that is not a literal: ends a run of literals
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))


def _mandatory(items: list[Any], group: tuple[str, ...], fold: bool) -> bool:
    """Sound (never wrongly true): every string a parsed sequence matches contains one of ``group``'s literals.

    Groups and alternations are inlined (each alternative must hold a literal), small character sets of literals are
    split into alternatives, a repeat of at least one is inlined once (the rest of it breaks the run), and so is a
    lookahead or a lookbehind (the text holds it too); what remains is runs of literal characters, and a literal must
    lie inside one run.
    """
    for index, (op, av) in enumerate(items):
        head, tail = items[:index], items[index + 1 :]
        if op is C.SUBPATTERN:
            return _mandatory(head + list(av[3]) + tail, group, fold)
        if op is C.ATOMIC_GROUP:
            return _mandatory(head + list(av) + tail, group, fold)
        if op is C.BRANCH:
            return all(_mandatory(head + list(branch) + tail, group, fold) for branch in av[1])
        if op is C.IN and 1 < len(av) <= 8 and all(member_op is C.LITERAL for member_op, _ in av):
            return all(_mandatory([*head, (C.LITERAL, code), *tail], group, fold) for _, code in av)
        if op in _REPEATS and av[0] >= 1:
            return _mandatory(head + list(av[2]) + [_BREAK] + tail, group, fold)
        if op is C.ASSERT and av[0] == 1:  # a lookahead's text is there too, starting where what follows it starts
            return _mandatory(head + list(av[1]) + [_BREAK] + tail, group, fold)
        if op is C.ASSERT and av[0] == -1:  # a lookbehind's text is in the text too (before what follows it)
            return _mandatory([*head, _BREAK, *av[1], _BREAK, *tail], group, fold)
    runs, run = [], []
    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
        else:
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    texts = [r.lower() if fold else r for r in runs]
    return any(literal in text for literal in group for text in texts)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_prefilter_literal_is_mandatory_in_its_pattern(rule: Any) -> None:
    parsed = list(_parser.parse(rule.pattern.source, rule.pattern.flags))
    assert rule.needs, "every rule has a prefilter"
    for group in rule.needs:
        if rule.folded:
            assert all(literal == literal.lower() for literal in group)  # compared with text.lower()
        else:
            assert not rule.pattern.flags & re.IGNORECASE  # a case-sensitive literal needs a case-sensitive pattern
        assert _mandatory(parsed, group, rule.folded), (rule.name, group)


def test_the_mandatory_check_can_fail() -> None:  # the control: a literal that is optional or absent is refused
    assert _mandatory(list(_parser.parse(r"ab(?:cd|ce)", 0)), ("c",), False)
    assert not _mandatory(list(_parser.parse(r"ab(?:cd|xe)", 0)), ("c",), False)
    assert not _mandatory(list(_parser.parse(r"a(?:bc)?d", 0)), ("bc",), False)
    assert not _mandatory(list(_parser.parse(r"a[bx]c", 0)), ("abc",), False)
    assert _mandatory(list(_parser.parse(r"a[bx]c", 0)), ("abc", "axc"), False)
    assert not _mandatory(list(_parser.parse(r"ab{0,3}c", 0)), ("bc",), False)
    assert not _mandatory(list(_parser.parse(r"gh[pousr]_", 0)), ("ghp_", "gho_"), False)
    assert _mandatory(list(_parser.parse(r"a(?=@)b", 0)), ("@",), False)
    assert not _mandatory(list(_parser.parse(r"a(?!@)b", 0)), ("@",), False)
    assert not _mandatory(list(_parser.parse(r"a(?=@)b", 0)), ("@b",), False)


def test_each_service_key_alternative_holds_its_literal() -> None:
    for literal, pattern in _SERVICE_KEYS:
        assert _mandatory(list(_parser.parse(pattern, re.ASCII)), (literal,), False), literal


def _corpus() -> list[str]:
    texts = [text for _name, _context, text, _core in _samples()] + _benign()
    return [*texts, *(text.upper() for text in texts), *(text.lower() for text in texts)]


def test_prefiltered_redaction_equals_running_every_rule_on_the_secret_corpus() -> None:
    corpus = _corpus()
    differ = [text for text in corpus if redact(text) != redact(text, prefilter=False)]
    assert differ == []
    assert sum(redact(text).count > 0 for text in corpus) > len(corpus) // 2  # control: the corpus has secrets


_PIECES = [
    *(literal for rule in RULES for group in rule.needs for literal in group),
    *(literal.upper() for rule in RULES for group in rule.needs for literal in group),
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "password",
    "Password",
    "dbPassword",
    "client_secret",
    "API_KEY",
    "Bearer ",
    "postgres://",
    "user:pw@",
    "eyJhbGciOiJIUzI1NiJ9",
    "abcdefgh",
    "0123456789",
    "Zx9QwErTyUiOp",
    "\\",
    '"',
    "'",
    ":",
    "=",
    "=>",
    " ",
    "\n",
    ",",
    ";",
    "{",
    "}",
    "[",
    "]",
    ".",
    "/",
    "_",
    "-",
    "~",
    "İ",
    "K",
    "ſ",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=30).map("".join))
def test_prefiltered_redaction_equals_running_every_rule(text: str) -> None:
    assert redact(text) == redact(text, prefilter=False)


def test_an_ordinary_prompt_compiles_no_pattern_rule() -> None:
    """What the prefilter is for: a prompt without any rule's literals loads none of the patterns (a fresh process,
    so patterns compiled by other tests do not count)."""
    code = (
        "from intentloop.model import redaction as r\n"
        "assert r.redact('go on with the refactoring, then run the tests').count == 0\n"
        "rules = r._PATTERN_RULES + r._CREDENTIAL_RULES\n"
        "print(sum(rule.pattern._compiled is not None for rule in rules))\n"
        "assert r.redact('use password=hunter2 here').kinds == ('credential',)\n"
        "print(sum(rule.pattern._compiled is not None for rule in rules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "0"
    assert int(out[1]) >= 1  # control: a text with a credential compiles (and runs) the credential rules


def test_prefilter_off_is_the_reference() -> None:
    assert redaction.redact("password=hunter2", prefilter=False).kinds == ("credential",)
