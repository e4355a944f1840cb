#!/usr/bin/env python3
"""Aggregate limits of the whole run (a cgroup): fork bombs, memory bombs and CPU
burners across processes are contained, quickly."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

FORK_BOMB = ("import os\n"
             "while True:\n"
             "    try:\n"
             "        os.fork()\n"
             "    except OSError:\n"
             "        pass\n")

COUNT_FORKS = ("import os, time, errno\n"
               "n = 0\n"
               "try:\n"
               "    while n < 1000:\n"
               "        if os.fork() == 0:\n"
               "            time.sleep(30); os._exit(0)\n"
               "        n += 1\n"
               "    print('FORKS', n, 'none')\n"
               "except OSError as ex:\n"
               "    print('FORKS', n, errno.errorcode[ex.errno])\n")

MEMORY_BOMB = ("import os, time\n"
               "kids = []\n"
               "for i in range(4):\n"
               "    pid = os.fork()\n"
               "    if pid == 0:\n"
               "        b = b'x' * (80 << 20)\n"      # touched: charged to the cgroup
               "        time.sleep(1); os._exit(0)\n"
               "    kids.append(pid)\n"
               "for pid in kids:\n"
               "    os.waitpid(pid, 0)\n")

CPU_BURN = ("import os\n"
            "for i in range(3):\n"
            "    if os.fork() == 0:\n"
            "        while True: pass\n"
            "while True: pass\n")


def _pol(t, **limits):
    return e.policy(t, subprocess="allow", limits=limits)


def test_pids_limit(t):
    e.need_restricted("pids_aggregate")
    r = t.run(["run", "--policy", _pol(t, processes=16), "--json", "-c", COUNT_FORKS])
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    out = doc["stdout"].split()
    g.check(out[:1] == ["FORKS"], "output: %r" % doc["stdout"])
    g.check(int(out[1]) < 16, "forked %s processes under a limit of 16" % out[1])
    g.eq(out[2], "EAGAIN", "errno of the fork past the limit")


def test_fork_bomb(t):
    e.need_restricted("pids_aggregate")
    t0 = time.monotonic()
    r = t.run(["run", "--policy", _pol(t, processes=32, wall_ms=2000), "--json",
               "-c", FORK_BOMB])
    took = time.monotonic() - t0
    doc = r.result()
    g.eq(doc["termination"], "timeout", "termination")
    g.check(took < 6.0, "a fork bomb with a 2 s deadline took %.1f s" % took)
    g.eq(e.leftover_run_cgroups(), [], "run cgroups left behind")


def test_memory_bomb(t):
    e.need_restricted("memory_aggregate")
    t0 = time.monotonic()
    r = t.run(["run", "--policy", _pol(t, memory_bytes=160 << 20), "--json",
               "-c", MEMORY_BOMB])
    took = time.monotonic() - t0
    doc = r.result()
    g.eq(doc["termination"], "memory_limit", "termination")
    g.eq(doc["status"], "resource_limit", "status")
    g.check(took < 5.0, "memory bomb took %.1f s" % took)
    g.check(doc["usage"]["max_rss_bytes"] <= (160 << 20) + (4 << 20),
            "peak memory %d above the limit" % doc["usage"]["max_rss_bytes"])


def test_cpu_across_processes(t):
    e.need_restricted("cpu_time_aggregate")
    t0 = time.monotonic()
    r = t.run(["run", "--policy", _pol(t, cpu_ms=1000, wall_ms=10000), "--json",
               "-c", CPU_BURN])
    took = time.monotonic() - t0
    doc = r.result()
    g.eq(doc["termination"], "cpu_limit", "termination")
    g.eq(doc["status"], "resource_limit", "status")
    g.check(doc["usage"]["cpu_ms"] >= 1000, "cpu_ms %r" % doc["usage"]["cpu_ms"])
    g.check(took < 5.0, "4 processes burning a 1 s budget took %.1f s" % took)


if __name__ == "__main__":
    sys.exit(g.main([
        ("the process count is bounded for the whole run", test_pids_limit),
        ("a fork bomb is contained and cleaned up", test_fork_bomb),
        ("a memory bomb across processes is an OOM of the run", test_memory_bomb),
        ("CPU time is bounded across processes", test_cpu_across_processes),
    ]))
