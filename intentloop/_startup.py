"""What a process entry does to start fast; shared by the hook process and ``intentloop serve``.

Standard library only, importable before anything else: this module sits below every layer.
"""

from __future__ import annotations

import sys


def import_msgspec_alone() -> None:
    """Import msgspec without ``typing_extensions`` (~9 ms of a hook's or the server's start-up), so the process loads
    only the standard library and msgspec.

    ``typing_extensions`` is not a msgspec dependency (other packages in the environment pull it in); without it,
    msgspec takes ``get_type_hints``/``Required``/``NotRequired`` from ``typing``, which on Python ≥ 3.11 handles every
    annotation intentloop uses. The module is blocked only while msgspec itself is imported, so a later import of
    ``typing_extensions`` in the same process works as usual; nothing changes when msgspec is already loaded. Should a
    future msgspec need ``typing_extensions`` after all, the blocked import fails and msgspec is imported again the
    ordinary way: the trick can cost those 9 ms, never a hook or a server.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # makes its import raise ImportError
    try:
        import msgspec
    except ImportError:
        for name in [name for name in sys.modules if name == "msgspec" or name.startswith("msgspec.")]:
            del sys.modules[name]
    finally:
        del sys.modules["typing_extensions"]
    import msgspec  # noqa: F401  # a no-op after the fast path; the ordinary import after a refusal


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, from the name of its ``.dist-info`` folder on ``sys.path`` (a listing
    per entry: ``importlib.metadata`` costs ~30 ms of imports, more than ``intentloop status`` does otherwise), else
    from the metadata; ``None`` when it is not installed."""
    import os

    prefix = distribution.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().startswith(prefix) and name.endswith(".dist-info"):
                return name[len(prefix) : -len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


__all__ = ["import_msgspec_alone", "installed_version"]
