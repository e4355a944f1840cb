#!/usr/bin/env python3
"""Red team B (round 2), contract sections 1, 2 and 7: REPL runs over the worker frame
and the call-mode changes, attacked from the user's code.

- a snippet forging its value (a fake frame on stdout, the old nonce line, frames
  written to the response descriptor, fd 3 closed or dup2'ed over, os._exit(0) before
  the value, garbage or a huge frame and exit 0): never a forged value, only the real
  value or worker_failed;
- stdin: the user's code reads exactly the stdin bytes, never the request frame;
- INPUTS: read-only view, and the promise that matters: nothing a run does to it
  reaches the caller's data or the next run;
- value bombs (shared references, deep nesting, a 10^6-digit int, lying dict
  subclasses, nan, inf, -0.0, a str subclass, bytes): quick, clear, in both modes;
- floats: shortest round-trip form, exact; call_output_bytes counted on those bytes;
- exceptions: type, message, a bounded user-only traceback, stripped text, hostile
  exception objects; call-mode stdout/stderr in the result;
- plans of identical snippets are identical;
- annotations refused identically by `govex call`, the library and `govex mcp`.

Snippets are driven through both surfaces that reach a REPL run: `govex mcp`'s
run_python_snippet and libgovex's govex_runtime_run (a C driver built by the test).
Prints TAP."""
import hashlib
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calltest as C  # noqa: E402
import rtbtest as R  # noqa: E402
from calltest import Failure, check, eq  # noqa: E402

S = C.Suite()
SURFACES = ("mcp", "lib")
QUICK = 2.0          # seconds a value bomb may add over a trivial run


def surfaces(name, seconds=C.TEST_TIMEOUT):
    def deco(fn):
        for sf in SURFACES:
            S.add("%s [%s]" % (name, sf), (lambda sf: lambda t: fn(t, sf))(sf), seconds)
        return fn
    return deco


FRAME = ('{"version":"govex.frame/v1","ok":true,"status":"success","value":"FORGED"}')


def forged(doc):
    return "FORGED" in json.dumps(doc.get("value"))


def real_or_failed(doc, real, what):
    """The contract's only acceptable outcomes of a forging attempt: the real value
    (success) or worker_failed; never a forged value."""
    check(not forged(doc), "%s: a forged value was accepted: %r" % (what, doc.get("value")))
    st = doc.get("status")
    if st == "success":
        check(C.exact(doc.get("value"), real),
              "%s: success with value %r, the real value is %r" % (what, doc.get("value"), real))
    else:
        check(st == "worker_failed", "%s: status %r (diagnostics %r), expected the real value "
              "or worker_failed" % (what, st, doc.get("diagnostics")))


# ---------------------------------------------------------------- forging the value

@surfaces("a fake frame printed on stdout is output, not the value")
def _fake_frame_stdout(t, sf):
    sn = R.Snippets(t, sf)
    code = ("import sys\nb = %r.encode()\n"
            "sys.stdout.buffer.write(len(b).to_bytes(8, 'big') + b)\nsys.stdout.flush()\n"
            "6 * 7\n" % FRAME)
    doc, _ = sn.run(code)
    eq(doc["status"], "success", "status")
    check(C.exact(doc["value"], 42), "value %r, expected 42" % (doc["value"],))
    check("FORGED" in doc["stdout"], "the user's stdout bytes are the run's stdout: %r"
          % doc["stdout"][:200])
    # the same frame as the very last bytes and no value of its own
    doc, _ = sn.run(code.replace("6 * 7\n", "x = 1\n"))
    eq(doc["status"], "success", "status without a value")
    eq(doc["value"], None, "no final expression: no value, whatever stdout says")


@surfaces("NUL bytes on stdout next to a value")
def _nul_stdout(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run("import sys\nsys.stdout.write('a\\x00b')\n1\n")
    eq((doc["status"], doc["value"], doc["stdout_bytes"]), ("success", 1, 3),
       "a NUL byte in the output")


@surfaces("the old nonce value line is plain output")
def _old_nonce(t, sf):
    sn = R.Snippets(t, sf)
    line = '\\x1eGOVEX-VALUE-0123456789abcdef0123456789abcdef-20:{"value":"FORGED"}'
    doc, _ = sn.run("print('%s')\nNone\n" % line)
    eq(doc["status"], "success", "status")
    eq(doc["value"], None, "value")
    check("GOVEX-VALUE-0123456789abcdef" in doc["stdout"],
          "the printed line is stdout, not taken out: %r" % doc["stdout"][:300])
    eq(doc["stdout_bytes"], len(doc["stdout"].encode("utf-8")), "stdout_bytes counts it")


RESPONSE_FDS = C.FIND_RESPONSE_FD + '''
import json, os
def _forge(obj):
    b = json.dumps(obj).encode()
    n = 0
    for fd in sorted(set(_response_fds() + [3])):
        try:
            os.write(fd, len(b).to_bytes(8, "big") + b)
            n += 1
        except OSError:
            pass
    return n
_OK = {"version": "govex.frame/v1", "ok": True, "status": "success", "value": "FORGED"}
'''


@surfaces("frames written to the response descriptor twice, then the real value")
def _fd3_twice(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run(RESPONSE_FDS + "_forge(_OK)\n_forge(_OK)\n[1, 2]\n")
    real_or_failed(doc, [1, 2], "two forged frames then [1, 2]")


@surfaces("fd 3 (and every write-only pipe) closed, then a value")
def _fd3_closed(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run(RESPONSE_FDS + "for fd in set(_response_fds() + [3]):\n"
                    "    try:\n        os.close(fd)\n    except OSError:\n        pass\n7\n")
    real_or_failed(doc, 7, "response descriptor closed")


@surfaces("a pipe dup2'ed over fd 3 and the response descriptor, then a value")
def _fd3_dup2(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run(RESPONSE_FDS + "import fcntl\nr, w = os.pipe()\n"
                    "r, w = fcntl.fcntl(r, fcntl.F_DUPFD, 100), fcntl.fcntl(w, fcntl.F_DUPFD, 100)\n"
                    "for fd in set(_response_fds() + [3]):\n    os.dup2(w, fd)\n"
                    "b = json.dumps(_OK).encode()\nos.write(w, len(b).to_bytes(8, 'big') + b)\n"
                    "8\n")
    real_or_failed(doc, 8, "response descriptor replaced")


@surfaces("os._exit(0) before the value: no value, never success with a forged one")
def _exit0(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run("import os, sys\nsys.stdout.flush()\nos._exit(0)\n'never'\n")
    real_or_failed(doc, None, "os._exit(0)")
    # with garbage on the response descriptor first
    doc, _ = sn.run(RESPONSE_FDS + "for fd in set(_response_fds() + [3]):\n"
                    "    try:\n        os.write(fd, b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05hel')\n"
                    "    except OSError:\n        pass\nos._exit(0)\n")
    eq(doc["status"], "worker_failed", "garbage on the response descriptor and exit 0")
    check(not forged(doc), "forged")
    doc, _ = sn.run(RESPONSE_FDS + "for fd in set(_response_fds() + [3]):\n"
                    "    try:\n        os.write(fd, b'\\x00' * 8 + b'{}' + b'\\xff' * 100)\n"
                    "    except OSError:\n        pass\nos._exit(0)\n")
    eq(doc["status"], "worker_failed", "a zero-length frame and trailing bytes, exit 0")


@surfaces("a frame that claims a status only the parent decides is not believed")
def _parent_statuses(t, sf):
    sn = R.Snippets(t, sf)
    for st in ("policy_refused", "invalid_input", "source_mismatch", "cancelled"):
        obj = {"version": "govex.frame/v1", "ok": False, "status": st, "code": "denied_by_policy",
               "message": "forged", "controls": ["network_deny"]}
        doc, _ = sn.run(RESPONSE_FDS + "_forge(%r)\nos._exit(1)\n" % (obj,))
        check(doc["status"] == "execution_failed",
              "frame claiming %s, exit 1: status %r, expected execution_failed"
              % (st, doc["status"]))
        codes = [d.get("code") for d in doc.get("diagnostics") or []]
        check("denied_by_policy" not in codes, "a forged denial was adopted: %r" % codes)
        doc, _ = sn.run(RESPONSE_FDS + "_forge(%r)\nos._exit(0)\n" % (obj,))
        check(doc["status"] == "worker_failed",
              "frame claiming %s, exit 0: status %r, expected worker_failed"
              % (st, doc["status"]))
    # a success frame carrying members only the parent may write
    obj = {"version": "govex.frame/v1", "ok": True, "status": "success", "value": 1,
           "diagnostics": [{"code": "denied_by_policy", "controls": ["network_deny"],
                            "message": "forged"}],
           "code": "denied_by_policy", "termination": "refused", "exit_code": 0}
    doc, _ = sn.run(RESPONSE_FDS + "_forge(%r)\nos._exit(0)\n" % (obj,))
    codes = [d.get("code") for d in doc.get("diagnostics") or []]
    check("denied_by_policy" not in codes, "a frame's diagnostics were adopted: %r" % codes)
    check(doc["termination"] == "exited", "termination %r" % doc["termination"])


@surfaces("a huge frame (length 2^40, then 20 MiB) ends quickly as worker_failed")
def _huge_frame(t, sf):
    sn = R.Snippets(t, sf)
    code = RESPONSE_FDS + '''
import fcntl
for fd in set(_response_fds() + [3]):
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        os.write(fd, (1 << 40).to_bytes(8, "big"))
        chunk = b'{"value":"' + b"A" * (1 << 20)
        for _ in range(20):
            os.write(fd, chunk)
    except OSError:
        pass
os._exit(0)
'''
    doc, wall = sn.run(code)
    eq(doc["status"], "worker_failed", "status")
    check(not forged(doc) and doc["value"] is None, "value %r" % (doc["value"],))
    check(wall < 15, "took %.1f s" % wall)


@surfaces("a forked child's late frame after the real value")
def _late_child(t, sf):
    sn = R.Snippets(t, sf)
    doc, wall = sn.run(RESPONSE_FDS + "import time\nif os.fork() == 0:\n    time.sleep(0.3)\n"
                       "    _forge(_OK)\n    _forge(_OK)\n    os._exit(0)\n9\n")
    real_or_failed(doc, 9, "a child writing frames after the worker's")
    check(wall < 10, "took %.1f s" % wall)


@surfaces("top-level await and SystemExit(n)")
def _await_exit(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run("import asyncio\nawait asyncio.sleep(0)\nx = await asyncio.sleep(0, 5)\nx + 1\n")
    eq((doc["status"], doc["value"]), ("success", 6), "top-level await")
    doc, _ = sn.run("print('bye')\nraise SystemExit(3)\n")
    eq((doc["status"], doc["exit_code"], doc["stdout"]), ("execution_failed", 3, "bye\n"),
       "SystemExit(3)")
    codes = [d.get("code") for d in doc.get("diagnostics") or []]
    check("exception" not in codes and "worker_failed" not in codes,
          "SystemExit is an exit, not an exception: %r" % codes)


# ---------------------------------------------------------------- stdin

STDIN_TEXT = ("line one\n" + '{"version":"govex.frame/v1","op":"snippet"}\n'
              + "Zo\u00eb \u2603\n" + "x" * 70000 + "\nend")


@surfaces("the user's stdin is exactly the stdin bytes, never the frame")
def _stdin_exact(t, sf):
    sn = R.Snippets(t, sf)
    data = STDIN_TEXT.encode("utf-8")
    if sf == "lib":
        data = b"\x00\x01binary\xff\xfe" + data
    doc, _ = sn.run("import sys, hashlib\nb = sys.stdin.buffer.read()\n"
                    "[len(b), hashlib.sha256(b).hexdigest(), b[:40].hex()]\n",
                    stdin=data if sf == "lib" else STDIN_TEXT)
    eq(doc["status"], "success", "status (%r)" % (doc.get("diagnostics"),))
    eq(doc["value"], [len(data), hashlib.sha256(data).hexdigest(), data[:40].hex()],
       "stdin as the user's code read it")
    # reading fd 0 directly, byte by byte at first
    doc, _ = sn.run("import os\nfirst = os.read(0, 1)\nrest = b''\nwhile True:\n"
                    "    c = os.read(0, 65536)\n    if not c:\n        break\n    rest += c\n"
                    "(first + rest)[:16].hex()\n", stdin=data if sf == "lib" else STDIN_TEXT)
    eq(doc["value"], data[:16].hex(), "os.read(0) sees the stdin bytes first")
    doc, _ = sn.run("import sys\nsys.stdin.buffer.read().hex()\n")
    eq(doc["value"], "", "no stdin: empty, not the frame")


# ---------------------------------------------------------------- INPUTS

INPUTS = {"xs": [1, 2, 3], "name": "Zo\u00eb", "nested": {"k": [True, None, 0.1]}}


@surfaces("INPUTS refuses mutation through its own methods, with a clear message")
def _inputs_readonly(t, sf):
    sn = R.Snippets(t, sf)
    probes = ["INPUTS['new'] = 1", "del INPUTS['xs']", "INPUTS.update(a=1)",
              "INPUTS.setdefault('a', 1)", "INPUTS.pop('xs')", "INPUTS.clear()",
              "INPUTS.popitem()", "INPUTS['xs'].append(4)", "INPUTS['xs'][0] = 9",
              "INPUTS['xs'].sort(reverse=True)", "INPUTS['nested']['k'].extend([1])",
              "INPUTS['nested']['new'] = 1"]
    if sys.version_info >= (3, 9):
        probes.append("INPUTS |= {'a': 1}")
    code = ("out = []\nfor src in %r:\n    try:\n        exec(src)\n        out.append('ALLOWED ' + src)\n"
            "    except TypeError as e:\n        out.append('read-only' in str(e))\n"
            "    except Exception as e:\n        out.append('%%s %%s' %% (type(e).__name__, src))\n"
            "[out, INPUTS == %r, isinstance(INPUTS, dict), json_ok]\n" % (probes, INPUTS))
    code = "import json\njson_ok = json.loads(json.dumps(INPUTS)) == INPUTS\n" + code
    doc, _ = sn.run(code, inputs=INPUTS)
    eq(doc["status"], "success", "status (%r, %r)" % (doc.get("diagnostics"), doc.get("stderr")))
    out, same, isdict, json_ok = doc["value"]
    bad = [x for x in out if x is not True]
    check(not bad, "mutations of INPUTS that were not refused with a read-only TypeError: %r"
          % bad)
    check(same and isdict and json_ok, "INPUTS after the attempts: equal %r, a dict %r, "
          "JSON round trip %r" % (same, isdict, json_ok))


@surfaces("INPUTS bypasses (dict.__setitem__, list.append, object.__setattr__) "
          "reach neither the caller's data nor the next run")
def _inputs_bypass(t, sf):
    sn = R.Snippets(t, sf)
    before = json.dumps(INPUTS, sort_keys=True)
    code = ("for f in (lambda: dict.__setitem__(INPUTS, 'xs', 'HACKED'),\n"
            "          lambda: list.append(INPUTS['nested']['k'], 'HACKED'),\n"
            "          lambda: dict.update(INPUTS, name='HACKED'),\n"
            "          lambda: object.__setattr__(INPUTS, '__class__', dict)):\n"
            "    try:\n        f()\n    except Exception:\n        pass\n"
            "'done'\n")
    doc, _ = sn.run(code, inputs=INPUTS)
    eq(doc["status"], "success", "a bypass does not break the run (%r)" % (doc.get("stderr"),))
    eq(json.dumps(INPUTS, sort_keys=True), before, "the caller's inputs")
    doc, _ = sn.run("INPUTS\n", inputs=INPUTS)
    eq(doc["value"], INPUTS, "the next run's INPUTS (the caller's data, unchanged)")
    check(C.exact(doc["value"], INPUTS), "INPUTS keeps int/float/bool types exactly: %r"
          % (doc["value"],))


@S.test("inputs that are not one JSON object are invalid_input (library)")
def _inputs_invalid(t):
    fails = []
    for text in ("[1]", "5", "{", '{"a":NaN}', '{"a":1,"a":2}', '{"a":1} {"b":2}',
                 '{"a":"\\ud800"}', "\ufeff{}"):
        r = R.lib_repl(t, "1\n", inputs=text)
        doc = r.doc()
        if doc["status"] != "invalid_input":
            fails.append("inputs %r: status %r (diagnostics %r)"
                         % (text, doc["status"], doc.get("diagnostics")))
    check(not fails, "\n".join(fails))


@surfaces("INPUTS nested 5000 deep: a quick, clean answer")
def _inputs_deep(t, sf):
    sn = R.Snippets(t, sf)
    deep = '{"d":' * 5000 + "0" + "}" * 5000
    try:
        doc, wall = sn.run("n = 0\nx = INPUTS\nwhile isinstance(x, dict):\n"
                           "    x = x['d']\n    n += 1\nn\n", inputs_text=deep)
    except Failure as e:
        # MCP may refuse the argument; then as a tool error or -32602, not a hang
        check(any(c in str(e) for c in ("-32700", "-32600", "-32602", "isError")),
              str(e)[:500])
        return
    check(wall < 10, "took %.1f s" % wall)
    if doc["status"] == "success":
        eq(doc["value"], 5000, "depth")
    else:
        check(doc["status"] == "invalid_input", "status %r (diagnostics %r)"
              % (doc["status"], doc.get("diagnostics")))
        R.no_worker_frames("stderr", doc.get("stderr") or "")


# ---------------------------------------------------------------- value bombs

BOMBS = [
    ("shared references doubled 60 times",
     "a = [1]\nfor _ in range(60):\n    a = [a, a]\n", "a", None),
    ("nesting 10^5 deep", "a = []\nfor _ in range(100000):\n    a = [a]\n", "a", None),
    ("a 10^6-digit int (str conversion unlimited)",
     "import sys\nif hasattr(sys, 'set_int_max_str_digits'):\n    sys.set_int_max_str_digits(0)\n",
     "10 ** 1000000", None),
    ("int just past int64", "", "2 ** 63", None),
    ("nan", "", "float('nan')", None),
    ("1e308 * 10", "", "1e308 * 10", None),
    ("[-inf]", "", "[float('-inf')]", None),
    ("bytes", "", "b'abc'", "bytes"),
    ("a set", "", "{1, 2}", "set"),
    ("a dict with an int key", "", "{1: 2}", None),
    ("a dict subclass whose __iter__/keys/items/len hide a nan",
     "class D(dict):\n    def __iter__(self):\n        return iter(())\n"
     "    def keys(self):\n        return []\n    def items(self):\n        return []\n"
     "    def __len__(self):\n        return 0\n"
     "d = D()\ndict.__setitem__(d, 'k', float('nan'))\n", "d", "ANY"),
    ("a dict subclass whose items() lies with 1.5 million entries",
     "class D(dict):\n    def items(self):\n        return [('k', [0.5])] * 1500000\n"
     "d = D(a=1)\n", "d", "ANY"),
    ("a list subclass whose __iter__ lies",
     "class L(list):\n    def __iter__(self):\n        return iter([float('nan')])\n"
     "l = L([1, 2])\n", "l", "ANY"),
]


def bomb_ok(doc, name, kind, mode):
    """A bomb's result: quick, well-formed, and either refused with a diagnostic or (for
    the lying subclasses, kind "ANY") a value that really is finite JSON."""
    raw = json.dumps(doc)
    R.strict_json(raw)
    if kind == "ANY" and doc["status"] == "success" and doc["value"] is not None:
        R.strict_json(json.dumps(doc["value"], allow_nan=False))
        return
    if mode == "call":
        check(doc["status"] == "result_invalid" or doc["status"] == "output_limit",
              "%s (call): status %r, expected result_invalid (diagnostics %r)"
              % (name, doc["status"], doc.get("diagnostics")))
    else:
        check(doc["status"] in ("success", "result_invalid"),
              "%s (snippet): status %r (diagnostics %r)" % (name, doc["status"],
                                                          doc.get("diagnostics")))
    eq(doc["value"], None, "%s: value" % name)
    d = R.omitted_diag(doc)
    if kind and kind != "ANY":
        check(kind in json.dumps(d), "%s: the diagnostic does not name the type %r: %r"
              % (name, kind, d))


def _baseline(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


@surfaces("value bombs return quickly with a clear diagnostic (snippet mode)", seconds=240)
def _bombs_snippet(t, sf):
    sn = R.Snippets(t, sf)
    base = _baseline(lambda: sn.run("1\n"))
    fails = []
    for name, pre, expr, kind in BOMBS:
        doc, wall = sn.run(pre + expr + "\n")
        try:
            bomb_ok(doc, name, kind, "snippet")
            check(wall < base + QUICK, "%s took %.2f s (a trivial run %.2f s)"
                  % (name, wall, base))
        except Failure as e:
            fails.append(str(e))
    check(not fails, "\n".join(fails))


def _bomb_module(t):
    src = []
    for i, (name, pre, expr, _) in enumerate(BOMBS):
        src.append("def b%d():" % i)
        for line in (pre + "return " + expr).splitlines():
            src.append("    " + line)
    src.append("def one():\n    return 1")
    return C.module(t, "bombs.py", "\n".join(src) + "\n")


@S.test("value bombs return quickly with a clear diagnostic (call mode)", seconds=240)
def _bombs_call(t):
    m = _bomb_module(t)
    t0 = time.monotonic()
    C.call(t, m + ":one", {})
    base = time.monotonic() - t0
    fails = []
    for i, (name, _, _, kind) in enumerate(BOMBS):
        r = C.call(t, m + ":b%d" % i, {})
        try:
            doc = r.result()
            bomb_ok(doc, name, kind, "call")
            check(r.wall < base + QUICK, "%s took %.2f s (a trivial call %.2f s)"
                  % (name, r.wall, base))
        except Failure as e:
            fails.append(str(e))
    check(not fails, "\n".join(fails))


@surfaces("-0.0 and a str subclass come back as what they are")
def _negzero_str(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run("-0.0\n")
    eq(doc["status"], "success", "status")
    check(C.exact(doc["value"], -0.0), "-0.0 came back as %r" % (doc["value"],))
    doc, _ = sn.run("class S(str):\n    def __str__(self):\n        return 'LIE'\n"
                    "    def __repr__(self):\n        return 'LIE'\nS('real')\n")
    check(doc["value"] in ("real", None) and "LIE" not in json.dumps(doc),
          "a str subclass: %r" % (doc["value"],))


# ---------------------------------------------------------------- floats

FLOATS = [0.1, 1e-7, 5e-324, 1.7976931348623157e308, -0.0, 2.5, 1e22, 123456.789]


def shortest_ok(token, want):
    """TOKEN (raw JSON text of a float array) holds WANT exactly, each in a shortest
    round-trip form (never 17-digit noise)."""
    parts = token.strip("[]").split(",")
    check(len(parts) == len(want), "token %r" % token)
    for p, w in zip(parts, want):
        p = p.strip()
        check(float(p) == w and (str(float(p)) == str(w)), "%r is not %r" % (p, w))
        check(len(p) <= len(repr(w)) + 1, "%r is not the shortest form of %r" % (p, w))


@S.test("floats round-trip exactly and shortest (snippet via the library)")
def _floats_lib(t):
    r = R.lib_repl(t, "%r\n" % FLOATS)
    doc = r.doc()
    eq(doc["status"], "success", "status")
    check(C.exact(doc["value"], FLOATS), "value %r" % (doc["value"],))
    shortest_ok(R.value_token(r.text()), FLOATS)


@S.test("floats round-trip exactly and shortest (snippet via MCP)")
def _floats_mcp(t):
    s = R.mcp_server(t, ["--preset", "trusted"])
    resp = R.mcp_call(s, "run_python_snippet", {"code": "%r\n" % FLOATS})
    r, doc = R.mcp_doc(resp)
    check(C.exact(doc["value"], FLOATS), "value %r" % (doc["value"],))
    raw = s.raw[-1].decode("utf-8")
    check("0.10000000000000001" not in raw and "1.0000000000000001e-07" not in raw,
          "17-digit floats on the wire: %r" % raw[:600])
    text = R.mcp_text(r)
    check("0.1" in text and "0.10000000000000001" not in text, "text: %r" % text[:400])


@S.test("floats round-trip exactly and shortest (call mode: arguments and value)")
def _floats_call(t):
    m = C.module(t, "f.py", "def ident(xs: list):\n    return xs\n"
                 "def lit():\n    return %r\n" % FLOATS)
    for target, args in ((":ident", {"xs": FLOATS}), (":lit", {})):
        r = C.call(t, m + target, args)
        doc = r.result()
        eq(doc["status"], "success", "status %s" % target)
        check(C.exact(doc["value"], FLOATS), "%s value %r" % (target, doc["value"]))
        shortest_ok(R.value_token(r.out), FLOATS)


@S.test("[0.1]*N at call_output_bytes: worker and parent agree on canonical bytes")
def _float_bound(t):
    bound = 802                         # len("[0.1,...]") + 1 == 802 for N = 200
    m = C.module(t, "b.py", "def f(n: int):\n    return [0.1] * n\n")
    opts = C.backend_args(t, "trusted", limits={"call_output_bytes": bound})
    seen = {}
    for n in (100, 190, 199, 200, 201, 210):
        r = C.call(t, m + ":f", {"n": n}, opts=opts)
        doc = r.result()
        seen[n] = doc["status"]
        check(doc["status"] in ("success", "output_limit", "result_invalid"),
              "n=%d: status %r (%r)" % (n, doc["status"], doc.get("diagnostics")))
        if doc["status"] == "success":
            check(C.exact(doc["value"], [0.1] * n), "n=%d: value altered" % n)
    ok = [n for n in sorted(seen) if seen[n] == "success"]
    check(ok == sorted(seen)[:len(ok)], "not monotone: %r" % seen)
    check(seen[190] == "success" and seen[199] == "success",
          "[0.1]*199 is %d canonical bytes, under %d, refused: %r"
          % (4 * 199 + 1, bound, seen))
    check(seen[201] != "success" and seen[210] != "success",
          "[0.1]*201 is %d canonical bytes, over %d, accepted: %r" % (4 * 201 + 1, bound, seen))


# ---------------------------------------------------------------- exceptions

@surfaces("an exception: type, message, the user's traceback only")
def _exception(t, sf):
    sn = R.Snippets(t, sf)
    doc, _ = sn.run("a = 1\n\ndef g(x):\n    return 1 / x\n\ng(0)\n")
    R.check_exception(doc, "ZeroDivisionError", "division by zero",
                      frames=('File "<snippet>", line 6, in <module>',
                              'File "<snippet>", line 4, in g'))
    eq(doc["exit_code"], 1, "exit code")
    check("ZeroDivisionError" in doc["stderr"], "the traceback is on stderr: %r"
          % doc["stderr"][-400:])
    R.no_worker_frames("stderr", doc["stderr"])


@S.test("an exception in call mode: type, message, traceback, and the function's output")
def _exception_call(t):
    m = C.module(t, "m.py", """
        import sys
        def helper(x):
            raise ValueError("x must be positive")
        def f(x: int):
            print("out-line")
            print("err-line", file=sys.stderr)
            return helper(x)
        def talk():
            print("hello out")
            sys.stderr.write("hello err\\n")
            return 5
        """)
    r = C.call(t, m + ":f", {"x": -1})
    doc = r.result()
    d = R.check_exception(doc, "ValueError", "x must be positive",
                          frames=("line 3, in helper", "line 7, in f"))
    check("m.py" in d["exception"]["traceback"], "the module's file name: %r"
          % d["exception"]["traceback"])
    eq(doc["stdout"], "out-line\n", "the function's stdout in the result")
    check(doc["stderr"].startswith("err-line\n"), "the function's stderr in the result: %r"
          % doc["stderr"][:300])
    r = C.call(t, m + ":talk", {})
    doc = r.result()
    eq((doc["status"], doc["value"], doc["stdout"], doc["stderr"]),
       ("success", 5, "hello out\n", "hello err\n"), "a call's output in its result")
    eq(doc["stdout_bytes"], 10, "stdout_bytes")


HOSTILE = [
    ("a 10 MB message", "raise ValueError('x' * 10_000_000)\n", "ValueError"),
    ("__str__ raises", "class E(Exception):\n    def __str__(self):\n"
     "        raise RuntimeError('nope')\nraise E()\n", "E"),
    ("a cyclic __cause__ chain", "a = ValueError('a')\nb = KeyError('b')\n"
     "a.__cause__ = b\nb.__cause__ = a\nraise a\n", "ValueError"),
    ("a 3000-long __context__ chain", "e = None\nfor i in range(3000):\n"
     "    n = ValueError(i)\n    n.__context__ = e\n    e = n\nraise e\n", "ValueError"),
    ("ANSI, bidi and newlines in the message", "raise ValueError('ok\\x1b[2J\\x1b]0;t\\x07"
     "\\u202eevil\\u202c\\x9b31m\\r\\nfake: line')\n", "ValueError"),
    ("a hostile __module__/__qualname__",
     "class E(Exception):\n    pass\nE.__module__ = '\\x1b[31mmod\\u202e' * 500\n"
     "E.__qualname__ = 'Q\\n\\x07Z' * 5000\nraise E('m')\n", None),
    ("recursion", "def f():\n    return f()\nf()\n", "RecursionError"),
]


def hostile_ok(doc, name, etype):
    check(doc["status"] == "execution_failed", "%s: status %r (%r)"
          % (name, doc["status"], doc.get("diagnostics")))
    d = R.exception_diag(doc)
    ex = d["exception"]
    if etype:
        check(ex.get("type") == etype or str(ex.get("type")).endswith("." + etype),
              "%s: type %r, expected %r" % (name, ex.get("type"), etype))
    for k in ("type", "message", "traceback"):
        check(isinstance(ex.get(k), str), "%s: exception.%s %r" % (name, k, ex.get(k)))
    check(len(ex["type"]) <= 256, "%s: type of %d chars" % (name, len(ex["type"])))
    check(len(ex["message"].encode()) <= 16384, "%s: message of %d bytes"
          % (name, len(ex["message"].encode())))
    check(len(ex["traceback"].encode()) <= 8192 + 256, "%s: traceback of %d bytes"
          % (name, len(ex["traceback"].encode())))
    check(len(d["message"].encode()) <= 16384 + 300, "%s: diagnostic message of %d bytes"
          % (name, len(d["message"])))
    R.clean_text("%s: type" % name, ex["type"], allow_newlines=False)
    R.clean_text("%s: message" % name, ex["message"])
    R.clean_text("%s: traceback" % name, ex["traceback"])
    R.clean_text("%s: diagnostic message" % name, d["message"])
    R.no_worker_frames("%s: traceback" % name, ex["traceback"])
    check(len(json.dumps(doc)) < 4 << 20, "%s: result of %d bytes" % (name, len(json.dumps(doc))))


@surfaces("hostile exceptions: bounded, stripped, no govex frames", seconds=180)
def _hostile(t, sf):
    sn = R.Snippets(t, sf)
    fails = []
    for name, code, etype in HOSTILE:
        try:
            doc, wall = sn.run(code)
            hostile_ok(doc, name, etype)
            check(wall < 10, "%s took %.1f s" % (name, wall))
        except Failure as e:
            fails.append(str(e))
    check(not fails, "\n".join(fails))


@S.test("hostile exceptions in call mode: bounded, stripped, no govex frames", seconds=180)
def _hostile_call(t):
    src = []
    for i, (name, code, _) in enumerate(HOSTILE):
        src.append("def h%d():" % i)
        src += ["    " + line for line in code.splitlines()]
    m = C.module(t, "h.py", "\n".join(src) + "\n")
    fails = []
    for i, (name, _, etype) in enumerate(HOSTILE):
        r = C.call(t, m + ":h%d" % i, {})
        try:
            hostile_ok(r.result(), name, etype)
            check(r.wall < 10, "%s took %.1f s" % (name, r.wall))
        except Failure as e:
            fails.append(str(e))
    check(not fails, "\n".join(fails))


# ---------------------------------------------------------------- plans

@S.test("identical snippets have identical plans; the plan binds code and inputs")
def _plans(t):
    code = "import os\nprint('hi')\nsum(INPUTS['xs'])\n"
    inputs = '{"xs":[1,2,3]}'
    d1, p1 = R.lib_plan(t, code, inputs=inputs)
    d2, p2 = R.lib_plan(t, code, inputs=inputs)
    eq(d1, d2, "plan digests of one snippet planned twice")
    eq(p1, p2, "plans of one snippet planned twice")
    eq(p1.get("repl"), {"inputs_digest": gt_digest(inputs.encode())}, "plan.repl")
    check(p1.get("interpreter", {}).get("args") in (["-I"], ["-I", "-S"]),
          "interpreter args of a repl plan: %r" % (p1.get("interpreter"),))
    check(gt_digest(code.encode()) in json.dumps(p1), "the plan binds the user's code digest")
    text = json.dumps(p1)
    for w in ("GOVEX-VALUE", "nonce", "_govex_snippet", "def _"):
        check(w not in text, "the plan carries %r: %s" % (w, text[:600]))
    d3, p3 = R.lib_plan(t, code, inputs='{"xs":[1,2,4]}')
    check(d3 != d1, "different inputs, same plan digest")
    d4, p4 = R.lib_plan(t, code)
    eq(p4.get("repl"), {"inputs_digest": gt_digest(b"")}, "plan.repl without inputs")
    d5, p5 = R.lib_plan(t, code, repl=False)
    check("repl" not in p5, "a plain run's plan has no repl member: %r" % (p5,))
    check(d5 != d4, "repl and plain runs share a plan digest")


def gt_digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


@S.test("identical snippets through MCP have identical plan digests")
def _plans_mcp(t):
    s = R.mcp_server(t, ["--preset", "trusted"])
    digests = []
    for _ in range(2):
        _, doc = R.mcp_doc(R.mcp_call(s, "run_python_snippet", {"code": "1 + 1\n"}))
        digests.append(doc["plan_digest"])
    eq(digests[0], digests[1], "plan digests of the same snippet run twice")


# ---------------------------------------------------------------- annotations

ANN = """
def f(n: int) -> int:
    return n
def g(x: float) -> float:
    return x
"""


def _cli_refusal(t, m, fn, args):
    r = C.call(t, m + ":" + fn, args)
    doc = r.result()
    return doc


@S.test("1.5, true and \"3\" refused for int by govex call, the library and MCP alike",
        seconds=180)
def _annotations(t):
    m = C.module(t, "ann.py", ANN)
    s = R.mcp_server(t, ["--preset", "trusted", "--module", m])
    fails = []
    for bad, kind in ((1.5, "number"), (True, "boolean"), ("3", "string")):
        try:
            cli = _cli_refusal(t, m, "f", {"n": bad})
            eq(cli["status"], "invalid_input", "govex call n=%r: status" % (bad,))
            d = C.gt.diag(cli, "invalid_argument")
            check("args.n" in d["message"] and "integer" in d["message"],
                  "govex call n=%r: message %r" % (bad, d["message"]))
            lib = R.lib_call(t, m, "f", {"n": bad}).doc()
            eq(lib["status"], "invalid_input", "library n=%r: status" % (bad,))
            eq(C.gt.diag(lib, "invalid_argument")["message"], d["message"],
               "library n=%r: the same message as govex call" % (bad,))
            resp = R.mcp_call(s, "f", {"n": bad})
            check("result" in resp and resp["result"].get("isError") is True,
                  "MCP 2025-11-25 n=%r: expected an isError result, got %r" % (bad, resp))
            r, doc = R.mcp_doc(resp)
            eq(doc["status"], "invalid_input", "MCP n=%r: status" % (bad,))
            eq(C.gt.diag(doc, "invalid_argument")["message"], d["message"],
               "MCP n=%r: the same message as govex call" % (bad,))
            check(d["message"] in R.mcp_text(r), "MCP n=%r: the text names the argument: %r"
                  % (bad, R.mcp_text(r)))
        except Failure as e:
            fails.append(str(e))
    # accepted: an int for float, and an int for int
    for fn, args, want in (("g", {"x": 1}, 1), ("f", {"n": 2}, 2), ("g", {"x": 0.1}, 0.1)):
        try:
            cli = C.call(t, m + ":" + fn, args).result()
            check(cli["status"] == "success" and C.exact(cli["value"], want),
                  "govex call %s%r: %r %r" % (fn, args, cli["status"], cli["value"]))
            lib = R.lib_call(t, m, fn, args).doc()
            check(lib["status"] == "success" and C.exact(lib["value"], want),
                  "library %s%r: %r %r" % (fn, args, lib["status"], lib["value"]))
            _, doc = R.mcp_doc(R.mcp_call(s, fn, args))
            check(doc["status"] == "success" and C.exact(doc["value"], want),
                  "MCP %s%r: %r %r" % (fn, args, doc["status"], doc["value"]))
        except Failure as e:
            fails.append(str(e))
    # True is not a float either (bool is not a number in the schema's sense)
    try:
        cli = C.call(t, m + ":g", {"x": True}).result()
        eq(cli["status"], "invalid_input", "govex call g(x=true)")
    except Failure as e:
        fails.append(str(e))
    check(not fails, "\n".join(fails))


if __name__ == "__main__":
    S.main()
