"""The per-installation secret of the hook's keyed digests (docs/HOOKS.md): ``R/keys/hook-digest.key``.

Created and loaded like every installation key (``intentloop/store/_keyfile.py``: crash-safe publication, shared by
every process, a creator killed at any step leaves no key or a whole one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from intentloop.store._keyfile import KEY_DIR, KeyFile, load_key, load_or_create_key

KEY_NAME: Final = "hook-digest.key"
KEY_BYTES: Final = 32
HOOK_KEY: Final = KeyFile(KEY_NAME, KEY_BYTES, "the hook key")
#: ``.hook-digest.key.<32 hex>.tmp``: the only names a load or a creation ever removes from ``keys/``.
TEMP_RE: Final = HOOK_KEY.temp_re


def key_path(data_root: Path) -> Path:
    return HOOK_KEY.path(data_root)


def load_hook_key(data_root: Path) -> bytes | None:
    """The key, or ``None`` when none was created yet; lock-free, creates nothing.

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED`` (see :func:`load_key`).
    """
    return load_key(data_root, HOOK_KEY)


def load_or_create_hook_key(data_root: Path) -> bytes:
    """The key, created (32 random bytes, 0600, folder 0700) if there is none yet.

    Raises:
        StorageError: as :func:`load_hook_key`, or ``STORAGE_WRITE_FAILED``.
    """
    return load_or_create_key(data_root, HOOK_KEY)


__all__ = ["KEY_BYTES", "KEY_DIR", "KEY_NAME", "TEMP_RE", "key_path", "load_hook_key", "load_or_create_hook_key"]
