#!/usr/bin/env python3
"""REPL runs (contract section 1) through libgovex's public API (tests/call/repl_driver.c:
govex_runtime_run / _plan with req.repl set), and the call-mode changes of section 2 seen
through `govex call`: a snippet's value over the worker's frame, read-only INPUTS, the
program's stdin after the request frame, top-level await (Python 3.8+; a SyntaxError
before), the exception diagnostic, a shared-reference value refused fast, floats,
deterministic plans, a call's output in its result.  Prints TAP."""
import json
import os
import subprocess
import time

import calltest as C
from calltest import check, eq

S = C.Suite()

DRIVER = os.environ.get("GOVEX_REPL_DRIVER") or os.path.join(
    os.environ.get("GOVEX_BUILD", "build"), "tests", "repl-driver")


def repl(t, code, *, preset="strict", policy=None, inputs=None, stdin=None, plan=False):
    """One repl run (or its plan: (digest, plan document)); the result document."""
    n = len(os.listdir(t.tmp))
    path = t.write("snippet-%d.py" % n, code)
    argv = [DRIVER] + (["--policy", policy] if policy else ["--preset", preset])
    if inputs is not None:
        argv += ["--inputs", inputs if isinstance(inputs, str) else json.dumps(inputs)]
    if stdin is not None:
        argv += ["--stdin", t.write("stdin-%d" % n, stdin)]
    if plan:
        argv.append("--plan")
    p = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=C.CALL_TIMEOUT, cwd=t.tmp)
    err = p.stderr.decode("utf-8", "replace")
    for w in C.SANITIZER_WORDS:
        check(w not in err, "the driver's stderr has a sanitizer report:\n%s" % err[-3000:])
    check(p.returncode == 0, "repl_driver exited %d: %s" % (p.returncode, err[-2000:]))
    out = p.stdout.decode("utf-8")
    if plan:
        digest, rest = out.split("\n", 1)
        return digest, json.loads(rest)
    return json.loads(out)


def status(doc, want):
    check(doc["status"] == want, "status %r, expected %r: %s"
          % (doc["status"], want, json.dumps(doc)[:3000]))


@S.both("snippet: the trailing expression's value; stdout and stderr are the run's")
def _value(t, b):
    doc = repl(t, "import sys\nprint('out')\nsys.stderr.write('err\\n')\n"
                  "x = {'a': [1, 2.5, None, True], 'é': 'ü'}\nx\n", preset=b)
    status(doc, "success")
    eq(doc["value"], {"a": [1, 2.5, None, True], "é": "ü"}, "value")
    eq(doc["stdout"], "out\n", "stdout")
    eq(doc["stderr"], "err\n", "stderr")
    eq(doc["diagnostics"], [], "diagnostics")
    # no trailing expression, or a None value: no value
    for code in ("x = 1\n", "None\n", "print('p')\n"):
        doc = repl(t, code, preset=b)
        status(doc, "success")
        eq(doc["value"], None, "value of %r" % code)


@S.test("snippet: INPUTS is the given object, read-only (mutation is a TypeError)")
def _inputs(t):
    inputs = {"n": 3, "xs": [1, 2], "d": {"k": "v"}}
    doc = repl(t, "[INPUTS['n'] * 2, INPUTS['xs'], dict(INPUTS['d']), type(INPUTS).__name__]\n",
               inputs=inputs)
    status(doc, "success")
    eq(doc["value"], [6, [1, 2], {"k": "v"}, "ReadOnlyDict"], "value")
    doc = repl(t, "INPUTS['xs']\n", inputs=inputs)
    eq(doc["value"], [1, 2], "a read-only list is a value like a list")
    for code in ("INPUTS['n'] = 4\n", "INPUTS['xs'].append(3)\n", "INPUTS['d'].update(a=1)\n",
                 "del INPUTS['n']\n", "INPUTS['xs'] += [1]\n"):
        doc = repl(t, code, inputs=inputs)
        status(doc, "execution_failed")
        d = C.diag(doc, "exception")
        eq(d["exception"]["type"], "TypeError", "type for %r" % code)
        check("read-only" in d["message"], "message %r" % d["message"])
    # no inputs: no INPUTS
    doc = repl(t, "'INPUTS' in globals()\n")
    eq(doc["value"], False, "INPUTS without inputs")
    # not an object: refused before anything runs
    for bad in ("[1]", "{\"a\":", "{\"a\":1,\"a\":2}"):
        doc = repl(t, "1\n", inputs=bad)
        status(doc, "invalid_input")
        C.diag(doc, "invalid_inputs")


@S.both("snippet: stdin after the request frame is the program's, byte for byte")
def _stdin(t, b):
    data = b"line 1\n" + (8).to_bytes(8, "big") + b'{"op":1}' + bytes(range(256))
    doc = repl(t, "import sys\ndata = sys.stdin.buffer.read()\n[len(data), list(data[:7])]\n",
               preset=b, stdin=data)
    status(doc, "success")
    eq(doc["value"], [len(data), list(b"line 1\n")], "what the program read")
    doc = repl(t, "input()\n", preset=b, stdin=b"typed\nmore\n")
    eq(doc["value"], "typed", "input()")
    doc = repl(t, "import sys\nsys.stdin.read()\n", preset=b)
    eq(doc["value"], "", "no stdin: EOF right after the frame")


def _pythons():
    """[(minor, path)] of pyenv's 3.6 ... 3.13 present."""
    out = []
    for label, path in C.interpreters(minors=(6, 7, 8, 9, 10, 11, 12, 13)):
        if path:
            out.append((int(label.split(".")[1]), path))
    return out


@S.test("snippet: top-level await on 3.8+, a SyntaxError on 3.6/3.7; every Python present",
        seconds=120)
def _await(t):
    pythons = _pythons()
    check(pythons, "no pyenv interpreter found")
    code = ("import asyncio\nasync def two():\n    await asyncio.sleep(0.01)\n    return 2\n"
            "x = await two()\nprint('awaited', x)\nawait two() + x\n")
    for minor, path in pythons:
        pol = C.policy(t, "strict", name="py%d.json" % minor, python={"interpreter": path})
        doc = repl(t, code, policy=pol)
        if minor >= 8:
            status(doc, "success")
            eq(doc["value"], 4, "value on 3.%d" % minor)
            eq(doc["stdout"], "awaited 2\n", "stdout on 3.%d" % minor)
        else:
            status(doc, "execution_failed")
            d = C.diag(doc, "exception")
            eq(d["exception"]["type"], "SyntaxError", "3.%d: %r" % (minor, d))
            check('File "<snippet>", line 5' in d["exception"]["traceback"], "traceback %r" % d)
        # the rest of the snippet protocol on each of them
        # (3.6 under the C locale prints ASCII only, as python itself does there)
        doc = repl(t, "import sys\nprint(INPUTS['a'] + 1)\n[sys.stdin.read() + str(0.1), "
                      "INPUTS['s']]\n", policy=pol, inputs={"a": 1, "s": "é"}, stdin=b"in:")
        status(doc, "success")
        eq((doc["value"], doc["stdout"]), (["in:0.1", "é"], "2\n"), "3.%d" % minor)
        doc = repl(t, "def f():\n    return 1 / 0\nf()\n", policy=pol)
        d = C.diag(doc, "exception")
        eq(d["message"], "ZeroDivisionError: division by zero", "3.%d" % minor)


@S.both("snippet: an exception is the exception diagnostic (type, message, the user's "
      "traceback with its lines, govex's frames stripped); exit 1")
def _exception(t, b):
    code = "x = 1\ndef f(n):\n    return n / 0\nprint('before')\nf(x)\n"
    doc = repl(t, code, preset=b)
    status(doc, "execution_failed")
    eq(doc["exit_code"], 1, "exit_code")
    eq(doc["termination"], "exited", "termination")
    eq(doc["value"], None, "value")
    eq(doc["stdout"], "before\n", "stdout")
    d = C.diag(doc, "exception")
    eq(d["message"], "ZeroDivisionError: division by zero", "message")
    eq(d["exception"]["type"], "ZeroDivisionError", "type")
    eq(d["exception"]["message"], "division by zero", "exception.message")
    tb = d["exception"]["traceback"]
    check(tb.startswith("Traceback (most recent call last):\n")
          and '  File "<snippet>", line 5, in <module>\n    f(x)\n' in tb
          and '  File "<snippet>", line 3, in f\n    return n / 0\n' in tb
          and tb.endswith("ZeroDivisionError: division by zero\n"), "traceback %r" % tb)
    check("<string>" not in tb and "worker" not in tb and "asyncio" not in tb,
          "govex's frames in %r" % tb)
    check(doc["stderr"].endswith(tb), "stderr is python's own report: %r" % doc["stderr"])
    # inside top-level await: asyncio's runner frames are govex's too
    doc = repl(t, "import asyncio\nawait asyncio.sleep(0)\nraise KeyError('k')\n", preset=b)
    tb = C.diag(doc, "exception")["exception"]["traceback"]
    check("asyncio" not in tb and 'File "<snippet>", line 3, in <module>' in tb, "tb %r" % tb)
    # a long traceback is bounded (its tail kept); control characters are removed
    doc = repl(t, "def r(n):\n    return r(n + 1)\nr(0)\n", preset=b)
    d = C.diag(doc, "exception")
    eq(d["exception"]["type"], "RecursionError", "type")
    check(len(d["exception"]["traceback"].encode()) <= 8192 + 100, "traceback of %d bytes"
          % len(d["exception"]["traceback"]))
    check(d["exception"]["traceback"].endswith("maximum recursion depth exceeded\n"),
          "the tail is kept: %r" % d["exception"]["traceback"][-200:])
    doc = repl(t, "raise ValueError('a\\x1b[2Jb\\x07c')\n", preset=b)
    d = C.diag(doc, "exception")
    eq(d["exception"]["message"], "abc", "cleaned message")
    check("\x1b" not in json.dumps(doc, ensure_ascii=False), "ESC in the result")
    # a syntax error: where, as python says it
    doc = repl(t, "x = 1\ndef f(:\n", preset=b)
    d = C.diag(doc, "exception")
    eq(d["exception"]["type"], "SyntaxError", "type")
    check('File "<snippet>", line 2' in d["exception"]["traceback"], "tb %r" % d)


@S.both("snippet: SystemExit(n) ends the run with status n, no exception diagnostic")
def _exit(t, b):
    doc = repl(t, "print('bye')\nraise SystemExit(3)\n", preset=b)
    status(doc, "execution_failed")
    eq(doc["exit_code"], 3, "exit_code")
    eq(doc["stdout"], "bye\n", "stdout")
    check(all(d["code"] != "exception" for d in doc["diagnostics"]), "%r" % doc["diagnostics"])
    doc = repl(t, "print('done')\nimport sys\nsys.exit(0)\n1\n", preset=b)
    # exit 0 without a frame: the code ended the process itself, as plain Python would
    # (sys.exit(0), exit(), os._exit(0)): a success without a value
    status(doc, "success")
    eq((doc["exit_code"], doc["stdout"], doc["value"]), (0, "done\n", None), "sys.exit(0)")


@S.both("a shared-reference value is refused in well under 2 s: snippet and call")
def _shared(t, b):
    bomb = "a = [1]\nfor _ in range(60):\n    a = [a, a]\n"
    start = time.monotonic()
    doc = repl(t, bomb + "a\n", preset=b)
    took = time.monotonic() - start
    status(doc, "success")
    d = C.diag(doc, "value_omitted")
    eq((d["reason"], d["type"]), ("too_large", "list"), "value_omitted")
    eq(doc["value"], None, "value")
    check(took < 2.0, "snippet took %.2f s" % took)
    m = C.module(t, "m.py", "def f():\n" + "".join("    " + l + "\n" for l in bomb.splitlines())
                 + "    return {'k': a}\n")
    start = time.monotonic()
    r = C.call(t, m + ":f", opts=["--preset", b])
    took = time.monotonic() - start
    C.check_result(t, r, "output_limit", "output_too_large")
    check(took < 2.0, "call took %.2f s" % took)


@S.both("snippet: values over the output bound or not JSON are omitted, with a diagnostic")
def _omitted(t, b):
    pol = C.policy(t, b, name="small.json", limits={"call_output_bytes": 128})
    doc = repl(t, "'x' * 200\n", policy=pol)
    status(doc, "success")
    d = C.diag(doc, "value_omitted")
    eq((d["reason"], d["type"], d["bytes"]), ("too_large", "str", 202), "too large")
    doc = repl(t, "'x' * 126\n", policy=pol)
    eq(doc["value"], "x" * 126, "a value of exactly the bound")
    for code, tname in (("object()\n", "object"), ("float('nan')\n", "float"),
                        ("{1: 2}\n", "dict"), ("2 ** 64\n", "int"), ("(1, 2)\n", "tuple")):
        doc = repl(t, code, preset=b)
        status(doc, "success")
        d = C.diag(doc, "value_omitted")
        eq((d["reason"], d["type"]), ("not_json", tname), code)


@S.test("snippet: floats come back as the same floats (0.1 stays 0.1)")
def _floats(t):
    doc = repl(t, "[0.1, 1e-07, 2.5, 1/3, 1e300, -0.0, 0.1 + 0.2]\n")
    status(doc, "success")
    eq(doc["value"], [0.1, 1e-07, 2.5, 1 / 3, 1e300, -0.0, 0.1 + 0.2], "value")
    doc = repl(t, "[0.1] * 200\n")
    eq(doc["value"], [0.1] * 200, "[0.1] * 200")


@S.test("snippet plans: identical snippets, identical digests (no nonce); the plan binds "
        "the user's code and the inputs")
def _plans(t):
    code = "print('hi')\n1 + 1\n"
    d1, p1 = repl(t, code, plan=True)
    d2, p2 = repl(t, code, plan=True)
    eq(d1, d2, "plan digests of identical snippets")
    eq(p1, p2, "plans of identical snippets")
    eq(p1["kind"], "run", "kind")
    eq(p1["code"]["digest"], C.gt.sha256(code.encode()) if hasattr(C.gt, "sha256") else
       "sha256:" + __import__("hashlib").sha256(code.encode()).hexdigest(), "code digest")
    eq(p1["code"]["bytes"], len(code), "code bytes")
    empty = "sha256:" + __import__("hashlib").sha256(b"").hexdigest()
    eq(p1["repl"], {"inputs_digest": empty}, "repl member")
    check(p1["interpreter"]["args"] in (["-I"], ["-I", "-S"]), "args %r" % p1["interpreter"])
    d3, p3 = repl(t, code, plan=True, inputs='{"a":1}')
    eq(p3["repl"]["inputs_digest"],
       "sha256:" + __import__("hashlib").sha256(b'{"a":1}').hexdigest(), "inputs digest")
    check(d3 != d1, "inputs change the plan")
    d4, _ = repl(t, code + "\n", plan=True)
    check(d4 != d1, "the code changes the plan")
    # the result of a run carries the same digest
    doc = repl(t, code)
    eq(doc["plan_digest"], d1, "plan_digest of the run")
    eq(repl(t, code)["plan_digest"], d1, "plan_digest of a second run")


@S.both("call: the function's stdout and stderr are in the result (contract 2)")
def _call_output(t, b):
    m = C.module(t, "m.py", """
        import sys
        def f(n: int):
            print("line", n)
            print("warn", file=sys.stderr)
            return n
        """)
    r = C.call(t, m + ":f", {"n": 7}, opts=["--preset", b])
    doc = C.check_result(t, r, "success")
    eq(doc["value"], 7, "value")
    eq(doc["stdout"], "line 7\n", "stdout")
    eq(doc["stderr"], "warn\n", "stderr")


@S.both("call: a raising function gives the exception diagnostic with its output")
def _call_exception(t, b):
    m = C.module(t, "m.py", """
        def f(x: int):
            print("checking", x)
            if x < 0:
                raise ValueError("x must be positive")
            return x
        """)
    r = C.call(t, m + ":f", {"x": -1}, opts=["--preset", b])
    doc = C.check_result(t, r, "execution_failed", "exception", rc=1)
    d = C.diag(doc, "exception")
    eq(d["message"], "ValueError: x must be positive", "message")
    eq((d["exception"]["type"], d["exception"]["message"]),
       ("ValueError", "x must be positive"), "exception")
    tb = d["exception"]["traceback"]
    check(tb.startswith("Traceback (most recent call last):\n")
          and '  File "m.py", line 4, in f\n    raise ValueError("x must be positive")\n' in tb
          and tb.endswith("ValueError: x must be positive\n"), "traceback %r" % tb)
    check("<string>" not in tb, "the worker's frames in %r" % tb)
    eq(doc["stdout"], "checking -1\n", "the function's output")


if __name__ == "__main__":
    raise SystemExit(S.main())
