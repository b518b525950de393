"""The one MCP resource: the bundled ``skills/intent/SKILL.md``, served as ``intent-loop://skill/intent``.

A fallback for hosts that discover the plugin's skill but cannot read the installed files directly; it carries no task
data. The file is looked up next to the package (a source checkout or an installed plugin tree) and in the install's
shared data directory; a missing file is ``SKILL_NOT_FOUND``, never a crash.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from intentloop.errors import IntentLoopError

SKILL_URI = "intent-loop://skill/intent"
SKILL_NAME = "intent-skill"
SKILL_TITLE = "Intent Loop skill"
SKILL_DESCRIPTION = "How and when to use the intent_* tools, and the /intent entry points."
SKILL_MIME_TYPE = "text/markdown"
_RELATIVE = Path("skills") / "intent" / "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024


def default_skill_paths() -> tuple[Path, ...]:
    """Where the skill file may be, first match wins.

    ``intentloop/mcp/`` → ``intentloop/`` → the repository or plugin root holding ``skills/``; then a copy installed
    as shared data (``<prefix>/share/intentloop/skills/intent/SKILL.md``).
    """
    package_dir = Path(__file__).resolve().parent
    return (
        package_dir.parent.parent / _RELATIVE,
        package_dir.parent / _RELATIVE,
        Path(sys.prefix) / "share" / "intentloop" / _RELATIVE,
    )


def read_skill(paths: Sequence[Path] | None = None) -> str:
    """The text of the first readable ``SKILL.md`` among ``paths`` (default: :func:`default_skill_paths`).

    Raises:
        IntentLoopError: ``SKILL_NOT_FOUND`` when no candidate is a readable UTF-8 regular file of sensible size.
    """
    for candidate in default_skill_paths() if paths is None else paths:
        try:
            if not candidate.is_file() or candidate.stat().st_size > MAX_SKILL_BYTES:
                continue
            return candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    raise IntentLoopError("the bundled skills/intent/SKILL.md was not found", code="SKILL_NOT_FOUND")


__all__ = [
    "SKILL_DESCRIPTION",
    "SKILL_MIME_TYPE",
    "SKILL_NAME",
    "SKILL_TITLE",
    "SKILL_URI",
    "default_skill_paths",
    "read_skill",
]
