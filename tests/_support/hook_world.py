"""A project with the service beside it and the real ``intentloop hook`` process: what the hook integration tests
share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from intentloop.model import project_id_for
from intentloop.service.intent_service import IntentService
from intentloop.store import ProjectStore, canonicalize_project_root

_SCRIPT = Path(sys.executable).with_name("intentloop")
HOOK = [*([str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]), "hook"]


class HookWorld:
    """A project folder ``tmp/repo`` with its data root ``tmp/data``, its store, the service, and one host session."""

    def __init__(self, tmp: Path, session: str) -> None:
        self.data = tmp / "data"
        repo = tmp / "repo"
        repo.mkdir()
        self.session = session
        self.root = canonicalize_project_root(str(repo))
        self.pid = project_id_for(self.root)
        self.service = IntentService(lambda: self.data)
        self.store = ProjectStore(self.data, self.pid)

    async def call(self, tool: str, **arguments: Any) -> Any:
        return await self.service.dispatch(tool, arguments, project_root=self.root, project_id=self.pid)

    def hook(
        self, event: str = "SessionStart", *, timeout: float = 20, env: dict[str, str] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Run the hook process for ``event`` of the session with ``fields``; it must exit 0, print nothing on stderr
        and answer one JSON line with ``"continue": true``, which is returned."""
        payload = {
            "session_id": self.session,
            "cwd": self.root,
            "hook_event_name": event,
            "transcript_path": "/t",
            **fields,
        }
        environ = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", ""),
            "INTENT_LOOP_DATA_DIR": str(self.data),
            **(env or {}),
        }
        proc = subprocess.run(
            HOOK, input=json.dumps(payload).encode(), capture_output=True, env=environ, timeout=timeout
        )
        assert (proc.returncode, proc.stderr) == (0, b"")
        answer: dict[str, Any] = json.loads(proc.stdout)
        assert answer["continue"] is True
        return answer
