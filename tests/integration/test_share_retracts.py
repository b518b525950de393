"""Retracts (docs/SYNC.md, "Teams: quotas and erases"): who may take another stream's item out of the combined view.

Three data roots, one bare repository: Alice's two machines (``a1``, ``a2``, one principal) and Bob's. Bob's retract of
Alice's claim is refused and reported on every reader, and her claim stays; Alice's retract from her second machine
of a claim her first machine published takes it out everywhere; a reader whose checkout's allowed_signers makes Bob a
project admin honours Bob's retract. Everything runs through the CLI, the service and real git.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from _support.share_world import Machine, explicit, paired


def _peers(machine: Machine) -> dict[str, dict[str, Any]]:
    task = machine.start()
    answer = machine.tools(("intent_get_snapshot", {"task_id": task, "include_peers": True}))[0]
    return {c["statement"]: c for c in answer["peer_claims"]}


def _session_context(machine: Machine) -> str:
    """What SessionStart injects in a new session linked to a new task of ``machine``."""
    session = "sess-" + uuid.uuid4().hex
    task = str(uuid.uuid4())
    machine.tools(("intent_start_task", {"task_id": task, "request_id": "s", "mode": "on", "host_session_id": session}))
    return str(machine.hook(session).get("hookSpecificOutput", {}).get("additionalContext", ""))


def _make_admin(machine: Machine, keys: dict[str, Any]) -> None:
    """List ``keys``' line in ``machine``'s checkout's ``.intentloop/allowed_signers`` as a project admin's (the
    working tree as it is counts, docs/SYNC.md "Teams: who may write")."""
    line = str(keys["allowed_signers"]).replace('namespaces="intentloop"', 'namespaces="intentloop,intentloop-admin"')
    (machine.clone / ".intentloop").mkdir(exist_ok=True)
    (machine.clone / ".intentloop" / "allowed_signers").write_text(line + "\n")


def test_only_the_authors_principal_or_an_admin_takes_a_claim_out(tmp_path: Path) -> None:
    _remote, (a1, a2, bob), _shared = paired(
        tmp_path, ["a1", "a2", "b"], ["alice@example.org", "alice@example.org", "bob@example.org"]
    )
    task = a1.start()
    a1.tools(explicit(task, "Alice: never force-push main"), explicit(task, "Alice: tabs, not spaces"))
    for machine in (a1, a2, bob):
        machine.cli("sync")
    a1_key = a1.cli("share", "keys")["key_id"]
    bob_keys = bob.cli("share", "keys")
    peers = _peers(bob)
    guarded = peers["Alice: never force-push main"]["claim_id"]
    withdrawn = peers["Alice: tabs, not spaces"]["claim_id"]

    # Bob retracts Alice's claim: recorded in Bob's stream, refused and reported by every reader
    unconfirmed = bob.cli("share", "retract", guarded, check=False)
    assert (unconfirmed["error"]["code"], unconfirmed["exit_code"]) == ("CONFIRMATION_REQUIRED", 2)
    missing = bob.cli("share", "retract", "0000dead", "--yes", check=False)
    assert (missing["error"]["code"], missing["exit_code"]) == ("CLAIM_NOT_FOUND", 5)
    short = bob.cli("share", "retract", guarded[:3], "--yes", check=False)
    assert short["error"]["code"] == "INVALID_ID"
    done = bob.cli("share", "retract", guarded[:8], "--yes")
    assert (done["claim_id"], done["added"], done["targets"]) == (
        guarded,
        1,
        [{"writer": a1_key, "principal": "alice@example.org"}],
    )
    assert bob.cli("share", "retract", guarded, "--yes")["added"] == 0  # once per stream
    mine = bob.cli("sync")
    assert mine["own"]["pushed"] is True
    assert [(r["principal"], r["item"], r["target_principal"]) for r in mine["retract_refused"]] == [
        ("bob@example.org", f"claim:{guarded}", "alice@example.org")
    ]
    assert "Alice: never force-push main" in _peers(bob)
    counted = "explicit claims from teammates (alice@example.org)"
    assert f"- [2 {counted}" in _session_context(bob)  # a refused retract takes nothing out of the count
    seen = a2.cli("sync")
    refused = seen["retract_refused"]
    assert [(r["writer"], r["principal"], r["item"], r["target_writer"]) for r in refused] == [
        (bob_keys["key_id"], "bob@example.org", f"claim:{guarded}", a1_key)
    ]
    assert seen["retracted"] == []
    assert refused[0]["status"] == "retract_refused" and refused[0]["problem_seq"] >= 1
    assert any(p["status"] == "retract_refused" for p in a2.cli("share", "preview")["problems"])
    assert {"Alice: never force-push main", "Alice: tabs, not spaces"} <= set(_peers(a2))

    # Alice withdraws her own claim from her second machine: gone for every reader (the positive control)
    assert a2.cli("share", "retract", withdrawn, "--yes")["added"] == 1
    own = a2.cli("sync")
    assert [(r["writer"], r["item"]) for r in own["retracted"]] == [(a1_key, f"claim:{withdrawn}")]
    assert "Alice: tabs, not spaces" not in _peers(a2)
    context = _session_context(a2)  # her own words on her second machine: the hooks no longer inject it either
    assert "Alice: never force-push main" in context and "Alice: tabs, not spaces" not in context
    gone = bob.cli("sync")
    assert [(r["writer"], r["item"], r["principal"]) for r in gone["retracted"]] == [
        (a1_key, f"claim:{withdrawn}", "alice@example.org")
    ]
    assert set(_peers(bob)) == {"Alice: never force-push main"}
    assert "- [1 explicit claim from teammates (alice@example.org)" in _session_context(bob)  # nor from the count
    assert bob.cli("share", "retract", withdrawn, "--yes", check=False)["error"]["code"] == "CLAIM_NOT_FOUND"

    # a reader that trusts Bob's key as an admin's honours Bob's retract; the others still refuse it
    _make_admin(a2, bob_keys)
    admin = a2.cli("sync")
    assert (a1_key, f"claim:{guarded}") in {(r["writer"], r["item"]) for r in admin["retracted"]}
    assert admin["retract_refused"] == []
    assert "Alice: never force-push main" not in _peers(a2)
    assert bob.cli("sync")["retract_refused"] != []
    assert "Alice: never force-push main" in _peers(bob)
