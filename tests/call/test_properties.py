#!/usr/bin/env python3
"""Properties (Hypothesis) of the contracts the reference documents name (issue 25):

- canonical policies: any valid policy, written with its keys in any order and any
  whitespace, has one canonical form; canon is idempotent; the digest is the SHA-256 of
  those bytes; a field at its default changes nothing;
- plan determinism: a plan made twice is byte-identical; the inspection of any
  generated signature is byte-identical under the oldest and the newest supported
  interpreter (python3.8 and python3.13 from pyenv, where present);
- argument transport under the oldest and the newest interpreter: finite JSON
  round-trips exactly through a call (test_property.py does it for the default one);
- finite JSON: a value holding NaN or an infinity anywhere is result_invalid, never a
  success with a changed value;
- source mutation: any one-byte change to a planned module is refused
  (source_mismatch, or invalid_code for a byte that breaks its UTF-8) before any of it
  runs;
- output boundaries: for any size and bound, stdout_bytes is every byte written,
  stdout keeps min(size, bound) bytes and stdout_truncated says whether it cut;
- environment allowlist: a run sees exactly the allowed names it was given.

Uses Hypothesis as test_property.py does (calltest.hypothesis_or_reexec: re-run under
/usr/bin/python3 when this interpreter lacks it, else a skip saying why).  Prints TAP."""
import json
import os
import random

import calltest as C

C.hypothesis_or_reexec(__file__)
from calltest import check, eq  # noqa: E402

S = C.Suite()
INT64 = (-(2 ** 63), 2 ** 63 - 1)
OLDEST, NEWEST = 8, 13


def need_hypothesis():
    C.need_hypothesis()
    import hypothesis
    from hypothesis import strategies as st
    return hypothesis, st


def settings(hypothesis, n):
    return hypothesis.settings(max_examples=n, deadline=None, database=None,
                               suppress_health_check=list(hypothesis.HealthCheck))


def oldest_newest():
    """The paths of the oldest and newest supported interpreters; in CI both must be
    there (GOVEX_REQUIRE_FEATURES names pyenv), elsewhere a missing one is a skip."""
    got = dict(C.interpreters((OLDEST, NEWEST)))
    missing = [k for k, v in got.items() if not v]
    if missing:
        raise C.Skip("%s not under %s (pyenv)" % (", ".join(missing), C.PYENV))
    return got["python3.%d" % OLDEST], got["python3.%d" % NEWEST]


def scrambled(obj, rnd):
    """OBJ as JSON text with its keys in a random order and random whitespace."""
    ws = lambda: rnd.choice(["", " ", "\n", "\t ", "  \r\n"])
    if isinstance(obj, dict):
        items = list(obj.items())
        rnd.shuffle(items)
        return "{" + ws() + ("," + ws()).join(
            json.dumps(k) + ws() + ":" + ws() + scrambled(v, rnd) for k, v in items) \
            + ws() + "}"
    if isinstance(obj, list):
        return "[" + ws() + ("," + ws()).join(scrambled(v, rnd) for v in obj) + ws() + "]"
    return json.dumps(obj, ensure_ascii=rnd.random() < 0.5)


def policies(st, roots):
    """Valid policies: every section optional, values within their documented range."""
    lim = st.fixed_dictionaries({}, optional={
        "wall_ms": st.integers(1, 3600000), "cpu_ms": st.none() | st.integers(1, 10 ** 6),
        "memory_bytes": st.none() | st.integers(1 << 24, 1 << 34),
        "processes": st.none() | st.integers(1, 4096),
        "stdout_bytes": st.integers(0, 1 << 24), "stderr_bytes": st.integers(0, 1 << 24),
        "code_bytes": st.integers(1, 1 << 20),
        "call_output_bytes": st.integers(128, 1 << 24)})
    names = st.sampled_from(["LANG", "TZ", "HOME", "PYTHONHASHSEED", "A_B", "X1"])
    return st.fixed_dictionaries({"version": st.just("govex.policy/v1")}, optional={
        "limits": lim,
        "filesystem": st.fixed_dictionaries({}, optional={
            "read": st.lists(st.sampled_from(roots), max_size=3),
            "platform_defaults": st.booleans()}),
        "network": st.sampled_from(["deny", "allow"]),
        "subprocess": st.sampled_from(["deny", "allow"]),
        "shell": st.sampled_from(["deny", "allow"]),
        "environment": st.fixed_dictionaries({}, optional={
            "inherit": st.booleans(), "allow": st.lists(names, max_size=4),
            "set": st.dictionaries(names, st.text("abc=/ :", max_size=5), max_size=2)}),
        "approval": st.lists(st.sampled_from(["network", "filesystem_write", "shell",
                                              "subprocess"]), max_size=4),
        "effects": st.fixed_dictionaries({}, optional={"require_known": st.lists(
            st.sampled_from(["network", "filesystem_read", "filesystem_write",
                             "subprocess", "environment", "dynamic_code"]), max_size=6)}),
        "results": st.fixed_dictionaries({}, optional={
            "disclosure": st.sampled_from(["full", "sanitized"])}),
    })


@S.test("canonical policy: one form whatever the key order and whitespace; canon is "
        "idempotent; the digest is of those bytes", seconds=240)
def test_canonical_policy(t):
    hyp, st = need_hypothesis()
    roots = [os.path.realpath(p) for p in ("/usr/share", "/usr/lib", "/opt", "/srv")
             if os.path.isdir(p)]

    @settings(hyp, 60)
    @hyp.given(policies(st, roots), st.randoms(use_true_random=False))
    def prop(pol, rnd):
        a = t.write("a.json", scrambled(pol, rnd))
        b = t.write("b.json", scrambled(pol, rnd))
        ra, rb = t.run(["policy", "canon", a]), t.run(["policy", "canon", b])
        eq(ra.returncode, 0, "canon of %r: %s" % (pol, ra.err))
        eq(ra.stdout, rb.stdout, "two writings of one policy, two canonical forms")
        doc = json.loads(ra.out)
        eq(ra.stdout, C.gt.canonical_bytes(doc), "canon output is canonical bytes")
        c = t.write("c.json", ra.stdout)
        rc = t.run(["policy", "canon", c])
        eq(rc.stdout, ra.stdout, "canon of the canonical form")
        rd = t.run(["policy", "digest", a])
        eq(rd.out.strip(), C.gt.sha256_digest(ra.stdout), "digest of the canonical bytes")
    prop()


@S.test("a plan made twice is byte-identical", seconds=240)
def test_plan_determinism(t):
    hyp, st = need_hypothesis()
    code = st.text(st.sampled_from("print(1)\n x=\"é€\\\t#"), max_size=40)

    @settings(hyp, 25)
    @hyp.given(code, st.integers(1, 5000), st.lists(st.sampled_from(["a.txt", "b.bin"]),
                                                     unique=True))
    def prop(src, wall, files):
        p = t.write("code.py", src)
        argv = ["plan", "--preset", "trusted", "--timeout-ms", str(wall)]
        for f in files:
            argv += ["--file", "%s=%s" % (f, t.write(f, f * 3))]
        r1, r2 = t.run(argv + [p]), t.run(argv + [p])
        eq(r1.returncode, 0, "plan: %s" % r1.err)
        eq(r1.stdout, r2.stdout, "two plans of one request differ")
    prop()


SIG_ANN = ["int", "str", "float", "bool", "List[int]", "Dict[str, int]", "Optional[str]",
           None]


@S.test("the inspection of any signature is the same under python3.%d and python3.%d"
        % (OLDEST, NEWEST), seconds=280)
def test_inspection_across_interpreters(t):
    hyp, st = need_hypothesis()
    old, new = oldest_newest()
    param = st.tuples(st.sampled_from(SIG_ANN), st.booleans())

    @settings(hyp, 12)
    @hyp.given(st.lists(param, max_size=5), st.sampled_from(SIG_ANN), st.booleans(),
               st.booleans())
    def prop(params, ret, is_async, kwonly):
        ps, seen_default = [], False
        for i, (ann, default) in enumerate(params):
            default = default or seen_default
            seen_default = default
            ps.append("p%d%s%s" % (i, ": " + ann if ann else "", " = None" if default else ""))
        if kwonly and ps:
            ps.insert(len(ps) // 2, "*")
        src = ("from typing import Dict, List, Optional\n\n\n%sdef f(%s)%s:\n"
               "    \"\"\"Doc.\"\"\"\n    return None\n"
               % ("async " if is_async else "", ", ".join(ps),
                  " -> " + ret if ret else ""))
        m = C.module(t, "sig.py", src)
        docs = []
        for py in (old, new):
            pol = C.policy(t, base="trusted", python={"interpreter": py})
            r = t.run(["inspect", "--policy", pol, "--json", m])
            eq(r.returncode, 0, "inspect under %s: %s" % (py, r.err))
            docs.append(C.function_entry(json.loads(r.out), "f"))
        eq(C.gt.canonical_bytes(docs[0]), C.gt.canonical_bytes(docs[1]),
           "the function's entry under python3.%d and python3.%d differs for\n%s"
           % (OLDEST, NEWEST, src))
    prop()


def finite_json(st):
    chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
    text = st.text(alphabet=chars, max_size=8)
    scalars = (st.none() | st.booleans() | st.integers(*INT64)
               | st.floats(allow_nan=False, allow_infinity=False) | text)
    return st.recursive(scalars, lambda kids: st.lists(kids, max_size=3)
                        | st.dictionaries(text, kids, max_size=3), max_leaves=8)


@S.test("arguments round-trip exactly under python3.%d and python3.%d" % (OLDEST, NEWEST),
        seconds=280)
def test_transport_across_interpreters(t):
    hyp, st = need_hypothesis()
    interps = oldest_newest()
    m = C.module(t, "ident.py", "def ident(x):\n    return x\n")
    pols = [C.policy(t, base="trusted", python={"interpreter": py}) for py in interps]

    @settings(hyp, 15)
    @hyp.given(finite_json(st))
    def prop(v):
        for pol in pols:
            r = C.call(t, m + ":ident", json.dumps({"x": v}), opts=["--policy", pol])
            got = C.check_result(t, r, "success")["value"]
            check(C.exact(got, v), "under %s: sent %r, got %r" % (pol, v, got))
    prop()


@S.test("a value holding NaN or an infinity anywhere is result_invalid", seconds=200)
def test_non_finite_refused(t):
    hyp, st = need_hypothesis()
    m = C.module(t, "nf.py", """
        import json

        def bad(v, path):
            x = float(["nan", "inf", "-inf"][len(path) % 3])
            if not path:
                return x
            cur = v
            for k in path[:-1]:
                cur = cur[k]
            cur[path[-1]] = x
            return v
        """)

    @settings(hyp, 20)
    @hyp.given(st.integers(0, 3), st.integers(0, 3))
    def prop(depth, width):
        v, path, cur = [], [], None
        node = v
        for d in range(depth):
            node.extend([0] * width + [[]])
            path.append(width)
            node = node[width]
        node.append(1)
        path.append(0)
        r = C.call(t, m + ":bad", json.dumps({"v": v, "path": path if depth or width else []}),
                   opts=["--preset", "trusted"])
        doc = r.json()
        eq(doc["status"], "result_invalid", "a non-finite value at %r: %r" % (path, doc))
    prop()


@S.test("any one-byte change to a planned module is refused before it runs", seconds=240)
def test_source_mutation(t):
    hyp, st = need_hypothesis()
    d = C.shared_dir(t)
    marker = os.path.join(d, "ran")
    src = ("import os\nopen(%r, 'w').close()\n\n\ndef f(a: int) -> int:\n"
           "    return a + 1\n" % marker).encode()
    m = t.path("mut.py")

    @settings(hyp, 25)
    @hyp.given(st.integers(0, len(src) - 1), st.integers(1, 255))
    def prop(pos, delta):
        with open(m, "wb") as fh:
            fh.write(src)
        opts = C.backend_args(t, "trusted")
        r, plan = C.plan(t, m + ":f", opts)
        r.expect_rc(0)
        bad = bytearray(src)
        bad[pos] = (bad[pos] + delta) % 256
        with open(m, "wb") as fh:
            fh.write(bytes(bad))
        if os.path.exists(marker):
            os.unlink(marker)
        r = C.call(t, None, {"a": 1}, opts=opts, plan=plan)
        doc = r.json()
        check(doc["status"] != "success", "a mutated module ran: byte %d + %d" % (pos, delta))
        codes = [x["code"] for x in doc.get("diagnostics", [])]
        # a byte that makes the text invalid UTF-8 is refused as such, before digests
        check("source_mismatch" in codes or "invalid_code" in codes,
              "neither source_mismatch nor invalid_code for byte %d + %d: %r"
              % (pos, delta, codes))
        check(not os.path.exists(marker), "the mutated module ran (byte %d)" % pos)
    prop()


@S.test("stdout bounds: bytes counted, min(size, bound) kept, truncated iff cut",
        seconds=240)
def test_output_bounds(t):
    hyp, st = need_hypothesis()

    @settings(hyp, 30)
    @hyp.given(st.integers(0, 70000), st.integers(0, 65536))
    def prop(size, bound):
        pol = C.policy(t, base="trusted", limits={"stdout_bytes": bound})
        r = t.run(["run", "--policy", pol, "--json", "-c",
                   "import sys; sys.stdout.write('x' * %d)" % size])
        doc = r.json()
        eq(doc["status"], "success" if size <= bound else doc["status"], "status")
        eq(doc["stdout_bytes"], size, "stdout_bytes")
        eq(len(doc["stdout"]), min(size, bound), "bytes kept")
        eq(doc["stdout_truncated"], size > bound, "stdout_truncated")
    prop()


@S.test("environment: a run sees exactly the allowed names it was given", seconds=200)
def test_env_allowlist(t):
    hyp, st = need_hypothesis()
    names = ["GVX_A", "GVX_B", "GVX_C", "GVX_D"]

    @settings(hyp, 20)
    @hyp.given(st.sets(st.sampled_from(names)), st.sets(st.sampled_from(names)))
    def prop(allowed, given):
        pol = C.policy(t, base="trusted", environment={"allow": sorted(allowed)})
        argv = ["run", "--policy", pol, "--json"]
        for n in sorted(given & allowed):
            argv += ["--env", "%s=v%s" % (n, n)]
        code = ("import os, json; print(json.dumps(sorted(k for k in os.environ "
                "if k.startswith('GVX_'))))")
        r = t.run(argv + ["-c", code], extra_env={n: "host" for n in names})
        doc = r.json()
        eq(doc["status"], "success", "run: %r" % doc)
        eq(json.loads(doc["stdout"]), sorted(given & allowed), "names the run sees")
        # a name not on the list is refused by name, never passed
        for n in sorted(given - allowed)[:1]:
            r2 = t.run(["run", "--policy", pol, "--json", "--env", n + "=x", "-c", "1"])
            check(r2.json()["status"] != "success", "%s outside the allowlist was accepted"
                  % n)
    prop()


if __name__ == "__main__":
    random.seed(0)
    raise SystemExit(S.main())
