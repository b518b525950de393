"""The per-installation key of the hooks' keyed digests (`_hookkey.py`): private, reused, refused when loose,
linked or the wrong size; concurrent creators agree on one key."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.service._hookkey import KEY_BYTES, key_path, load_hook_key, load_or_create_hook_key


def test_key_is_private_and_reused(tmp_path: Path) -> None:
    assert load_hook_key(tmp_path) is None
    key = load_or_create_hook_key(tmp_path)
    assert load_or_create_hook_key(tmp_path) == key == load_hook_key(tmp_path)
    assert stat.S_IMODE(os.stat(key_path(tmp_path)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(key_path(tmp_path).parent).st_mode) == 0o700
    assert [p.name for p in key_path(tmp_path).parent.iterdir()] == ["hook-digest.key"]


def test_symlinked_or_loose_key_is_refused(tmp_path: Path) -> None:
    load_or_create_hook_key(tmp_path)
    path = key_path(tmp_path)
    os.chmod(path, 0o644)
    with pytest.raises(StorageError) as loose:
        load_hook_key(tmp_path)
    assert loose.value.code == "UNSAFE_DATA_FILE"
    os.chmod(path, 0o600)
    assert load_hook_key(tmp_path) is not None  # positive control
    target = tmp_path / "elsewhere.key"
    target.write_bytes(b"k" * KEY_BYTES)
    os.chmod(target, 0o600)
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(StorageError) as linked:
        load_hook_key(tmp_path)
    assert linked.value.code == "PATH_ESCAPE"


def test_wrong_size_key_is_refused(tmp_path: Path) -> None:
    load_or_create_hook_key(tmp_path)
    key_path(tmp_path).write_bytes(b"short")
    with pytest.raises(StorageError):
        load_hook_key(tmp_path)


def test_concurrent_creators_agree_on_one_key(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path;"
        "from intentloop.service._hookkey import load_or_create_hook_key as f;"
        "print(f(Path(sys.argv[1])).hex())"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE) for _ in range(6)]
    keys = {p.communicate(timeout=30)[0].strip() for p in procs}
    assert len(keys) == 1 and all(p.returncode == 0 for p in procs)
    assert [p.name for p in key_path(tmp_path).parent.iterdir()] == ["hook-digest.key"]
