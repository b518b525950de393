"""The high-entropy-token rule of redaction: random-looking tokens go, UUIDs, digests, paths and identifiers stay.

Why not the original's rule ("any run of ≥32 ``[A-Za-z0-9_/-]`` with a letter and a digit"): it erased every UUID,
SHA-256, long path and ``snake_case_v2`` name in a statement (docs/REDACTION.md). This rule looks at the *shape*
instead.

Candidates are maximal runs of ``[A-Za-z0-9+/_-]`` (base64, base64url, and the separators of identifiers and paths)
plus trailing ``=`` padding (redacted with the token); ``.``, ``\\``, ``:`` and everything else split runs. A token
of at least :data:`MIN_LENGTH` characters is a secret when **all** of these hold:

1. not a hex shape: ``[0-9a-fA-F]`` groups joined by ``-``, optionally ``0x``-prefixed — UUIDs, SHA-1/SHA-256/MD5
   digests and git commit ids are identifiers, never redacted (a hex-only API key therefore survives: the price of
   keeping digests; vendor keys with a hex body are caught by their prefixes instead), nor a ``sha512-<base64>``
   integrity digest;
2. it mixes upper and lower case (random base64/base62 does with probability ≈ 1 - 2·(36/62)^24 at 24 characters;
   ``snake_case``, ``kebab-case``, ``SCREAMING_CASE`` and lowercase paths do not) — or it is single-case (a base32
   or base36 key): one alphanumeric run without separators, with at least :data:`MIN_SINGLE_CASE_CLASS` letters and
   as many digits, not a ULID; then check 3 asks for :data:`MIN_SINGLE_CASE_RUN_RATIO` letter/digit runs per
   character and counts only pronounceable letter runs as words (≥ 30 % vowels, no four consonants in a row: random
   letters hold vowels too), and check 4 asks for :data:`MIN_SINGLE_CASE_ENTROPY_RATIO` of a 32-letter alphabet's
   entropy (a single-case token of letters only is not caught: without a dictionary it reads like a long name);
3. it is *not identifier-shaped*: split into words (``[A-Z]?[a-z]+``, ``[A-Z]+``, ``[0-9]+``; separators split too),
   there are at least :data:`MIN_WORD_RATIO` words per alphanumeric character (identifiers have long words, ≈0.12–0.3;
   random text flips class every ~1.6 characters, ≈0.35–0.8), and less than :data:`MAX_WORD_COVERAGE` of its letters
   sit in pronounceable words (``[A-Z]?[a-z]{2,}`` with a vowel);
4. its Shannon entropy over the alphanumeric characters is at least :data:`MIN_ENTROPY_RATIO` of the maximum possible
   for its length (``log2(min(n, 62))``).

A token containing ``_`` or ``-`` is also a secret when one of its parts alone is (``xoxb-…-<random>``). A token
containing ``/`` is *path-shaped* when at least two of its segments (or one, after a leading ``/``, ``./``, ``../``
or ``~/``) are names (``src``, ``site-packages``, ``AppData``, ``python3``) holding at least half of its letters and
digits; a path is never judged as a whole, only segment by segment (``/tmp/x/<random>/out`` loses just the random
segment). Any other token with ``/`` (base64) is judged whole, less the names that lead or trail it
(``com/v1/keys/<secret>`` keeps ``com/v1/keys/``), then segment by segment.

Calibration (2026-11, CPython 3.11): random base62/base64/base64url tokens of 24/32/40 characters are caught
≈98.7/99.4/99.7 % of the time (the misses lack a digit or happen to read like words); of 21,695 identifiers of ≥20
characters in the standard library and site-packages 4 exotic ones are flagged (``CPyStr_GetItemUnsafeAsInt``, one
real base64 literal among them), of 8,785 file paths none. ``tests/unit/model/test_redaction_corpus.py`` re-checks
the benign side against the running interpreter's standard library.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from intentloop.model._lazyre import LazyPattern

MIN_LENGTH = 24
MIN_ALNUM = 20
MIN_WORD_RATIO = 0.33
MAX_WORD_COVERAGE = 0.70
MIN_ENTROPY_RATIO = 0.80
#: A single-case token needs at least this many letters and as many digits …
MIN_SINGLE_CASE_CLASS = 2
#: … and letter/digit runs this often (random base36 switches every ≈2.5 characters, base32 every ≈3–6).
MIN_SINGLE_CASE_RUN_RATIO = 0.1
#: … and this much of log2(32) bits per character (32 draws from 36 symbols give 0.84 ± 0.04).
MIN_SINGLE_CASE_ENTROPY_RATIO = 0.72

_RUN = LazyPattern(r"[A-Za-z0-9+/_-]+=*", re.ASCII)
# A ULID (Crockford base32, 48-bit time first): an identifier, never a secret.
_ULID_SHAPE = LazyPattern(r"[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-7][0-9a-hjkmnp-tv-z]{25}", re.ASCII)
# A Subresource Integrity digest (package locks, HTML): ``sha512-<base64>``, a digest like a hex one.
_SRI_DIGEST = LazyPattern(r"sha(?:1|256|384|512)-[A-Za-z0-9+/]+=*", re.ASCII)
_HEX_SHAPE = LazyPattern(r"(?:0[xX])?[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*", re.ASCII)
_WORD = LazyPattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", re.ASCII)
_SPOKEN = LazyPattern(r"[A-Z]?[a-z]{2,}", re.ASCII)
_VOWEL = LazyPattern(r"[aeiouyAEIOUY]", re.ASCII)
_LETTER_RUN = LazyPattern(r"[a-z]+", re.ASCII)
_CONSONANTS = LazyPattern(r"[b-df-hj-np-tv-xz]{4}", re.ASCII)
_NON_ALNUM = LazyPattern(r"[^A-Za-z0-9]", re.ASCII)
_PARTS = LazyPattern(r"[_-]", re.ASCII)
# Unambiguous on purpose (each repetition starts with a separator or a capital): no catastrophic backtracking.
_NAME_SEGMENT = LazyPattern(
    r"[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*|[A-Z]?[a-z]{2,}(?:(?:[_-][A-Z]?|[A-Z])[a-z]{2,})*[0-9]*", re.ASCII
)
_PATH_PREFIXES = ("/", "./", "../", "~/")


def _shannon_bits(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _pronounceable(word: str) -> bool:
    """A lower-case letter run that reads like a word: ≥ 2 letters, ≥ 30 % vowels, no 4 consonants in a row."""
    if len(word) < 2:
        return False
    vowels = sum(1 for ch in word if ch in "aeiouy")
    return vowels >= 0.3 * len(word) and not _CONSONANTS.search(word)


def is_hex_shape(token: str) -> bool:
    """UUIDs, hex digests and commit ids (any case, hyphen-grouped, optional ``0x``)."""
    return bool(_HEX_SHAPE.fullmatch(token))


def is_random_token(token: str) -> bool:
    """True when ``token`` (one run without separators other than ``+/_-``) looks like a random secret."""
    if len(token) < MIN_LENGTH or is_hex_shape(token):
        return False
    core = _NON_ALNUM.sub("", token)
    n = len(core)
    if n < MIN_ALNUM:
        return False
    upper = lower = digits = 0
    for ch in core:
        if ch.isupper():
            upper += 1
        elif ch.islower():
            lower += 1
        else:
            digits += 1
    letters = upper + lower
    if not (upper and lower):  # single-case: base32/base36 keys, only with letters and digits mixed
        if len(core) != len(token) or min(letters, digits) < MIN_SINGLE_CASE_CLASS or _ULID_SHAPE.fullmatch(token):
            return False  # separators make a name (``x86_64-linux-gnu``); a random part is judged on its own
        if len(_WORD.findall(token)) / n < MIN_SINGLE_CASE_RUN_RATIO:
            return False
        # random letters hold vowels too: a run is a word only when pronounceable (vowels, no consonant pile-up)
        spoken = sum(len(w) for w in _LETTER_RUN.findall(token.lower()) if _pronounceable(w))
        if spoken / letters >= MAX_WORD_COVERAGE:
            return False
        return _shannon_bits(core) / math.log2(min(n, 32)) >= MIN_SINGLE_CASE_ENTROPY_RATIO
    if len(_WORD.findall(token)) / n < MIN_WORD_RATIO:
        return False
    spoken = sum(len(w) for w in _SPOKEN.findall(token) if _VOWEL.search(w))
    if spoken / letters >= MAX_WORD_COVERAGE:
        return False
    return _shannon_bits(core) / math.log2(min(n, 62)) >= MIN_ENTROPY_RATIO


def _is_secret(token: str) -> bool:
    if is_random_token(token):
        return True
    return any(len(part) >= MIN_LENGTH and is_random_token(part) for part in _PARTS.split(token))


def _is_name(segment: str) -> bool:
    return len(segment) >= 3 and bool(_NAME_SEGMENT.fullmatch(segment))


def is_path_shape(token: str) -> bool:
    """A ``/``-separated token mostly made of directory and file names (≥ half of its letters and digits)."""
    if "/" not in token:
        return False
    segments = token.split("/")
    names = [seg for seg in segments if _is_name(seg)]
    if not (len(names) >= 2 or (names and token.startswith(_PATH_PREFIXES))):
        return False
    named = sum(len(_NON_ALNUM.sub("", seg)) for seg in names)
    return 2 * named >= len(_NON_ALNUM.sub("", token))


def _segment_spans(token: str, offset: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = offset
    for seg in token.split("/"):
        if _is_secret(seg):
            spans.append((pos, pos + len(seg)))
        pos += len(seg) + 1
    return spans


def _slashed_spans(token: str, offset: int, padding: int) -> list[tuple[int, int]]:
    """A token with ``/``: a path is judged segment by segment; anything else (base64) as a whole, minus the names
    that lead or trail it (``com/v1/keys/<secret>`` keeps ``com/v1/keys/``)."""
    if is_path_shape(token):
        return _segment_spans(token, offset)
    segments = token.split("/")
    first, last = 0, len(segments)
    while first < last and (not segments[first] or _NAME_SEGMENT.fullmatch(segments[first])):
        first += 1
    while last > first and (not segments[last - 1] or _NAME_SEGMENT.fullmatch(segments[last - 1])):
        last -= 1
    core = "/".join(segments[first:last])
    if (first or last < len(segments)) and _is_secret(core):
        start = offset + sum(len(seg) + 1 for seg in segments[:first])
        return [(start, start + len(core) + (padding if last == len(segments) else 0))]
    if _is_secret(token):
        return [(offset, offset + len(token) + padding)]
    return _segment_spans(token, offset)


def high_entropy_spans(text: str) -> list[tuple[int, int]]:
    """Half-open ``(start, end)`` spans of ``text`` to replace, in order, non-overlapping."""
    spans: list[tuple[int, int]] = []
    if len(text) < MIN_LENGTH:  # no run can be long enough (and the patterns stay uncompiled)
        return spans
    for match in _RUN.finditer(text):
        run = match.group()
        if len(run) < MIN_LENGTH or _SRI_DIGEST.fullmatch(run):
            continue
        token = run.rstrip("=")
        if "/" not in token:
            if _is_secret(token):
                spans.append((match.start(), match.end()))
            continue
        spans.extend(_slashed_spans(token, match.start(), len(run) - len(token)))
    return spans


__all__ = [
    "MIN_ENTROPY_RATIO",
    "MIN_LENGTH",
    "MIN_SINGLE_CASE_CLASS",
    "MIN_SINGLE_CASE_ENTROPY_RATIO",
    "MIN_SINGLE_CASE_RUN_RATIO",
    "MIN_WORD_RATIO",
    "high_entropy_spans",
    "is_hex_shape",
    "is_path_shape",
    "is_random_token",
]
