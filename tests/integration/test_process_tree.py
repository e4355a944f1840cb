#!/usr/bin/env python3
"""No descendant outlives the run, not even one that left the session."""
import os
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

# The snippet forks; the child calls setsid() and forks again; the grandchild
# writes its pid and sleeps.  The snippet waits (bounded) until the pid is on
# disk so the test knows whom to look for, then does TAIL.
ESCAPE = r'''
import os, sys, time
pidfile = %(pidfile)r
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
for _ in range(500):
    if os.path.exists(pidfile):
        break
    time.sleep(0.01)
%(tail)s
'''


def _escape_run(t, tail, extra):
    g.need_python()
    pidfile = t.path("grandchild.pid")
    code = ESCAPE % {"pidfile": pidfile, "tail": tail}
    r = t.run(["run", "--preset", "trusted", "--json"] + extra + ["-c", code])
    try:
        gpid = g.read_pid(pidfile)
    except g.Failure:
        raise g.Failure("the grandchild never wrote its pid\n" + r.describe())
    t.kill_later(gpid)          # never leave it behind, whatever govex did
    alive_after = not g.wait_dead(gpid, grace=0.3)
    g.check(not alive_after, "grandchild %d (setsid + double fork) survived the run: state %r"
            % (gpid, g.proc_state(gpid)))
    g.check(not r.pipes_held_open, "govex's stdout/stderr were still held open after it exited")
    return r


def test_grandchild_after_exit(t):
    t0 = time.monotonic()
    r = _escape_run(t, "sys.exit(0)", ["--timeout-ms", "5000"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["exit_code"], 0, "exit_code")
    g.check(time.monotonic() - t0 < 5.0,
            "govex waited %.1f s for a detached grandchild" % (time.monotonic() - t0))


def test_grandchild_after_timeout(t):
    r = _escape_run(t, "time.sleep(60)", ["--timeout-ms", "1000"])
    r.expect_rc(g.EXIT_TIMEOUT)
    doc = r.result()
    g.eq(doc["status"], "timeout", "status")
    g.eq(doc["termination"], "timeout", "termination")
    g.check(r.wall < 5.0, "timeout of 1 s took %.1f s" % r.wall)


def test_plain_child_group(t):
    """An ordinary child (same group) that outlives the snippet is gone too."""
    g.need_python()
    pidfile = t.path("child.pid")
    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    open(%r, 'w').write(str(os.getpid())); time.sleep(60); os._exit(0)\n"
            "for _ in range(500):\n"
            "    if os.path.exists(%r): break\n"
            "    time.sleep(0.01)\n") % (pidfile, pidfile)
    r = t.run(["run", "--preset", "trusted", "--json", "--timeout-ms", "5000", "-c", code])
    try:
        cpid = g.read_pid(pidfile)
    except g.Failure:
        raise g.Failure("the child never wrote its pid\n" + r.describe())
    t.kill_later(cpid)
    g.check(g.wait_dead(cpid, grace=0.3), "child %d survived the run" % cpid)
    r.expect_rc(0)
    g.eq(r.result()["status"], "success", "status")


TESTS = [
    ("setsid double-fork grandchild killed after the snippet exits", test_grandchild_after_exit),
    ("setsid double-fork grandchild killed when the snippet times out",
     test_grandchild_after_timeout),
    ("forked child in the same group killed after the snippet exits", test_plain_child_group),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
