"""A forgotten statement stays forgotten: an import of an old export leaves it out, on the author's installation
and on every reader that saw the erase travel (real CLI and tool processes, a bare repository).

The refusal is keyed by the statement (a keyed, content-free digest), so the graph's other claims import as before,
references to the left-out claim are dropped with it, and saying the statement again is a new claim that stands.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from _support.share_world import Machine, explicit, paired


def _statements(snapshot: dict[str, Any]) -> set[str]:
    return {claim["statement"] for claim in snapshot["active_claims"]}


def _import(machine: Machine, graph: dict[str, Any]) -> dict[str, Any]:
    task = machine.start("restored")
    [answer] = machine.tools(
        ("intent_import", {"task_id": task, "request_id": f"imp-{uuid.uuid4().hex[:8]}", "graph": graph})
    )
    assert "error" not in answer, answer
    result: dict[str, Any] = answer
    return result


def test_an_old_export_does_not_bring_a_forgotten_claim_back_on_the_author_or_a_reader(tmp_path: Path) -> None:
    _remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    task = a.start()
    marker = uuid.uuid4().hex[:10]
    kept, gone = a.tools(explicit(task, f"Kept rule {marker}"), explicit(task, f"Forgotten rule {marker}"))
    [graph] = a.tools(("intent_export", {"task_id": task}))
    old = next(c for c in graph["claims"] if c["claim_id"] == gone["claim_id"])
    other = next(c for c in graph["claims"] if c["claim_id"] == kept["claim_id"])
    other["related_claim_ids"] = [old["claim_id"]]  # a reference to the forgotten claim goes with it
    a.cli("sync")
    b.cli("sync")
    before = _import(b, graph)  # the positive control: before the erase, B imports both
    assert _statements(before) >= {f"Kept rule {marker}", f"Forgotten rule {marker}"}
    assert "erased_left_out" not in before

    a.cli("forget", "claim", gone["claim_id"], "--yes")
    a.cli("sync")
    b.cli("sync")
    for machine in (a, b):
        restored = _import(machine, graph)
        assert restored["erased_left_out"] == [old["claim_id"]]
        assert f"Forgotten rule {marker}" not in _statements(restored)
        [again] = [c for c in restored["active_claims"] if c["statement"] == f"Kept rule {marker}"]
        assert again["related_claim_ids"] == []
    invalidating = json.loads(json.dumps(graph)) | {"invalidated_claim_ids": [old["claim_id"]]}
    assert _import(b, invalidating)["erased_left_out"] == [old["claim_id"]]  # its invalidation goes with it too

    reworded = json.loads(json.dumps(graph))  # the refusal is of the statement, not of the graph or the claim id
    next(c for c in reworded["claims"] if c["claim_id"] == old["claim_id"])["statement"] += " (restated)"
    assert f"Forgotten rule {marker} (restated)" in _statements(_import(b, reworded))

    # Saying it again is a new claim of the user's, recorded and published as any other.
    fresh = a.start("again")
    [said] = a.tools(explicit(fresh, f"Forgotten rule {marker}"))
    assert "error" not in said and said["statement"] == f"Forgotten rule {marker}"

    digests = b.root / "share" / "projects" / shared / "erased.json"
    raw = digests.read_bytes()
    assert marker.encode() not in raw and len(json.loads(raw)["digests"]) == 1


def test_a_forgotten_task_leaves_its_statements_out_of_a_later_import(tmp_path: Path) -> None:
    _remote, (a,), _shared = paired(tmp_path, ["a"])
    task = a.start()
    marker = uuid.uuid4().hex[:10]
    a.tools(explicit(task, f"First rule {marker}"), explicit(task, f"Second rule {marker}"))
    [graph] = a.tools(("intent_export", {"task_id": task}))
    control = _import(a, graph)  # the positive control: nothing forgotten yet
    assert {f"First rule {marker}", f"Second rule {marker}"} <= _statements(control)
    a.cli("forget", "task", task, "--yes")
    restored = _import(a, graph)
    assert sorted(restored["erased_left_out"]) == sorted(c["claim_id"] for c in graph["claims"])
    assert not {f"First rule {marker}", f"Second rule {marker}"} & _statements(restored)
    tombstones = (a.root / "projects").rglob("deleted-requests.json")
    assert all(marker.encode() not in path.read_bytes() for path in tombstones)
