"""Count the whole-ledger reads of this process (``ProjectStore.read``): what the tests of the index's fast paths
forbid, and their controls expect."""

from __future__ import annotations

from typing import Any

import pytest

from intentloop.store import ProjectStore


def count_whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at every ``ProjectStore.read`` from now on (the test's monkeypatch undoes it)."""
    calls: list[int] = []
    real = ProjectStore.read

    def read(self: ProjectStore) -> Any:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(ProjectStore, "read", read)
    return calls
