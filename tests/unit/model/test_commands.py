"""``parse_intent_command``: what is a hook command, and what each command's syntax yields or refuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from intentloop.model.commands import COMMAND_VERBS, REMEMBER_FACETS, IntentCommand, parse_intent_command


@pytest.mark.parametrize(
    "prompt",
    [
        "remember Use Rust",
        "please /intent remember Use Rust",
        "Why did /intent show nothing?",
        "/intentional remember x",
        "/intents show",
        "/intent",
        "/intent   ",
        "/intent start",
        "/intent export",
        "/intent remembers x",
        "intent remember x",
        "#intent show",
    ],
)
def test_only_a_known_verb_right_after_the_command_word_is_a_command(prompt: str) -> None:
    assert parse_intent_command(prompt) is None


@pytest.mark.parametrize("word", ["/intent", "$intent", "/INTENT", "$Intent"])
@pytest.mark.parametrize("verb", COMMAND_VERBS)
def test_every_verb_in_both_forms_is_recognised(word: str, verb: str) -> None:
    command = parse_intent_command(f"  {word} {verb}\n")
    assert command is not None and command.verb == verb


@pytest.mark.parametrize(("prefix", "facet"), [*REMEMBER_FACETS.items(), ("CONSTRAINT", "hard_constraint")])
def test_remember_prefixes_choose_the_facet(prefix: str, facet: str) -> None:
    assert parse_intent_command(f"/intent remember {prefix}: Keep it small") == IntentCommand(
        verb="remember", statement="Keep it small", facet=facet
    )


def test_remember_without_a_prefix_is_an_outcome_and_keeps_unknown_prefixes_in_the_statement() -> None:
    assert parse_intent_command("/intent remember note: ship it") == IntentCommand(
        verb="remember", statement="note: ship it", facet="outcome"
    )


def test_a_line_break_stays_in_the_statement_for_the_service_to_reject() -> None:
    command = parse_intent_command("/intent remember one\ntwo")
    assert command is not None and command.statement == "one\ntwo" and command.problem is None


@pytest.mark.parametrize(
    "prompt",
    [
        "/intent remember",
        "/intent remember   constraint:   ",
        "/intent forget",
        "/intent forget abc",
        "/intent forget xyz1",
        "/intent forget abcd\nlast",
        "/intent correct abcd",
        "/intent correct abcd =>   ",
        "/intent correct zz => Use Go",
        "/intent feedback keep",
        "/intent feedback great: yes",
        "/intent feedback uncertain:   ",
        "/intent show everything",
        "/intent off now",
        "/intent on please",
        "/intent private please",
    ],
)
def test_malformed_commands_carry_a_problem(prompt: str) -> None:
    command = parse_intent_command(prompt)
    assert command is not None and command.problem


def test_well_formed_arguments() -> None:
    assert parse_intent_command("/intent forget LAST") == IntentCommand(verb="forget", target="last")
    assert parse_intent_command("/intent forget AB12-cd") == IntentCommand(verb="forget", target="ab12-cd")
    assert parse_intent_command("/intent correct ab12 => Use Go => not Rust") == IntentCommand(
        verb="correct", target="ab12", statement="Use Go => not Rust"
    )
    assert parse_intent_command("/intent feedback Intent_Change: wrong goal") == IntentCommand(
        verb="feedback", statement="wrong goal", feedback_class="intent_change"
    )


@pytest.mark.parametrize(
    "prompt",
    [
        "/ıntent remember Use PostgreSQL",  # dotless i: Unicode case folding would take it for the command word
        "/İntent remember Use PostgreSQL",  # dotted capital I
        "/intent rememBer Use PostgreSQL",  # control below: only this one is a command
        "/intent \u212aeep Use PostgreSQL",  # not a verb either way
        "/intent feedbac\u212a implementation_change: slow",  # the Kelvin sign lowers to an ASCII k
    ],
)
def test_only_ascii_letters_spell_the_command_and_its_verb(prompt: str) -> None:
    command = parse_intent_command(prompt)
    assert (command is not None) == prompt.startswith("/intent rememBer")


def test_a_facet_prefix_is_spelt_in_ascii() -> None:
    command = parse_intent_command("/intent remember \u017fuccess: it builds")  # long s folds to s in Unicode
    assert command is not None and command.facet == "outcome" and command.statement == "\u017fuccess: it builds"
    control = parse_intent_command("/intent remember SUCCESS: it builds")
    assert control is not None and control.facet == "success_signal" and control.statement == "it builds"


def _skill_words(text: str) -> tuple[set[str], set[str]]:
    """The /intent words the skill's description names, and those its "Entry points" table has a row for."""
    description = re.search(r"^description: .*?/intent \(([^)]*)\)", text, re.M)
    assert description is not None
    named = {word.strip() for word in description.group(1).split(",")}
    rows = set(re.findall(r"^\| `/intent (\w+)", text.split("## Entry points", 1)[1], re.M))
    return named, rows


def test_the_skill_names_every_command_the_prompt_hook_runs() -> None:
    """The skill is what Claude Code lists for ``/intent`` and what an agent follows when no hook ran: it names each
    verb the hook runs (``private`` is refused there, so it is the agent's ``intent_set_mode``) and the agent's own."""
    text = (Path(__file__).resolve().parents[3] / "skills" / "intent" / "SKILL.md").read_text(encoding="utf-8")
    expected = {*COMMAND_VERBS, "start", "export"} - {"private"}
    named, rows = _skill_words(text)
    assert named == expected and rows == expected
    # control: a verb left out of both is noticed
    gap = text.replace("remember, ", "").replace("| `/intent remember", "| `/intent")
    assert "remember" not in set.union(*_skill_words(gap))
