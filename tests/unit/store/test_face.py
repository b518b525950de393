"""The public face of intentloop.store: its names, and that it stays free of trio (the hook path imports it)."""

from __future__ import annotations

import subprocess
import sys

import intentloop.store


def test_public_names_resolve():
    for name in intentloop.store.__all__:
        assert getattr(intentloop.store, name) is not None


def test_store_face_imports_neither_trio_nor_heavy_packages():
    code = (
        "import sys, intentloop.store;"
        "bad = sorted(m for m in ('trio', 'mcp', 'typer', 'rich', 'pydantic') if m in sys.modules);"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
    control = subprocess.run(
        [sys.executable, "-c", "import sys, intentloop.store.aio; print('trio' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert control.strip() == "True"
