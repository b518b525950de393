"""Signed heads and exports: a per-installation Ed25519 key, ``head.sig`` after every commit, export signatures.

What this protects against: another program *without the key* that rewrites the ledger (even with every hash
recomputed), truncates it, edits or deletes ``head.sig``, or edits an export: it cannot sign, so ``intentloop verify``
reports ``invalid`` and writers refuse to extend the chain (``_vouch``). What it does not protect against: anyone who
can read ``R/keys/ed25519.key`` can sign anything; and a program that deletes the key, this installation's record of
signed projects (``_signed_record``) and ``head.sig`` together leaves a ledger that reads like the original's.

Why only ``cryptography``'s Ed25519 module: it is imported lazily, only when signing or checking (8 ms in a fresh
process here, `python -X importtime`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from intentloop.model.canonical import canonical_bytes, sha256_hex
from intentloop.store._fs import replace_file
from intentloop.store._keyfile import KeyFile, load_key, load_or_create_key
from intentloop.store._paths import ProjectPaths

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from intentloop.model.events import Event

SIGNING_KEY_NAME: Final = "ed25519.key"
HEAD_SIG_NAME: Final = "head.sig"
SEED_BYTES: Final = 32
SIGNING_KEY: Final = KeyFile(SIGNING_KEY_NAME, SEED_BYTES, "the signing key")
ALGORITHM: Final = "ed25519"
HEAD_FORMAT: Final = "intentloop-head-v1"
EXPORT_FORMAT: Final = "intentloop-export-signature-v1"
#: What ``intentloop verify`` and ``intent_import`` report.
SIGNATURE_STATUSES: Final = ("valid", "invalid", "unsigned", "unknown_key")
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_MAX_SIG_FILE: Final = 8192
#: Adoptions kept in ``head.sig``; older ones are merged into the oldest kept (their count stays, their times go).
MAX_ADOPTIONS: Final = 16


class Adoption(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Events appended after the signed head by a program without the key, signed by the next write: ``events`` of
    them after position ``after`` (the events then signed), adopted at ``at`` (RFC 3339 UTC)."""

    after: int
    events: int
    at: str


class SignedHead(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A head signed beside the newest one in ``head.sig`` (the head the chain had while a commit was in flight)."""

    head_hash: str | None
    events: int
    signature: str


class HeadSignature(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """The content of ``head.sig``: the signed head of the chain, how many events it covers, by which key, the
    adoptions it carries, and (only while a commit is in flight, or after a crash during one) the previous head."""

    head_hash: str | None
    events: int
    key_id: str
    signature: str
    adopted: tuple[Adoption, ...] = ()
    prev: SignedHead | None = None
    #: HMAC-SHA-256 of the record without it, under a key derived from the signing seed: a reader holding the seed
    #: checks the record with the standard library alone (a SessionStart hook never loads ``cryptography``).
    mac: str | None = None


def _mac_key(seed: bytes) -> bytes:
    return hashlib.sha256(b"intentloop-head-mac-v1\0" + seed).digest()


def _mac_of(seed: bytes, record: HeadSignature) -> str:
    content = msgspec.to_builtins(msgspec.structs.replace(record, mac=None))
    return hmac.new(_mac_key(seed), canonical_bytes(content), hashlib.sha256).hexdigest()


def _mac_vouches(data_root: Path, record: HeadSignature) -> bool:
    """Whether ``record`` carries a MAC this installation's seed made (read with the standard library only)."""
    if record.mac is None:
        return False
    seed = load_key(data_root, SIGNING_KEY)
    return seed is not None and hmac.compare_digest(_mac_of(seed, record), record.mac)


class SigningKey:
    """This installation's Ed25519 key (loaded from its 32-byte seed)."""

    __slots__ = ("_private", "key_id", "public_hex", "seed")

    def __init__(self, seed: bytes) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self.seed = seed
        self._private: Ed25519PrivateKey = Ed25519PrivateKey.from_private_bytes(seed)
        public = self._private.public_key().public_bytes_raw()
        self.public_hex = public.hex()
        self.key_id = sha256_hex(public)

    def sign(self, message: bytes) -> str:
        return self._private.sign(message).hex()

    def verifies(self, signature_hex: str, message: bytes) -> bool:
        return verify_with(self.public_hex, signature_hex, message)


def verify_with(public_hex: str, signature_hex: str, message: bytes) -> bool:
    """Whether ``signature_hex`` is a valid Ed25519 signature of ``message`` under the raw public key ``public_hex``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex)).verify(bytes.fromhex(signature_hex), message)
    except (InvalidSignature, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------------------------------- the key
def key_path(data_root: Path) -> Path:
    return SIGNING_KEY.path(data_root)


def load_signing_key(data_root: Path) -> SigningKey | None:
    """The installation's key, ``None`` when none was created yet; lock-free, creates nothing.

    Raises:
        StorageError: ``PATH_ESCAPE`` (symlink), ``UNSAFE_DATA_FILE`` (type, owner, mode, size, links),
            ``STORAGE_READ_FAILED`` (see ``intentloop/store/_keyfile.py``).
    """
    seed = load_key(data_root, SIGNING_KEY)
    return None if seed is None else SigningKey(seed)


def load_or_create_signing_key(data_root: Path) -> SigningKey:
    """The key, created (a 32-byte seed, 0600, folder 0700) on first use, crash-safely and the same for every
    process (``intentloop/store/_keyfile.py``).

    Raises:
        StorageError: as :func:`load_signing_key`, or ``STORAGE_WRITE_FAILED``.
    """
    return SigningKey(load_or_create_key(data_root, SIGNING_KEY))


# ------------------------------------------------------------------------------------------------------- heads
def head_message(project_id: str, head_hash: str | None, events: int, adopted: Sequence[Adoption] = ()) -> bytes:
    """The signed bytes of a head: bound to the project, so a ``head.sig`` copied from another project fails; the
    adoptions are signed with it (a ``head.sig`` without any signs exactly what it signed before they existed)."""
    message: dict[str, Any] = {
        "format": HEAD_FORMAT,
        "project_id": project_id,
        "head_hash": head_hash,
        "events": events,
    }
    if adopted:
        message["adopted"] = [msgspec.to_builtins(adoption) for adoption in adopted]
    return canonical_bytes(message)


def head_sig_path(paths: ProjectPaths) -> Path:
    return paths.project_dir / HEAD_SIG_NAME


def _signed(key: SigningKey, paths: ProjectPaths, head: tuple[str | None, int], adopted: tuple[Adoption, ...]) -> Any:
    return key.sign(head_message(paths.project_id, head[0], head[1], adopted))


def write_head(
    paths: ProjectPaths,
    key: SigningKey,
    head: tuple[str | None, int],
    adopted: tuple[Adoption, ...],
    *,
    prev: tuple[str | None, int] | None = None,
    before_replace: Callable[[], None],
) -> None:
    """Write ``head.sig`` signing ``head`` (hash, events) with ``adopted``; with ``prev``, the head the chain has now
    is signed beside it (written right before a commit: until the commit is visible, and after a crash before it,
    the chain on disk is still vouched for).

    Raises:
        OSError: unchanged; whatever ``before_replace`` raises.
    """
    record = HeadSignature(
        head_hash=head[0],
        events=head[1],
        key_id=key.key_id,
        signature=_signed(key, paths, head, adopted),
        adopted=adopted,
        prev=None
        if prev is None
        else SignedHead(head_hash=prev[0], events=prev[1], signature=_signed(key, paths, prev, adopted)),
    )
    record = msgspec.structs.replace(record, mac=_mac_of(key.seed, record))
    data = canonical_bytes(msgspec.to_builtins(record)) + b"\n"
    # Not durable: the commit's own directory fsync follows (docs/BENCHMARK.md, "Measurements behind the code").
    from intentloop.store._names import head_sig_temp_name

    replace_file(head_sig_path(paths), head_sig_temp_name(), data, durable=False, before_replace=before_replace)


def read_head_signature(paths: ProjectPaths) -> HeadSignature | str | None:
    """``head.sig`` as written, ``None`` when there is none, or the text ``"invalid"`` when it is unsafe or garbled."""
    target = head_sig_path(paths)
    try:
        fd = os.open(target, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return "invalid"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > _MAX_SIG_FILE:
            return "invalid"
        data = os.read(fd, _MAX_SIG_FILE + 1)
    except OSError:
        return "invalid"
    finally:
        with contextlib.suppress(OSError):  # a failed close of a read descriptor changes nothing
            os.close(fd)
    if not data.strip(b"\0"):
        return None
    try:
        return msgspec.json.decode(data, type=HeadSignature)
    except msgspec.DecodeError:
        return "invalid"


class SignatureCheck(msgspec.Struct, frozen=True, kw_only=True):
    """``head.sig`` judged against a verified chain.

    Attributes:
        status: ``valid`` (signs exactly this chain), ``invalid`` (see ``problem``), ``unsigned`` (no ``head.sig`` on a
            project this installation never signed, or events appended after the signed head: ``signed_events`` says
            how many are covered) or ``unknown_key`` (another key, on a project this installation never signed).
        signed_events: how many events the signature covers, when it verifies.
        adopted: the adoptions the verified record carries (events appended without the key, signed later).
        problem: why it is invalid (``None`` otherwise).
        recorded: this installation recorded the project as signed (``R/keys/signed-projects``).
    """

    status: str
    signed_events: int | None = None
    adopted: tuple[Adoption, ...] = ()
    problem: str | None = None
    recorded: bool = False

    @property
    def adopted_events(self) -> int:
        return sum(adoption.events for adoption in self.adopted)


_READ: Any = object()


def head_signature_status(
    paths: ProjectPaths, events: Sequence[Event], record: HeadSignature | str | None = _READ
) -> tuple[str, int | None]:
    """``(status, signed_events)`` of ``head.sig`` against the verified ``events`` (see :func:`check_chain`).

    ``record`` is ``head.sig`` as :func:`read_head_signature` read it, when the caller read it *before* the ledger:
    a writer signs the next head beside the current one before it commits, so a ledger read after ``head.sig``
    always holds a head it signs (read the other way round, a concurrent write looks like a truncated chain).

    Raises:
        StorageError: an unsafe key file or record (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED``).
    """
    if record is _READ:
        record = read_head_signature(paths)
    check = check_chain(paths, len(events), lambda position: events[position].event_hash, record)
    return check.status, check.signed_events


def chain_signature_status(
    paths: ProjectPaths, count: int, hash_at: Callable[[int], str | None], record: HeadSignature | str | None
) -> tuple[str, int | None]:
    """:func:`head_signature_status` of a chain of ``count`` verified events known only by ``hash_at(position)``.

    Raises:
        StorageError: as :func:`head_signature_status`.
    """
    check = check_chain(paths, count, hash_at, record)
    return check.status, check.signed_events


def signed_positions(record: HeadSignature | str | None) -> tuple[int, ...]:
    """The 0-based positions whose ``event_hash`` :func:`check_chain` may ask for (a streamed verification keeps
    just those)."""
    if record is None or isinstance(record, str):
        return ()
    heads = (record,) if record.prev is None else (record, record.prev)
    return tuple(head.events - 1 for head in heads if head.events > 0)


def check_chain(
    paths: ProjectPaths,
    count: int,
    hash_at: Callable[[int], str | None],
    record: HeadSignature | str | None,
    *,
    public: str | None = None,
) -> SignatureCheck:
    """``head.sig`` (``record``) against a chain of ``count`` verified events known by ``hash_at(position)`` (asked
    only for :func:`signed_positions`).

    On a project this installation recorded as signed, a missing ``head.sig`` and one under another key are
    ``invalid``: only a ledger nobody here signed (the original implementation's, a copied one) reads ``unsigned`` or
    ``unknown_key``. Without the key file the recorded public key still checks the signature; ``public`` (a key
    rotation) names the key to check against instead of the installation's.

    Raises:
        StorageError: an unsafe key file or record.
    """
    from intentloop.store._signed_record import recorded_key

    recorded = recorded_key(paths.data_root, paths.project_id)
    ours = recorded is not None
    if record is None:
        if ours:
            return SignatureCheck(status="invalid", problem="head.sig is missing", recorded=True)
        return SignatureCheck(status="unsigned")
    if isinstance(record, str):
        return SignatureCheck(status="invalid", problem="head.sig is garbled or unsafe", recorded=ours)
    heads = [SignedHead(head_hash=record.head_hash, events=record.events, signature=record.signature)]
    if record.prev is not None:
        heads.append(record.prev)
    if public is None and _mac_vouches(paths.data_root, record):
        return _match(heads, count, hash_at, record, ours)  # written with this installation's seed
    if public is None:
        key = load_signing_key(paths.data_root)
        public = key.public_hex if key is not None else recorded
    if public is None or sha256_hex(bytes.fromhex(public)) != record.key_id:
        if ours:
            problem = f"head.sig is signed by another key (key id {record.key_id[:16]})"
            return SignatureCheck(status="invalid", problem=problem, recorded=True)
        return SignatureCheck(status="unknown_key")
    for head in heads:
        message = head_message(paths.project_id, head.head_hash, head.events, record.adopted)
        if not verify_with(public, head.signature, message):
            return SignatureCheck(status="invalid", problem="the signature does not verify", recorded=ours)
    return _match(heads, count, hash_at, record, ours)


def _match(
    heads: Sequence[SignedHead],
    count: int,
    hash_at: Callable[[int], str | None],
    record: HeadSignature,
    ours: bool,
) -> SignatureCheck:
    """The verdict of authentic ``heads`` on a chain of ``count`` events."""
    # The head that is the whole chain first: while a deletion is in flight, the next head (signed on top) is a
    # prefix of the chain still on disk, which the previous head signs exactly.
    for head in sorted(heads, key=lambda head: head.events != count):
        if 0 <= head.events <= count and (hash_at(head.events - 1) if head.events else None) == head.head_hash:
            status = "valid" if head.events == count else "unsigned"
            return SignatureCheck(status=status, signed_events=head.events, adopted=record.adopted, recorded=ours)
    problem = "the signed head is not in the chain (rewritten or truncated)"
    return SignatureCheck(status="invalid", problem=problem, recorded=ours)


# ------------------------------------------------------------------------------------------------------- exports
def export_message(graph: Mapping[str, Any]) -> bytes:
    """The signed bytes of a portable graph: its canonical form without the ``signature`` block and without the
    claims' read-time ``evidence_stale`` marks (they change with the files, not with the graph)."""
    content = {key: value for key, value in graph.items() if key != "signature"}
    claims = content.get("claims")
    if isinstance(claims, list):
        content["claims"] = [
            {k: v for k, v in claim.items() if k != "evidence_stale"} if isinstance(claim, dict) else claim
            for claim in claims
        ]
    return canonical_bytes({"format": EXPORT_FORMAT, "graph": content})


def sign_export(data_root: Path, graph: Mapping[str, Any]) -> dict[str, str] | None:
    """The ``signature`` block of a portable graph, ``None`` when this installation has no key yet (reads never
    create one).

    Raises:
        StorageError: an unsafe key file.
    """
    key = load_signing_key(data_root)
    if key is None:
        return None
    return {
        "algorithm": ALGORITHM,
        "key_id": key.key_id,
        "public_key": key.public_hex,
        "signature": key.sign(export_message(graph)),
    }


def export_signature_status(data_root: Path, graph: Mapping[str, Any]) -> str:
    """``valid`` (this installation's key), ``unknown_key`` (verifies under the public key it carries, which is not
    ours), ``invalid`` (does not verify, or its key id does not match its key) or ``unsigned`` (no block).

    Raises:
        StorageError: an unsafe key file.
    """
    block = graph.get("signature")
    if not isinstance(block, Mapping):
        return "unsigned"
    public, signature, key_id = block.get("public_key"), block.get("signature"), block.get("key_id")
    if not (isinstance(public, str) and isinstance(signature, str) and isinstance(key_id, str)):
        return "invalid"
    try:
        if sha256_hex(bytes.fromhex(public)) != key_id:
            return "invalid"
    except ValueError:
        return "invalid"
    if not verify_with(public, signature, export_message(graph)):
        return "invalid"
    key = load_signing_key(data_root)
    return "valid" if key is not None and key.key_id == key_id else "unknown_key"


__all__ = [
    "ALGORITHM",
    "HEAD_SIG_NAME",
    "MAX_ADOPTIONS",
    "SIGNATURE_STATUSES",
    "SIGNING_KEY_NAME",
    "Adoption",
    "HeadSignature",
    "SignatureCheck",
    "SignedHead",
    "SigningKey",
    "chain_signature_status",
    "check_chain",
    "export_message",
    "export_signature_status",
    "head_message",
    "head_sig_path",
    "head_signature_status",
    "load_or_create_signing_key",
    "load_signing_key",
    "read_head_signature",
    "sign_export",
    "signed_positions",
    "verify_with",
    "write_head",
]
