"""``injected-context.json``: what the prompt hook last injected per session, content-free, bounded, 0600."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from intentloop.model import session_hash
from intentloop.store import ProjectPaths
from intentloop.store._injected import INJECTED_NAME, MAX_ENTRIES, forget_injection, inject_once
from intentloop.store._keyfile import CACHE_KEY, load_or_create_key

PROJECT_ID = "a" * 64
TEXT = "[Intent Loop linked task_id=t-1. Keep this ID internal.]\n- [task; hard_constraint] Never deploy on a Friday"


@pytest.fixture
def paths(tmp_path: Path) -> ProjectPaths:
    data = tmp_path / "data"
    paths = ProjectPaths(data, PROJECT_ID)
    paths.ensure()
    load_or_create_key(data, CACHE_KEY)
    return paths


def _state(paths: ProjectPaths) -> Path:
    return paths.project_dir / INJECTED_NAME


def test_the_same_text_is_injected_once_per_session_and_a_changed_one_again(paths: ProjectPaths) -> None:
    one, two = session_hash("s-1"), session_hash("s-2")
    assert inject_once(paths, one, TEXT)
    assert not inject_once(paths, one, TEXT)
    assert inject_once(paths, two, TEXT)  # another session has its own memory
    assert inject_once(paths, one, TEXT + "\n- [task; outcome] Ship it")
    assert not inject_once(paths, one, TEXT + "\n- [task; outcome] Ship it")
    assert inject_once(paths, one, TEXT)  # back to the earlier text: it is not what was injected last


def test_the_file_is_private_content_free_and_keyed(paths: ProjectPaths) -> None:
    inject_once(paths, session_hash("s-1"), TEXT)
    raw = _state(paths).read_bytes()
    assert stat.S_IMODE(os.stat(_state(paths)).st_mode) == 0o600
    assert b"Friday" not in raw and b"t-1" not in raw and b"s-1" not in raw
    [[shash, digest]] = json.loads(raw)
    assert shash == session_hash("s-1")
    import hashlib

    assert digest != hashlib.sha256(TEXT.encode()).hexdigest()  # not a plain hash anyone could confirm a guess with


def test_the_file_is_bounded_and_drops_the_session_injected_into_longest_ago(paths: ProjectPaths) -> None:
    for i in range(MAX_ENTRIES + 10):
        assert inject_once(paths, session_hash(f"s-{i}"), TEXT)
    entries = json.loads(_state(paths).read_bytes())
    assert len(entries) == MAX_ENTRIES
    assert entries[0][0] == session_hash("s-10") and entries[-1][0] == session_hash(f"s-{MAX_ENTRIES + 9}")
    assert inject_once(paths, session_hash("s-0"), TEXT)  # dropped: injected again, nothing worse
    assert not inject_once(paths, session_hash(f"s-{MAX_ENTRIES + 9}"), TEXT)


def test_forgetting_injects_again_and_creates_nothing(paths: ProjectPaths) -> None:
    shash = session_hash("s-1")
    forget_injection(paths, shash)
    assert not _state(paths).exists()
    inject_once(paths, shash, TEXT)
    inject_once(paths, session_hash("s-2"), TEXT)
    forget_injection(paths, shash)
    assert inject_once(paths, shash, TEXT)
    assert not inject_once(paths, session_hash("s-2"), TEXT)  # only that session was forgotten
    assert sorted(p.name for p in paths.project_dir.iterdir()) == [INJECTED_NAME]  # no temporary file left


def test_without_the_key_or_the_project_every_prompt_injects_and_nothing_is_created(tmp_path: Path) -> None:
    data = tmp_path / "data"
    missing = ProjectPaths(data, PROJECT_ID)
    data.mkdir(mode=0o700)
    load_or_create_key(data, CACHE_KEY)
    assert inject_once(missing, session_hash("s"), TEXT) and inject_once(missing, session_hash("s"), TEXT)
    assert not missing.project_dir.exists()
    keyless = ProjectPaths(tmp_path / "other", PROJECT_ID)
    keyless.ensure()
    assert inject_once(keyless, session_hash("s"), TEXT) and inject_once(keyless, session_hash("s"), TEXT)
    assert list(keyless.project_dir.iterdir()) == []


@pytest.mark.parametrize("garbage", [b"not json", b'{"a": 1}', b"[[1, 2]]", b"[" + b" " * 60_000 + b"]"])
def test_a_garbled_or_oversized_file_means_injecting_and_is_replaced(paths: ProjectPaths, garbage: bytes) -> None:
    _state(paths).write_bytes(garbage)
    os.chmod(_state(paths), 0o600)
    assert inject_once(paths, session_hash("s"), TEXT)
    assert not inject_once(paths, session_hash("s"), TEXT)


def test_a_symlinked_file_is_never_followed(paths: ProjectPaths, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(b"[]")
    _state(paths).symlink_to(elsewhere)
    assert inject_once(paths, session_hash("s"), TEXT)
    assert elsewhere.read_bytes() == b"[]"  # the link was replaced, not written through
