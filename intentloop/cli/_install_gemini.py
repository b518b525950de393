"""What ``intentloop install gemini`` writes: the MCP server and four hooks in Gemini CLI's user ``settings.json``.

Gemini CLI keeps both in one file, ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini/settings.json`` when that
variable is set, as Gemini itself reads it): ``mcpServers.intent_loop`` and one group per event under ``hooks``
(``intentloop/model/gemini_events.py``). A Gemini hook's ``timeout`` is in milliseconds, and each handler carries a
``name``, which is how ``/hooks`` and ``hooksConfig.disabled`` refer to it. The edits are the other installers'
(``cli/_install_edit.py``), applied one after the other to the same document, so the refusal of foreign entries,
``--replace`` and the exact uninstall are theirs.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from intentloop.cli._install_edit import (
    hooks_install,
    hooks_reinstate,
    hooks_uninstall,
    server_install,
    server_reinstate,
    server_uninstall,
)
from intentloop.model.gemini_events import GEMINI_EVENTS, GEMINI_HOOK_TIMEOUT_MS


def gemini_dir(env: Mapping[str, str], home: Path) -> Path:
    """Gemini CLI's user folder: ``$GEMINI_CLI_HOME/.gemini``, else ``<home>/.gemini``."""
    base = Path(env["GEMINI_CLI_HOME"]).expanduser() if env.get("GEMINI_CLI_HOME") else home
    return base.absolute() / ".gemini"


def gemini_hook_groups(program: Sequence[str], data_root: Path) -> dict[str, dict[str, Any]]:
    """One hook group per Gemini event: ``<program> hook <argument> --data-dir <root>``, named ``intentloop
    <argument>``, with the hosts' 3 s as Gemini's milliseconds."""
    groups: dict[str, dict[str, Any]] = {}
    for event in GEMINI_EVENTS:
        command = shlex.join([*program, "hook", event.argument, "--data-dir", str(data_root)])
        handler = {
            "type": "command",
            "name": f"intentloop {event.argument}",
            "command": command,
            "timeout": GEMINI_HOOK_TIMEOUT_MS,
        }
        groups[event.name] = {"hooks": [handler]}
    return groups


def settings_install(
    doc: dict[str, Any],
    groups: Mapping[str, dict[str, Any]],
    server: Mapping[str, Any],
    *,
    root: str,
    what: str,
    replace: bool,
) -> dict[str, Any]:
    """``doc`` with intentloop's hooks and server (each refused or replaced as ``cli/_install_edit.py`` says)."""
    with_hooks = hooks_install(doc, groups, root=root, what=what, replace=replace)
    return server_install(with_hooks, server, what=what, replace=replace)


def settings_uninstall(doc: dict[str, Any], *, root: str, what: str) -> dict[str, Any]:
    """``doc`` without intentloop's hooks and server for ``root``."""
    return server_uninstall(hooks_uninstall(doc, root=root, what=what), root=root)


def settings_reinstate(doc: dict[str, Any], earlier: Mapping[str, Any], *, root: str) -> dict[str, Any]:
    """``doc`` with the backup's own intentloop hooks and server that a ``--replace`` replaced put back."""
    return server_reinstate(hooks_reinstate(doc, earlier, root=root), earlier, root=root)


__all__ = ["gemini_dir", "gemini_hook_groups", "settings_install", "settings_reinstate", "settings_uninstall"]
