#!/usr/bin/env python3
"""When a run ends (exit, timeout, cancel) nothing of it survives: no process, no
cgroup, no mount, no temp directory; and a program that closes its output cannot hold
the deadline off."""
import os
import re
import signal
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

DAEMON = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None)
marker, flag = %(marker)r, %(flag)r
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        libc.prctl(15, ctypes.c_char_p(marker.encode()), 0, 0, 0)
        open(flag, "w").write("up")
        time.sleep(60)
    os._exit(0)
for _ in range(500):
    if os.path.exists(flag):
        break
    time.sleep(0.01)
print("daemon up" if os.path.exists(flag) else "daemon missing")
'''

SLEEPER = r'''
import ctypes, os, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%(marker)r.encode()), 0, 0, 0)
open(%(flag)r, "w").write("up")
time.sleep(60)
'''


def _marker():
    return "gvx" + uuid.uuid4().hex[:11]     # comm holds 15 bytes


def _state():
    # the slots' empty network namespaces (/run/govex/netns-N, nsfs mounts, one per slot
    # ever used on this host) are made by a slot's first network: deny run and kept: any
    # concurrent run of the suite may add one; every other mount counts
    with open("/proc/self/mountinfo") as f:
        mounts = "".join(l for l in f
                         if not re.match(r"/run/govex/netns-[0-9]+$", l.split()[4]))
    return {"mounts": mounts}


def _setup(t):
    # One run first (as before the slots' network namespaces were left out of _state)
    r = t.run(["run", "--policy", e.policy(t, name="first.json"), "--json", "-c", "pass"])
    g.eq(r.result()["status"], "success", "first run\n" + r.describe())
    rw = t.path("rw")
    os.mkdir(rw)
    os.chmod(rw, 0o777)
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    os.chmod(tmpdir, 0o777)
    return rw, tmpdir


def _check_clean(t, before, marker, tmpdir):
    g.eq(e.procs_with_comm(marker), [], "processes of the run still alive")
    after = _state()
    g.eq(e.leftover_run_cgroups(), [], "cgroups of the run left behind")
    g.check(after["mounts"] == before["mounts"], "the host's mount table changed")
    g.eq(os.listdir(tmpdir), [], "temp dirs left in TMPDIR")


def test_daemon_dies_with_run(t):
    e.need_restricted("process_tree_kill")
    rw, tmpdir = _setup(t)
    marker = _marker()
    before = _state()
    pol = e.policy(t, subprocess="allow", filesystem={"write": [rw]})
    code = DAEMON % {"marker": marker, "flag": os.path.join(rw, "flag")}
    r = t.run(["run", "--policy", pol, "--json", "-c", code], extra_env={"TMPDIR": tmpdir})
    doc = r.result()
    g.eq(doc["stdout"], "daemon up\n", "stdout")
    g.eq(doc["status"], "success", "status")
    _check_clean(t, before, marker, tmpdir)


def test_closed_output_then_sleep(t):
    e.need_restricted("wall_time")
    t0 = time.monotonic()
    r = t.run(["run", "--policy", e.policy(t, limits={"wall_ms": 1000}), "--json", "-c",
               "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)\n"])
    took = time.monotonic() - t0
    doc = r.result()
    g.eq(doc["termination"], "timeout", "termination")
    g.check(took < 4.0, "a 1 s deadline took %.1f s with stdout closed" % took)


def test_nothing_left_after_timeout(t):
    e.need_restricted("process_tree_kill")
    rw, tmpdir = _setup(t)
    marker = _marker()
    before = _state()
    pol = e.policy(t, filesystem={"write": [rw]}, limits={"wall_ms": 1500})
    code = SLEEPER % {"marker": marker, "flag": os.path.join(rw, "flag")}
    r = t.run(["run", "--policy", pol, "--json", "-c", code], extra_env={"TMPDIR": tmpdir})
    doc = r.result()
    g.eq(doc["termination"], "timeout", "termination")
    g.check(os.path.exists(os.path.join(rw, "flag")), "the snippet never started")
    _check_clean(t, before, marker, tmpdir)


def test_nothing_left_after_cancel(t):
    e.need_restricted("process_tree_kill")
    rw, tmpdir = _setup(t)
    marker = _marker()
    flag = os.path.join(rw, "flag")
    before = _state()
    seen = {}

    def during(p):
        if g.wait_for_file(flag, 10.0, popen=p) is not None:
            seen["alive"] = e.procs_with_comm(marker)
            os.kill(p.pid, signal.SIGTERM)

    pol = e.policy(t, filesystem={"write": [rw]}, limits={"wall_ms": 20000})
    code = SLEEPER % {"marker": marker, "flag": flag}
    r = t.run(["run", "--policy", pol, "--json", "-c", code], extra_env={"TMPDIR": tmpdir},
              during=during)
    g.check(seen.get("alive"), "the snippet was not seen running: %r" % seen)
    doc = r.result()
    g.eq(doc["termination"], "cancelled", "termination")
    _check_clean(t, before, marker, tmpdir)


FORKER = r'''
import ctypes, os, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%(marker)r.encode()), 0, 0, 0)
for _ in range(3):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
%(tail)s
'''


def test_nothing_left_after_ten_runs(t):
    # ten runs that end every way (exit, error, timeout, signal, memory limit), with
    # children still running and cgroups made (subprocesses allowed): afterwards no
    # process, cgroup, mount or temp dir of theirs is left
    e.need_restricted("pids_aggregate")
    rw, tmpdir = _setup(t)
    marker = _marker()
    before = _state()
    pol = e.policy(t, filesystem={"write": [rw]}, subprocess="allow",
                   limits={"wall_ms": 1500, "memory_bytes": 256 << 20, "processes": 32,
                           "cpu_ms": 5000})
    tails = ["print('done')", "raise SystemExit(3)", "time.sleep(30)",
             "os.kill(os.getpid(), 9)", "b = bytearray(1 << 30)"]
    ends = []
    for i in range(10):
        code = FORKER % {"marker": marker, "tail": tails[i % len(tails)]}
        r = t.run(["run", "--policy", pol, "--json", "-c", code],
                  extra_env={"TMPDIR": tmpdir})
        ends.append(r.result()["termination"])
    g.check({"exited", "timeout", "signaled"} <= set(ends), "run endings: %r" % ends)
    _check_clean(t, before, marker, tmpdir)


if __name__ == "__main__":
    sys.exit(g.main([
        ("nothing is left after ten runs that end every way", test_nothing_left_after_ten_runs),
        ("a setsid + double-fork daemon does not survive", test_daemon_dies_with_run),
        ("closing stdout/stderr does not hold the deadline off", test_closed_output_then_sleep),
        ("nothing is left after a timeout", test_nothing_left_after_timeout),
        ("nothing is left after a cancel", test_nothing_left_after_cancel),
    ]))
