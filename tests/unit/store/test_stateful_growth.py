"""A stateful property test of the growing ledger: appends (also two at once), crashes (a torn tail, an append whose
checkpoint never came), a deleted or garbled checkpoint, a stale or damaged task index, deletion and reopening. After
every step the chain verifies, the projection equals a plain in-memory model, and the task index — whenever the
checkpoint lets a reader use it — answers exactly the model's events of each task."""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from pathlib import Path

import msgspec
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from intentloop.model import EventDraft, event_line, project_id_for, rechain, seal
from intentloop.store import CHECKPOINT_NAME, INDEX_DIR_RE, LockConfig, ProjectStore, _project, verify_ledger_bytes

PID = project_id_for("/stateful/growth")
TASKS = [str(uuid.UUID(int=i + 1)) for i in range(3)]
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=20)


class GrowingLedger(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="growth-"))
        self.store = ProjectStore(self.root, PID, config=CONFIG)
        self.model: list[tuple[str, str]] = []  # (task, request id) in ledger order
        self.counter = 0
        self.torn = False

    def teardown(self) -> None:
        _project._cache.drop(str(self.store.ledger_path))
        shutil.rmtree(self.root, ignore_errors=True)

    def _draft(self, task: str) -> EventDraft:
        self.counter += 1
        return EventDraft(
            event_type="claim_added", task_id=task, actor="user", request_id=f"r-{self.counter}", payload={"n": 1}
        )

    def _commit(self, store: ProjectStore, drafts: list[EventDraft]) -> None:
        with store.locked() as ledger:
            ledger.append(drafts)

    @rule(task=st.sampled_from(TASKS), count=st.integers(1, 3))
    def append(self, task: str, count: int) -> None:
        drafts = [self._draft(task) for _ in range(count)]
        self._commit(self.store, drafts)
        self.model += [(d.task_id, d.request_id) for d in drafts]
        self.torn = False

    @rule(first=st.sampled_from(TASKS), second=st.sampled_from(TASKS))
    def concurrent_append(self, first: str, second: str) -> None:
        drafts = [self._draft(first), self._draft(second)]
        other = ProjectStore(self.root, PID, config=CONFIG)
        threads = [
            threading.Thread(target=self._commit, args=(s, [d]))
            for s, d in ((self.store, drafts[0]), (other, drafts[1]))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        ids = [e.request_id for e in self.store.read().events[-2:]]  # both commits went in (a torn tail repaired)
        order = {d.request_id: d for d in drafts}
        assert sorted(ids) == sorted(order)
        self.model += [(order[r].task_id, r) for r in ids]
        self.torn = False

    @rule(cut=st.integers(1, 60))
    def crash_mid_append(self, cut: int) -> None:
        """A writer killed inside its write: part of a line at the end."""
        if self.torn or not self.store.ledger_path.exists():
            return
        line = event_line(seal(self._draft(TASKS[0]), project_id=PID, prev_hash=None))
        with open(self.store.ledger_path, "ab") as handle:
            handle.write(line[: min(cut, len(line) - 2)])
        self.torn = True

    @rule(task=st.sampled_from(TASKS))
    def crash_before_checkpoint(self, task: str) -> None:
        """A whole, chained append whose writer died before updating the checkpoint and the index."""
        if self.torn or not self.model:
            return
        last = self.store.ledger_path.read_bytes().splitlines()[-1]
        event = seal(self._draft(task), project_id=PID, prev_hash=msgspec.json.decode(last)["event_hash"])
        with open(self.store.ledger_path, "ab") as handle:
            handle.write(event_line(event))
        self.model.append((task, event.request_id))

    @rule(garbage=st.sampled_from([None, b"", b"{", b'{"version":1}', b"\x00" * 64]))
    def damage_checkpoint(self, garbage: bytes | None) -> None:
        path = self.store.project_dir / CHECKPOINT_NAME
        if not path.exists():
            return
        if garbage is None:
            path.unlink()
        else:
            path.write_bytes(garbage)

    @rule(mode=st.sampled_from(["remove", "empty", "cut-short", "garble", "bindings-empty"]))
    def damage_index(self, mode: str) -> None:
        if not self.store.project_dir.exists():
            return
        for directory in self.store.project_dir.iterdir():
            if not INDEX_DIR_RE.match(directory.name):
                continue
            for file in directory.iterdir():
                if mode == "remove":
                    file.unlink()
                elif mode == "empty":
                    file.write_bytes(b"")
                elif mode == "cut-short":
                    file.write_bytes(file.read_bytes()[:-12])
                elif mode == "bindings-empty":
                    if file.name == "bindings":
                        file.write_bytes(b"")
                else:
                    file.write_bytes(b"\xff" * 12 + file.read_bytes()[12:])

    @rule(task=st.sampled_from(TASKS))
    def delete_task(self, task: str) -> None:
        if not self.model:
            return
        with self.store.locked() as ledger:
            kept = [e for e in ledger.view.events if e.task_id != task]
            ledger.rewrite(rechain(kept, project_id=PID))
        self.model = [(t, r) for t, r in self.model if t != task]
        self.torn = False

    @rule()
    def reopen(self) -> None:
        _project._cache.drop(str(self.store.ledger_path))
        self.store = ProjectStore(self.root, PID, config=CONFIG)

    @invariant()
    def chain_and_projection_match_the_model(self) -> None:
        if not self.store.ledger_path.exists():
            assert self.model == []
            return
        verification = verify_ledger_bytes(self.store.ledger_path.read_bytes(), project_id=PID)
        if self.torn:
            assert verification.error is not None and verification.error.code == "CORRUPT_TRAILING_EVENT"
        else:
            assert verification.ok
            assert [(e.task_id, e.request_id) for e in self.store.read().events] == self.model
        assert [(e.task_id, e.request_id) for e in verification.events] == self.model

    @invariant()
    def the_index_answers_the_model_or_nothing(self) -> None:
        indexed = self.store.indexed()
        if indexed is None:
            return
        try:
            for task in TASKS:
                events = indexed.task_events(task)
                expected = [r for t, r in self.model if t == task]
                if events is not None:
                    assert [e.request_id for e in events] == expected
        finally:
            indexed.close()


GrowingLedger.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)
test_growing_ledger = GrowingLedger.TestCase
