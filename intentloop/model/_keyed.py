"""The generic credential rule: a value under any credential-named key goes when it looks like a secret.

Why a judged value instead of "every value": the key words here (``key``, ``auth``, ``session``, ``token`` …) also
name ordinary things (``max_tokens = 4096``, ``sort_key: created_at``, ``fix(auth): refresh the session token``), so
the key only makes a value suspect; its shape decides (numbers, versions, placeholders, URLs, paths, ARNs, words and
identifiers stay; anything with a digit among letters, a symbol, or random-looking case goes).
"""

from __future__ import annotations

import base64
import binascii
import re

from intentloop.model._lazyre import LazyPattern

#: The last word of a credential-named key (then an optional plural ``s``), lower-cased: ``DB_PASS``, ``PGPASSWORD``,
#: ``MYSQL_PWD``, ``aws_secret_access_key``, ``X-Auth-Token``, ``SESSION_COOKIE``, ``clientCredentials``…
KEY_ENDINGS = (
    "pass",
    "passwd",
    "password",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "authorization",
    "cred",
    "credential",
    "private",
    "session",
    "cookie",
)
#: Key words that name a secret outright: after them, even in prose, a hex, UUID or ULID value is the secret.
STRONG_WORDS = ("pass", "pwd", "secret", "token", "cred")
#: Literals one of which every match holds in lower case (the rule's prefilter).
KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "private", "session", "cookie")

# A name run (possessive, starting where a run starts: linear) that ends with a key word (one fixed-width lookbehind
# per ending), optionally quoted, then an assignment (``=``, ``:``, ``:=``, ``=>``) or whitespace with an optional
# connector (``password is hunter2x``, ``--password x``), then one value. Case-insensitive.
_ENDS = "|".join(f"(?<={ending})|(?<={ending}s)" for ending in KEY_ENDINGS)
PATTERN = (
    r"(?<![A-Za-z0-9_.-])(?<![0-9]:)(?P<keep>(?P<q>[\"']?)(?P<key>[A-Za-z0-9_.-]{1,100}+)(?:" + _ENDS + r")(?P=q)"
    r"(?:[ \t]*+(?P<assign>:=|=>|[:=])[ \t]*+|[ \t]++(?:(?:is|was|to|of)[ \t]++)?))"
    r"(?P<value>\"[^\"\r\n]{1,200}+\"|'[^'\r\n]{1,200}+'|[^\s,;\"'`<>()\[\]{}]{1,300}+)"
)

# ids that prose names after a key word ("the cache key 3f2a9c…", "request key 01ARZ…"): kept unless assigned
_ID_SHAPE = LazyPattern(r"(?:0x)?[0-9a-fA-F]++(?:-[0-9a-fA-F]++)*+|[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}")
_NUMERIC = LazyPattern(r"[0-9][0-9.,:_/+-]*+")
_VERSION = LazyPattern(r"[vV]?[0-9]+(?:\.[0-9]+)+(?:[-+][A-Za-z0-9.-]+)?")
_WORDS = LazyPattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_PIECE = LazyPattern(r"(?:[A-Z]?[a-z]+|[A-Z]+(?![a-z]))++[0-9]{0,4}+")
# a word of four or more letters without a vowel, or with four consonants in a row, is not a word
_UNPRONOUNCEABLE = LazyPattern(r"(?i)^[b-df-hj-np-tv-z]{4,}$|[b-df-hj-np-tv-xz]{4}")
_SPLIT = LazyPattern(r"[_.:/-]")
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "nil", "undefined"})
#: Punctuation that ends a sentence rather than a bare value: kept after the marker.
TRAILING = ".!?"


def credential_key(key: str) -> bool:
    """Whether ``key`` (a name, any case and separator style) ends with a credential word."""
    lowered = key.lower()
    return lowered.endswith(KEY_ENDINGS) or (lowered.endswith("s") and lowered[:-1].endswith(KEY_ENDINGS))


def _identifier(piece: str) -> bool:
    """A word, or words in camel/snake/kebab case with digits only at their end, of 3.5+ letters a word on average."""
    if not _PIECE.fullmatch(piece):
        return False
    words = _WORDS.findall(piece)
    if any(not word.isupper() and _UNPRONOUNCEABLE.search(word) for word in words):
        return False
    return len(words) <= 2 or len(piece) >= 3.5 * len(words)


def looks_secret(value: str, *, assigned: bool = True) -> bool:
    """Whether a value under a credential-named key looks like a secret rather than a word, number, name or path.

    ``assigned`` (``key=value``, ``key: value``): hex, UUID and ULID shapes are secrets (Twilio, Heroku keys);
    after a key word in prose they are the ids they look like.
    """
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    value = value.strip()
    if len(value) < 6 or value.lower() in _BOOLEANS:
        return False
    if value[0] in "$<{%*[#&@" or value.startswith(("arn:", "file:")) or "://" in value:
        return False  # a placeholder, a reference or an interpolation; URLs keep their credentials' own rule
    if _NUMERIC.fullmatch(value) or _VERSION.fullmatch(value):
        return False
    if not assigned and _ID_SHAPE.fullmatch(value):
        return False
    if any(ch.isspace() for ch in value):
        return False  # prose, not a value (a quoted passphrase under a password key is the strong rule's)
    if value.startswith(("/", "./", "../", "~/")) or re.match(r"[A-Za-z]:\\", value):
        return False
    pieces = [piece for piece in _SPLIT.split(value) if piece]
    if not pieces or not _identifier(pieces[0]):
        return True
    return not all(_identifier(piece) or piece.isdigit() for piece in pieces[1:])


#: A name run long enough to hold a key word and a secret joined to it (``dd-apikey-<hex>``, ``vendorSECRET-<uuid>``).
JOINED_PATTERN = (
    r"(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*?(?:secret|token|key|pass|pwd|auth)[-_=])[A-Za-z0-9_.=-]{20,300}+"
)
_JOINT = LazyPattern(r"(?i)(?:secret|token|key|pass|pwd|auth)[-_=]")


def joined_secret_start(run: str) -> int | None:
    """Where the secret starts in a name run that joins a key word and a secret (``dd-apikey-<hex>`` → after
    ``apikey-``): the first joint whose whole tail, 16 characters or more, is a hex, UUID or ULID value, or one
    unseparated run that looks like an assigned secret. A tail of several separated pieces is a name
    (``token_append_appendUtf8``, ``key-rotation-schedule``), never a secret joined to its key word."""
    for joint in _JOINT.finditer(run):
        tail = run[joint.end() :].rstrip(TRAILING)
        if len(tail) < 16:
            continue
        if _ID_SHAPE.fullmatch(tail) or (not _SPLIT.search(tail) and looks_secret(tail)):
            return joint.end()
    return None


def basic_auth(token: str) -> bool:
    """Whether a ``Basic`` token is base64 of ``user:password`` (so ``Basic authentication`` stays)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


__all__ = [
    "JOINED_PATTERN",
    "KEY_ENDINGS",
    "KEY_WORDS",
    "PATTERN",
    "STRONG_WORDS",
    "TRAILING",
    "basic_auth",
    "credential_key",
    "joined_secret_start",
    "looks_secret",
]
