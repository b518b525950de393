"""The bundled skill: where it is found, and that it says what the contract requires."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from intentloop.errors import IntentLoopError
from intentloop.mcp import TOOL_NAMES
from intentloop.mcp.skill import MAX_SKILL_BYTES, default_skill_paths, read_skill

REPO_SKILL = Path(__file__).resolve().parents[3] / "skills" / "intent" / "SKILL.md"
ENTRY_POINTS = {
    "start": {"intent_start_task"},
    "show": {"intent_get_snapshot"},
    "correct": {"intent_replace_claim", "intent_invalidate"},
    "feedback": {"intent_add_evidence"},
    "forget": {"intent_delete"},
    "export": {"intent_export"},
    "off": {"intent_set_mode"},
}


def test_default_paths_find_the_repository_skill() -> None:
    assert REPO_SKILL in default_skill_paths()
    assert read_skill() == REPO_SKILL.read_text(encoding="utf-8")


def test_first_readable_candidate_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    second.write_text("second", encoding="utf-8")
    assert read_skill([first, second]) == "second"
    first.write_text("first", encoding="utf-8")
    assert read_skill([first, second]) == "first"


def test_unreadable_candidates_are_skipped(tmp_path: Path) -> None:
    directory = tmp_path / "dir.md"
    directory.mkdir()
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00bad")
    huge = tmp_path / "huge.md"
    huge.write_text("x" * (MAX_SKILL_BYTES + 1), encoding="utf-8")
    good = tmp_path / "good.md"
    good.write_text("good", encoding="utf-8")
    with pytest.raises(IntentLoopError) as exc:
        read_skill([directory, binary, huge, tmp_path / "missing.md"])
    assert exc.value.code == "SKILL_NOT_FOUND"
    assert read_skill([directory, binary, huge, good]) == "good"


def _skill() -> str:
    return REPO_SKILL.read_text(encoding="utf-8")


def test_skill_has_frontmatter_with_name_and_description() -> None:
    match = re.match(r"\A---\nname: intent\ndescription: (.+?)\n---\n", _skill(), re.DOTALL)
    assert match, "SKILL.md must open with YAML frontmatter naming the skill"
    assert "/intent" in match.group(1)


@pytest.mark.parametrize(("command", "tools"), sorted(ENTRY_POINTS.items()))
def test_every_entry_point_maps_to_its_tools(command: str, tools: set[str]) -> None:
    rows = [line for line in _skill().splitlines() if line.startswith(f"| `/intent {command}")]
    assert len(rows) == 1, command
    for tool in tools:
        assert f"`{tool}`" in rows[0], (command, tool)


def test_skill_names_only_real_tools() -> None:
    named = set(re.findall(r"`(intent_[a-z_]+)`", _skill())) - {"intent_change", "intent_loop"}
    assert named <= set(TOOL_NAMES)
    assert len(named) >= 12


def test_skill_states_the_rules_that_keep_statuses_apart() -> None:
    text = _skill().lower()
    assert "never treat inferred or evidence records as the user's words" in text
    assert "stay silent" in text and "when to record" in text
    assert "pass it only when asked" in text  # host_session_id
    assert "same `request_id`" in text
