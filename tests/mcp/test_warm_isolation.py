#!/usr/bin/env python3
"""Concurrent warm runs of one `govex mcp` (one runtime, one template) are kept apart
(DESIGN "Trust boundaries": runs cannot see or touch each other): under network: deny
each has its own network namespace, so one never sees another's unix sockets in
/proc/self/net/unix; and both were really forked from the template (GOVEX_WARM_LOG).
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import mcptest as m  # noqa: E402

PROBE = r'''
import os
with open("/proc/self/net/unix") as f:
    inodes = [int(l.split()[6]) for l in f.read().splitlines()[1:]]
{"ns": os.readlink("/proc/self/ns/net"), "inodes": inodes}
'''
HOLD = r'''
import os, socket, time
pairs = [socket.socketpair() for _ in range(5)]
mine = [os.fstat(s.fileno()).st_ino for p in pairs for s in p]
time.sleep(3)
{"ns": os.readlink("/proc/self/ns/net"), "inodes": mine}
'''


def test_concurrent_warm_runs_apart(t):
    log = os.path.join(t, "warm.log")
    env = dict(os.environ, GOVEX_WARM_LOG=log)
    env.pop("GOVEX_WARM", None)
    s = m.Server(["--preset", "strict", "--max-concurrent", "2"], cwd=t, env=env)
    s.initialize("2025-11-25")
    s.call("run_python_snippet", {"code": "1"})  # the template is up
    call = lambda code: s.start("tools/call", {"name": "run_python_snippet",
                                               "arguments": {"code": code}})
    ids = {call(HOLD): "hold"}
    time.sleep(1.5)
    ids[call(PROBE)] = "probe"
    got, deadline = {}, time.monotonic() + 60
    while len(got) < 2:
        msg = s.recv(max(0.1, deadline - time.monotonic()))
        if msg.get("id") in ids:
            got[ids[msg["id"]]] = m.result_doc(msg)
    s.close()
    hold_doc, probe = got["hold"], got["probe"]
    m.eq(hold_doc["status"], "success", "status of the run holding sockets")
    m.eq(probe["status"], "success", "status of the probe")
    m.check(probe["value"]["ns"] != hold_doc["value"]["ns"],
            "two concurrent warm runs share a network namespace: %r" % probe["value"]["ns"])
    seen = set(probe["value"]["inodes"]) & set(hold_doc["value"]["inodes"])
    m.eq(sorted(seen), [], "the other warm run's sockets listed in /proc/self/net/unix")
    m.eq(len(hold_doc["value"]["inodes"]), 10, "sockets the holding run made")
    with open(log) as f:
        lines = [l.split()[0] for l in f if l.strip()]
    m.eq(lines.count("warm"), 3, "warm runs in GOVEX_WARM_LOG (%r)" % lines)


if __name__ == "__main__":
    sys.exit(m.main([
        ("concurrent warm runs do not share a network namespace",
         test_concurrent_warm_runs_apart),
    ]))
