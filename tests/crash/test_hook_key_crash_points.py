"""kill -9 of a key creator at every file-system step: the key is always usable afterwards, and the same one.

Both per-installation keys are created the same way (``intentloop/store/_keyfile.py``): the hook's digest key and the
Ed25519 signing key.

The child counts its own file-system audit events (open, mkdir, chmod, link, rename, remove, the ``renameat2`` call
through ctypes) and kills itself with SIGKILL right before the N-th; N runs from 0 until a child finishes. Both ways
of publishing are enumerated: ``renameat2(RENAME_NOREPLACE)`` and the ``link`` + ``unlink`` fallback (what older
versions always did).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.service._hookkey import KEY_DIR, key_path, load_hook_key, load_or_create_hook_key
from intentloop.store._signing import key_path as signing_key_path, load_or_create_signing_key, load_signing_key

# kind -> (the child's creator expression giving the key's identity as text, the parent's loader, creator, path)
KINDS = {
    "hook": (
        "__import__('intentloop.service._hookkey', fromlist=['x']).load_or_create_hook_key(ROOT).hex()",
        lambda root: key.hex() if (key := load_hook_key(root)) is not None else None,
        lambda root: load_or_create_hook_key(root).hex(),
        key_path,
    ),
    "signing": (
        "__import__('intentloop.store._signing', fromlist=['x']).load_or_create_signing_key(ROOT).key_id",
        lambda root: key.key_id if (key := load_signing_key(root)) is not None else None,
        lambda root: load_or_create_signing_key(root).key_id,
        signing_key_path,
    ),
}

_CHILD = """
import os, signal, sys
from pathlib import Path
kill_at, fallback = int(sys.argv[2]), sys.argv[3] == "1"
ROOT = Path(sys.argv[1])
import intentloop.store._fs as fs
import intentloop.service._hookkey, intentloop.store._signing  # loaded before counting starts
if fallback:
    fs._renameat2 = False
WATCH = {"open", "os.mkdir", "os.chmod", "os.link", "os.rename", "os.remove", "ctypes.call_function", "ctypes.dlopen"}
seen = [0]
def audit(event, args):
    if event in WATCH:
        if seen[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        seen[0] += 1
sys.addaudithook(audit)
key = CREATE
sys.stdout.write("DONE " + key + "\\n")
"""


def _run(root: Path, kill_at: int, fallback: bool, kind: str = "hook") -> subprocess.CompletedProcess[str]:
    child = _CHILD.replace("CREATE", KINDS[kind][0])
    return subprocess.run(
        [sys.executable, "-c", child, str(root), str(kill_at), "1" if fallback else "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("fallback", [False, True], ids=["renameat2", "link-unlink"])
def test_every_crash_point_of_key_creation_leaves_a_usable_key(tmp_path: Path, fallback: bool, kind: str) -> None:
    _child, load, create, path = KINDS[kind]
    points = 0
    for kill_at in range(200):
        root = tmp_path / f"{kill_at}"
        root.mkdir()  # the data root exists: the key is made under a project lock
        run = _run(root, kill_at, fallback, kind)
        if run.returncode == 0:
            assert run.stdout.startswith("DONE ")
            break
        assert run.returncode == -signal.SIGKILL, run.stderr
        points += 1
        found = load(root)  # never refused: nothing yet, or a whole key
        key = create(root)
        assert found is None or key == found
        assert load(root) == key and os.stat(path(root)).st_nlink == 1
        again = _run(root, 10_000, fallback, kind)  # another process after the crash uses the same key
        assert again.returncode == 0 and again.stdout.strip() == f"DONE {key}"
    else:
        pytest.fail("the creator never finished")
    assert points >= 6, points  # the enumeration really crossed the creation's steps
    print(f"\n{points} crash points ({'link-unlink' if fallback else 'renameat2'})")


def test_leftover_link_of_an_older_version_is_recovered(tmp_path: Path) -> None:
    """A key with a second link named as our temporary file (kill between link and unlink) loads, and the leftover
    goes; a second link with any other name is still refused (positive control of the refusal)."""
    key = load_or_create_hook_key(tmp_path)
    directory = tmp_path / KEY_DIR
    leftover = directory / f".hook-digest.key.{'ab' * 16}.tmp"
    os.link(key_path(tmp_path), leftover)
    assert load_hook_key(tmp_path) == key
    assert sorted(os.listdir(directory)) == ["hook-digest.key"]
    for other in (directory / "copy.key", directory / ".hook-digest.key.NOTHEX.tmp", tmp_path / "outside.tmp"):
        os.link(key_path(tmp_path), other)
        with pytest.raises(StorageError) as info:
            load_hook_key(tmp_path)
        assert info.value.code == "UNSAFE_DATA_FILE"
        assert other.exists()  # never removed: not ours
        other.unlink()
        assert load_hook_key(tmp_path) == key
