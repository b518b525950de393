"""Signed heads and exports: a per-installation Ed25519 key, ``head.sig`` after every commit, export signatures.

What this protects against: another program *without the key* — a tool, a script or the original implementation —
that rewrites the ledger (even with every hash recomputed), truncates it, or edits an export. It cannot produce a
signature that verifies under this installation's key, so ``intentloop verify`` reports ``invalid``. What it does not
protect against: anyone who can read ``R/keys/ed25519.key`` (the same user, root, a backup of the data root) can sign
anything; and deleting ``head.sig`` (or appending events after the signed head, as the original implementation
legitimately does) is reported ``unsigned``, not ``invalid``, because a ledger the original wrote has no signature
either.

Why here: :meth:`~intentloop.store._ledger.LockedLedger._commit` — the one commit point of appends, deletions, torn-tail
repairs, quarantine and salvage — calls :func:`sign_committed_head` right after each commit's rename, still under the
lock and before that commit's directory fsync (which then covers ``head.sig`` too), so every write path signs and none
has to remember to. Why only ``cryptography``'s Ed25519 module: it is imported lazily,
only when signing or checking (8 ms in a fresh process here, `python -X importtime`), so read-only hooks never pay
for it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from intentloop.model.canonical import canonical_bytes, sha256_hex
from intentloop.store._fs import replace_file, unlink_quietly
from intentloop.store._keyfile import KeyFile, load_key, load_or_create_key
from intentloop.store._names import head_sig_temp_name
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
_MAX_SIG_FILE: Final = 4096


class HeadSignature(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The content of ``head.sig``: the signed head of the chain, how many events it covers, and by which key."""

    head_hash: str | None
    events: int
    key_id: str
    signature: str


class SigningKey:
    """This installation's Ed25519 key (loaded from its 32-byte seed)."""

    __slots__ = ("_private", "key_id", "public_hex")

    def __init__(self, seed: bytes) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

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
def head_message(project_id: str, head_hash: str | None, events: int) -> bytes:
    """The signed bytes of a head: bound to the project, so a ``head.sig`` copied from another project fails."""
    return canonical_bytes({"format": HEAD_FORMAT, "project_id": project_id, "head_hash": head_hash, "events": events})


def head_sig_path(paths: ProjectPaths) -> Path:
    return paths.project_dir / HEAD_SIG_NAME


def sign_committed_head(
    paths: ProjectPaths, head_hash: str | None, events: int, *, before_replace: Callable[[], None]
) -> bool:
    """Write ``head.sig`` for the ledger just committed; call under the lock, after every commit.

    The commit already happened, so nothing here is reported as a failed mutation: when signing fails (an unwritable
    or unsafe key), the old ``head.sig`` is removed so it cannot name a head that no longer exists, and the ledger
    reads as ``unsigned`` until the next successful write.

    Returns:
        Whether the new head is signed.
    """
    target = head_sig_path(paths)
    try:
        key = load_or_create_signing_key(paths.data_root)
        record = HeadSignature(
            head_hash=head_hash,
            events=events,
            key_id=key.key_id,
            signature=key.sign(head_message(paths.project_id, head_hash, events)),
        )
        # Not durable: the commit's own directory fsync follows, and a lost head.sig reads ``unsigned`` like a deleted
        # one; the two fsyncs it saves cost ~3 ms a write (docs/BENCHMARK.md, "Measurements behind the code").
        data = canonical_bytes(msgspec.to_builtins(record)) + b"\n"
        replace_file(target, head_sig_temp_name(), data, durable=False, before_replace=before_replace)
    except Exception:  # after the commit point: never a failed mutation (see above)
        unlink_quietly(target)
        return False
    return True


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
        os.close(fd)
    if not data.strip(b"\0"):
        return None
    try:
        return msgspec.json.decode(data, type=HeadSignature)
    except msgspec.DecodeError:
        return "invalid"


_READ: Any = object()


def head_signature_status(
    paths: ProjectPaths, events: Sequence[Event], record: HeadSignature | str | None = _READ
) -> tuple[str, int | None]:
    """``(status, signed_events)`` of ``head.sig`` against the verified ``events`` of the ledger.

    ``valid``: signed by this installation's key, naming exactly the current head. ``invalid``: a garbled or unsafe
    ``head.sig``, a signature that does not verify, or a signed head that is not in the chain at its position (a
    rewritten or truncated chain). ``unknown_key``: signed by a key this installation does not hold. ``unsigned``: no
    ``head.sig`` (a ledger the original implementation wrote), or events appended after the signed head by a program
    without the key (``signed_events`` tells how many are covered).

    ``record`` is ``head.sig`` as :func:`read_head_signature` read it, when the caller read it *before* the ledger:
    appends only grow the ledger and ``head.sig`` is written after each, so a ledger read after ``head.sig`` always
    holds the head it signs (read the other way round, a concurrent write looks like a truncated chain).

    Raises:
        StorageError: an unsafe key file (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED``).
    """
    if record is _READ:
        record = read_head_signature(paths)
    return chain_signature_status(paths, len(events), lambda position: events[position].event_hash, record)


def chain_signature_status(
    paths: ProjectPaths, count: int, hash_at: Callable[[int], str | None], record: HeadSignature | str | None
) -> tuple[str, int | None]:
    """:func:`head_signature_status` of a chain of ``count`` verified events known only by ``hash_at(position)``
    (asked at most once, for the position ``record`` signs: a streamed verification keeps just that hash).

    Raises:
        StorageError: as :func:`head_signature_status`.
    """
    if record is None:
        return "unsigned", None
    if isinstance(record, str):
        return "invalid", None
    key = load_signing_key(paths.data_root)
    if key is None or key.key_id != record.key_id:
        return "unknown_key", None
    if not key.verifies(record.signature, head_message(paths.project_id, record.head_hash, record.events)):
        return "invalid", None
    if record.events > count or record.events < 0:
        return "invalid", None
    signed_head = hash_at(record.events - 1) if record.events else None
    if signed_head != record.head_hash:
        return "invalid", None
    return ("valid" if record.events == count else "unsigned"), record.events


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
    "SIGNATURE_STATUSES",
    "SIGNING_KEY_NAME",
    "HeadSignature",
    "SigningKey",
    "chain_signature_status",
    "export_message",
    "export_signature_status",
    "head_message",
    "head_sig_path",
    "head_signature_status",
    "load_or_create_signing_key",
    "load_signing_key",
    "read_head_signature",
    "sign_committed_head",
    "sign_export",
    "verify_with",
]
