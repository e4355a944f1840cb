#!/usr/bin/env python3
"""The wall-clock deadline is accurate: never early, and not much late."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

LOW, HIGH = 0.300, 0.450


def test_timeout_accuracy(t):
    g.need_python()
    walls = []
    for _ in range(3):
        r = t.run(["run", "--preset", "trusted", "--json", "--timeout-ms", "300",
                   "-c", "while True: pass"])
        r.expect_rc(g.EXIT_TIMEOUT)
        doc = r.result()
        g.eq(doc["status"], "timeout", "status")
        g.eq(doc["termination"], "timeout", "termination")
        g.eq(doc["exit_code"], None, "exit_code")
        g.check(doc["usage"]["wall_ms"] >= 300, "usage.wall_ms < 300: %r" % doc["usage"])
        g.check(r.wall >= LOW, "govex returned after %.3f s, before the 300 ms deadline" % r.wall)
        walls.append(r.wall)
    best = min(walls)
    g.check(best <= HIGH, "best of 3 wall times %.3f s exceeds %.3f s (all: %s)"
            % (best, HIGH, ", ".join("%.3f" % w for w in walls)))


def test_timeout_plain_exit(t):
    g.need_python()
    r = t.run(["run", "--preset", "trusted", "--timeout-ms", "200",
               "-c", "import time; time.sleep(20)"])
    r.expect_rc(g.EXIT_TIMEOUT)
    g.check(r.wall < 5.0, "took %.3f s" % r.wall)


TESTS = [
    ("while True with --timeout-ms 300: timeout, exit 124, 300..450 ms", test_timeout_accuracy),
    ("sleep past --timeout-ms 200 without --json: exit 124", test_timeout_plain_exit),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
