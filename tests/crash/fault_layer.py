"""An in-process fault layer over the ``os`` calls of the write path (a helper module, not a test module).

``FaultLayer(fail_at=i, errno=e)`` counts every wrapped call made while it is installed and makes call ``i`` fail
with ``OSError(e)`` (``kill=True``: the process kills itself with SIGKILL at that call instead, before it runs).
With ``fail_at=None`` it only counts, so a test can enumerate every call from lock acquisition to release.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

WRAPPED = (
    "open",
    "close",
    "read",
    "pread",
    "write",
    "fsync",
    "ftruncate",
    "fstat",
    "lstat",
    "stat",
    "replace",
    "rename",
    "mkdir",
    "rmdir",
    "unlink",
    "listdir",
    "fchmod",
    "chmod",
    "link",
    "utime",
)


class FaultLayer:
    def __init__(self, fail_at: int | None = None, errno: int = 5, *, kill: bool = False) -> None:
        self.fail_at = fail_at
        self.errno = errno
        self.kill = kill
        self.calls: list[str] = []
        self._real: dict[str, Callable[..., Any]] = {}

    def install(self) -> None:
        for name in WRAPPED:
            real = getattr(os, name)
            self._real[name] = real
            setattr(os, name, self._wrap(name, real))

    def uninstall(self) -> None:
        for name, real in self._real.items():
            setattr(os, name, real)
        self._real.clear()

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            index = len(self.calls)
            self.calls.append(name)
            if index == self.fail_at:
                if self.kill:
                    os.kill(os.getpid(), signal.SIGKILL)
                raise OSError(self.errno, os.strerror(self.errno))
            return real(*args, **kwargs)

        return call

    def __enter__(self) -> FaultLayer:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()
