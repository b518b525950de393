"""Fixtures shared by every test package: an isolated data root and an environment that points at it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

from fixtures.ledgers import ledger_kit as _ledger_kit


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with a throwaway HOME and none of the data-root variables of the person running the tests:
    without ``INTENT_LOOP_DATA_DIR`` the data root defaults to a folder under HOME, never the real one."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for name in ("INTENT_LOOP_DATA_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "CODEX_HOME", "PLUGIN_DATA"):
        monkeypatch.delenv(name, raising=False)
    # The rule catalog is on by default, and a cold cache costs ~6 s of CPU a process: every test runs with it off
    # (the subprocess environments the tests build say so too) but the ones that ask for ``catalog_env``.
    monkeypatch.setenv("INTENT_LOOP_CATALOG", "off")
    for name in ("INTENT_LOOP_CATALOG_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    """A storage root that does not exist yet (reads must not create it; the first write does)."""
    return tmp_path / "data"


@pytest.fixture
def data_env(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``INTENT_LOOP_DATA_DIR`` set to :func:`data_root`, the other data-root sources and lock timings unset."""
    for name in ("CODEX_HOME", "PLUGIN_DATA"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HEARTBEAT", "STALE", "WAIT", "CEILING"):
        monkeypatch.delenv(f"INTENT_LOOP_LOCK_{name}_S", raising=False)
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(data_root))
    return data_root


@pytest.fixture(scope="session")
def catalog_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The rule catalog on, its cache compiled once per test session (~6 s of CPU): only the tests that exercise the
    second layer of redaction ask for it; every other test redacts with the own rules alone, as by default."""
    from intentloop.store.catalog import ENV_CATALOG, ENV_CATALOG_CACHE, catalog_state, warm_cache

    env = {ENV_CATALOG: "on", ENV_CATALOG_CACHE: str(tmp_path_factory.mktemp("rule-cache"))}
    warm_cache(env)
    assert catalog_state(env).warm
    return env


@pytest.fixture(scope="session")
def ledger_kit() -> ModuleType:
    """``tests/fixtures/ledgers/ledger_kit.py``: ledgers and lock records built from the format description alone."""
    return _ledger_kit


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory (the hooks and recovery packages override it with their own ``Project``)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    """A second project directory, for isolation checks."""
    root = tmp_path / "other"
    root.mkdir()
    return root


# Shared 2-core machines are noisy: hypothesis must judge properties, never wall time.
settings.register_profile("intentloop", deadline=None)
settings.load_profile("intentloop")
