"""The storage engine: data root and paths, the verified ledger, the directory lock and the one write path.

Standard library and msgspec only, so the hook path can import it; the trio face is ``intentloop.store.aio``
(``open_locked_ledger``), which this module never imports. Names load on first use (PEP 562), so a reader that never
takes the lock never imports the lock machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop._lazy import lazy_face

if TYPE_CHECKING:  # what mypy checks: `X as X` re-exports each name, so a misspelt import fails it
    from intentloop.store._checkpoint import CHECKPOINT_NAME as CHECKPOINT_NAME
    from intentloop.store._config import (
        ENV_CEILING as ENV_CEILING,
        ENV_HEARTBEAT as ENV_HEARTBEAT,
        ENV_STALE as ENV_STALE,
        ENV_WAIT as ENV_WAIT,
        LockConfig as LockConfig,
    )
    from intentloop.store._controls import PrivateControl as PrivateControl
    from intentloop.store._digests import (
        remember_digest as remember_digest,
        remembered_digest as remembered_digest,
    )
    from intentloop.store._fs import (
        fsync_dir as fsync_dir,
        rename_noreplace as rename_noreplace,
        replace_file as replace_file,
        write_all as write_all,
    )
    from intentloop.store._index import INDEX_DIR_RE as INDEX_DIR_RE
    from intentloop.store._injected import (
        forget_injection as forget_injection,
        inject_once as inject_once,
        note_injection as note_injection,
    )
    from intentloop.store._ledger import LockedLedger as LockedLedger
    from intentloop.store._lines import LineEvents as LineEvents
    from intentloop.store._migrate import (
        CURRENT_SCHEMA_VERSION as CURRENT_SCHEMA_VERSION,
        MIGRATIONS as MIGRATIONS,
        migrate as migrate,
        migrate_v1 as migrate_v1,
    )
    from intentloop.store._paths import (
        DATA_DIR_ENV as DATA_DIR_ENV,
        ROOT_ENV_VARS as ROOT_ENV_VARS,
        DataRoot as DataRoot,
        ProjectPaths as ProjectPaths,
        canonicalize_project_root as canonicalize_project_root,
        locate_data_root as locate_data_root,
        resolve_data_root as resolve_data_root,
        validate_project_id as validate_project_id,
    )
    from intentloop.store._project import ProjectStore as ProjectStore
    from intentloop.store._rewrite import (
        Edit as Edit,
        events_holding as events_holding,
        stream_events as stream_events,
        task_events as task_events,
        task_events_holding as task_events_holding,
        tasks_holding as tasks_holding,
    )
    from intentloop.store._roots import ProjectRoot as ProjectRoot, locate_project as locate_project
    from intentloop.store._scan import Scan as Scan, scan_file as scan_file
    from intentloop.store._signing import (
        HEAD_SIG_NAME as HEAD_SIG_NAME,
        SIGNATURE_STATUSES as SIGNATURE_STATUSES,
        SignatureCheck as SignatureCheck,
        chain_signature_status as chain_signature_status,
        check_chain as check_chain,
        export_signature_status as export_signature_status,
        head_signature_status as head_signature_status,
        read_head_signature as read_head_signature,
        sign_export as sign_export,
        signed_positions as signed_positions,
    )
    from intentloop.store._summary import TaskSummary as TaskSummary
    from intentloop.store._task_queries import TaskListing as TaskListing
    from intentloop.store._verify import (
        MAX_LINE_BYTES as MAX_LINE_BYTES,
        Damage as Damage,
        Verification as Verification,
        verify_ledger_bytes as verify_ledger_bytes,
    )
    from intentloop.store._view import LedgerView as LedgerView
    from intentloop.store._vouch import read_check as read_check, require_vouched as require_vouched
else:  # the same names, each loaded from its submodule on first use (PEP 562)
    __getattr__, __dir__, __all__ = lazy_face(
        __name__,
        {
            "_scan": ["Scan", "scan_file"],
            "_task_queries": ["TaskListing"],
            "_summary": ["TaskSummary"],
            "_rewrite": [
                "events_holding",
                "Edit",
                "stream_events",
                "task_events",
                "task_events_holding",
                "tasks_holding",
            ],
            "_checkpoint": ["CHECKPOINT_NAME"],
            "_config": ["ENV_CEILING", "ENV_HEARTBEAT", "ENV_STALE", "ENV_WAIT", "LockConfig"],
            "_controls": ["PrivateControl"],
            "_digests": ["remember_digest", "remembered_digest"],
            "_fs": ["fsync_dir", "rename_noreplace", "replace_file", "write_all"],
            "_index": ["INDEX_DIR_RE"],
            "_injected": ["forget_injection", "inject_once", "note_injection"],
            "_ledger": ["LockedLedger"],
            "_lines": ["LineEvents"],
            "_migrate": ["CURRENT_SCHEMA_VERSION", "MIGRATIONS", "migrate", "migrate_v1"],
            "_paths": [
                "DATA_DIR_ENV",
                "ROOT_ENV_VARS",
                "DataRoot",
                "ProjectPaths",
                "canonicalize_project_root",
                "locate_data_root",
                "resolve_data_root",
                "validate_project_id",
            ],
            "_project": ["ProjectStore"],
            "_roots": ["ProjectRoot", "locate_project"],
            "_signing": [
                "chain_signature_status",
                "check_chain",
                "SignatureCheck",
                "signed_positions",
                "HEAD_SIG_NAME",
                "SIGNATURE_STATUSES",
                "export_signature_status",
                "head_signature_status",
                "read_head_signature",
                "sign_export",
            ],
            "_verify": ["MAX_LINE_BYTES", "Damage", "Verification", "verify_ledger_bytes"],
            "_view": ["LedgerView"],
            "_vouch": ["read_check", "require_vouched"],
        },
    )
