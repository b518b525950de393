"""Pure edits of host configuration texts: Codex ``config.toml`` (textual) and hook/MCP JSON documents.

``config.toml`` is edited as text between marker comments, never re-serialised, so every byte of the user's file
outside the block survives (``tomllib`` only checks the result). The server entry is one key/value line
(``mcp_servers.intent_loop = { ... }`` above the first table, or ``intent_loop = { ... }`` under an existing
``[mcp_servers]``), not a table at the end: a setting the user later appends to the end of the file then lands where
it would have without intentloop, never inside our table. Removal keeps whatever else is inside the markers, and can
remove the ``[hooks.state."<key>"]`` trust tables Codex wrote for our hooks. JSON files are re-serialised in the
user's own layout (indent, compact separators, line endings, final newline).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any, Final

from intentloop.errors import ErrorCode, IntentLoopError
from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT
from intentloop.model.hook_events import ARGUMENT_BY_EVENT

SERVER_KEY: Final = "intent_loop"
TOML_TABLE: Final = f"[mcp_servers.{SERVER_KEY}]"
TOML_BEGIN: Final = "# >>> intentloop: MCP server (remove with `intentloop install codex --uninstall`) >>>"
TOML_END: Final = "# <<< intentloop <<<"
_OUR_LINE: Final = re.compile(rf"^\s*(mcp_servers\s*\.\s*)?{SERVER_KEY}\s*=")

#: event name -> ``intentloop hook`` argument (the table: ``intentloop/model/hook_events.py``).
HOOK_ARGS: Final[dict[str, str]] = ARGUMENT_BY_EVENT
#: Every ``intentloop hook`` argument an installer writes: the five events', and Gemini CLI's own
#: (``intentloop/model/gemini_events.py``).
_HOOK_ARGUMENTS: Final = frozenset(HOOK_ARGS.values()) | frozenset(GEMINI_EVENT_BY_ARGUMENT)


class HostConfigError(IntentLoopError):
    """A host configuration file cannot be edited safely: unparsable (``INVALID_ARGUMENTS``), or an entry that
    intentloop's installer did not write is where intentloop's would go (``INSTALL_ENTRY_EXISTS``), or a
    ``[mcp_servers.intent_loop]`` table of the user's own in ``config.toml`` (``INSTALL_TABLE_CONFLICT``)."""

    def __init__(self, message: str, code: ErrorCode = "INVALID_ARGUMENTS") -> None:
        super().__init__(message, code=code)


# ---------------------------------------------------------------------------------------------------------- commands


#: The program prefixes an intentloop installer has written after its absolute first word: the ``intentloop`` script
#: alone, or an interpreter with ``-P -m intentloop`` (the fallback), ``-m intentloop`` or ``-m cli.entry`` (older).
_INSTALLER_FORMS: Final = (["-P", "-m", "intentloop"], ["-m", "intentloop"], ["-m", "cli.entry"])
#: The console script's names.
_SCRIPT_NAMES: Final = ("intentloop", "intentloop.exe")


def is_our_program(argv: Sequence[str]) -> bool:
    """Whether ``argv`` starts an intentloop installation: ``…/intentloop``, ``python -P -m intentloop`` (the
    installers' fallback), ``python -m intentloop``, or ``python -m cli.entry`` (what installers before the single
    ``intentloop`` package wrote, so a reinstall or uninstall still finds those entries)."""
    if not argv:
        return False
    if PurePath(argv[0]).name.lower() in _SCRIPT_NAMES:
        return True
    return any(list(argv[1 : 1 + len(form)]) == form for form in _INSTALLER_FORMS)


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
    return is_our_program(argv[:at]) and any(arg in _HOOK_ARGUMENTS for arg in argv[at + 1 :])


def _installer_program(argv: Sequence[str]) -> int | None:
    """How many words of ``argv`` are a program in a form an intentloop installer writes (an absolute path first),
    else ``None``."""
    if not argv or not os.path.isabs(argv[0]):
        return None
    if PurePath(argv[0]).name.lower() in _SCRIPT_NAMES:
        return 1
    return next((1 + len(form) for form in _INSTALLER_FORMS if list(argv[1 : 1 + len(form)]) == form), None)


def installed_hook_root(command: object) -> str | None:
    """The data root of a hook command exactly as an intentloop installer writes it,
    ``<program> hook <event> --data-dir <absolute root>``; ``None`` for any other command — an intentloop hook the user
    or the plugin wrote (``intentloop hook session-start``) included."""
    if not isinstance(command, str):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    size = _installer_program(argv)
    rest = argv[size:] if size is not None else []
    if len(rest) == 4 and rest[0] == "hook" and rest[1] in _HOOK_ARGUMENTS and rest[2] == "--data-dir":
        return rest[3] if os.path.isabs(rest[3]) else None
    return None


def installed_server_root(entry: object) -> str | None:
    """The data root of an MCP server entry exactly as an intentloop installer writes it (``{command, args: [...,
    "serve"], env: {INTENT_LOOP_DATA_DIR: <absolute root>}}``, with Claude Code's ``"type": "stdio"``); ``None`` for
    any other entry — one made with ``claude mcp add intent_loop -- intentloop serve`` included."""
    if not isinstance(entry, Mapping) or set(entry) - {"type", "command", "args", "env"}:
        return None
    command, args, env = entry.get("command"), entry.get("args"), entry.get("env")
    if entry.get("type", "stdio") != "stdio" or not isinstance(command, str) or not isinstance(args, list):
        return None
    argv = [command, *args]
    size = _installer_program(argv) if all(isinstance(a, str) for a in args) else None
    if size is None or argv[size:] != ["serve"] or not isinstance(env, Mapping) or set(env) != {"INTENT_LOOP_DATA_DIR"}:
        return None
    root = env["INTENT_LOOP_DATA_DIR"]
    return root if isinstance(root, str) and os.path.isabs(root) else None


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
    """The ``[mcp_servers.intent_loop]`` table (header included) for ``{command, args, env}`` (the fallback layout)."""
    lines = [TOML_TABLE, f"command = {_toml_string(server['command'])}"]
    lines.append("args = [" + ", ".join(_toml_string(a) for a in server["args"]) + "]")
    env = server.get("env") or {}
    if env:
        pairs = ", ".join(f"{k} = {_toml_string(v)}" for k, v in env.items())
        lines.append(f"env = {{ {pairs} }}")
    return newline.join(lines) + newline


def toml_server_inline(server: Mapping[str, Any]) -> str:
    """``{ command = ..., args = [...], env = { ... } }``: the server entry as one inline table."""
    parts = [f"command = {_toml_string(server['command'])}"]
    parts.append("args = [" + ", ".join(_toml_string(a) for a in server["args"]) + "]")
    env = server.get("env") or {}
    if env:
        parts.append("env = { " + ", ".join(f"{k} = {_toml_string(v)}" for k, v in env.items()) + " }")
    return "{ " + ", ".join(parts) + " }"


def _parse_toml(text: str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HostConfigError(f"{what} is not valid TOML ({exc}); fix it before installing") from exc


def header_key(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` or ``[[array]]`` header line, or ``None`` when the line is not a header."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        doc: Any = tomllib.loads(stripped + "\n")
    except tomllib.TOMLDecodeError:
        return None  # e.g. a line of a multi-line array or string that happens to start with "["
    path: list[str] = []
    while isinstance(doc, (dict, list)) and doc:
        if isinstance(doc, list):
            doc = doc[-1]
            continue
        if len(doc) != 1:
            return None
        key = next(iter(doc))
        path.append(key)
        doc = doc[key]
    return tuple(path) if path else None


def _find_block(lines: list[str], what: str = "config.toml") -> tuple[int, int] | None:
    """The indexes of our begin and end markers, or ``None`` when there is no begin marker.

    Raises:
        HostConfigError: a begin marker without an end marker (names the line and what to do).
    """
    begin = next((i for i, line in enumerate(lines) if line.rstrip("\r\n") == TOML_BEGIN), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].rstrip("\r\n") == TOML_END), None)
    if end is None:
        raise HostConfigError(
            f"{what}: line {begin + 1} opens intentloop's block but no line closes it with {TOML_END!r}. "
            "Put that line back right after intentloop's `intent_loop = ...` entry (or delete intentloop's lines by "
            "hand), then run the command again."
        )
    return begin, end


def _is_our_line(line: str) -> bool:
    return _OUR_LINE.match(line) is not None


def _split_block(inner: list[str]) -> tuple[list[str], list[str]]:
    """Split the lines inside the markers into (our entry's lines, everything else in order)."""
    ours: list[str] = []
    foreign: list[str] = []
    in_table = False
    found = False
    for line in inner:
        key = header_key(line)
        if key is not None:
            in_table = key == ("mcp_servers", SERVER_KEY) and not found
            if in_table:
                found = True
                ours.append(line)
                continue
        if in_table:
            ours.append(line)
        elif not found and _is_our_line(line):
            found = True
            ours.append(line)
        else:
            foreign.append(line)
    return ours, foreign


def _remove_block(lines: list[str], begin: int, end: int) -> list[str]:
    """``lines`` without our markers and entry; whatever else was inside stays in place, and the blank line the
    installer added beside the block goes with it."""
    _ours, foreign = _split_block(lines[begin + 1 : end])
    if any(line.strip() for line in foreign):
        return lines[:begin] + foreign + lines[end + 1 :]
    head, tail = lines[:begin], lines[end + 1 :]
    if not tail:
        if head and not head[-1].strip():
            head = head[:-1]
    elif not tail[0].strip() and not (head and header_key(head[-1]) == ("mcp_servers",)):
        tail = tail[1:]
    return head + tail


def _without_server(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    servers = out.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop(SERVER_KEY, None)
        if not servers:
            out.pop("mcp_servers")
    return out


def _placements(lines: list[str], server: Mapping[str, Any], newline: str) -> list[str]:
    """Candidate texts, best first: our entry as one key/value line where no later setting can fall into it.

    1. right below an existing ``[mcp_servers]`` header: ``intent_loop = { ... }``;
    2. else above the first table header: ``mcp_servers.intent_loop = { ... }`` (a top-level key);
    3. else (no tables at all) at the end, still a top-level key;
    4. last resort: the ``[mcp_servers.intent_loop]`` table at the end (install warns about it).
    """
    inline = toml_server_inline(server)

    def block(key: str) -> list[str]:
        return [TOML_BEGIN + newline, f"{key} = {inline}{newline}", TOML_END + newline]

    headers = [(i, header_key(line)) for i, line in enumerate(lines)]
    headers = [(i, k) for i, k in headers if k is not None]
    out: list[str] = []
    section = next((i for i, k in headers if k == ("mcp_servers",)), None)
    if section is not None:
        body = block(SERVER_KEY)
        out.append("".join(lines[: section + 1] + body + lines[section + 1 :]))
    if headers:
        first = headers[0][0]
        body = [*block(f"mcp_servers.{SERVER_KEY}"), newline]
        out.append("".join(lines[:first] + body + lines[first:]))
    head = "".join(lines)
    if head and not head.endswith("\n"):
        head += newline
    sep = newline if head.strip() else ""
    if not headers:
        out.append(f"{head}{sep}{TOML_BEGIN}{newline}mcp_servers.{SERVER_KEY} = {inline}{newline}{TOML_END}{newline}")
    out.append(f"{head}{sep}{TOML_BEGIN}{newline}{toml_server_table(server, newline)}{TOML_END}{newline}")
    return out


def toml_install(text: str, server: Mapping[str, Any], *, what: str = "config.toml") -> str:
    """Return ``text`` with intentloop's server entry in its marked block (see :func:`_placements` for where).

    An existing block (this layout or the older table at the end) is replaced; lines Codex or the user put inside
    it stay where they are.

    Raises:
        HostConfigError: the text is not valid TOML, it defines ``[mcp_servers.intent_loop]`` outside our block, or
            no placement parses to exactly the old document plus our entry.
    """
    before = _parse_toml(text, what)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    block = _find_block(lines, what)
    if block is None:
        if SERVER_KEY in (before.get("mcp_servers") or {}):
            raise HostConfigError(
                f"{what} already defines [mcp_servers.{SERVER_KEY}] outside intentloop's marked block; "
                "remove that table (or rename it) and run the installer again",
                code="INSTALL_TABLE_CONFLICT",
            )
    else:
        lines = _remove_block(lines, *block)
    expected = {k: v for k, v in server.items() if v != {}}
    for result in _placements(lines, server, newline):
        try:
            after = tomllib.loads(result)
        except tomllib.TOMLDecodeError:
            continue
        got = (after.get("mcp_servers") or {}).get(SERVER_KEY)
        if got == expected and _without_server(after) == _without_server(before):
            return result
    raise HostConfigError(
        f"adding [mcp_servers.{SERVER_KEY}] to {what} would change other settings "
        "(is mcp_servers an inline table?); add this table by hand:\n" + toml_server_table(server)
    )


def appended_settings_land_in_our_table(text: str) -> bool:
    """Whether a setting appended at the end of ``text`` would land inside intentloop's server table."""
    lines = text.splitlines()
    last = next((header_key(line) for line in reversed(lines) if header_key(line) is not None), None)
    return last == ("mcp_servers", SERVER_KEY)


def _line_span(lines: list[str], predicate: Any) -> str:
    found = [i + 1 for i, line in enumerate(lines) if predicate(line)]
    return ", ".join(str(n) for n in found) or "?"


def toml_uninstall(text: str, *, what: str = "config.toml") -> str:
    """Return ``text`` without intentloop's marked block; foreign lines found inside the block stay.

    Raises:
        HostConfigError: the text is not valid TOML; our block has lost its end marker; intentloop's server is
            defined outside the block; or removing the block would change other settings. The message names the
            lines and what to do.
    """
    before = _parse_toml(text, what)
    lines = text.splitlines(keepends=True)
    block = _find_block(lines, what)
    if block is None:
        if is_our_server_entry((before.get("mcp_servers") or {}).get(SERVER_KEY)):
            where = _line_span(lines, lambda ln: header_key(ln) == ("mcp_servers", SERVER_KEY) or _is_our_line(ln))
            raise HostConfigError(
                f"{what} runs intentloop's server (line {where}) outside intentloop's marked block, so it was not "
                "written by this installer or its markers were removed. Delete that entry by hand (the table or "
                "the `intent_loop = ...` line), then run the command again."
            )
        return text
    begin, end = block
    result = "".join(_remove_block(lines, begin, end))
    try:
        after = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        after = None
    if after != _without_server(before):
        ours, _foreign = _split_block(lines[begin + 1 : end])
        listing = "".join(f"  {begin + 2 + i}: {line}" for i, line in enumerate(lines[begin + 1 : end]))
        raise HostConfigError(
            f"removing intentloop's block (lines {begin + 1}-{end + 1} of {what}) would change other settings; "
            f"the block holds:\n{listing}"
            f"intentloop's own lines are {len(ours)} of them. Move every other line above line {begin + 1} "
            f"({TOML_BEGIN!r}), then run the command again."
        )
    return result


def toml_remove_tables(text: str, keys: set[tuple[str, ...]]) -> tuple[str, set[tuple[str, ...]]]:
    """Remove the ``[a.b."c"]`` tables whose key path is in ``keys`` (header and body, with the blank line before
    it), then an ``[hooks.state]`` / ``[hooks]`` header left empty. Returns the text and the paths removed.

    Only whole tables are removed, and only when the result parses to the old document minus exactly those paths;
    otherwise ``text`` comes back unchanged with an empty set.
    """
    lines = text.splitlines(keepends=True)
    keep: list[str] = []
    removed: set[tuple[str, ...]] = set()
    skipping = False
    for line in lines:
        key = header_key(line)
        if key is not None:
            skipping = key in keys
            if skipping:
                removed.add(key)
                if keep and not keep[-1].strip():
                    keep.pop()
                continue
        if not skipping:
            keep.append(line)
    if not removed:
        return text, set()
    for parent in (("hooks", "state"), ("hooks",)):
        index = next((i for i, line in enumerate(keep) if header_key(line) == parent), None)
        if index is None:
            continue
        rest = keep[index + 1 :]
        nxt = next((j for j, line in enumerate(rest) if line.strip()), None)
        if nxt is not None and header_key(rest[nxt]) is None:
            continue  # the table has keys of its own
        del keep[index]
        if index > 0 and index <= len(keep) and not keep[index - 1].strip():
            del keep[index - 1]
    result = "".join(keep)
    try:
        got = tomllib.loads(result)
        want = copy.deepcopy(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return text, set()
    for path in removed:
        node: Any = want
        for part in path[:-1]:
            node = node[part]
        node.pop(path[-1], None)
    for parent in (("hooks", "state"), ("hooks",)):
        node = want
        for part in parent[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        emptied = isinstance(node, dict) and parent[-1] in node and node[parent[-1]] == {}
        if emptied and not any(header_key(line) == parent for line in keep):
            node.pop(parent[-1])
    if got != want:
        return text, set()
    return result, removed


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


def dump_json(doc: Mapping[str, Any], like: bytes | None = None) -> bytes:
    """``doc`` as JSON in the layout of ``like`` (the file's current bytes): its indent (spaces or tabs), compact or
    spaced separators for a one-line file, CRLF line ends, a BOM and a final newline when it had them. Without
    ``like``: two-space indent and a final newline (how both hosts write their own files)."""
    text = (like or b"").decode("utf-8", "replace")
    bom = text.startswith("\ufeff")
    body = text.lstrip("\ufeff").strip()
    if not body:
        return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    newline = "\r\n" if "\r\n" in text else "\n"
    if "\n" not in body:
        spaced = bool(re.search(r'"\s*:\s+|,\s+"', body)) or body in ("{}", "{ }")
        out = json.dumps(doc, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    else:
        found = re.search(r"\n([ \t]+)\S", text)
        indent: str | int = found.group(1) if found else 2
        out = json.dumps(doc, indent=indent, ensure_ascii=False).replace("\n", newline)
    end = newline if text.endswith("\n") else ""
    return (("\ufeff" if bom else "") + out + end).encode("utf-8")


def _hooks_table(doc: dict[str, Any], what: str) -> dict[str, Any]:
    table = doc.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise HostConfigError(f'"hooks" in {what} is not an object')
    return table


Owned = Callable[[object], bool]


def _strip(groups: list[Any], drop: Owned) -> list[Any]:
    """``groups`` without the handlers whose command ``drop`` names (a group left empty goes)."""
    kept: list[Any] = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            hooks = [h for h in group["hooks"] if not (isinstance(h, dict) and drop(h.get("command")))]
            if not hooks:
                continue
            if len(hooks) != len(group["hooks"]):
                group = {**group, "hooks": hooks}
        kept.append(group)
    return kept


def _has(group: Any, match: Owned) -> bool:
    return (
        isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(isinstance(h, dict) and match(h.get("command")) for h in group["hooks"])
    )


def owned_by(root: str) -> Owned:
    """Whether a hook command is intentloop's to change or remove: written by an intentloop installer for ``root``."""
    return lambda command: installed_hook_root(command) == root


def foreign_hooks(doc: Mapping[str, Any], root: str) -> list[str]:
    """``hooks.<Event>: `<command>``` for every intentloop hook in ``doc`` that is not intentloop's for ``root`` (the
    user's own, the plugin's, or an installer's for another data root)."""
    table = doc.get("hooks")
    found: list[str] = []
    for event, groups in table.items() if isinstance(table, Mapping) else ():
        for group in groups if isinstance(groups, list) else ():
            for handler in group.get("hooks", []) if isinstance(group, Mapping) else ():
                command = handler.get("command") if isinstance(handler, Mapping) else None
                if is_our_hook_command(command) and installed_hook_root(command) != root:
                    found.append(f"hooks.{event}: `{command}`")
    return found


def hooks_install(
    doc: dict[str, Any], wanted: Mapping[str, dict[str, Any]], *, root: str, what: str, replace: bool = False
) -> dict[str, Any]:
    """Return a copy of ``doc`` whose ``hooks`` hold exactly one group of ours per event in ``wanted``.

    An identical group of ours stays where it is; a changed one is replaced in place; anything else of ours is
    removed and the group appended after the user's own groups (Codex keys trust by position, so user groups never
    move). Intentloop hooks that are not ours for ``root`` (:func:`foreign_hooks`) are refused, or with ``replace``
    removed.

    Raises:
        HostConfigError: ``hooks`` or an event's value has the wrong JSON type (``INVALID_ARGUMENTS``); foreign
            intentloop hooks without ``replace`` (``INSTALL_ENTRY_EXISTS``, naming each).
    """
    out = copy.deepcopy(doc)
    table = _hooks_table(out, what)
    for event in wanted:
        if not isinstance(table.get(event, []), list):
            raise HostConfigError(f'"hooks.{event}" in {what} is not a list')
    foreign = foreign_hooks(out, root)
    if foreign and not replace:
        raise HostConfigError(
            f"{what} already runs intentloop hooks that intentloop's installer did not write for the data root "
            f"{root}: {'; '.join(foreign)}. Pass --replace to replace them with intentloop's own (the file is "
            "backed up first, and --uninstall puts them back), or remove them by hand",
            code="INSTALL_ENTRY_EXISTS",
        )
    drop: Owned = is_our_hook_command if replace else owned_by(root)  # what makes way for intentloop's group
    for event in [e for e, groups in table.items() if e not in wanted and isinstance(groups, list)]:
        if any(_has(g, drop) for g in table[event]):
            table[event] = _strip(table[event], drop)
            if not table[event]:
                del table[event]
    for event, group in wanted.items():
        groups = table.get(event, [])
        mine = [i for i, g in enumerate(groups) if _has(g, drop)]
        if len(mine) == 1 and _strip([groups[mine[0]]], drop) == []:
            groups = [*groups[: mine[0]], group, *groups[mine[0] + 1 :]]
        else:
            groups = [*_strip(groups, drop), group]
        table[event] = groups
    return out


def _other(drop: Owned, ours: Owned) -> Owned:
    """The commands ``drop`` names that ``ours`` does not (with ``--replace``: the foreign intentloop hooks)."""
    return lambda command: drop(command) and not ours(command)


def hooks_uninstall(doc: dict[str, Any], *, root: str, what: str) -> dict[str, Any]:
    """Return a copy of ``doc`` without intentloop's hooks for ``root``; events and a ``hooks`` table left empty are
    dropped. Every other hook stays, intentloop hooks that intentloop's installer did not write for ``root`` too.

    Raises:
        HostConfigError: ``hooks`` has the wrong JSON type.
    """
    out = copy.deepcopy(doc)
    if "hooks" not in out:
        return out
    table = _hooks_table(out, what)
    ours = owned_by(root)
    for event in list(table):
        groups = table[event]
        if not isinstance(groups, list) or not any(_has(g, ours) for g in groups):
            continue
        kept = _strip(groups, ours)
        if kept:
            table[event] = kept
        else:
            del table[event]
    if not table:
        del out["hooks"]
    return out


def hooks_reinstate(doc: dict[str, Any], earlier: Mapping[str, Any], *, root: str) -> dict[str, Any]:
    """Return a copy of ``doc`` with the groups of ``earlier`` (the backup) that held foreign intentloop hooks put
    back where ``doc`` lacks them: an uninstall after ``--replace`` gives the user's own hooks back."""
    out = copy.deepcopy(doc)
    table = earlier.get("hooks")
    foreign = _other(is_our_hook_command, owned_by(root))
    for event, groups in table.items() if isinstance(table, Mapping) else ():
        for group in groups if isinstance(groups, list) else ():
            if not _has(group, foreign):
                continue
            now = out.setdefault("hooks", {})
            if isinstance(now, dict) and isinstance(now.setdefault(event, []), list) and group not in now[event]:
                now[event].append(copy.deepcopy(group))
    return out


def _describe_server(entry: object) -> str:
    if isinstance(entry, Mapping) and isinstance(entry.get("command"), str) and isinstance(entry.get("args", []), list):
        words = [entry["command"], *(str(a) for a in entry.get("args", []))]
        text = f"`{shlex.join(words)}`"
        env = entry.get("env")
        if isinstance(env, Mapping) and isinstance(env.get("INTENT_LOOP_DATA_DIR"), str):
            text += f" with the data root {env['INTENT_LOOP_DATA_DIR']}"
        return text
    return json.dumps(entry)


def server_install(
    doc: dict[str, Any], entry: Mapping[str, Any], *, what: str, replace: bool = False
) -> dict[str, Any]:
    """Return a copy of ``doc`` with ``mcpServers.intent_loop`` = ``entry``.

    An entry there that an intentloop installer wrote for the same data root is updated in place; any other (the
    user's ``claude mcp add``, another server, or an installer's for another data root: installing would move the
    memory) is refused, or with ``replace`` replaced.

    Raises:
        HostConfigError: ``mcpServers`` is not an object (``INVALID_ARGUMENTS``); another entry holds the key
            (``INSTALL_ENTRY_EXISTS``, naming it).
    """
    out = copy.deepcopy(doc)
    servers = out.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise HostConfigError(f'"mcpServers" in {what} is not an object')
    current = servers.get(SERVER_KEY)
    root = installed_server_root(entry)
    if current is not None and current != entry and not replace and installed_server_root(current) != root:
        if installed_server_root(current) is not None:
            why = f"installing would move the hosts' memory from there to {root}"
        elif is_our_server_entry(current):
            why = "intentloop's installer did not write it (made with `claude mcp add`, or by hand)"
        else:
            why = "it does not run intentloop"
        raise HostConfigError(
            f"{what} already has mcpServers.{SERVER_KEY}: {_describe_server(current)}; {why}. Pass --replace to "
            "replace it with intentloop's entry (the file is backed up first, and --uninstall puts it back), or "
            "remove or rename it by hand",
            code="INSTALL_ENTRY_EXISTS",
        )
    servers[SERVER_KEY] = dict(entry)
    return out


def server_uninstall(doc: dict[str, Any], *, root: str) -> dict[str, Any]:
    """Return a copy of ``doc`` without intentloop's ``mcpServers.intent_loop`` for ``root`` (any other entry stays)."""
    out = copy.deepcopy(doc)
    servers = out.get("mcpServers")
    if isinstance(servers, dict) and installed_server_root(servers.get(SERVER_KEY)) == root:
        del servers[SERVER_KEY]
        if not servers:
            del out["mcpServers"]
    return out


def server_reinstate(doc: dict[str, Any], earlier: Mapping[str, Any], *, root: str) -> dict[str, Any]:
    """Return a copy of ``doc`` with the backup's own ``mcpServers.intent_loop`` put back when ``doc`` has none."""
    before = earlier.get("mcpServers")
    entry = before.get(SERVER_KEY) if isinstance(before, Mapping) else None
    out = copy.deepcopy(doc)
    servers = out.setdefault("mcpServers", {})
    if entry is None or installed_server_root(entry) == root or not isinstance(servers, dict):
        return doc
    servers.setdefault(SERVER_KEY, copy.deepcopy(entry))
    return out


__all__ = [
    "HOOK_ARGS",
    "SERVER_KEY",
    "TOML_BEGIN",
    "TOML_END",
    "HostConfigError",
    "appended_settings_land_in_our_table",
    "dump_json",
    "foreign_hooks",
    "header_key",
    "hooks_install",
    "hooks_reinstate",
    "hooks_uninstall",
    "installed_hook_root",
    "installed_server_root",
    "is_our_hook_command",
    "is_our_program",
    "is_our_server_entry",
    "load_json_object",
    "owned_by",
    "server_install",
    "server_reinstate",
    "server_uninstall",
    "toml_install",
    "toml_remove_tables",
    "toml_server_inline",
    "toml_server_table",
    "toml_uninstall",
]
