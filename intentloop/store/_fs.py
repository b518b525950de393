"""Low-level file-system primitives with the safety rules of docs/STORAGE.md ("Where data lives") built in.

Files are opened with ``O_NOFOLLOW`` and trusted only when the descriptor is the inode that ``lstat`` approved (no
symlink or swap between check and use). A replacement goes to a fresh ``O_EXCL`` sibling, is fsynced, renamed into
place and followed by a directory fsync (dulwich's ``file.py`` without the missing directory fsync); the ledger is also
appended to (``append_durably``) and truncated (``truncate_durably``) in place, only into the inode that was verified.

Why a reader keeps bytes whose file lost its link or got a new ctime while it read: a replacing writer renames a new
file over the old one, which drops the old file's link count to 0 and raises its ctime. The old file's
bytes are still a whole earlier version (a read linearised before the rename), so only a change of what the bytes can
be — size or mtime — makes a read retry. Taking the link drop for tampering failed ~9 % of the reads during writes
(measured: 17 of 186 fresh reads, 1 of 5 SessionStart hooks and 1 of 5 ``intentloop verify`` runs).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from intentloop.errors import ErrorCode, StorageError

_T = TypeVar("_T")

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_CREATE_READABLE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC
_TRUNCATE_FLAGS = os.O_WRONLY | _NOFOLLOW | _CLOEXEC
_DIR_OPEN_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


def storage_error(exc: OSError, action: str, *, code: ErrorCode) -> StorageError:
    """Map an ``OSError`` to a :class:`StorageError`; symlink loops and non-directories get their own codes."""
    if exc.errno == errno.ELOOP:
        return StorageError(f"{action}: a path is a symbolic link", code="PATH_ESCAPE")
    if exc.errno == errno.ENOTDIR:
        return StorageError(f"{action}: a path component is not a directory", code="INVALID_DATA_DIR")
    name = errno.errorcode.get(exc.errno or 0, "OSError")
    return StorageError(f"{action} failed ({name})", code=code)


def check_regular(path: Path, st: os.stat_result) -> None:
    """Refuse symlinks (``PATH_ESCAPE``), non-regular files and hard-linked files (``UNSAFE_DATA_FILE``).

    Raises:
        StorageError: ``PATH_ESCAPE`` or ``UNSAFE_DATA_FILE``.
    """
    if stat.S_ISLNK(st.st_mode):
        raise StorageError(f"{path.name} is a symbolic link", code="PATH_ESCAPE")
    if not stat.S_ISREG(st.st_mode):
        raise StorageError(f"{path.name} is not a regular file", code="UNSAFE_DATA_FILE")
    if st.st_nlink != 1:
        raise StorageError(f"{path.name} has {st.st_nlink} hard links", code="UNSAFE_DATA_FILE")


def check_dir(path: Path, *, missing_ok: bool) -> bool:
    """Return whether ``path`` is a real directory; refuse symlinks and non-directories.

    Raises:
        StorageError: ``PATH_ESCAPE`` (symlink), ``INVALID_DATA_DIR`` (not a directory, or missing when required)
            or ``STORAGE_READ_FAILED``.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise StorageError(f"{path.name} does not exist", code="INVALID_DATA_DIR") from None
    except OSError as exc:
        raise storage_error(exc, f"checking {path.name}", code="STORAGE_READ_FAILED") from exc
    if stat.S_ISLNK(st.st_mode):
        raise StorageError(f"{path.name} is a symbolic link", code="PATH_ESCAPE")
    if not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"{path.name} is not a directory", code="INVALID_DATA_DIR")
    return True


_OPEN_ATTEMPTS = 8  # a file replaced between lstat and open is looked at again: a writer renamed a new one in


def open_regular(path: Path) -> tuple[int, os.stat_result] | None:
    """Open a regular, singly linked file for reading; ``None`` when it does not exist.

    The descriptor is returned only if it is the inode that ``lstat`` approved; a file replaced between the two is
    looked at again. After the open, a link count of 0 only means a writer renamed a new file over this one since:
    the descriptor still reads a whole earlier version (see the module docstring).

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``TRANSIENT_FILE_RACE`` (replaced at every attempt) or
            ``STORAGE_READ_FAILED``.
    """
    for _attempt in range(_OPEN_ATTEMPTS):
        try:
            before = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise storage_error(exc, f"checking {path.name}", code="STORAGE_READ_FAILED") from exc
        if before.st_nlink == 0 and stat.S_ISREG(before.st_mode):
            continue  # lstat raced a rename over the file: it saw the old inode just unlinked
        check_regular(path, before)
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error(exc, f"opening {path.name}", code="STORAGE_READ_FAILED") from exc
        trusted = False
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
                continue
            if st.st_nlink != 0:  # 0: replaced since it was opened, and its bytes are a whole earlier version
                check_regular(path, st)
            trusted = True
        except OSError as exc:
            raise storage_error(exc, f"checking {path.name}", code="STORAGE_READ_FAILED") from exc
        finally:
            if not trusted:
                os.close(fd)
        return fd, st
    raise StorageError(f"{path.name} kept changing while being opened", code="TRANSIENT_FILE_RACE")


def read_open(path: Path, fd: int, st: os.stat_result, *, growing: bool = False) -> bytes:
    """Read all of an opened file; the bytes are returned only if its content did not change meanwhile.

    A new ctime or a link count dropped to 0 (a writer renamed a new file over this one) leave the bytes a whole
    earlier version; only a new size or mtime (written in place) make them untrustworthy. With ``growing`` (the
    ledger, which writers extend in place) exactly the first ``st.st_size`` bytes are read, and a file that only grew
    meanwhile keeps them.

    Raises:
        StorageError: ``TRANSIENT_FILE_RACE`` or ``STORAGE_READ_FAILED``.
    """
    try:
        chunks: list[bytes] = []
        if growing:
            position = 0
            while position < st.st_size and (chunk := os.pread(fd, st.st_size - position, position)):
                chunks.append(chunk)
                position += len(chunk)
        else:
            while chunk := os.read(fd, max(st.st_size + 1, 65536)):
                chunks.append(chunk)
        after = os.fstat(fd)
    except OSError as exc:
        raise storage_error(exc, f"reading {path.name}", code="STORAGE_READ_FAILED") from exc
    if not unchanged(st, after, growing=growing):
        raise StorageError(f"{path.name} changed while being read", code="TRANSIENT_FILE_RACE")
    return b"".join(chunks)


def unchanged(before: os.stat_result, after: os.stat_result, *, growing: bool) -> bool:
    """Whether bytes read between two stats are the file's bytes at the first: the same content key, or (``growing``)
    the same inode grown past them (an append in place leaves the bytes before it as they were)."""
    if content_key(after) == content_key(before):
        return True
    return growing and (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino) and after.st_size > before.st_size


class Overflow:
    """The bytes of a file from ``offset`` on, which were hashed while streaming instead of being held.

    Attributes:
        offset: where the unread part starts (the start of a line longer than the caller's limit).
        length: how many bytes it has.
        sha256: their SHA-256 (hex).
        newline: whether they contain a newline (a complete, overlong line) or not (one torn last line).
        torn: the file does not end with a newline.
    """

    __slots__ = ("length", "newline", "offset", "sha256", "torn")

    def __init__(self, offset: int, length: int, sha256: str, newline: bool) -> None:
        self.offset = offset
        self.length = length
        self.sha256 = sha256
        self.newline = newline
        self.torn = True


STREAM_CHUNK = 1 << 20


def read_lines_open(
    path: Path, fd: int, st: os.stat_result, max_line: int, *, growing: bool = False
) -> tuple[bytes, Overflow | None]:
    """Like :func:`read_open`, but a line longer than ``max_line`` bytes is not held: from its start to the end of
    the file the bytes are hashed in chunks (memory stays about ``max_line`` whatever the file's size).

    Returns:
        The bytes before that line (all of them when there is none), and its summary.

    Raises:
        StorageError: ``TRANSIENT_FILE_RACE`` or ``STORAGE_READ_FAILED``.
    """
    if st.st_size <= max_line:  # no line can be too long: one read, as before
        return read_open(path, fd, st, growing=growing), None
    import hashlib

    buffer = bytearray()
    line_start = 0
    overflow: Overflow | None = None
    digest = hashlib.sha256()
    newline = False
    last = b""
    position = 0
    try:
        while position < st.st_size and (chunk := os.pread(fd, min(STREAM_CHUNK, st.st_size - position), position)):
            position += len(chunk)
            last = chunk[-1:]
            if overflow is not None:
                digest.update(chunk)
                newline = newline or b"\n" in chunk
                overflow.length += len(chunk)
                continue
            end = chunk.rfind(b"\n")
            if end >= 0:
                line_start = len(buffer) + end + 1
            buffer += chunk
            if len(buffer) - line_start > max_line:  # the line from line_start on has no newline yet
                with memoryview(buffer) as view:
                    digest.update(view[line_start:])
                overflow = Overflow(line_start, len(buffer) - line_start, "", False)
                del buffer[line_start:]
        after = os.fstat(fd)
    except OSError as exc:
        raise storage_error(exc, f"reading {path.name}", code="STORAGE_READ_FAILED") from exc
    if not unchanged(st, after, growing=growing):
        raise StorageError(f"{path.name} changed while being read", code="TRANSIENT_FILE_RACE")
    if overflow is not None:
        overflow.sha256 = digest.hexdigest()
        overflow.newline = newline
        overflow.torn = last != b"\n"
    return bytes(buffer), overflow


def hash_from(path: Path, fd: int, st: os.stat_result, offset: int) -> tuple[int, str]:
    """Length and SHA-256 of an opened file's bytes from ``offset`` to its end, read in chunks.

    Raises:
        StorageError: ``TRANSIENT_FILE_RACE`` or ``STORAGE_READ_FAILED``.
    """
    import hashlib

    digest = hashlib.sha256()
    length = 0
    try:
        while chunk := os.pread(fd, STREAM_CHUNK, offset + length):
            digest.update(chunk)
            length += len(chunk)
        after = os.fstat(fd)
    except OSError as exc:
        raise storage_error(exc, f"reading {path.name}", code="STORAGE_READ_FAILED") from exc
    if content_key(after) != content_key(st):
        raise StorageError(f"{path.name} changed while being read", code="TRANSIENT_FILE_RACE")
    return length, digest.hexdigest()


def content_key(st: os.stat_result) -> tuple[int, int, int, int]:
    """What changes when a file's bytes change: device, inode, size and mtime (not ctime: links and modes move it)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_regular(path: Path) -> tuple[bytes, os.stat_result] | None:
    """Read a whole regular, singly linked file; ``None`` when it does not exist.

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``TRANSIENT_FILE_RACE`` or ``STORAGE_READ_FAILED``.
    """
    opened = open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        return read_open(path, fd, st), st
    finally:
        with contextlib.suppress(OSError):  # a failed close of a read descriptor changes nothing
            os.close(fd)


def read_cache(path: Path, limit: int, decode: Callable[[bytes], _T]) -> _T | None:
    """A cache file (the checkpoint, the evidence digests, the injected contexts) decoded, or ``None`` when it is
    missing, unsafe (a symlink, a hard link), larger than ``limit`` bytes or does not decode: a cache that cannot be
    read is rebuilt or done without, never an error."""
    try:
        got = read_regular(path)
    except StorageError:
        return None
    if got is None or len(got[0]) > limit:
        return None
    try:
        return decode(got[0])
    except ValueError:  # msgspec's DecodeError and ValidationError are ValueErrors
        return None


def read_marker(
    path: str | Path, *, dir_fd: int | None = None, limit: int = 65536
) -> tuple[bytes, os.stat_result] | None:
    """Read a small lock marker (``owner.json``, ``reclaim.json``) without following symlinks or blocking on a FIFO.

    Returns:
        Its bytes and stat, or ``None`` when it is missing, a symlink or not a regular file.

    Raises:
        OSError: any other failure (e.g. ``EACCES``).
    """
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return os.read(fd, limit), st
    finally:
        os.close(fd)


def file_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a cache may trust: device, inode, size, mtime and ctime (ctime cannot be set back by a normal program)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def make_dir(path: Path) -> bool:
    """Create one directory with mode 0700 whatever the umask; ``False`` if it already existed.

    Raises:
        StorageError: ``STORAGE_WRITE_FAILED`` (or the codes of :func:`storage_error`).
    """
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise storage_error(exc, f"creating {path.name}", code="STORAGE_WRITE_FAILED") from exc
    try:
        os.chmod(path, DIR_MODE, follow_symlinks=False)
    except OSError as exc:
        raise storage_error(exc, f"setting the mode of {path.name}", code="STORAGE_WRITE_FAILED") from exc
    return True


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write is not an error)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def create_exclusive(
    path: str | Path, data: bytes, *, dir_fd: int | None = None, sync: bool = True, mode: int = FILE_MODE
) -> None:
    """Create a new file (0600 unless ``mode``) with ``O_CREAT|O_EXCL|O_NOFOLLOW``, write ``data`` and (optionally)
    fsync it.

    Raises:
        OSError: unchanged; callers map it (they know whether it is a lock step or a data write).
    """
    fd = os.open(path, _CREATE_FLAGS, mode, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(
    target: Path,
    temp_name: str,
    data: bytes,
    *,
    durable: bool,
    mode: int = FILE_MODE,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """The one way a small file is replaced whole: ``data`` goes to a new sibling ``temp_name``
    (``O_CREAT|O_EXCL|O_NOFOLLOW``, ``mode``), fsynced when ``durable``; ``before_replace`` runs (an owner check); the
    temp file is renamed over ``target``; the directory is fsynced when ``durable``. Nothing visible changes before the
    rename, and the temp file is removed on any failure. Caches (the checkpoint, ``head.sig``, the index counts) are
    not durable: they never claim more than the fsynced ledger, and a lost one is only not trusted.

    Raises:
        OSError: unchanged (callers map it: they know what the file is); whatever ``before_replace`` raises.
    """
    temp = target.parent / temp_name
    try:
        create_exclusive(temp, data, sync=durable, mode=mode)
    except FileExistsError:  # someone else's file (or symlink) by that name: never written through, never removed
        raise
    except BaseException:
        unlink_quietly(temp)
        raise
    try:
        if before_replace is not None:
            before_replace()
        os.replace(temp, target)
    except BaseException:
        unlink_quietly(temp)
        raise
    if durable:
        fsync_dir(target.parent)


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or unlink inside it survives a crash.

    Raises:
        OSError: unchanged.
    """
    fd = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_replace(
    target: Path,
    temp_name: str,
    data: bytes | Callable[[int], None],
    *,
    before_replace: Callable[[], None],
    on_commit: Callable[[os.stat_result | None], None],
) -> None:
    """Write ``data`` (bytes, or a function writing them to the descriptor it is given, which it may read back) to a
    0600 sibling temp file, fsync it, run ``before_replace``, rename it over ``target``,
    report the new file's stat (``None`` if unknown) to ``on_commit`` and fsync the directory.

    Until the rename nothing visible changes and the temp file is removed on failure. ``on_commit`` runs right after
    the rename, before the directory fsync, so the caller's in-memory state matches the file even if that fsync fails.

    Raises:
        StorageError: ``STORAGE_WRITE_FAILED`` (retryable) for any ``OSError``; whatever ``before_replace`` raises.
    """
    directory = target.parent
    temp = directory / temp_name
    try:
        fd = os.open(temp, _CREATE_READABLE_FLAGS, FILE_MODE)
    except OSError as exc:
        raise storage_error(exc, f"creating {temp_name}", code="STORAGE_WRITE_FAILED") from exc
    committed = False
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            if isinstance(data, bytes):
                write_all(fd, data)
            else:
                data(fd)
            os.fsync(fd)
        except OSError as exc:
            raise storage_error(exc, f"writing {temp_name}", code="STORAGE_WRITE_FAILED") from exc
        before_replace()
        try:
            os.replace(temp, target)
        except OSError as exc:
            raise storage_error(exc, f"replacing {target.name}", code="STORAGE_WRITE_FAILED") from exc
        committed = True
        st: os.stat_result | None
        try:
            st = os.fstat(fd)
        except OSError:  # after the commit point nothing is reported as a failed write
            st = None
        on_commit(st)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        if not committed:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    try:
        fsync_dir(directory)
    except OSError as exc:
        raise StorageError(
            f"{target.name} was replaced but the directory fsync failed; the change may not survive a crash "
            "(a retry with the same request id is safe)",
            code="STORAGE_WRITE_FAILED",
        ) from exc


def _check_expected(target: Path, st: os.stat_result, expected: tuple[int, int, int]) -> None:
    check_regular(target, st)
    if (st.st_dev, st.st_ino) != expected[:2]:
        raise StorageError(f"{target.name} is not the file that was verified", code="TRANSIENT_FILE_RACE")
    if st.st_size != expected[2]:
        raise StorageError(f"{target.name} changed size since it was verified", code="TRANSIENT_FILE_RACE")


def append_durably(
    target: Path,
    data: bytes,
    *,
    expected: tuple[int, int, int] | None,
    before_write: Callable[[], None],
    on_commit: Callable[[os.stat_result | None], None],
) -> None:
    """Append ``data`` to ``target`` in place and fsync it; with ``expected`` ``None`` the file is created (0600,
    ``O_EXCL``) and the directory fsynced.

    The descriptor is opened with ``O_NOFOLLOW`` (a symlink is refused) and written only when it is a regular, singly
    linked file with ``expected``'s device, inode and size (the file that was verified, not grown or swapped since).
    A failed write or fsync truncates the file back to its old length (best effort: what stays is a torn tail the
    next writer repairs, or a whole event that was never acknowledged). ``on_commit`` gets the file's stat after the
    fsync; the directory fsync of a new file follows it.

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``TRANSIENT_FILE_RACE`` (not the verified file),
            ``STORAGE_WRITE_FAILED`` (nothing acknowledged); whatever ``before_write`` raises.
    """
    created = expected is None
    try:
        fd = os.open(target, _CREATE_FLAGS if created else _APPEND_FLAGS, FILE_MODE)
    except OSError as exc:
        raise storage_error(exc, f"opening {target.name}", code="STORAGE_WRITE_FAILED") from exc
    committed = False
    try:
        try:
            st = os.fstat(fd)
            if created:
                os.fchmod(fd, FILE_MODE)
        except OSError as exc:
            raise storage_error(exc, f"checking {target.name}", code="STORAGE_WRITE_FAILED") from exc
        if expected is not None:
            _check_expected(target, st, expected)
        before_write()
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, st.st_size)
                os.fsync(fd)
            raise storage_error(exc, f"appending to {target.name}", code="STORAGE_WRITE_FAILED") from exc
        committed = True
        after: os.stat_result | None
        try:
            after = os.fstat(fd)
        except OSError:  # after the commit point nothing is reported as a failed write
            after = None
        on_commit(after)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        if created and not committed:  # a file this call created and could not fill goes again
            unlink_quietly(target)
    if created:
        try:
            fsync_dir(target.parent)
        except OSError as exc:
            raise StorageError(
                f"{target.name} was created but the directory fsync failed; the change may not survive a crash "
                "(a retry with the same request id is safe)",
                code="STORAGE_WRITE_FAILED",
            ) from exc


def truncate_durably(
    target: Path,
    length: int,
    *,
    expected: tuple[int, int, int],
    before_write: Callable[[], None],
    on_commit: Callable[[os.stat_result | None], None],
) -> None:
    """Cut ``target`` (the verified file: ``expected`` device, inode and size) to ``length`` bytes and fsync it.

    Raises:
        StorageError: as :func:`append_durably`.
    """
    try:
        fd = os.open(target, _TRUNCATE_FLAGS)
    except OSError as exc:
        raise storage_error(exc, f"opening {target.name}", code="STORAGE_WRITE_FAILED") from exc
    try:
        try:
            st = os.fstat(fd)
        except OSError as exc:
            raise storage_error(exc, f"checking {target.name}", code="STORAGE_WRITE_FAILED") from exc
        _check_expected(target, st, expected)
        before_write()
        try:
            os.ftruncate(fd, length)
            os.fsync(fd)
        except OSError as exc:
            raise storage_error(exc, f"truncating {target.name}", code="STORAGE_WRITE_FAILED") from exc
        after: os.stat_result | None
        try:
            after = os.fstat(fd)
        except OSError:
            after = None
        on_commit(after)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


_RENAME_NOREPLACE = 1
_renameat2: Any = None  # resolved on first use: a libc function, or False where there is none


def rename_noreplace(source: Path, destination: Path) -> bool | None:
    """Atomically rename ``source`` to ``destination`` unless ``destination`` exists (``renameat2`` with
    ``RENAME_NOREPLACE``; a plain ``rename`` would silently replace an empty directory).

    Returns:
        ``True`` when renamed, ``False`` when ``destination`` exists, ``None`` when the platform or file system cannot
        do it (the caller falls back to ``mkdir``).

    Raises:
        OSError: any other failure.
    """
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2()
    if _renameat2 is False:
        return None
    import ctypes

    at_fdcwd = -100
    if _renameat2(at_fdcwd, os.fsencode(source), at_fdcwd, os.fsencode(destination), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EEXIST, errno.ENOTEMPTY):
        return False
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        _renameat2 = False
        return None
    raise OSError(err, os.strerror(err), str(source))


def _load_renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def remove_tree_quietly(path: Path) -> None:
    """Remove a directory tree without following symlinks; failures are left for the next cleanup."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        if _remove_flat_dir(path):
            return
        import shutil  # here: only a tree with subdirectories needs it, and it costs ~2 ms of start-up

        with contextlib.suppress(OSError):  # rmtree's own fstat can still raise with ignore_errors
            shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _remove_flat_dir(path: Path) -> bool:
    """Remove a directory that holds no directory (a released lock: ``owner.json``, perhaps ``reclaim.json``) by
    its descriptor, so no name inside is resolved through a symlink; ``False`` when it holds a directory or anything
    failed, and :func:`shutil.rmtree` removes what is left (importing ``shutil`` costs a writing hook ~2 ms)."""
    try:
        fd = os.open(path, _DIR_OPEN_FLAGS)
    except OSError:
        return False
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    return False
                os.unlink(entry.name, dir_fd=fd)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):  # "quietly": a failed close is not a failed removal
            os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def unlink_quietly(path: str | Path, *, dir_fd: int | None = None) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path, dir_fd=dir_fd)


__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "STREAM_CHUNK",
    "Overflow",
    "append_durably",
    "atomic_replace",
    "check_dir",
    "check_regular",
    "content_key",
    "create_exclusive",
    "file_key",
    "fsync_dir",
    "hash_from",
    "make_dir",
    "open_regular",
    "read_lines_open",
    "read_marker",
    "read_open",
    "read_regular",
    "remove_tree_quietly",
    "rename_noreplace",
    "replace_file",
    "storage_error",
    "truncate_durably",
    "unchanged",
    "unlink_quietly",
    "write_all",
]
