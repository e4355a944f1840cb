#!/usr/bin/env python3
"""Call mode results: only finite JSON comes back (null, bool, int, finite float, str,
lists, objects with string keys); anything else is result_invalid with value null; a
value over limits.call_output_bytes is output_limit; JSON values round-trip exactly.
Prints TAP."""
import json

import calltest as C
from calltest import check, eq

S = C.Suite()


INVALID_SRC = """
import enum, math
class Obj:
    pass
class S(str):
    pass
class Color(enum.IntEnum):
    RED = 1
def a_set():
    return {1, 2, 3}
def a_frozenset():
    return frozenset([1])
def a_tuple():
    return (1, 2)
def nested_tuple():
    return {"ok": [1, (2, 3)]}
def a_bytes():
    return b"bytes"
def a_bytearray():
    return bytearray(b"x")
def nan():
    return float("nan")
def inf():
    return [1.0, math.inf]
def neg_inf():
    return {"x": -math.inf}
def int_key():
    return {1: "one"}
def none_key():
    return {None: 1}
def bool_key():
    return {True: 1}
def tuple_key():
    return {(1, 2): 3}
def nested_int_key():
    return [{"a": {2: 3}}]
def an_object():
    return Obj()
def a_function():
    return a_set
def str_subclass():
    return S("x")
def int_enum():
    return Color.RED
def a_complex():
    return 1j
def lone_surrogate():
    return "\\ud800"
def surrogate_key():
    return {"\\udfff": 1}
def a_range():
    return range(3)
def a_generator():
    return (i for i in range(3))
"""

INVALID = ("a_set", "a_frozenset", "a_tuple", "nested_tuple", "a_bytes", "a_bytearray",
           "nan", "inf", "neg_inf", "int_key", "none_key", "bool_key", "tuple_key",
           "nested_int_key", "an_object", "a_function", "str_subclass", "int_enum",
           "a_complex", "lone_surrogate", "surrogate_key", "a_range", "a_generator")
CORE_INVALID = ("a_set", "a_tuple", "a_bytes", "nan", "int_key")


def expect_invalid(t, m, fn, opts):
    r = C.call(t, m + ":" + fn, opts=opts)
    try:
        doc = C.check_result(t, r, "result_invalid", rc=1)
        eq(doc["value"], None, "value")
        check("value" in doc, "value key present")
    except C.Failure as e:
        raise C.Failure("%s: %s" % (fn, e))


@S.test("result_invalid: set, frozenset, tuple, bytes, NaN, inf, non-string keys, objects, "
        "str/int subclasses, complex, lone surrogates, range, generator object [strict]")
def _invalid_strict(t):
    m = C.module(t, "m.py", INVALID_SRC)
    for fn in INVALID:
        expect_invalid(t, m, fn, ["--preset", "strict"])


@S.test("result_invalid: set, tuple, bytes, NaN, non-string keys [trusted]")
def _invalid_trusted(t):
    m = C.module(t, "m.py", INVALID_SRC)
    for fn in CORE_INVALID:
        expect_invalid(t, m, fn, ["--preset", "trusted"])


@S.both("output_limit: a 2 MiB result (default call_output_bytes 1 MiB), value null")
def _output_limit(t, b):
    m = C.module(t, "m.py", """
        def big():
            return "x" * (2 << 20)
        def big_list():
            return [123456789] * (300 * 1024)
        """)
    for fn in ("big", "big_list"):
        doc = C.check_result(t, C.call(t, m + ":" + fn, opts=["--preset", b]),
                             "output_limit", rc=1)
        eq(doc["value"], None, "value of %s" % fn)


@S.test("output_limit: exactly at limits.call_output_bytes (value + newline) passes, one "
        "byte more does not")
def _output_boundary(t):
    # the value's canonical text plus "\n" must fit: '"' + k x's + '"' + '\n' = k + 3
    m = C.module(t, "m.py", """
        def s(k: int):
            return "x" * k
        """)
    opts = C.backend_args(t, "strict", limits={"call_output_bytes": 1024})
    eq(C.value_of(t, C.call(t, m + ":s", {"k": 1021}, opts=opts)), "x" * 1021,
       "1024 bytes with the newline")
    C.check_result(t, C.call(t, m + ":s", {"k": 1022}, opts=opts), "output_limit", rc=1)


@S.test("output_limit: a shared-reference bomb ends at the bound, promptly")
def _bomb(t):
    m = C.module(t, "m.py", """
        def bomb():
            x = ["a"]
            for _ in range(60):
                x = [x, x]
            return x
        """)
    r = C.call(t, m + ":bomb", opts=["--preset", "strict"])
    C.check_result(t, r, "output_limit", rc=1)
    check(r.wall < 5.0, "took %.2f s" % r.wall)


@S.test("result_invalid: a result nested 5000 deep; 100 deep is fine")
def _deep(t):
    m = C.module(t, "m.py", """
        def nest(n: int):
            x = []
            for _ in range(n):
                x = [x]
            return x
        """)
    C.check_result(t, C.call(t, m + ":nest", {"n": 5000}, opts=["--preset", "strict"]),
                   "result_invalid", rc=1)
    v = C.value_of(t, C.call(t, m + ":nest", {"n": 100}, opts=["--preset", "strict"]))
    depth = 0
    while v:
        v = v[0]
        depth += 1
    eq(depth, 100, "depth of the returned value")


VALUES_SRC = """
def null():
    return None
def no_return():
    pass
def scalars():
    return [True, False, 0, -1, 2**53, -(2**63), 2**63 - 1, 0.5, -0.0, 1e308, 5e-324, ""]
def text():
    return {"\\u00e9\\u4e2d": "\\U0001f600 \\t\\n\\"\\\\ \\u2028", "": [], "e": {}}
def floats_that_look_like_ints():
    return [1.0, -2.0, 1e16]
"""


@S.both("JSON values round-trip exactly (types kept: 1.0 stays a float, -0.0 its sign)")
def _values(t, b):
    m = C.module(t, "m.py", VALUES_SRC)
    expect = {
        "null": None, "no_return": None,
        "scalars": [True, False, 0, -1, 2**53, -(2**63), 2**63 - 1, 0.5, -0.0, 1e308,
                    5e-324, ""],
        "text": {"\u00e9\u4e2d": "\U0001f600 \t\n\"\\ \u2028", "": [], "e": {}},
        "floats_that_look_like_ints": [1.0, -2.0, 1e16],
    }
    for fn, want in expect.items():
        got = C.value_of(t, C.call(t, m + ":" + fn, opts=["--preset", b]))
        check(C.exact(got, want), "%s: expected %r, got %r" % (fn, want, got))
    # plain mode prints the same value
    r = C.call(t, m + ":text", opts=["--preset", b], json_out=False)
    r.expect_rc(0)
    eq(json.loads(r.out), expect["text"], "plain-mode value")


@S.test("a string with U+0000 is valid JSON: returned as such, not worker_failed")
def _nul_result(t):
    m = C.module(t, "m.py", """
        def f():
            return {"k": "a\\u0000b"}
        """)
    r = C.call(t, m + ":f", opts=["--preset", "trusted"])
    doc = r.result()
    check(doc["status"] != "worker_failed",
          "a valid JSON string with U+0000 made the parent reject the worker's response "
          "frame: %r" % (doc["diagnostics"],))
    eq(C.check_result(t, r, "success")["value"], {"k": "a\u0000b"}, "value")


@S.test("an int outside 64 bits (2**64) is success or result_invalid, never worker_failed")
def _bigint_result(t):
    m = C.module(t, "m.py", """
        def big():
            return 2 ** 64
        def neg():
            return -(2 ** 63) - 1
        def nested():
            return {"n": [1, 2 ** 70]}
        """)
    for fn, want in (("big", 2 ** 64), ("neg", -(2 ** 63) - 1), ("nested", {"n": [1, 2 ** 70]})):
        r = C.call(t, m + ":" + fn, opts=["--preset", "trusted"])
        doc = r.result()
        try:
            check(doc["status"] in ("success", "result_invalid"),
                  "status %r (diagnostics %r): a Python int the parent cannot hold must be "
                  "result_invalid, not a failure of the worker"
                  % (doc["status"], doc["diagnostics"]))
            C.check_result(t, r, doc["status"])
            if doc["status"] == "success":
                eq(doc["value"], want, "value")
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))


if __name__ == "__main__":
    raise SystemExit(S.main())
