"""The rule catalog (``kingfisher-secret-scanner``) as the second layer of redaction, in process, with the real library:
what it adds on the corpus and on the held-out set, that identifiers stay, the span arithmetic, and every outcome of
loading it (off, cold, loaded, unavailable, failed) with what ``intentloop status`` then says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the corpus helpers of the sibling tests

from test_redaction_heldout import HELDOUT_MIN_BOTH, load_heldout, missed_formats
from test_redaction_recall import SURROUNDINGS, caught, load_corpus
from test_redaction_secrets import _benign

from intentloop.model import redact
from intentloop.model.redaction import CATALOG, catalog_in_use, use_catalog
from intentloop.store import catalog

#: The corpus with both layers (2026-12-02: 556 of 645, 86.2 %; the own rules alone: 550).
MIN_RECALL_BOTH = 556 / 645


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's catalog outcome undecided, and the own rules alone again afterwards."""
    monkeypatch.setattr(catalog, "_outcome", [])
    monkeypatch.setattr(catalog, "_wants_warming", [])
    yield
    use_catalog(None)


@pytest.fixture
def both_layers(fresh: None, catalog_env: dict[str, str]) -> None:
    assert catalog.load_catalog(catalog_env, cold_ok=False) == "loaded"
    assert catalog_in_use()


def _harness_pat() -> tuple[str, str]:
    """A format of the held-out set the own rules miss (a Harness personal access token): (line, secret)."""
    entry = next(e for e in load_heldout() if e["format"] == "Harness personal access token")
    return entry["example"], entry["secret"]


def test_a_format_only_the_catalog_knows_goes_in_every_surrounding(both_layers: None) -> None:
    line, secret = _harness_pat()
    for name, wrap in SURROUNDINGS.items():
        result = redact(wrap(line))
        assert secret not in result.text, name
        assert CATALOG in result.kinds and f"[REDACTED:{CATALOG}]" in result.text
        if name == "json":  # redacted per string value: the document stays JSON
            assert json.loads(result.text)["note"] == "from .env"
        assert redact(result.text).text == result.text  # idempotent


def test_without_the_catalog_that_format_survives(fresh: None) -> None:
    """The positive control: the own rules alone keep it (what the second layer adds)."""
    line, secret = _harness_pat()
    assert not catalog_in_use()
    assert secret in redact(line).text


def test_identifiers_stay_with_both_layers(both_layers: None) -> None:
    changed = [text for text in _benign() if redact(text).text != text]
    assert changed == []


def test_recall_on_the_corpus_with_both_layers(both_layers: None) -> None:
    corpus = load_corpus()
    whole = sum(all(caught(entry).values()) for entry in corpus)
    assert whole / len(corpus) >= MIN_RECALL_BOTH


def test_recall_on_the_held_out_set_with_both_layers(both_layers: None) -> None:
    entries = load_heldout()
    assert len(entries) - len(missed_formats(entries)) >= HELDOUT_MIN_BOTH


def test_spans_count_characters_not_bytes(both_layers: None) -> None:
    """Kingfisher reports UTF-8 byte offsets; text before the secret with wide characters must not shift the cut."""
    line, secret = _harness_pat()
    text = f"für die Bereitstellung 🚀 {line} — danach löschen"
    redacted = redact(text).text
    assert secret not in redacted
    assert redacted.startswith("für die Bereitstellung 🚀 ") and redacted.endswith(" — danach löschen")


def test_off_by_default_the_library_is_not_loaded(fresh: None) -> None:
    assert catalog.load_catalog({}, cold_ok=True) == "off"
    assert not catalog_in_use()
    assert "catalog off" in catalog.catalog_state({}).describe()


def test_a_hook_does_not_compile_a_cold_cache(fresh: None, tmp_path: Path) -> None:
    env = {catalog.ENV_CATALOG: "on", catalog.ENV_CATALOG_CACHE: str(tmp_path / "cold")}
    assert catalog.load_catalog(env, cold_ok=False) == "cold"
    assert not catalog_in_use() and catalog.wants_warming()
    state = catalog.catalog_state(env)
    assert not state.warm and "rule cache cold" in state.describe()
    line, secret = _harness_pat()
    assert secret in redact(line).text  # the own rules: what it stores meanwhile


def test_not_installed_falls_back_to_the_own_rules(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "_installed_version", lambda: None)
    env = {catalog.ENV_CATALOG: "on"}
    assert catalog.load_catalog(env, cold_ok=True) == "unavailable"
    assert not catalog_in_use()
    assert redact("password=hunter2x").text == "[REDACTED:credential]"
    assert "is not installed" in catalog.catalog_state(env).describe()
