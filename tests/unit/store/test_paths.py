"""docs/STORAGE.md: where data lives, canonical roots, modes, and every path-safety refusal beside a control."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import (
    DataRoot,
    LockConfig,
    PrivateControl,
    ProjectStore,
    canonicalize_project_root,
    locate_data_root,
    resolve_data_root,
)

FAST = LockConfig(heartbeat_s=0.5, stale_s=1.0, wait_s=0.3, ceiling_s=2.0)
PID = project_id_for("/some/project")
TASK = str(uuid.uuid4())


def draft(request_id: str = "r-1") -> EventDraft:
    return EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={"n": 1})


def write_one(store: ProjectStore, request_id: str = "r-1") -> None:
    with store.locked() as ledger:
        ledger.append([draft(request_id)])


def control(store: ProjectStore, session: str = "a" * 64) -> PrivateControl:
    return PrivateControl(
        created_at="2026-11-30T01:02:03.456Z", host_session_hash=session, project_id=store.project_id, task_id=TASK
    )


# --- data root ---------------------------------------------------------------------------------------------------


def test_data_root_sources_in_order(tmp_path):
    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "INTENT_LOOP_DATA_DIR": "/d",
        "XDG_DATA_HOME": "/x",
        "CODEX_HOME": "/c",
        "PLUGIN_DATA": "/p",
    }
    assert locate_data_root(env) == DataRoot(
        path=Path("/d"), source="INTENT_LOOP_DATA_DIR", reason="INTENT_LOOP_DATA_DIR is set"
    )
    del env["INTENT_LOOP_DATA_DIR"]
    found = locate_data_root(env)
    assert (found.path, found.source) == (Path("/x/intentloop/v1"), "default")
    del env["XDG_DATA_HOME"]
    assert resolve_data_root(env) == home / ".local" / "share" / "intentloop" / "v1"
    # PLUGIN_DATA and the program's location never decide: Codex gives neither to an MCP server
    assert resolve_data_root({"HOME": str(home), "PLUGIN_DATA": "/p"}) == home / ".local/share/intentloop/v1"
    assert not home.exists()  # resolving creates nothing


def test_a_relative_xdg_data_home_is_ignored(tmp_path):
    home = tmp_path / "home"
    assert resolve_data_root({"HOME": str(home), "XDG_DATA_HOME": "rel"}) == home / ".local/share/intentloop/v1"


def test_the_original_plugins_data_is_adopted_in_place_until_the_new_root_exists(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    original = home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    new = home / ".local" / "share" / "intentloop" / "v1"
    original.mkdir(parents=True)  # an original root without projects/ is not data
    assert resolve_data_root(env) == new
    (original / "projects").mkdir()
    found = locate_data_root(env)
    assert (found.path, found.source) == (original, "original") and "adopted" in found.reason
    custom = tmp_path / "codex-home"  # CODEX_HOME moves the original's location
    assert resolve_data_root({**env, "CODEX_HOME": str(custom)}) == new
    (custom / "plugin-data" / "intent-loop" / "v1" / "projects").mkdir(parents=True)
    assert resolve_data_root({**env, "CODEX_HOME": str(custom)}) == custom / "plugin-data" / "intent-loop" / "v1"
    new.mkdir(parents=True)  # once the new root exists, it wins
    assert locate_data_root(env) == DataRoot(
        path=new, source="default", reason="the per-user default (~/.local/share/intentloop/v1)"
    )
    assert resolve_data_root({**env, "INTENT_LOOP_DATA_DIR": "/d"}) == Path("/d")  # the override still wins


def test_data_root_required_only_without_a_home(tmp_path):
    for env in ({}, {"HOME": ""}, {"HOME": "relative/home"}, {"INTENT_LOOP_DATA_DIR": "", "CODEX_HOME": "/c"}):
        with pytest.raises(StorageError) as info:
            resolve_data_root(env)
        assert info.value.code == "DATA_DIR_REQUIRED"
    assert resolve_data_root({"HOME": str(tmp_path)}) == tmp_path / ".local/share/intentloop/v1"  # positive control


def test_data_root_defaults_to_the_process_environment(data_env):
    assert resolve_data_root() == data_env
    assert not data_env.exists()  # resolving creates nothing


def test_relative_data_dir_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_data_root({"INTENT_LOOP_DATA_DIR": "rel"}) == tmp_path / "rel"


# --- project roots -----------------------------------------------------------------------------------------------


def test_project_root_is_the_realpath_of_an_existing_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert canonicalize_project_root(str(tmp_path / "link")) == os.path.realpath(real)
    assert canonicalize_project_root(str(real) + "/./") == os.path.realpath(real)


@pytest.mark.parametrize("raw", ["", "relative/path", "/does/not/exist", 42, None, "/tmp/\0x"])
def test_invalid_project_roots_are_refused(raw):
    with pytest.raises(InvalidInputError) as info:
        canonicalize_project_root(raw)
    assert info.value.code == "PROJECT_ROOT_INVALID"


def test_a_file_is_not_a_project_root(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidInputError):
        canonicalize_project_root(str(tmp_path / "f"))


@pytest.mark.parametrize("bad", ["../escape", "A" * 64, "a" * 63, "..\\escape", "a" * 64 + "/x"])
def test_invalid_project_ids_are_refused(data_root, bad):
    with pytest.raises(StorageError) as info:
        ProjectStore(data_root, bad)
    assert info.value.code == "INVALID_PROJECT_ID"
    ProjectStore(data_root, "a" * 64)  # control


# --- reads create nothing; modes -----------------------------------------------------------------------------------


def test_reads_never_create_anything(data_root):
    store = ProjectStore(data_root, PID, config=FAST)
    assert store.read().events == ()
    assert store.verify().ok
    assert store.read_controls() == [] and store.read_control("b" * 64) is None
    assert not store.exists()
    assert not data_root.exists()


def test_a_data_root_open_to_others_is_made_private_by_the_first_write(data_root):
    data_root.mkdir(mode=0o700)
    os.chmod(data_root, 0o777)  # made by hand, or by mkdir under a lax umask
    (data_root / "projects").mkdir()
    os.chmod(data_root / "projects", 0o755)
    store = ProjectStore(data_root, PID, config=FAST)
    assert store.read().events == () and stat.S_IMODE(os.stat(data_root).st_mode) == 0o777  # a read changes nothing
    write_one(store)
    for directory in (data_root, data_root / "projects", store.project_dir):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory


def test_a_data_root_of_another_user_open_to_others_is_refused(data_root):
    data_root.mkdir(mode=0o755)
    os.chmod(data_root, 0o755)
    if os.geteuid() == 0:  # only root can hand a directory to another user; CI runs as root
        os.chown(data_root, 65534, 65534)
        with pytest.raises(StorageError) as refused:
            write_one(ProjectStore(data_root, PID, config=FAST))
        assert refused.value.code == "INVALID_DATA_DIR" and "another user" in refused.value.message
        os.chown(data_root, 0, 0)
    write_one(ProjectStore(data_root, PID, config=FAST))  # control: our own is made private and used
    assert stat.S_IMODE(os.stat(data_root).st_mode) == 0o700


def test_modes_are_0700_and_0600_even_under_umask_000(data_root):
    old = os.umask(0)
    try:
        store = ProjectStore(data_root, PID, config=FAST)
        with store.locked() as ledger:
            ledger.append([draft()])
            ledger.write_control(control(store))
            assert stat.S_IMODE(os.stat(store.lock_path).st_mode) == 0o700
            assert stat.S_IMODE(os.stat(store.lock_path / "owner.json").st_mode) == 0o600
            ledger.write_quarantine("note.json", b"{}\n")
    finally:
        os.umask(old)
    for directory in (data_root, data_root / "projects", store.project_dir, store.private_dir, store.quarantine_dir):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
    for path in (store.ledger_path, store.private_dir / f"{'a' * 64}.json", store.quarantine_dir / "note.json"):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


# --- refusals, each with its positive control ---------------------------------------------------------------------


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=FAST)
    write_one(store)
    return store


def test_symlinked_ledger_is_refused(store, tmp_path):
    assert len(store.read()) == 1  # control
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(store.ledger_path.read_bytes())
    store.ledger_path.unlink()
    store.ledger_path.symlink_to(outside)
    for action in (store.read, lambda: write_one(store, "r-2")):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "PATH_ESCAPE"
    assert outside.read_bytes().count(b"\n") == 1


def test_hard_linked_ledger_is_refused(store, tmp_path):
    assert len(store.read()) == 1  # control
    os.link(store.ledger_path, tmp_path / "second-name")
    for action in (store.read, lambda: write_one(store, "r-2")):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "UNSAFE_DATA_FILE"
    (tmp_path / "second-name").unlink()
    write_one(store, "r-2")  # control again: once singly linked it works
    assert len(store.read()) == 2


def test_fifo_ledger_is_refused_without_blocking(store):
    store.ledger_path.unlink()
    os.mkfifo(store.ledger_path, 0o600)
    for action in (store.read, lambda: write_one(store, "r-2")):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "UNSAFE_DATA_FILE"


def test_directory_as_ledger_is_refused(store):
    store.ledger_path.unlink()
    store.ledger_path.mkdir()
    with pytest.raises(StorageError) as info:
        store.read()
    assert info.value.code == "UNSAFE_DATA_FILE"


def test_symlinked_lock_is_refused(store, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    store.lock_path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StorageError) as info:
        write_one(store, "r-2")
    assert info.value.code == "PATH_ESCAPE"
    assert os.listdir(tmp_path / "elsewhere") == []
    store.lock_path.unlink()
    write_one(store, "r-2")  # control
    assert len(store.read()) == 2


def test_lock_that_is_a_file_is_refused(store):
    store.lock_path.write_text("not a directory")
    with pytest.raises(StorageError) as info:
        write_one(store, "r-2")
    assert info.value.code == "INVALID_DATA_DIR"


def test_symlinked_quarantine_is_refused(store, tmp_path):
    (tmp_path / "q").mkdir()
    store.quarantine_dir.symlink_to(tmp_path / "q")
    with store.ledger_path.open("ab") as handle:
        handle.write(b'{"torn')  # the next write must quarantine this, and refuses the symlinked quarantine
    with pytest.raises(StorageError) as info:
        write_one(store, "r-2")
    assert info.value.code == "PATH_ESCAPE"
    assert os.listdir(tmp_path / "q") == []
    with pytest.raises(StorageError) as info, store.locked(verify=False) as ledger:
        ledger.remove_quarantine()
    assert info.value.code == "PATH_ESCAPE"
    store.quarantine_dir.unlink()
    write_one(store, "r-2")  # control: a real quarantine directory works
    assert len(store.read()) == 2 and len(os.listdir(store.quarantine_dir)) == 1


def test_symlinked_private_sessions_is_refused(store, tmp_path):
    with store.locked() as ledger:
        ledger.write_control(control(store))  # control
    assert store.read_controls() == [control(store)]
    outside = tmp_path / "private"
    store.private_dir.rename(outside)
    store.private_dir.symlink_to(outside)
    for action in (store.read_controls, lambda: store.read_control("a" * 64)):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "PATH_ESCAPE"
    with pytest.raises(StorageError) as info, store.locked() as ledger:
        ledger.write_control(control(store, "b" * 64))
    assert info.value.code == "PATH_ESCAPE"
    assert sorted(os.listdir(outside)) == [f"{'a' * 64}.json"]


def test_symlinked_control_file_is_refused(store, tmp_path):
    with store.locked() as ledger:
        ledger.write_control(control(store))
    target = store.private_dir / f"{'a' * 64}.json"
    (tmp_path / "c.json").write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(tmp_path / "c.json")
    with pytest.raises(StorageError) as info:
        store.read_controls()
    assert info.value.code == "PATH_ESCAPE"


def test_symlinked_projects_directory_is_refused(data_root, tmp_path):
    store = ProjectStore(data_root, PID, config=FAST)
    write_one(store)  # control
    (data_root / "projects").rename(tmp_path / "real-projects")
    (data_root / "projects").symlink_to(tmp_path / "real-projects")
    for action in (store.read, store.exists, lambda: write_one(store, "r-2")):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "PATH_ESCAPE"


def test_symlinked_project_directory_is_a_path_escape(data_root, tmp_path):
    store = ProjectStore(data_root, PID, config=FAST)
    write_one(store)
    elsewhere = tmp_path / "elsewhere"
    store.project_dir.rename(elsewhere)
    store.project_dir.symlink_to(elsewhere)
    for action in (store.read, lambda: write_one(store, "r-2")):
        with pytest.raises(StorageError) as info:
            action()
        assert info.value.code == "PATH_ESCAPE"
    assert elsewhere.joinpath("ledger.jsonl").read_bytes().count(b"\n") == 1


def test_projects_that_is_a_file_is_refused(data_root):
    data_root.mkdir()
    (data_root / "projects").write_text("x")
    store = ProjectStore(data_root, PID, config=FAST)
    with pytest.raises(StorageError) as info:
        store.read()
    assert info.value.code == "INVALID_DATA_DIR"


def test_data_root_may_itself_be_a_symlink(tmp_path):
    (tmp_path / "real-root").mkdir()
    (tmp_path / "root-link").symlink_to(tmp_path / "real-root")
    store = ProjectStore(tmp_path / "root-link", PID, config=FAST)
    write_one(store)
    assert len(store.read()) == 1
