"""The CLI's stable exit codes and the one-line remedy printed with every error code.

Exit codes are grouped by what the person (or script) running the command should do next, not by which layer failed:
fix the ledger (1), fix the command line (2), fix the environment (3), simply retry (4) or name something that exists
(5: a script can tell "no such project/task/claim" from a typo in the options). docs/CLI.md documents them.
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
"""The command did what it was asked (``verify``: the ledger is intact)."""
DAMAGED: Final = 1
"""The ledger is damaged, or an operation failed or was declined."""
USAGE: Final = 2
"""The command line is wrong: a missing or conflicting option, an unknown project, an existing output file."""
ENVIRONMENT: Final = 3
"""The environment is wrong: no data root, an unsafe or unusable data directory."""
BUSY: Final = 4
"""Another process holds the ledger lock; nothing was changed, retry later."""
NOT_FOUND: Final = 5
"""The project, task or claim named does not exist (under this data root)."""

_USAGE_CODES: Final = frozenset(
    {
        "INVALID_ARGUMENTS",
        "INVALID_PROJECT_ID",
        "AMBIGUOUS_ID",
        "INVALID_ID",
        "PROJECT_ROOT_INVALID",
        "PROJECT_ROOT_REQUIRED",
        "CONFIRMATION_REQUIRED",
        "OUTPUT_EXISTS",
        "RELINK_TARGET_EXISTS",
        "INSTALL_ENTRY_EXISTS",
        "INSTALL_TABLE_CONFLICT",
        "OUTPUT_INSIDE_DATA_ROOT",
        "SHARE_FILE_INVALID",
        "SHARE_KEY_INVALID",
    }
)
_NOT_FOUND_CODES: Final = frozenset({"PROJECT_NOT_FOUND", "TASK_NOT_FOUND", "CLAIM_NOT_FOUND"})
_ENVIRONMENT_CODES: Final = frozenset(
    {"DATA_DIR_REQUIRED", "INVALID_DATA_DIR", "PATH_ESCAPE", "UNSAFE_DATA_FILE", "STORAGE_READ_FAILED"}
)
_BUSY_CODES: Final = frozenset({"LOCK_TIMEOUT", "LOCK_COMPROMISED", "LOCK_RELEASE_TIMEOUT", "TRANSIENT_FILE_RACE"})

_REMEDIES: Final[dict[str, str]] = {
    "INVALID_ARGUMENTS": "check the options with `{help}`",
    "INVALID_PROJECT_ID": "a project id is 64 lowercase hex characters; `intentloop status` lists them",
    "PROJECT_NOT_FOUND": (
        "`intentloop projects` lists the projects under this data root; `intentloop status` shows the root and why "
        "it was chosen"
    ),
    "TASK_NOT_FOUND": "`intentloop tasks` lists the tasks (choose the project with --project-root or --project-id)",
    "CLAIM_NOT_FOUND": "`intentloop show TASK` lists a task's claims with their ids",
    "INVALID_ID": "a task or claim is named by its id or a unique prefix of it (hex digits and dashes)",
    "AMBIGUOUS_ID": "the prefix matches more than one id: type more of it (the error lists the candidates)",
    "RELINK_TARGET_EXISTS": "the new root already has memory: pass --merge to import the old tasks into it",
    "INSTALL_ENTRY_EXISTS": "nothing was written; pass --replace to replace that entry (the backup keeps it)",
    "INSTALL_TABLE_CONFLICT": "nothing was written; remove or rename that [mcp_servers.intent_loop] table in "
    "config.toml by hand (--replace cannot take over a table), then install again",
    "MODE_OFF": "the task is off: turn it on with `intentloop mode TASK on` (or `/intent on` in the host)",
    "PRIVATE_SESSION_ACTIVE": "the task is private in a session: end private mode there, or `intentloop forget task`",
    "PROJECT_ROOT_INVALID": "name an existing local directory (absolute, or relative to the working directory)",
    "PROJECT_ROOT_REQUIRED": "pass --project-root P or --project-id ID",
    "CONFIRMATION_REQUIRED": "run it in a terminal to confirm, or pass --yes once you have read what it will do",
    "OUTPUT_EXISTS": "choose another --out path, or pass --overwrite to replace the file",
    "OUTPUT_INSIDE_DATA_ROOT": "choose an --out path outside the data root (`intentloop status` shows where it is)",
    "SHARE_FILE_INVALID": "a shared id is a UUID as `share init` writes it; restore .intentloop/project.json from git",
    "SHARE_KEY_INVALID": "pass the whole `ssh-ed25519 AAAA…` line `intentloop share keys` prints on the other machine",
    "SHARE_NOT_INITIALIZED": "run `intentloop share init` (or `share join ID`) and `intentloop share remote URL` first",
    "SHARE_ALREADY_BOUND": "this checkout already has a shared id (`intentloop share preview` shows it)",
    "SHARE_REDACTION_HIT": "nothing was pushed: `intentloop share preview` names the record; forget or correct it",
    "SHARE_GIT_FAILED": "check the remote URL and your git credentials (`git ls-remote URL`), then retry",
    "DATA_DIR_REQUIRED": "set HOME (the data root defaults to ~/.local/share/intentloop/v1) or INTENT_LOOP_DATA_DIR",
    "INVALID_DATA_DIR": "the data root and its projects/ folder must be directories you own; inspect them by hand",
    "PATH_ESCAPE": "a path under the data root is a symlink or leads outside it; inspect and remove it by hand",
    "UNSAFE_DATA_FILE": "a data file is not a regular single-link file; inspect it by hand before retrying",
    "STORAGE_READ_FAILED": "the data root could not be read; check its permissions and the disk",
    "STORAGE_WRITE_FAILED": "the file could not be written; check free space and permissions, then retry",
    "CORRUPT_LEDGER": "save what verifies with `intentloop recover export`, then `intentloop recover quarantine`",
    "CORRUPT_TRAILING_EVENT": "a write crashed midway: the next write repairs it (or `intentloop recover quarantine`)",
    "SIGNATURE_INVALID": (
        "a program without the key changed the ledger or head.sig: read `intentloop verify`, compare with a backup, "
        "and accept the chain with `intentloop verify --accept` once it is yours"
    ),
    "SIGNING_KEY_MISSING": "check the projects with `intentloop verify`, then `intentloop keys rotate` (shows them)",
    "FUTURE_SCHEMA": "this ledger was written by a newer intentloop: upgrade intentloop; do not quarantine it",
    "MIGRATION_UNAVAILABLE": "no release reads this record: `intentloop recover export`, then `recover quarantine`",
    "LOCK_TIMEOUT": "another process holds the ledger lock: retry when it has finished",
    "LOCK_COMPROMISED": "the ledger lock changed hands while waiting: retry",
    "LOCK_RELEASE_TIMEOUT": "the ledger lock could not be released in time: retry",
    "TRANSIENT_FILE_RACE": "the ledger changed while the command ran: run it again",
    "INTERNAL_ERROR": "this is a bug: re-run with INTENT_LOOP_DEBUG=1 to see where it failed, and report it",
}
_DEFAULT_REMEDY: Final = "see docs/CLI.md for this code, or re-run with --json for the details"


def exit_code_for(code: str) -> int:
    """The exit code of a failure with the stable error ``code``.

    Args:
        code: a stable code from ``intentloop.errors.CODES``.

    Returns:
        2 for usage errors, 3 for environment errors, 4 for a busy lock, 5 for a project, task or claim that does
        not exist, 1 for everything else.
    """
    if code in _USAGE_CODES:
        return USAGE
    if code in _ENVIRONMENT_CODES:
        return ENVIRONMENT
    if code in _BUSY_CODES:
        return BUSY
    if code in _NOT_FOUND_CODES:
        return NOT_FOUND
    return DAMAGED


def remedy_for(code: str, command: str | None = None) -> str:
    """The one-line remedy printed beside the stable error ``code``; ``command`` (``"recover export"``) names the help
    it points to (``intentloop recover export --help``; without it ``intentloop --help``)."""
    words = " ".join(["intentloop", *([command] if command else []), "--help"])
    return _REMEDIES.get(code, _DEFAULT_REMEDY).replace("{help}", words)


__all__ = ["BUSY", "DAMAGED", "ENVIRONMENT", "NOT_FOUND", "OK", "USAGE", "exit_code_for", "remedy_for"]
