"""The ``intent`` skill ``intentloop install claude`` puts in Claude Code's user skills (``<config>/skills/intent/``).

Claude Code answers a slash command it does not know itself (``Unknown command: /intent``) and never runs the prompt
hook, so ``/intent …`` reaches intentloop only once a skill or command named ``intent`` exists. The installed file is
the bundled ``skills/intent/SKILL.md`` (the plugin route's skill, read by :func:`intentloop.mcp.skill.read_skill`:
one source) with one last line added: a comment naming the installer and the SHA-256 of the text above it. That line
is how a later install or uninstall knows the file is intentloop's and unchanged since: a file without it, or whose
text no longer matches it (the user edited it), is the user's, refused with ``INSTALL_ENTRY_EXISTS`` unless
``--replace``, and never removed.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Final

from intentloop.cli._install_edit import HostConfigError

#: Where the skill goes, below Claude Code's configuration folder.
SKILL_PATH: Final = Path("skills") / "intent" / "SKILL.md"
_MARK: Final = re.compile(r"\n<!-- intentloop install claude: sha256=([0-9a-f]{64}); removed by --uninstall -->\n\Z")


def installed_skill(text: str) -> bytes:
    """The bytes the installer writes for the bundled skill ``text``: the text, then the marker line."""
    body = text if text.endswith("\n") else text + "\n"
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return (body + f"<!-- intentloop install claude: sha256={digest}; removed by --uninstall -->\n").encode("utf-8")


def is_our_skill(data: bytes) -> bool:
    """Whether ``data`` is a skill intentloop's installer wrote (of any version) and nobody changed since."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    mark = _MARK.search(text)
    if mark is None:
        return False
    body = text[: mark.start() + 1]
    return hashlib.sha256(body.encode("utf-8")).hexdigest() == mark.group(1)


def skill_install(data: bytes | None, ours: bytes, *, what: str, replace: bool) -> bytes:
    """The file after installing: ``ours`` over nothing, over an earlier install, or (``replace``) over anything.

    Raises:
        HostConfigError: ``INSTALL_ENTRY_EXISTS`` for a file intentloop's installer did not write (or one changed
            since) without ``replace``.
    """
    if data is None or replace or is_our_skill(data):
        return ours
    raise HostConfigError(
        f"{what} is a skill named intent that intentloop's installer did not write (or that was changed since). "
        "Pass --replace to replace it with intentloop's (the file is backed up first, and --uninstall puts it back), "
        "or move it away by hand",
        code="INSTALL_ENTRY_EXISTS",
    )


def skill_uninstall(data: bytes | None) -> bytes | None:
    """The file after uninstalling: gone if it is intentloop's unchanged skill, kept as it is otherwise."""
    return None if data is not None and is_our_skill(data) else data


def prune_skill_dirs(config_dir: Path) -> None:
    """Remove ``skills/intent/`` and then ``skills/`` below ``config_dir`` when an uninstall left them empty."""
    folder = config_dir / SKILL_PATH.parent
    for path in (folder, folder.parent):
        try:
            path.rmdir()
        except OSError:  # not empty, missing, or not ours to remove: leave it
            return


__all__ = ["SKILL_PATH", "installed_skill", "is_our_skill", "prune_skill_dirs", "skill_install", "skill_uninstall"]
