#!/usr/bin/env python3
"""Call mode on every Python >= 3.8 present (pyenv 3.8 ... 3.13 and /usr/bin/python3),
each through a policy naming the interpreter (strict preset, python.interpreter set):
sync (through a plan), async, positional-only/keyword-only, result_invalid,
output_limit, worker_failed, timeout.  3.6 and 3.7, when present, are refused clearly
(call mode needs 3.8+).  A missing version is a skip saying so.  Prints TAP."""
import json
import os
import re

import calltest as C
from calltest import check, eq

S = C.Suite()

SRC = """
import asyncio, os, time

def add(a: int, b: int = 1):
    return {"sum": a + b}

async def aadd(a: int, b: int):
    await asyncio.sleep(0.001)
    return a + b

def kinds(a, /, b, *, c, d=4):
    return [a, b, c, d]

def bad():
    return {"t": (1, 2)}

def big():
    return "y" * (2 << 20)

def die():
    os._exit(0)

def sleepy():
    time.sleep(60)
"""


def interp_policy(t, path):
    return ["--policy", C.policy(t, base="strict", name="py.json",
                                 python={"interpreter": path})]


def setup(t, label, path):
    if path is None:
        raise C.Skip("%s not installed" % label)
    return C.module(t, "mod.py", SRC), interp_policy(t, path)


def version_of(path):
    """(major, minor) from the pyenv directory or the binary's name; None if unknown."""
    m = re.search(r"/versions/(\d+)\.(\d+)\.", path) or re.search(r"python(\d+)\.(\d+)$",
                                                                  os.path.realpath(path))
    return (int(m.group(1)), int(m.group(2))) if m else None


def t_sync(t, label, path):
    m, opts = setup(t, label, path)
    r, p = C.plan(t, m + ":add", opts)
    r.expect_rc(0)
    interp = json.load(open(p))["interpreter"]
    check(interp["path"] in (path, os.path.realpath(path)),
          "plan.interpreter.path %r is not %r" % (interp["path"], path))
    want = version_of(path)
    if want:
        check(interp["version"].startswith("%d.%d." % want),
              "plan.interpreter.version %r is not %d.%d" % ((interp["version"],) + want))
    eq(C.value_of(t, C.call(t, None, {"a": 41}, opts=opts, plan=p)), {"sum": 42}, "value")


def t_async(t, label, path):
    m, opts = setup(t, label, path)
    eq(C.value_of(t, C.call(t, m + ":aadd", {"a": 2, "b": 3}, opts=opts)), 5, "value")


def t_kinds(t, label, path):
    m, opts = setup(t, label, path)
    eq(C.value_of(t, C.call(t, m + ":kinds", {"a": 1, "b": 2, "c": 3}, opts=opts)),
       [1, 2, 3, 4], "value")


def t_result_invalid(t, label, path):
    m, opts = setup(t, label, path)
    C.check_result(t, C.call(t, m + ":bad", opts=opts), "result_invalid", rc=1)


def t_output_limit(t, label, path):
    m, opts = setup(t, label, path)
    C.check_result(t, C.call(t, m + ":big", opts=opts), "output_limit", rc=1)


def t_worker_failed(t, label, path):
    m, opts = setup(t, label, path)
    C.check_result(t, C.call(t, m + ":die", opts=opts), "worker_failed", "worker_failed",
                   rc=1)


def t_timeout(t, label, path):
    m, opts = setup(t, label, path)
    r = C.call(t, m + ":sleepy", opts=opts, timeout_ms=500)
    C.check_result(t, r, "timeout", rc=124)
    check(0.5 <= r.wall < 4.0, "a 500 ms deadline took %.2f s" % r.wall)


WARM = {"GOVEX_WARM": "1"}


def warm_env():
    e = dict(os.environ)
    e.update(WARM)
    return e


def t_warm_snippet(t, label, path):
    """A warm run of a snippet (GOVEX_WARM=1: forked from a warm template) works as the
    cold one: its output, and the traceback of its exception shows the code's own
    line (3.13 keeps `python -c`'s source for tracebacks; the template's own must not
    show instead).  3.13.0 ended every warm run signal 6, empty stderr: the template
    called PyOS_AfterFork_Child without PyOS_BeforeFork (zyg.c, init_clone)."""
    if path is None:
        raise C.Skip("%s not installed" % label)
    opts = interp_policy(t, path)
    code = "import sys\nprint(6*7, sys.version_info[:2])\nx = 1\n1/0  # the line\n"
    docs = []
    for env in (None, warm_env()):
        r = t.run(["run", "--json"] + opts + ["-c", code], env=env, timeout=C.CALL_TIMEOUT)
        doc = r.result()
        check(doc["signal"] is None, "signal %r\n%s" % (doc["signal"], r.describe()))
        eq(doc["status"], "execution_failed", "status (the code raises)")
        eq(doc["exit_code"], 1, "exit code")
        docs.append(doc)
    cold, warm = docs
    want = version_of(path)
    if want:
        eq(warm["stdout"], "42 (%d, %d)\n" % want, "warm stdout")
    eq(warm["stdout"], cold["stdout"], "warm stdout is cold's")
    eq(warm["stderr"], cold["stderr"], "warm stderr (the traceback) is cold's")
    check("ZeroDivisionError" in warm["stderr"], "no traceback: %r" % warm["stderr"])
    check("govex" not in warm["stderr"] and "zyg" not in warm["stderr"],
          "the template shows in the traceback: %r" % warm["stderr"])


def t_warm_call(t, label, path):
    m, opts = setup(t, label, path)
    r = C.call(t, m + ":add", {"a": 41}, opts=opts, env=warm_env())
    eq(C.value_of(t, r), {"sum": 42}, "value (warm)")


CORE = (("sync via plan", t_sync), ("async", t_async), ("pos-only/kw-only", t_kinds),
        ("result_invalid", t_result_invalid), ("output_limit", t_output_limit),
        ("worker_failed", t_worker_failed), ("timeout", t_timeout),
        ("warm snippet (as cold)", t_warm_snippet), ("warm call", t_warm_call))

targets = C.interpreters()
targets.append(("/usr/bin/python3",
                "/usr/bin/python3" if C.is_executable("/usr/bin/python3") else None))
for label, path in targets:
    for name, fn in CORE:
        S.add("%s: %s" % (label, name), (lambda fn, label, path:
                                         lambda t: fn(t, label, path))(fn, label, path))


def t_too_old(t, label, path):
    if path is None:
        raise C.Skip("%s not installed" % label)
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    m = C.module(t, "mod.py", """
        open(%r, "w").close()
        def f(a):
            return a
        """ % marker)
    opts = ["--policy", C.policy(t, base="strict", name="py.json", writable=d,
                                 python={"interpreter": path})]
    for argv in (["call", "--json"] + opts + [m + ":f", "--args", '{"a": 1}'],
                 ["inspect", "--json"] + opts + [m]):
        r = t.run(argv, timeout=C.CALL_TIMEOUT)
        doc = r.result()
        check(doc["status"] in ("execution_failed", "invalid_input", "policy_refused"),
              "%s: status %r" % (argv[0], doc["status"]))
        C.check_result(t, r, doc["status"], "interpreter_unsupported", rc=125)
        check(doc["termination"] in ("launch_failed", "refused"),
              "termination %r" % doc["termination"])
        msg = C.diag(doc, "interpreter_unsupported")["message"]
        check("3.8" in msg, "the message does not say call mode needs 3.8: %r" % msg)
        check(not os.path.exists(marker), "module code ran on %s" % label)


for label, path in C.interpreters((6, 7)):
    S.add("%s: call mode refused (needs 3.8+)" % label,
          (lambda label, path: lambda t: t_too_old(t, label, path))(label, path))


if __name__ == "__main__":
    raise SystemExit(S.main())
