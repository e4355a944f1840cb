#!/usr/bin/env python3
"""Basic runs: success, exit-code passthrough, tracebacks, code from stdin."""
import os
import sys

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def test_success_json(t):
    g.need_python()
    r = t.run(["run", "--preset", "trusted", "--json", "-c", "print(6*7)"])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["termination"], "exited", "termination")
    g.eq(doc["exit_code"], 0, "exit_code")
    g.eq(doc["signal"], None, "signal")
    g.eq(doc["stdout"], "42\n", "stdout")
    g.eq(doc["stderr"], "", "stderr")
    g.eq(doc["stdout_bytes"], 3, "stdout_bytes")
    g.eq(doc["stderr_bytes"], 0, "stderr_bytes")
    g.eq(doc["stdout_truncated"], False, "stdout_truncated")
    g.eq(doc["stderr_truncated"], False, "stderr_truncated")
    g.eq(doc["backend"]["name"], "controlled", "backend.name")
    g.eq(doc["backend"]["version"], "govex.controlled/v1", "backend.version")
    g.check(isinstance(doc["backend"]["controls"], list), "backend.controls is not a list")
    for k in ("policy_digest", "plan_digest"):
        g.check(isinstance(doc[k], str) and g.DIGEST_RE.match(doc[k]),
                "%s is not sha256:<64 hex>: %r" % (k, doc[k]))
    u = doc["usage"]
    for k in ("wall_ms", "cpu_ms", "max_rss_bytes"):
        g.check(isinstance(u.get(k), int) and u[k] >= 0, "usage.%s: %r" % (k, u.get(k)))


def test_success_plain(t):
    g.need_python()
    r = t.run(["run", "--preset", "trusted", "-c", "print(6*7)"])
    r.expect_rc(0)
    g.eq(r.stdout, b"42\n", "stdout without --json")


def test_code_from_stdin(t):
    g.need_python()
    r = t.run(["run", "--preset", "trusted", "--json", "-"], input=b"print(6*7)\n")
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "42\n", "stdout")


def test_code_from_file(t):
    g.need_python()
    src = t.write("prog.py", "import sys\nprint(sys.argv[0] != '', 6*7)\n")
    r = t.run(["run", "--preset", "trusted", "--json", src])
    r.expect_rc(0)
    doc = r.result()
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"], "True 42\n", "stdout")


def test_exit_code_passthrough(t):
    g.need_python()
    code = "import sys; sys.exit(7)"
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(7)
    doc = r.result()
    g.eq(doc["status"], "execution_failed", "status")
    g.eq(doc["termination"], "exited", "termination")
    g.eq(doc["exit_code"], 7, "exit_code")
    r = t.run(["run", "--preset", "trusted", "-c", code])
    r.expect_rc(7)


def test_signal_death(t):
    g.need_python()
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(128 + 9)
    doc = r.result()
    g.eq(doc["status"], "execution_failed", "status")
    g.eq(doc["termination"], "signaled", "termination")
    g.eq(doc["signal"], 9, "signal")
    g.eq(doc["exit_code"], None, "exit_code")


def test_traceback_on_stderr(t):
    g.need_python()
    code = 'raise ValueError("boom")'
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(1)
    doc = r.result()
    g.eq(doc["status"], "execution_failed", "status")
    g.eq(doc["exit_code"], 1, "exit_code")
    g.check("ValueError: boom" in doc["stderr"], "stderr lacks the traceback: %r" % doc["stderr"])
    g.eq(doc["stdout"], "", "stdout")
    r = t.run(["run", "--preset", "trusted", "-c", code])
    r.expect_rc(1)
    g.check(b"ValueError: boom" in r.stderr, "govex stderr lacks the traceback: %r" % r.stderr)
    g.eq(r.stdout, b"", "stdout without --json")


TESTS = [
    ("print(6*7) --json: success, 42, digests, controlled backend", test_success_json),
    ("print(6*7) without --json: stdout 42, exit 0", test_success_plain),
    ("code from stdin (-)", test_code_from_stdin),
    ("code from FILE", test_code_from_file),
    ("sys.exit(7) passes through as exit 7, execution_failed", test_exit_code_passthrough),
    ("snippet killed by SIGKILL: exit 137, signaled, signal 9", test_signal_death),
    ("raise ValueError: exit 1, traceback on stderr", test_traceback_on_stderr),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
