"""``intentloop install codex|claude|gemini [--dry-run] [--uninstall]``: register the MCP server and the hooks.

Everything points at this installation with absolute paths (the ``intentloop`` script beside ``sys.executable``, or
``sys.executable -P -m intentloop``) and pins the user's one data root (``locate_data_root``, the same for every host)
explicitly: Codex gives an MCP server only HOME, PATH, USER, LANG, TERM, TMPDIR and its configured ``env``, and a
host started from a desktop launcher may not see the ``XDG_DATA_HOME`` of the shell the installer ran in.

Files written:

* Codex: ``$CODEX_HOME/config.toml`` gets a marked ``[mcp_servers.intent_loop]`` block (a textual edit: every other
  byte stays) and ``$CODEX_HOME/hooks.json`` our five hook groups. Codex runs a new or changed hook only after the
  user trusts it in ``/hooks``; the installer never writes trust records, it says how to review them.
* Claude Code: ``~/.claude/settings.json`` (or ``$CLAUDE_CONFIG_DIR/settings.json``) gets the hooks, and the
  user-scope ``mcpServers`` of ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``) the server — what
  ``claude mcp add --scope user`` writes, so the server is available in every project without a per-project
  ``.mcp.json`` approval. ``skills/intent/SKILL.md`` in the same folder is the bundled skill, so ``/intent`` is a
  command Claude Code knows and the prompt reaches the hook (``_install_skill.py``).
* Gemini CLI: ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini/settings.json``) gets both the server and the
  hooks (``cli/_install_gemini.py``); Gemini may hide variables such as ``XDG_DATA_HOME`` from the processes it starts.

Each changed file is first copied to ``<file>.intentloop.bak`` (kept across re-installs: it holds the bytes from
before intentloop). Re-running changes nothing; ``--dry-run`` writes nothing and shows the diff; ``--uninstall``
removes exactly our entries, and puts the backup's bytes back when the file is still exactly what we made of it.
This module does no printing: the typer command prints :meth:`InstallResult.render`.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast

from intentloop.cli._install_edit import (
    HOOK_ARGS,
    SERVER_KEY,
    TOML_BEGIN,
    HostConfigError,
    appended_settings_land_in_our_table,
    dump_json,
    foreign_hooks,
    hooks_install,
    hooks_reinstate,
    hooks_uninstall,
    installed_server_root,
    is_our_server_entry,
    load_json_object,
    owned_by,
    server_install,
    server_reinstate,
    server_uninstall,
    toml_install,
    toml_remove_tables,
    toml_uninstall,
)
from intentloop.cli._install_gemini import (
    gemini_dir,
    gemini_hook_groups,
    settings_install,
    settings_reinstate,
    settings_uninstall,
)
from intentloop.cli._install_skill import (
    SKILL_PATH,
    installed_skill,
    is_our_skill,
    prune_skill_dirs,
    skill_install,
    skill_uninstall,
)
from intentloop.errors import InvalidInputError, StorageError
from intentloop.mcp.skill import read_skill
from intentloop.model.hook_events import HOOK_EVENTS, HOOK_TIMEOUT_S
from intentloop.store import DataRoot, locate_data_root, replace_file

Host = Literal["codex", "claude", "gemini"]
HOSTS: Final = ("codex", "claude", "gemini")
BACKUP_SUFFIX: Final = ".intentloop.bak"

Action = Literal["create", "update", "restore", "delete", "unchanged"]


@dataclass(frozen=True)
class FileChange:
    """What the installer does (or, in a dry run, would do) to one file."""

    path: Path
    action: Action
    before: bytes | None
    after: bytes | None
    backup: Path | None = None
    #: a ``.intentloop.bak`` that nothing needs any more (an uninstall left none of our entries): removed
    drop_backup: Path | None = None

    def diff(self) -> str:
        """A unified diff of the change ("" when unchanged)."""
        if self.action == "unchanged":
            return ""
        old = (self.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = (self.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        name = str(self.path)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=name if self.before is not None else "/dev/null",
            tofile=name if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@dataclass(frozen=True)
class InstallResult:
    """The outcome of :func:`install`: per-file changes and what the user should do next."""

    host: Host
    uninstall: bool
    dry_run: bool
    data_root: Path
    command: tuple[str, ...]
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)

    def render(self) -> str:
        """Human-readable report: one line per file, the diffs in a dry run, then the notes."""
        verb = "uninstall" if self.uninstall else "install"
        head = f"intentloop {verb} {self.host}" + (" (dry run: nothing was written)" if self.dry_run else "")
        out = [head]
        for c in self.changes:
            extra = f"  (backup: {c.backup})" if c.backup is not None and c.action in ("create", "update") else ""
            out.append(f"  {c.action:<9} {c.path}{extra}")
            if c.drop_backup is not None:
                out.append(f"  {'delete':<9} {c.drop_backup}  (backup no longer needed)")
        if self.dry_run:
            out.extend(c.diff().rstrip("\n") for c in self.changes if c.action != "unchanged")
        out.extend(self.notes)
        return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------------ locations


def default_program() -> tuple[str, ...]:
    """How hosts should start this installation: the ``intentloop`` script beside ``sys.executable`` if present."""
    exe = Path(sys.executable).absolute()
    for name in ("intentloop", "intentloop.exe"):
        script = exe.parent / name
        if script.is_file() and os.access(script, os.X_OK):
            return (str(script),)
    return (str(exe), "-P", "-m", "intentloop")


def default_data_root(env: Mapping[str, str], home: Path) -> DataRoot:
    """The data root to pin: the one every other process of this user resolves (``locate_data_root``), with ``home``
    as HOME. Every installer pins the same root, so Codex, Claude Code and Gemini CLI share one memory.

    Raises:
        StorageError: ``DATA_DIR_REQUIRED`` (only when ``home`` is not absolute and no override is set).
    """
    return locate_data_root({**env, "HOME": str(home)})


def hook_command(program: Sequence[str], event: str, data_root: Path) -> str:
    """The shell command a host runs for ``event`` (both hosts run hook commands through a shell)."""
    argv = [*program, "hook", HOOK_ARGS[event], "--data-dir", str(data_root)]
    return shlex.join(argv)


def hook_groups(program: Sequence[str], data_root: Path) -> dict[str, dict[str, Any]]:
    """One hook group per event, with the matchers, timeout and status message of ``hooks/hooks.json``."""
    groups: dict[str, dict[str, Any]] = {}
    for event in HOOK_EVENTS:
        handler: dict[str, Any] = {"type": "command", "command": hook_command(program, event.name, data_root)}
        handler["timeout"] = HOOK_TIMEOUT_S
        if event.status_message is not None:
            handler["statusMessage"] = event.status_message
        group: dict[str, Any] = {"matcher": event.matcher} if event.matcher is not None else {}
        group["hooks"] = [handler]
        groups[event.name] = group
    return groups


def server_entry(program: Sequence[str], data_root: Path) -> dict[str, Any]:
    """The MCP server entry: ``<program> serve`` with the data root in its environment."""
    return {"command": program[0], "args": [*program[1:], "serve"], "env": {"INTENT_LOOP_DATA_DIR": str(data_root)}}


# ------------------------------------------------------------------------------------------------------ file plans

Transform = Callable[[bytes | None], bytes | None]


@dataclass(frozen=True)
class _Edits:
    """The edits of one file: ``add`` intentloop's entries (refusing foreign ones), ``replacing`` the same with
    ``--replace``, ``remove`` only intentloop's own, ``reinstate(now, backup)`` the backup's foreign entries that a
    ``--replace`` replaced, and whether a result is as empty as a file created for us."""

    add: Transform
    replacing: Transform
    remove: Transform
    reinstate: Callable[[bytes, bytes], bytes]
    created_empty: Callable[[bytes], bool]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc


def _backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _plan_install(path: Path, edits: _Edits, *, replace: bool) -> tuple[FileChange, bytes | None]:
    """Plan adding our entries; returns the change and the bytes the backup must hold (``None``: leave it)."""
    before = _read(path)
    after = (edits.replacing if replace else edits.add)(before)
    remove = edits.remove
    backup = _backup_path(path)
    if after == before:
        return FileChange(path, "unchanged", before, after), None
    if before is None:
        return FileChange(path, "create", None, after), None
    new_backup: bytes | None = None
    old_backup = _read(backup)
    # Keep a backup from an earlier install while the file still carries our entries; otherwise the file's current
    # bytes, without any entry of ours (an install from before backups, or whose backup was deleted), are the
    # "before intentloop" state: the user's own entries, also those --replace replaces, stay in it.
    without_us = remove(before)
    if without_us == before or old_backup is None:
        new_backup = without_us
    return FileChange(path, "update", before, after, backup), new_backup


def _plan_uninstall(path: Path, edits: _Edits) -> FileChange:
    """Plan removing our entries. The backup's bytes come back when the file is exactly what installing into them
    gives (with ``--replace`` or without), or what removing our entries gives (Codex's trust records for our hooks
    were the only other change); otherwise only our entries go, and the backup's own entries that ``--replace``
    replaced come back. Either way the backup is removed: once none of our entries is left, nothing needs it."""
    before = _read(path)
    backup = _backup_path(path)
    stale = backup if os.path.lexists(backup) else None
    if before is None:
        return FileChange(path, "unchanged", None, None, drop_backup=stale)
    after = edits.remove(before)
    if after == before:
        return FileChange(path, "unchanged", before, before, drop_backup=stale)
    original = _read(backup)
    if original is not None and (after == original or _reproduces(edits.replacing, original, before)):
        return FileChange(path, "restore", before, original, backup)
    if after is not None and original is not None:
        after = edits.reinstate(after, original)
    if after is None or (original is None and edits.created_empty(after)):
        return FileChange(path, "delete", before, None, drop_backup=stale)
    return FileChange(path, "update", before, after, drop_backup=stale)


def _reproduces(add: Transform, original: bytes, current: bytes) -> bool:
    """Whether installing into ``original`` gives exactly ``current`` (nothing else changed since)."""
    try:
        return add(original) == current
    except HostConfigError:
        return False


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` (following a symlink to its target, as dotfile managers use them) durably, keeping its mode."""
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o600
        replace_file(target, f".{target.name}.{uuid.uuid4().hex}.intentloop-tmp", data, durable=True, mode=mode)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror}", code="STORAGE_WRITE_FAILED") from exc


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot remove {path}: {exc.strerror}", code="STORAGE_WRITE_FAILED") from exc


def _apply(change: FileChange, backup_bytes: bytes | None) -> None:
    if change.action in ("create", "update", "restore") and change.after is not None:
        if backup_bytes is not None and change.backup is not None:
            _atomic_write(change.backup, backup_bytes)
        _atomic_write(change.path, change.after)
        if change.action == "restore" and change.backup is not None:
            _unlink(change.backup)
    elif change.action == "delete":
        _unlink(change.path)
    if change.drop_backup is not None:
        _unlink(change.drop_backup)


# ------------------------------------------------------------------------------------------------------ transforms


Doc = dict[str, Any]


def _json_edits(
    what: str,
    add_doc: Callable[[Doc, bool], Doc],
    remove_doc: Callable[[Doc], Doc],
    reinstate_doc: Callable[[Doc, Doc], Doc],
) -> _Edits:
    def adding(replace: bool) -> Transform:
        def add(data: bytes | None) -> bytes | None:
            doc = load_json_object(data, what)
            new = add_doc(doc, replace)
            return data if new == doc and data is not None else dump_json(new, like=data)

        return add

    def remove(data: bytes | None) -> bytes | None:
        doc = load_json_object(data, what)
        new = remove_doc(doc)
        return data if new == doc else dump_json(new, like=data)

    def reinstate(data: bytes, backup: bytes) -> bytes:
        doc = load_json_object(data, what)
        try:
            earlier = load_json_object(backup, what + BACKUP_SUFFIX)
        except HostConfigError:
            return data  # a backup that no longer parses has nothing to give back
        new = reinstate_doc(doc, earlier)
        return data if new == doc else dump_json(new, like=data)

    def created_empty(data: bytes) -> bool:
        return load_json_object(data, what) == {}

    return _Edits(adding(False), adding(True), remove, reinstate, created_empty)


def trust_keys(hooks_file: Path, doc: Mapping[str, Any], root: str) -> set[tuple[str, ...]]:
    """The ``hooks.state`` key paths Codex uses for the trust records of our hooks (for ``root``) in ``hooks_file``.

    Codex keys a hook by ``<hooks.json path>:<event in snake_case>:<group index>:<handler index>`` (seen with Codex
    0.171 in ``tools/e2e``); the path is taken as given and as resolved, in case either was used.
    """
    keys: set[tuple[str, ...]] = set()
    table = doc.get("hooks")
    if not isinstance(table, Mapping):
        return keys
    paths = {str(hooks_file), os.path.realpath(hooks_file)}
    ours = owned_by(root)
    for event, groups in table.items():
        if event not in HOOK_ARGS or not isinstance(groups, list):
            continue
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()
        for gi, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, Mapping) else None
            for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(handler, Mapping) and ours(handler.get("command")):
                    keys.update(("hooks", "state", f"{p}:{snake}:{gi}:{hi}") for p in paths)
    return keys


def _toml_edits(
    server: Mapping[str, Any],
    what: str,
    trusted: frozenset[tuple[str, ...]] = frozenset(),
) -> _Edits:
    """``config.toml``: a foreign ``intent_loop`` entry is always refused (never replaced: the text outside our
    markers is the user's), so adding with ``--replace`` is adding, and nothing is reinstated."""

    def decode(data: bytes | None) -> str:
        try:
            return (data or b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HostConfigError(f"{what} is not UTF-8") from exc

    def add(data: bytes | None) -> bytes | None:
        text = decode(data)
        new = toml_install(text, server, what=what)
        return data if new == text and data is not None else new.encode("utf-8")

    def remove(data: bytes | None) -> bytes | None:
        text = decode(data)
        new = toml_uninstall(text, what=what)
        if trusted:
            new = toml_remove_tables(new, set(trusted))[0]
        return data if new == text else new.encode("utf-8")

    def created_empty(data: bytes) -> bool:
        return not data.strip()

    return _Edits(add, add, remove, lambda data, _backup: data, created_empty)


def _skill_edits(ours: bytes, what: str) -> _Edits:
    """The skill file is whole: intentloop's or not. A ``--replace``d file of the user's is the backup's."""
    return _Edits(
        lambda d: skill_install(d, ours, what=what, replace=False),
        lambda d: skill_install(d, ours, what=what, replace=True),
        skill_uninstall,
        lambda data, _backup: data,
        lambda _data: False,
    )


def _left_in_place(changes: Sequence[tuple[FileChange, bytes | None]], root: str) -> list[str]:
    """Notes naming the intentloop entries an uninstall leaves because intentloop's installer did not write them for
    ``root`` (the user's own, the plugin's, or an install for another data root)."""
    notes: list[str] = []
    for change, _backup in changes:
        if change.after is None or change.path.suffix != ".json":
            continue
        try:
            doc = load_json_object(change.after, str(change.path))
        except HostConfigError:
            continue
        left = foreign_hooks(doc, root)
        servers = doc.get("mcpServers")
        entry = servers.get(SERVER_KEY) if isinstance(servers, Mapping) else None
        if is_our_server_entry(entry) and installed_server_root(entry) != root:
            left.append(f"mcpServers.{SERVER_KEY}")
        if left:
            notes.append(
                f"Left in {change.path} (intentloop's installer did not write them for the data root {root}): "
                + "; ".join(left)
            )
    return notes


# ---------------------------------------------------------------------------------------------------------- install


def install(
    host: str,
    *,
    dry_run: bool = False,
    uninstall: bool = False,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    codex_home: Path | None = None,
    claude_config_dir: Path | None = None,
    claude_json: Path | None = None,
    gemini_config_dir: Path | None = None,
    data_root: Path | None = None,
    program: Sequence[str] | None = None,
    replace: bool = False,
) -> InstallResult:
    """Install (or with ``uninstall`` remove) intentloop's MCP server entry and hooks for ``host``.

    Args:
        host: ``"codex"``, ``"claude"`` or ``"gemini"``.
        dry_run: compute and describe the change, write nothing.
        uninstall: remove what an install added instead.
        replace: replace intentloop entries that intentloop's installer did not write for this data root (the user's
            own ``intent_loop`` server, plugin hooks) instead of refusing them; the backup keeps them for uninstall.
        env: environment to read ``CODEX_HOME``, ``CLAUDE_CONFIG_DIR``, ``GEMINI_CLI_HOME``, ``INTENT_LOOP_DATA_DIR``
            … from (default ``os.environ``).
        home: the user's home folder (default ``Path.home()``).
        codex_home: Codex's folder (default ``$CODEX_HOME`` or ``~/.codex``).
        claude_config_dir: Claude Code's folder (default ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``).
        claude_json: Claude Code's user-scope state file (default ``$CLAUDE_CONFIG_DIR/.claude.json`` or
            ``~/.claude.json``).
        gemini_config_dir: Gemini CLI's folder (default ``$GEMINI_CLI_HOME/.gemini`` or ``~/.gemini``).
        data_root: the data root to pin (default :func:`default_data_root`).
        program: argv prefix that starts intentloop (default :func:`default_program`).

    Returns:
        What changed (or would change) per file, and notes for the user.

    Raises:
        InvalidInputError: unknown host (``INVALID_ARGUMENTS``).
        HostConfigError: a configuration file cannot be edited safely (``INVALID_ARGUMENTS``); an entry that is not
            intentloop's is where intentloop's would go and ``replace`` is not set (``INSTALL_ENTRY_EXISTS``).
        StorageError: a file cannot be read or written (``STORAGE_READ_FAILED`` / ``STORAGE_WRITE_FAILED``).
    """
    if host not in HOSTS:
        raise InvalidInputError(f"unknown host {host!r}: expected codex, claude or gemini", code="INVALID_ARGUMENTS")
    env = os.environ if env is None else env
    home = (home or (Path(env["HOME"]) if env.get("HOME") else Path.home())).absolute()
    prog = tuple(program) if program is not None else default_program()
    which = cast(Host, host)
    if data_root is not None:
        located = DataRoot(path=data_root.absolute(), source="INTENT_LOOP_DATA_DIR", reason="chosen by the caller")
    else:
        located = default_data_root(env, home)
    root = located.path
    groups = hook_groups(prog, root)
    server = server_entry(prog, root)
    plans: list[tuple[Path, _Edits]] = []
    notes: list[str] = []
    skill_home: Path | None = None  # Claude Code's folder, whose skills/ an uninstall prunes

    def hooks_edits(path: Path) -> _Edits:
        what = str(path)
        return _json_edits(
            what,
            lambda d, rep: hooks_install(d, groups, root=str(root), what=what, replace=rep),
            lambda d: hooks_uninstall(d, root=str(root), what=what),
            lambda d, earlier: hooks_reinstate(d, earlier, root=str(root)),
        )

    if host == "codex":
        chome = codex_home or (Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex")
        config, hooks_file = chome.absolute() / "config.toml", chome.absolute() / "hooks.json"
        trusted = frozenset(trust_keys(hooks_file, load_json_object(_read(hooks_file), str(hooks_file)), str(root)))
        plans.append((config, _toml_edits(server, str(config), trusted if uninstall else frozenset())))
        plans.append((hooks_file, hooks_edits(hooks_file)))
        if not uninstall:
            notes.append(
                "Codex runs new or changed hooks only after you trust them: start `codex`, open `/hooks`, review "
                f"the five intentloop hooks in {hooks_file} and trust them (intentloop never writes trust records)."
            )
    elif host == "gemini":
        settings = (gemini_config_dir or gemini_dir(env, home)).absolute() / "settings.json"
        what = str(settings)
        gemini_groups = gemini_hook_groups(prog, root)
        plans.append(
            (
                settings,
                _json_edits(
                    what,
                    lambda d, rep: settings_install(d, gemini_groups, server, root=str(root), what=what, replace=rep),
                    lambda d: settings_uninstall(d, root=str(root), what=what),
                    lambda d, earlier: settings_reinstate(d, earlier, root=str(root)),
                ),
            )
        )
        if not uninstall:
            notes.append(
                "Restart Gemini CLI; `/hooks` lists the four intentloop hooks and `/mcp` the intent_loop server."
            )
    else:
        cdir = claude_config_dir or (
            Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        )
        cdir = cdir.absolute()
        state = (
            claude_json or (cdir / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json")
        ).absolute()
        entry = {"type": "stdio", **server}
        what = str(state)
        plans.append((cdir / "settings.json", hooks_edits(cdir / "settings.json")))
        plans.append(
            (
                state,
                _json_edits(
                    what,
                    lambda d, rep: server_install(d, entry, what=what, replace=rep),
                    lambda d: server_uninstall(d, root=str(root)),
                    lambda d, earlier: server_reinstate(d, earlier, root=str(root)),
                ),
            )
        )
        skill_home = cdir
        skill = cdir / SKILL_PATH
        if uninstall:
            # Only whether the file is intentloop's matters now; the bundled skill need not even be readable.
            current = _read(skill)
            ours = current if current is not None and is_our_skill(current) else b""
            if current is not None and not ours:
                notes.append(f"Left {skill}: a skill intentloop's installer did not write (or one changed since).")
        else:
            ours = installed_skill(read_skill())
        plans.append((skill, _skill_edits(ours, str(skill))))
        if not uninstall:
            notes.append(
                "Restart Claude Code; `/hooks` lists the five intentloop hooks, `/mcp` the intent_loop server, and "
                "`/intent` is the intent skill."
            )
    changes: list[tuple[FileChange, bytes | None]] = []
    for path, edits in plans:
        if uninstall:
            changes.append((_plan_uninstall(path, edits), None))
        else:
            changes.append(_plan_install(path, edits, replace=replace))
    if uninstall:
        notes.extend(_left_in_place(changes, str(root)))
    if not dry_run:
        for change, backup_bytes in changes:
            _apply(change, backup_bytes)
        if uninstall and skill_home is not None:
            prune_skill_dirs(skill_home)
    if not uninstall:
        notes.append(f"MCP server `{SERVER_KEY}` and hooks use the data root {root} ({located.reason}).")
        for change, _ in changes:
            text = (change.after or b"").decode("utf-8", "replace")
            if change.path.suffix == ".toml" and appended_settings_land_in_our_table(text):
                notes.append(
                    f"Warning: intentloop's [mcp_servers.{SERVER_KEY}] table is the last table of {change.path}: "
                    f"a setting you append at the end of that file would belong to it. Add new settings above the "
                    f"`{TOML_BEGIN}` line instead."
                )
    return InstallResult(
        host=which,
        uninstall=uninstall,
        dry_run=dry_run,
        data_root=root,
        command=prog,
        changes=tuple(c for c, _ in changes),
        notes=tuple(notes),
    )


__all__ = [
    "BACKUP_SUFFIX",
    "HOSTS",
    "FileChange",
    "Host",
    "HostConfigError",
    "InstallResult",
    "default_data_root",
    "default_program",
    "hook_command",
    "hook_groups",
    "install",
    "server_entry",
]
