#!/usr/bin/env python3
"""Call mode when the function misbehaves: deadlines (busy loops, sleeps, a
non-cooperative event loop) with a wall-time bound, cancellation, CPU limits, a worker
that dies (os._exit, segfault, SIGKILL) or corrupts its own response descriptor (bogus
header, truncated frame, non-object, trailing bytes, descriptor closed), bindings that
differ from the inspected source, leftover children.  Each must end promptly with the
right status, never hang.  Prints TAP."""
import os
import signal
import time

import calltest as C
from calltest import check, eq

S = C.Suite()

DEADLINE_MS = 500
# govex's own wall time for a 500 ms deadline: inspection worker + call worker start-up
# (sanitized build, 2 busy cores) + the deadline + the kill; generous but bounded.
DEADLINE_WALL_MAX = 4.0


def expect_deadline(t, r):
    doc = C.check_result(t, r, "timeout", rc=124)
    eq(doc["termination"], "timeout", "termination")
    check(r.wall >= DEADLINE_MS / 1000.0,
          "ended after %.3f s, before the %d ms deadline" % (r.wall, DEADLINE_MS))
    check(r.wall < DEADLINE_WALL_MAX, "a %d ms deadline took %.2f s (bound %.1f s)"
          % (DEADLINE_MS, r.wall, DEADLINE_WALL_MAX))
    w = doc["usage"]["wall_ms"]
    check(isinstance(w, int) and DEADLINE_MS - 50 <= w < DEADLINE_MS + 2000,
          "usage.wall_ms %r for a %d ms deadline" % (w, DEADLINE_MS))
    return doc


TIMEOUT_SRC = """
    import asyncio, time
    def busy():
        n = 0
        while True:
            n += 1
    def sleepy():
        time.sleep(60)
        return 1
    async def hog():
        # never awaits: the event loop cannot cancel it
        while True:
            pass
    async def sleeper():
        await asyncio.sleep(60)
        return 1
    def ignores_signals():
        import signal
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        while True:
            time.sleep(0.01)
    """


@S.both("timeout: busy loop, sleep, non-cooperative async loop, async sleep, "
      "ignored signals (--timeout-ms 500, wall time bounded)")
def _timeouts(t, b):
    m = C.module(t, "m.py", TIMEOUT_SRC)
    for fn in ("busy", "sleepy", "hog", "sleeper", "ignores_signals"):
        try:
            expect_deadline(t, C.call(t, m + ":" + fn, opts=["--preset", b],
                                      timeout_ms=DEADLINE_MS))
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))


@S.test("timeout: without --timeout-ms the policy's wall_ms applies (1000 ms policy)")
def _policy_wall(t):
    m = C.module(t, "m.py", TIMEOUT_SRC)
    r = C.call(t, m + ":sleepy", opts=C.backend_args(t, "strict", limits={"wall_ms": 1000}))
    doc = C.check_result(t, r, "timeout", rc=124)
    check(1.0 <= r.wall < 5.0, "a 1000 ms policy deadline took %.2f s" % r.wall)
    check(950 <= doc["usage"]["wall_ms"] < 3000, "usage.wall_ms %r" % doc["usage"]["wall_ms"])


@S.test("timeout: --timeout-ms above the policy's wall_ms is refused before anything runs")
def _timeout_above_policy(t):
    m = C.module(t, "m.py", TIMEOUT_SRC)
    doc = C.check_result(t, C.call(t, m + ":sleepy", opts=["--preset", "strict"],
                                   timeout_ms=60000),
                         "invalid_input", "limit_exceeds_policy", rc=125)
    eq(doc["termination"], "refused", "termination")


@S.both("cancelled: SIGTERM during a call ends it promptly; the worker is gone")
def _cancel(t, b):
    d = C.shared_dir(t)
    marker = os.path.join(d, "pid")
    m = C.module(t, "m.py", """
        import os, time
        def f(marker: str):
            with open(marker + ".tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.rename(marker + ".tmp", marker)
            time.sleep(60)
            return 1
        """)
    when = []

    def during(popen):
        if C.gt.wait_for_file(marker, 10.0, popen=popen) is None:
            return
        when.append(time.monotonic())
        os.kill(popen.pid, signal.SIGTERM)

    r = C.call(t, m + ":f", {"marker": marker}, opts=C.backend_args(t, b, writable=d),
               during=during)
    check(when, "the function never started\n" + r.describe())
    doc = C.check_result(t, r, "cancelled", "cancelled", rc=128 + signal.SIGTERM)
    eq(doc["termination"], "cancelled", "termination")
    check(not r.pipes_held_open, "something kept govex's stdout/stderr open")
    if b == "trusted":       # the pid is a host pid only outside the PID namespace
        pid = int(open(marker).read())
        check(C.gt.wait_dead(pid, 2.0), "worker pid %d still alive after cancel" % pid)


@S.test("cancelled: SIGINT also cancels (exit 130)")
def _cancel_int(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "started")
    m = C.module(t, "m.py", """
        import time
        def f(marker: str):
            open(marker, "w").write("x")
            time.sleep(60)
        """)

    def during(popen):
        if C.gt.wait_for_file(marker, 10.0, popen=popen) is not None:
            os.kill(popen.pid, signal.SIGINT)

    r = C.call(t, m + ":f", {"marker": marker},
               opts=C.backend_args(t, "strict", writable=d), during=during)
    C.check_result(t, r, "cancelled", "cancelled", rc=128 + signal.SIGINT)


@S.test("resource_limit: a CPU-bound async function under limits.cpu_ms 300")
def _cpu_async(t):
    m = C.module(t, "m.py", """
        async def spin():
            while True:
                pass
        """)
    r = C.call(t, m + ":spin", opts=C.backend_args(t, "strict", limits={"cpu_ms": 300}))
    doc = C.check_result(t, r, "resource_limit")
    eq(doc["termination"], "cpu_limit", "termination")
    check(r.wall < 5.0, "a 300 ms CPU limit took %.2f s of wall time" % r.wall)


DEATH_SRC = C.FIND_RESPONSE_FD + """
import os, signal
def exit0():
    os._exit(0)
def exit3():
    os._exit(3)
def segv():
    import ctypes
    ctypes.string_at(0)
def sigkill():
    os.kill(os.getpid(), signal.SIGKILL)
def sys_exit():
    raise SystemExit(0)
def bogus_header():
    fds = _response_fds()
    for fd in fds:
        os.write(fd, b"\\xff" * 8)
    os._exit(0)
def garbage_then_return():
    for fd in _response_fds():
        os.write(fd, b"garbage!garbage!garbage!")
    return 1
def truncated():
    for fd in _response_fds():
        os.write(fd, (1000).to_bytes(8, "big") + b'{"ok":')
    os._exit(0)
def not_object():
    for fd in _response_fds():
        os.write(fd, (4).to_bytes(8, "big") + b"null")
    os._exit(0)
def bad_status():
    for fd in _response_fds():
        body = b'{"ok":true,"status":"weird","value":1,"version":"govex.frame/v1"}'
        os.write(fd, len(body).to_bytes(8, "big") + body)
    os._exit(0)
def ok_but_failed():
    for fd in _response_fds():
        body = b'{"ok":true,"status":"execution_failed","version":"govex.frame/v1"}'
        os.write(fd, len(body).to_bytes(8, "big") + body)
    os._exit(0)
def extra_frame():
    for fd in _response_fds():
        body = b'{"ok":true,"status":"success","value":1,"version":"govex.frame/v1"}'
        os.write(fd, len(body).to_bytes(8, "big") + body)
    return 2
def close_fd():
    for fd in _response_fds():
        os.close(fd)
    return 3
def found():
    return len(_response_fds())
"""


@S.both("worker_failed: os._exit(0) / os._exit(3) / segfault / SIGKILL inside the function")
def _deaths(t, b):
    m = C.module(t, "m.py", DEATH_SRC)
    cases = (("exit0", "exited", None), ("exit3", "exited", None),
             ("segv", "signaled", signal.SIGSEGV), ("sigkill", "signaled", signal.SIGKILL))
    for fn, term, sig in cases:
        r = C.call(t, m + ":" + fn, opts=["--preset", b])
        try:
            doc = C.check_result(t, r, "worker_failed", "worker_failed")
            eq(doc["termination"], term, "termination")
            if sig is not None:
                eq(doc["signal"], sig, "signal")
                eq(r.returncode, 128 + sig, "exit status")
            else:
                eq(r.returncode, 1, "exit status")
            check(r.wall < 5.0, "took %.2f s" % r.wall)
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))


@S.both("SystemExit raised by the function is an exception of the function, not a dead "
      "worker")
def _system_exit(t, b):
    m = C.module(t, "m.py", DEATH_SRC)
    doc = C.check_result(t, C.call(t, m + ":sys_exit", opts=["--preset", b]),
                         "execution_failed", "exception", rc=1)
    eq(C.diag(doc, "exception").get("exception_type"), "SystemExit", "exception_type")


@S.both("worker_failed without a hang: the function corrupts the response descriptor")
def _frames(t, b):
    m = C.module(t, "m.py", DEATH_SRC)
    eq(C.value_of(t, C.call(t, m + ":found", opts=["--preset", b])), 1,
       "exactly one write-only pipe besides 0/1/2 (the response descriptor)")
    for fn in ("bogus_header", "garbage_then_return", "truncated", "not_object",
               "bad_status", "ok_but_failed", "extra_frame", "close_fd"):
        r = C.call(t, m + ":" + fn, opts=["--preset", b], hard=15.0)
        try:
            doc = C.check_result(t, r, "worker_failed", "worker_failed", rc=1)
            eq(doc["value"], None, "value")
            check(r.wall < 5.0, "took %.2f s" % r.wall)
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))


BINDING_SRC = """
import functools
def widen(fn):
    return lambda a, b: 0
def to_partial(fn):
    return functools.partial(fn, 1)
def to_async(fn):
    async def inner(a):
        return a
    return inner
def to_sync(fn):
    def inner(a):
        return a
    return inner
def rename_param(fn):
    def inner(b):
        return b
    return inner
def add_default(fn):
    def inner(a=1):
        return a
    return inner
class Callable:
    def __call__(self, a):
        return a
def to_object(fn):
    return Callable()
def to_generator(fn):
    def inner(a):
        yield a
    return inner

@widen
def f_widen(a):
    return a
@to_partial
def f_partial(a):
    return a
@to_async
def f_async(a):
    return a
@to_sync
async def f_sync(a):
    return a
@rename_param
def f_rename(a):
    return a
@add_default
def f_default(a):
    return a
@to_object
def f_object(a):
    return a
@to_generator
def f_gen(a):
    return a
@functools.wraps(lambda a: a)
def f_wraps_ok(a):
    return a + 1
"""


@S.both("binding_failed: decorators make the live object differ from the inspected def")
def _bindings(t, b):
    m = C.module(t, "m.py", BINDING_SRC)
    cases = (("f_widen", "signature_mismatch"), ("f_partial", "not_a_function"),
             ("f_async", "async_mismatch"), ("f_sync", "async_mismatch"),
             ("f_rename", "signature_mismatch"), ("f_default", "signature_mismatch"),
             ("f_object", "not_a_function"), ("f_gen", "generator_function"))
    for fn, code in cases:
        r = C.call(t, m + ":" + fn, {"a": 5}, opts=["--preset", b])
        try:
            C.check_result(t, r, "binding_failed", code, rc=125)
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))
    # a decorator that keeps the signature is fine
    eq(C.value_of(t, C.call(t, m + ":f_wraps_ok", {"a": 5}, opts=["--preset", b])), 6,
       "signature-preserving decorator")


@S.test("binding_failed: the module rebinds the name through globals() at import")
def _globals_rebind(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    m = C.module(t, "m.py", """
        def f(a):
            return a
        def _other(a, b, marker=%r):
            open(marker, "w").close()
            return 0
        globals()["f"] = _other
        """ % marker)
    C.check_result(t, C.call(t, m + ":f", {"a": 1},
                             opts=C.backend_args(t, "strict", writable=d)),
                   "binding_failed", "signature_mismatch", rc=125)
    check(not os.path.exists(marker), "the replacement function ran")


@S.test("a forked child holding the pipes neither delays the result nor survives "
        "[trusted]")
def _orphan(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "child")
    m = C.module(t, "m.py", """
        import os, time
        def f(marker: str):
            pid = os.fork()
            if pid == 0:
                with open(marker, "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(60)
                os._exit(0)
            while not os.path.exists(marker):
                time.sleep(0.005)
            return "parent"
        """)
    r = C.call(t, m + ":f", {"marker": marker}, opts=["--preset", "trusted"])
    eq(C.check_result(t, r, "success")["value"], "parent", "value")
    check(r.wall < 4.0, "the call took %.2f s with a lingering child" % r.wall)
    check(not r.pipes_held_open, "the child kept govex's stdout/stderr open")
    pid = int(C.gt.wait_for_file(marker, 2.0) or "0")
    if pid:
        t.kill_later(pid)
        check(C.gt.wait_dead(pid, 2.0), "the forked child %d outlived the call" % pid)


if __name__ == "__main__":
    raise SystemExit(S.main())
