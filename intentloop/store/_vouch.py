"""Which chain a writer may extend, and the signing of its commits (docs/STORAGE.md, "Signed heads").

Why at lock entry: every mutation enters the lock through ``ProjectStore.enter_locked``, so a writer checks once that
this installation's ``head.sig`` vouches for the chain it is about to extend (or that nobody here ever signed it) and
refuses otherwise; a commit then signs its new head beside the current one *before* the ledger changes and alone
after, so a reader, a crash or a kill at any point finds a ``head.sig`` that signs the chain on disk.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model.ids import utc_now
from intentloop.store._fs import file_key, storage_error
from intentloop.store._paths import ProjectPaths
from intentloop.store._signing import (
    MAX_ADOPTIONS,
    Adoption,
    SignatureCheck,
    SigningKey,
    check_chain,
    head_sig_path,
    key_path,
    load_or_create_signing_key,
    load_signing_key,
    read_head_signature,
    write_head,
)

if TYPE_CHECKING:
    from intentloop.store._project import ProjectStore

ACCEPT_COMMAND: Final = "intentloop verify --accept"
ROTATE_COMMAND: Final = "intentloop keys rotate"

Head = tuple[str | None, int]


class HeadSigner:
    """Signs the commits of one lock holding: the adoptions it carries were settled when the lock was entered."""

    __slots__ = ("_key", "_paths", "adopted", "fresh", "vouched")

    def __init__(
        self, paths: ProjectPaths, key: SigningKey | None, adopted: tuple[Adoption, ...], *, fresh: int, vouched: bool
    ) -> None:
        self._paths = paths
        self._key = key
        self.adopted = adopted  # what every head.sig of this holding carries
        self.fresh = fresh  # events adopted by this holding's first commit
        self.vouched = vouched  # false: a recovery's lenient check found no signature vouching for the chain

    def _signing_key(self) -> SigningKey:
        if self._key is None:  # the installation's first write (vouch refused a missing key of a signing one)
            self._key = load_or_create_signing_key(self._paths.data_root)
        return self._key

    def before(self, current: Head, new: Head, owner: Callable[[], None]) -> None:
        """Sign ``new`` beside ``current`` right before the commit that makes ``new`` the head.

        Raises:
            StorageError: ``STORAGE_WRITE_FAILED``, an unsafe key (nothing was committed); whatever ``owner`` raises.
        """
        key = self._signing_key()
        try:
            write_head(self._paths, key, new, self.adopted, prev=current, before_replace=owner)
        except OSError as exc:
            raise storage_error(exc, "writing head.sig", code="STORAGE_WRITE_FAILED") from exc

    def after(self, new: Head, owner: Callable[[], None]) -> None:
        """Sign ``new`` alone after its commit, and record the project as signed here. After the commit point nothing
        fails the mutation: if this write is lost, the ``head.sig`` written before the commit still signs ``new``."""
        from intentloop.store._signed_record import record_signed

        key = self._signing_key()
        # The head.sig of `before` stays if this write is lost, and signs `new`; the record is tried again after the
        # next commit.
        with contextlib.suppress(OSError, StorageError):
            write_head(self._paths, key, new, self.adopted, before_replace=owner)
        with contextlib.suppress(OSError, StorageError):
            record_signed(self._paths.data_root, self._paths.project_id, key.public_hex)


def vouch(
    paths: ProjectPaths, head: Head, hash_at: Callable[[int], str | None], *, strict: bool, public: str | None = None
) -> HeadSigner:
    """The signer of a writer about to extend the chain ``head`` (hash, events; ``hash_at(position)`` gives the
    others): this installation's signature must vouch for the chain, or nobody here ever signed it.

    Events after an intact signed prefix (the original implementation extending the ledger) are adopted: the next
    ``head.sig`` records how many and when. ``strict`` false (recovery: the admin keeps a verified prefix on
    purpose) accepts any chain, adopting nothing it cannot check. ``public``: check ``head.sig`` against that public
    key (a key rotation re-signs what the previous key signed).

    Raises:
        CorruptLedgerError: ``SIGNATURE_INVALID`` (the signed prefix changed, another key, ``head.sig`` missing on a
            project signed here); accept the chain with ``intentloop verify --accept``.
        StorageError: ``SIGNING_KEY_MISSING`` (this installation signed projects and its key is gone); an unsafe key
            file or record (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED``).
    """
    from intentloop.store._signed_record import signed_projects

    key = load_signing_key(paths.data_root)
    if key is None and signed_projects(paths.data_root):
        raise StorageError(
            f"the signing key {key_path(paths.data_root)} is missing while this installation has signed projects: "
            f"check them with `intentloop verify`, then run `{ROTATE_COMMAND}`",
            code="SIGNING_KEY_MISSING",
        )
    check = check_chain(paths, head[1], hash_at, read_head_signature(paths), public=public)
    if check.status == "invalid":
        if strict:
            raise CorruptLedgerError(
                f"refusing to write: this installation's signature does not vouch for the chain ({check.problem}); "
                f"inspect it with `intentloop verify`, then accept it with `{ACCEPT_COMMAND}`",
                code="SIGNATURE_INVALID",
            )
        return HeadSigner(paths, key, (), fresh=0, vouched=False)
    signed = check.signed_events or 0
    adopted = check.adopted
    if head[1] > signed:
        adopted = merge_adoptions((*adopted, Adoption(after=signed, events=head[1] - signed, at=utc_now())))
    return HeadSigner(paths, key, adopted, fresh=head[1] - signed, vouched=True)


def accept_signer(paths: ProjectPaths, head: Head, lenient: HeadSigner) -> HeadSigner:
    """The signer of an explicit acceptance (``intentloop verify --accept``) of the chain ``head``: ``lenient`` (the
    recovery check of it) when a signature of this installation vouches for it, else one that records every event
    as adopted now.

    Raises:
        StorageError: ``SIGNING_KEY_MISSING``, as :func:`vouch`.
    """
    if lenient.vouched:
        return lenient
    adopted = (Adoption(after=0, events=head[1], at=utc_now()),) if head[1] else ()
    return HeadSigner(paths, lenient._key, adopted, fresh=head[1], vouched=True)


_RACE_RETRIES: Final = 20
_verdicts: dict[str, tuple[object, SignatureCheck]] = {}
_verdicts_mutex = threading.Lock()


def _stat_key(path: os.PathLike[str] | str) -> tuple[int, int, int, int, int] | None:
    try:
        return file_key(os.lstat(path))
    except OSError:
        return None


def read_check(store: ProjectStore) -> SignatureCheck | None:
    """``head.sig`` against the ledger as it is now, for a reader (lock-free, creates nothing; cached per process
    while neither file changes): the chain's head comes from the checkpoint when it matches the file, else from a
    verified read. ``None`` when the ledger does not verify (its own read reports that).

    Raises:
        StorageError: an unsafe key file or record, path-safety refusals.
    """
    from intentloop.store._checkpoint import read_checkpoint

    paths = store.paths
    check: SignatureCheck | None = None
    for _attempt in range(_RACE_RETRIES):
        record = read_head_signature(paths)
        key = (_stat_key(paths.ledger_path), _stat_key(head_sig_path(paths)))
        with _verdicts_mutex:
            cached = _verdicts.get(str(paths.project_dir))
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            st = os.lstat(paths.ledger_path)
        except FileNotFoundError:
            st = None
        except OSError:
            return None
        checkpoint = None if st is None else read_checkpoint(paths)
        try:
            if st is None:
                head: Head = (None, 0)
            elif checkpoint is not None and checkpoint.matches(st):
                head = (checkpoint.head, checkpoint.lines)
            else:
                view = store.read()
                head = (view.head_hash, len(view))

            def hash_at(position: int, head: Head = head) -> str | None:
                return head[0] if position == head[1] - 1 else store.read().events[position].event_hash

            check = check_chain(paths, head[1], hash_at, record)
        except CorruptLedgerError:
            return None
        if read_head_signature(paths) == record and key[0] == _stat_key(paths.ledger_path):
            with _verdicts_mutex:
                _verdicts[str(paths.project_dir)] = (key, check)
            return check
    return check


def require_vouched(store: ProjectStore) -> None:
    """Refuse to read a project whose signature is invalid (hook context, snapshots, exports): forged text is never
    served as the user's verified intent.

    Raises:
        CorruptLedgerError: ``SIGNATURE_INVALID``.
        StorageError: as :func:`read_check`.
    """
    check = read_check(store)
    if check is not None and check.status == "invalid":
        raise CorruptLedgerError(
            f"this project's memory is not shown: its signature does not vouch for the chain ({check.problem}); "
            f"inspect it with `intentloop verify`, then accept it with `{ACCEPT_COMMAND}`",
            code="SIGNATURE_INVALID",
        )


def merge_adoptions(adopted: tuple[Adoption, ...]) -> tuple[Adoption, ...]:
    """At most :data:`MAX_ADOPTIONS`: the oldest are merged into one (their total kept, under the later time)."""
    while len(adopted) > MAX_ADOPTIONS:
        first, second = adopted[0], adopted[1]
        merged = Adoption(after=first.after, events=first.events + second.events, at=second.at)
        adopted = (merged, *adopted[2:])
    return adopted


__all__ = [
    "ACCEPT_COMMAND",
    "ROTATE_COMMAND",
    "HeadSigner",
    "accept_signer",
    "merge_adoptions",
    "read_check",
    "require_vouched",
    "vouch",
]
