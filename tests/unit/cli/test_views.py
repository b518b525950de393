"""How ``intentloop show`` and the Markdown export name the file an evidence claim is bound to."""

from __future__ import annotations

from typing import Any

import pytest

from intentloop.cli.views import bound_file

TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"


@pytest.mark.parametrize(("stale", "state"), [(True, "stale"), (False, "current"), (None, "not checked")])
def test_the_bound_file_and_its_state(stale: bool | None, state: str) -> None:
    claim: dict[str, Any] = {"evidence_file": {"path": "logs/build.log", "sha256": "0" * 64}}
    if stale is not None:
        claim["evidence_stale"] = stale
    assert bound_file(claim) == ("logs/build.log", state)


def test_a_claim_bound_to_no_file_has_none() -> None:
    assert bound_file({"statement": "x"}) is None
    assert bound_file({"evidence_file": None}) is None


def test_a_path_an_older_ledger_stored_raw_is_shown_redacted_and_escaped() -> None:
    # Paths are checked before they are stored now; a ledger written before that may hold a token or a control.
    claim = {"evidence_file": {"path": f"logs/{TOKEN}\x1b]0;x\x07.log", "sha256": "0" * 64}, "evidence_stale": False}
    shown = bound_file(claim)
    assert shown is not None
    assert TOKEN not in shown[0] and "[REDACTED:github-token]" in shown[0]
    assert "\x1b" not in shown[0] and "\x07" not in shown[0] and "\\u001b" in shown[0]
