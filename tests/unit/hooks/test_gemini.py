"""Gemini CLI's BeforeAgent prompt: the user's own prompt after SessionStart's ``<hook_context>`` block."""

from __future__ import annotations

import pytest

from intentloop.hooks._gemini import user_prompt


@pytest.mark.parametrize(
    ("prompt", "user"),
    [
        ("<hook_context>ctx</hook_context>\n\n/intent show", "/intent show"),
        ("  \n<hook_context>a\nb</hook_context>fix it", "fix it"),
        # Gemini escapes < and > inside the context: the first closing tag is the block's own
        ("<hook_context>x &lt;/hook_context&gt; y</hook_context>\n\ngo", "go"),
        # only the block in front goes; a second one is the user's text
        ("<hook_context>a</hook_context>\n\n<hook_context>b</hook_context> go", "<hook_context>b</hook_context> go"),
        ("<hook_context>a</hook_context>", ""),
    ],
)
def test_the_block_in_front_is_removed(prompt: str, user: str) -> None:
    assert user_prompt(prompt) == user


@pytest.mark.parametrize(
    "prompt",
    [
        "/intent show",  # interactive mode: no block
        "<hook_context>never closed\n\n/intent show",
        "see <hook_context>x</hook_context> /intent show",
        "",
    ],
)
def test_a_prompt_without_a_whole_block_in_front_is_kept(prompt: str) -> None:
    assert user_prompt(prompt) == prompt
