"""Both layers of redaction (the own rules and the rule catalog) on every path that stores text, through real processes:
the MCP server's statements, labels, reasons and imports, an ``/intent`` command in a hook (warm cache, cold cache,
the library failing to load), the plain prompt hook (never loads it), and the CLI (``relink --merge``, ``status``).

The secret is a format only the catalog knows (a Harness personal access token of the held-out set); each test's
positive control shows the own rules alone keep it, so a pass means the second layer ran on that path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from intentloop.model import project_id_for
from intentloop.store import canonicalize_project_root

from _support.mcp_client import Surface, server
from _support.tool_args import inference, source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "model"))
from test_redaction_heldout import load_heldout

SESSION = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5c"
_SCRIPT = Path(sys.executable).with_name("intentloop")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
MARK = "[REDACTED:catalog]"
SECRET = next(e["secret"] for e in load_heldout() if e["format"] == "Harness personal access token")
#: A stand-in ``kingfisher_sdk`` that notes it was imported and then fails as a broken wheel would.
BROKEN = (
    "import os\n"
    "open(os.environ['CATALOG_IMPORT_MARK'], 'a').write('imported\\n')\n"
    "raise ImportError('the native library could not be loaded (test stand-in)')\n"
)


def _stored(data_root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data_root.rglob("ledger.jsonl")))


async def _write_every_text(client_env: dict[str, str], data_root: Path, project: Path) -> dict[str, Any]:
    """A label, an initial claim, a statement and an invalidation reason holding the secret; returns the export."""
    async with server(data_root, env=client_env) as client:
        s = Surface(client, project)
        started = await s.ok(
            "intent_start_task",
            {
                "request_id": "start-1",
                "label": f"deploy {SECRET}",
                "initial_explicit": [f"ship with {SECRET} on staging"],
            },
        )
        task = started["task_id"]
        claim = await s.ok(
            "intent_add_evidence",
            {
                "task_id": task,
                "facets": ["outcome"],
                "request_id": "r-evidence",
                "statement": f"the deploy worked with {SECRET} in CI",
                "source_ref": source("tool_result", "ci-1"),
                "feedback_class": "keep",
            },
        )
        await s.ok(
            "intent_invalidate",
            {
                "task_id": task,
                "request_id": "r-invalidate",
                "claim_id": claim["claim_id"],
                "reason": f"{SECRET} was revoked",
                "source_ref": source("tool_result", "ci-2"),
            },
        )
        exported: dict[str, Any] = await s.ok("intent_export", {"task_id": task})
        return exported


async def test_server_statements_labels_reasons_and_imports(tmp_path: Path, catalog_env: dict[str, str]) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    plain_root, both_root = tmp_path / "plain", tmp_path / "both"
    graph = await _write_every_text({}, plain_root, project)
    assert SECRET.encode() in _stored(plain_root)  # positive control: the own rules alone keep it
    assert SECRET in json.dumps(graph)
    await _write_every_text(catalog_env, both_root, project)
    stored = _stored(both_root)
    assert SECRET.encode() not in stored
    assert stored.count(MARK.encode()) >= 4  # the label, the initial claim, the statement, the reason
    async with server(both_root, env=catalog_env) as client:  # an export written before the catalog was on
        s = Surface(client, project)
        task = (await s.ok("intent_start_task", {"request_id": "start-2"}))["task_id"]
        await s.ok("intent_import", {"task_id": task, "request_id": "r-import", "graph": graph})
    assert SECRET.encode() not in _stored(both_root)


def _stand_in(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """The stand-in library, a cache folder that looks warm, and the variables that use both: (env, folder, mark)."""
    from intentloop.store.catalog import cache_dir

    fake, cache, mark = tmp_path / "fake", tmp_path / "cache", tmp_path / "imported"
    (fake / "kingfisher_sdk").mkdir(parents=True)
    (fake / "kingfisher_sdk" / "__init__.py").write_text(BROKEN)
    folder = cache_dir({"INTENT_LOOP_CATALOG_CACHE": str(cache)}, "1.5.0")
    folder.mkdir(parents=True, mode=0o700)
    (folder / "rules.vscdb").write_bytes(b"")  # looks warm: a text the keywords cannot answer loads it
    env = {
        "INTENT_LOOP_CATALOG": "on",
        "INTENT_LOOP_CATALOG_CACHE": str(cache),
        "PYTHONPATH": str(fake),
        "CATALOG_IMPORT_MARK": str(mark),
    }
    return env, folder, mark


def _copy_real_keywords(folder: Path, catalog_env: dict[str, str]) -> None:
    """The session's real keyword file (every rule's keywords, Python pattern and secret group) into ``folder``."""
    from intentloop.store.catalog import cache_dir, catalog_state

    real = cache_dir(catalog_env, str(catalog_state(catalog_env).version)) / "keywords.json"
    (folder / "keywords.json").write_bytes(real.read_bytes())
    (folder / "keywords.json").chmod(0o600)


async def test_the_server_loads_it_only_for_a_text_a_rule_may_match(tmp_path: Path) -> None:
    """Standing by: an ordinary label and statement leave the library unimported; the first text holding a rule's
    keyword loads it (the stand-in then fails, and the own rules redact, loudly)."""
    from intentloop.store._catalog_keywords import KeywordFile, RuleKeys, write_keywords

    env, folder, mark = _stand_in(tmp_path)
    write_keywords(folder, KeywordFile(2, "1.5.0", [RuleKeys("harness", [SECRET[:4].casefold()], None, 0)]))
    project = tmp_path / "repo"
    project.mkdir()
    async with server(tmp_path / "data", env=env) as client:
        s = Surface(client, project)
        task = (await s.ok("intent_start_task", {"request_id": "start-1", "label": "deploy the service"}))["task_id"]
        await s.ok("intent_add_inference", inference(task, "i-1", "keep the retry budget at three attempts"))
        assert not mark.exists()  # no rule's keyword in them: the library is not even imported
        await s.ok("intent_add_inference", inference(task, "i-2", f"deploy with {SECRET}"))
        assert mark.exists()  # positive control: this one holds the keyword


async def test_the_server_redacts_every_text_with_the_rules_patterns_without_importing_the_library(
    tmp_path: Path, catalog_env: dict[str, str]
) -> None:
    """The real keyword file beside a stand-in library that marks its import: the label, initial claim, statement and
    reason are stored redacted, and the server never imports the library (its memory stays as without it)."""
    env, folder, mark = _stand_in(tmp_path)
    _copy_real_keywords(folder, catalog_env)
    project = tmp_path / "repo"
    project.mkdir()
    await _write_every_text(env, tmp_path / "data", project)
    stored = _stored(tmp_path / "data")
    assert SECRET.encode() not in stored
    assert stored.count(MARK.encode()) >= 4  # the label, the initial claim, the statement, the reason
    assert not mark.exists()


class Hook:
    def __init__(self, tmp: Path) -> None:
        self.data, self.repo, self.home = tmp / "data", tmp / "repo", tmp / "home"
        self.repo.mkdir()
        self.home.mkdir()
        self.turns = 0

    def env(self, **extra: str) -> dict[str, str]:
        base = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}
        base["LANG"] = "C.UTF-8"
        return {**base, "INTENT_LOOP_DATA_DIR": str(self.data), **extra}

    def prompt(self, text: str, env: dict[str, str]) -> dict[str, Any]:
        self.turns += 1
        payload = {
            "session_id": SESSION,
            "transcript_path": str(self.home / "t.jsonl"),
            "cwd": str(self.repo),
            "hook_event_name": "UserPromptSubmit",
            "model": "gpt-5",
            "turn_id": f"turn-{self.turns}",
            "prompt": text,
        }
        proc = subprocess.run(
            [*CLI, "hook", "user-prompt"], input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=30
        )
        assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1
        answer: dict[str, Any] = json.loads(proc.stdout)
        assert answer["continue"] is True
        return answer

    def remember(self, env: dict[str, str]) -> None:
        answer = self.prompt(f"/intent remember deploy with {SECRET} from now on", env)
        assert str(answer["systemMessage"]).startswith("[Intent Loop receipt IL-"), answer  # never lost

    def stored(self) -> bytes:
        return _stored(self.data)


def test_an_intent_command_uses_both_layers_when_the_cache_is_warm(tmp_path: Path, catalog_env: dict[str, str]) -> None:
    hook = Hook(tmp_path)
    hook.remember(hook.env())  # positive control: the catalog off
    assert SECRET.encode() in hook.stored()
    before = hook.stored().count(MARK.encode())
    hook.remember(hook.env(**catalog_env))
    assert hook.stored().count(MARK.encode()) == before + 1


def test_a_cold_cache_records_with_the_own_rules_and_is_compiled_in_the_background(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    cache = tmp_path / "cache"
    env = hook.env(INTENT_LOOP_CATALOG="on", INTENT_LOOP_CATALOG_CACHE=str(cache))
    started = time.monotonic()
    hook.remember(env)
    assert time.monotonic() - started < 2.5  # the hook's deadline: the compile is not the hook's
    assert MARK.encode() not in hook.stored()  # recorded, with the own rules
    deadline = time.monotonic() + 60
    while not list(cache.glob("*/keywords.json")) and time.monotonic() < deadline:  # written last
        time.sleep(0.5)
    assert list(cache.glob("*/*.vscdb")), "the background process did not compile the rule cache"
    assert list(cache.glob("*/keywords.json")), "the background process did not derive the keywords"
    hook.remember(env)
    assert MARK.encode() in hook.stored()  # the next command finds it warm


def _broken_library(tmp_path: Path, hook: Hook) -> tuple[dict[str, str], Path, Path]:
    """:func:`_stand_in` in a hook's environment: (env, folder, mark)."""
    extra, folder, mark = _stand_in(tmp_path)
    return hook.env(**extra), folder, mark


def test_with_its_keywords_a_command_loads_it_only_for_a_text_a_rule_may_match(tmp_path: Path) -> None:
    from intentloop.store._catalog_keywords import KeywordFile, RuleKeys, write_keywords

    hook = Hook(tmp_path)
    env, folder, mark = _broken_library(tmp_path, hook)
    write_keywords(folder, KeywordFile(2, "1.5.0", [RuleKeys("harness", [SECRET[:4].casefold()], None, 0)]))
    answer = hook.prompt("/intent remember keep the retry budget at three attempts", env)
    assert str(answer["systemMessage"]).startswith("[Intent Loop receipt IL-"), answer
    assert not mark.exists()  # no rule's keyword in the statement: the library is not even imported
    hook.remember(env)
    assert mark.exists()  # positive control: the secret holds the keyword, so the command loads it
    assert SECRET.encode() in hook.stored()  # (the stand-in fails: recorded with the own rules, loudly)


def test_a_command_redacts_with_the_rules_patterns_without_importing_the_library(
    tmp_path: Path, catalog_env: dict[str, str]
) -> None:
    """The real keyword file (every rule's keywords, Python pattern and secret group) beside a stand-in library that
    marks its import: a statement holding a secret only the catalog knows is stored redacted, and the library is never
    imported; the positive control, a statement too long for the patterns to answer, imports it."""
    hook = Hook(tmp_path)
    env, folder, mark = _broken_library(tmp_path, hook)
    _copy_real_keywords(folder, catalog_env)
    hook.remember(env)
    stored = hook.stored()
    assert SECRET.encode() not in stored and MARK.encode() in stored
    assert not mark.exists()  # redacted by the rules' patterns: the library was not even imported
    hook.prompt(f"/intent remember deploy with {SECRET} " + "and keep the retry budget " * 45, env)
    assert mark.exists()  # over 1,000 characters: only the library can answer (the stand-in fails, loudly)


def test_the_plain_prompt_never_loads_it_and_a_broken_library_falls_back(tmp_path: Path) -> None:
    from intentloop.store._catalog_keywords import KeywordFile, RuleKeys, write_keywords

    hook = Hook(tmp_path)
    env, folder, mark = _broken_library(tmp_path, hook)
    write_keywords(folder, KeywordFile(2, "1.5.0", [RuleKeys("open", [], None, 0)]))  # a rule any text may match
    hook.prompt("go on with the deploy", env)
    assert not mark.exists()  # the plain prompt stores no text: the library is not even imported
    hook.remember(env)
    assert mark.exists()  # positive control: the command tried to load it
    assert SECRET.encode() in hook.stored()  # recorded all the same, with the own rules: the fallback
    status = subprocess.run([*CLI, "status", "--json"], capture_output=True, env=env, timeout=60, check=False)
    redaction = json.loads(status.stdout)["redaction"]
    assert redaction["catalog_failure"] is not None and "test stand-in" in redaction["catalog_failure"]
    assert "failed to load" in redaction["summary"]


async def test_the_cli_imports_with_both_layers(tmp_path: Path, catalog_env: dict[str, str]) -> None:
    old, new, data_root = tmp_path / "old", tmp_path / "new", tmp_path / "data"
    old.mkdir()
    new.mkdir()
    await _write_every_text({}, data_root, old)  # written with the own rules: the secret is in the old ledger
    async with server(data_root) as client:
        await Surface(client, new).ok("intent_start_task", {"request_id": "start-new"})
    new_ledger = data_root / "projects" / project_id_for(canonicalize_project_root(str(new))) / "ledger.jsonl"
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(data_root), **catalog_env}
    proc = subprocess.run(
        [*CLI, "relink", "--from", str(old), "--to", str(new), "--merge", "--yes", "--json"],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = new_ledger.read_bytes()
    assert SECRET.encode() not in merged and MARK.encode() in merged
