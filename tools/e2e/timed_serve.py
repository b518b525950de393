"""A pass-through in front of ``intentloop serve`` that records when each ``tools/list`` answer leaves for the host.

Used by ``codex_startup.py``: the host is configured with a wrapper script that runs this for ``serve`` (and execs the
real ``intentloop`` for everything else). The time is counted from the moment the host spawned the wrapper (the
process start time in ``/proc/self/stat``, 10 ms resolution), so it includes this proxy's own start-up and an extra
pipe hop: an upper bound of what the server alone takes.

    python timed_serve.py REAL_INTENTLOOP LOG_FILE   (stdin/stdout: the host's MCP pipes)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def _since_spawn_ms() -> float:
    with open("/proc/self/stat", encoding="ascii") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    return (time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")) * 1000


def main() -> None:
    real, log_path = sys.argv[1], sys.argv[2]
    child = subprocess.Popen([real, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    list_ids: set[object] = set()

    def upstream() -> None:
        assert child.stdin is not None
        for line in iter(sys.stdin.buffer.readline, b""):
            try:
                message = json.loads(line)
                if isinstance(message, dict) and message.get("method") == "tools/list":
                    list_ids.add(message.get("id"))
            except ValueError:
                pass
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=upstream, daemon=True).start()
    for line in iter(child.stdout.readline, b""):
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        try:
            answer_id = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if answer_id in list_ids:
            list_ids.discard(answer_id)
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"tools_list_answered_ms": round(_since_spawn_ms(), 1)}) + "\n")
    child.wait()


if __name__ == "__main__":
    main()
