#!/usr/bin/env python3
"""Property tests of the call-mode worker with Hypothesis (Debian's python3-hypothesis,
importable from /usr/bin/python3 only): frame encoding round trips, argument and result
transport of arbitrary finite JSON, argument reconstruction for arbitrary signatures,
source tampering.  Prints TAP; skips when Hypothesis is missing."""
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
        and os.access(SYSTEM_PYTHON, os.X_OK) and not os.environ.get("GOVEX_PROPS_REEXEC")):
    os.environ["GOVEX_PROPS_REEXEC"] = "1"
    os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)

import json  # noqa: E402
import math  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workerlib as W  # noqa: E402

sys.setrecursionlimit(20000)

PROPERTIES = []


def prop(fn):
    PROPERTIES.append(fn)
    return fn


def load_worker():
    """The worker's functions, in this process (its main() does not run): the embedded
    text's modules' names, and handle() with the inspection part."""
    ns = {"__name__": "govex_worker_under_test"}
    exec(compile(W.worker_text(), W.WORKER_PATH, "exec"), ns)
    names = {}
    for m in ns["_GOVEX_LOADED"].values():
        names.update(vars(m))
    dispatch = ns["_GOVEX_LOADED"]["govex_worker.dispatch"]
    names["handle"] = lambda req: dispatch.handle(req, ns["_inspect"])
    return names


try:
    from hypothesis import given, settings, strategies as st, HealthCheck
    HYPOTHESIS = None
except Exception as e:  # noqa: BLE001
    HYPOTHESIS = "python3-hypothesis not importable from %s (%s)" % (sys.executable,
                                                                     type(e).__name__)

if HYPOTHESIS is None:
    FAST = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
    SLOW = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
    keys = st.text(max_size=8)
    # integers within 64 bits: the parent keeps JSON integers in int64, and the worker
    # refuses a larger result integer (int_out_of_range)
    scalars = (st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 63 - 1)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
    finite_json = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)
                               | st.dictionaries(keys, inner, max_size=5), max_leaves=30)
    json_objects = st.dictionaries(keys, finite_json, max_size=6)
    WK = load_worker()

    def same(a, b):
        """Equal as JSON values, types included (1 vs 1.0 vs True)."""
        if type(a) is not type(b):
            return False
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, float):
            return a == b and math.copysign(1, a) == math.copysign(1, b)
        return a == b

    @prop
    def frame_round_trip():
        @FAST
        @given(json_objects)
        def t(obj):
            data = WK["encode_frame"](obj)
            n = int.from_bytes(data[:8], "big")
            assert n == len(data) - 8
            back = WK["decode_frame"](data)
            assert same(back, obj), (back, obj)
            assert same(W.unframe(data), obj)
        t()

    @prop
    def frame_damage_rejected():
        @FAST
        @given(json_objects, st.data())
        def t(obj, data):
            frame = WK["encode_frame"](obj)
            cut = data.draw(st.integers(0, len(frame) - 1))
            extra = data.draw(st.binary(min_size=1, max_size=8))
            for bad in (frame[:cut], frame + extra):
                try:
                    WK["decode_frame"](bad)
                except WK["Failure"] as f:
                    assert (f.status, f.code) == ("worker_failed", "bad_request")
                else:
                    raise AssertionError("accepted a damaged frame %r" % bad[:40])
        t()

    @prop
    def result_check_accepts_finite_json():
        @FAST
        @given(finite_json)
        def t(v):
            WK["check_result"](v, 1 << 30)
            text = WK["canonical"](v)
            assert same(json.loads(text), v)
            assert text == W.canon(v)
        t()

    @prop
    def result_check_rejects_non_json():
        bad_leaf = st.sampled_from([(1,), {1}, frozenset(), b"x", bytearray(b"x"),
                                    float("nan"), float("inf"), -float("inf"), object(),
                                    {1: 2}, {(1,): 2}, 1j, 2 ** 63, -(2 ** 63) - 1])

        @FAST
        @given(finite_json, bad_leaf, st.data())
        def t(v, leaf, data):
            # put the bad leaf somewhere inside v
            path = []
            cur = v
            while isinstance(cur, (list, dict)) and cur and data.draw(st.booleans()):
                k = data.draw(st.sampled_from(sorted(cur) if isinstance(cur, dict)
                                              else list(range(len(cur)))))
                path.append(k)
                cur = cur[k]
            root = json.loads(json.dumps(v))
            if not path:
                root = [root, leaf]
            else:
                holder = root
                for k in path[:-1]:
                    holder = holder[k]
                holder[path[-1]] = leaf
            try:
                WK["check_result"](root, 1 << 30)
            except WK["Failure"] as f:
                assert (f.status == "result_invalid" and
                        f.code in ("not_json", "int_out_of_range")), (f.status, f.code)
            else:
                raise AssertionError("accepted %r" % (root,))
        t()

    ECHO = "def echo(v):\n    return v\n\ndef const():\n    import json\n    return json.loads(DATA)\n"

    @prop
    def argument_transport():
        py = SYSTEM_PYTHON
        ins = W.inspect(py, ECHO)["inspection"]

        @SLOW
        @given(finite_json)
        def t(v):
            req = W.call_request(ECHO, "echo", {"v": v}, ins)
            resp = W.run_worker(py, W.frame(req)).resp
            assert resp["ok"] is True, resp
            assert same(resp["value"], v), (resp["value"], v)
        t()

    @prop
    def result_transport():
        py = SYSTEM_PYTHON

        @SLOW
        @given(finite_json)
        def t(v):
            src = ECHO + "DATA = %r\n" % json.dumps(v)
            ins = W.inspect(py, src)["inspection"]
            req = W.call_request(src, "const", {}, ins)
            resp = W.run_worker(py, W.frame(req)).resp
            assert resp["ok"] is True, resp
            assert same(resp["value"], v), (resp["value"], v)
        t()

    @st.composite
    def signatures(draw):
        n = draw(st.integers(0, 6))
        params = []
        seen_default = False
        for i in range(n):
            kind = draw(st.sampled_from(["positional_only", "positional_or_keyword",
                                         "keyword_only"]))
            params.append([("p%d" % i), kind, None])
        order = {"positional_only": 0, "positional_or_keyword": 1, "keyword_only": 2}
        params.sort(key=lambda p: order[p[1]])
        for p in params:
            if p[1] == "keyword_only":
                p[2] = draw(st.booleans())
            else:
                p[2] = seen_default or draw(st.booleans())
                seen_default = p[2]
        return params

    def source_for(params):
        parts = []
        kinds = [p[1] for p in params]
        for i, (name, kind, has_default) in enumerate(params):
            if kind == "keyword_only" and (i == 0 or kinds[i - 1] != "keyword_only"):
                if i > 0 and kinds[i - 1] == "positional_only":
                    parts.append("/")
                parts.append("*")
            elif i > 0 and kinds[i - 1] == "positional_only" and kind != "positional_only":
                parts.append("/")
            parts.append(name + ('="default:%s"' % name if has_default else ""))
        if kinds and kinds[-1] == "positional_only":
            parts.append("/")
        body = "{%s}" % ", ".join('"%s": %s' % (p[0], p[0]) for p in params)
        return "def f(%s):\n    return %s\n" % (", ".join(parts), body)

    @prop
    def argument_reconstruction():
        py = SYSTEM_PYTHON

        @SLOW
        @given(signatures(), st.data())
        def t(params, data):
            src = source_for(params)
            ins = W.inspect(py, src)["inspection"]
            fn = ins["functions"][0]
            got = [(q["name"], q["kind"], q["has_default"]) for q in fn["parameters"]]
            assert got == [tuple(p) for p in params], (src, got)
            args = {}
            want = {}
            for name, kind, has_default in params:
                if not has_default or data.draw(st.booleans()):
                    args[name] = data.draw(finite_json)
                    want[name] = args[name]
                else:
                    want[name] = "default:" + name
            req = W.call_request(src, "f", args, ins)
            resp = W.run_worker(py, W.frame(req)).resp
            assert resp["ok"] is True, (src, args, resp)
            assert same(resp["value"], want), (src, args, resp["value"], want)
        t()

    @prop
    def source_tampering_refused():
        base = ("def f(a: int) -> int:\n    return a + 1\n")
        ins = W.inspect(SYSTEM_PYTHON, base)["inspection"]
        good = W.call_request(base, "f", {"a": 1}, ins)

        @FAST
        @given(st.integers(0, len(base) - 1), st.characters(blacklist_categories=("Cs",)))
        def t(i, ch):
            tampered = base[:i] + ch + base[i + 1:]
            if tampered == base:
                return
            for req in (dict(good, source=tampered),
                        dict(good, source=tampered, source_digest=W.sha(tampered))):
                try:
                    WK["handle"](req)
                except WK["Failure"] as f:
                    assert (f.status, f.code) == ("source_mismatch", "digest_mismatch"), f.code
                else:
                    raise AssertionError("ran tampered source %r" % tampered)
        t()

    @prop
    def inspection_deterministic():
        src = ("import os\nfrom typing import Optional\n\n"
               "def a(x: int, /, y: Optional[str] = None, *, z=1) -> dict:\n"
               "    '''Doc.'''\n    return {}\n\nasync def b(p):\n    return os.getenv(p)\n")
        first = W.canon(W.inspect(SYSTEM_PYTHON, src))

        @settings(max_examples=5, deadline=None, database=None)
        @given(st.sampled_from([p for _, p, _ in W.find_pythons() if p]))
        def t(py):
            resp = W.inspect(py, src)
            assert W.canon(resp) == first, (py, resp)
        t()


def main():
    tap = W.Tap()
    if HYPOTHESIS is not None:
        for name in ("frame_round_trip", "frame_damage_rejected",
                     "result_check_accepts_finite_json", "result_check_rejects_non_json",
                     "argument_transport", "result_transport", "argument_reconstruction",
                     "source_tampering_refused", "inspection_deterministic"):
            tap.result(name, skip=HYPOTHESIS)
    else:
        for fn in PROPERTIES:
            tap.result(fn.__name__, W.run_case(fn))
    tap.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
