"""The one exception type of intentloop and its stable wire codes.

Every failure that crosses a public surface (MCP envelope, hook, CLI) is an :class:`IntentLoopError` carrying a
stable ``code`` from :data:`CODES` and a ``retryable`` flag. The tree is deliberately shallow::

    IntentLoopError                      any failure with a stable code
    ├── InvalidInputError                bad input from an agent, a hook payload or an import file
    ├── StorageError                     the data root, a path, a file or the lock
    │   └── CorruptLedgerError           the chain does not verify (carries ``line``)
    └── ConflictError                    a rule of the intent model refuses the change

Foreign errors (``OSError``, ``msgspec.DecodeError``) are mapped at the layer boundary with ``raise ... from exc``.
"""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

#: Every stable wire code. Codes are never reused or renamed; new ones are only added. mypy checks each ``code=...``
#: against this type, so a misspelt code is a type error, not a run-time surprise.
ErrorCode = Literal[
    # request / project resolution
    "INTERNAL_ERROR",
    "INVALID_ARGUMENTS",
    "PROJECT_ROOT_METADATA_INVALID",
    "PROJECT_ROOT_INVALID",
    "PROJECT_ROOT_MISMATCH",
    "PROJECT_ROOT_REQUIRED",
    "SKILL_NOT_FOUND",
    # validation
    "INVALID_ID",
    "INVALID_REQUEST_ID",
    "SENSITIVE_ID_REJECTED",
    "INVALID_SOURCE",
    "INVALID_LABEL",
    "TASK_NOT_FOUND",
    "INVALID_FACETS",
    "INVALID_STATEMENT",
    "RAW_PROMPT_REJECTED",
    "INVALID_EVIDENCE_PATH",
    # service semantics
    "REQUEST_ID_REUSED",
    "INITIAL_CLAIM_LIMIT",
    "INVALID_SCOPE",
    "MODE_OFF_SEMANTIC_INPUT",
    "PRIVATE_SESSION_TOKEN_REQUIRED",
    "TASK_ALREADY_STARTED",
    "SESSION_ALREADY_ASSOCIATED",
    "CORRUPT_PRIVATE_STATE",
    "PRIVATE_CONTROL_MISSING",
    "PRIVATE_SESSION_ACTIVE",
    "PRIVATE_STATE_REQUIRED",
    "PRIVATE_CONTROL_MISMATCH",
    "MODE_OFF",
    "INVALID_CLAIM_ROLE",
    "EXPLICIT_SOURCE_REQUIRED",
    "CONFIDENCE_REQUIRED",
    "CONFIDENCE_NOT_ALLOWED",
    "LONG_TERM_CONFIRMATION_REQUIRED",
    "CLAIM_NOT_ACTIVE",
    "EXPLICIT_REPLACEMENT_REQUIRES_USER",
    "EXPLICIT_INVALIDATION_REQUIRES_USER",
    "RELATED_CLAIM_NOT_FOUND",
    "INVALID_SIGNAL_KEY",
    "INVALID_DISPUTE",
    "REPLACEMENT_TARGET_REQUIRED",
    "INVALID_IMPORT",
    "IMPORT_COLLISION",
    "CONFIRMATION_REQUIRED",
    "CLAIM_ID_REQUIRED",
    "CLAIM_NOT_FOUND",
    # a replay of a request whose claim was deleted (a keyed, content-free tombstone remembers it)
    "CLAIM_DELETED",
    "AMBIGUOUS_CLAIM_PREFIX",  # an /intent command's claim-id prefix names more than one claim
    "APPEND_VERIFICATION_FAILED",
    # storage
    "DATA_DIR_REQUIRED",
    "INVALID_PROJECT_ID",
    "INVALID_SESSION_HASH",
    "PATH_ESCAPE",
    "INVALID_DATA_DIR",
    "UNSAFE_DATA_FILE",
    "TRANSIENT_FILE_RACE",
    "CORRUPT_TRAILING_EVENT",
    "CORRUPT_LEDGER",
    "SIGNATURE_INVALID",
    "SIGNING_KEY_MISSING",
    "FUTURE_SCHEMA",
    "MIGRATION_UNAVAILABLE",
    "LOCK_TIMEOUT",
    "LOCK_RELEASE_TIMEOUT",
    "LOCK_COMPROMISED",
    "PRIVATE_SESSION_OWNED",
    "PRIVATE_TASK_OWNED",
    "PRIVATE_CONTROL_CONFLICT",
    "CORRUPT_PRIVATE_CONTROL",
    "APPEND_ABORTED",
    "DELETE_VERIFICATION_FAILED",
    "STORAGE_WRITE_FAILED",
    "STORAGE_READ_FAILED",
    # admin CLI and recovery
    "PROJECT_NOT_FOUND",
    "OUTPUT_EXISTS",
    "AMBIGUOUS_ID",
    "RELINK_TARGET_EXISTS",
    "INSTALL_ENTRY_EXISTS",  # an installer found a host entry it did not write where its own would go
    "INSTALL_TABLE_CONFLICT",  # config.toml has its own [mcp_servers.intent_loop] table, which no edit may take over
    "OUTPUT_INSIDE_DATA_ROOT",  # an export's destination is inside the data root (it would outlive a forget)
    # sharing through git (docs/SYNC.md)
    "SHARE_FILE_INVALID",  # .intentloop/project.json or a shared id is not what share init writes
    "SHARE_KEY_INVALID",  # a public key given to share trust is not an OpenSSH ssh-ed25519 key
    "SHARE_NOT_INITIALIZED",  # the project has no shared id (share init / share join) or no remote
    "SHARE_ALREADY_BOUND",  # share join on a checkout that carries, or is bound to, another shared id
    "SHARE_REDACTION_HIT",  # a text that would travel still holds a secret: the push is refused
    "SHARE_GIT_FAILED",  # the git command line failed (fetch, push, an object)
]
#: The codes whose failures may succeed when retried unchanged.
RETRYABLE: frozenset[ErrorCode] = frozenset(
    {
        "TRANSIENT_FILE_RACE",
        "CORRUPT_TRAILING_EVENT",
        "LOCK_TIMEOUT",
        "LOCK_RELEASE_TIMEOUT",
        "LOCK_COMPROMISED",
        "PRIVATE_CONTROL_CONFLICT",
        "CORRUPT_PRIVATE_CONTROL",
        "STORAGE_WRITE_FAILED",
        "STORAGE_READ_FAILED",
        "SHARE_GIT_FAILED",
    }
)
#: code -> retryable, for every code (derived from the two above).
CODES: dict[ErrorCode, bool] = {code: code in RETRYABLE for code in get_args(ErrorCode)}


class IntentLoopError(Exception):
    """A failure with a stable machine-readable code.

    Args:
        message: one human sentence; never contains stored semantic content or secrets.
        code: a key of :data:`CODES`; defaults to the class's code.
        retryable: overrides the code's default retryability.
    """

    code: ClassVar[ErrorCode] = "INTERNAL_ERROR"

    def __init__(self, message: str, *, code: ErrorCode | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        if code is not None:
            if code not in CODES:
                raise ValueError(f"unknown error code {code!r}")
            self.code = code  # type: ignore[misc]
        self.message = message
        self.retryable: bool = CODES[self.code] if retryable is None else retryable

    def to_dict(self) -> dict[str, object]:
        """The wire form used by the MCP envelope, the CLI's ``--json`` and hook debug output."""
        return {"code": self.code, "message": self.message, "retryable": self.retryable}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidInputError(IntentLoopError):
    """Bad input from an agent, a hook payload or an import file."""

    code: ClassVar[ErrorCode] = "INVALID_ARGUMENTS"


class StorageError(IntentLoopError):
    """The data root, a path, a file or the lock refused the operation."""

    code: ClassVar[ErrorCode] = "INVALID_DATA_DIR"


class CorruptLedgerError(StorageError):
    """The ledger does not verify.

    Attributes:
        line: 1-based line number of the first bad line (``None`` when not line-specific).
        reason: short machine-friendly reason, e.g. ``"event_hash mismatch"``.
    """

    code: ClassVar[ErrorCode] = "CORRUPT_LEDGER"

    def __init__(
        self, message: str, *, line: int | None = None, reason: str = "", code: ErrorCode | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.line = line
        self.reason = reason or message


class ConflictError(IntentLoopError):
    """A rule of the intent model refuses the change."""

    code: ClassVar[ErrorCode] = "REQUEST_ID_REUSED"


#: The class each code is raised with: a code's family is part of its contract (``except StorageError`` sees every
#: storage code and no other). ``tests/unit/test_errors.py`` checks every raise in the code base against it.
_INPUT: frozenset[ErrorCode] = frozenset(
    {
        "INVALID_ARGUMENTS",
        "PROJECT_ROOT_METADATA_INVALID",
        "PROJECT_ROOT_INVALID",
        "PROJECT_ROOT_MISMATCH",
        "PROJECT_ROOT_REQUIRED",
        "INVALID_ID",
        "INVALID_REQUEST_ID",
        "SENSITIVE_ID_REJECTED",
        "INVALID_SOURCE",
        "INVALID_LABEL",
        "INVALID_FACETS",
        "INVALID_STATEMENT",
        "RAW_PROMPT_REJECTED",
        "INVALID_EVIDENCE_PATH",
        "INITIAL_CLAIM_LIMIT",
        "INVALID_SCOPE",
        "MODE_OFF_SEMANTIC_INPUT",
        "INVALID_CLAIM_ROLE",
        "EXPLICIT_SOURCE_REQUIRED",
        "CONFIDENCE_REQUIRED",
        "CONFIDENCE_NOT_ALLOWED",
        "INVALID_SIGNAL_KEY",
        "INVALID_DISPUTE",
        "REPLACEMENT_TARGET_REQUIRED",
        "INVALID_IMPORT",
        "CONFIRMATION_REQUIRED",
        "CLAIM_ID_REQUIRED",
        "INVALID_SESSION_HASH",
        "AMBIGUOUS_ID",
        "AMBIGUOUS_CLAIM_PREFIX",
        "OUTPUT_INSIDE_DATA_ROOT",
        "SHARE_FILE_INVALID",
        "SHARE_KEY_INVALID",
    }
)
_CONFLICT: frozenset[ErrorCode] = frozenset(
    {
        "REQUEST_ID_REUSED",
        "PRIVATE_SESSION_TOKEN_REQUIRED",
        "TASK_ALREADY_STARTED",
        "SESSION_ALREADY_ASSOCIATED",
        "PRIVATE_CONTROL_MISSING",
        "PRIVATE_SESSION_ACTIVE",
        "PRIVATE_STATE_REQUIRED",
        "PRIVATE_CONTROL_MISMATCH",
        "MODE_OFF",
        "LONG_TERM_CONFIRMATION_REQUIRED",
        "CLAIM_NOT_ACTIVE",
        "EXPLICIT_REPLACEMENT_REQUIRES_USER",
        "EXPLICIT_INVALIDATION_REQUIRES_USER",
        "IMPORT_COLLISION",
        "CLAIM_DELETED",
        "PRIVATE_SESSION_OWNED",
        "PRIVATE_TASK_OWNED",
        "RELINK_TARGET_EXISTS",
        "SHARE_NOT_INITIALIZED",
        "SHARE_ALREADY_BOUND",
        "SHARE_REDACTION_HIT",
    }
)
_CORRUPT: frozenset[ErrorCode] = frozenset(
    {"CORRUPT_LEDGER", "CORRUPT_TRAILING_EVENT", "FUTURE_SCHEMA", "MIGRATION_UNAVAILABLE", "SIGNATURE_INVALID"}
)
_STORAGE: frozenset[ErrorCode] = frozenset(
    {
        "DATA_DIR_REQUIRED",
        "INVALID_PROJECT_ID",
        "PATH_ESCAPE",
        "INVALID_DATA_DIR",
        "UNSAFE_DATA_FILE",
        "TRANSIENT_FILE_RACE",
        "LOCK_TIMEOUT",
        "LOCK_RELEASE_TIMEOUT",
        "LOCK_COMPROMISED",
        "CORRUPT_PRIVATE_STATE",
        "CORRUPT_PRIVATE_CONTROL",
        "PRIVATE_CONTROL_CONFLICT",
        "APPEND_ABORTED",
        "APPEND_VERIFICATION_FAILED",
        "DELETE_VERIFICATION_FAILED",
        "STORAGE_WRITE_FAILED",
        "STORAGE_READ_FAILED",
        "SIGNING_KEY_MISSING",
        "PROJECT_NOT_FOUND",
        "OUTPUT_EXISTS",
        "SHARE_GIT_FAILED",
    }
)


#: The one code with two families: a session hash given as an argument is bad input; a file under
#: ``private-sessions/`` not named like one is a damaged data directory (privacy fails closed either way).
_ALSO_STORAGE: frozenset[ErrorCode] = frozenset({"INVALID_SESSION_HASH"})


def allowed_classes(code: ErrorCode) -> tuple[type[IntentLoopError], ...]:
    """The classes ``code`` may be raised with: its :func:`family`, plus ``StorageError`` for the one dual code."""
    return (family(code), StorageError) if code in _ALSO_STORAGE else (family(code),)


def family(code: ErrorCode) -> type[IntentLoopError]:
    """The class ``code`` is raised with (``IntentLoopError`` itself for internal errors and the not-found codes)."""
    if code in _INPUT:
        return InvalidInputError
    if code in _CONFLICT:
        return ConflictError
    if code in _CORRUPT:
        return CorruptLedgerError
    if code in _STORAGE:
        return StorageError
    return IntentLoopError


__all__ = [
    "CODES",
    "RETRYABLE",
    "ConflictError",
    "CorruptLedgerError",
    "ErrorCode",
    "IntentLoopError",
    "InvalidInputError",
    "StorageError",
    "allowed_classes",
    "family",
]
