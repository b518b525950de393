"""A pass-through in front of ``intentloop serve`` that records when each ``tools/list`` answer leaves for the host.

Used by ``codex_startup.py``: the host is configured with a wrapper script that runs this for ``serve`` (and execs the
real ``intentloop`` for everything else). The time is counted from the moment the host spawned the wrapper (the
process start time in ``/proc/self/stat``, 10 ms resolution), so it includes this proxy's own start-up and an extra
pipe hop: an upper bound of what the server alone takes. Beside it, the same answer counted from the server's own spawn
by this proxy, and when the host's ``tools/list`` reached the server (the host's own delay under load).

    python timed_serve.py REAL_INTENTLOOP LOG_FILE   (stdin/stdout: the host's MCP pipes)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def _since_spawn_ms(pid: int | str = "self") -> float:
    """Milliseconds since process ``pid`` (this one by default) was spawned, at the kernel's 10 ms resolution."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    return (time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")) * 1000


def main() -> None:
    real, log_path = sys.argv[1], sys.argv[2]
    child = subprocess.Popen([real, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    list_ids: dict[object, float] = {}  # request id -> ms since the server's spawn when the host asked

    def upstream() -> None:
        assert child.stdin is not None
        for line in iter(sys.stdin.buffer.readline, b""):
            try:
                message = json.loads(line)
                if isinstance(message, dict) and message.get("method") == "tools/list":
                    list_ids[message.get("id")] = _since_spawn_ms(child.pid)
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
            asked = list_ids.pop(answer_id)
            record = {
                "tools_list_answered_ms": round(_since_spawn_ms(), 1),  # since the host spawned this proxy
                "server_answered_ms": round(_since_spawn_ms(child.pid), 1),  # since the proxy spawned the server
                "server_asked_ms": round(asked, 1),  # when the host's tools/list reached the server
            }
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
    child.wait()


if __name__ == "__main__":
    main()
