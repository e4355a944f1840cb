#!/usr/bin/env python3
"""--stdin FILE feeds the snippet; unread stdin never deadlocks govex."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def test_stdin_file(t):
    g.need_python()
    inp = t.write("in.txt", "hello\n")
    code = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    r = t.run(["run", "--preset", "trusted", "--json", "--stdin", inp, "-c", code])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "HELLO\n", "stdout")
    r = t.run(["run", "--preset", "trusted", "--stdin", inp, "-c", code])
    r.expect_rc(0)
    g.eq(r.stdout, b"HELLO\n", "stdout without --json")


def test_large_stdin_read(t):
    g.need_python()
    size = 2 << 20
    inp = t.write("big.bin", b"y" * size)
    path = t.policy(limits={"stdin_bytes": 4 << 20})
    code = "import sys; print(len(sys.stdin.buffer.read()))"
    r = t.run(["run", "--policy", path, "--json", "--stdin", inp, "-c", code])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "%d\n" % size, "stdout")


def test_large_stdin_unread(t):
    g.need_python()
    inp = t.write("big.bin", b"z" * (2 << 20))
    path = t.policy(limits={"stdin_bytes": 4 << 20})
    r = t.run(["run", "--policy", path, "--json", "--stdin", inp, "-c", "print('done')"],
              timeout=20)
    g.check(not r.hard_timeout, "govex deadlocked on unread stdin\n" + r.describe())
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "done\n", "stdout")
    g.check(r.wall < 4.0, "unread stdin took %.1f s (deadline wait?)" % r.wall)


def test_no_stdin_is_empty(t):
    g.need_python()
    code = "import sys; print(repr(sys.stdin.read()))"
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code], input=b"govex's own stdin\n")
    r.expect_rc(0)
    g.eq(r.result()["stdout"], "''\n", "stdout (the snippet's stdin without --stdin)")


TESTS = [
    ("without --stdin the snippet's stdin is empty, not govex's", test_no_stdin_is_empty),
    ("--stdin FILE 'hello\\n' is read by the snippet", test_stdin_file),
    ("2 MiB stdin (stdin_bytes raised) is read completely", test_large_stdin_read),
    ("2 MiB stdin never read: no deadlock, success", test_large_stdin_unread),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
