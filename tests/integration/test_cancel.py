#!/usr/bin/env python3
"""SIGTERM/SIGINT to govex cancel the run promptly and leave nothing behind."""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

CODE = ("import os, time\n"
        "with open(%(pf)r + '.tmp', 'w') as f: f.write(str(os.getpid()))\n"
        "os.rename(%(pf)r + '.tmp', %(pf)r)\n"
        "time.sleep(30)\n")


def _cancel(t, sig, json_mode=True):
    g.need_python()
    pidfile = t.path("snippet.pid")
    sent = {}

    def during(p):
        if g.wait_for_file(pidfile, 10.0, popen=p) is not None:
            sent["t"] = time.monotonic()
            os.kill(p.pid, sig)

    # The deadline (20 s) is far beyond the signal; a request may only narrow the
    # policy's wall_ms, so the policy itself allows 20 s.
    args = ["run", "--policy", t.policy(limits={"wall_ms": 20000})]
    if json_mode:
        args.append("--json")
    r = t.run(args + ["-c", CODE % {"pf": pidfile}], during=during)
    done = time.monotonic()
    g.check("t" in sent, "the snippet never started\n" + r.describe())
    spid = g.read_pid(pidfile)
    t.kill_later(spid)
    g.check(g.wait_dead(spid, grace=0.2), "snippet pid %d still alive after cancel" % spid)
    g.check(not r.pipes_held_open, "govex's output pipes held open after it exited")
    r.expect_rc(128 + sig)
    g.check(done - sent["t"] < 2.0, "govex took %.2f s to exit after signal %d"
            % (done - sent["t"], sig))
    return r


def test_sigterm(t):
    r = _cancel(t, signal.SIGTERM)
    doc = r.result()
    g.eq(doc["status"], "cancelled", "status")
    g.eq(doc["termination"], "cancelled", "termination")
    g.eq(doc["exit_code"], None, "exit_code")


def test_sigint(t):
    r = _cancel(t, signal.SIGINT)
    doc = r.result()
    g.eq(doc["status"], "cancelled", "status")
    g.eq(doc["termination"], "cancelled", "termination")


def test_sigterm_plain(t):
    _cancel(t, signal.SIGTERM, json_mode=False)


TESTS = [
    ("SIGTERM during sleep: cancelled, exit 143 within 2 s, snippet gone", test_sigterm),
    ("SIGINT during sleep: cancelled, exit 130 within 2 s, snippet gone", test_sigint),
    ("SIGTERM without --json: exit 143 within 2 s, snippet gone", test_sigterm_plain),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
