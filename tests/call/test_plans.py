#!/usr/bin/env python3
"""Call plans: `govex plan FILE:FUNCTION` prints the canonical govex.plan/v1 ("kind":
"call") without running user code; `govex call --plan` runs exactly that plan, and any
change in between (one source byte, a renamed function, a changed signature, another
function, another policy or limit, a notebook's markdown) refuses with nothing run.
Prints TAP."""
import hashlib
import json
import os

import calltest as C
from calltest import check, eq

S = C.Suite()

SRC = """
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

def f(a: int, b: int = 2):
    \"\"\"Adds.\"\"\"
    _mark(MARK + ".ran")
    return a + b

def other(a: int, b: int = 2):
    _mark(MARK + ".ran")
    return a - b
"""


def setup(t, backend="strict"):
    d = C.shared_dir(t)
    marker = os.path.join(d, "m")
    m = C.module(t, "mod.py", SRC.format(marker=marker))
    opts = C.backend_args(t, backend, writable=d)
    r, p = C.plan(t, m + ":f", opts)
    r.expect_rc(0)
    return m, marker, opts, p


def nothing_ran(marker, what):
    for suffix in (".loaded", ".ran"):
        check(not os.path.exists(marker + suffix),
              "%s: user code ran (%s exists)" % (what, os.path.basename(marker + suffix)))


@S.test("govex plan: canonical govex.plan/v1, kind call, binds source, function, "
        "inspection; deterministic; runs nothing")
def _plan_doc(t):
    m, marker, opts, p = setup(t)
    raw = open(p, "rb").read()
    doc = json.loads(raw)
    eq(raw, C.gt.canonical_bytes(doc), "plan bytes are canonical")
    eq(doc["version"], "govex.plan/v1", "version")
    eq(doc["kind"], "call", "kind")
    src = open(m, "rb").read()
    eq(doc["source"]["digest"], C.gt.sha256_digest(src), "source.digest")
    eq(doc["source"]["bytes"], len(src), "source.bytes")
    eq(doc["source"]["path"], os.path.realpath(m), "source.path")
    eq(doc["source"]["module"], "mod", "source.module")
    fn = doc["function"]
    eq(fn["name"], "f", "function.name")
    eq([(q["name"], q["kind"], q["has_default"]) for q in fn["parameters"]],
       [("a", "positional_or_keyword", False), ("b", "positional_or_keyword", True)],
       "function.parameters")
    check(C.gt.DIGEST_RE.match(doc.get("inspection_digest") or ""), "inspection_digest")
    ins, _ = C.inspect(t, m, opts)
    eq(C.function_entry(ins, "f"), fn, "the plan's function is the inspection's entry")
    eq(doc["inspection_digest"], C.gt.sha256_digest(C.gt.canonical_bytes(ins)),
       "inspection_digest is the digest of the canonical inspection")
    iface = {k: fn[k] for k in ("name", "async", "parameters", "returns", "input_schema",
                                "output_schema") if k in fn}
    eq(doc["interface_digest"], C.gt.sha256_digest(C.gt.canonical_bytes(iface)),
       "interface_digest is the digest of the function's canonical interface")
    r2, p2 = C.plan(t, m + ":f", opts)
    eq(open(p2, "rb").read(), raw, "a second plan is byte-identical")
    nothing_ran(marker, "plan")


@S.test("interface_digest: the same across a docstring or body edit, another for a "
        "changed signature or annotation")
def test_interface_digest(t):
    m, marker, opts, p = setup(t)
    d0 = json.load(open(p))["interface_digest"]
    src = open(m).read()

    def digest_of(text):
        with open(m, "w") as fh:
            fh.write(text)
        r, p2 = C.plan(t, m + ":f", opts)
        r.expect_rc(0)
        return json.load(open(p2))["interface_digest"]
    eq(digest_of(src.replace('"""Adds."""', '"""Adds two numbers."""')), d0,
       "a docstring edit changes interface_digest")
    eq(digest_of(src.replace("return a + b", "return b + a")), d0,
       "a body edit changes interface_digest")
    for what, new in (("a parameter added", "def f(a: int, b: int = 2, c: int = 0)"),
                      ("an annotation", "def f(a: str, b: int = 2)"),
                      ("positional-only", "def f(a: int, /, b: int = 2)"),
                      ("a return annotation", "def f(a: int, b: int = 2) -> int")):
        d = digest_of(src.replace("def f(a: int, b: int = 2)", new))
        check(d != d0, "%s leaves interface_digest as it was" % what)
    nothing_ran(marker, "plans")


@S.both("call --plan runs exactly the plan; the result carries its digest")
def _plan_call(t, b):
    m, marker, opts, p = setup(t, b)
    raw = open(p, "rb").read()
    for target in (None, m + ":f"):
        r = C.call(t, target, {"a": 40}, opts=opts, plan=p)
        doc = C.check_result(t, r, "success")
        eq(doc["value"], 42, "value")
        eq(doc["plan_digest"], C.gt.sha256_digest(raw), "plan_digest")
        eq(doc["policy_digest"], json.loads(raw)["policy_digest"], "policy_digest")


def mismatch(t, m, marker, opts, p, what, status="source_mismatch", code="source_mismatch",
             target=None, extra_opts=(), timeout_ms=None):
    r = C.call(t, target, {"a": 1}, opts=list(opts) + list(extra_opts), plan=p,
               timeout_ms=timeout_ms)
    try:
        doc = C.check_result(t, r, status, code, rc=125)
        eq(doc["termination"], "refused", "termination")
    except C.Failure as e:
        raise C.Failure("%s: %s" % (what, e))
    nothing_ran(marker, what)
    return doc


@S.both("a one-byte source change after planning: source_mismatch, the marker is absent")
def _one_byte(t, b):
    m, marker, opts, p = setup(t, b)
    src = open(m, "rb").read()
    i = src.index(b"a + b")
    with open(m, "wb") as fh:
        fh.write(src[:i] + b"a - b" + src[i + 5:])      # one byte: + -> -
    eq(len(open(m, "rb").read()), len(src), "same length")
    doc = mismatch(t, m, marker, opts, p, "one byte")
    eq(doc["plan_digest"], None, "plan_digest")
    mismatch(t, m, marker, opts, p, "one byte, FILE:FUNCTION given", target=m + ":f")


@S.test("a trailing newline added after planning: source_mismatch")
def _newline(t):
    m, marker, opts, p = setup(t)
    with open(m, "ab") as fh:
        fh.write(b"\n")
    mismatch(t, m, marker, opts, p, "trailing newline")


@S.test("the function renamed after planning: refused (source_mismatch), nothing ran")
def _renamed(t):
    m, marker, opts, p = setup(t)
    src = open(m).read()
    with open(m, "w") as fh:
        fh.write(src.replace("def f(", "def g("))
    mismatch(t, m, marker, opts, p, "renamed")


@S.test("the signature changed after planning: refused (source_mismatch), nothing ran")
def _signature(t):
    m, marker, opts, p = setup(t)
    src = open(m).read()
    with open(m, "w") as fh:
        fh.write(src.replace("def f(a: int, b: int = 2)", "def f(a: int, b: int = 2, *, c=0)"))
    mismatch(t, m, marker, opts, p, "signature")
    with open(m, "w") as fh:
        fh.write(src.replace("def f(a: int, b: int = 2)", "def f(a: int, /, b: int = 2)"))
    mismatch(t, m, marker, opts, p, "positional-only")


@S.test("the source restored byte for byte: the plan runs again")
def _restored(t):
    m, marker, opts, p = setup(t)
    src = open(m, "rb").read()
    with open(m, "ab") as fh:
        fh.write(b"#")
    mismatch(t, m, marker, opts, p, "changed")
    with open(m, "wb") as fh:
        fh.write(src)
    eq(C.value_of(t, C.call(t, None, {"a": 1}, opts=opts, plan=p)), 3, "value")


@S.test("--plan with FILE:FUNCTION naming another function: refused, nothing ran")
def _other_function(t):
    m, marker, opts, p = setup(t)
    r = C.call(t, m + ":other", {"a": 1}, opts=opts, plan=p)
    doc = r.result()
    check(doc["status"] in ("policy_refused", "source_mismatch", "invalid_input"),
          "status %r" % doc["status"])
    C.check_result(t, r, doc["status"], rc=125)
    nothing_ran(marker, "other function")


@S.test("another policy or a different --timeout-ms than planned: policy_refused")
def _policy_changed(t):
    m, marker, opts, p = setup(t)
    mismatch(t, m, marker, ["--preset", "trusted"], p, "policy", status="policy_refused",
             code="policy_changed")
    mismatch(t, m, marker, opts, p, "timeout", status="policy_refused", code="plan_mismatch",
             timeout_ms=1000)


@S.test("a tampered plan file (parameters edited): refused, nothing ran")
def _tampered(t):
    m, marker, opts, p = setup(t)
    doc = json.load(open(p))
    doc["function"]["parameters"][1]["has_default"] = False
    t.write("tampered.json", C.gt.canonical_bytes(doc))
    r = C.call(t, None, {"a": 1}, opts=opts, plan=t.path("tampered.json"))
    res = r.result()
    check(res["status"] in ("policy_refused", "source_mismatch", "invalid_input"),
          "status %r" % res["status"])
    C.check_result(t, r, res["status"], rc=125)
    nothing_ran(marker, "tampered plan")
    t.write("garbage.json", b"{not a plan")
    C.check_result(t, C.call(t, None, {"a": 1}, opts=opts, plan=t.path("garbage.json")),
                   "invalid_input", "invalid_plan", rc=125, path_ok=True)


NB_CELLS = [
    ("markdown", "# A notebook\n"),
    ("code", "import os\nMARK = {marker!r}\nopen(MARK + '.loaded', 'w').close()\n"),
    ("code", "def f(a: int):\n    open(MARK + '.ran', 'w').close()\n    return a * 2\n"),
]


@S.test("notebook plan: runs; a markdown-only change after planning is source_mismatch "
        "(the notebook's bytes are bound), nothing ran")
def _notebook_plan(t):
    d = C.shared_dir(t)
    marker = os.path.join(d, "m")
    cells = [(k, s.format(marker=marker)) for k, s in NB_CELLS]
    nb = C.notebook(t, "nb.ipynb", cells)
    opts = C.backend_args(t, "strict", writable=d)
    r, p = C.plan(t, nb + ":f", opts)
    r.expect_rc(0)
    pdoc = json.load(open(p))
    eq(pdoc["source"]["notebook_digest"], C.gt.sha256_digest(open(nb, "rb").read()),
       "source.notebook_digest")
    nothing_ran(marker, "plan")
    eq(C.value_of(t, C.call(t, None, {"a": 21}, opts=opts, plan=p)), 42, "value")
    os.unlink(marker + ".loaded")
    os.unlink(marker + ".ran")
    cells[0] = ("markdown", "# A notebook, retitled\n")
    C.notebook(t, "nb.ipynb", cells)
    mismatch(t, nb, marker, opts, p, "markdown change")


if __name__ == "__main__":
    raise SystemExit(S.main())
