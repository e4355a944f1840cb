#!/usr/bin/env python3
"""Call mode values in their canonical bytes: reals in the shortest round-trip form
(Python's repr: 0.1 stays 0.1, never 0.10000000000000001), in the result document and
in the bytes counted against limits.call_output_bytes, so the worker and the parent
agree on a bound.  Prints TAP."""
import json

import calltest as C
from calltest import check, eq

S = C.Suite()

SRC = """
def tenths(n: int):
    return [0.1] * n
def reals():
    return {"a": 0.1, "b": 1e-05, "c": 1e16, "d": 100.0, "e": -0.0, "f": 2.5e-300,
            "g": 0.30000000000000004, "h": 1.7976931348623157e308}
"""


def canonical_len(v):
    return len(json.dumps(v, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode()) + 1


@S.test("call_output_bytes: [0.1]*200 at its canonical size passes, one byte less is "
        "output_limit (worker and parent count the same bytes)")
def _tenths_bound(t):
    m = C.module(t, "m.py", SRC)
    need = canonical_len([0.1] * 200)
    eq(need, 802, "the canonical size of [0.1]*200 with its newline")
    opts = C.backend_args(t, "strict", limits={"call_output_bytes": need})
    eq(C.value_of(t, C.call(t, m + ":tenths", {"n": 200}, opts=opts)), [0.1] * 200,
       "value at the bound")
    opts = C.backend_args(t, "strict", limits={"call_output_bytes": need - 1})
    doc = C.check_result(t, C.call(t, m + ":tenths", {"n": 200}, opts=opts),
                         "output_limit", rc=1)
    eq(doc["value"], None, "value over the bound")


@S.test("the result document writes reals as Python's repr does")
def _reals_text(t):
    m = C.module(t, "m.py", SRC)
    r = C.call(t, m + ":reals", opts=["--preset", "trusted"])
    doc = C.check_result(t, r, "success")
    text = r.stdout.decode()
    want = ('{"a":0.1,"b":1e-05,"c":1e+16,"d":100.0,"e":-0.0,"f":2.5e-300,'
            '"g":0.30000000000000004,"h":1.7976931348623157e+308}')
    check(want in text, "value text %r not in the result:\n%s" % (want, text))
    check("0.10000000000000001" not in text, "17-digit real in the result")
    eq(json.dumps(doc["value"], sort_keys=True, separators=(",", ":")), want, "value")


@S.test("5000 random doubles (every magnitude): the result's text of each is Python's repr")
def _random_reals(t):
    m = C.module(t, "m.py", """
        import math, random, struct
        def floats(seed: int, n: int):
            rnd = random.Random(seed)
            out = []
            while len(out) < n:
                d = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
                if math.isfinite(d):
                    out.append(d)
                    out.append(rnd.random() * 10 ** rnd.randint(-8, 20))
            return out
        """)
    r = C.call(t, m + ":floats", {"seed": 11, "n": 5000}, opts=["--preset", "trusted"])
    doc = C.check_result(t, r, "success")
    text = r.stdout.decode()
    want = json.dumps(doc["value"], separators=(",", ":"))
    check('"value":' + want in text, "the value's text differs from Python's json.dumps")


@S.test("call_input_bytes counts arguments' reals in their shortest form")
def _input_bound(t):
    m = C.module(t, "m.py", """
        def f(x):
            return len(x)
        """)
    args = {"x": [0.1] * 100}
    need = canonical_len(args)
    opts = C.backend_args(t, "strict", limits={"call_input_bytes": need})
    eq(C.value_of(t, C.call(t, m + ":f", args, opts=opts)), 100, "arguments at the bound")
    opts = C.backend_args(t, "strict", limits={"call_input_bytes": need - 1})
    C.check_result(t, C.call(t, m + ":f", args, opts=opts), "invalid_input", "input_too_large",
                   rc=125)


if __name__ == "__main__":
    raise SystemExit(S.main())
