"""Recovery for damaged ledgers: a structured verification report, export of the verified prefix, and quarantine of
a damaged suffix under the ledger lock. Used by the admin CLI; it prints nothing.

Verification is the store's (``intentloop.store.verify_ledger_bytes``); recovery only reads the bytes, builds reports
and acts on exactly the prefix the store verified.

The face is lazy, as the other packages' are (``intentloop._lazy``): a command that needs one name (``show`` asks for
``list_project_ids``) does not load every recovery module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop._lazy import lazy_face

if TYPE_CHECKING:  # what mypy checks: `X as X` re-exports each name, so a misspelt import fails it
    from intentloop.recovery._files import (
        refuse_inside_data_root as refuse_inside_data_root,
        write_private_file as write_private_file,
    )
    from intentloop.recovery.export import (
        ExportResult as ExportResult,
        export_verified_prefix as export_verified_prefix,
    )
    from intentloop.recovery.inventory import (
        ProjectSummary as ProjectSummary,
        list_project_ids as list_project_ids,
        summarize_all as summarize_all,
        summarize_project as summarize_project,
    )
    from intentloop.recovery.quarantine import (
        RECORD_PREFIX as RECORD_PREFIX,
        QuarantineResult as QuarantineResult,
        quarantine_damaged_suffix as quarantine_damaged_suffix,
        refusal as refusal,
    )
    from intentloop.recovery.relink import (
        RelinkResult as RelinkResult,
        moved_to as moved_to,
        relink_project as relink_project,
        retire_after_merge as retire_after_merge,
    )
    from intentloop.recovery.report import (
        LedgerCheck as LedgerCheck,
        VerifyReport as VerifyReport,
        check_bytes as check_bytes,
        check_ledger as check_ledger,
        verify_project as verify_project,
    )
    from intentloop.recovery.salvaging import (
        SalvageResult as SalvageResult,
        SuffixContents as SuffixContents,
        count_suffix as count_suffix,
        salvage as salvage,
    )
    from intentloop.recovery.signatures import (
        RotationPlan as RotationPlan,
        accept_chain as accept_chain,
        plan_rotation as plan_rotation,
        rotate_key as rotate_key,
    )
else:  # the same names, each loaded from its submodule on first use (PEP 562)
    __getattr__, __dir__, __all__ = lazy_face(
        __name__,
        {
            "_files": ["refuse_inside_data_root", "write_private_file"],
            "export": ["ExportResult", "export_verified_prefix"],
            "inventory": ["ProjectSummary", "list_project_ids", "summarize_all", "summarize_project"],
            "quarantine": ["RECORD_PREFIX", "QuarantineResult", "quarantine_damaged_suffix", "refusal"],
            "relink": ["RelinkResult", "moved_to", "relink_project", "retire_after_merge"],
            "report": ["LedgerCheck", "VerifyReport", "check_bytes", "check_ledger", "verify_project"],
            "salvaging": ["SalvageResult", "SuffixContents", "count_suffix", "salvage"],
            "signatures": ["RotationPlan", "accept_chain", "plan_rotation", "rotate_key"],
        },
    )
