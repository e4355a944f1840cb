#!/usr/bin/env python3
"""Call mode input checks: every refusal happens before user code runs (a marker file
that the module's top level and the function would each create never appears):
missing / unknown / null arguments, argument size, malformed arguments, ineligible
functions (generators, *args, **kwargs, redefined names), unknown functions, bad
sources and targets.  Prints TAP."""
import json
import os

import calltest as C
from calltest import check, eq

S = C.Suite()

MOD = """
import os
MARK = {marker!r}

def _mark(p):
    # as root each run may have another uid (its slot's): replace, never rewrite, a
    # marker an earlier run left (the directory is world-writable)
    try:
        os.unlink(p)
    except OSError:
        pass
    open(p, "w").close()

_mark(MARK + ".loaded")

def f(n: int, s: str = "d", *, flag: bool = False):
    _mark(MARK + ".ran")
    return [n, s, flag]

def opt(x: "Optional[int]" = 0, y=1, z: "int | None" = 2):
    _mark(MARK + ".ran")
    return [x, y, z]

def text(s: str):
    _mark(MARK + ".ran")
    return len(s)

def gen(n: int):
    _mark(MARK + ".ran")
    yield n

async def agen(n: int):
    _mark(MARK + ".ran")
    yield n

def star(*args):
    _mark(MARK + ".ran")
    return 1

def kwargs(**kw):
    _mark(MARK + ".ran")
    return 1

def twice(a):
    _mark(MARK + ".ran")
    return 1

def twice(a, b):
    _mark(MARK + ".ran")
    return 2

def rebound(a):
    _mark(MARK + ".ran")
    return 1

rebound = twice
"""


def setup(t, backend):
    d = C.shared_dir(t)
    marker = os.path.join(d, "m")
    m = C.module(t, "mod.py", MOD.format(marker=marker))
    opts = C.backend_args(t, backend, writable=d)
    return m, marker, opts


def nothing_ran(marker, what):
    for suffix in (".loaded", ".ran"):
        check(not os.path.exists(marker + suffix),
              "%s: user code ran (%s exists)" % (what, os.path.basename(marker + suffix)))


def refused(t, m, marker, opts, fn, args, code, status="invalid_input"):
    r = C.call(t, m + ":" + fn, args, opts=opts)
    try:
        doc = C.check_result(t, r, status, code, rc=125)
        eq(doc["termination"], "refused", "termination")
        nothing_ran(marker, fn)
    except C.Failure as e:
        raise C.Failure("%s %s: %s" % (fn, args, e))
    return doc


@S.both("the markers work: a valid call creates both")
def _control(t, b):
    m, marker, opts = setup(t, b)
    eq(C.value_of(t, C.call(t, m + ":f", {"n": 1}, opts=opts)), [1, "d", False], "value")
    check(os.path.exists(marker + ".loaded") and os.path.exists(marker + ".ran"),
          "markers missing after a successful call")


@S.both("missing required / unknown / explicit null for int: invalid_input, nothing ran")
def _arguments(t, b):
    m, marker, opts = setup(t, b)
    refused(t, m, marker, opts, "f", {}, "missing_argument")
    refused(t, m, marker, opts, "f", {"s": "x"}, "missing_argument")
    refused(t, m, marker, opts, "f", {"n": 1, "bogus": 2}, "unknown_argument")
    refused(t, m, marker, opts, "f", {"n": None}, "null_not_allowed")
    refused(t, m, marker, opts, "f", {"n": 1, "s": None}, "null_not_allowed")
    refused(t, m, marker, opts, "f", {"n": 1, "flag": None}, "null_not_allowed")


@S.test("null is allowed where the annotation admits it (Optional, | None, none)")
def _null_ok(t):
    m, marker, opts = setup(t, "strict")
    eq(C.value_of(t, C.call(t, m + ":opt", {"x": None, "y": None, "z": None}, opts=opts)),
       [None, None, None], "value")


@S.both("malformed arguments: not JSON, an array, duplicate keys, invalid UTF-8")
def _malformed(t, b):
    m, marker, opts = setup(t, b)
    for args in ("nope", "[1]", "1", '"s"', "null", '{"n": 1, "n": 2}', '{"n": 1',
                 '{"n": NaN}', '{"n": Infinity}'):
        refused(t, m, marker, opts, "f", args, "invalid_arguments")
    # invalid UTF-8 through --args-file
    t.write("bad.json", b'{"n": 1, "s": "\xff"}')
    r = C.call(t, m + ":f", opts=opts + ["--args-file", t.path("bad.json")])
    C.check_result(t, r, "invalid_input", "invalid_arguments", rc=125)
    nothing_ran(marker, "invalid UTF-8")


@S.both("arguments over limits.call_input_bytes 1024 (a 2 KiB string): invalid_input")
def _too_large(t, b):
    d = C.shared_dir(t)
    marker = os.path.join(d, "m")
    m = C.module(t, "mod.py", MOD.format(marker=marker))
    opts = C.backend_args(t, b, writable=d, limits={"call_input_bytes": 1024})
    refused(t, m, marker, opts, "text", {"s": "x" * 2048}, "input_too_large")
    # just under the bound runs: canonical '{"s":"' + k + '"}' + newline
    k = 1024 - len('{"s":""}\n')
    eq(C.value_of(t, C.call(t, m + ":text", {"s": "x" * k}, opts=opts)), k,
       "arguments of exactly 1024 canonical bytes")
    os.unlink(marker + ".ran")
    os.unlink(marker + ".loaded")
    refused(t, m, marker, opts, "text", {"s": "x" * (k + 1)}, "input_too_large")


@S.both("generator, async generator, *args, **kwargs: function_not_eligible")
def _ineligible(t, b):
    m, marker, opts = setup(t, b)
    for fn, why in (("gen", "generator"), ("agen", "async_generator"),
                    ("star", "var_positional"), ("kwargs", "var_keyword")):
        doc = refused(t, m, marker, opts, fn, {"n": 1} if "gen" in fn else {},
                      "function_not_eligible")
        eq(C.diag(doc, "function_not_eligible").get("reason"), why, "%s reason" % fn)


@S.test("a name defined twice or rebound at top level is not eligible (redefined)")
def _redefined(t):
    m, marker, opts = setup(t, "strict")
    for fn in ("twice", "rebound"):
        doc = refused(t, m, marker, opts, fn, {"a": 1}, "function_not_eligible")
        eq(C.diag(doc, "function_not_eligible").get("reason"), "redefined", fn)


@S.test("unknown function, method-like names, bad targets: refused, nothing ran")
def _targets(t):
    m, marker, opts = setup(t, "trusted")
    refused(t, m, marker, opts, "nosuch", {}, "unknown_function")
    refused(t, m, marker, opts, "MARK", {}, "unknown_function")     # a variable
    refused(t, m, marker, opts, "os", {}, "unknown_function")       # an import
    for target in (m, m + ":", m + ":f.x", m.replace(".py", ".txt") + ":f", "nofile.py:f"):
        r = C.call(t, target, {}, opts=opts)
        doc = r.result()
        eq(doc["status"], "invalid_input", "status for target %r" % target)
        r.expect_rc(125)
    nothing_ran(marker, "bad targets")


@S.test("bad sources: syntax error, NUL byte, not UTF-8, over limits.code_bytes")
def _sources(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "m")
    opts = C.backend_args(t, "trusted", writable=d, limits={"code_bytes": 4096})
    head = "open(%r, 'w').close()\ndef f():\n    return 1\n" % (marker + ".loaded")
    cases = (("syntax.py", head + "def g(:\n", "syntax_error"),
             ("nul.py", head + "x = 1\0\n", "invalid_code"),
             ("latin1.py", (head + "s = '\xe9'\n").encode("latin-1"), "invalid_code"),
             ("big.py", head + "#" * 5000 + "\n", "code_too_large"))
    for name, src, code in cases:
        p = t.write(name, src)
        r = C.call(t, p + ":f", opts=opts)
        try:
            C.check_result(t, r, "invalid_input", code, rc=125)
        except C.Failure as e:
            raise C.Failure("%s: %s" % (name, e))
        nothing_ran(marker, name)


@S.test("inspect never imports the module (its top level does not run)")
def _inspect_no_import(t):
    m, marker, opts = setup(t, "trusted")
    doc, _ = C.inspect(t, m, opts)
    check(C.function_entry(doc, "f")["eligible"], "f eligible")
    nothing_ran(marker, "inspect")
    r, p = C.plan(t, m + ":f", opts)
    r.expect_rc(0)
    nothing_ran(marker, "plan")


@S.test("an argument string holding U+0000 (valid JSON) reaches the function")
def _nul_arg(t):
    m = C.module(t, "m.py", """
        def f(s: str):
            return [len(s), s.index("\\u0000")]
        """)
    r = C.call(t, m + ":f", '{"s": "a\\u0000b"}', opts=["--preset", "trusted"])
    doc = r.result()
    check(doc["status"] == "success",
          "status %r, diagnostics %r: U+0000 in an argument value is valid JSON (DESIGN "
          "rejects NUL only where a path or name is expected)"
          % (doc["status"], doc["diagnostics"]))
    eq(doc["value"], [3, 1], "value")


@S.test("an argument integer outside 64 bits is refused as invalid_input (not a crash)")
def _bigint_arg(t):
    m = C.module(t, "m.py", """
        def f(n: int):
            return n
        """)
    r = C.call(t, m + ":f", '{"n": 18446744073709551616}', opts=["--preset", "trusted"])
    doc = r.result()
    if doc["status"] == "success":
        eq(doc["value"], 2 ** 64, "value")
    else:
        C.check_result(t, r, "invalid_input", rc=125)


if __name__ == "__main__":
    raise SystemExit(S.main())
