#!/usr/bin/env python3
"""A request may ask for less than the policy, never more; bounds are exact."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def _refused(t, r, field, marker=None):
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "invalid_input", "status")
    g.eq(doc["termination"], "refused", "termination")
    msgs = " | ".join(d.get("message", "") for d in doc["diagnostics"])
    g.check(field in msgs, "no diagnostic names %r: %r" % (field, doc["diagnostics"]))
    if marker:
        g.check(not os.path.exists(marker), "the refused snippet ran")


def test_timeout_above_policy(t):
    g.need_python()
    marker = t.path("ran.marker")
    code = "open(%r, 'w').write('x')" % marker
    g.eq(g.preset("trusted")["limits"]["wall_ms"], 5000, "trusted limits.wall_ms")
    r = t.run(["run", "--preset", "trusted", "--json", "--timeout-ms", "5001", "-c", code])
    _refused(t, r, "wall_ms", marker)
    r = t.run(["run", "--preset", "trusted", "--json", "--timeout-ms", "5000", "-c", code])
    r.expect_rc(0)
    g.check(os.path.exists(marker), "--timeout-ms equal to the policy's wall_ms did not run")


def test_code_bytes_boundary(t):
    g.need_python()
    path = t.policy(limits={"code_bytes": 100})
    ok = "#" * 95 + "\npass"               # exactly 100 bytes
    g.eq(len(ok.encode()), 100, "test code size")
    r = t.run(["run", "--policy", path, "--json", "-c", ok])
    r.expect_rc(0)
    g.eq(r.result()["status"], "success", "status at exactly code_bytes")
    r = t.run(["run", "--policy", path, "--json", "-c", "#" + ok])
    _refused(t, r, "code_bytes")


def test_stdin_bytes_boundary(t):
    g.need_python()
    path = t.policy(limits={"stdin_bytes": 10})
    code = "import sys; print(len(sys.stdin.buffer.read()))"
    r = t.run(["run", "--policy", path, "--json", "--stdin", t.write("ten", b"0123456789"),
               "-c", code])
    r.expect_rc(0)
    g.eq(r.result()["stdout"], "10\n", "stdout at exactly stdin_bytes")
    r = t.run(["run", "--policy", path, "--json", "--stdin", t.write("eleven", b"0123456789a"),
               "-c", code])
    _refused(t, r, "stdin_bytes")


TESTS = [
    ("--timeout-ms above the policy's wall_ms is invalid_input; equal runs",
     test_timeout_above_policy),
    ("code of exactly limits.code_bytes runs, one byte more is refused", test_code_bytes_boundary),
    ("stdin of exactly limits.stdin_bytes runs, one byte more is refused",
     test_stdin_bytes_boundary),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
