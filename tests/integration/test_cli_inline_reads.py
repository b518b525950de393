"""`intentloop show` and `export` answer their read tool inline, without trio (intentloop/service/inline.py), and
answer exactly what the tool answers through the trio service; a command that writes still runs the trio service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from intentloop.model import project_id_for
from intentloop.service import IntentService
from intentloop.service.inline import answers_inline, read_inline

_PROBE = (  # the console script's body in a fresh process, reporting whether trio was imported
    "import atexit, sys\n"
    "report = sys.argv[1]\n"
    "atexit.register(lambda: open(report, 'w').write(str('trio' in sys.modules)))\n"
    "sys.argv = ['intentloop', *sys.argv[2:]]\n"
    "from intentloop.cli.entry import main\n"
    "main()\n"
)


def _seed(data: Path, project: Path) -> tuple[str, str, str]:
    service = IntentService(lambda: data, resident=False)
    root, pid = str(project), project_id_for(str(project))

    async def go() -> tuple[str, str]:
        task = (await service.dispatch("intent_start_task", {"request_id": "s"}, project_root=root, project_id=pid))[
            "task_id"
        ]
        claim = await service.dispatch(
            "intent_add_explicit",
            {
                "task_id": task,
                "request_id": "c",
                "statement": "Keep the JSON output stable.",
                "source_ref": {"kind": "user_event", "event_id": "turn-1"},
                "confirmation_reason": "direct_statement",
                "facets": ["hard_constraint"],
            },
            project_root=root,
            project_id=pid,
        )
        return str(task), str(claim["claim_id"])

    task, claim = trio.run(go)
    return pid, task, claim


def _run(tmp_path: Path, project: Path, *args: str) -> tuple[bool, subprocess.CompletedProcess[str]]:
    report = tmp_path / "report.txt"
    report.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env={
            "INTENT_LOOP_CATALOG": "off",
            "PATH": "/usr/bin:/bin",
            "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"),
            "HOME": str(tmp_path),
        },
    )
    return report.read_text() == "True", done


def test_show_and_export_read_without_trio_and_a_deletion_still_runs_the_trio_service(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _pid, task, claim = _seed(tmp_path / "data", project)
    trio_loaded, shown = _run(tmp_path, project, "show", task, "--json")
    assert shown.returncode == 0, shown.stderr
    assert "Keep the JSON output stable." in shown.stdout and not trio_loaded
    trio_loaded, exported = _run(tmp_path, project, "export", task, "--format", "markdown")
    assert exported.returncode == 0, exported.stderr
    assert "Keep the JSON output stable." in exported.stdout and not trio_loaded
    trio_loaded, forgot = _run(tmp_path, project, "forget", "claim", claim, "--yes", "--json")
    assert forgot.returncode == 0, forgot.stderr
    assert json.loads(forgot.stdout)["ok"] is True and trio_loaded  # control: a write goes through the trio service


def test_an_inline_read_answers_what_the_trio_service_answers(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    pid, task, _claim = _seed(tmp_path / "data", project)
    root = str(project)
    service = IntentService(lambda: tmp_path / "data", resident=False)
    for tool, arguments in [
        ("intent_get_snapshot", {"task_id": task}),
        ("intent_export", {"task_id": task, "detail": "portable"}),
        ("intent_status", {"task_id": task}),
        ("intent_list_candidates", {"task_id": task}),
    ]:
        assert answers_inline(tool)
        inline: Any = read_inline(lambda: tmp_path / "data", tool, arguments, project_root=root, project_id=pid)
        through_trio = trio.run(lambda t=tool, a=arguments: service.dispatch(t, a, project_root=root, project_id=pid))
        for answer in (inline, through_trio):
            if isinstance(answer, dict):
                for stamped in ("generated_at", "exported_at", "signature"):  # the time of the answer, signed
                    answer.pop(stamped, None)
        assert inline == through_trio, tool
    assert not answers_inline("intent_add_explicit") and not answers_inline("intent_delete")
