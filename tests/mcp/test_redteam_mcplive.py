#!/usr/bin/env python3
"""Round-2 red team RT-A: live output over MCP (contract section 3) must not suspend
the run's controls.

While a tools/call runs, its output goes to the client as notifications/message.  A
client that stops reading its stdout (stalled, slow, or hostile) fills the pipe; the
server then blocks writing notifications.  The run's wall time must still be enforced:
the run's process is gone shortly after its wall limit, whatever the client does.
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import mcptest as m  # noqa: E402

CODE = ("import ctypes, time\nctypes.CDLL(None).prctl(15, b'rta-mcpstall', 0, 0, 0)\n"
        "for i in range(3000):\n    print('z' * 60, flush=True)\ntime.sleep(30)\n")


def _procs(name):
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/comm" % n) as f:
                    if f.read().strip() == name:
                        out.append(int(n))
            except OSError:
                pass
    return out


def test_stalled_client_keeps_wall_time(t):
    """logging/setLevel debug, then a snippet printing 180 KB of lines and sleeping,
    strict's 5 s wall limit; the client reads nothing for 8 s: the run must be gone by
    then (today it lives until the client reads again)."""
    p = subprocess.Popen([m.GOVEX, "mcp", "--preset", "strict"], cwd=t,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)

    def send(o):
        p.stdin.write((json.dumps(o) + "\n").encode())
        p.stdin.flush()
    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "rta", "version": "1"}}})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
              "params": {"level": "debug"}})
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "run_python_snippet", "arguments": {"code": CODE}}})
        time.sleep(8.0)
        seen = _procs("rta-mcpstall")
        p.stdin.close()
        out = p.stdout.read()
        p.wait(timeout=30)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
        for pid in _procs("rta-mcpstall"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    m.check(b"rta-mcpstall" not in out, "unexpected: %r" % out[-200:])
    m.check(not seen, "the run was alive 8 s into a 5 s wall limit while the client did "
            "not read (pids %r): the server blocked writing notifications and the run's "
            "wall time was not enforced" % seen)


if __name__ == "__main__":
    sys.exit(m.main([
        ("a client that stops reading never suspends the wall time",
         test_stalled_client_keeps_wall_time),
    ]))
