"""The rule catalog (``kingfisher-secret-scanner``) as the second layer of redaction, in process, with the real library:
what it adds on the corpus and on the held-out set, that identifiers stay, the span arithmetic, and every outcome of
loading it (off, on by default, cold, standing by, unavailable, failed) with what ``intentloop status`` then says.
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

#: The corpus with both layers (2026-12-03: 557 of 645, 86.4 %; the own rules alone: 550).
MIN_RECALL_BOTH = 557 / 645


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's catalog outcome undecided, and the own rules alone again afterwards."""
    monkeypatch.setattr(catalog, "_outcome", [])
    monkeypatch.setattr(catalog, "_wants_warming", [])
    yield
    use_catalog(None)


@pytest.fixture
def both_layers(fresh: None, catalog_env: dict[str, str]) -> None:
    assert catalog.load_catalog(catalog_env, cold_ok=True) == "standby"  # warm: it loads on the first text it may match
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


def test_with_a_warm_cache_the_library_is_loaded_only_for_a_text_the_patterns_cannot_answer(
    fresh: None, catalog_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Path] = []
    real_open = catalog._open
    monkeypatch.setattr(catalog, "_open", lambda folder, *args: opened.append(folder) or real_open(folder, *args))
    assert catalog.load_catalog(catalog_env, cold_ok=False) == "standby"
    assert catalog_in_use() and "answer without loading it" in catalog.catalog_state(catalog_env).describe()
    statement = "keep the retry budget at three attempts and log each failure with its request id"
    assert redact(statement).text == statement
    line, secret = _harness_pat()
    short = redact(line)
    assert secret not in short.text and CATALOG in short.kinds  # the rules' patterns found it
    assert opened == []  # nothing loaded for either
    long = f"{line} " + "and keep the retry budget at three attempts " * 25  # past the 1,000 characters searched
    result = redact(long)
    assert secret not in result.text and CATALOG in result.kinds  # the library, loaded for this text
    assert len(opened) == 1
    redact(f"again {long}")
    assert len(opened) == 1  # once
    assert redact(line) == short  # loaded or not, a short text gets the same answer in every process


@pytest.mark.parametrize("repeat", [1, 60], ids=["searched by the patterns", "scanned by the library"])
def test_spans_count_characters_not_bytes(both_layers: None, repeat: int) -> None:
    """Kingfisher reports UTF-8 byte offsets, and the patterns search the bytes of a non-ASCII text too; text before
    the secret with wide characters must not shift the cut."""
    line, secret = _harness_pat()
    tail = " — danach löschen" * repeat
    text = f"für die Bereitstellung 🚀 {line}{tail}"
    redacted = redact(text).text
    assert secret not in redacted
    assert redacted.startswith("für die Bereitstellung 🚀 ") and redacted.endswith(tail)


def test_off_the_library_is_not_loaded(fresh: None) -> None:
    env = {catalog.ENV_CATALOG: "off"}
    assert catalog.load_catalog(env, cold_ok=True) == "off"
    assert not catalog_in_use()
    assert "catalog off" in catalog.catalog_state(env).describe()


@pytest.mark.parametrize("value", [None, "", "on", "yes"])
def test_on_by_default(value: str | None) -> None:
    """Only ``off`` turns it off: no variable, an empty one or any other value keeps both layers."""
    env = {} if value is None else {catalog.ENV_CATALOG: value}
    assert catalog.enabled(env) and catalog.catalog_state(env).enabled
    assert not catalog.enabled({catalog.ENV_CATALOG: " OFF "})  # the control


def test_a_hook_does_not_compile_a_cold_cache(fresh: None, tmp_path: Path) -> None:
    env = {catalog.ENV_CATALOG: "on", catalog.ENV_CATALOG_CACHE: str(tmp_path / "cold")}
    assert catalog.load_catalog(env, cold_ok=False) == "cold"
    assert not catalog_in_use() and catalog.wants_warming()
    state = catalog.catalog_state(env)
    assert not state.warm and "rule cache cold" in state.describe()
    line, secret = _harness_pat()
    assert secret in redact(line).text  # the own rules: what it stores meanwhile


def test_a_hook_treats_a_cache_without_its_keywords_as_cold(fresh: None, tmp_path: Path) -> None:
    """Compiled rules without the keyword file (written last): the hook does not load the library inline either."""
    env = {catalog.ENV_CATALOG: "on", catalog.ENV_CATALOG_CACHE: str(tmp_path / "half")}
    version = catalog.catalog_state(env).version
    assert version is not None
    folder = catalog.cache_dir(env, version)
    folder.mkdir(parents=True, mode=0o700)
    (folder / "rules.vscdb").write_bytes(b"")
    assert catalog.catalog_state(env).warm and not catalog.catalog_state(env).keywords
    assert catalog.load_catalog(env, cold_ok=False) == "cold"
    assert not catalog_in_use() and catalog.wants_warming()


def test_not_installed_falls_back_to_the_own_rules(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "_installed_version", lambda: None)
    env = {catalog.ENV_CATALOG: "on"}
    assert catalog.load_catalog(env, cold_ok=True) == "unavailable"
    assert not catalog_in_use()
    assert redact("password=hunter2x").text == "[REDACTED:credential]"
    assert "is not installed" in catalog.catalog_state(env).describe()


def test_status_says_what_redacts_after_a_failed_load() -> None:
    """With its keywords and patterns in the cache, a library that failed to load still leaves the rules' patterns
    redacting a line (no load needed); without them, only the own rules."""
    state = catalog.CatalogState(True, "1.5.0", "/c", warm=True, keywords=True, failure="ImportError: gone")
    assert state.describe().startswith("own rules + the rule patterns of kingfisher-secret-scanner 1.5.0")
    assert "failed to load (ImportError: gone)" in state.describe()
    without = catalog.CatalogState(True, "1.5.0", "/c", warm=True, keywords=False, failure="ImportError: gone")
    assert without.describe().startswith("own rules only:")


def test_the_second_layer_never_cuts_into_a_marker(fresh: None) -> None:
    """A catalog rule may match around what the own rules already redacted (``ftp://`` … ``@`` around a URL's
    credential): the marker stays whole, what the span holds beside it is still redacted, and redaction stays
    idempotent."""
    import re

    around = re.compile(r"[a-z-]*\]@[a-z]+")
    use_catalog(lambda text: [match.span() for match in around.finditer(text)])
    result = redact("ftp://user:kpgwnzjw@ftp.example.com:21")
    assert result.text == "ftp://[REDACTED:url-credential][REDACTED:catalog].example.com:21"
    assert redact(result.text).text == result.text
    use_catalog(lambda text: [match.span() for match in re.finditer(r"\[REDACTED:[a-z-]+\]", text)])
    assert redact("ftp://user:kpgwnzjw@ftp.example.com:21").text == "ftp://[REDACTED:url-credential]@ftp.example.com:21"
    use_catalog(None)
    assert redact("ftp://user:kpgwnzjw@ftp.example.com:21").text == "ftp://[REDACTED:url-credential]@ftp.example.com:21"
