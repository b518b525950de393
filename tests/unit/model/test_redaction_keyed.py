"""intentloop's own generic rules: values under any credential-named key, short ``Basic``
headers and short passwords in prose go; ordinary words, identifiers, numbers, versions, paths, URLs and ARNs under
the same keys stay (docs/REDACTION.md, "Generic rules")."""

from __future__ import annotations

import pytest

from intentloop.model import redact

# built at run time (fake values in documented shapes), so no scanner mistakes this file for a leak
HEX32 = "9f8e7d6c5b4a3928" + "1706f5e4d3c2b1a0"
AWS_DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"

# (text, the secret part that must not survive)
SECRETS = [
    ("DB_PASS=s3cr3tpw", "s3cr3tpw"),
    ("export PGPASSWORD=hunter2x && psql -h db", "hunter2x"),
    ("MYSQL_PWD=Xy7!pass mysql -u root", "Xy7!pass"),
    ("pwd: Tr0ub4dor", "Tr0ub4dor"),
    ('token = "a1b2c3d4e5f6a7b8"', "a1b2c3d4e5f6a7b8"),
    (f"aws_secret_access_key {AWS_DOC_SECRET}", AWS_DOC_SECRET),
    (f"TWILIO_AUTH_TOKEN={HEX32}", HEX32),
    (f"twilio_token: {HEX32}", HEX32),
    (f"PULUMI_ACCESS_TOKEN=pul-{HEX32}", HEX32),
    (f"CF_API_KEY={HEX32[:-5]}", HEX32[:-5]),
    (f"mailchimp_key={HEX32}-us6", HEX32),
    (f"ALGOLIA_ADMIN_KEY={HEX32}", HEX32),
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("curl -H 'Authorization: basic YTpi' https://example.com", "YTpi"),
    ("the password is hunter2x.", "hunter2x"),
    ("run it with --password hunter2x please", "hunter2x"),
    ("X-Auth-Token: 3f9a8b7c6d5e", "3f9a8b7c6d5e"),
    ("SESSION_COOKIE=abc123def456", "abc123def456"),
    ("clientCredentials: Zx9Qw8Er7", "Zx9Qw8Er7"),
    ('[db]\npassword = "pa55word"', "pa55word"),
    ("redis_auth: r3d1s-P4ss", "r3d1s-P4ss"),
    ("HEROKU_API_KEY=01234567-89ab-4def-8123-456789abcdef", "456789abcdef"),
    (f"export dd-apikey-{HEX32} now", HEX32),
    ("vendorSECRET-7c1e2d3a-9b8f-4e6d-a5c4-3b2a1f0e9d8c.", "3b2a1f0e9d8c"),
    ("-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmU -----END OPENSSH PRIVATE KEY-----", "b3Blbn"),
]

# under the same key words, values that are words, identifiers, numbers, versions, paths, URLs, references
ORDINARY = [
    "fix(auth): refresh the session token before it expires",
    "Set max_tokens = 4096 and token_budget: 2000 for the session.",
    "The password policy needs 12 characters; rotate the api key yearly.",
    "sort_key: created_at, primary_key: user_id2, cache_key: user_123",
    "session_id: 550e8400-e29b-41d4-a716-446655440000",
    "the private key id_rsa.pub lives in ~/.ssh",
    "token: <your-token>, x_token: ${TOKEN}, session: %(session)s",
    "Basic authentication is off; basic auth stays disabled",
    "keyboard-layout: us-intl and key-value-store-v2",
    "secret_key_base: getUserAccountSettings",
    "signing key v2.14.0-rc.1 and session 1.2.3+build.45",
    "auth_url: https://auth.example.com/v1/token",
    "key_file: /etc/ssl/private/server.pem and secret_path: C:\\Users\\alice\\secrets.txt",
    "The session key was rotated yesterday at 10:00",
    "role_arn: arn:aws:iam::123456789012:role/deploy, db_key: arn:aws:kms:us-east-1:123456789012:key/1234abcd",
    "private: true, session: false, cookie: none",
    "DB_PASS=letmein is an ordinary word, stored as written",
    "api_key_header: X-Api-Key",
    "token 2000, key 0x1F, auth 42",
    "secret_manager_client_factory_for_tests and api-key-rotation-schedule-2024",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_the_own_rules_redact_values_under_credential_keys(text: str, secret: str) -> None:
    assert secret in text  # the control: the sample holds its secret
    result = redact(text)
    assert secret not in result.text and result.count >= 1, result


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_values_under_the_same_keys_stay(text: str) -> None:
    assert redact(text).text == text


def test_the_key_and_the_sentence_around_a_redacted_value_stay() -> None:
    assert redact("the password is hunter2x.").text == "the password is [REDACTED:credential]."
    assert redact("DB_PASS=s3cr3tpw psql").text == "DB_PASS=[REDACTED:credential] psql"
    assert redact("Authorization: Basic dXNlcjpwYXNz").text == ("Authorization: Basic [REDACTED:credential]")


def test_redacting_twice_changes_nothing() -> None:
    for text, _secret in SECRETS:
        once = redact(text).text
        assert redact(once).text == once


def test_json_values_under_credential_keys_go_when_they_look_secret() -> None:
    text = '{"db": {"pwd": "Tr0ub4dor", "pwd_hint": "Tr0ub4dor", "session": "false", "sort_key": "created_at"}}'
    out = redact(text).text
    assert out == (
        '{"db":{"pwd":"[REDACTED:credential]","pwd_hint":"Tr0ub4dor","session":"false","sort_key":"created_at"}}'
    )


def test_a_key_word_joined_to_separated_words_is_a_name() -> None:
    """A property test found ``token_append_appendUtf8`` redacted as a joined secret: a tail of separated words is a
    name; a hex tail (the control) is the secret."""
    for name in ("token_append_appendUtf8", "/src/token_append_appendV3.py", "key-rotation-schedule-weekly"):
        assert redact(f"rename {name} now").text == f"rename {name} now"
    hex_tail = "dd-apikey-" + "3f9a" * 8
    assert redact(f"use {hex_tail} here").text == "use dd-apikey-[REDACTED:credential] here"


def test_a_weak_key_word_followed_by_a_space_is_prose() -> None:
    """``Initial private constraint`` lost its word to the generic rule (four consonants read as random): after
    ``key``, ``auth``, ``private``, ``session`` or ``cookie`` only an assignment makes a value suspect."""
    for text in ("Initial private constraint abc", "the session cookie expired", "key rotation schedule weekly"):
        assert redact(text).text == text
    assert redact("private_key: Xy7aB9qLmN2pQr").text == "[REDACTED:credential]"  # control: assigned
    assert redact("the password hunter2x leaked").text == "the password [REDACTED:credential] leaked"  # strong word
