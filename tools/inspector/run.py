"""Drive ``intentloop serve`` with the official MCP Inspector CLI: ``tools/list`` (strict), a tool call, a resource.

Run by ``.ci/run`` after ``npm ci --prefix tools/inspector``; exits non-zero when any check fails. The Inspector is an
independent client (the TypeScript SDK), so this is conformance evidence beside the Python SDK's in the test suite.

    python tools/inspector/run.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INSPECTOR = HERE / "node_modules" / ".bin" / "mcp-inspector"
TIMEOUT_S = 120


def inspect(data: Path, *args: str) -> tuple[int, object, str]:
    """One Inspector CLI call against a fresh server process: (exit code, parsed stdout, stderr)."""
    command = [str(INSPECTOR), "--cli", *args, "-e", f"INTENT_LOOP_DATA_DIR={data}", sys.executable, "-m"]
    command.append("intentloop.mcp")
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=os.environ.copy())
    try:
        parsed = json.loads(done.stdout)
    except json.JSONDecodeError:
        parsed = None
    return done.returncode, parsed, done.stderr


def main() -> int:
    if not INSPECTOR.exists():
        print(f"FAIL: {INSPECTOR} is missing (run: npm ci --prefix tools/inspector)")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        data, project = Path(tmp) / "data", Path(tmp) / "project"
        project.mkdir()
        checks: list[tuple[str, tuple[str, ...], object]] = [
            ("tools/list --strict", ("--method", "tools/list", "--strict"), None),
            (
                "tools/call intent_status",
                ("--method", "tools/call", "--tool-name", "intent_status", "--tool-arg", f"project_root={project}"),
                None,
            ),
            ("resources/read", ("--method", "resources/read", "--uri", "intent-loop://skill/intent"), None),
        ]
        for name, args, _ in checks:
            code, out, err = inspect(data, *args)
            ok = code == 0 and isinstance(out, dict)
            if ok and name.startswith("tools/list"):
                assert isinstance(out, dict)
                tools = out.get("tools", [])
                ok = len(tools) == 15 and all(tool.get("outputSchema") for tool in tools)
            elif ok and name.startswith("tools/call"):
                assert isinstance(out, dict)
                envelope = out.get("structuredContent", {})
                ok = out.get("isError") is False and isinstance(envelope, dict) and envelope.get("ok") is True
            elif ok:
                assert isinstance(out, dict)
                contents = out.get("contents", [{}])
                ok = contents[0].get("uri") == "intent-loop://skill/intent" and "intent_" in contents[0].get("text", "")
            print(f"{'PASS' if ok else 'FAIL'}: inspector {name}")
            if not ok:
                failures += 1
                print(f"  exit {code}; stderr: {err.strip()[-2000:]}")
    print(f"inspector: {3 - failures} of 3 checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
