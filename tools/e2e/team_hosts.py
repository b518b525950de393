"""A team with the real hosts (docs/SYNC.md, "Tested with the real hosts"): member A's hard constraint, recorded
from Codex, reaches member B's Claude Code in a snapshot with ``include_peers``, labelled with A's principal, and
never in B's hook context.

The set-up of the ``sync`` scenario (``sync_hosts.py``: two HOMEs, two clones of one project repository with its
shared id committed, one bare ``file://`` share remote), with two principals: A's clone has ``user.email``
``alice@example.org``, B's ``bob@example.org``, and the team's members are listed in ``.intentloop/allowed_signers``,
which A commits with both members' lines as ``share keys`` printed them and B pulls (``sync_hosts._allowed_signers``;
no ``share trust``). On A, Codex (installer route) records a
project-scope explicit claim with the facet ``hard_constraint``; ``intentloop sync`` runs on A, then on B, which must
accept A's stream as alice's. On B, Claude Code (installer route) starts a session the model links to a task of B's
own, then in the resumed turn the model calls ``intent_get_snapshot`` with ``include_peers: true`` and answers with
what the result Claude Code sent back says of A's claim (``fake_model.snapshot_finding``).

Checks: that answer (one peer claim, ``origin.principal`` A's, ``own`` false, explicit, ``hard_constraint``, scope
``project``, not among the task's ``active_claims``); the hook answers Claude Code reports in its stream-json output
(``hook_response``; it reports SessionStart's) and every request the model received before the snapshot's result
never hold A's statement, while the resumed turn's SessionStart and prompt hook did inject B's linked task's context
(so the hooks ran, with a linked task, and their context reached the model); B's ledger holds no claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from e2e_common import LINKED_MARK, Report, ledger_events
from fake_model import PEERS_MARK, STATEMENT, FakeModel
from sync_hosts import CLAUDE_PREFIX, claude_linked_then, codex_claim_synced, hook_contexts, session_start_context

HOST = "team/codex-to-claude"
PRINCIPALS = ("alice@example.org", "bob@example.org")
#: The hooks whose context Claude Code puts in the request as ``<event> hook additional context: …``.
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit")


def _finding(requests: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, int]:
    """The scripted model's answer to the snapshot's result (:func:`fake_model.snapshot_finding`) and the index in
    ``requests`` of the request that carried that result; ``(None, -1)`` when the model never gave one."""
    for index, request in enumerate(requests):
        detail = request.get("detail")
        if request.get("decision") == "say" and isinstance(detail, str) and detail.startswith(f"{PEERS_MARK} "):
            found = json.loads(detail.removeprefix(f"{PEERS_MARK} "))
            return (found if isinstance(found, dict) else None), index
    return None, -1


def run_team(report: Report, base: Path, codex: str, claude: str, intentloop: str) -> None:
    (base / "logs").mkdir(parents=True, exist_ok=True)
    with FakeModel(base / "logs" / "model-requests.jsonl") as model:
        members = codex_claim_synced(report, HOST, base, model, codex, intentloop, PRINCIPALS, team_file=True)
        if members is None:
            return
        b_start = len(model.requests())
        prompt = f"{PEERS_MARK} what does the team require?"
        runs, _later = claude_linked_then(
            report, HOST, claude, members, model, prompt, ["intent_start_task", "intent_get_snapshot"]
        )
        ours = [r for r in model.requests()[b_start:] if f"{CLAUDE_PREFIX}intent_start_task" in r.get("tools", [])]
        finding, carrier = _finding(ours)
        alice = members.keys["A"]
        origin = (finding or {}).get("origin") or {}
        report.check(
            HOST,
            "turn 2 on B: the snapshot with include_peers Claude Code sent back to the model holds A's hard "
            f"constraint once, labelled {PRINCIPALS[0]} (A's writer, not own), never among the task's active claims",
            runs[1].rc == 0
            and finding is not None
            and finding.get("peer_claims") == 1
            and finding.get("active_claims") == 0
            and origin.get("principal") == PRINCIPALS[0]
            and origin.get("writer") == alice.get("key_id")
            and origin.get("own") is False
            and finding.get("epistemic_status") == "explicit"
            and "hard_constraint" in (finding.get("facets") or [])
            and finding.get("scope") == "project",
            f"rc={runs[1].rc} the model's finding: {finding}",
        )
        hooks = [pair for ran in runs for pair in hook_contexts(ran.stdout)]
        resumed = session_start_context(runs[1].stdout)
        leaked = [event for event, context in hooks if STATEMENT in context]
        report.check(
            HOST,
            "B's hooks (both runs): no answer carries A's statement, and the resumed SessionStart injected B's "
            "linked task's context",
            runs[0].rc == 0 and resumed.startswith(LINKED_MARK) and not leaked,
            f"hook answers: {[(event, len(context)) for event, context in hooks]}; with A's statement: {leaked}",
        )
        before = ours[:carrier] if carrier > 0 else []  # every request up to the one that called the snapshot
        sent = [n for n, r in enumerate(before) if STATEMENT in r.get("text", "")]
        asked = before[-1].get("text", "") if before else ""
        # SessionStart injects the linked task's context and notes it; the prompt hook then leaves the same text out
        copies = [event for event in HOOK_EVENTS if f"{event} hook additional context: {LINKED_MARK}" in asked]
        report.check(
            HOST,
            "B's model requests before the snapshot's result: none holds A's statement, and the one the model "
            "answered with the snapshot call holds B's linked task's context once, from SessionStart",
            copies == ["SessionStart"] and not sent,
            f"{len(ours)} request(s) with our tools, the snapshot's result in #{carrier}, A's statement in {sent}, "
            f"linked contexts from: {copies}",
        )
        claims_b = [e for e in ledger_events(members.data_b, members.clone_b) if e.get("event_type") == "claim_added"]
        report.check(HOST, "B's ledger holds no claim (A's stays A's)", not claims_b, f"{len(claims_b)} claim(s)")
