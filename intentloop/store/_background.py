"""The background slot: at most one hook child per project reads a large ledger after its hook has answered.

Why: a hook facing a large ledger its checkpoint does not vouch for answers its host at once and leaves the whole read
to a child (docs/HOOKS.md). With one child per prompt and the lock held by a long operation, children piled up (40
children, 2.8 GB together, a prompt every 0.5 s on a 20 MiB ledger); one child does the read for all, and the others
spool their observation for it. An ``flock`` on ``hook-background.lock`` in the project folder, held until the process
ends: the kernel releases it however the child ends (done, killed at its limit, crashed), so no slot is ever stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Final

from intentloop.store._fs import check_regular
from intentloop.store._paths import ProjectPaths

BACKGROUND_LOCK_NAME: Final = "hook-background.lock"
#: The slot's descriptor, kept open (and locked) for the rest of this process's life.
_held: list[int] = []


def take_background_slot(paths: ProjectPaths) -> bool:
    """Take the project's background slot for the rest of this process's life; ``False`` when another live process
    holds it (or the project does not exist). Taking it again in the process that holds it answers ``True``.

    Raises:
        StorageError: ``PATH_ESCAPE``/``INVALID_DATA_DIR`` (an unsafe project folder), ``UNSAFE_DATA_FILE`` (the
            lock file is a symlink, not regular or hard-linked).
    """
    if _held:
        return True
    if not paths.check_project():
        return False
    path = paths.project_dir / BACKGROUND_LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:  # a symlink (ELOOP) or an unwritable folder: no slot, the observation is spooled
        return False
    try:
        check_regular(path, os.fstat(fd))
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by another process (EWOULDBLOCK), or no fstat: no slot
        with contextlib.suppress(OSError):
            os.close(fd)
        return False
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    _held.append(fd)
    return True


__all__ = ["BACKGROUND_LOCK_NAME", "take_background_slot"]
