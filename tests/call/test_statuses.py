#!/usr/bin/env python3
"""Every one of the 12 result statuses reached by a real `govex call`, with its exit
status, termination and diagnostic code; the main ones on both backends (strict:
restricted sandbox, trusted: plain controlled backend).  Prints TAP."""
import os
import signal
import time

import calltest as C
from calltest import check, eq

S = C.Suite()


def both(name):
    """Registers FN(t, backend) once per backend."""
    def deco(fn):
        for b in C.BACKENDS:
            S.add("%s [%s]" % (name, b), (lambda b: lambda t: fn(t, b))(b))
        return fn
    return deco


@both("success: value in the result, exit 0")
def _success(t, b):
    m = C.module(t, "m.py", """
        def add(a: int, b: int):
            return {"sum": a + b, "args": [a, b]}
        """)
    r = C.call(t, m + ":add", {"a": 2, "b": 40}, opts=["--preset", b])
    doc = C.check_result(t, r, "success")
    eq(doc["value"], {"sum": 42, "args": [2, 40]}, "value")
    eq(doc["termination"], "exited", "termination")
    eq(doc["exit_code"], 0, "exit_code")
    eq(doc["diagnostics"], [], "diagnostics")
    check(C.gt.DIGEST_RE.match(doc["plan_digest"] or ""), "plan_digest")
    check(C.gt.DIGEST_RE.match(doc["policy_digest"] or ""), "policy_digest")
    eq(doc["backend"]["name"], {"strict": "restricted", "trusted": "controlled"}[b],
       "backend")


@both("execution_failed: the function raises")
def _execution_failed(t, b):
    m = C.module(t, "m.py", """
        class Oops(Exception):
            pass
        def f():
            raise Oops("no")
        """)
    doc = C.check_result(t, C.call(t, m + ":f", opts=["--preset", b]), "execution_failed",
                         "exception", rc=1)
    eq(C.diag(doc, "exception").get("exception_type"), "Oops", "exception_type")


@both("timeout: a sleeping function, --timeout-ms 500, exit 124")
def _timeout(t, b):
    m = C.module(t, "m.py", """
        import time
        def f():
            time.sleep(30)
            return 1
        """)
    r = C.call(t, m + ":f", opts=["--preset", b], timeout_ms=500)
    doc = C.check_result(t, r, "timeout", rc=124)
    eq(doc["termination"], "timeout", "termination")
    check(r.wall < 4.0, "a 500 ms deadline took %.2f s" % r.wall)


@both("cancelled: SIGTERM to govex during a long call")
def _cancelled(t, b):
    d = C.shared_dir(t)
    marker = os.path.join(d, "started")
    m = C.module(t, "m.py", """
        import time
        def f(marker: str):
            with open(marker, "w") as fh:
                fh.write("x")
            time.sleep(30)
            return 1
        """)
    sent = []

    def during(popen):
        if C.gt.wait_for_file(marker, 10.0, popen=popen) is None:
            return
        sent.append(time.monotonic())
        os.kill(popen.pid, signal.SIGTERM)

    r = C.call(t, m + ":f", {"marker": marker}, opts=C.backend_args(t, b, writable=d),
               during=during)
    check(sent, "the function never started (no marker)\n" + r.describe())
    doc = C.check_result(t, r, "cancelled", "cancelled", rc=128 + signal.SIGTERM)
    eq(doc["termination"], "cancelled", "termination")
    check(r.wall < 10.0, "cancel took too long: %.2f s" % r.wall)


@S.test("resource_limit: CPU-bound function under limits.cpu_ms 300 [strict]")
def _resource_limit(t):
    m = C.module(t, "m.py", """
        def spin():
            n = 0
            while True:
                n += 1
        """)
    r = C.call(t, m + ":spin", opts=C.backend_args(t, "strict", limits={"cpu_ms": 300}))
    doc = C.check_result(t, r, "resource_limit")
    eq(doc["termination"], "cpu_limit", "termination")
    eq(doc["backend"]["name"], "restricted", "backend")


@S.test("resource_limit [trusted]: limits.cpu_ms needs cpu_time_aggregate, which the "
        "controlled backend does not claim: refused, nothing runs")
def _resource_limit_controlled(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    m = C.module(t, "m.py", """
        def spin(marker: str):
            open(marker, "w").close()
            while True:
                pass
        """)
    opts = C.backend_args(t, "trusted", limits={"cpu_ms": 300}, backend="controlled")
    doc = C.check_result(t, C.call(t, m + ":spin", {"marker": marker}, opts=opts),
                         "policy_refused", "missing_controls", rc=125)
    check("cpu_time_aggregate" in C.diag(doc, "missing_controls").get("controls", []),
          "missing_controls names cpu_time_aggregate: %r" % doc["diagnostics"])
    check(not os.path.exists(marker), "the function ran")


@both("output_limit: a 2 MiB result over the default 1 MiB call_output_bytes")
def _output_limit(t, b):
    m = C.module(t, "m.py", """
        def big():
            return "x" * (2 << 20)
        """)
    C.check_result(t, C.call(t, m + ":big", opts=["--preset", b]), "output_limit", rc=1)


@both("invalid_input: a missing required argument")
def _invalid_input(t, b):
    m = C.module(t, "m.py", """
        def f(a):
            return a
        """)
    doc = C.check_result(t, C.call(t, m + ":f", {}, opts=["--preset", b]), "invalid_input",
                         "missing_argument", rc=125)
    eq(doc["termination"], "refused", "termination")


@both("policy_refused: effects.require_known network, network effect unknown")
def _policy_refused(t, b):
    m = C.module(t, "m.py", """
        def f():
            return mystery_function()
        """)
    opts = C.backend_args(t, b, effects={"require_known": ["network"]})
    doc = C.check_result(t, C.call(t, m + ":f", opts=opts), "policy_refused",
                         "unknown_required_effect", rc=125)
    eq(C.diag(doc, "unknown_required_effect").get("effects"), ["network"], "effects")


@both("worker_failed: os._exit(0) inside the function")
def _worker_failed(t, b):
    m = C.module(t, "m.py", """
        import os
        def f():
            os._exit(0)
        """)
    doc = C.check_result(t, C.call(t, m + ":f", opts=["--preset", b]), "worker_failed",
                         "worker_failed", rc=1)
    eq(doc["termination"], "exited", "termination")


@both("binding_failed: a decorator replaces the function with another signature")
def _binding_failed(t, b):
    m = C.module(t, "m.py", """
        def widen(fn):
            return lambda a, b: 0
        @widen
        def f(a):
            return a
        """)
    C.check_result(t, C.call(t, m + ":f", {"a": 1}, opts=["--preset", b]), "binding_failed",
                   "signature_mismatch", rc=125)


@both("result_invalid: a set is not JSON")
def _result_invalid(t, b):
    m = C.module(t, "m.py", """
        def f():
            return {1, 2}
        """)
    C.check_result(t, C.call(t, m + ":f", opts=["--preset", b]), "result_invalid", rc=1)


@both("source_mismatch: one changed byte after planning")
def _source_mismatch(t, b):
    m = C.module(t, "m.py", """
        def f():
            return 1
        """)
    r, p = C.plan(t, m + ":f", opts=["--preset", b])
    r.expect_rc(0)
    with open(m, "a") as fh:
        fh.write("#")
    doc = C.check_result(t, C.call(t, None, plan=p, opts=["--preset", b]), "source_mismatch",
                         "source_mismatch", rc=125)
    eq(doc["plan_digest"], None, "plan_digest of a source mismatch")


if __name__ == "__main__":
    raise SystemExit(S.main())
