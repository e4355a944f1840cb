#!/usr/bin/env python3
"""Data code through `govex mcp` with the real numpy, pandas and matplotlib (Debian's
python3-numpy, python3-pandas, python3-matplotlib for /usr/bin/python3.11): numpy's
scalars and plain arrays as JSON values (a snippet's and a call's), pandas objects and
other values JSON cannot carry refused with their type and the fix, figures as PNG
images (plt.show() and the figures left open), an SVG as a resource and never an image,
and a denial that stopped nothing (pandas's `uname -p` under subprocess: deny) reported
as such.  Skips when the packages are not installed.  Prints TAP."""
import base64
import json
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

PYTHON = "/usr/bin/python3.11"
# what Debian's packages read at run time: their files, the libraries their extension
# modules load (libblas through /etc/alternatives), matplotlib's rc file, data and fonts,
# pytz's zone files.  Named explicitly so that the test keeps passing once govex finds
# them itself.
READ = ["/usr/lib/python3/dist-packages", "/usr/lib/x86_64-linux-gnu", "/etc/alternatives",
        "/etc/matplotlibrc", "/usr/share/matplotlib", "/usr/share/fonts",
        "/usr/share/zoneinfo"]
_have = {}


def need_stack():
    if "ok" not in _have:
        try:
            p = subprocess.run([PYTHON, "-c", "import numpy, pandas, matplotlib"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
            _have["ok"] = p.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _have["ok"] = False
    if not _have["ok"]:
        raise m.Skip("numpy, pandas and matplotlib are not installed for %s" % PYTHON)


def policy(t):
    """strict, with Debian's interpreter and its site-packages, and what they read."""
    p = subprocess.run([m.GOVEX, "policy", "show", "strict"], stdout=subprocess.PIPE,
                       check=True, timeout=30)
    pol = json.loads(p.stdout.decode("utf-8"))
    pol["python"] = dict(pol["python"], interpreter=PYTHON, site=True)
    fs = dict(pol["filesystem"])
    fs["read"] = sorted(set(fs.get("read") or []) | set(READ))
    pol["filesystem"] = fs
    # pandas's import takes seconds on a loaded machine
    pol["limits"] = dict(pol["limits"], wall_ms=60000, cpu_ms=60000)
    return m.write(t, "data-policy.json", json.dumps(pol))


_env = {}   # the server's environment: warm templates (the default) or GOVEX_WARM=0


def server(t, *extra):
    need_stack()
    env = dict(os.environ, **_env) if _env else None
    s = m.Server(["--policy", policy(t)] + list(extra), cwd=t, env=env)
    s.initialize()
    return s


def cold(fn):
    """FN with every run of its servers cold (GOVEX_WARM=0)."""
    def run(t):
        _env["GOVEX_WARM"] = "0"
        try:
            fn(t)
        finally:
            _env.clear()
    return run


def snippet(s, code):
    r = s.call("run_python_snippet", {"code": code}, timeout=90)
    return r, m.result_doc(r)


def success(doc):
    m.check(doc["status"] == "success", "status %s: %s" % (
        doc["status"], json.dumps(doc)[:3000]))


def omitted(doc):
    ds = [d for d in doc["diagnostics"] if d["code"] == "value_omitted"]
    m.check(len(ds) == 1, "one value_omitted: %r" % doc["diagnostics"])
    return ds[0]


def test_numpy_scalars_and_arrays(t):
    """numpy's bool, integer and float scalars (a pandas mean is a float64) and plain
    arrays of them are JSON: exactly their values, as numbers, booleans and lists."""
    s = server(t)
    r, doc = snippet(s, (
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2, 4], 'b': [0.5, 1.5, 2.5]})\n"
        "{'mean': df['a'].mean(), 'sum': df['a'].sum(), 'max': df['b'].max(),\n"
        " 'any': (df['a'] > 3).any(), 'f32': np.float32(0.1), 'u8': np.uint8(255),\n"
        " 'i64': np.int64(-2**63), 'u64': np.uint64(2**63 - 1), 'f16': np.float16(0.5),\n"
        " 'vec': np.arange(3), 'mat': np.array([[1.5, -2.0], [0.0, 3.25]]),\n"
        " 'flags': np.array([True, False]), 'zero_d': np.array(7), 'empty': np.zeros(0),\n"
        " 'words': np.array(['x', 'yz']), 'in_list': [np.float64(2.5), np.int32(3)]}\n"))
    success(doc)
    m.eq(doc["value"], {
        "mean": 2.3333333333333335, "sum": 7, "max": 2.5, "any": True,
        "f32": 0.10000000149011612, "u8": 255, "i64": -2 ** 63, "u64": 2 ** 63 - 1,
        "f16": 0.5, "vec": [0, 1, 2], "mat": [[1.5, -2.0], [0.0, 3.25]],
        "flags": [True, False], "zero_d": 7, "empty": [], "words": ["x", "yz"],
        "in_list": [2.5, 3]}, "value")
    m.check(not [d for d in doc["diagnostics"] if d["code"] == "value_omitted"],
            "no value_omitted: %r" % doc["diagnostics"])
    # the text for the model shows the same numbers
    m.check('"mean":2.3333333333333335' in m.text_of(r), "value in the text: %s"
            % m.text_of(r)[:2000])
    # a bare float64 (the case) and a bool_
    r, doc = snippet(s, "import numpy as np\nnp.float64(1) / 3\n")
    success(doc)
    m.eq(doc["value"], 1 / 3, "a float64")
    r, doc = snippet(s, "import numpy as np\nnp.bool_(False)\n")
    success(doc)
    m.eq(doc["value"], False, "a bool_")
    s.close()


def test_refusals_name_type_and_fix(t):
    """What JSON cannot carry exactly is refused, its type and the fix named: a
    DataFrame (.to_dict()), a Series (.tolist() / .to_dict()), a NaN float64 (NaN is not
    JSON: the reason, not "not finite JSON data" alone), an array with an infinity, a
    complex array, a uint64 over 64 signed bits, a Timestamp (str(x)), a long double
    (float(x)), and a tuple holding a Series (the item's type)."""
    s = server(t)
    cases = [
        ("df", "DataFrame", None, "to_dict", "df.to_dict()"),
        ("df['a']", "Series", None, "series", "s.tolist()"),
        ("np.float64('nan')", "float64", None, "finite", "NaN and infinities are not JSON"),
        ("np.array([1.0, np.inf])", "ndarray", None, "finite", "NaN and infinities"),
        ("np.array([1j])", "ndarray", None, "complex", "x.real"),
        ("np.uint64(2**64 - 1)", "uint64", None, "int_range", "str(x)"),
        ("pd.Timestamp('2024-01-02')", "Timestamp", None, "str", "str(x)"),
        ("np.longdouble(1) / 3", "float128", None, "float", "float(x)"),
        ("{'col': df['a']}", "dict", "Series", "series", "s.to_dict()"),
        ("(1, 2)", "tuple", None, "list", "list(x)"),
    ]
    for expr, tname, item, fix, words in cases:
        r, doc = snippet(s, "import numpy as np, pandas as pd\n"
                            "df = pd.DataFrame({'a': [1, 2]})\n%s\n" % expr)
        success(doc)
        m.eq(doc["value"], None, "%s: value" % expr)
        d = omitted(doc)
        m.eq((d["type"], d.get("item_type"), d.get("fix")), (tname, item or tname, fix),
             "%s: type, item, fix" % expr)
        m.check(words in d["message"] and tname in d["message"],
                "%s: message %r lacks %r" % (expr, d["message"], words))
        if item:
            m.check(item in d["message"], "%s: the item's type in %r" % (expr, d["message"]))
        m.check(d["message"] in m.text_of(r), "%s: message in the text" % expr)
    s.close()


def test_call_values(t):
    """A module tool (call mode) returning numpy values: the same conversion; a
    DataFrame is result_invalid with the fix in its message."""
    need_stack()
    mod = m.write(t, "stats.py",
                  "import numpy as np\n"
                  "import pandas as pd\n\n\n"
                  "def mean(xs: list) -> float:\n"
                  "    return np.mean(np.array(xs, dtype=float))\n\n\n"
                  "def hist(xs: list) -> list:\n"
                  "    return np.histogram(xs, bins=2)[0]\n\n\n"
                  "def frame(n: int):\n"
                  "    return pd.DataFrame({'a': list(range(n))})\n")
    s = server(t, "--module", mod)
    r = s.call("mean", {"xs": [1, 2, 4]}, timeout=90)
    doc = m.result_doc(r)
    success(doc)
    m.eq(doc["value"], 7 / 3, "mean")
    doc = m.result_doc(s.call("hist", {"xs": [1, 2, 2, 9]}, timeout=90))
    success(doc)
    m.eq(doc["value"], [3, 1], "histogram counts")
    r = s.call("frame", {"n": 2}, timeout=90)
    doc = m.result_doc(r)
    m.eq(doc["status"], "result_invalid", "a DataFrame")
    msg = " ".join(d["message"] for d in doc["diagnostics"])
    m.check("DataFrame" in msg.replace("dataframe", "DataFrame") and "to_dict()" in msg,
            "the fix for a DataFrame: %r" % doc["diagnostics"])
    s.close()


def test_worker_never_imports_numpy(t):
    """A value that is not JSON, from code that imported neither numpy nor pandas: the
    worker's check imports neither (seen at the program's exit, after the check)."""
    s = server(t)
    r, doc = snippet(s, "import atexit, sys\n"
                        "atexit.register(lambda: print(sorted(m for m in ('numpy', 'pandas',"
                        " 'matplotlib') if m in sys.modules)))\n"
                        "{1, 2}\n")
    success(doc)
    m.eq(omitted(doc)["type"], "set", "the value's type")
    m.eq(doc["stdout"], "[]\n", "modules imported by the end")
    s.close()


def png_size(data):
    m.check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG: %r" % data[:16])
    return struct.unpack(">II", data[16:24])


def test_figures(t):
    """plt.show() and the figures left open come back as PNG images (files figure-N.png
    in GOVEX_OUTPUT_DIR, listed in the result, image content for the model), each once;
    the backend is Agg (MPLBACKEND), so nothing looks for a display."""
    s = server(t)
    r, doc = snippet(s, (
        "import os\n"
        "import matplotlib\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\n"
        "plt.title('first')\n"
        "plt.show()\n"
        "fig, ax = plt.subplots(figsize=(3, 2))\n"
        "ax.bar(['a', 'b'], [3, 5])\n"
        "[matplotlib.get_backend().lower(), os.environ.get('MPLBACKEND'),\n"
        " plt.get_fignums(), sorted(os.listdir(os.environ['GOVEX_OUTPUT_DIR']))]\n"))
    success(doc)
    # at the last expression: the shown figure written and closed, the second still open
    m.eq(doc["value"], ["agg", "Agg", [1], ["figure-1.png"]], "backend, figures, files")
    m.eq([(f["name"], f["mime"]) for f in doc["files"]],
         [("figure-1.png", "image/png"), ("figure-2.png", "image/png")], "files")
    imgs = [c for c in r["result"]["content"] if c["type"] == "image"]
    m.eq([c["mimeType"] for c in imgs], ["image/png", "image/png"], "image blocks")
    sizes = [png_size(base64.b64decode(c["data"])) for c in imgs]
    m.eq(sizes, [(640, 480), (300, 200)], "each figure's size (the default, 3x2 in)")
    # a snippet that writes its own file keeps it; the figure takes the next free name
    r, doc = snippet(s, (
        "import os\nimport matplotlib.pyplot as plt\n"
        "open(os.path.join(os.environ['GOVEX_OUTPUT_DIR'], 'figure-1.png'), 'w').write('mine')\n"
        "plt.plot([0, 1])\n"))
    success(doc)
    m.eq(sorted(f["name"] for f in doc["files"]), ["figure-1.png", "figure-2.png"],
         "an existing name is not taken")
    # no pyplot, no figures
    r, doc = snippet(s, "import matplotlib\nmatplotlib.__name__\n")
    success(doc)
    m.eq(doc["files"], [], "no figures without pyplot")
    s.close()


def test_svg_is_a_resource(t):
    """An SVG the run leaves (a figure saved as one) is an embedded resource with its
    text and image/svg+xml, not an image block: model APIs take only PNG, JPEG, GIF and
    WebP as images."""
    s = server(t)
    r, doc = snippet(s, (
        "import os\nimport matplotlib.pyplot as plt\n"
        "out = os.environ['GOVEX_OUTPUT_DIR']\n"
        "fig = plt.figure()\nplt.plot([1, 2])\n"
        "fig.savefig(os.path.join(out, 'plot.svg'))\nplt.close(fig)\n"))
    success(doc)
    m.eq([(f["name"], f["mime"]) for f in doc["files"]], [("plot.svg", "image/svg+xml")],
         "files")
    content = r["result"]["content"]
    m.eq([c for c in content if c["type"] == "image"], [], "no image block")
    res = [c["resource"] for c in content if c["type"] == "resource"]
    m.eq([(x["uri"], x["mimeType"]) for x in res],
         [("govex://output/plot.svg", "image/svg+xml")], "resource")
    m.check("<svg" in res[0].get("text", ""), "the SVG as text: %r" % (res[0],))
    s.close()


def test_denial_that_stopped_nothing(t):
    """pandas runs `uname -p` at import (platform.processor()); under subprocess: deny
    the run still succeeds: the denial is reported as attempted, refused and gone past
    (counted, its control named), without "retrying will not help"; a run that fails
    after a denial still says it."""
    s = server(t)
    r, doc = snippet(s, "import pandas as pd\nint(pd.Series([1, 2]).sum())\n")
    success(doc)
    m.eq(doc["value"], 3, "value")
    ds = [d for d in doc["diagnostics"] if d["code"] == "denied_by_policy"]
    m.check(len(ds) == 1, "one denial: %r" % doc["diagnostics"])
    d = ds[0]
    m.eq(d["controls"], ["subprocess_deny"], "control")
    m.check(d["attempts"] >= 1, "counted: %r" % d)
    n = d["attempts"]
    want = ("the policy refused starting programs (%d attempt%s, control "
            "subprocess_deny); the code went on and the run succeeded"
            % (n, "" if n == 1 else "s"))
    m.eq(d["message"], want, "message")
    text = m.text_of(r)
    m.check("denied_by_policy: " + want in text, "the denial in the text: %s" % text)
    m.check("retrying will not help" not in text, "retry advice on a success: %s" % text)
    # a run that fails after its denial: the old words, the advice kept
    r, doc = snippet(s, "import subprocess\nsubprocess.run(['/bin/true'])\n")
    m.eq(doc["status"], "execution_failed", "a failed exec")
    d = [d for d in doc["diagnostics"] if d["code"] == "denied_by_policy"][0]
    m.check(d["message"].startswith("the policy denies starting programs ("), d["message"])
    m.check("retrying will not help" in m.text_of(r), m.text_of(r))
    s.close()


TESTS = [
    ("numpy scalars and plain arrays are JSON values", test_numpy_scalars_and_arrays),
    ("pandas objects and non-JSON values: refused, type and fix named",
     test_refusals_name_type_and_fix),
    ("call mode: numpy values converted, a DataFrame refused with the fix", test_call_values),
    ("the worker never imports numpy or pandas itself", test_worker_never_imports_numpy),
    ("plt.show() and open figures come back as PNG images", test_figures),
    ("an SVG output is a resource, not an image", test_svg_is_a_resource),
    ("a denial on a successful run: attempted, refused, the run went on",
     test_denial_that_stopped_nothing),
    ("numpy scalars and plain arrays are JSON values [cold]",
     cold(test_numpy_scalars_and_arrays)),
    ("plt.show() and open figures come back as PNG images [cold]", cold(test_figures)),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
