"""hooks/_run.py: how the hook process imports msgspec."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_FUTURE_MSGSPEC = """
import sys
sys.path.insert(0, sys.argv[1])
from intentloop.hooks._run import import_msgspec_alone
import_msgspec_alone()
import msgspec
print(msgspec.NEEDS_TYPING_EXTENSIONS, "typing_extensions" in sys.modules)
"""


def test_a_msgspec_that_needs_typing_extensions_is_still_imported(tmp_path: Path) -> None:
    # A stand-in for a future msgspec that imports typing_extensions: blocking it must cost start-up time, never the
    # hook (before the fallback, import_msgspec_alone raised ImportError and every hook answered fail-open).
    package = tmp_path / "msgspec"
    package.mkdir()
    (package / "__init__.py").write_text("import typing_extensions\nNEEDS_TYPING_EXTENSIONS = True\n")
    done = subprocess.run([sys.executable, "-c", _FUTURE_MSGSPEC, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
    # control: the real msgspec still loads without typing_extensions
    real = "import sys; from intentloop.hooks._run import import_msgspec_alone; import_msgspec_alone(); "
    real += "print('msgspec' in sys.modules, 'typing_extensions' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", real], capture_output=True, text=True).stdout.split() == [
        "True",
        "False",
    ]


def test_the_process_end_flushes_python_buffers_and_keeps_the_status() -> None:
    """The hook ends with os._exit once it has answered: what Python still buffers must not be lost with it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a host starts us
    code = "import sys; from intentloop.hooks._run import _end_process; sys.stdout.write('buffered'); _end_process(3)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout) == (3, "buffered")
    # control: os._exit alone loses the buffered text (what _end_process guards against)
    raw = "import sys, os; sys.stdout.write('buffered'); os._exit(3)"
    lost = subprocess.run([sys.executable, "-c", raw], capture_output=True, text=True, env=env)
    assert (lost.returncode, lost.stdout) == (3, "")
