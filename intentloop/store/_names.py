"""Strict names of every transient file the store creates, and their removal under the lock.

Only names matching these patterns are ever deleted by cleanup, so a stray user file next to the ledger is never
touched. The lock-directory and temp-file names are the original implementation's, so either implementation cleans up
after the other.
"""

from __future__ import annotations

import os
import stat
import time
import uuid
from pathlib import Path

from intentloop.model._lazyre import LazyPattern
from intentloop.model.ids import UUID_TEXT
from intentloop.store._checkpoint import CHECKPOINT_TEMP_RE
from intentloop.store._config import LockConfig
from intentloop.store._digests import DIGESTS_TEMP_RE
from intentloop.store._fs import read_marker, remove_tree_quietly, unlink_quietly
from intentloop.store._injected import INJECTED_TEMP_RE
from intentloop.store._liveness import GONE, Liveness, ProcessIdentity, judge, parse_owner, probe_process
from intentloop.store._paths import ProjectPaths

_UUID = rf"(?i:{UUID_TEXT})"  # either case: the original implementation's names too
LEDGER_TEMP_RE = LazyPattern(rf"^ledger-(?:append|repair|rewrite|tombstones)-{_UUID}\.tmp$")
STALE_LOCK_RE = LazyPattern(rf"^ledger\.lock\.stale-{_UUID}$")
RELEASED_LOCK_RE = LazyPattern(rf"^ledger\.lock\.release-[A-Za-z0-9_-]{{1,200}}-{_UUID}$")
# ``ledger.lock.acquire-<pid>-<uuid>``: the pid lets a holder clear the staging directory of an acquirer killed before
# it wrote ``owner.json`` (an empty directory names no owner). The older form without a pid is still recognised.
STAGED_LOCK_RE = LazyPattern(rf"^ledger\.lock\.acquire-(?:(?P<pid>[0-9]{{1,10}})-)?{_UUID}$")
CONTROL_TEMP_RE = LazyPattern(rf"^control-{_UUID}\.tmp$")
QUARANTINE_TEMP_RE = LazyPattern(rf"^quarantine-{_UUID}\.tmp$")
HEAD_SIG_TEMP_RE = LazyPattern(rf"^head-sig-{_UUID}\.tmp$")
OWNER_NAME = "owner.json"
#: The project folder's temporary files, removed at once by the next holder of the lock.
_TEMP_PATTERNS = (LEDGER_TEMP_RE, HEAD_SIG_TEMP_RE, CHECKPOINT_TEMP_RE, DIGESTS_TEMP_RE, INJECTED_TEMP_RE)
#: Every strictly named leftover in the project folder holds ``.tmp`` or this (the patterns above; a test proves it).
_LOCK_PREFIX = "ledger.lock."


def ledger_temp_name(kind: str) -> str:
    """``ledger-(append|repair|rewrite|tombstones)-<uuid>.tmp``."""
    return f"ledger-{kind}-{uuid.uuid4()}.tmp"


def stale_lock_name() -> str:
    return f"ledger.lock.stale-{uuid.uuid4()}"


def released_lock_name(token: str) -> str:
    return f"ledger.lock.release-{token}-{uuid.uuid4()}"


def staged_lock_name() -> str:
    return f"ledger.lock.acquire-{os.getpid()}-{uuid.uuid4()}"


def control_temp_name() -> str:
    return f"control-{uuid.uuid4()}.tmp"


def quarantine_temp_name() -> str:
    return f"quarantine-{uuid.uuid4()}.tmp"


def head_sig_temp_name() -> str:
    return f"head-sig-{uuid.uuid4()}.tmp"


def remove_orphans(paths: ProjectPaths, config: LockConfig, me: ProcessIdentity) -> list[str]:
    """Remove strictly named leftovers of crashed writers; call only while holding the lock.

    Temp ledgers, renamed lock directories and a quarantine directory moved aside for deletion can only belong to a
    previous holder, so they go at once. A staging
    directory belongs to a waiter that may still be alive: it goes only when its owner is dead or it is older than the
    stale window. Failures are ignored (the next holder tries again).

    Returns:
        The names removed (for tests and diagnostics).
    """
    removed: list[str] = []
    for name in _list(paths.project_dir):
        if ".tmp" not in name and _LOCK_PREFIX not in name:
            continue  # what every pattern below holds (so the usual entries compile no pattern: hooks start faster)
        path = paths.project_dir / name
        if any(p.match(name) for p in _TEMP_PATTERNS):
            unlink_quietly(path)
        elif _moved_aside(name) or (STAGED_LOCK_RE.match(name) and _staging_abandoned(path, config, me)):
            remove_tree_quietly(path)
        else:
            continue
        removed.append(name)
    from intentloop.store._spool import remove_stale_temps

    removed += remove_stale_temps(paths, config.stale_s)
    for directory, pattern in ((paths.private_dir, CONTROL_TEMP_RE), (paths.quarantine_dir, QUARANTINE_TEMP_RE)):
        try:
            st = os.lstat(directory)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        for name in _list(directory):
            if pattern.match(name):
                unlink_quietly(directory / name)
                removed.append(f"{directory.name}/{name}")
    return removed


def _moved_aside(name: str) -> bool:
    return bool(STALE_LOCK_RE.match(name) or RELEASED_LOCK_RE.match(name) or QUARANTINE_TEMP_RE.match(name))


def _list(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _staging_abandoned(path: Path, config: LockConfig, me: ProcessIdentity) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return True
    if time.time() - st.st_mtime >= config.stale_s:
        return True
    try:
        marker = read_marker(path / OWNER_NAME)
    except OSError:
        marker = None
    record = parse_owner(marker[0]) if marker else None
    if record is not None:
        return judge(record, me) is Liveness.DEAD
    # No readable owner record yet: the acquirer died between mkdir and writing it, or is still writing it. Only a
    # pid that no living process has proves the former.
    named = STAGED_LOCK_RE.match(path.name)
    pid = named.group("pid") if named else None
    return pid is not None and int(pid) != os.getpid() and probe_process(int(pid)) is GONE


__all__ = [
    "CONTROL_TEMP_RE",
    "HEAD_SIG_TEMP_RE",
    "LEDGER_TEMP_RE",
    "OWNER_NAME",
    "QUARANTINE_TEMP_RE",
    "RELEASED_LOCK_RE",
    "STAGED_LOCK_RE",
    "STALE_LOCK_RE",
    "control_temp_name",
    "head_sig_temp_name",
    "ledger_temp_name",
    "quarantine_temp_name",
    "released_lock_name",
    "remove_orphans",
    "staged_lock_name",
    "stale_lock_name",
]
