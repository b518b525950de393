"""The verification report: every field comes from the store's verifier over the bytes on disk."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.model import EventDraft, canonical_bytes, event_line, new_uuid, seal
from intentloop.recovery import check_ledger, verify_project


def test_intact_ledger_reports_every_event_head_and_bytes(project) -> None:
    lines = project.write_lines(4)
    report = verify_project(project.store)
    assert report.intact and report.status == "intact"
    assert report.events == 4
    assert report.byte_length == report.verified_bytes == len(b"".join(lines))
    assert report.damaged_bytes == 0 and report.damaged_sha256 is None
    assert report.first_bad_line is None and report.reason is None and report.code is None
    assert report.head_hash is not None and report.head_hash in lines[-1].decode()
    assert report.ledger_schema_version == 1
    assert not report.torn_tail


def test_torn_tail_names_the_line_and_counts_the_partial_bytes(project) -> None:
    lines = project.write_lines(3)
    torn = lines[-1][:40]
    project.write(b"".join(lines) + torn)
    report = verify_project(project.store)
    assert not report.intact and report.status == "torn_tail" and report.torn_tail
    assert report.code == "CORRUPT_TRAILING_EVENT"
    assert report.first_bad_line == 4
    assert report.events == 3
    assert report.damaged_bytes == len(torn)
    assert report.damaged_sha256 == hashlib.sha256(torn).hexdigest()


def test_tampered_middle_line_is_the_first_bad_line_with_its_reason(project) -> None:
    lines = project.write_lines(5)
    lines[2] = project.tamper(lines[2])
    project.write(b"".join(lines))
    check = check_ledger(project.store)
    report = check.report
    assert report.status == "corrupt" and report.code == "CORRUPT_LEDGER"
    assert report.first_bad_line == 3
    assert report.reason is not None and "event_hash" in report.reason
    assert report.events == 2
    assert check.prefix == b"".join(lines[:2])
    assert check.suffix == b"".join(lines[2:])
    assert not report.torn_tail


def test_middle_damage_and_torn_tail_reports_the_first_problem_and_the_tail(project) -> None:
    lines = project.write_lines(4)
    project.write(lines[0] + b"not json\n" + b"".join(lines[2:]) + b'{"actor"')
    report = verify_project(project.store)
    assert report.first_bad_line == 2 and report.code == "CORRUPT_LEDGER"
    assert report.reason == "invalid JSON"
    assert report.torn_tail


def test_future_schema_is_reported_as_such_not_as_damage_of_unknown_kind(project) -> None:
    lines = project.write_lines(2)
    future = canonical_bytes({"schema_version": 2, "anything": "from a newer intentloop"}) + b"\n"
    project.write(b"".join(lines) + future)
    report = verify_project(project.store)
    assert report.status == "future_schema" and report.code == "FUTURE_SCHEMA"
    assert report.first_bad_line == 3 and report.events == 2


def test_missing_project_is_an_empty_intact_report_and_creates_nothing(project) -> None:
    report = verify_project(project.store)
    assert report.intact and report.events == 0 and not report.project_exists and not report.ledger_exists
    assert not project.data_root.exists()


def test_project_without_ledger_exists_but_has_no_events(project) -> None:
    project.dir.mkdir(parents=True)
    report = verify_project(project.store)
    assert report.project_exists and not report.ledger_exists and report.intact
    assert not project.ledger.exists()


def test_symlinked_ledger_is_refused_and_a_real_one_is_read(project, tmp_path: Path) -> None:
    lines = project.write_lines(2)
    assert verify_project(project.store).events == 2  # positive control
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(b"".join(lines))
    project.ledger.unlink()
    project.ledger.symlink_to(elsewhere)
    with pytest.raises(StorageError) as caught:
        verify_project(project.store)
    assert caught.value.code == "PATH_ESCAPE"


def test_hard_linked_ledger_is_refused(project, tmp_path: Path) -> None:
    project.write_lines(2)
    os.link(project.ledger, tmp_path / "second-name")
    with pytest.raises(StorageError) as caught:
        verify_project(project.store)
    assert caught.value.code == "UNSAFE_DATA_FILE"


def test_quarantine_records_are_counted(project) -> None:
    project.write_lines(1)
    assert verify_project(project.store).quarantine_records == 0
    quarantine = project.dir / "quarantine"
    quarantine.mkdir(mode=0o700)
    (quarantine / "partial-1-x.json").write_text("{}")
    (quarantine / "damaged-2-y.bytes").write_text("raw")
    assert verify_project(project.store).quarantine_records == 1


def test_report_dict_has_every_documented_field(project) -> None:
    project.write_lines(1)
    fields = verify_project(project.store).to_dict()
    assert set(fields) == {
        "project_id",
        "ledger_path",
        "project_exists",
        "ledger_exists",
        "status",
        "intact",
        "events",
        "head_hash",
        "ledger_schema_version",
        "byte_length",
        "verified_bytes",
        "damaged_bytes",
        "damaged_sha256",
        "first_bad_line",
        "reason",
        "code",
        "torn_tail",
        "quarantine_records",
        "signature",
        "signed_events",
        "signature_problem",
        "signed_here",
        "adopted_events",
        "adopted",
    }


def _signed(project, count: int) -> list[bytes]:
    """``count`` events committed through the store (which signs its head), as stored."""
    with project.store.locked() as ledger:
        task = new_uuid()
        ledger.append(
            [
                EventDraft(event_type="task_started", task_id=task, actor="user", request_id="s-0", payload={"n": 0}),
                *(
                    EventDraft(
                        event_type="claim_added", task_id=task, actor="user", request_id=f"s-{i}", payload={"n": i}
                    )
                    for i in range(1, count)
                ),
            ]
        )
    return project.ledger.read_bytes().splitlines(keepends=True)


DAMAGES = ["intact", "tampered", "torn", "future", "signed", "signed then cut", "signed then extended by hand"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_the_streamed_report_is_the_whole_reads(project, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from intentloop.store import _lines

    monkeypatch.setattr(_lines, "CHUNK_BYTES", 700)  # a few lines per chunk: the chain and the signed head cross them
    if damage.startswith("signed"):
        lines = _signed(project, 30)
        if damage == "signed then cut":
            project.write(b"".join(lines[:-3]))
        elif damage == "signed then extended by hand":
            head = json.loads(lines[-1])["event_hash"]
            task = json.loads(lines[-1])["task_id"]
            draft = EventDraft(event_type="claim_added", task_id=task, actor="user", request_id="hand", payload={})
            project.write(b"".join(lines) + event_line(seal(draft, project_id=project.project_id, prev_hash=head)))
    else:
        lines = project.write_lines(30)
        if damage == "tampered":
            project.write(b"".join(lines[:17]) + project.tamper(lines[17]) + b"".join(lines[18:]))
        elif damage == "torn":
            project.write(b"".join(lines) + lines[3][:40])
        elif damage == "future":
            future = canonical_bytes({"schema_version": 2, "anything": "newer"}) + b"\n"
            project.write(b"".join(lines[:25]) + future + b"".join(lines[25:]))
    streamed = verify_project(project.store).to_dict()
    assert streamed == check_ledger(project.store).report.to_dict()
    expected_signature = {"signed": "valid", "signed then cut": "invalid"}.get(damage, "unsigned")
    assert streamed["signature"] == expected_signature  # each case is the one it names
    assert streamed["intact"] == (damage not in ("tampered", "torn", "future"))
