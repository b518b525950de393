"""Properties of redaction: idempotent, secrets never survive in any context, benign shapes always do."""

from __future__ import annotations

import hashlib
import json
import string

from hypothesis import assume, given, strategies as st

from intentloop.model import minimal_excerpt, redact
from intentloop.model._entropy import is_random_token

ALNUM = string.ascii_letters + string.digits
WORDS = [
    "append",
    "quarantine",
    "torn",
    "tail",
    "ledger",
    "lock",
    "owner",
    "token",
    "heartbeat",
    "config",
    "value",
    "build",
    "release",
    "deploy",
    "service",
    "handler",
    "manager",
    "factory",
    "proxy",
    "request",
    "response",
    "client",
    "server",
    "cache",
    "entry",
    "index",
    "file",
    "path",
    "module",
    "package",
    "snapshot",
    "claim",
    "candidate",
    "event",
    "projection",
    "redaction",
    "verify",
    "chain",
    "export",
    "import",
    "session",
    "private",
    "mode",
    "hook",
    "context",
    "budget",
]

# Surrounding text: anything, kept apart from the secret by a separator.
around = st.text(max_size=40)
separator = st.sampled_from([" ", "\t", " (", ", ", " [", ' "', "\n", "; "])


def _embed(prefix: str, sep: str, secret: str, suffix: str) -> str:
    closing = {" (": ")", " [": "]", ' "': '"'}.get(sep, " ")
    return f"{prefix}{sep}{secret}{closing}{suffix}"


credential_secrets = st.one_of(
    st.builds(lambda v: "sk-" + v, st.text(ALNUM + "_-", min_size=16, max_size=40).filter(lambda v: v[-1].isalnum())),
    st.builds(
        lambda p, v: p + v, st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]), st.text(ALNUM, min_size=20)
    ),
    st.builds(
        lambda p, v: p + v,
        st.sampled_from(["AKIA", "ASIA"]),
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16),
    ),
    st.builds(
        lambda a, b, c: f"eyJ{a}.{b}.{c}",
        *(st.text(ALNUM, min_size=8, max_size=30) for _ in range(3)),
    ),
)
assignment_values = st.text(ALNUM + "!#$%&()*+-./<>?@^_|~", min_size=6, max_size=40)
assignment_keys = st.sampled_from(
    [
        "password",
        "PASSWORD",
        "passwd",
        "secret",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "Access-Token",
        "db_password",
        "client_secret",
        "secret_key",
    ]
)


@given(st.text())
def test_redaction_is_idempotent_on_any_text(text: str) -> None:
    once = redact(text).text
    assert redact(once).text == once


@given(around, separator, credential_secrets, around)
def test_known_credentials_never_survive_in_any_context(prefix: str, sep: str, secret: str, suffix: str) -> None:
    text = _embed(prefix, sep, secret, suffix)
    result = redact(text)
    assert secret not in result.text
    assert redact(result.text).text == result.text


@given(around, assignment_keys, st.sampled_from(["=", ": ", " = ", ":", " => "]), assignment_values, around)
def test_assigned_values_never_survive(prefix: str, key: str, sep: str, value: str, suffix: str) -> None:
    for quoted in (value, f'"{value}"', f"'{value}'"):
        text = f"{prefix} {key}{sep}{quoted} {suffix}"
        assert redact(text).text.count(value) <= f"{prefix} {suffix}".count(value)


@given(around, st.randoms(use_true_random=False), st.integers(min_value=24, max_value=64), around)
def test_random_looking_tokens_never_survive(prefix: str, rnd, length: int, suffix: str) -> None:
    token = "".join(rnd.choice(ALNUM + "+/_-") for _ in range(length))
    assume(is_random_token(token))
    assert token not in redact(f"{prefix} {token} {suffix}").text
    assert token not in (minimal_excerpt(f"x {token} y") or "")


identifier = st.lists(st.sampled_from(WORDS), min_size=2, max_size=8).flatmap(
    lambda words: st.builds(
        lambda style, digits: style(words, digits),
        st.sampled_from(
            [
                lambda w, d: "_".join(w) + d,
                lambda w, d: "-".join(w) + d,
                lambda w, d: (w[0] + "".join(x.title() for x in w[1:])) + d,
                lambda w, d: "".join(x.title() for x in w) + d,
                lambda w, d: "_".join(w).upper() + d,
                lambda w, d: "_".join(w[:-1]) + d + "_" + w[-1],
            ]
        ),
        st.sampled_from(["", "2", "_v2", "V3", "42", "2024", "_x86_64", "Utf8"]),
    )
)


@given(identifier)
def test_ordinary_identifiers_survive(name: str) -> None:
    assert redact(f"rename {name} now").text == f"rename {name} now"


@given(
    st.lists(identifier, min_size=1, max_size=6),
    st.sampled_from(["/", "./", "~/", "C:\\", ""]),
    st.sampled_from(["/", "\\"]),
    st.sampled_from([".py", ".json", "", ".tar.gz"]),
)
def test_paths_survive(parts: list[str], root: str, sep: str, ext: str) -> None:
    path = root + sep.join(parts) + ext
    assert redact(path).text == path


@given(st.binary(), st.uuids())
def test_digests_and_uuids_survive(data: bytes, uid) -> None:
    text = " ".join(
        [
            hashlib.sha256(data).hexdigest(),
            hashlib.sha1(data).hexdigest().upper(),
            hashlib.md5(data).hexdigest(),
            str(uid),
            str(uid).upper(),
            uid.hex,
        ]
    )
    assert redact(text).text == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_json_mode_is_idempotent_and_stays_json(value) -> None:
    text = json.dumps(value)
    once = redact(text).text
    assert redact(once).text == once
    if text.startswith(("{", "[")):
        json.loads(once)
