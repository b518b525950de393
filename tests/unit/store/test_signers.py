"""Who may write (``intentloop/store/_signers.py``): ``allowed_signers`` in git's format and ``revoked_signers``.

Every rule has its refused line beside a line that counts (the positive control); ``ssh-keygen -Y verify`` reads the
same file, so the format is git's and not a look-alike.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from intentloop.store._share import TrustedKey
from intentloop.store._signers import (
    MAX_FILE,
    MAX_LINE,
    Signer,
    allowed_signers_line,
    in_window,
    parse_allowed_signers,
    read_team,
    team_trust,
)
from intentloop.store._signing import SigningKey
from intentloop.store._stream import openssh_public_key

A = SigningKey(b"\x01" * 32)
B = SigningKey(b"\x02" * 32)
C = SigningKey(b"\x03" * 32)
PUB_A = openssh_public_key(A.public_hex)
PUB_B = openssh_public_key(B.public_hex)
PUB_C = openssh_public_key(C.public_hex)
RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7"


def _parse(text: str) -> tuple[list[Signer], list[tuple[int, str]]]:
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)]
    lines = [(n, line) for n, line in lines if line and not line.startswith("#")]
    signers, problems = parse_allowed_signers(lines)
    return signers, [(p.line, p.why) for p in problems]


def _project(tmp_path: Path, allowed: str | bytes | None = None, revoked: str | None = None) -> str:
    folder = tmp_path / "project" / ".intentloop"
    folder.mkdir(parents=True, exist_ok=True)
    if allowed is not None:
        data = allowed.encode() if isinstance(allowed, str) else allowed
        (folder / "allowed_signers").write_bytes(data)
    if revoked is not None:
        (folder / "revoked_signers").write_text(revoked)
    return str(folder.parent)


def test_a_line_with_the_intentloop_namespace_counts_with_its_principal_and_key() -> None:
    signers, problems = _parse(f'alice@example.org namespaces="intentloop" {PUB_A} alice laptop')
    assert problems == []
    assert [(s.principal, s.key_id, s.public_key, s.admin, s.line) for s in signers] == [
        ("alice@example.org", A.key_id, PUB_A, False, 1)
    ]


def test_only_lines_naming_the_intentloop_namespace_count_and_others_are_left_alone() -> None:
    text = "\n".join(
        [
            "# git's commit signing keys live here too",
            f"alice@example.org {PUB_A}",  # no namespaces: git's, not ours
            f'bob@example.org namespaces="git,file" {PUB_B}',
            f'carol@example.org namespaces="git,intentloop" {PUB_C}',
            f'dave@example.org namespaces="git" {RSA}',  # another key type on a git line: not our business
            "",
        ]
    )
    signers, problems = _parse(text)
    assert problems == []
    assert [s.principal for s in signers] == ["carol@example.org"]


def test_intentloop_admin_makes_an_admin_only_beside_intentloop() -> None:
    text = "\n".join(
        [
            f'alice@example.org namespaces="intentloop,intentloop-admin" {PUB_A}',
            f'bob@example.org namespaces="intentloop-admin" {PUB_B}',  # admin alone: not a writer
            f'carol@example.org namespaces="intentloop" {PUB_C}',
        ]
    )
    signers, problems = _parse(text)
    assert problems == [(2, "intentloop-admin without intentloop: this key may not write")]
    assert [(s.principal, s.admin) for s in signers] == [("alice@example.org", True), ("carol@example.org", False)]


def test_quoting_and_option_spelling_are_read_as_ssh_keygen_reads_them() -> None:
    text = "\n".join(
        [
            f'"alice@example.org" NameSpaces="intentloop,git",Valid-After="20250101" {PUB_A}',
            f'carol@example.org valid-before="20300101Z",namespaces="git,intentloop" {PUB_C} carol\'s "old laptop',
        ]
    )
    signers, problems = _parse(text)
    assert problems == []
    assert [(s.principal, s.valid_after, s.valid_before) for s in signers] == [
        ("alice@example.org", "2025-01-01T00:00:00Z", None),
        ("carol@example.org", None, "2030-01-01T00:00:00Z"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("20250102", "2025-01-02T00:00:00Z"),
        ("202501021304", "2025-01-02T13:04:00Z"),
        ("20250102130405", "2025-01-02T13:04:05Z"),
        ("20250102130405Z", "2025-01-02T13:04:05Z"),
    ],
)
def test_window_times_in_every_length_are_utc(value: str, expected: str) -> None:
    signers, problems = _parse(f'a@x namespaces="intentloop",valid-after="{value}",valid-before="20991231Z" {PUB_A}')
    assert problems == []
    assert (signers[0].valid_after, signers[0].valid_before) == (expected, "2099-12-31T00:00:00Z")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (f'a@x namespaces="intentloop",valid-after="2025" {PUB_A}', "valid-after is not YYYYMMDD[HHMM[SS]][Z]"),
        (f'a@x namespaces="intentloop",valid-before="20251301" {PUB_A}', "valid-before is not a real time"),
        (f'a@x namespaces="intentloop",,valid-before="1" {PUB_A}', "an empty option"),
        (
            f'a@x namespaces="intentloop",valid-after="20260101",valid-before="20250101" {PUB_A}',
            "valid-before is earlier than valid-after",
        ),
        (f'a@x namespaces="intentloop",cert-authority {PUB_A}', "certificate authorities are not supported"),
        (f'a@x,b@x namespaces="intentloop" {PUB_A}', "name exactly one principal"),
        (f'*@x namespaces="intentloop" {PUB_A}', "a principal pattern is not a principal"),
        (f'a@x namespaces="intentloop" {RSA}', "only ssh-ed25519 keys sign intentloop streams, not ssh-rsa"),
        ('a@x namespaces="intentloop" ssh-ed25519 AAAAnot-base64', "the ssh-ed25519 key does not decode"),
        (f'a@x namespaces="intentloop",verify-required {PUB_A}', "unknown option verify-required"),
        (f'a@x namespaces="intentloop",namespaces="git" {PUB_A}', "option namespaces is given twice"),
        (f'a@x namespaces="intentloop {PUB_A}', "a quote is not closed"),
        (f"a@x namespaces {PUB_A}", "namespaces needs a value"),
        (f"a@x namespaces=intentloop {PUB_A}", "option namespaces needs a double-quoted value"),
        (f'a@x valid-before=20300101,namespaces="intentloop" {PUB_A}', "option valid-before needs a double-quoted"),
        (f'a@x namespaces="intentloop" "x" {PUB_A}', "no key type"),
        (f'a@x namespaces="git, intentloop" {PUB_A}', "a namespace has blanks around it"),
        ('a@x namespaces="intentloop"', "expected: principals [options] keytype base64 [comment]"),
        ('a@x namespaces="intentloop" not-a-key AAAA', "no key type"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_never_trusted_while_the_others_count(line: str, why: str) -> None:
    text = f'good@x namespaces="intentloop" {PUB_B}\n{line}\nalso@x namespaces="intentloop" {PUB_C}\n'
    signers, problems = _parse(text)
    assert [s.principal for s in signers] == ["good@x", "also@x"]  # the positive controls around it
    assert len(problems) == 1 and problems[0][0] == 2 and problems[0][1].startswith(why), problems


def test_a_key_listed_twice_counts_once_on_its_first_line() -> None:
    text = f'a@x namespaces="intentloop" {PUB_A}\nb@x namespaces="intentloop,intentloop-admin" {PUB_A}\n'
    signers, problems = _parse(text)
    assert [(s.principal, s.admin) for s in signers] == [("a@x", False)]
    assert problems == [(2, "this key is already listed on line 1 (that line counts)")]


def test_the_files_are_read_from_the_checkout_with_comments_blank_lines_and_size_caps(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        f'# team\n\n  a@x namespaces="intentloop" {PUB_A}  \r\n{"#" * (MAX_LINE + 1)}\nb@x namespaces="intentloop" '
        f"{PUB_B}\n".encode()
        + b"\xff\n",
    )
    team = read_team(root)
    assert [s.principal for s in team.signers] == ["a@x", "b@x"]
    assert [(p.file, p.line, p.why) for p in team.problems] == [
        ("allowed_signers", 4, f"longer than {MAX_LINE} bytes"),
        ("allowed_signers", 6, "not UTF-8"),
    ]
    large = f'a@x namespaces="intentloop" {PUB_A}\n'.encode()
    root = _project(tmp_path, large + b"#" * (MAX_FILE - len(large)))  # exactly the cap: read
    assert [s.principal for s in read_team(root).signers] == ["a@x"]
    root = _project(tmp_path, large + b"#" * (MAX_FILE - len(large) + 1))  # one byte more: nothing counts
    team = read_team(root)
    assert team.signers == [] and [(p.line, p.why) for p in team.problems] == [
        (0, f"larger than {MAX_FILE} bytes: no line of it counts")
    ]
    assert (
        read_team(str(tmp_path))
        == read_team(str(tmp_path / "nowhere"))
        == team.__class__(signers=[], revoked={}, problems=[])
    )


def test_a_symlinked_or_unreadable_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    root = _project(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.write_text(f'a@x namespaces="intentloop" {PUB_A}\n')
    (Path(root) / ".intentloop" / "allowed_signers").symlink_to(outside)
    team = read_team(root)
    assert team.signers == [] and [(p.line, p.why.split(" (")[0]) for p in team.problems] == [
        (0, "a symbolic link: only a regular file counts")
    ]
    (Path(root) / ".intentloop" / "allowed_signers").unlink()
    (Path(root) / ".intentloop" / "allowed_signers").mkdir()
    assert [(p.line, p.why) for p in read_team(root).problems] == [(0, "not a regular file")]
    (Path(root) / ".intentloop" / "allowed_signers").rmdir()
    os.mkfifo(Path(root) / ".intentloop" / "allowed_signers")  # nobody writes to it: reading must not wait
    assert [(p.line, p.why) for p in read_team(root).problems] == [(0, "not a regular file")]
    (Path(root) / ".intentloop" / "allowed_signers").unlink()
    (Path(root) / ".intentloop" / "allowed_signers").write_text(outside.read_text())  # the control: a real file
    assert [s.principal for s in read_team(root).signers] == ["a@x"]


def test_revoked_keys_are_left_out_of_trust_whatever_their_source(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        f'a@x namespaces="intentloop" {PUB_A}\nb@x namespaces="intentloop" {PUB_B}\n',
        f"# compromised laptop\n{PUB_B} bob's old laptop\nnot a key\n",
    )
    local = [TrustedKey(key_id=C.key_id, public_key=PUB_C, principal="c@x")]
    team = read_team(root)
    assert team.revoked == {B.key_id: PUB_B}
    assert [(p.file, p.line, p.why) for p in team.problems] == [("revoked_signers", 3, "not an ssh-ed25519 public key")]
    trusted, _problems = team_trust(root, local)
    assert set(trusted) == {A.key_id, C.key_id}  # the positive controls: a listed key and a local one
    revoked_local = [TrustedKey(key_id=B.key_id, public_key=PUB_B, principal="b@x")]
    assert B.key_id not in team_trust(root, revoked_local)[0]


def test_the_files_principal_wins_over_a_local_one_and_the_difference_is_reported(tmp_path: Path) -> None:
    root = _project(tmp_path, f'\na@x namespaces="intentloop,intentloop-admin",valid-before="20300101" {PUB_A}\n')
    local = [
        TrustedKey(key_id=A.key_id, public_key=PUB_A, principal="mallory@x"),
        TrustedKey(key_id=C.key_id, public_key=PUB_C, principal="c@x", admin=True),  # local trust never admins
    ]
    trusted, problems = team_trust(root, local)
    assert trusted[A.key_id] == TrustedKey(
        key_id=A.key_id,
        public_key=PUB_A,
        principal="a@x",
        admin=True,
        valid_before="2030-01-01T00:00:00Z",
        source="allowed_signers",
    )
    assert (trusted[C.key_id].source, trusted[C.key_id].admin) == ("local", False)
    assert [(p.line, p.why) for p in problems] == [
        (2, "trusted here as mallory@x but listed as a@x: the file's principal labels its claims")
    ]
    same = [TrustedKey(key_id=A.key_id, public_key=PUB_A, principal="a@x")]
    assert team_trust(root, same)[1] == []  # the same principal in both: nothing to report


def test_a_window_counts_dated_records_inside_its_bounds_only() -> None:
    open_key = TrustedKey(key_id="k", public_key="p", principal="a@x")
    assert in_window(None, open_key) and in_window("2020-01-01T00:00:00Z", open_key)
    windowed = TrustedKey(
        key_id="k",
        public_key="p",
        principal="a@x",
        valid_after="2025-01-01T00:00:00Z",
        valid_before="2025-06-01T00:00:00Z",
    )
    assert in_window("2025-01-01T00:00:00Z", windowed) and in_window("2025-06-01T00:00:00Z", windowed)
    assert not in_window("2024-12-31T23:59:59Z", windowed)
    assert not in_window("2025-06-01T00:00:01Z", windowed)
    assert not in_window(None, windowed)


def test_the_printed_line_parses_back_to_the_same_key() -> None:
    line = allowed_signers_line("alice@example.org", PUB_A)
    assert line == f'alice@example.org namespaces="intentloop" {PUB_A}'
    signers, problems = _parse(line)
    assert problems == [] and signers[0].key_id == A.key_id
    signers, problems = _parse(allowed_signers_line(None, PUB_A))  # no principal yet: must be edited first
    assert signers == [] and problems and problems[0][1].startswith("no key type")


def test_ssh_keygen_reads_the_same_file_the_same_way(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.from_private_bytes(b"\x01" * 32)
    key_file = tmp_path / "id_ed25519"
    key_file.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    key_file.chmod(0o600)
    message = tmp_path / "message"
    message.write_text("checkpoint")
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-n", "intentloop", "-f", str(key_file), str(message)],
        check=True,
        capture_output=True,
    )
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'"alice@example.org" NameSpaces="git,intentloop",valid-after="20200101" {PUB_A} laptop\n')

    def verifies(principal: str, namespace: str) -> bool:
        done = subprocess.run(
            [
                "ssh-keygen",
                "-Y",
                "verify",
                "-f",
                str(allowed),
                "-I",
                principal,
                "-n",
                namespace,
                "-s",
                f"{message}.sig",
            ],
            input=message.read_bytes(),
            capture_output=True,
        )
        return done.returncode == 0

    assert verifies("alice@example.org", "intentloop")
    assert not verifies("alice@example.org", "other")  # the control: ssh-keygen reads the namespaces as we do
    signers, problems = _parse(allowed.read_text())
    assert problems == [] and [(s.principal, s.key_id) for s in signers] == [("alice@example.org", A.key_id)]
