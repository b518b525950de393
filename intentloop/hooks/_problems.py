"""Problems a user can fix, kept where ``intentloop status`` finds them: a hook fails open on stdout, never silently.

A hook answers its host with the fail-open line whatever happens, so a missing data root, an unreadable ledger or a
broken installation would otherwise go unnoticed. After the answer is sent (and before the watchdog's deadline), the
hook appends one JSON line — time, event, stable code, a message without payload text — to ``hook-problems.log``
under the data root when it exists, else under the user's state directory (``$XDG_STATE_HOME/intentloop``, default
``~/.local/state/intentloop``). The log is capped: past :data:`MAX_LOG_BYTES` it becomes ``hook-problems.log.1``
(replacing the previous one), so it never holds more than twice that. Transient conditions (a held lock, a session
in private mode) and the host's own payload quirks are not problems of the user and are not logged.
Standard library only: this module must work when the installation itself is broken.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

LOG_NAME: Final = "hook-problems.log"
MAX_LOG_BYTES: Final = 64 * 1024
MAX_MESSAGE_CHARS: Final = 300
#: Stable codes that mean "something the user can fix" (the rest are transient or the host's business).
FIXABLE_CODES: Final = frozenset(
    {
        "DATA_DIR_REQUIRED",
        "INVALID_DATA_DIR",
        "PATH_ESCAPE",
        "UNSAFE_DATA_FILE",
        "STORAGE_READ_FAILED",
        "STORAGE_WRITE_FAILED",
        "CORRUPT_LEDGER",
        "CORRUPT_TRAILING_EVENT",
        "FUTURE_SCHEMA",
        "MIGRATION_UNAVAILABLE",
        "SIGNATURE_INVALID",
        "SIGNING_KEY_MISSING",
    }
)
#: The code of a broken installation: intentloop cannot be imported, or the hook command line is wrong.
BROKEN_INSTALLATION: Final = "BROKEN_INSTALLATION"


def state_dir(env: Mapping[str, str]) -> Path | None:
    """``$XDG_STATE_HOME/intentloop`` (absolute only), else ``~/.local/state/intentloop``; ``None`` without a home.

    Unlike the data root, a log location may fall back to the password database: it decides nothing shared.
    """
    xdg = env.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg, "intentloop")
    home = env.get("HOME", "")
    if not os.path.isabs(home):
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError, AttributeError, OSError):
            return None
    return Path(home, ".local", "state", "intentloop") if os.path.isabs(home) else None


def _data_root(env: Mapping[str, str]) -> Path | None:
    try:
        from intentloop.store import resolve_data_root

        return resolve_data_root(env)
    except Exception:  # no root, or intentloop itself cannot be imported: the state directory takes the line
        return None


def log_paths(env: Mapping[str, str]) -> list[Path]:
    """Where problem logs may be, in the order a hook writes them: under the data root, then the state directory."""
    out: list[Path] = []
    root = _data_root(env)
    if root is not None:
        out.append(root / LOG_NAME)
    state = state_dir(env)
    if state is not None:
        out.append(state / LOG_NAME)
    return out


def classify(exc: BaseException) -> str | None:
    """The code to log for ``exc``, or ``None`` when it is not the user's to fix."""
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code if code in FIXABLE_CODES else None
    if isinstance(exc, ImportError) or type(exc).__name__ == "UsageError":
        return BROKEN_INSTALLATION
    return None


def problem_line(
    event: str | None, code: str, exc: BaseException, data_root: Path | None, project_id: str | None = None
) -> bytes:
    """One JSON line. The message is the error's own (paths, codes, line numbers), never payload text; an import
    error names the missing module. ``project_id`` is the project of the payload's ``cwd`` when it could be told."""
    message = str(exc) if getattr(exc, "code", None) or isinstance(exc, ImportError) else type(exc).__name__
    if code == BROKEN_INSTALLATION and not isinstance(exc, ImportError):
        message = f"the hook command line is wrong: {exc}"
    record: dict[str, Any] = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "event": event,
        "project_id": project_id,
        "code": code,
        "message": message[:MAX_MESSAGE_CHARS],
        "data_root": None if data_root is None else str(data_root),
    }
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _append(path: Path, line: bytes) -> bool:
    """Append ``line`` to a regular, non-symlinked log (0600), rotating it past the cap."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(path).st_size >= MAX_LOG_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        fd = os.open(path, flags, 0o600)
    except OSError:
        return False
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        os.write(fd, line)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def record_problem(
    exc: BaseException,
    *,
    event: str | None,
    env: Mapping[str, str],
    data_dir: str | None = None,
    payload: bytes | None = None,
) -> Path | None:
    """Log ``exc`` if the user can fix it; returns the log written (``None``: not a problem, or nowhere to write).

    ``payload`` (the host's JSON) names the event when the command line does not, and the project, by its ``cwd``;
    nothing else of it is read and no text of it is logged.

    The data root is used only when it already exists as a directory (a hook never creates it for a log line); the
    state directory is created (0700) when needed. Never raises.
    """
    try:
        code = classify(exc)
        if code is None:
            return None
        if data_dir:
            env = {**env, "INTENT_LOOP_DATA_DIR": data_dir}
        root = _data_root(env)
        named, project_id = _payload_names(payload, root)
        line = problem_line(event or named, code, exc, root, project_id)
        if root is not None and os.path.isdir(root) and _append(root / LOG_NAME, line):
            return root / LOG_NAME
        state = state_dir(env)
        if state is None:
            return None
        with contextlib.suppress(FileExistsError):
            os.makedirs(state, mode=0o700)
        return state / LOG_NAME if _append(state / LOG_NAME, line) else None
    except Exception:  # a log line must never cost the host its answer
        return None


def _payload_names(payload: bytes | None, root: Path | None) -> tuple[str | None, str | None]:
    """``(hook_event_name, project id of cwd)`` of a payload, each ``None`` when it cannot be told; never raises."""
    if not payload:
        return None, None
    try:
        data = json.loads(payload)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    event = data.get("hook_event_name")
    event = event[:64] if isinstance(event, str) and event.isascii() and event.isalnum() else None
    project_id = None
    cwd = data.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        try:
            from intentloop.store import locate_project

            project_id = locate_project(cwd, root).project_id
        except Exception:  # a broken installation or an unusable cwd: the line still names the event
            project_id = None
    return event, project_id


def last_problem(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The newest problem line across :func:`log_paths` (with ``"log"``: where it is), or ``None``."""
    newest: dict[str, Any] | None = None
    for path in log_paths(env):
        try:
            with open(path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
                tail = fh.read().splitlines()
        except OSError:
            continue
        for raw in reversed(tail):
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("at"), str):
                if newest is None or record["at"] > newest["at"]:
                    newest = {**record, "log": str(path)}
                break
    return newest


def event_of(argv: Sequence[str]) -> str | None:
    """The event argument of a hook command line, if any (for the log line; never raises)."""
    args = [a for a in argv if not a.startswith("-")]
    if "--data-dir" in argv:
        index = list(argv).index("--data-dir")
        if index + 1 < len(argv):
            args = [a for a in args if a != argv[index + 1]]
    return args[0] if args else None


__all__ = [
    "BROKEN_INSTALLATION",
    "FIXABLE_CODES",
    "LOG_NAME",
    "MAX_LOG_BYTES",
    "classify",
    "last_problem",
    "log_paths",
    "problem_line",
    "record_problem",
    "state_dir",
]
