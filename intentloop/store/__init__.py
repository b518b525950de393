"""The storage engine: data root and paths, the verified ledger, the directory lock and the one write path.

Standard library and msgspec only, so the hook path can import it; the trio face is ``intentloop.store.aio``
(``open_locked_ledger``), which this module never imports.
"""

from intentloop.store._config import ENV_CEILING, ENV_HEARTBEAT, ENV_STALE, ENV_WAIT, LockConfig
from intentloop.store._controls import PrivateControl
from intentloop.store._ledger import LockedLedger
from intentloop.store._migrate import CURRENT_SCHEMA_VERSION, MIGRATIONS, migrate, migrate_v1
from intentloop.store._paths import ProjectPaths, canonicalize_project_root, resolve_data_root, validate_project_id
from intentloop.store._project import ProjectStore
from intentloop.store._verify import Verification, verify_ledger_bytes
from intentloop.store._view import LedgerView

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "ENV_CEILING",
    "ENV_HEARTBEAT",
    "ENV_STALE",
    "ENV_WAIT",
    "MIGRATIONS",
    "LedgerView",
    "LockConfig",
    "LockedLedger",
    "PrivateControl",
    "ProjectPaths",
    "ProjectStore",
    "Verification",
    "canonicalize_project_root",
    "migrate",
    "migrate_v1",
    "resolve_data_root",
    "validate_project_id",
    "verify_ledger_bytes",
]
