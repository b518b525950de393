"""Recovery for damaged ledgers: a structured verification report, export of the verified prefix, and quarantine of
a damaged suffix under the ledger lock. Used by the admin CLI; it prints nothing.

Verification is the store's (``intentloop.store.verify_ledger_bytes``); recovery only reads the bytes, builds reports
and acts on exactly the prefix the store verified.
"""

from intentloop.recovery._files import refuse_inside_data_root, write_private_file
from intentloop.recovery.export import ExportResult, export_verified_prefix
from intentloop.recovery.inventory import (
    ProjectSummary,
    list_project_ids,
    summarize_all,
    summarize_project,
)
from intentloop.recovery.quarantine import RECORD_PREFIX, QuarantineResult, quarantine_damaged_suffix, refusal
from intentloop.recovery.relink import RelinkResult, moved_to, relink_project, retire_after_merge
from intentloop.recovery.report import LedgerCheck, VerifyReport, check_bytes, check_ledger, verify_project
from intentloop.recovery.salvage import SalvageResult, SuffixContents, count_suffix, salvage
from intentloop.recovery.signatures import RotationPlan, accept_chain, plan_rotation, rotate_key

__all__ = [
    "RECORD_PREFIX",
    "ExportResult",
    "LedgerCheck",
    "ProjectSummary",
    "QuarantineResult",
    "RelinkResult",
    "RotationPlan",
    "SalvageResult",
    "SuffixContents",
    "VerifyReport",
    "accept_chain",
    "check_bytes",
    "check_ledger",
    "count_suffix",
    "export_verified_prefix",
    "list_project_ids",
    "moved_to",
    "plan_rotation",
    "quarantine_damaged_suffix",
    "refusal",
    "refuse_inside_data_root",
    "relink_project",
    "retire_after_merge",
    "rotate_key",
    "salvage",
    "summarize_all",
    "summarize_project",
    "verify_project",
    "write_private_file",
]
