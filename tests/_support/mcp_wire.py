"""Raw JSON-RPC over a real ``intentloop serve`` subprocess: the wire-level driver of the conformance tests.

It speaks newline-delimited JSON-RPC
directly, so the tests see the exact bytes the server writes, including answers the official client would refuse to
send or would hide. :func:`tool_scenario` is the fixed sequence of calls whose answers are compared, byte for byte
after normalising ids, times and paths, with ``tests/fixtures/mcp/sdk_server_answers.json``: the answers the earlier
server, built on the official ``mcp`` SDK's ``Server`` (commit f5dbfe5), gives for the same calls.

When the service's answers change on purpose (a new optional field, a new result key), re-record the fixture with
that same SDK-based server in front of the current service, and review the fixture's diff::

    python tests/_support/mcp_wire.py --record-with-sdk-server

It checks the server's three modules out of git history (``f5dbfe5:intentloop/mcp/{server,stdio,client_roots}.py``)
into a temporary package and serves the current service, catalog and envelope through them; nothing of it is
installed or kept. The SDK-based server is a recording tool only: the tests never run it.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (the recording command): make ``_support`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support.tool_args import source

SERVE = [sys.executable, "-m", "intentloop.mcp"]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "sdk_server_answers.json"
MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CLIENT_INFO = {"name": "wire-test", "version": "0"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_DIGEST = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
_SIGNATURE = re.compile(r"(?<![0-9a-f])[0-9a-f]{128}(?![0-9a-f])")  # Ed25519, under this run's installation key
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")


class Wire:
    """One server subprocess driven line by line."""

    def __init__(self, env: dict[str, str], cwd: Path | None = None, command: list[str] | None = None) -> None:
        self.process = subprocess.Popen(
            command or SERVE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._buffer = b""
        self._next_id = 0

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def read_line(self, timeout: float = 30.0) -> bytes | None:
        """The next line the server writes (without its newline), or ``None`` at EOF or after ``timeout``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.process.stdout], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def read(self, timeout: float = 30.0) -> dict[str, Any] | None:
        line = self.read_line(timeout)
        return None if line is None else json.loads(line)

    def quiet_for(self, seconds: float) -> bool:
        """True when the server writes nothing for ``seconds``."""
        return self.read_line(seconds) is None

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request_raw(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        """Send a request and return the raw line of its answer (skipping nothing: it must be the next line)."""
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        line = self.read_line()
        assert line is not None, f"no answer to {method}"
        assert json.loads(line).get("id") == request_id, line
        return line

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.request_raw(method, params))
        return answer

    def take_rest(self) -> bytes:
        """Every byte the server wrote that was not read yet, to EOF (call it once the server has exited)."""
        assert self.process.stdout is not None
        rest = self._buffer + self.process.stdout.read()
        self._buffer = b""
        return rest

    def close(self, timeout: float = 10.0) -> int:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def server_env(data_root: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("CODEX_HOME", "PLUGIN_DATA")}
    env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    return env


def modern_meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def initialize(wire: Wire, version: str = "2025-06-18", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = wire.request(
        "initialize", {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
    )
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


class Era:
    """How requests are framed: after an ``initialize`` handshake, or each with the 2026-07-28 ``_meta``."""

    def __init__(self, wire: Wire, modern: bool) -> None:
        self.wire = wire
        self.modern = modern

    def params(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        if not self.modern:
            return params
        return {**(params or {}), "_meta": modern_meta()}

    def request_raw(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        return self.wire.request_raw(method, self.params(params))

    def call_raw(self, tool: str, arguments: Any) -> bytes:
        return self.request_raw("tools/call", {"name": tool, "arguments": arguments})

    def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.call_raw(tool, arguments))
        return answer


def tool_scenario(era: Era, project: Path) -> list[bytes]:
    """The fixed sequence whose raw answers are compared: listings, the resource, and every tool (ok and failing)."""
    root = str(project)
    lines = [era.request_raw("tools/list"), era.request_raw("resources/list")]
    lines.append(era.request_raw("resources/read", {"uri": "intent-loop://skill/intent"}))
    lines.append(era.call_raw("intent_status", {"project_root": root}))
    start_raw = era.call_raw(
        "intent_start_task",
        {
            "project_root": root,
            "request_id": "start-1",
            "label": "fix login",
            "host_session_id": "session-1",
            "initial_explicit": ["Never change the public API"],
        },
    )
    lines.append(start_raw)
    task = json.loads(start_raw)["result"]["structuredContent"]["task_id"]
    common = {"project_root": root, "task_id": task}

    def call(tool: str, **arguments: Any) -> dict[str, Any]:
        raw = era.call_raw(tool, {**common, **arguments})
        lines.append(raw)
        answer: dict[str, Any] = json.loads(raw)
        return answer

    explicit = call(
        "intent_add_explicit",
        request_id="r2",
        statement="Tests must pass on Python 3.11",
        source_ref=source("user_event", "turn-7"),
        facets=["hard_constraint"],
        confirmation_reason="direct_statement",
    )
    claim = explicit["result"]["structuredContent"]["result"]["claim_id"]
    call(
        "intent_add_inference",
        request_id="r3",
        statement="The user prefers small commits",
        source_ref=source("agent_turn", "turn-8"),
        facets=["soft_constraint"],
        confidence=0.6,
    )
    call(
        "intent_add_evidence",
        request_id="r4",
        statement="CI failed on test_login",
        source_ref=source("tool_result", "ci-91"),
        facets=["result_feedback"],
        feedback_class="implementation_change",
    )
    unknown = call(
        "intent_mark_unknown",
        request_id="r5",
        statement="Unclear whether SSO users are in scope",
        source_ref=source("agent_turn", "turn-9"),
        facets=["unknown"],
    )
    other = unknown["result"]["structuredContent"]["result"]["claim_id"]
    call(
        "intent_mark_dispute",
        request_id="r6",
        statement="Speed vs. readability is unresolved",
        source_ref=source("user_event", "turn-10"),
        facets=["tradeoff"],
        related_claim_ids=[claim, other],
    )
    replaced = call(
        "intent_replace_claim",
        request_id="r7",
        statement="Tests must pass on 3.11 and 3.12",
        source_ref=source("user_event", "turn-11"),
        facets=["hard_constraint"],
        replacement_kind="explicit",
        confirmation_reason="direct_statement",
        supersedes=[claim],
    )
    new_claim = replaced["result"]["structuredContent"]["result"]["claim_id"]
    call(
        "intent_invalidate",
        request_id="r8",
        claim_id=other,
        reason="The user withdrew it",
        source_ref=source("user_event", "turn-12"),
    )
    call("intent_get_snapshot", max_characters=1200)
    call("intent_list_candidates")
    call("intent_export", detail="summary")
    exported = call("intent_export", detail="portable")
    graph = exported["result"]["structuredContent"]["result"]
    second_raw = era.call_raw(
        "intent_start_task", {"project_root": root, "request_id": "start-2", "label": "second", "initial_explicit": []}
    )
    lines.append(second_raw)
    second_task = json.loads(second_raw)["result"]["structuredContent"]["task_id"]
    imported = {"project_root": root, "task_id": second_task, "request_id": "r9", "graph": graph}
    lines.append(era.call_raw("intent_import", imported))
    call("intent_delete", target="claim", claim_id=new_claim, confirmation=f"DELETE CLAIM {new_claim}")
    call("intent_set_mode", request_id="r10", mode="off")
    # Refusals: a strict-schema error, a rule error, a missing root. (An unknown tool and non-object arguments are
    # JSON-RPC errors now, not envelopes: test_mcp_conformance.py checks them on their own.)
    call("intent_get_snapshot", max_characters="many")
    call(
        "intent_add_explicit",
        request_id="r11",
        statement="x",
        source_ref=source("tool_result", "t"),
        facets=["outcome"],
        confirmation_reason="direct_statement",
    )
    lines.append(era.call_raw("intent_status", {}))
    return lines


def normalize(line: bytes, data_root: Path, project: Path) -> str:
    """The line with run-specific values replaced: paths, the project id, UUIDs (numbered in order), timestamps and
    the other SHA-256 digests (of imported graphs, which hold ids and times)."""
    from intentloop.model import project_id_for

    text = line.decode("utf-8")
    text = text.replace(str(data_root), "<DATA>").replace(str(project), "<PROJECT>")
    text = text.replace(project_id_for(os.path.realpath(project)), "<PROJECT_ID>")
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(), f"<UUID-{len(seen) + 1}>")

    text = _SIGNATURE.sub("<SIGNATURE>", text)
    return _DIGEST.sub("<SHA256>", _TIME.sub("<TIME>", _UUID.sub(number, text)))


SDK_SERVER_COMMIT = "f5dbfe5"
_SDK_SERVER_MODULES = ("server", "stdio", "client_roots")


def sdk_server_command(directory: Path) -> list[str]:
    """Check the SDK-based server's modules out of git history into ``directory``; the command that serves it."""
    package = directory / "sdk_reference_server"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    repo = Path(__file__).resolve().parents[2]
    for name in _SDK_SERVER_MODULES:
        source = subprocess.run(
            ["git", "show", f"{SDK_SERVER_COMMIT}:intentloop/mcp/{name}.py"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for other in _SDK_SERVER_MODULES:
            source = source.replace(f"intentloop.mcp.{other}", f"sdk_reference_server.{other}")
        (package / f"{name}.py").write_text(source, encoding="utf-8")
    code = "import sys; from sdk_reference_server.stdio import serve_stdio; raise SystemExit(serve_stdio())"
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(directory)!r}); {code}"]


def run_scenario(tmp: Path, modern: bool, command: list[str] | None = None) -> list[str]:
    data_root, project = tmp / "data", tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    with Wire(server_env(data_root), cwd=tmp, command=command) as wire:
        if not modern:
            initialize(wire, "2025-06-18")
        lines = tool_scenario(Era(wire, modern), project)
    return [normalize(line, data_root, project) for line in lines]


def main() -> None:
    import tempfile

    usage = "usage: python tests/_support/mcp_wire.py --record-with-sdk-server"
    assert sys.argv[1:] == ["--record-with-sdk-server"], usage
    answers = {}
    for name, modern in (("2025-06-18", False), (MODERN, True)):
        with tempfile.TemporaryDirectory() as tmp:
            command = sdk_server_command(Path(tmp))
            answers[name] = run_scenario(Path(tmp), modern, command)
    FIXTURE.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded {sum(map(len, answers.values()))} answers to {FIXTURE}")


if __name__ == "__main__":
    main()
