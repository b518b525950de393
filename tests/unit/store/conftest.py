"""Fixtures of the store's tests: a live process to own a lock."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process (sleeping two minutes at most) whose pid can own a planted lock; killed afterwards."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()
    process.wait()
