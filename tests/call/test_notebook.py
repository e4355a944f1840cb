#!/usr/bin/env python3
"""Call mode on notebooks: the code cells of an .ipynb, in order, are one module; a
function of a later cell can use names of an earlier one; markdown (and raw) cells do
not count as code; a cell with an IPython magic or shell escape makes the notebook
invalid_input, naming the cell (0-based, counting every cell).  Prints TAP."""
import json
import os

import calltest as C
from calltest import check, eq

S = C.Suite()

CELLS = [
    ("markdown", "# Geometry\nSome *text* with %percent and !bang at line starts:\n"
                 "%not_magic\n!not_shell\n"),
    ("code", "import math\nSCALE = 10\n"),
    ("markdown", "## Area\n"),
    ("code", """
        def area(r: float, *, scale: bool = True):
            \"\"\"Area of a circle.\"\"\"
            a = math.pi * r * r
            return round(a * SCALE if scale else a, 3)
        """),
]


@S.both("a function of the second code cell, using the first cell's names")
def _call(t, b):
    nb = C.notebook(t, "geo.ipynb", CELLS)
    eq(C.value_of(t, C.call(t, nb + ":area", {"r": 2}, opts=["--preset", b])),
       round(3.141592653589793 * 4 * 10, 3), "value")
    eq(C.value_of(t, C.call(t, nb + ":area", {"r": 1, "scale": False},
                            opts=["--preset", b])),
       round(3.141592653589793, 3), "value, keyword-only given")


@S.test("inspect a notebook: its functions, the digest of the joined code cells")
def _inspect(t):
    nb = C.notebook(t, "geo.ipynb", CELLS)
    doc, _ = C.inspect(t, nb, ["--preset", "strict"])
    eq([f["name"] for f in doc["functions"]], ["area"], "functions")
    f = C.function_entry(doc, "area")
    eq(f["docstring"], "Area of a circle.", "docstring")
    eq([(q["name"], q["kind"]) for q in f["parameters"]],
       [("r", "positional_or_keyword"), ("scale", "keyword_only")], "parameters")
    eq(doc["module"], "geo", "module")
    # the bound source: code cells in order, each ending with a newline
    cells = json.load(open(nb))["cells"]
    joined = "".join(s if s.endswith("\n") else s + "\n"
                     for s in ("".join(c["source"]) for c in cells
                               if c["cell_type"] == "code"))
    eq(doc["source_digest"], C.gt.sha256_digest(joined.encode()),
       "source_digest: the digest of the joined code cells")


@S.both("a cell with %magic / !shell / %%cell magic: invalid_input naming the cell")
def _magics(t, b):
    d = C.shared_dir(t)
    marker = os.path.join(d, "loaded")
    for i, line in enumerate(("%time y = 2", "!ls", "%%bash", "   %matplotlib inline",
                              "!echo pwned > /tmp/pwned")):
        cells = [("code", "open(%r, 'w').close()\n" % marker)] + list(CELLS) + \
                [("code", "x = 1\n" + line + "\n")]
        nb = C.notebook(t, "nb%d.ipynb" % i, cells)
        r = C.call(t, nb + ":area", {"r": 1}, opts=C.backend_args(t, b, writable=d))
        try:
            doc = C.check_result(t, r, "invalid_input", "invalid_notebook", rc=125)
        except C.Failure as e:
            raise C.Failure("%r: %s" % (line, e))
        msg = C.diag(doc, "invalid_notebook")["message"]
        check("cell 5" in msg, "%r: the message does not name cell 5 (0-based, every cell "
              "counted): %r" % (line, msg))
        check(not os.path.exists(marker), "%r: a cell ran" % line)
    # inspect says the same
    r = t.run(["inspect", "--json", nb], timeout=C.CALL_TIMEOUT)
    C.check_result(t, r, "invalid_input", "invalid_notebook", rc=125)


# Python that has % or ! at the start of a physical line but not of a logical one:
# IPython does not take these for magics (issue 11), and neither may govex.  (name,
# cell source, the value of f() or "magic" when it must still be refused)
NOT_MAGIC = [
    ("triple-quoted string", 'DOC = """usage:\n%prog [options]\n!important\n"""\n'
                             'def f():\n    return DOC.count("%") + DOC.count("!")\n', 2),
    ("single-quote triple string", "T = '''\n  %d items\n'''\n"
                                   "def f():\n    return T.strip() % 3\n", "3 items"),
    ("continuation in parentheses", "X = (10\n% 3)\ndef f():\n    return X\n", 1),
    ("continuation in a dict", "Y = {True:\n!False}\ndef f():\n    return 0\n", None),
    ("backslash continuation", "Z = 17 \\\n    % 5\ndef f():\n    return Z\n", 2),
    ("string with an escaped quote", "S = 'it\\'s ('\nW = 7\n"
                                     "def f():\n    return S + str(W)\n", "it's (7"),
    ("a bracket in a comment", "V = 4  # (\n%time V\n", "magic"),
]

REAL_MAGICS = ['S = """a\nb"""\n%time x = 1\n', "T = (1,\n2)\n!ls\n",
               "# a comment (\n%matplotlib inline\n", "U = 'x'  # '''\n  !echo hi\n",
               "%%bash\necho\n", "V = r'\\'\n!ls\n"]


def one_cell(t, name, src):
    return t.write(name, json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                   "execution_count": None, "source": src}]}))


@S.test("% and ! that IPython does not take for magics (in strings, continuation lines) "
        "are Python; real magics after a closed string or bracket are still refused")
def _not_magics(t):
    for i, (name, src, want) in enumerate(NOT_MAGIC):
        nb = one_cell(t, "nm%d.ipynb" % i, src)
        r = C.call(t, nb + ":f", {}, opts=["--preset", "strict"])
        try:
            if want == "magic":
                C.check_result(t, r, "invalid_input", "invalid_notebook", rc=125)
            elif want is None:
                # {True: !False} is a SyntaxError for Python, but not a magic for IPython
                check("magic" not in json.dumps(r.result()["diagnostics"]),
                      "refused as a magic: %r" % r.result()["diagnostics"])
            else:
                eq(C.value_of(t, r), want, "value")
        except C.Failure as e:
            raise C.Failure("%s: %s" % (name, e))
    for i, src in enumerate(REAL_MAGICS):
        nb = one_cell(t, "m%d.ipynb" % i, src)
        r = C.call(t, nb + ":f", {}, opts=["--preset", "strict"])
        try:
            doc = C.check_result(t, r, "invalid_input", "invalid_notebook", rc=125)
            check("magic" in json.dumps(doc["diagnostics"]), "not refused as a magic")
        except C.Failure as e:
            raise C.Failure("%r: %s" % (src, e))


@S.test("not a notebook: malformed JSON, no cells, a cell source that is not text")
def _broken(t):
    cases = {
        "garbage.ipynb": b"{ not json",
        "nocells.ipynb": json.dumps({"nbformat": 4, "metadata": {}}).encode(),
        "badsrc.ipynb": json.dumps({"nbformat": 4, "metadata": {}, "nbformat_minor": 5,
                                    "cells": [{"cell_type": "code", "metadata": {},
                                               "source": 42, "outputs": []}]}).encode(),
    }
    for name, data in cases.items():
        p = t.write(name, data)
        r = C.call(t, p + ":f", {}, opts=["--preset", "strict"])
        try:
            C.check_result(t, r, "invalid_input", "invalid_notebook", rc=125)
        except C.Failure as e:
            raise C.Failure("%s: %s" % (name, e))


@S.test("an async function in a notebook cell; no state between two calls")
def _async_state(t):
    nb = C.notebook(t, "a.ipynb", [
        ("code", "import asyncio\nN = 0\n"),
        ("raw", "def not_code(): pass\n"),
        ("code", "async def bump(k: int):\n    global N\n    await asyncio.sleep(0)\n"
                 "    N += k\n    return N\n"),
    ])
    doc, _ = C.inspect(t, nb, ["--preset", "strict"])
    eq([f["name"] for f in doc["functions"]], ["bump"], "raw cells are not code")
    for _ in range(2):
        eq(C.value_of(t, C.call(t, nb + ":bump", {"k": 5}, opts=["--preset", "strict"])), 5,
           "value")


if __name__ == "__main__":
    raise SystemExit(S.main())
