"""Redaction of credentials before anything is stored (docs/REDACTION.md), and the text shapes built on it.

Why this shape: rules 1–8 keep the original's kinds, order and ``[REDACTED:<kind>]`` text so a known credential is
treated exactly as before (only widened: more PEM labels, unterminated PEM blocks, ``client_secret``/``DB_PASSWORD``
style keys, JSON-escaped quotes); rule 9 is replaced by the shape-aware rule of :mod:`intentloop.model._entropy`.

Rules, each applied to the output of the previous one (ASCII word boundaries, JavaScript whitespace, as the original):

1. ``private-key``   PEM ``-----BEGIN … PRIVATE KEY-----`` … ``-----END … PRIVATE KEY-----`` (or to the end of the text
   when the END line is missing).
2. ``bearer``        ``Bearer <12+ token chars>`` (the word is consumed too; case-insensitive).
3. ``openai-key``    ``sk-``, ``sk-proj-``, ``sk-svcacct-`` + 16 or more ``[A-Za-z0-9_-]``.
4. ``github-token``  ``gh[pousr]_`` + 20 alphanumerics, ``github_pat_`` + 20 ``[A-Za-z0-9_]``.
5. ``aws-key``       ``AKIA``/``ASIA`` + 16 ``[A-Z0-9]`` (access key ids).
6. ``jwt``           ``eyJ…`` three dot-separated base64url parts of 8 or more characters.
7. ``credential``    a quoted key (``"password"``, ``'api_key'``, ``\\"secret\\"``, ``"client_secret"``…) ``:`` value.
8. ``credential``    a bare key (``password=``, ``API-KEY:``, ``DB_PASSWORD =``, ``secret =>``…) and its value.
9. ``high-entropy-token``  see :mod:`intentloop.model._entropy`.

Added beyond the original (new kinds, so nothing the original caught changes): ``url-credential`` (the
``user:password`` of ``scheme://user:password@host``, before rule 2) and ``service-key`` (vendor tokens by their
documented prefixes, :data:`_SERVICE_KEYS`, after rule 5). Keys also match camelCase heads (``dbPassword``) and more
names (``passphrase``, ``id_token``, ``private_key``, ``AccountKey``, ``SharedAccessKey``, a URL's ``sig=``…); in JSON
mode every string value gets every rule, so ``{"cmd": "mysql --password=x"}`` loses ``x``.

The generic rule (``credential-keyed``, :mod:`intentloop.model._keyed`) then takes a value under any
credential-named key (``DB_PASS``, ``MYSQL_PWD``, ``X-Auth-Token``, ``--password``, ``password is …``) when the
value looks like a secret, ``credential-joined`` a secret joined to its key word in one name (``dd-apikey-<hex>``), and
``basic-auth`` a ``Basic`` token that is base64 of ``user:password``.

A second layer, the maintained rule catalog, runs after all of them when a process has put it in place
(:func:`use_catalog`, called only by :mod:`intentloop.store.catalog`, which decides who may load it): its findings in
what the own rules left become ``[REDACTED:catalog]``.

Every rule runs in linear time: a start position never scans text another start scans again (patterns start where
a run starts, skip possessively, and a value that began always matches); ``tests/unit/model/test_redaction_linear.py``
times each rule on 1 MiB built against it.

Keys are ``password``, ``passwd``, ``secret``, ``secret_key``, ``secret_access_key``, ``api_key``, ``access_token``,
``auth_token``, ``refresh_token`` (``_``/``-``/nothing between the parts, any case, any ``prefix_`` before). A
value is a double- or single-quoted string with backslash escapes, a JSON-escaped ``\\"…\\"`` string, or one bare
run up to whitespace, ``,``, ``;`` or a quote — so ``password: "correct horse battery staple", keep this suffix``
keeps the suffix.

JSON mode (as the original): when the trimmed text starts with ``{`` or ``[`` and parses as JSON, values under a
credential key become ``"[REDACTED:credential]"`` (counted once; under the generic rule's wider keys, a string value
that looks like a secret), every other string (and key) gets rules 1–6 and 9,
and the tree is written back compactly as JavaScript's ``JSON.stringify`` would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from intentloop.errors import InvalidInputError
from intentloop.model import _keyed
from intentloop.model._entropy import high_entropy_spans
from intentloop.model._lazyre import LazyPattern
from intentloop.model.commands import RECEIPT_HEAD
from intentloop.model.printable import escape_controls

# JavaScript's String.prototype.trim() and regex \s: WhiteSpace plus LineTerminator.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = "[" + JS_WHITESPACE + "]"
_WS_RUN = LazyPattern(_WS + "+")
# Everything str.splitlines() breaks on: a statement or label containing one is not "one line".
_LINE_BREAK = LazyPattern("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE

_KEY = (
    r"(?:passwo?r?d|passphrase|sig(?==)|secret(?:[_-]?access)?(?:[_-]?key)?|api[_-]?key"
    r"|(?:access|auth|refresh|id|session|api|bearer)[_-]?token"
    r"|(?:private|signing|encryption|master|account|shared[_-]?access)[_-]?key)"
)
# What may come before a key inside one name: ``db_``, ``x-``, ``aws.`` parts, then a camelCase head (``dbPassword``,
# ``clientSecret``: lower-case letters and digits right before an upper-case key). Unambiguous, so linear.
_CAMEL_HEAD = r"(?-i:[a-z][a-z0-9]*+(?=[A-Z]))"
_KEY_PREFIX = rf"(?:[A-Za-z0-9]+[_.-])*{_CAMEL_HEAD}?"
# Once a value's first character matched, the value always matches (an unterminated quote runs to the end of the
# line): a value can never scan far and then fail, which is what would make a start position cost more than once.
_VALUE = (
    r"(?:\"(?:\\[^\r\n]|[^\"\\\r\n])*+(?:\"|\\?(?=[\r\n])|\\?\Z)"  # "double-quoted \" escapes"
    r"|'(?:\\[^\r\n]|[^'\\\r\n])*+(?:'|\\?(?=[\r\n])|\\?\Z)"  # 'single-quoted'
    # \"json-escaped\": runs of plain characters, backslashes and inner escaped quotes, then a closing \" before a
    # delimiter (or a bare ", a line break, the end); possessive so a long backslash run costs linear time.
    r"|\\+\"(?:[^\"\\\r\n]++|\\++(?!\")|\\++\"(?![,;}\]\s)]|$))*+(?:\\+\"|\"|(?=[\r\n])|\Z)"
    rf"|[^,;\"'{JS_WHITESPACE}]+)"  # bare run
)

_T = r"[A-Za-z0-9_-]"  # a base64url token character
#: (literal every match holds, pattern): the literal is the prefilter of the rule (see :class:`_Rule`).
_SERVICE_KEYS: tuple[tuple[str, str], ...] = (
    ("AIza", rf"AIza{_T}{{35}}"),  # Google API key
    ("GOCSPX-", rf"GOCSPX-{_T}{{24,}}+"),  # Google OAuth client secret
    ("ya29.", rf"ya29\.{_T}{{20,}}+"),  # Google OAuth access token
    ("xox", r"xox[abeoprs]-[A-Za-z0-9-]{10,}+"),  # Slack bot/user/app/refresh tokens
    ("xapp-", r"xapp-[0-9]-[A-Za-z0-9-]{10,}+"),  # Slack app-level token
    ("hooks.slack.com/", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}+"),  # Slack webhook
    ("_live_", r"(?:sk|rk)_live_[A-Za-z0-9]{16,}+"),  # Stripe secret and restricted keys (live)
    ("_test_", r"(?:sk|rk)_test_[A-Za-z0-9]{16,}+"),  # Stripe secret and restricted keys (test)
    ("whsec_", r"whsec_[A-Za-z0-9+/=]{24,}+"),  # Stripe webhook signing secret
    ("gl", rf"gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|oas|agent)-{_T}{{20,}}+"),  # GitLab tokens
    ("npm_", r"npm_[A-Za-z0-9]{36,}+"),  # npm access token
    ("pypi-AgE", rf"pypi-AgE{_T}{{50,}}+"),  # PyPI upload token
    ("SG.", rf"SG\.{_T}{{16,}}+\.{_T}{{30,}}+"),  # SendGrid
    ("hf_", r"hf_[A-Za-z0-9]{30,}+"),  # Hugging Face
    ("_v1_", r"do[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean
    ("dapi", r"dapi[a-f0-9]{32}(?:-[0-9]+)?"),  # Databricks
    ("shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),  # Shopify
    ("key-", r"key-[a-z0-9]{32}(?![a-z0-9])"),  # Mailgun
    ("sq0", rf"sq0(?:atp|csp)-{_T}{{22,}}+"),  # Square
    ("AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[A-Z0-9]{58}"),  # age secret key
    ("hvs.", rf"hvs\.{_T}{{24,}}+"),  # HashiCorp Vault service token
    ("dp.", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+"),  # Doppler
    ("lin_api_", r"lin_api_[A-Za-z0-9]{40,}+"),  # Linear
    ("PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),  # Postman
    ("ATATT3", r"ATATT3[A-Za-z0-9_=-]{50,}+"),  # Atlassian API token
    ("glsa_", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"),  # Grafana service account token
    ("sntry", r"sntry[su]_[A-Za-z0-9+/=_-]{50,}+"),  # Sentry
    (":AA", rf"[0-9]{{8,10}}:AA{_T}{{33}}"),  # Telegram bot token
    ("Q~", r"[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,}+"),  # Azure AD client secret
)
# Literals every match of a credential rule holds, in lower case: one of the key words of ``_KEY`` ("passw",
# "passphrase" → "pass"; "sig"; "secret"; "api_key" → "api"; the tokens → "token"; the keys → "key").
_KEY_WORDS = ("pass", "sig", "secret", "api", "token", "key")


class _Rule:
    """One pattern rule: its name, the kind it redacts, its pattern (compiled on first use) and its prefilter.

    The prefilter is a conjunction of alternatives of literals (``needs``), each a substring every match of the
    pattern contains — in ``text.lower()`` when ``folded`` (the case-insensitive rules, whose patterns are ASCII:
    lowering maps an ASCII letter to its ASCII lower case and never splits a run of ASCII characters). When a
    group has no literal in the text, the pattern cannot match, so it is neither run nor compiled: the redaction is
    exactly what running the pattern gives. ``tests/unit/model/test_redaction_prefilter.py`` derives from each
    parsed pattern that its literals are mandatory, and compares the prefiltered rules with the unfiltered ones.

    Why: a hook redacts every prompt, in a fresh process; compiling all patterns cost it 7–10 ms per prompt, while
    an ordinary prompt holds the literals of few rules (measured: docs/BENCHMARK.md, "UserPromptSubmit").
    """

    __slots__ = ("folded", "judge", "kind", "name", "needs", "pattern", "splitter")

    def __init__(
        self,
        name: str,
        kind: str,
        source: str,
        flags: int,
        needs: tuple[tuple[str, ...], ...],
        *,
        folded: bool,
        judge: Callable[[re.Match[str]], bool] | None = None,
        splitter: Callable[[str], int | None] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.pattern = LazyPattern(source, flags)
        self.needs = needs
        self.folded = folded
        self.judge = judge  # when set, a match is redacted only when the judge says its value is a secret
        self.splitter = splitter  # when set, where the secret starts in the match (None: no secret, kept)

    def may_match(self, text: str, lowered: str) -> bool:
        """Whether the pattern can match ``text`` (``lowered`` is ``text.lower()``, read only when ``folded``)."""
        haystack = lowered if self.folded else text
        return all(any(literal in haystack for literal in group) for group in self.needs)


#: The rules before the credential rules; a pattern may keep a leading ``keep`` group (text it skipped, not a secret).
_PATTERN_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private-key",
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        _AI,
        (("-----begin ",), ("private key",)),
        folded=True,
    ),
    # scheme://user:password@host: the scheme (kept) starts where a run of scheme characters starts, so no run is
    # scanned twice; the password runs to the last "@" before the path.
    _Rule(
        "url-credential",
        "url-credential",
        r"(?P<keep>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://)[^\s/?#@:]*+:[^\s/?#]*(?=@)",
        _A,
        (("://",), ("@",)),
        folded=False,
    ),
    _Rule("bearer", "bearer", rf"\bBearer{_WS}+[A-Za-z0-9._~+/-]{{12,}}={{0,2}}\b", _AI, (("bearer",),), folded=True),
    _Rule("openai-key", "openai-key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{16,}\b", _A, (("sk-",),), folded=False),
    _Rule(
        "github-token",
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b",
        _A,
        (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),),
        folded=False,
    ),
    _Rule("aws-key", "aws-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", _A, (("AKIA", "ASIA"),), folded=False),
    # Vendor tokens by their documented prefixes (the shapes secret scanners such as gitleaks look for), starting only
    # where a token starts; the whole run is redacted, possessively.
    _Rule(
        "service-key",
        "service-key",
        r"(?<![A-Za-z0-9_.~-])(?:" + "|".join(pattern for _literal, pattern in _SERVICE_KEYS) + ")",
        _A,
        (tuple(literal for literal, _pattern in _SERVICE_KEYS),),
        folded=False,
    ),
    # Starts only where a [A-Za-z0-9_-] run starts and skips (possessively, keeping it) to the run's first "eyJ":
    # every "eyJ" of a run shares the run's end, so if the first cannot start a token none can, and no run is
    # scanned from more than one start (``"eyJ-" * n`` was quadratic).
    _Rule(
        "jwt",
        "jwt",
        r"(?<![A-Za-z0-9_-])(?P<keep>(?:(?!\beyJ)[A-Za-z0-9_-])*+)"
        r"\beyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}\b",
        _A,
        (("eyJ",),),
        folded=False,
    ),
)
_CREDENTIAL_RULES: tuple[_Rule, ...] = (
    _Rule(
        "credential-quoted",
        "credential",
        rf"(?<!\\)\\*+[\"']{_KEY_PREFIX}{_KEY}\\*[\"']{_WS}*:{_WS}*{_VALUE}",
        _AI,
        (('"', "'"), (":",), _KEY_WORDS),
        folded=True,
    ),
    _Rule(
        "credential-bare",
        "credential",
        rf"(?<![A-Za-z0-9])(?<![0-9]:){_CAMEL_HEAD}?{_KEY}{_WS}*(?::=|=>|[:=]){_WS}*{_VALUE}",
        _AI,
        ((":", "="), _KEY_WORDS),
        folded=True,
    ),
    # Any credential-named key (``DB_PASS``, ``MYSQL_PWD``, ``X-Auth-Token``, ``--password``…) assigned or followed
    # by a value that looks like a secret (:mod:`intentloop.model._keyed`).
    _Rule(
        "credential-keyed",
        "credential",
        _keyed.PATTERN,
        _AI,
        (_keyed.KEY_WORDS,),
        folded=True,
        judge=lambda m: _keyed_judge(m["key"], m["assign"], m["value"]),
    ),
    # A key word joined to its secret inside one name (``dd-apikey-<hex>``, ``vendorSECRET-<uuid>``).
    _Rule(
        "credential-joined",
        "credential",
        _keyed.JOINED_PATTERN,
        _AI,
        (("secret", "token", "key", "pass", "pwd", "auth"),),
        folded=True,
        splitter=_keyed.joined_secret_start,
    ),
    # ``Basic <base64 of user:password>``, however short (``Basic authentication`` is not base64 of a pair).
    _Rule(
        "basic-auth",
        "credential",
        rf"(?P<keep>\bBasic{_WS}+)(?P<value>[A-Za-z0-9+/]{{4,}}+={{0,2}})(?![A-Za-z0-9+/=])",
        _AI,
        (("basic",),),
        folded=True,
        judge=lambda m: _keyed.basic_auth(m["value"]),
    ),
)
_JSON_CREDENTIAL_KEY = LazyPattern(rf"{_KEY_PREFIX}{_KEY}", _AI)

HIGH_ENTROPY = "high-entropy-token"
#: The kind of what the maintained rule catalog (the second layer, :mod:`intentloop.store.catalog`) finds.
CATALOG = "catalog"
#: The second layer, when one is in use in this process (:func:`use_catalog`): the sorted, disjoint secret spans
#: ``(start, end)`` of a text the project's own rules have already redacted.
_second_layer: list[Callable[[str], list[tuple[int, int]]]] = []
KINDS: tuple[str, ...] = (
    "aws-key",
    "bearer",
    CATALOG,
    "credential",
    "github-token",
    HIGH_ENTROPY,
    "jwt",
    "openai-key",
    "private-key",
    "service-key",
    "url-credential",
)


class Redaction(msgspec.Struct, frozen=True):
    """The redacted text, the number of replacements and the sorted distinct kinds replaced."""

    text: str
    count: int
    kinds: tuple[str, ...]


def _keyed_judge(key: str, assign: str | None, value: str) -> bool:
    """Whether a value after a credential-named key goes. Assigned (``=``, ``:``), the key makes it suspect and its
    shape decides; only spaced, it must follow a word that names a secret outright (``password hunter2x``,
    ``token is …``): after ``key``, ``auth``, ``private``, ``session`` or ``cookie`` a space is prose (``private
    constraint``, ``session cookie``, ``key rotation``)."""
    strong = any(word in key.lower() for word in _keyed.STRONG_WORDS)
    if assign is None and not strong:
        return False
    return _keyed.looks_secret(_bare_value(value), assigned=assign is not None or strong)


def _bare_value(value: str) -> str:
    """A bare value less the sentence punctuation that ends it (``hunter2x.`` → ``hunter2x``)."""
    return value if value[:1] in "\"'" else value.rstrip(_keyed.TRAILING)


def js_trim(text: str) -> str:
    """``String.prototype.trim()``: strip JavaScript whitespace and line terminators from both ends."""
    return text.strip(JS_WHITESPACE)


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_MARKER = LazyPattern(r"\[REDACTED:[a-z0-9-]+\]")


class _Counter:
    __slots__ = ("count", "kinds")

    def __init__(self) -> None:
        self.count = 0
        self.kinds: set[str] = set()

    def replacer(
        self,
        kind: str,
        judge: Callable[[re.Match[str]], bool] | None = None,
        splitter: Callable[[str], int | None] | None = None,
    ) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            if judge is not None and not judge(match):
                return match.group(0)
            if splitter is not None:
                whole = match.group(0)
                start = splitter(whole)
                if start is None:
                    return whole
                self.count += 1
                self.kinds.add(kind)
                tail = whole[start:]
                return whole[:start] + _marker(kind) + tail[len(tail.rstrip(_keyed.TRAILING)) :]
            self.count += 1
            self.kinds.add(kind)
            groups = match.groupdict()
            keep = groups.get("keep") or ""
            value = groups.get("value")
            after = value[len(_bare_value(value)) :] if value else ""  # a sentence's full stop stays
            return keep + _marker(kind) + after

        return replace

    def result(self, text: str) -> Redaction:
        return Redaction(text, self.count, tuple(sorted(self.kinds)))


def _apply_rules(text: str, counter: _Counter, *, credential_rules: bool, prefilter: bool = True) -> str:
    """Every rule in order, each over the previous one's output; a rule whose prefilter rules out a match is skipped
    (``prefilter=False`` runs every pattern: the reference the prefilter is tested against)."""
    rules = _PATTERN_RULES + _CREDENTIAL_RULES if credential_rules else _PATTERN_RULES
    lowered: str | None = None
    for rule in rules:
        if prefilter:
            if rule.folded and lowered is None:
                lowered = text.lower()
            if not rule.may_match(text, lowered or ""):
                continue
        before = counter.count
        text = rule.pattern.sub(counter.replacer(rule.kind, rule.judge, rule.splitter), text)
        if counter.count != before:  # the text changed: the next folded prefilter reads it anew
            lowered = None
    text = _apply_high_entropy(text, counter)
    if _second_layer:  # the catalog reads what the own rules left, and never redacts part of their markers
        text = _replace_spans(text, _outside_markers(text, _second_layer[0](text)), CATALOG, counter)
    return text


def _outside_markers(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` without the markers already in ``text``: a rule that matches around a marker (``ftp://`` and an
    ``@`` around ``[REDACTED:url-credential]``) must not cut into it, or a marker is garbled and redaction is no
    longer idempotent. What is left of a span beside a marker is kept when it holds a letter or a digit."""
    if not spans or "[REDACTED:" not in text:
        return spans
    markers = [match.span() for match in _MARKER.finditer(text)]
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        for marker_start, marker_end in markers:
            if marker_end <= start or marker_start >= end:
                continue
            if marker_start > start:
                kept.append((start, marker_start))
            start = max(start, marker_end)
        if end > start:
            kept.append((start, end))
    return [(start, end) for start, end in kept if any(char.isalnum() for char in text[start:end])]


def _replace_spans(text: str, spans: list[tuple[int, int]], kind: str, counter: _Counter) -> str:
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(_marker(kind))
        last = end
    pieces.append(text[last:])
    counter.count += len(spans)
    counter.kinds.add(kind)
    return "".join(pieces)


def _apply_high_entropy(text: str, counter: _Counter) -> str:
    return _replace_spans(text, high_entropy_spans(text), HIGH_ENTROPY, counter)


def use_catalog(spans: Callable[[str], list[tuple[int, int]]] | None) -> None:
    """Make ``spans`` the second layer of every later :func:`redact` in this process (``None``: own rules only).

    Only :mod:`intentloop.store.catalog` calls it, once the catalog has loaded: a process that never loads it (the
    plain prompt hook) never pays for it.
    """
    _second_layer.clear()
    if spans is not None:
        _second_layer.append(spans)


def catalog_in_use() -> bool:
    """Whether :func:`redact` runs the second layer in this process."""
    return bool(_second_layer)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _redact_json(text: str, *, prefilter: bool = True) -> Redaction | None:
    trimmed = js_trim(text)
    if not trimmed.startswith(("{", "[")):
        return None
    import json  # here: only a text that looks like JSON needs it (~2 ms of a hook's start-up)

    from intentloop.model._jsjson import js_stringify

    counter = _Counter()

    def visit(value: Any) -> Any:
        if isinstance(value, str):  # a value may itself hold "password=…" or a connection URL: every rule
            return _apply_rules(value, counter, credential_rules=True, prefilter=prefilter)
        if isinstance(value, list):
            return [visit(item) for item in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, child in value.items():
                new_key = _apply_rules(key, counter, credential_rules=False, prefilter=prefilter)
                if _JSON_CREDENTIAL_KEY.fullmatch(key) or (
                    isinstance(child, str) and _keyed.credential_key(key) and _keyed.looks_secret(child)
                ):
                    counter.count += 1
                    counter.kinds.add("credential")
                    out[new_key] = _marker("credential")
                else:
                    out[new_key] = visit(child)
            return out
        return value

    try:
        tree = json.loads(trimmed, parse_int=float, parse_constant=_reject_constant)
        return counter.result(js_stringify(visit(tree)))
    except (ValueError, RecursionError):
        return None


RULE_NAMES: tuple[str, ...] = (*(rule.name for rule in _PATTERN_RULES + _CREDENTIAL_RULES), HIGH_ENTROPY)


def run_rule(name: str, text: str) -> str:
    """Apply the one rule called ``name`` (see :data:`RULE_NAMES`) to ``text``: for tests and benchmarks.

    Raises:
        KeyError: an unknown rule name.
    """
    counter = _Counter()
    if name == HIGH_ENTROPY:
        return _apply_high_entropy(text, counter)
    for rule in _PATTERN_RULES + _CREDENTIAL_RULES:
        if rule.name == name:
            return rule.pattern.sub(counter.replacer(rule.kind, rule.judge, rule.splitter), text)
    raise KeyError(name)


def redact(text: str, *, prefilter: bool = True) -> Redaction:
    """Replace every credential in ``text`` with ``[REDACTED:<kind>]``: the one entry point of redaction.

    Idempotent: ``redact(redact(t).text).text == redact(t).text``. ``prefilter=False`` runs every pattern, even
    those whose literals the text lacks: the same result, slower (the reference of the prefilter's tests).
    """
    as_json = _redact_json(text, prefilter=prefilter)
    if as_json is not None:
        return as_json
    counter = _Counter()
    return counter.result(_apply_rules(text, counter, credential_rules=True, prefilter=prefilter))


def known_credential_kinds(text: str) -> tuple[str, ...]:
    """The kinds found in ``text`` except ``high-entropy-token`` (the original's test for opaque ids)."""
    return tuple(kind for kind in redact(text).kinds if kind != HIGH_ENTROPY)


def secret_kinds(text: str) -> tuple[str, ...]:
    """Every kind redaction finds in ``text``, ``high-entropy-token`` included: ids stored verbatim (request ids,
    source event ids, signal keys, hook turn ids) are refused when this is not empty. UUIDs, hex digests, ULIDs and
    ordinary names are never found, so they stay usable as ids."""
    return redact(text).kinds


def atomic_statement(text: str, max_len: int = 500) -> str:
    """Validate and redact one atomic statement (claims, reasons, summaries).

    Returns:
        The trimmed, redacted statement, terminal controls written as visible escapes (:func:`escape_controls`).

    Raises:
        InvalidInputError: ``INVALID_STATEMENT`` when blank or longer than ``max_len`` after redaction;
            ``RAW_PROMPT_REJECTED`` when longer than 4000 characters or not one line (CR, LF or any other line
            break — a stricter reading than the original's CR/LF, so no stored line can start a new one).
    """
    if not isinstance(text, str) or not js_trim(text):
        raise InvalidInputError("statement must be non-empty", code="INVALID_STATEMENT")
    if len(text) > 4000:
        raise InvalidInputError("statement is too long for an atomic intent claim", code="RAW_PROMPT_REJECTED")
    if _LINE_BREAK.search(text):
        raise InvalidInputError("an atomic intent claim must be a single line", code="RAW_PROMPT_REJECTED")
    if RECEIPT_HEAD.strip().casefold() in text.casefold():
        raise InvalidInputError(
            "a statement may not hold an Intent Loop receipt: it would read as one when injected",
            code="INVALID_STATEMENT",
        )
    redacted = escape_controls(redact(js_trim(text)).text)
    if len(redacted) > max_len:
        raise InvalidInputError(f"statement exceeds {max_len} characters after redaction", code="INVALID_STATEMENT")
    return redacted


def minimal_excerpt(text: str | None) -> str | None:
    """Trim → redact → collapse whitespace → at most 160 characters (159 and ``…``); ``None`` when blank."""
    if text is None or not js_trim(text):
        return None
    collapsed = escape_controls(_WS_RUN.sub(" ", redact(js_trim(text)).text))
    return collapsed if len(collapsed) <= 160 else collapsed[:159] + "…"


def sanitize_label(label: str | None) -> str | None:
    """A task label: trimmed, redacted, one line of at most 120 characters; ``None`` when absent or blank.

    Raises:
        InvalidInputError: ``INVALID_LABEL`` when longer than 120 characters after redaction or not one line.
    """
    if label is None or not js_trim(label):
        return None
    if _LINE_BREAK.search(js_trim(label)):
        raise InvalidInputError("task label must be one redacted line of at most 120 characters", code="INVALID_LABEL")
    redacted = escape_controls(redact(js_trim(label)).text)
    if len(redacted) > 120:
        raise InvalidInputError("task label must be one redacted line of at most 120 characters", code="INVALID_LABEL")
    return redacted


__all__ = [
    "CATALOG",
    "HIGH_ENTROPY",
    "JS_WHITESPACE",
    "KINDS",
    "RULE_NAMES",
    "Redaction",
    "atomic_statement",
    "catalog_in_use",
    "js_trim",
    "known_credential_kinds",
    "minimal_excerpt",
    "redact",
    "run_rule",
    "sanitize_label",
    "secret_kinds",
    "use_catalog",
]
