"""The storage engine: data root and paths, the verified ledger, the directory lock and the one write path.

Standard library and msgspec only, so the hook path can import it; the trio face is ``intentloop.store.aio``
(``open_locked_ledger``), which this module never imports. Names load on first use (PEP 562), so a reader that never
takes the lock never imports the lock machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop._lazy import lazy_face

if TYPE_CHECKING:
    from intentloop.store._checkpoint import CHECKPOINT_NAME
    from intentloop.store._config import ENV_CEILING, ENV_HEARTBEAT, ENV_STALE, ENV_WAIT, LockConfig
    from intentloop.store._controls import PrivateControl
    from intentloop.store._fs import rename_noreplace
    from intentloop.store._index import INDEX_DIR_RE
    from intentloop.store._ledger import LockedLedger
    from intentloop.store._lines import LineEvents
    from intentloop.store._migrate import CURRENT_SCHEMA_VERSION, MIGRATIONS, migrate, migrate_v1
    from intentloop.store._paths import (
        DATA_DIR_ENV,
        ROOT_ENV_VARS,
        DataRoot,
        ProjectPaths,
        canonicalize_project_root,
        locate_data_root,
        resolve_data_root,
        validate_project_id,
    )
    from intentloop.store._project import ProjectStore
    from intentloop.store._scan import Scan, scan_file
    from intentloop.store._signing import (
        HEAD_SIG_NAME,
        SIGNATURE_STATUSES,
        chain_signature_status,
        export_signature_status,
        head_signature_status,
        read_head_signature,
        sign_export,
    )
    from intentloop.store._verify import MAX_LINE_BYTES, Damage, Verification, verify_ledger_bytes
    from intentloop.store._view import LedgerView

_LAZY = {
    "CHECKPOINT_NAME": "_checkpoint",
    "CURRENT_SCHEMA_VERSION": "_migrate",
    "Damage": "_verify",
    "DATA_DIR_ENV": "_paths",
    "DataRoot": "_paths",
    "ROOT_ENV_VARS": "_paths",
    "locate_data_root": "_paths",
    "ENV_CEILING": "_config",
    "ENV_HEARTBEAT": "_config",
    "ENV_STALE": "_config",
    "ENV_WAIT": "_config",
    "INDEX_DIR_RE": "_index",
    "MAX_LINE_BYTES": "_verify",
    "HEAD_SIG_NAME": "_signing",
    "MIGRATIONS": "_migrate",
    "LedgerView": "_view",
    "LineEvents": "_lines",
    "LockConfig": "_config",
    "LockedLedger": "_ledger",
    "PrivateControl": "_controls",
    "ProjectPaths": "_paths",
    "ProjectStore": "_project",
    "Scan": "_scan",
    "scan_file": "_scan",
    "chain_signature_status": "_signing",
    "SIGNATURE_STATUSES": "_signing",
    "Verification": "_verify",
    "canonicalize_project_root": "_paths",
    "export_signature_status": "_signing",
    "head_signature_status": "_signing",
    "read_head_signature": "_signing",
    "migrate": "_migrate",
    "migrate_v1": "_migrate",
    "rename_noreplace": "_fs",
    "resolve_data_root": "_paths",
    "sign_export": "_signing",
    "validate_project_id": "_paths",
    "verify_ledger_bytes": "_verify",
}


__all__ = [
    "CHECKPOINT_NAME",
    "CURRENT_SCHEMA_VERSION",
    "DATA_DIR_ENV",
    "ENV_CEILING",
    "ENV_HEARTBEAT",
    "ENV_STALE",
    "ENV_WAIT",
    "HEAD_SIG_NAME",
    "INDEX_DIR_RE",
    "MAX_LINE_BYTES",
    "MIGRATIONS",
    "ROOT_ENV_VARS",
    "SIGNATURE_STATUSES",
    "Damage",
    "DataRoot",
    "LedgerView",
    "LineEvents",
    "LockConfig",
    "LockedLedger",
    "PrivateControl",
    "ProjectPaths",
    "ProjectStore",
    "Scan",
    "Verification",
    "canonicalize_project_root",
    "chain_signature_status",
    "export_signature_status",
    "head_signature_status",
    "locate_data_root",
    "migrate",
    "migrate_v1",
    "read_head_signature",
    "rename_noreplace",
    "resolve_data_root",
    "scan_file",
    "sign_export",
    "validate_project_id",
    "verify_ledger_bytes",
]

__getattr__, __dir__ = lazy_face(__name__, _LAZY, __all__)
