"""Recall on realistic secret formats, and ordinary text that must survive byte for byte.

Every secret here is synthetic: generated from a seeded random source in the documented shape of its vendor's format
(the shapes secret scanners such as gitleaks and detect-secrets look for), never a real key. Each format is placed in
several kinds of surrounding text (prose, an env assignment, a JSON document, a log line); a sample is caught when
no part of the secret itself survives. The recall figure is printed (``pytest -s``) and must be 100 %.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Callable

import pytest

from intentloop.errors import InvalidInputError
from intentloop.model import redact
from intentloop.model.validation import is_opaque_id, validate_request_id, validate_signal_key, validate_source_ref

RNG_SEED = 20261201
SAMPLES_PER_FORMAT = 25
RANDOM = "random-"
#: bare random tokens (no vendor prefix, no key): random text can read like words now and then
MIN_RANDOM_RECALL = 0.95

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
B64URL = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
BASE32 = UPPER + "234567"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# format name -> generator of (the whole secret as written, the part that must not survive)
Gen = Callable[[random.Random], tuple[str, str]]


def _plain(make: Callable[[random.Random], str]) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        secret = make(rng)
        return secret, secret

    return gen


def _assigned(key: str, make: Callable[[random.Random], str], sep: str = "=") -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return f"{key}{sep}{value}", value

    return gen


def _password(rng: random.Random) -> str:
    return rng.choice(["hunter2", "correcthorse", "Winter2026!", "s3cr3t-pa55", "letmein123"]) + _r(rng, DIGITS, 2)


def _url(scheme: str, user: str) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        pw = _r(rng, ALNUM, 14)
        return f"{scheme}://{user}:{pw}@db-{_r(rng, LOWER, 5)}.example.com:5432/app", pw

    return gen


def _jwt(rng: random.Random) -> str:
    header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    return f"{header}.eyJ{_r(rng, B64URL, 40)}.{_r(rng, B64URL, 43)}"


def _pem(rng: random.Random) -> str:
    body = _r(rng, B64, 64)
    return f"-----BEGIN RSA PRIVATE KEY----- {body} -----END RSA PRIVATE KEY-----"


FORMATS: dict[str, Gen] = {
    "aws-access-key-id": _plain(lambda r: "AKIA" + _r(r, BASE32, 16)),
    "aws-secret-access-key": _plain(lambda r: _r(r, B64, 40)),
    "aws-secret-access-key-assigned": _assigned("aws_secret_access_key", lambda r: _r(r, B64, 40), " = "),
    "aws-session-token": _plain(lambda r: "FwoGZXIvYXdzE" + _r(r, B64, 120)),
    "gcp-api-key": _plain(lambda r: "AIza" + _r(r, B64URL, 35)),
    "gcp-oauth-client-secret": _plain(lambda r: "GOCSPX-" + _r(r, B64URL, 28)),
    "gcp-oauth-access-token": _plain(lambda r: "ya29." + _r(r, B64URL, 120)),
    "azure-ad-client-secret": _plain(lambda r: _r(r, ALNUM, 3) + _r(r, DIGITS, 1) + "Q~" + _r(r, ALNUM + "_~.-", 34)),
    "azure-storage-account-key": _assigned("AccountKey", lambda r: _r(r, B64, 86) + "=="),
    "azure-sas-signature": _assigned("sig", lambda r: _r(r, ALNUM, 30) + "%2B" + _r(r, ALNUM, 10) + "%3D"),
    "slack-bot-token": _plain(lambda r: f"xoxb-{_r(r, DIGITS, 12)}-{_r(r, DIGITS, 13)}-{_r(r, ALNUM, 24)}"),
    "slack-user-token": _plain(lambda r: f"xoxp-{_r(r, DIGITS, 12)}-{_r(r, DIGITS, 12)}-{_r(r, HEX, 32)}"),
    "slack-webhook": _assigned(
        f"https://hooks.slack.com/services/T{'7Q2K9XW4'}/B{'0LZ3M8N6PV'}/", lambda r: _r(r, ALNUM, 24), ""
    ),
    "stripe-secret-key": _plain(lambda r: "sk_live_" + _r(r, ALNUM, 99)),
    "stripe-restricted-key": _plain(lambda r: "rk_test_" + _r(r, ALNUM, 24)),
    "stripe-webhook-secret": _plain(lambda r: "whsec_" + _r(r, ALNUM, 32)),
    "github-pat": _plain(lambda r: "ghp_" + _r(r, ALNUM, 36)),
    "github-fine-grained": _plain(lambda r: "github_pat_" + _r(r, ALNUM + "_", 82)),
    "gitlab-pat": _plain(lambda r: "glpat-" + _r(r, B64URL, 20)),
    "npm-token": _plain(lambda r: "npm_" + _r(r, ALNUM, 36)),
    "pypi-token": _plain(lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, B64URL, 70)),
    "openai-key": _plain(lambda r: "sk-proj-" + _r(r, B64URL, 48)),
    "anthropic-key": _plain(lambda r: "sk-ant-api03-" + _r(r, B64URL, 93) + "AA"),
    "sendgrid-key": _plain(lambda r: f"SG.{_r(r, B64URL, 22)}.{_r(r, B64URL, 43)}"),
    "huggingface-token": _plain(lambda r: "hf_" + _r(r, UPPER + LOWER, 34)),
    "digitalocean-token": _plain(lambda r: "dop_v1_" + _r(r, HEX, 64)),
    "databricks-token": _plain(lambda r: "dapi" + _r(r, HEX, 32)),
    "shopify-token": _plain(lambda r: "shpat_" + _r(r, HEX, 32)),
    "mailgun-key": _plain(lambda r: "key-" + _r(r, LOWER + DIGITS, 32)),
    "telegram-bot-token": _plain(lambda r: f"{_r(r, DIGITS, 10)}:AA{_r(r, B64URL, 33)}"),
    "vault-token": _plain(lambda r: "hvs." + _r(r, B64URL, 90)),
    "doppler-token": _plain(lambda r: "dp.pt." + _r(r, ALNUM, 43)),
    "linear-key": _plain(lambda r: "lin_api_" + _r(r, ALNUM, 40)),
    "postman-key": _plain(lambda r: f"PMAK-{_r(r, HEX, 24)}-{_r(r, HEX, 34)}"),
    "age-secret-key": _plain(lambda r: "AGE-SECRET-KEY-1" + _r(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    "square-token": _plain(lambda r: "sq0atp-" + _r(r, B64URL, 22)),
    "jwt": _plain(_jwt),
    "pem-private-key": _plain(_pem),
    "bearer-header": _assigned("Authorization: Bearer", lambda r: _r(r, B64URL, 40), " "),
    "url-postgres": _url("postgres", "admin"),
    "url-mongodb-srv": _url("mongodb+srv", "app_user"),
    "url-https-token": _url("https", "x-access-token"),
    "url-redis-no-user": _url("redis", ""),
    "password-env": _assigned("DB_PASSWORD", _password),
    "password-yaml": _assigned("password", _password, ": "),
    "password-camel": _assigned("dbPassword", _password, "="),
    "password-cli-flag": _assigned("--password", _password),
    "client-secret-json": _assigned('"clientSecret"', _password, ": "),
    "api-key-header": _assigned("X-Api-Key", lambda r: _r(r, ALNUM, 32), ": "),
    "random-base62-32": _plain(lambda r: _r(r, ALNUM, 32)),
    "random-base64-40": _plain(lambda r: _r(r, B64, 40)),
    "random-lower-base36-32": _plain(lambda r: _r(r, LOWER + DIGITS, 32)),
    "random-upper-base36-32": _plain(lambda r: _r(r, UPPER + DIGITS, 32)),
    "random-base32-32": _plain(lambda r: _r(r, BASE32, 32)),
}

# how a secret appears in what an agent stores
CONTEXTS: dict[str, Callable[[str], str]] = {
    "prose": lambda s: f"Deploy with {s} and then run the tests.",
    "log": lambda s: f"2026-12-01T10:00:00Z INFO using {s}, retrying",
    "json": lambda s: json.dumps({"config": {"note": s, "region": "eu-west-1"}}),
    "json-looking": lambda s: '{"config": {"note": "' + s + '", truncated',
}


def _samples() -> list[tuple[str, str, str, str]]:
    rng = random.Random(RNG_SEED)
    out = []
    for name, gen in FORMATS.items():
        for _ in range(SAMPLES_PER_FORMAT):
            whole, core = gen(rng)
            for context, wrap in CONTEXTS.items():
                out.append((name, context, wrap(whole), core))
    return out


def _survives(core: str, redacted: str) -> bool:
    """Whether any 8-character piece of the secret is still in the output (a partial leak counts as a miss)."""
    if len(core) <= 8:
        return core in redacted
    return any(core[i : i + 8] in redacted for i in range(len(core) - 7))


def _recall(samples: list[tuple[str, str, str, str]]) -> tuple[float, list[tuple[str, str, str]]]:
    missed = [(name, context, text) for name, context, text, core in samples if _survives(core, redact(text).text)]
    return 1 - len(missed) / len(samples), missed


def test_recall_on_synthetic_secret_formats_is_complete() -> None:
    samples = [s for s in _samples() if not s[0].startswith(RANDOM)]
    recall, missed = _recall(samples)
    formats = len([f for f in FORMATS if not f.startswith(RANDOM)])
    print(f"recall {recall:.4%} on {len(samples)} samples ({formats} formats x {len(CONTEXTS)} contexts)")
    assert missed == [], (f"recall {recall:.4%}", missed[:10])


def test_recall_on_bare_random_tokens() -> None:
    """Tokens with no prefix and no key: only their shape gives them away (a heuristic, see ``_entropy``)."""
    samples = [s for s in _samples() if s[0].startswith(RANDOM)]
    recall, missed = _recall(samples)
    print(f"random-token recall {recall:.4%} on {len(samples)} samples")
    assert recall >= MIN_RANDOM_RECALL, (f"recall {recall:.4%}", missed[:10])


def test_each_sample_really_holds_its_secret() -> None:  # the control: a miss would be visible
    for _name, _context, text, core in _samples()[::SAMPLES_PER_FORMAT]:
        assert _survives(core, text)


def _benign() -> list[str]:
    rng = random.Random(RNG_SEED)
    import hashlib

    texts = [
        str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper(),
        hashlib.sha256(b"x").hexdigest(),
        hashlib.sha1(b"x").hexdigest(),
        hashlib.md5(b"x").hexdigest(),
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 and 3f2a9c1",
        "sha512-" + "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "01j9x2m8q7w1z5v4b6n0p2r8tk",
        "/home/alice/projects/intent-loop/src/intentloop/model/redaction.py",
        "/usr/lib/python3.11/site-packages/msgspec/_core.cpython-311-x86_64-linux-gnu.so",
        "C:\\Users\\Alice\\AppData\\Local\\Programs\\Python\\Python311\\python.exe",
        "tests/unit/model/test_redaction_secrets.py::test_recall_on_synthetic_secret_formats_is_complete",
        "validate_request_id_and_signal_key_together",
        "SCREAMING_SNAKE_CASE_CONSTANT_WITH_VERSION_2",
        "getUserAccountSettingsForAdministrator2",
        "HTTPSConnectionPoolManagerV2Adapter",
        "my-deployment-name-with-many-words-2024-11",
        "Base64EncodedWordsLikeThisAreOrdinaryNames",
        "https://github.com/example/intent-loop/blob/main/src/service.ts#L120",
        "https://user@example.com/path is a URL with a user but no password",
        "https://example.com:8443/api/v2/items?page=3&sort=desc",
        "postgres://db.example.com:5432/app",
        "python:3.11-slim-bookworm, node:20.11.1-alpine3.19, v2.14.0-rc.1, 1.2.3+build.45",
        "x86_64-unknown-linux-gnu toolchain with utf8mb4_unicode_ci collation",
        "The password policy needs 12 characters; rotate the api key yearly.",
        "Set max_tokens = 4096 and token_budget: 2000 for the session.",
        "keyboard-layout-us-intl and key-value-store-v2 are names",
        "arn:aws:iam::123456789012:role/MyRoleName-ServiceAccess2024",
        "i-0abcd1234efgh5678 and sg-0123456789abcdef0 are AWS resource ids",
        "docker.io/library/postgres:16.2@sha256:" + hashlib.sha256(b"pg").hexdigest(),
        "AKIA is the prefix of an AWS access key id; sk- of an OpenAI key.",
        "¡Olá! Überprüfe /tmp/größe.txt — 漢字 stay.",
        # the identifier corpus beside credential-named keys (the generic rule judges values, these stay)
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-credentials-AbCdEf",
        "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "session_id: 550e8400-e29b-41d4-a716-446655440000, request key 01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "the cache key "
        + hashlib.sha256(b"k").hexdigest()
        + " and commit key 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "token_version: 2.14.0-rc.1+build.45, auth_module: v3.2.1",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "secret_manager_client_factory_for_tests: build_authenticated_session_with_retry_policy",
        "private_key_path: ~/.ssh/id_ed25519, session_dir: /var/lib/app/sessions",
        "auth: https://login.example.com/oauth2/v2.0/authorize?client_id=app",
    ]
    return texts


@pytest.mark.parametrize("text", _benign())
def test_ordinary_text_survives_intact(text: str) -> None:
    result = redact(text)
    assert (result.text, result.count) == (text, 0)


@pytest.mark.parametrize(
    "secret_id",
    [
        "xK9mP2qR7vL4nT8wZ3bY6cF1hJ5",  # random base62
        "k3j9x2m8q7w1z5v4b6n0p2r8tq",  # random single-case base36
        "req:ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "AKIAIOSFODNN7EXAMPLE",
    ],
)
def test_secret_looking_ids_are_rejected(secret_id: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_request_id(secret_id)
    assert info.value.code == "SENSITIVE_ID_REJECTED"
    with pytest.raises(InvalidInputError) as info:
        validate_source_ref({"kind": "user_event", "event_id": secret_id})
    assert info.value.code == "SENSITIVE_ID_REJECTED"
    with pytest.raises(InvalidInputError) as info:
        validate_signal_key(secret_id, "statement")
    assert info.value.code == "SENSITIVE_ID_REJECTED"
    assert not is_opaque_id(secret_id)  # a hook turn id like this is not used (the keyed digest is)


@pytest.mark.parametrize(
    "ordinary_id",
    [
        "req-1",
        "550e8400-e29b-41d4-a716-446655440000",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "turn:2026-12-01T10:00:00Z@host_1.a",
        "start:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "preference.use_postgres_only",
    ],
)
def test_ordinary_ids_are_accepted(ordinary_id: str) -> None:  # the positive control of the rejection above
    assert validate_request_id(ordinary_id) == ordinary_id
    assert validate_source_ref({"kind": "user_event", "event_id": ordinary_id}).event_id == ordinary_id
    assert validate_signal_key(ordinary_id, "statement") == ordinary_id
    assert is_opaque_id(ordinary_id)
