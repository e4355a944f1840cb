#!/usr/bin/env python3
"""`govex inspect --json`: the govex.inspection/v1 document and its effects (present,
absent, unknown) for representative functions, and the policy gates built on them
(effects.require_known -> unknown_required_effect; approval with no approver).
Prints TAP."""
import json
import os

import calltest as C
from calltest import check, eq

S = C.Suite()

EFFECTS = ("network", "filesystem_read", "filesystem_write", "subprocess", "environment",
           "dynamic_code")

SRC = '''
import os
import socket
import subprocess
import urllib.request

def pure(a: int, b: int = 2) -> int:
    """Arithmetic only."""
    c = a * b + (a - b) // 3
    return [c, abs(c), max(a, b), sorted([a, b]), str(c), len("xy")]

def net():
    s = socket.socket()
    s.close()
    return 1

def fetch(url: str):
    return urllib.request.urlopen(url).read()

def unresolved(x):
    return mystery_function(x)

def unknown_method(obj):
    return obj.frobnicate()

def spawn():
    return subprocess.run(["true"]).returncode

def env():
    return os.environ.get("HOME")

def dyn(s: str):
    return eval(s)

def reads(p: str):
    with open(p) as fh:
        return fh.read()

def writes(p: str):
    with open(p, "w") as fh:
        fh.write("x")

def calls_net():
    return net() + 1

async def anet():
    return net()
'''


def effects_of(doc, name):
    e = C.function_entry(doc, name)["effects"]
    eq(sorted(e), sorted(EFFECTS), "%s: effect names" % name)
    for k, v in e.items():
        check(v in ("present", "absent", "unknown"), "%s.%s = %r" % (name, k, v))
    return e


@S.test("inspection document: canonical, versioned, every top-level function described")
def _doc(t):
    m = C.module(t, "mod.py", SRC)
    doc, r = C.inspect(t, m, ["--preset", "strict"])
    eq(r.stdout, C.gt.canonical_bytes(doc), "canonical bytes")
    eq(doc["module"], "mod", "module")
    eq(doc["source_digest"], C.gt.sha256_digest(open(m, "rb").read()), "source_digest")
    eq([f["name"] for f in doc["functions"]],
       ["pure", "net", "fetch", "unresolved", "unknown_method", "spawn", "env", "dyn",
        "reads", "writes", "calls_net", "anet"], "functions in source order")
    f = C.function_entry(doc, "pure")
    eq(f["async"], False, "pure.async")
    eq(C.function_entry(doc, "anet")["async"], True, "anet.async")
    eq(f["docstring"], "Arithmetic only.", "docstring")
    eq(f["returns"], "int", "returns annotation as text")
    eq(f["parameters"], [
        {"name": "a", "kind": "positional_or_keyword", "has_default": False,
         "annotation": "int", "schema": {"type": "integer"}},
        {"name": "b", "kind": "positional_or_keyword", "has_default": True,
         "annotation": "int", "schema": {"type": "integer"}}], "parameters")
    # contract 2: the arguments' and the value's JSON Schemas
    eq(f["input_schema"], {"type": "object", "properties": {"a": {"type": "integer"},
                                                            "b": {"type": "integer"}},
                           "required": ["a"], "additionalProperties": False}, "input_schema")
    eq(f["output_schema"], {"type": "integer"}, "output_schema")
    eq((f["eligible"], f["reason"]), (True, None), "eligible")
    # deterministic, and the same under another backend
    doc2, r2 = C.inspect(t, m, ["--preset", "trusted"])
    eq(r2.stdout, r.stdout, "inspection under trusted is byte-identical")


@S.test("effects: pure arithmetic is all absent")
def _pure(t):
    m = C.module(t, "mod.py", SRC)
    doc, _ = C.inspect(t, m)
    eq(effects_of(doc, "pure"), {k: "absent" for k in EFFECTS}, "pure")


@S.test("effects: socket.socket() and urllib.request make network present")
def _network(t):
    m = C.module(t, "mod.py", SRC)
    doc, _ = C.inspect(t, m)
    for fn in ("net", "fetch", "calls_net", "anet"):
        eq(effects_of(doc, fn)["network"], "present", "%s.network" % fn)
    eq(effects_of(doc, "net")["subprocess"], "absent", "net.subprocess")


@S.test("effects: a call of an unresolvable name or an unknown object's method is unknown")
def _unknown(t):
    m = C.module(t, "mod.py", SRC)
    doc, _ = C.inspect(t, m)
    for fn in ("unresolved", "unknown_method"):
        e = effects_of(doc, fn)
        eq(e["network"], "unknown", "%s.network" % fn)
        check("absent" not in e.values(),
              "%s: an effect of an unresolvable call is claimed absent: %r" % (fn, e))


@S.test("effects: subprocess, environment, dynamic code, file read and write present")
def _others(t):
    m = C.module(t, "mod.py", SRC)
    doc, _ = C.inspect(t, m)
    eq(effects_of(doc, "spawn")["subprocess"], "present", "spawn.subprocess")
    eq(effects_of(doc, "env")["environment"], "present", "env.environment")
    eq(effects_of(doc, "dyn")["dynamic_code"], "present", "dyn.dynamic_code")
    eq(effects_of(doc, "reads")["filesystem_read"], "present", "reads.filesystem_read")
    eq(effects_of(doc, "writes")["filesystem_write"], "present", "writes.filesystem_write")


@S.test("effects: the module's own top-level code counts for every function")
def _module_level(t):
    m = C.module(t, "mod.py", """
        import socket
        CONN = socket.create_connection(("example.org", 80))
        def f(a):
            return a + 1
        """)
    doc, _ = C.inspect(t, m)
    eq(effects_of(doc, "f")["network"], "present", "f.network")


@S.test("require_known network: unknown refused (unknown_required_effect, nothing ran); "
        "absent and present are known and run")
def _require_known(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    m = C.module(t, "mod.py", """
        import socket
        MARK = %r
        def pure(a: int):
            return a + 1
        def net():
            s = socket.socket()
            s.close()
            return "socket made"
        def unknown():
            open(MARK, "w").close()
            return mystery()
        """ % marker)
    for b in C.BACKENDS:
        opts = C.backend_args(t, b, writable=d, effects={"require_known": ["network"]})
        doc = C.check_result(t, C.call(t, m + ":unknown", {}, opts=opts), "policy_refused",
                             "unknown_required_effect", rc=125)
        eq(C.diag(doc, "unknown_required_effect").get("effects"), ["network"], "effects")
        eq(doc["termination"], "refused", "termination")
        check(not os.path.exists(marker), "[%s] the function ran" % b)
        eq(C.value_of(t, C.call(t, m + ":pure", {"a": 1}, opts=opts)), 2, "[%s] pure" % b)
        r, p = C.plan(t, m + ":net", opts)
        r.expect_rc(0)
        eq(json.load(open(p))["effects"],
           {"require_known": ["network"],
            "observed": {"network": "present", "filesystem_read": "absent",
                         "filesystem_write": "absent", "subprocess": "absent",
                         "environment": "absent", "dynamic_code": "absent"}},
           "[%s] plan.effects" % b)
    # all six required: the diagnostic lists the unknown ones (the literal open(..., "w")
    # makes filesystem_write present, so known)
    opts = C.backend_args(t, "strict", effects={"require_known": list(EFFECTS)})
    doc = C.check_result(t, C.call(t, m + ":unknown", {}, opts=opts), "policy_refused",
                         "unknown_required_effect", rc=125)
    eq(sorted(C.diag(doc, "unknown_required_effect").get("effects") or []),
       sorted(e for e in EFFECTS if e != "filesystem_write"), "effects")


@S.test("approval required and no approver: policy_refused (approval_required), "
        "nothing ran")
def _approval(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    m = C.module(t, "mod.py", """
        def f(p: str):
            open(p, "w").close()
            return 1
        """)
    opts = C.backend_args(t, "trusted", approval=["network"])
    doc = C.check_result(t, C.call(t, m + ":f", {"p": marker}, opts=opts),
                         "policy_refused", "approval_required", rc=125)
    eq(doc["termination"], "refused", "termination")
    check(not os.path.exists(marker), "the function ran")


if __name__ == "__main__":
    raise SystemExit(S.main())
