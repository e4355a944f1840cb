#!/usr/bin/env python3
"""Call mode, the success paths: sync and async functions, positional-only and
keyword-only reconstruction, omitted defaults, no state across calls, noisy output kept
out of the value (and in the result's stdout/stderr), plain (non --json) output, an
exception's type, message and the user's traceback in the result.
On both backends (strict: restricted sandbox; trusted: controlled).  Prints TAP."""
import json
import re

import calltest as C
from calltest import check, eq

S = C.Suite()


@S.both("sync function")
def _sync(t, b):
    m = C.module(t, "m.py", """
        def greet(name: str, times: int = 1) -> str:
            \"\"\"Say hello.\"\"\"
            return ", ".join(["hello " + name] * times)
        """)
    eq(C.value_of(t, C.call(t, m + ":greet", {"name": "ada", "times": 2},
                            opts=["--preset", b])),
       "hello ada, hello ada", "value")


@S.both("async function: awaited in a fresh event loop")
def _async(t, b):
    m = C.module(t, "m.py", """
        import asyncio
        async def gather(n: int):
            async def one(i):
                await asyncio.sleep(0.01)
                return i * i
            return list(await asyncio.gather(*(one(i) for i in range(n))))
        """)
    eq(C.value_of(t, C.call(t, m + ":gather", {"n": 5}, opts=["--preset", b])),
       [0, 1, 4, 9, 16], "value")


@S.both("positional-only / keyword-only: def f(a, /, b, *, c) with {a, b, c}")
def _kinds(t, b):
    m = C.module(t, "m.py", """
        import inspect
        def f(a, /, b, *, c):
            return {"a": a, "b": b, "c": c}
        """)
    eq(C.value_of(t, C.call(t, m + ":f", {"a": 1, "b": 2, "c": 3}, opts=["--preset", b])),
       {"a": 1, "b": 2, "c": 3}, "value")
    # keys in another order: still by name, not by position in the JSON object
    eq(C.value_of(t, C.call(t, m + ":f", '{"c": 30, "b": 20, "a": 10}',
                            opts=["--preset", b])),
       {"a": 10, "b": 20, "c": 30}, "value (reordered keys)")


@S.both("omitted defaults stay omitted (the default object itself, not a copy or None)")
def _defaults(t, b):
    m = C.module(t, "m.py", """
        MISSING = object()
        SHARED = []
        def f(a=MISSING, /, b=MISSING, c=SHARED, *, d=MISSING, e=None):
            return {"a": a is MISSING, "b": b is MISSING, "c": c is SHARED,
                    "d": d is MISSING, "e": e}
        def g(x=1, y=2, /, z=3):
            return [x, y, z]
        """)
    eq(C.value_of(t, C.call(t, m + ":f", {}, opts=["--preset", b])),
       {"a": True, "b": True, "c": True, "d": True, "e": None}, "all omitted")
    eq(C.value_of(t, C.call(t, m + ":f", {"b": 5, "e": 1}, opts=["--preset", b])),
       {"a": True, "b": False, "c": True, "d": True, "e": 1}, "b and e given")
    # a later positional-only given, an earlier one omitted: the earlier gets its default
    eq(C.value_of(t, C.call(t, m + ":g", {"y": 20}, opts=["--preset", b])),
       [1, 20, 3], "gap in positional-only")
    # an explicit null is passed as None (it is not "omitted")
    eq(C.value_of(t, C.call(t, m + ":f", {"d": None}, opts=["--preset", b])),
       {"a": True, "b": True, "c": True, "d": False, "e": None}, "explicit null")


@S.both("no state survives a call: a module counter is 1 on each of two calls")
def _counter(t, b):
    m = C.module(t, "m.py", """
        COUNT = 0
        def bump():
            global COUNT
            COUNT += 1
            return COUNT
        """)
    for i in (1, 2):
        eq(C.value_of(t, C.call(t, m + ":bump", opts=["--preset", b])), 1, "call %d" % i)


@S.both("noisy stdout/stderr does not touch the value; counted, the result's stdout/stderr")
def _noisy(t, b):
    m = C.module(t, "m.py", """
        import os, sys
        def f():
            print('{"value": "from stdout"}')
            print("x" * 5000)
            sys.stderr.write("to stderr\\n" * 100)
            sys.stdout.flush()
            os.write(1, b"\\x00\\xff raw fd 1")
            os.write(2, b"raw fd 2")
            return {"clean": True}
        """)
    r = C.call(t, m + ":f", opts=["--preset", b])
    doc = C.check_result(t, r, "success")
    eq(doc["value"], {"clean": True}, "value")
    produced = (len('{"value": "from stdout"}\n') + 5001 + len("to stderr\n") * 100
                + len(b"\x00\xff raw fd 1") + len(b"raw fd 2"))
    total = doc["stdout_bytes"] + doc["stderr_bytes"]
    check(total >= produced, "stdout_bytes+stderr_bytes %d count fewer than the %d bytes "
          "written" % (total, produced))
    # contract 2: the function's output is the result's (it was kept out before)
    check(doc["stdout"].startswith('{"value": "from stdout"}\nxxxx'), "stdout %r"
          % doc["stdout"][:200])
    check(doc["stdout"].endswith("raw fd 1"), "stdout %r" % doc["stdout"][-200:])
    eq(doc["stderr"], "to stderr\n" * 100 + "raw fd 2", "stderr")


@S.both("without --json: the value as JSON on stdout, exit 0")
def _plain(t, b):
    m = C.module(t, "m.py", """
        def f(x):
            print("noise")
            return {"b": [1, 2.5, None, True], "a": "\\u00e9"}
        """)
    r = C.call(t, m + ":f", {"x": 0}, opts=["--preset", b], json_out=False)
    r.expect_rc(0)
    lines = r.out.splitlines()
    eq(len(lines), 1, "one line on stdout: %r" % r.out)
    eq(json.loads(lines[0]), {"b": [1, 2.5, None, True], "a": "\u00e9"}, "value")
    check("noise" not in r.out, "the function's output reached stdout")


@S.both("an exception's type, message and the user's traceback reach the result (contract "
      "2); govex's frames do not")
def _exception(t, b):
    m = C.module(t, "m.py", """
        class LeakyError(Exception):
            pass
        def f():
            print("before the raise")
            raise LeakyError("cannot open x: token=hunter2")
        def g():
            import json
            json.loads("{x")
        """)
    for fn, et, msg, line in (("f", "LeakyError", "cannot open x: token=hunter2",
                               'File "m.py", line 5, in f'),
                              ("g", "JSONDecodeError",
                               "Expecting property name enclosed in double quotes: "
                               "line 1 column 2 (char 1)", 'File "m.py", line 8, in g')):
        r = C.call(t, m + ":" + fn, opts=["--preset", b])
        doc = C.check_result(t, r, "execution_failed", "exception", rc=1)
        d = C.diag(doc, "exception")
        eq(d.get("exception_type"), et, "exception_type")
        eq(d["message"], et + ": " + msg, "message")
        eq(d["exception"]["type"], et, "exception.type")
        eq(d["exception"]["message"], msg, "exception.message")
        tb = d["exception"]["traceback"]
        check(tb.startswith("Traceback (most recent call last):\n") and line in tb
              and tb.endswith(et + ": " + msg + "\n"), "traceback %r" % tb)
        check("<string>" not in tb and "worker" not in tb, "govex's frames: %r" % tb)
        if fn == "f":
            eq(doc["stdout"], "before the raise\n", "the function's output")
        check(tb in doc["stderr"], "the traceback on stderr too: %r" % doc["stderr"])


@S.test("exception_type is a type name (identifier characters), not arbitrary text a "
        "type's __name__ can carry (a host path here)")
def _type_name(t):
    m = C.module(t, "m.py", """
        def f():
            raise type("/home/secret/x token=1", (Exception,), {})()
        """)
    r = C.call(t, m + ":f", opts=["--preset", "strict"])
    doc = C.check_result(t, r, "execution_failed", "exception", rc=1)
    et = C.diag(doc, "exception").get("exception_type")
    check(et is None or re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", et),
          "exception_type carries arbitrary text: %r" % (et,))
    d = C.diag(doc, "exception")
    check(re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", d["exception"]["type"]),
          "exception.type carries arbitrary text: %r" % (d,))
    # the user's own traceback may print the type as the code named it (its text, like
    # the message); the names govex gives are identifiers
    check("/home/secret" not in d["message"].split(":")[0], "message %r" % d["message"])


@S.both("an exception while the module loads: execution_failed, the exception's text and "
      "the user's traceback (contract 2)")
def _module_error(t, b):
    m = C.module(t, "m.py", """
        def f():
            return 1
        open("/home/secret/x/does-not-exist")
        """)
    r = C.call(t, m + ":f", opts=["--preset", b])
    doc = C.check_result(t, r, "execution_failed", "module_error", rc=1)
    d = C.diag(doc, "module_error")
    eq(d.get("exception_type"), "FileNotFoundError", "exception_type")
    eq(d["exception"]["type"], "FileNotFoundError", "exception.type")
    check("/home/secret/x/does-not-exist" in d["exception"]["message"], "message %r" % d)
    check('File "m.py", line 3, in <module>' in d["exception"]["traceback"], "traceback %r" % d)


@S.both("arguments from --args-file and from stdin (--args-file -)")
def _args_file(t, b):
    m = C.module(t, "m.py", """
        def f(xs: list, k: dict):
            return [sum(xs), sorted(k)]
        """)
    t.write_json("args.json", {"xs": [1, 2, 3], "k": {"z": 1, "a": 2}})
    eq(C.value_of(t, C.call(t, m + ":f", opts=["--preset", b, "--args-file",
                                               t.path("args.json")])),
       [6, ["a", "z"]], "--args-file FILE")
    eq(C.value_of(t, C.call(t, m + ":f", opts=["--preset", b, "--args-file", "-"],
                            input=json.dumps({"xs": [4], "k": {}}).encode())),
       [4, []], "--args-file -")


@S.test("a module file named asyncio.py: its async function still runs (the worker "
        "imports asyncio before the module on purpose)")
def _shadow(t):
    m = C.module(t, "asyncio.py", """
        async def f(x: int):
            return x + 1
        """)
    eq(C.value_of(t, C.call(t, m + ":f", {"x": 1}, opts=["--preset", "strict"])), 2, "value")


if __name__ == "__main__":
    raise SystemExit(S.main())
