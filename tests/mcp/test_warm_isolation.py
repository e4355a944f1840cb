#!/usr/bin/env python3
"""Concurrent warm runs of one `govex mcp` (one runtime, one template) are kept apart
(DESIGN "Trust boundaries": runs cannot see or touch each other): under network: deny
each has its own network namespace, so one never sees another's unix sockets in
/proc/self/net/unix; and both were really forked from the template (GOVEX_WARM_LOG).
A run's PID 1 (its init, which shares the template's memory) tells it nothing of the
other runs: /proc/1 is hidden, so polling its stat, statm and status sees no change
while other runs of the template start and end (issue 23).
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


POLL = r'''
import time
seen = {}
reads = 0
t_end = time.monotonic() + 2.5
while time.monotonic() < t_end:
    for f in ("stat", "statm", "status"):
        try:
            with open("/proc/1/" + f) as fh:
                v = fh.read()
            if f == "stat":     # its own clock ticks aside
                v = " ".join(v.split()[:13] + v.split()[17:21] + v.split()[22:24])
        except OSError as x:
            v = "errno %d" % x.errno
        seen.setdefault(f, [])
        if v not in seen[f]:
            seen[f].append(v)
        reads += 1
    time.sleep(0.0005)
{"seen": seen, "reads": reads}
'''
# the other clients' runs: each holds some memory for a moment
OTHER = "import time\nx = bytearray(4 << 20)\ntime.sleep(0.2)\nlen(x)\n"


def test_pid1_does_not_watch_other_runs(t):
    s = m.Server(["--preset", "strict", "--max-concurrent", "3"], cwd=t)
    s.initialize("2025-11-25")
    s.call("run_python_snippet", {"code": "1"})  # the template is up
    call = lambda code: s.start("tools/call", {"name": "run_python_snippet",
                                               "arguments": {"code": code}})
    poll = call(POLL)
    time.sleep(0.5)
    others = []
    for _ in range(4):
        others += [call(OTHER), call(OTHER)]
        time.sleep(0.35)
    got, deadline = {}, time.monotonic() + 60
    want = set(others) | {poll}
    while len(got) < len(want) and time.monotonic() < deadline:
        msg = s.recv(max(0.1, deadline - time.monotonic()))
        if msg.get("id") in want:
            got[msg["id"]] = m.result_doc(msg)
    s.close()
    m.eq(sorted(d["status"] for i, d in got.items() if i != poll), ["success"] * 8,
         "the other runs")
    doc = got[poll]
    m.eq(doc["status"], "success", "status of the polling run: %r" % doc)
    seen = doc["value"]["seen"]
    print("# %d reads of /proc/1 while 8 other runs came and went: %r"
          % (doc["value"]["reads"], {k: [x[:60] for x in v] for k, v in seen.items()}))
    changed = {k: len(v) for k, v in seen.items() if len(v) != 1}
    m.eq(changed, {}, "/proc/1 files whose content changed while other runs ran")
    m.eq(seen, {f: ["errno 2"] for f in ("stat", "statm", "status")},
         "/proc/1 of a warm run (hidden: ENOENT)")


if __name__ == "__main__":
    sys.exit(m.main([
        ("concurrent warm runs do not share a network namespace",
         test_concurrent_warm_runs_apart),
        ("a warm run's /proc/1 does not change with other runs",
         test_pid1_does_not_watch_other_runs),
    ]))
