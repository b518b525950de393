"""Recall on formats intentloop's rules were not written against: every documented example of the Kingfisher rule
catalog (one line, one per rule; tests/fixtures/redaction_corpus.json), each in four kinds of surrounding text.

A format is caught when its secret part survives in none of the four surroundings. The secret part is the rule's
capture on its example (or, where Python cannot run the rule's pattern, the example's most random-looking token),
redrawn at random in the same shape. The corpus was built after the generic credential rules were written, and
two rules were adjusted after it (a key word joined to its secret in one name): it is not a held-out measure, which
stays outside the project.
``python tools/bench/redaction_recall.py`` prints the per-format table of docs/REDACTION_RECALL.md from the same data.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from pathlib import Path

from intentloop.model import redact

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "redaction_corpus.json"
#: The floor at the measured recall by format (2026-12-02: 550 of 645 formats, 85.3 %; the goal is 95 %, not met on
#: this corpus: docs/REDACTION.md, "Recall").
MIN_RECALL = 0.852

#: The four kinds of surrounding text: prose, a log line, a JSON document, a Markdown list item with code.
SURROUNDINGS: dict[str, Callable[[str], str]] = {
    "prose": lambda example: f"Remember that {example} was pasted in the chat; rotate it tomorrow.",
    "log": lambda example: f"2026-12-02T10:00:00Z INFO worker-3 loaded config: {example} (took 12 ms)",
    "json": lambda example: json.dumps({"note": "from .env", "line": example}),
    "markdown": lambda example: f"- set `{example}` before `make deploy`",
}


_HEX_LOWER = frozenset("0123456789abcdef")
_HEX_UPPER = frozenset("0123456789ABCDEF")


def realistic(secret: str, seed: str) -> str:
    """The documented example's secret with each letter and digit drawn at random from its class (hex stays hex):
    the vendor's format, but a value as random as a real one (many examples are ``abcdef123456…`` placeholders)."""
    rng = random.Random(seed)
    chars = set(secret) - set(string.punctuation)
    if chars <= _HEX_LOWER and any(ch.isalpha() for ch in chars):
        classes = ["0123456789abcdef"]
    elif chars <= _HEX_UPPER and any(ch.isalpha() for ch in chars):
        classes = ["0123456789ABCDEF"]
    else:
        classes = [string.digits, string.ascii_lowercase, string.ascii_uppercase]
    pieces = re.split(r"([^A-Za-z0-9])", secret)
    out = []
    for index, piece in enumerate(pieces):
        if index == 0 and len(pieces) > 1 and piece.isalpha() and len(piece) <= 7:
            out.append(piece)  # a vendor prefix (``CFPAT-``, ``shltm_``) stays as documented
            continue
        out.extend(rng.choice(next(c for c in classes if ch in c)) if ch.isalnum() else ch for ch in piece)
    return "".join(out)


def load_corpus() -> list[dict[str, str]]:
    """The formats: example and secret part decoded (stored reversed: see the file's ``encoding``), the secret made
    random in its documented shape (:func:`realistic`, seeded by the format's name)."""
    doc = json.loads(CORPUS.read_text(encoding="utf-8"))
    corpus = []
    for entry in doc["formats"]:
        example, secret = entry["example"][::-1], entry["secret"][::-1]
        fresh = realistic(secret, entry["format"])
        corpus.append({**entry, "example": example.replace(secret, fresh), "secret": fresh})
    return corpus


def caught(entry: dict[str, str]) -> dict[str, bool]:
    """Per surrounding: whether the secret part is gone from the redacted text."""
    return {name: entry["secret"] not in redact(wrap(entry["example"])).text for name, wrap in SURROUNDINGS.items()}


def test_the_corpus_is_large_and_each_sample_holds_its_secret() -> None:
    corpus = load_corpus()
    assert len(corpus) >= 150
    assert len({entry["format"] for entry in corpus}) == len(corpus)
    for entry in corpus:  # the control: a miss would be visible
        assert entry["secret"] in entry["example"], entry
        for wrap in SURROUNDINGS.values():
            assert entry["secret"] in wrap(entry["example"])


def test_recall_by_format() -> None:
    corpus = load_corpus()
    missed = [entry["format"] for entry in corpus if not all(caught(entry).values())]
    recall = 1 - len(missed) / len(corpus)
    assert recall >= MIN_RECALL, (recall, missed)
