"""Streams in git: the mirror under the data root and the git plumbing that writes, reads, fetches and pushes them.

Why the ``git`` command line and a mirror of our own: the user's credential helpers, SSH agent and proxies work as
they do for every other push, and intentloop never sees or stores a token; fetching into ``R/share/mirror.git`` (a
bare repository) keeps the project's own ``.git`` untouched. Refs in the mirror:

- ``refs/intentloop/<shared>/<key id>``: this installation's own stream (what it pushes, the same name remotely);
- ``refs/fetched/<shared>/<key id>``: every writer's ref as the last fetch found it (``--prune``: gone when gone);
- ``refs/accepted/<shared>/<key id>``: the last stream of each writer this installation accepted (docs/SYNC.md,
  "Reading"). A rolled-back or equivocating ref never moves it.

Commits are root commits with a fixed author, committer and date (no clock, no name leaves), so the same stream
always gives the same commit. A bare mirror keeps no reflog, so an erased payload is unreachable at once and gone
after ``git gc --prune=now``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from intentloop.errors import StorageError
from intentloop.store._share import share_dir
from intentloop.store._stream import CHECKPOINT_FILE, PAYLOAD_DIR, RECORDS_FILE, WITNESSES_FILE

MIRROR: Final = "mirror.git"
OWN: Final = "refs/intentloop"
FETCHED: Final = "refs/fetched"
ACCEPTED: Final = "refs/accepted"
_FIXED_DATE: Final = "1970-01-01T00:00:00Z"
_TIMEOUT_S: Final = 600.0


class Mirror:
    """The bare repository ``R/share/mirror.git`` and the git commands run in it."""

    def __init__(self, data_root: Path) -> None:
        self.path = share_dir(data_root) / MIRROR
        self.data_root = data_root

    def exists(self) -> bool:
        return (self.path / "HEAD").is_file()

    def ensure(self) -> None:
        if self.exists():
            return
        os.makedirs(self.path.parent, mode=0o700, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".mirror.", dir=self.path.parent))
        try:
            self._run(["init", "--bare", "-q", str(staging)], git_dir=None)
            self._run(["config", "core.logAllRefUpdates", "false"], git_dir=staging)
            self._run(["config", "gc.auto", "0"], git_dir=staging)
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(staging, self.path)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        if not self.exists():
            raise StorageError("the sharing mirror could not be created", code="STORAGE_WRITE_FAILED")

    def clear_stale_locks(self) -> int:
        """Remove the ``*.lock`` files a git process of an earlier sync left when it was killed (``update-ref``,
        ``fetch`` and ``pack-refs`` take them); returns how many. Only under the installation's sync lock: the mirror is
        intentloop's own and only a sync runs git in it, so every lock found then is stale, and git refuses to update
        a ref beside one until it is removed by hand."""
        if not self.exists():
            return 0
        found = [self.path / name for name in ("packed-refs.lock", "HEAD.lock", "config.lock", "shallow.lock")]
        found += (self.path / "refs").rglob("*.lock")
        removed = 0
        for path in found:
            with contextlib.suppress(FileNotFoundError):
                if path.is_file() and not path.is_symlink():
                    path.unlink()
                    removed += 1
        return removed

    def git(self, args: Sequence[str], *, stdin: bytes | None = None, check: bool = True) -> bytes:
        """Run ``git <args>`` in the mirror and return its stdout.

        Raises:
            StorageError: ``SHARE_GIT_FAILED`` (with git's first line of stderr) when ``check`` and it fails.
        """
        return self._run(args, git_dir=self.path, stdin=stdin, check=check)

    def _run(
        self, args: Sequence[str], *, git_dir: Path | None, stdin: bytes | None = None, check: bool = True
    ) -> bytes:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_GIT_ENV}
        env.update(
            GIT_AUTHOR_NAME="intentloop",
            GIT_AUTHOR_EMAIL="intentloop@invalid",
            GIT_COMMITTER_NAME="intentloop",
            GIT_COMMITTER_EMAIL="intentloop@invalid",
            GIT_AUTHOR_DATE=_FIXED_DATE,
            GIT_COMMITTER_DATE=_FIXED_DATE,
        )
        if git_dir is not None:
            env["GIT_DIR"] = str(git_dir)
        try:
            done = subprocess.run(
                ["git", *args],
                input=stdin if stdin is not None else b"",
                capture_output=True,
                env=env,
                cwd=str(self.path.parent),
                timeout=_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StorageError(f"git {args[0]} could not run ({type(exc).__name__})", code="SHARE_GIT_FAILED") from exc
        if check and done.returncode != 0:
            first = done.stderr.decode("utf-8", "replace").strip().splitlines()
            reason = first[-1][:300] if first else f"exit {done.returncode}"
            raise StorageError(f"git {args[0]} failed: {reason}", code="SHARE_GIT_FAILED")
        return done.stdout

    # refs ---------------------------------------------------------------------------------------------------------

    def refs(self, prefix: str) -> dict[str, str]:
        """Every ref under ``prefix`` (``refs/fetched/<shared>``) → its commit: the last path part (the key id)."""
        if not self.exists():
            return {}
        out = self.git(["for-each-ref", "--format=%(objectname) %(refname)", prefix + "/"])
        found: dict[str, str] = {}
        for line in out.decode("ascii", "replace").splitlines():
            sha, _, name = line.partition(" ")
            found[name.rsplit("/", 1)[-1]] = sha
        return found

    def ref(self, name: str) -> str | None:
        if not self.exists():
            return None
        out = self.git(["rev-parse", "-q", "--verify", name + "^{commit}"], check=False).strip()
        return out.decode("ascii") or None

    def set_ref(self, name: str, new: str, old: str | None) -> None:
        """Move ``name`` to ``new`` if it still is ``old`` (``None``: must not exist)."""
        self.git(["update-ref", name, new, old if old is not None else "0" * 40])

    # objects ------------------------------------------------------------------------------------------------------

    def write_stream(
        self,
        checkpoint: bytes,
        records: bytes,
        payloads: Mapping[str, bytes],
        kept: Mapping[str, str] | None = None,
        witnesses: bytes = b"",
    ) -> str:
        """Write one stream as a root commit; returns its id. ``kept`` names payloads already in the mirror (name →
        blob id, from :meth:`payload_entries`), which are not written again; ``witnesses`` (when not empty) is the
        stream's ``witnesses`` file."""
        kept = kept or {}
        staging = Path(tempfile.mkdtemp(prefix=".objects.", dir=self.path.parent))
        fresh = {name: data for name, data in payloads.items() if name not in kept}
        try:
            names = [CHECKPOINT_FILE, RECORDS_FILE, WITNESSES_FILE, *fresh]
            contents = [checkpoint, records, witnesses, *fresh.values()]
            paths = []
            for index, data in enumerate(contents):
                path = staging / str(index)
                path.write_bytes(data)
                paths.append(str(path))
            shas = (
                self.git(
                    ["hash-object", "-w", "--no-filters", "--stdin-paths"], stdin="\n".join(paths).encode() + b"\n"
                )
                .decode("ascii")
                .split()
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        by_name = {**kept, **dict(zip(names, shas, strict=True))}
        payload_tree = self._mktree([("blob", by_name[digest], digest) for digest in sorted(payloads)])
        entries = [
            ("blob", by_name[CHECKPOINT_FILE], CHECKPOINT_FILE),
            ("tree", payload_tree, PAYLOAD_DIR),
            ("blob", by_name[RECORDS_FILE], RECORDS_FILE),
        ]
        if witnesses:
            entries.append(("blob", by_name[WITNESSES_FILE], WITNESSES_FILE))
        root = self._mktree(entries)
        return self.git(["commit-tree", root, "-m", "intentloop stream"]).decode("ascii").strip()

    def _mktree(self, entries: Sequence[tuple[str, str, str]]) -> str:
        lines = "".join(
            f"{'040000' if kind == 'tree' else '100644'} {kind} {sha}\t{name}\n" for kind, sha, name in entries
        )
        return self.git(["mktree"], stdin=lines.encode("utf-8")).decode("ascii").strip()

    def payload_entries(self, commit: str) -> dict[str, str]:
        """Payload name → blob id of a stream commit (nothing is read but the tree)."""
        found: dict[str, str] = {}
        for item in self.git(["ls-tree", "-z", f"{commit}:{PAYLOAD_DIR}"], check=False).split(b"\0"):
            if item:
                meta, _, name = item.partition(b"\t")
                found[name.decode("utf-8", "replace")] = meta.split()[2].decode("ascii")
        return found

    def read_stream(self, commit: str) -> tuple[bytes, bytes, dict[str, bytes]]:
        """``(checkpoint, records, payloads by name)`` of a stream commit; missing parts are empty.

        Raises:
            StorageError: ``SHARE_GIT_FAILED`` (an object git cannot read).
        """
        listing = self.git(["ls-tree", "-z", commit], check=False)
        entries: dict[str, str] = {}
        for item in listing.split(b"\0"):
            if item:
                meta, _, name = item.partition(b"\t")
                entries[name.decode("utf-8", "replace")] = meta.split()[2].decode("ascii")
        payload_names: list[str] = []
        wanted = [entries.get(CHECKPOINT_FILE), entries.get(RECORDS_FILE)]
        if PAYLOAD_DIR in entries:
            sub = self.git(["ls-tree", "-z", entries[PAYLOAD_DIR]])
            for item in sub.split(b"\0"):
                if item:
                    meta, _, name = item.partition(b"\t")
                    payload_names.append(name.decode("utf-8", "replace"))
                    wanted.append(meta.split()[2].decode("ascii"))
        blobs = self._cat([sha for sha in wanted if sha is not None])
        checkpoint = blobs.get(wanted[0] or "", b"")
        records = blobs.get(wanted[1] or "", b"")
        payloads = {name: blobs.get(sha or "", b"") for name, sha in zip(payload_names, wanted[2:], strict=True)}
        return checkpoint, records, payloads

    def read_heads(self, commits: Mapping[str, str]) -> dict[str, tuple[bytes, bytes, dict[str, str]]]:
        """``(checkpoint, records, payload name → blob id)`` of many stream commits (writer → commit) in one git
        process, whatever their number; the payloads themselves are read with :meth:`read_blobs`."""
        order = list(commits.items())
        asks = [f"{commit}:{part}" for _w, commit in order for part in (CHECKPOINT_FILE, RECORDS_FILE, PAYLOAD_DIR)]
        found = self._cat_in_order(asks)
        result: dict[str, tuple[bytes, bytes, dict[str, str]]] = {}
        for index, (writer, _commit) in enumerate(order):
            checkpoint, records, tree = found[3 * index : 3 * index + 3]
            result[writer] = (checkpoint or b"", records or b"", _tree_entries(tree) if tree is not None else {})
        return result

    def read_file(self, commits: Mapping[str, str], name: str) -> dict[str, bytes]:
        """The file ``name`` (``checkpoint``, ``witnesses``) of many stream commits (key → commit) in one git process;
        a commit without it is absent from the answer."""
        order = list(commits.items())
        found = self._cat_in_order([f"{commit}:{name}" for _k, commit in order])
        return {key: data for (key, _c), data in zip(order, found, strict=True) if data is not None}

    def records_sizes(self, commits: Mapping[str, str]) -> dict[str, int]:
        """The size in bytes of the records file of many stream commits (writer → commit) in one git process,
        without reading them (0 when absent): what lets a reader read heads in groups of bounded size."""
        order = list(commits.items())
        if not order:
            return {}
        asks = "".join(f"{commit}:{RECORDS_FILE}\n" for _w, commit in order).encode("utf-8")
        lines = self.git(["cat-file", "--batch-check"], stdin=asks).splitlines()
        sizes: dict[str, int] = {}
        for (writer, _commit), line in zip(order, lines, strict=True):
            header = line.split()
            sizes[writer] = int(header[2]) if len(header) >= 3 and header[-1] != b"missing" else 0
        return sizes

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """The bytes of each blob (one git process); a blob git does not have is absent."""
        return {sha: data for sha, data in zip(shas, self._cat_in_order(shas), strict=True) if data is not None}

    def _cat_in_order(self, asks: Sequence[str]) -> list[bytes | None]:
        """``git cat-file --batch`` over ``asks``: each object's bytes in order, ``None`` for a missing one."""
        if not asks:
            return []
        out = self.git(["cat-file", "--batch"], stdin="".join(f"{ask}\n" for ask in asks).encode("utf-8"))
        found: list[bytes | None] = []
        at = 0
        for _ask in asks:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) < 3 or header[-1] == b"missing":
                found.append(None)
                continue
            size = int(header[2])
            found.append(out[at : at + size])
            at += size + 1
        return found

    def _cat(self, shas: Sequence[str]) -> dict[str, bytes]:
        if not shas:
            return {}
        out = self.git(["cat-file", "--batch"], stdin="".join(f"{sha}\n" for sha in shas).encode("ascii"))
        found: dict[str, bytes] = {}
        at = 0
        while at < len(out):
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) < 3:
                continue
            size = int(header[2])
            found[header[0].decode("ascii")] = out[at : at + size]
            at += size + 1
        return found

    # network ------------------------------------------------------------------------------------------------------

    def fetch(self, url: str, shared: str) -> None:
        self.git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--prune",
                "--no-write-fetch-head",
                "--",
                url,
                f"+{OWN}/{shared}/*:{FETCHED}/{shared}/*",
            ]
        )

    def push(self, url: str, shared: str, writer: str, commit: str, expected: str | None) -> None:
        """Push ``commit`` to ``refs/intentloop/<shared>/<writer>`` if the remote ref still is ``expected``."""
        ref = f"{OWN}/{shared}/{writer}"
        self.git(
            [
                "push",
                "--quiet",
                "--porcelain",
                f"--force-with-lease={ref}:{expected or ''}",
                "--",
                url,
                f"{commit}:{ref}",
            ]
        )


def _tree_entries(tree: bytes) -> dict[str, str]:
    """Name → object id of a raw tree object (``<mode> <name>\\0<20-byte id>`` repeated)."""
    entries: dict[str, str] = {}
    at = 0
    while at < len(tree):
        nul = tree.index(b"\0", at)
        _mode, _, name = tree[at:nul].partition(b" ")
        entries[name.decode("utf-8", "replace")] = tree[nul + 1 : nul + 21].hex()
        at = nul + 21
    return entries


_KEPT_GIT_ENV: Final = frozenset(
    {"GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"}
)


__all__ = ["ACCEPTED", "FETCHED", "MIRROR", "OWN", "Mirror"]
