"""Who may write to a shared project: ``.intentloop/allowed_signers`` and ``.intentloop/revoked_signers``.

``allowed_signers`` is git's own format (``ssh-keygen(1)``, ALLOWED SIGNERS): one ``principals [options] keytype
base64 [comment]`` a line, options ``namespaces="…"``, ``valid-after=…``, ``valid-before=…`` (``YYYYMMDD[HHMM[SS]][Z]``)
and ``cert-authority``. A line counts for intentloop only when its namespaces name ``intentloop``
(``intentloop-admin`` as well makes its principal a project admin), it names exactly one principal and an
``ssh-ed25519`` key; lines for other namespaces (git's commit signing) are left alone, and a line that cannot be
read or is meant for intentloop but breaks a rule is reported with its number and why, never trusted — the other
lines still count. ``revoked_signers`` holds one public key a line: a revoked key's whole stream is set aside.

Why from the checkout: both files are read from the project's working tree as it is now, committed and reviewed like
code, so who may write is decided by the project's own history, not by a setting on one machine; anyone who can
commit to the file can add keys, which is what code review is for (docs/SYNC.md, "Teams: who may write").
Times are read as UTC whether or not they end in ``Z`` (one file means the same on every member's machine).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from intentloop.errors import InvalidInputError
from intentloop.store._share import TrustedKey, check_principal
from intentloop.store._stream import key_id_of, openssh_public_key, parse_openssh_public_key

ALLOWED_FILE: Final = (".intentloop", "allowed_signers")
REVOKED_FILE: Final = (".intentloop", "revoked_signers")
NAMESPACE: Final = "intentloop"
ADMIN_NAMESPACE: Final = "intentloop-admin"
MAX_FILE: Final = 1 << 20
MAX_LINE: Final = 8 << 10
_WORD_RE: Final = re.compile(r'[ \t]*((?:"[^"]*"|[^ \t"])+)')
_TIME_RE: Final = re.compile(r"^(\d{8})(\d{4}(\d{2})?)?(Z)?\Z", re.IGNORECASE)
#: key types git and ssh-keygen know: a word that is one of them starts the key, anything before it is options
_KEY_TYPE_RE: Final = re.compile(
    r"^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-\S+|sk-\S+@openssh\.com|\S+-cert-v01@openssh\.com)\Z"
)


class Signer(msgspec.Struct, frozen=True, kw_only=True):
    """One counted line of ``allowed_signers``: a principal's key, whether it is an admin, and its window (UTC
    ``YYYY-MM-DDTHH:MM:SSZ``)."""

    principal: str
    key_id: str
    public_key: str
    admin: bool = False
    valid_after: str | None = None
    valid_before: str | None = None
    line: int = 0


class SignerProblem(msgspec.Struct, frozen=True, kw_only=True):
    """A line (``0``: the whole file) of ``file`` that is not trusted, and why."""

    file: str
    line: int
    why: str


class Team(msgspec.Struct, frozen=True, kw_only=True):
    """What the project's checkout says about who may write: the counted signers, the revoked keys (key id → its
    ``ssh-ed25519`` text) and the problems found."""

    signers: list[Signer]
    revoked: dict[str, str]
    problems: list[SignerProblem]


class _LineError(Exception):
    pass


def allowed_signers_path(project_root: str) -> Path:
    return Path(project_root, *ALLOWED_FILE)


def revoked_signers_path(project_root: str) -> Path:
    return Path(project_root, *REVOKED_FILE)


def _read_lines(path: Path, name: str, problems: list[SignerProblem]) -> list[tuple[int, str]]:
    """The numbered lines of ``path`` (none when it is missing); a file above :data:`MAX_FILE`, unreadable or not a
    regular file is one problem and gives no line; a line above :data:`MAX_LINE` or not UTF-8 is one problem."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))  # a FIFO put there must not block a sync
    except FileNotFoundError:
        return []
    except OSError as exc:
        why = "a symbolic link: only a regular file counts" if exc.errno == errno.ELOOP else "unreadable"
        problems.append(SignerProblem(file=name, line=0, why=f"{why} ({exc.strerror or exc})"))
        return []
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        chunks: list[bytes] = []
        size = 0
        while regular and size <= MAX_FILE:
            chunk = os.read(fd, MAX_FILE + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        problems.append(SignerProblem(file=name, line=0, why=f"unreadable ({exc.strerror or exc})"))
        return []
    finally:
        os.close(fd)
    if not regular:
        problems.append(SignerProblem(file=name, line=0, why="not a regular file"))
        return []
    data = b"".join(chunks)
    if len(data) > MAX_FILE:
        problems.append(SignerProblem(file=name, line=0, why=f"larger than {MAX_FILE} bytes: no line of it counts"))
        return []
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > MAX_LINE:
            problems.append(SignerProblem(file=name, line=number, why=f"longer than {MAX_LINE} bytes"))
            continue
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            problems.append(SignerProblem(file=name, line=number, why="not UTF-8"))
            continue
        text = text.strip()
        if text and not text.startswith("#"):
            lines.append((number, text))
    return lines


def _words(text: str, limit: int = 4) -> list[str]:
    """The first ``limit`` words, split at unquoted blanks with their quotes kept (``namespaces="a, b"`` is one word);
    what follows (the key's comment) is never read, so it may hold anything."""
    words: list[str] = []
    at = 0
    while len(words) < limit:
        match = _WORD_RE.match(text, at)
        if match is None:
            if text[at:].strip(" \t"):
                raise _LineError("a quote is not closed")
            break
        words.append(match.group(1))
        at = match.end()
    return words


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1]:
        return value[1:-1]
    raise _LineError(f"{value!r} is not one double-quoted value")


def _options(text: str) -> dict[str, str | None]:
    """``name[=value]`` options, comma-separated outside quotes; names compared without case, as ssh-keygen does."""
    found: dict[str, str | None] = {}
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    for part in parts:
        name, eq, value = part.partition("=")
        name = name.lower()
        if not name:
            raise _LineError("an empty option")
        if name in found:
            raise _LineError(f"option {name} is given twice")
        if eq and not (value.startswith('"') and value.endswith('"') and len(value) >= 2):
            raise _LineError(f"option {name} needs a double-quoted value (as ssh-keygen reads it)")
        found[name] = _unquote(value) if eq else None
    return found


def _time(value: str | None, option: str) -> str:
    """``YYYYMMDD[HHMM[SS]][Z]`` as ``YYYY-MM-DDTHH:MM:SSZ`` (read as UTC)."""
    match = _TIME_RE.match(value or "")
    if value is None or match is None:
        raise _LineError(f"{option} is not YYYYMMDD[HHMM[SS]][Z]")
    digits = value.rstrip("Zz").ljust(14, "0")
    try:
        moment = datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise _LineError(f"{option} is not a real time") from None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _signer_line(text: str, number: int) -> Signer | None:
    """The signer a line names, ``None`` when it is not meant for intentloop (no ``intentloop`` namespace).

    Raises:
        _LineError: why the line cannot be read, or breaks a rule of a line meant for intentloop.
    """
    words = _words(text)
    if len(words) < 3:
        raise _LineError("expected: principals [options] keytype base64 [comment]")
    principals = _unquote(words[0]) if words[0].startswith('"') else words[0]
    at = 1
    options: dict[str, str | None] = {}
    if not _KEY_TYPE_RE.match(words[1]):
        options = _options(words[1])
        at = 2
    if len(words) < at + 2 or not _KEY_TYPE_RE.match(words[at]):
        raise _LineError("no key type (ssh-ed25519 …) where the key should start")
    for name in options:
        if name not in ("namespaces", "valid-after", "valid-before", "cert-authority"):
            raise _LineError(f"unknown option {name}")
    if "namespaces" in options and options["namespaces"] is None:
        raise _LineError("namespaces needs a value")
    namespaces = set((options.get("namespaces") or "").split(","))
    if NAMESPACE not in namespaces:
        if any(n.strip() != n and n.strip() in (NAMESPACE, ADMIN_NAMESPACE) for n in namespaces):
            raise _LineError("a namespace has blanks around it: ssh-keygen and git read it as another namespace")
        if ADMIN_NAMESPACE in namespaces:
            raise _LineError(f"{ADMIN_NAMESPACE} without {NAMESPACE}: this key may not write")
        return None
    if "cert-authority" in options:
        raise _LineError("certificate authorities are not supported: list each member's key")
    names = [p for p in principals.split(",") if p]
    if len(names) != 1:
        raise _LineError("name exactly one principal (write one line per principal)")
    if any(ch in names[0] for ch in "*?!"):
        raise _LineError("a principal pattern is not a principal: name one email")
    try:
        principal = check_principal(names[0])
    except InvalidInputError as exc:
        raise _LineError(str(exc)) from None
    if words[at] != "ssh-ed25519":
        raise _LineError(f"only ssh-ed25519 keys sign intentloop streams, not {words[at]}")
    raw = parse_openssh_public_key(f"{words[at]} {words[at + 1]}")
    if raw is None:
        raise _LineError("the ssh-ed25519 key does not decode")
    after = _time(options["valid-after"], "valid-after") if "valid-after" in options else None
    before = _time(options["valid-before"], "valid-before") if "valid-before" in options else None
    if after is not None and before is not None and before < after:
        raise _LineError("valid-before is earlier than valid-after")
    return Signer(
        principal=principal,
        key_id=key_id_of(raw),
        public_key=openssh_public_key(raw),
        admin=ADMIN_NAMESPACE in namespaces,
        valid_after=after,
        valid_before=before,
        line=number,
    )


def parse_allowed_signers(
    lines: Iterable[tuple[int, str]], name: str = "allowed_signers"
) -> tuple[list[Signer], list[SignerProblem]]:
    """The signers of numbered ``allowed_signers`` lines and the problems: a key listed again on a later line is
    reported there and the first line counts."""
    signers: list[Signer] = []
    problems: list[SignerProblem] = []
    seen: dict[str, int] = {}
    for number, text in lines:
        try:
            signer = _signer_line(text, number)
        except _LineError as exc:
            problems.append(SignerProblem(file=name, line=number, why=str(exc)))
            continue
        if signer is None:
            continue
        if signer.key_id in seen:
            why = f"this key is already listed on line {seen[signer.key_id]} (that line counts)"
            problems.append(SignerProblem(file=name, line=number, why=why))
            continue
        seen[signer.key_id] = number
        signers.append(signer)
    return signers, problems


def parse_revoked_signers(
    lines: Iterable[tuple[int, str]], name: str = "revoked_signers"
) -> tuple[dict[str, str], list[SignerProblem]]:
    """key id → ``ssh-ed25519`` text of each revoked key (one public key a line, ``ssh-keygen``'s plain form)."""
    revoked: dict[str, str] = {}
    problems: list[SignerProblem] = []
    for number, text in lines:
        raw = parse_openssh_public_key(text)
        if raw is None:
            problems.append(SignerProblem(file=name, line=number, why="not an ssh-ed25519 public key"))
            continue
        revoked[key_id_of(raw)] = openssh_public_key(raw)
    return revoked, problems


def read_team(project_root: str) -> Team:
    """The signers and revoked keys the project's checkout at ``project_root`` lists (both files optional)."""
    problems: list[SignerProblem] = []
    lines = _read_lines(allowed_signers_path(project_root), "allowed_signers", problems)
    signers, found = parse_allowed_signers(lines)
    problems.extend(found)
    lines = _read_lines(revoked_signers_path(project_root), "revoked_signers", problems)
    revoked, found = parse_revoked_signers(lines)
    problems.extend(found)
    return Team(signers=signers, revoked=revoked, problems=problems)


def trust_from(team: Team, local_trusted: Iterable[TrustedKey]) -> tuple[dict[str, TrustedKey], list[SignerProblem]]:
    """key id → :class:`TrustedKey` of every key that may write: the team's signers (source ``allowed_signers``)
    and the keys trusted here (``share trust``, source ``local``), revoked keys left out. A key in both is the
    file's, with its principal; a different local principal is reported."""
    trusted: dict[str, TrustedKey] = {}
    problems: list[SignerProblem] = []
    for signer in team.signers:
        if signer.key_id in team.revoked:
            continue
        trusted[signer.key_id] = TrustedKey(
            key_id=signer.key_id,
            public_key=signer.public_key,
            principal=signer.principal,
            admin=signer.admin,
            valid_after=signer.valid_after,
            valid_before=signer.valid_before,
            source="allowed_signers",
        )
    lines = {s.key_id: s.line for s in team.signers}
    for key in local_trusted:
        if key.key_id in team.revoked:
            continue
        listed = trusted.get(key.key_id)
        if listed is None:
            trusted[key.key_id] = msgspec.structs.replace(key, source="local", admin=False)
        elif listed.principal != key.principal:
            why = (
                f"trusted here as {key.principal} but listed as {listed.principal}: "
                f"the file's principal labels its claims"
            )
            problems.append(SignerProblem(file="allowed_signers", line=lines[key.key_id], why=why))
    return trusted, problems


def team_trust(
    project_root: str, local_trusted: Iterable[TrustedKey]
) -> tuple[dict[str, TrustedKey], list[SignerProblem]]:
    """:func:`trust_from` over :func:`read_team` of ``project_root``, with the files' problems first."""
    team = read_team(project_root)
    trusted, problems = trust_from(team, local_trusted)
    return trusted, [*team.problems, *problems]


def allowed_signers_line(principal: str | None, public_key: str) -> str:
    """The line to paste into ``.intentloop/allowed_signers`` for ``public_key`` (``<your email>`` stands for a
    missing principal, and does not parse until it is replaced)."""
    return f'{principal or "<your email>"} namespaces="{NAMESPACE}" {public_key}'


def in_window(at: str | None, key: TrustedKey) -> bool:
    """Whether a record the writer dated ``at`` lies in ``key``'s window (bounds included, as ssh-keygen reads
    them); without a window every record does, with one a record without a date does not."""
    if key.valid_after is None and key.valid_before is None:
        return True
    if at is None:
        return False
    return (key.valid_after is None or at >= key.valid_after) and (key.valid_before is None or at <= key.valid_before)


__all__ = [
    "ADMIN_NAMESPACE",
    "ALLOWED_FILE",
    "MAX_FILE",
    "MAX_LINE",
    "NAMESPACE",
    "REVOKED_FILE",
    "Signer",
    "SignerProblem",
    "Team",
    "allowed_signers_line",
    "allowed_signers_path",
    "in_window",
    "parse_allowed_signers",
    "parse_revoked_signers",
    "read_team",
    "revoked_signers_path",
    "team_trust",
    "trust_from",
]
