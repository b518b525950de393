"""Pure edits of host configuration texts: Codex ``config.toml`` (textual) and hook/MCP JSON documents.

``config.toml`` is edited as text between marker comments, never re-serialised, so every byte of the user's file
outside the block survives (``tomllib`` only checks the result). Codex itself may later write ``[hooks.state…]``
trust tables inside the block; removal keeps whatever is not our own table.
"""

from __future__ import annotations

import copy
import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, Final

from intentloop.errors import IntentLoopError

SERVER_KEY: Final = "intent_loop"
TOML_TABLE: Final = f"[mcp_servers.{SERVER_KEY}]"
TOML_BEGIN: Final = "# >>> intentloop: MCP server (remove with `intentloop install codex --uninstall`) >>>"
TOML_END: Final = "# <<< intentloop <<<"

#: event name -> ``intentloop hook`` argument (the same table as ``hooks/_payload.py``; cli may not import hooks'
#: private modules, and the two are checked against each other by a test).
HOOK_ARGS: Final[dict[str, str]] = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt",
    "PostCompact": "post-compact",
    "Stop": "stop",
    "SessionEnd": "session-end",
}


class HostConfigError(IntentLoopError):
    """A host configuration file cannot be edited safely (unparsable, or an entry that is not ours is in the way)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="INVALID_ARGUMENTS")


# ---------------------------------------------------------------------------------------------------------- commands


def is_our_program(argv: Sequence[str]) -> bool:
    """Whether ``argv`` starts an intentloop installation: ``…/intentloop`` or ``python -m cli.entry``."""
    if not argv:
        return False
    name = PurePath(argv[0]).name.lower()
    return name in ("intentloop", "intentloop.exe") or list(argv[1:3]) == ["-m", "cli.entry"]


def is_our_hook_command(command: object) -> bool:
    """Whether a hook ``command`` string runs ``intentloop hook <event>`` (any installation of it)."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if "hook" not in argv:
        return False
    at = argv.index("hook")
    return is_our_program(argv[:at]) and any(arg in HOOK_ARGS.values() for arg in argv[at + 1 :])


def is_our_server_entry(entry: object) -> bool:
    """Whether an MCP server entry (JSON or TOML, same shape) runs ``intentloop serve``."""
    if not isinstance(entry, Mapping):
        return False
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    argv = [command, *[a for a in args if isinstance(a, str)]]
    return is_our_program(argv) and "serve" in argv[1:]


# -------------------------------------------------------------------------------------------------- config.toml


def _toml_string(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_server_table(server: Mapping[str, Any], newline: str = "\n") -> str:
    """The ``[mcp_servers.intent_loop]`` table (header included) for ``{command, args, env}``."""
    lines = [TOML_TABLE, f"command = {_toml_string(server['command'])}"]
    lines.append("args = [" + ", ".join(_toml_string(a) for a in server["args"]) + "]")
    env = server.get("env") or {}
    if env:
        pairs = ", ".join(f"{k} = {_toml_string(v)}" for k, v in env.items())
        lines.append(f"env = {{ {pairs} }}")
    return newline.join(lines) + newline


def _parse_toml(text: str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HostConfigError(f"{what} is not valid TOML ({exc}); fix it before installing") from exc


def _find_block(lines: list[str]) -> tuple[int, int] | None:
    begin = next((i for i, line in enumerate(lines) if line.rstrip("\r\n") == TOML_BEGIN), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].rstrip("\r\n") == TOML_END), None)
    return None if end is None else (begin, end)


def _split_block(inner: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Split the lines inside the markers into (lines before our table, our table, lines after it)."""
    pre: list[str] = []
    ours: list[str] = []
    post: list[str] = []
    state = 0  # 0 before our header, 1 inside our table, 2 after it
    for line in inner:
        stripped = line.strip()
        if stripped.startswith("["):
            if stripped.replace(" ", "") == TOML_TABLE:
                state = 1
            elif state == 1:
                state = 2
        (pre, ours, post)[state].append(line)
    return pre, ours, post


def _without_server(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    servers = out.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop(SERVER_KEY, None)
        if not servers:
            out.pop("mcp_servers")
    return out


def toml_install(text: str, server: Mapping[str, Any], *, what: str = "config.toml") -> str:
    """Return ``text`` with intentloop's server table in its marked block (added at the end, or updated in place).

    Raises:
        HostConfigError: the text is not valid TOML, it defines ``[mcp_servers.intent_loop]`` outside our block, or
            the edited text would not parse to exactly the old document plus our table.
    """
    before = _parse_toml(text, what)
    newline = "\r\n" if "\r\n" in text else "\n"
    table = toml_server_table(server, newline)
    lines = text.splitlines(keepends=True)
    block = _find_block(lines)
    if block is None:
        if SERVER_KEY in (before.get("mcp_servers") or {}):
            raise HostConfigError(
                f"{what} already defines [mcp_servers.{SERVER_KEY}] outside intentloop's marked block; "
                "remove that table (or rename it) and run the installer again"
            )
        head = text
        if head and not head.endswith("\n"):
            head += newline
        sep = newline if head else ""
        result = f"{head}{sep}{TOML_BEGIN}{newline}{table}{TOML_END}{newline}"
    else:
        begin, end = block
        pre, _ours, post = _split_block(lines[begin + 1 : end])
        inner = "".join(pre) + table + "".join(post)
        result = "".join(lines[: begin + 1]) + inner + "".join(lines[end:])
    after = _parse_toml(result, f"{what} (after the edit)")
    expected = {k: v for k, v in server.items() if v != {}}
    got = (after.get("mcp_servers") or {}).get(SERVER_KEY)
    if got != expected or _without_server(after) != _without_server(before):
        raise HostConfigError(
            f"adding [mcp_servers.{SERVER_KEY}] at the end of {what} would change other settings "
            "(is mcp_servers an inline table?); add this table by hand:\n" + table
        )
    return result


def toml_uninstall(text: str, *, what: str = "config.toml") -> str:
    """Return ``text`` without intentloop's marked block; foreign tables found inside the block stay.

    Raises:
        HostConfigError: the text is not valid TOML, or would not be after the edit.
    """
    before = _parse_toml(text, what)
    lines = text.splitlines(keepends=True)
    block = _find_block(lines)
    if block is None:
        return text
    begin, end = block
    pre, _ours, post = _split_block(lines[begin + 1 : end])
    foreign = pre + post
    if any(line.strip() for line in foreign):
        result = "".join(lines[:begin]) + "".join(foreign) + "".join(lines[end + 1 :])
    else:
        start = begin - 1 if begin > 0 and not lines[begin - 1].strip() else begin
        result = "".join(lines[:start]) + "".join(lines[end + 1 :])
    after = _parse_toml(result, f"{what} (after the edit)")
    if after != _without_server(before):
        raise HostConfigError(f"removing intentloop's block from {what} would change other settings")
    return result


# ---------------------------------------------------------------------------------------------------------- JSON


def load_json_object(data: bytes | None, what: str) -> dict[str, Any]:
    """Parse a JSON settings document (missing or blank → ``{}``).

    Raises:
        HostConfigError: not valid JSON, or not an object.
    """
    if data is None or not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HostConfigError(f"{what} is not valid JSON ({exc}); fix it before installing") from exc
    if not isinstance(doc, dict):
        raise HostConfigError(f"{what} does not hold a JSON object")
    return doc


def dump_json(doc: Mapping[str, Any]) -> bytes:
    """Two-space indented JSON with a final newline (how both hosts write their own files)."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _hooks_table(doc: dict[str, Any], what: str) -> dict[str, Any]:
    table = doc.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise HostConfigError(f'"hooks" in {what} is not an object')
    return table


def _strip_ours(groups: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            hooks = [h for h in group["hooks"] if not (isinstance(h, dict) and is_our_hook_command(h.get("command")))]
            if not hooks:
                continue
            if len(hooks) != len(group["hooks"]):
                group = {**group, "hooks": hooks}
        kept.append(group)
    return kept


def _has_ours(group: Any) -> bool:
    return (
        isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(isinstance(h, dict) and is_our_hook_command(h.get("command")) for h in group["hooks"])
    )


def hooks_install(doc: dict[str, Any], wanted: Mapping[str, dict[str, Any]], *, what: str) -> dict[str, Any]:
    """Return a copy of ``doc`` whose ``hooks`` hold exactly one group of ours per event in ``wanted``.

    An identical group of ours stays where it is; a changed one is replaced in place; anything else of ours is
    removed and the group appended after the user's own groups (Codex keys trust by position, so user groups never
    move).

    Raises:
        HostConfigError: ``hooks`` or an event's value has the wrong JSON type.
    """
    out = copy.deepcopy(doc)
    table = _hooks_table(out, what)
    for event, group in wanted.items():
        groups = table.get(event, [])
        if not isinstance(groups, list):
            raise HostConfigError(f'"hooks.{event}" in {what} is not a list')
        ours = [i for i, g in enumerate(groups) if _has_ours(g)]
        if len(ours) == 1 and _strip_ours([groups[ours[0]]]) == []:
            groups = [*groups[: ours[0]], group, *groups[ours[0] + 1 :]]
        else:
            groups = [*_strip_ours(groups), group]
        table[event] = groups
    return out


def hooks_uninstall(doc: dict[str, Any], *, what: str) -> dict[str, Any]:
    """Return a copy of ``doc`` without any hook of ours; events and a ``hooks`` table left empty are dropped.

    Raises:
        HostConfigError: ``hooks`` has the wrong JSON type.
    """
    out = copy.deepcopy(doc)
    if "hooks" not in out:
        return out
    table = _hooks_table(out, what)
    for event in list(table):
        groups = table[event]
        if not isinstance(groups, list) or not any(_has_ours(g) for g in groups):
            continue
        kept = _strip_ours(groups)
        if kept:
            table[event] = kept
        else:
            del table[event]
    if not table:
        del out["hooks"]
    return out


def server_install(doc: dict[str, Any], entry: Mapping[str, Any], *, what: str) -> dict[str, Any]:
    """Return a copy of ``doc`` with ``mcpServers.intent_loop`` = ``entry``.

    Raises:
        HostConfigError: ``mcpServers`` is not an object, or ``intent_loop`` is taken by a server that is not ours.
    """
    out = copy.deepcopy(doc)
    servers = out.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise HostConfigError(f'"mcpServers" in {what} is not an object')
    current = servers.get(SERVER_KEY)
    if current is not None and not is_our_server_entry(current):
        raise HostConfigError(
            f'{what} already has an MCP server "{SERVER_KEY}" that does not run intentloop; remove it first'
        )
    servers[SERVER_KEY] = dict(entry)
    return out


def server_uninstall(doc: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``doc`` without our ``mcpServers.intent_loop`` (an entry that is not ours stays)."""
    out = copy.deepcopy(doc)
    servers = out.get("mcpServers")
    if isinstance(servers, dict) and is_our_server_entry(servers.get(SERVER_KEY)):
        del servers[SERVER_KEY]
        if not servers:
            del out["mcpServers"]
    return out


__all__ = [
    "HOOK_ARGS",
    "SERVER_KEY",
    "TOML_BEGIN",
    "TOML_END",
    "HostConfigError",
    "dump_json",
    "hooks_install",
    "hooks_uninstall",
    "is_our_hook_command",
    "is_our_program",
    "is_our_server_entry",
    "load_json_object",
    "server_install",
    "server_uninstall",
    "toml_install",
    "toml_server_table",
    "toml_uninstall",
]
