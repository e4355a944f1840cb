#!/usr/bin/env python3
"""Property: arbitrary finite JSON values round-trip exactly through `govex call` of an
identity function (--preset trusted).  Uses Hypothesis; when the running interpreter
lacks it, the script re-runs itself under /usr/bin/python3 if that one has it (Debian's
python3-hypothesis), else the test is a skip saying why.  Prints TAP.

The generated domain is all finite JSON except two corners that have tests of their
own (test_results.py, test_inputs.py): integers outside 64 bits, and strings holding
U+0000.
"""
import json
import time

import calltest as C

C.hypothesis_or_reexec(__file__)
from calltest import check  # noqa: E402

S = C.Suite()
EXAMPLES = 40
INT64 = (-(2 ** 63), 2 ** 63 - 1)


@S.test("identity round-trip of arbitrary finite JSON (%d examples) [trusted]" % EXAMPLES,
        seconds=170)
def _roundtrip(t):
    C.need_hypothesis()
    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st

    m = C.module(t, "ident.py", """
        def ident(x):
            return x
        """)
    chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    text = st.text(alphabet=chars, max_size=12)
    scalars = (st.none() | st.booleans() | st.integers(*INT64)
               | st.floats(allow_nan=False, allow_infinity=False) | text)
    values = st.recursive(scalars,
                          lambda kids: st.lists(kids, max_size=4)
                          | st.dictionaries(text, kids, max_size=4),
                          max_leaves=12)
    calls = [0]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(values)
    @example(-0.0)
    @example([INT64[0], INT64[1], 5e-324, 1e308, -1.5e-300, 0.1])
    @example({"\u2028\u00e9": ["", {"": None}], "\U0001f600": [[[[]]]], "a\\\"b": True})
    def prop(v):
        calls[0] += 1
        r = C.call(t, m + ":ident", json.dumps({"x": v}), opts=["--preset", "trusted"])
        got = C.check_result(t, r, "success")["value"]
        check(C.exact(got, v), "round-trip changed the value:\n  sent %r\n  got  %r"
              % (v, got))

    t0 = time.monotonic()
    prop()
    print("# %d calls in %.1f s" % (calls[0], time.monotonic() - t0))


if __name__ == "__main__":
    raise SystemExit(S.main())
