"""Regular expressions compiled on first use, for the modules a hook process imports.

Why: compiling is most of what importing the redaction rules costs, and a hook process compiles every pattern anew
(``re``'s cache does not outlive the process). Measured on the 2-core development machine, `python -X importtime`:
``intentloop.model.redaction`` with ``_entropy`` and ``_jsjson`` took 7–10 ms to import with every pattern compiled
at import; the credential and vendor-key patterns alone take ~1.3 ms each to compile. A :class:`LazyPattern` costs
nothing until it is used, and then exactly what ``re.compile`` costs, once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator


class LazyPattern:
    """``re.compile(source, flags)``, done the first time the pattern is used; the same methods as a pattern."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.source, self.flags)
        return compiled

    @property
    def pattern(self) -> str:
        return self.source

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def findall(self, text: str) -> list[str]:
        return self.compiled.findall(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def split(self, text: str) -> list[str]:
        return self.compiled.split(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(repl, text)


__all__ = ["LazyPattern"]
