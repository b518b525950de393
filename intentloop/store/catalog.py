"""The maintained rule catalog (``kingfisher-secret-scanner``) as the second layer of redaction, and its rule cache.

On by default (``INTENT_LOOP_CATALOG=off`` turns it off). Why the cache decides who loads it: Kingfisher compiles its
488 rules once and keeps the compiled database in a cache folder (``Rules(cache_dir=…)``); a cold compile takes 6–7.6 s
of CPU, and even a warm load compiles the patterns anew (0.4–0.75 s, ~40 MB), over a hook's and the server's budgets.
So the cache also holds each rule's keywords, Python pattern and secret group
(:mod:`intentloop.store._catalog_keywords`), and with both in place every process stands by (:class:`_Standby`): the
rules' patterns answer a one-line text of at most 1,000 characters without the library (a superset of its findings,
checked against it), and the library is loaded only for a longer text that holds a keyword (docs/REDACTION.md, "A
maintained rule catalog: the second layer", has the costs: an ``/intent remember`` holding a catalog-only token went
from +0.72 s of CPU to nothing measurable). A hook never compiles a cold cache: it records with the own rules and
leaves a process that goes on alone to build it; the server compiles it in a worker thread every tool call waits for,
the CLI inline, ``intentloop install`` ahead of use.

A missing library or one that fails to load leaves the own rules in charge, loudly: logged, written next to the cache
(``load-failed``), and reported by ``intentloop status`` without importing the library (:func:`catalog_state`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from intentloop._startup import installed_version
from intentloop.store._catalog_keywords import Prefilter, derive, merge_spans, read_keywords, write_keywords

if TYPE_CHECKING:
    from kingfisher_sdk import Scanner

ENV_CATALOG: Final = "INTENT_LOOP_CATALOG"
ENV_CATALOG_CACHE: Final = "INTENT_LOOP_CATALOG_CACHE"
#: The variables the catalog reads besides ``HOME``: a Codex plugin's ``.mcp.json`` forwards them to the server with
#: ``env_vars`` beside the data root's (``_paths.ROOT_ENV_VARS``), so turning the catalog off reaches that server too.
CATALOG_ENV_VARS: Final = (ENV_CATALOG, ENV_CATALOG_CACHE, "XDG_CACHE_HOME")
DISTRIBUTION: Final = "kingfisher-secret-scanner"
FAILED_NAME: Final = "load-failed"
_CACHE_SUFFIX: Final = ".vscdb"  # the compiled database Kingfisher writes into its cache directory
_MADV_PAGEOUT: Final = 21  # Linux 5.4+: reclaim these pages now (an older kernel refuses it: nothing happens)

Outcome = Literal["off", "unavailable", "cold", "standby", "loaded", "failed"]


class CatalogState(msgspec.Struct, frozen=True):
    """What ``intentloop status`` says about the catalog, found out without importing it.

    Attributes:
        enabled: ``INTENT_LOOP_CATALOG`` is not ``off``.
        version: the installed distribution's version; ``None`` when it is not installed.
        cache_dir: where its compiled rules are cached.
        warm: a compiled database is in the cache.
        keywords: the keyword file beside it is valid (its rules' patterns answer a text of one printable line of at
            most 1,000 characters; the library is loaded only for a longer one that holds a keyword).
        failure: the last load failure recorded in the cache (``None`` after a successful load).
    """

    enabled: bool
    version: str | None
    cache_dir: str
    warm: bool
    keywords: bool
    failure: str | None

    def describe(self) -> str:
        """One line for ``intentloop status``."""
        if not self.enabled:
            return f"own rules only (catalog off: {ENV_CATALOG}=off)"
        if self.version is None:
            return f"own rules only: {DISTRIBUTION} is not installed"
        if self.failure is not None and self.warm and self.keywords:
            return (
                f"own rules + the rule patterns of {DISTRIBUTION} {self.version}, which failed to load "
                f"({self.failure}): a text its patterns cannot answer gets the own rules only"
            )
        if self.failure is not None:
            return f"own rules only: {DISTRIBUTION} {self.version} failed to load ({self.failure})"
        if not self.warm:
            cache = "rule cache cold: hooks use the own rules until it is built; intentloop install builds it"
        elif self.keywords:
            cache = "rule cache warm; its rules' patterns answer without loading it, except for a long text"
        else:
            cache = "rule cache warm"
        return f"own rules + {DISTRIBUTION} {self.version} ({cache})"


def enabled(env: Mapping[str, str]) -> bool:
    """On unless ``INTENT_LOOP_CATALOG`` is ``off`` (any other value, or none, keeps both layers)."""
    return env.get(ENV_CATALOG, "").strip().lower() != "off"


def cache_dir(env: Mapping[str, str], version: str) -> Path:
    """``INTENT_LOOP_CATALOG_CACHE``, else ``$XDG_CACHE_HOME/intentloop`` (``~/.cache/intentloop``), one folder per
    library version (a new version compiles anew)."""
    explicit = env.get(ENV_CATALOG_CACHE)
    if explicit:
        base = Path(explicit)
    else:
        xdg = env.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "intentloop"
    return base / f"kingfisher-{version}"


def _installed_version() -> str | None:
    return installed_version(DISTRIBUTION)


def _is_warm(folder: Path) -> bool:
    try:
        return any(name.endswith(_CACHE_SUFFIX) for name in os.listdir(folder))
    except OSError:
        return False


def _recorded_failure(folder: Path) -> str | None:
    try:
        return (folder / FAILED_NAME).read_text(encoding="utf-8", errors="replace").strip()[:200] or "unknown"
    except OSError:
        return None


def catalog_state(env: Mapping[str, str]) -> CatalogState:
    """The catalog's state from the package metadata and the cache folder (the library is not imported)."""
    version = _installed_version()
    folder = cache_dir(env, version or "none")
    return CatalogState(
        enabled=enabled(env),
        version=version,
        cache_dir=str(folder),
        warm=version is not None and _is_warm(folder),
        keywords=version is not None and read_keywords(folder, version) is not None,
        failure=None if version is None else _recorded_failure(folder),
    )


_outcome: list[Outcome] = []  # this process's outcome, once decided
_wants_warming: list[bool] = []


def load_catalog(env: Mapping[str, str], *, cold_ok: bool, lean: bool = False) -> Outcome:
    """Make the catalog the second layer of :func:`intentloop.model.redaction.redact` in this process, when it is on.

    With a warm rule cache and its keywords, the layer stands by (:class:`_Standby`): the rules' patterns answer a
    one-line text, and the library is loaded only for a text they cannot answer, so most processes never pay for it.

    Args:
        cold_ok: whether this caller may compile a cold cache (seconds of CPU): the server's worker thread and the
            CLI may, and then use the library loaded; a hook may not, and gets ``"cold"`` (own rules only) and
            :func:`wants_warming` instead.
        lean: a long-lived process (the server): hand back the pages only loading needed, after the import and
            after the load (:func:`release_loading_pages`).

    Returns:
        ``"standby"`` or ``"loaded"`` (in use), ``"off"``, ``"unavailable"`` (not installed), ``"cold"`` or
        ``"failed"`` (logged, and recorded for ``intentloop status``); in every other case than the first two
        redaction uses the own rules. Never raises.
    """
    if _outcome:
        return _outcome[0]
    if not enabled(env):
        return _decided("off")
    version = _installed_version()
    if version is None:
        _warn(f"{DISTRIBUTION} is not installed: redacting with the own rules")
        return _decided("unavailable")
    folder = cache_dir(env, version)
    from intentloop.model.redaction import use_catalog

    keywords = read_keywords(folder, version) if _is_warm(folder) else None
    if keywords is not None:
        use_catalog(_Standby(folder, version, Prefilter(keywords), lean))
        return _decided("standby")
    if not cold_ok:
        _wants_warming.append(True)
        return "cold"  # not decided: the next call may find the cache warm
    scanner = _load(folder, version, lean)
    if scanner is None:
        return _decided("failed")
    keywords = read_keywords(folder, version)  # derived by the load: the same answers as every other process
    if keywords is None:  # they could not be written: the library answers every text
        use_catalog(lambda text: _spans(scanner, text))
    else:
        use_catalog(_Standby(folder, version, Prefilter(keywords), lean, scanner))
    return _decided("loaded")


def _load(folder: Path, version: str, lean: bool) -> Scanner | None:
    """The scanner, or ``None`` after a failure (logged and recorded for ``intentloop status``)."""
    try:
        scanner = _open(folder, version, lean)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a broken wheel, an ABI mismatch, a Rust panic (a BaseException): own rules, loudly
        _warn(f"{DISTRIBUTION} failed to load: redacting with the own rules", exc)
        with contextlib.suppress(OSError):
            (folder / FAILED_NAME).write_text(f"{type(exc).__name__}: {exc}"[:200], encoding="utf-8")
        return None
    with contextlib.suppress(OSError):
        (folder / FAILED_NAME).unlink(missing_ok=True)
    if lean:
        release_loading_pages()
    return scanner


class _Standby:
    """The second layer from the keyword file: the secret parts the catalog's rules' Python patterns match in a text
    (:meth:`Prefilter.spans`, a superset of what the library reports), with nothing loaded. Only a text the prefilter
    cannot answer (over 1,000 characters or not one printable line, and holding a keyword) is scanned by the library,
    which is loaded then, once (under a lock: the server redacts in more than one thread).

    Why not the library for every text once it is loaded: a text then gets the same redaction in every process,
    whether or not an earlier text loaded the library there; and most processes never load it (a warm load compiles
    the 488 patterns anew: 0.4–0.75 s of CPU and ~40 MB, over a hook's and the server's budgets)."""

    def __init__(
        self, folder: Path, version: str, prefilter: Prefilter, lean: bool, scanner: Scanner | None = None
    ) -> None:
        import threading

        self._folder, self._version, self._prefilter, self._lean = folder, version, prefilter, lean
        self._scanner: list[Scanner | None] = [] if scanner is None else [scanner]  # once tried: None after a failure
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[tuple[int, int]]:
        spans = self._prefilter.spans(text)
        if spans is not None:
            return spans
        with self._lock:
            if not self._scanner:
                self._scanner.append(_load(self._folder, self._version, self._lean))
        scanner = self._scanner[0]
        return [] if scanner is None else _spans(scanner, text)


def _warn(message: str, exc: BaseException | None = None) -> None:
    import logging  # here: ~4 ms a default hook does not pay

    logging.getLogger(__name__).warning(message, exc_info=exc)


def _decided(outcome: Outcome) -> Outcome:
    _outcome.append(outcome)
    return outcome


def wants_warming() -> bool:
    """Whether a hook in this process found the cache cold (its answer sent, it starts :func:`warm_cache`)."""
    return bool(_wants_warming)


def warm_cache(env: Mapping[str, str]) -> None:
    """Compile the catalog into its cache and derive its keywords (a hook's background process, ``intentloop
    install``). Never raises."""
    version = _installed_version()
    if version is None:
        return
    folder = cache_dir(env, version)
    try:
        _open(folder, version, lean=False)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        with contextlib.suppress(OSError):
            (folder / FAILED_NAME).write_text(f"{type(exc).__name__}: {exc}"[:200], encoding="utf-8")
        return
    with contextlib.suppress(OSError):
        (folder / FAILED_NAME).unlink(missing_ok=True)


RuleCache = Literal["off", "unavailable", "warm", "built", "failed"]


def ensure_rule_cache(env: Mapping[str, str]) -> RuleCache:
    """Build the rule cache and its keywords unless they are there (``intentloop install``: the first ``/intent``
    command then finds it warm). Returns what was found or done: ``"off"``, ``"unavailable"`` (not installed),
    ``"warm"`` (already built), ``"built"`` or ``"failed"`` (recorded for ``intentloop status``). Never raises."""
    state = catalog_state(env)
    if not state.enabled:
        return "off"
    if state.version is None:
        return "unavailable"
    if state.warm and state.keywords:
        return "warm"
    warm_cache(env)
    after = catalog_state(env)
    return "built" if after.warm and after.keywords else "failed"


def _open(folder: Path, version: str, lean: bool) -> Scanner:
    """Kingfisher's built-in rules (``medium`` confidence, its default), cached in ``folder`` (owner-only: Kingfisher
    does not cache in a folder others can write), and a scanner without Base64 decoding (a base64 image stays). The
    keyword file beside the compiled rules is derived from the loaded rules when it is missing or stale."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    import kingfisher_sdk

    if lean:  # what the import touched of the native library: not needed by the load, not kept at its peak
        release_loading_pages()
    rules = kingfisher_sdk.Rules(cache_dir=folder)
    if read_keywords(folder, version) is None:
        visible = [rules.detail(rule["id"]) for rule in rules.metadata() if rule["visible"]]
        write_keywords(
            folder,
            derive(
                version,
                [(rule["id"], rule["detection_regex"], rule.get("betterleaks_secret_group") or 0) for rule in visible],
            ),
        )
    return kingfisher_sdk.Scanner(rules, base64=False)


def release_loading_pages() -> None:
    """Hand back to the system the memory that only loading the catalog needed: the library's code and read-only
    data pages (a 36 MB native library; the few pages a scan needs are read back from the file on demand) and the
    freed heap the compile left (glibc). The long-lived server calls it once the catalog is loaded, so its memory
    budget pays for what scanning keeps, not for what loading touched once. Linux only; never raises."""
    module = sys.modules.get("kingfisher_sdk._native")
    path = getattr(module, "__file__", None)
    if not path or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        real = os.path.realpath(path)
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].strip() == real and "w" not in fields[1]:
                    start, end = (int(bound, 16) for bound in fields[0].split("-"))
                    madvise(start, end - start, _MADV_PAGEOUT)  # a hint: contents stay, clean pages are dropped
        libc.malloc_trim(0)


def _spans(scanner: Scanner, text: str) -> list[tuple[int, int]]:
    """The catalog's visible findings in ``text`` as sorted, merged character spans of their secret part."""
    data = text.encode("utf-8", "surrogatepass")
    findings = scanner.scan(data)
    if not findings:
        return []
    narrow = len(data) == len(text)
    spans: list[tuple[int, int]] = []
    for finding in findings:
        if not finding.visible:  # a helper another rule depends on (an id beside its secret), not a secret
            continue
        location = finding.location
        start, end = location["start_offset"], location["end_offset"]
        secret = finding.secret.encode("utf-8", "surrogatepass")
        at = data.find(secret, start, end) if secret else -1
        if at >= 0:
            start, end = at, at + len(secret)
        if not narrow:
            start = len(data[:start].decode("utf-8", "ignore"))
            end = len(data[:end].decode("utf-8", "ignore"))
        if end > start:
            spans.append((start, end))
    return merge_spans(spans)


__all__ = [
    "CATALOG_ENV_VARS",
    "DISTRIBUTION",
    "ENV_CATALOG",
    "ENV_CATALOG_CACHE",
    "CatalogState",
    "catalog_state",
    "ensure_rule_cache",
    "load_catalog",
    "release_loading_pages",
    "wants_warming",
    "warm_cache",
]
