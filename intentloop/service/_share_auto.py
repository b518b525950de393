"""The MCP server's background sync: every shared project the server has served, whose user asked for it with
``intentloop share auto-sync EVERY``, is synced every EVERY seconds, as ``intentloop sync`` would.

Why a supervised loop in the server and nothing in the hooks: a sync runs ``git`` over the network for up to
minutes, which no hook deadline allows and no hook may do (docs/SYNC.md); a server lives as long as the agent's
session, so its peers' claims arrive while the agent works. One ``trio_util.periodic`` tick every
:data:`TICK_S` seconds reads the settings of the projects seen (a few small files), and only a due project runs a
sync, in a worker thread under the installation's sync lock (a concurrent ``intentloop sync`` waits its turn). A
failure is logged with its code and retried at the next due time; nothing here ever ends the server. Off unless the
user turned it on for the project: until then the server runs no git and opens no socket.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import trio

from intentloop.errors import IntentLoopError
from intentloop.store._share import read_settings, shared_identity

logger = logging.getLogger(__name__)

TICK_S = 5.0


class BackgroundSync:
    """The projects a server has served, and when each shared one was last synced in the background.

    Args:
        data_root: resolves the storage root on each tick (a missing root skips the tick).
    """

    def __init__(self, data_root: Callable[[], os.PathLike[str] | str]) -> None:
        self._data_root = data_root
        self._roots: dict[str, str] = {}  # project_id -> canonical root
        self._last: dict[str, float] = {}  # shared id -> time.monotonic() of the last background sync's start

    def note(self, project_root: str, project_id: str) -> None:
        """Remember a project a tool call (or the server's start) named."""
        self._roots.setdefault(project_id, project_root)

    def due(self, data_root: Path, now: float) -> list[tuple[str, str]]:
        """``(shared id, project root)`` of each project whose background sync is due now, marked as started."""
        found: list[tuple[str, str]] = []
        for project_id, root in list(self._roots.items()):
            try:
                identity = shared_identity(data_root, root, project_id)
                if identity is None or any(shared == identity.shared_id for shared, _ in found):
                    continue
                settings = read_settings(data_root, identity.shared_id)
            except (IntentLoopError, OSError):
                continue
            every = settings.sync_every_s
            last = self._last.get(identity.shared_id)
            if settings.remote is None or every is None or (last is not None and now - last < every):
                continue
            self._last[identity.shared_id] = now
            found.append((identity.shared_id, root))
        return found

    async def run(self) -> None:
        """Tick forever; never raises (it runs as a system task of the server)."""
        import trio_util  # ~16 ms of imports a hook's /intent command, which never runs this, does not pay

        async for _ in trio_util.periodic(TICK_S):
            try:
                data_root = Path(self._data_root())
            except (IntentLoopError, OSError, ValueError):
                continue
            for shared, root in self.due(data_root, time.monotonic()):
                await self._sync(data_root, shared, root)

    async def _sync(self, data_root: Path, shared: str, root: str) -> None:
        from intentloop.service._share import sync

        try:
            report = await trio.to_thread.run_sync(sync, data_root, root, abandon_on_cancel=True)
        except IntentLoopError as exc:
            logger.warning("background sync of shared project %s failed: %s %s", shared, exc.code, exc)
            return
        except Exception:  # a system task must not end the server
            logger.exception("background sync of shared project %s failed", shared)
            return
        own = report["own"]
        logger.info("background sync of shared project %s: %s added, pushed: %s", shared, own["added"], own["pushed"])


__all__ = ["TICK_S", "BackgroundSync"]
