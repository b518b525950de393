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

from typing import ClassVar

# code -> retryable. Codes are never reused or renamed; new ones are only added.
CODES: dict[str, bool] = {
    # request / project resolution
    "INTERNAL_ERROR": False,
    "INVALID_ARGUMENTS": False,
    "PROJECT_ROOT_METADATA_INVALID": False,
    "PROJECT_ROOT_INVALID": False,
    "PROJECT_ROOT_MISMATCH": False,
    "PROJECT_ROOT_REQUIRED": False,
    "SKILL_NOT_FOUND": False,
    # validation
    "INVALID_ID": False,
    "INVALID_REQUEST_ID": False,
    "SENSITIVE_ID_REJECTED": False,
    "INVALID_SOURCE": False,
    "INVALID_LABEL": False,
    "TASK_NOT_FOUND": False,
    "INVALID_FACETS": False,
    "INVALID_STATEMENT": False,
    "RAW_PROMPT_REJECTED": False,
    "INVALID_EVIDENCE_PATH": False,
    # service semantics
    "REQUEST_ID_REUSED": False,
    "INITIAL_CLAIM_LIMIT": False,
    "INVALID_SCOPE": False,
    "MODE_OFF_SEMANTIC_INPUT": False,
    "PRIVATE_SESSION_TOKEN_REQUIRED": False,
    "TASK_ALREADY_STARTED": False,
    "SESSION_ALREADY_ASSOCIATED": False,
    "CORRUPT_PRIVATE_STATE": False,
    "PRIVATE_CONTROL_MISSING": False,
    "PRIVATE_SESSION_ACTIVE": False,
    "PRIVATE_STATE_REQUIRED": False,
    "PRIVATE_CONTROL_MISMATCH": False,
    "MODE_OFF": False,
    "INVALID_CLAIM_ROLE": False,
    "EXPLICIT_SOURCE_REQUIRED": False,
    "CONFIDENCE_REQUIRED": False,
    "CONFIDENCE_NOT_ALLOWED": False,
    "LONG_TERM_CONFIRMATION_REQUIRED": False,
    "CLAIM_NOT_ACTIVE": False,
    "EXPLICIT_REPLACEMENT_REQUIRES_USER": False,
    "EXPLICIT_INVALIDATION_REQUIRES_USER": False,
    "RELATED_CLAIM_NOT_FOUND": False,
    "INVALID_SIGNAL_KEY": False,
    "INVALID_DISPUTE": False,
    "REPLACEMENT_TARGET_REQUIRED": False,
    "INVALID_IMPORT": False,
    "IMPORT_COLLISION": False,
    "CONFIRMATION_REQUIRED": False,
    "CLAIM_ID_REQUIRED": False,
    "CLAIM_NOT_FOUND": False,
    "APPEND_VERIFICATION_FAILED": False,
    # storage
    "DATA_DIR_REQUIRED": False,
    "INVALID_PROJECT_ID": False,
    "INVALID_SESSION_HASH": False,
    "PATH_ESCAPE": False,
    "INVALID_DATA_DIR": False,
    "UNSAFE_DATA_FILE": False,
    "TRANSIENT_FILE_RACE": True,
    "CORRUPT_TRAILING_EVENT": True,
    "CORRUPT_LEDGER": False,
    "SIGNATURE_INVALID": False,
    "FUTURE_SCHEMA": False,
    "MIGRATION_UNAVAILABLE": False,
    "LOCK_TIMEOUT": True,
    "LOCK_RELEASE_TIMEOUT": True,
    "LOCK_COMPROMISED": True,
    "PRIVATE_SESSION_OWNED": False,
    "PRIVATE_TASK_OWNED": False,
    "PRIVATE_CONTROL_CONFLICT": True,
    "CORRUPT_PRIVATE_CONTROL": True,
    "APPEND_ABORTED": False,
    "DELETE_VERIFICATION_FAILED": False,
    "STORAGE_WRITE_FAILED": True,
    "STORAGE_READ_FAILED": True,
    # admin CLI and recovery
    "PROJECT_NOT_FOUND": False,
    "OUTPUT_EXISTS": False,
}


class IntentLoopError(Exception):
    """A failure with a stable machine-readable code.

    Args:
        message: one human sentence; never contains stored semantic content or secrets.
        code: a key of :data:`CODES`; defaults to the class's code.
        retryable: overrides the code's default retryability.
    """

    code: ClassVar[str] = "INTERNAL_ERROR"

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
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

    code: ClassVar[str] = "INVALID_ARGUMENTS"


class StorageError(IntentLoopError):
    """The data root, a path, a file or the lock refused the operation."""

    code: ClassVar[str] = "INVALID_DATA_DIR"


class CorruptLedgerError(StorageError):
    """The ledger does not verify.

    Attributes:
        line: 1-based line number of the first bad line (``None`` when not line-specific).
        reason: short machine-friendly reason, e.g. ``"event_hash mismatch"``.
    """

    code: ClassVar[str] = "CORRUPT_LEDGER"

    def __init__(self, message: str, *, line: int | None = None, reason: str = "", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.line = line
        self.reason = reason or message


class ConflictError(IntentLoopError):
    """A rule of the intent model refuses the change."""

    code: ClassVar[str] = "REQUEST_ID_REUSED"


__all__ = [
    "CODES",
    "ConflictError",
    "CorruptLedgerError",
    "IntentLoopError",
    "InvalidInputError",
    "StorageError",
]
