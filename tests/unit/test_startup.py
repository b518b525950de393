"""``intentloop._startup``: what process entries use to start fast."""

from __future__ import annotations

import sys
from importlib import metadata

from intentloop._startup import installed_version


def test_installed_version_reads_the_dist_info_folders_as_the_metadata_does() -> None:
    for distribution in ("mcp", "msgspec", "trio", "typer", "kingfisher-secret-scanner", "pytest-trio"):
        assert installed_version(distribution) == metadata.version(distribution)
    assert installed_version("no-such-distribution-here") is None


def test_installed_version_imports_no_metadata_machinery_for_an_installed_distribution() -> None:
    import subprocess

    code = (
        "import sys; from intentloop._startup import installed_version; v = installed_version('msgspec'); "
        "print(v, 'importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [metadata.version("msgspec"), "False"]
