"""Lock-free readers while other processes write: every read gets a whole, verified version of the ledger.

A writer replaces the ledger by renaming a new file over it; the old file, still open in a reader, then has a new
ctime and no link. Its bytes are a complete earlier version, so a reader must use them — never report
``TRANSIENT_FILE_RACE`` or ``UNSAFE_DATA_FILE`` for that. Real writer processes, real reader processes, real
SessionStart hooks and real ``intentloop verify`` runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from intentloop.model import EventDraft, new_uuid, project_id_for
from intentloop.store import ProjectStore, canonicalize_project_root

from _support.linked_task import linked_task_payload

WRITER = Path(__file__).parents[1] / "crash" / "ledger_writer.py"
_SCRIPTS = Path(sys.executable).parent
_SCRIPT = _SCRIPTS / "intentloop"
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
SESSION = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
STATEMENT = "Use PostgreSQL only"
WRITERS = 2
READ_SECONDS = 4.0

_READER = """
import collections, json, sys, time
from intentloop.errors import IntentLoopError
from intentloop.store import ProjectStore
store = ProjectStore(sys.argv[1], sys.argv[2])
end = time.monotonic() + float(sys.argv[3])
outcomes = collections.Counter()
versions = set()
last = None
while time.monotonic() < end:
    try:
        view = store.read()
    except IntentLoopError as exc:
        outcomes[exc.code] += 1
    else:
        outcomes["ok"] += 1
        versions.add(view.head_hash)
        outcomes["new version"] += view is not last
        last = view
print(json.dumps({"outcomes": outcomes, "versions": len(versions)}))
"""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Path, Path, ProjectStore, str]]:
    """A linked task in a ~1.5 MB ledger (reads take long enough to overlap renames), and writers keep writing."""
    data, repo = tmp_path / "data", tmp_path / "repo"
    repo.mkdir()
    store = ProjectStore(data, project_id_for(canonicalize_project_root(str(repo))))
    task = new_uuid()
    payload = linked_task_payload(SESSION, [STATEMENT])
    filler = [
        EventDraft(
            event_type="claim_added",
            task_id=str(uuid.uuid4()),
            actor="user",
            request_id=f"fill-{i}",
            payload={"statement": "x" * 1000, "request_fingerprint": "a" * 64},
        )
        for i in range(1500)
    ]
    with store.locked() as ledger:
        start = EventDraft(event_type="task_started", task_id=task, actor="user", request_id="s", payload=payload)
        ledger.append([start])
        ledger.append(filler)
    command = [sys.executable, str(WRITER), "append", str(data), store.project_id, str(uuid.uuid4())]
    writers = [
        subprocess.Popen(
            [*command, "--writer", f"w{n}", "--count", "100000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for n in range(WRITERS)
    ]
    try:
        deadline = time.monotonic() + 30
        while len(store.read()) < 1502 + 20 and time.monotonic() < deadline:  # the writers are really writing
            time.sleep(0.05)
        yield data, repo, store, task
    finally:
        for writer in writers:
            writer.kill()
        errors = [writer.communicate()[1] for writer in writers]
    assert errors == [b""] * WRITERS, errors


def _environ(data: Path) -> dict[str, str]:
    return {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(data.parent),
        "LANG": "C.UTF-8",
        "INTENT_LOOP_DATA_DIR": str(data),
        "INTENT_LOOP_HOOK_DEADLINE_S": "10",  # a loaded machine must not turn slowness into a dropped answer
    }


@pytest.mark.slow
def test_store_reads_hooks_and_verify_during_writes_all_succeed(world: tuple[Path, Path, ProjectStore, str]) -> None:
    data, repo, store, task = world
    before = len(store.read())
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(data), store.project_id, str(READ_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    hook_payload = json.dumps(
        {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "SessionStart", "source": "resume"}
    ).encode()
    hooks_without_context: list[bytes] = []
    verify_codes: list[int] = []
    runs = 0
    end = time.monotonic() + READ_SECONDS
    while time.monotonic() < end or runs < 5:
        hook = subprocess.run(
            [*INTENTLOOP, "hook"], input=hook_payload, capture_output=True, env=_environ(data), timeout=60
        )
        assert hook.returncode == 0 and hook.stderr == b""
        answer = json.loads(hook.stdout)
        context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        if task not in context or STATEMENT not in context:
            hooks_without_context.append(hook.stdout)
        verify = subprocess.run(
            [*INTENTLOOP, "verify", "--project-root", str(repo), "--json"],
            capture_output=True,
            env=_environ(data),
            timeout=60,
        )
        verify_codes.append(verify.returncode)
        if verify.returncode != 0:
            print("verify failed:", verify.stdout[-600:], verify.stderr[-300:])
        runs += 1
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    result = json.loads(out)
    outcomes = result["outcomes"]
    written = len(store.read()) - before
    print(f"\nreads {dict(outcomes)}, {result['versions']} versions seen; {runs} hooks and verifies; {written} writes")
    assert written >= 20 and result["versions"] >= 5  # the reads really overlapped many replacements
    assert len(hooks_without_context) == 0 and set(verify_codes) == {0} and set(outcomes) == {"ok", "new version"}, (
        f"failed reads {dict(outcomes)}; hooks without the context {len(hooks_without_context)} of {runs}; "
        f"verify exit codes {sorted(verify_codes)}"
    )
