#!/usr/bin/env python3
"""The call-mode worker (src/worker/worker.py) as the C side starts it, on every Python
from 3.8 to 3.13 found here plus /usr/bin/python3: inspection, effects, calls and every
status a call can end with, framing failures.  Prints TAP."""
import concurrent.futures
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workerlib as W  # noqa: E402

sys.setrecursionlimit(20000)  # responses nest 1000 deep
from workerlib import FRAME_VERSION, check, expect_failure, expect_value  # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


_cache = {}
_cache_lock = threading.Lock()


def inspection(py, source, module="mod"):
    key = (py, source, module)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    resp = W.inspect(py, source, module)
    check(resp.get("ok") is True, "inspection failed: %r" % (resp,))
    with _cache_lock:
        _cache[key] = resp["inspection"]
    return resp["inspection"]


def fn_entry(py, source, name):
    for f in inspection(py, source)["functions"]:
        if f["name"] == name:
            return f
    raise W.Check("no function %r" % name)


def do_call(py, source, name, args, **kw):
    req = W.call_request(source, name, args, inspection(py, source), **kw)
    return W.run_worker(py, W.frame(req))


def call_with_entry(py, source, name, args, entry):
    """A call whose plan and inspection carry a given (possibly false) function entry."""
    ins = json.loads(json.dumps(inspection(py, source)))
    ins["functions"] = [f for f in ins["functions"] if f["name"] != name] + [entry]
    plan_text, itext = W.plan_for(source, ins, name)
    req = W.call_request(source, name, args, ins, plan_text=plan_text, itext=itext)
    return W.run_worker(py, W.frame(req))


def effects(py, source, name):
    return fn_entry(py, source, name)["effects"]


def expect_effects(py, source, name, **want):
    got = effects(py, source, name)
    for k, v in want.items():
        check(got.get(k) == v, "%s: %s is %r, expected %r (all: %r)" % (name, k, got.get(k), v,
                                                                         got))


ALL_ABSENT = dict((k, "absent") for k in ("network", "filesystem_read", "filesystem_write",
                                          "subprocess", "environment", "dynamic_code"))
ALL_UNKNOWN = dict((k, "unknown") for k in ALL_ABSENT)

# ---------------------------------------------------------------------------------------
# inspection

SIGS = '''\
import typing
from typing import Dict, List, Optional

def plain(a: int, b: int) -> int:
    """Adds two numbers.

    Second line, indented.
    """
    return a + b

async def fetch(url: str, *, retries: "int" = 3, timeout: Optional[float] = None) -> Dict[str, List[int]]:
    return {}

def posonly(a, b=2, /, c=3, *, d, e=5):
    return [a, b, c, d, e]

def unannotated(x, y=None):
    def nested():
        pass
    return x

class K:
    def method(self):
        return 1

def wide(m: Dict[str,   "é"] = None, n: 'ü' = 1):
    return 0
'''


@test
def inspect_signatures(py):
    ins = inspection(py, SIGS)
    check(ins["version"] == "govex.inspection/v1", "version %r" % ins.get("version"))
    check(ins["module"] == "mod" and ins["source_digest"] == W.sha(SIGS), "module/digest")
    names = [f["name"] for f in ins["functions"]]
    check(names == ["plain", "fetch", "posonly", "unannotated", "wide"], "functions %r" % names)
    f = ins["functions"][0]
    check(f["async"] is False and f["lineno"] == 4, "plain async/lineno %r" % f)
    check(f["parameters"] == [
        {"name": "a", "kind": "positional_or_keyword", "has_default": False, "annotation": "int",
         "schema": {"type": "integer"}},
        {"name": "b", "kind": "positional_or_keyword", "has_default": False, "annotation": "int",
         "schema": {"type": "integer"}},
    ], "plain parameters %r" % f["parameters"])
    check(f["returns"] == "int", "returns %r" % f["returns"])
    check(f["docstring"] == "Adds two numbers.\n\nSecond line, indented.",
          "docstring %r" % f["docstring"])
    check(f["eligible"] is True and f["reason"] is None, "eligible %r" % f)
    g = ins["functions"][1]
    check(g["async"] is True and g["docstring"] is None, "fetch %r" % g)
    check(g["returns"] == "Dict[str, List[int]]", "fetch returns %r" % g["returns"])
    check(g["parameters"] == [
        {"name": "url", "kind": "positional_or_keyword", "has_default": False, "annotation": "str",
         "schema": {"type": "string"}},
        {"name": "retries", "kind": "keyword_only", "has_default": True, "annotation": '"int"',
         "schema": {"type": "integer"}},
        {"name": "timeout", "kind": "keyword_only", "has_default": True,
         "annotation": "Optional[float]",
         "schema": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
    ], "fetch parameters %r" % g["parameters"])
    p = ins["functions"][2]
    check([(q["name"], q["kind"], q["has_default"]) for q in p["parameters"]] == [
        ("a", "positional_only", False), ("b", "positional_only", True),
        ("c", "positional_or_keyword", True), ("d", "keyword_only", False),
        ("e", "keyword_only", True)], "posonly parameters %r" % p["parameters"])
    u = ins["functions"][3]
    check(u["parameters"][1] == {"name": "y", "kind": "positional_or_keyword",
                                 "has_default": True, "annotation": None, "schema": {}},
          "unannotated %r" % u)
    check(u["returns"] is None, "returns None")
    w = ins["functions"][4]
    check([q["annotation"] for q in w["parameters"]] == ['Dict[str,   "é"]', "'ü'"],
          "non-ASCII annotation text %r" % [q["annotation"] for q in w["parameters"]])


SCHEMAS = '''\
import typing
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union
def f(a: int, b: float, c: bool, d: str, e: None, g: list[int], h: List[str],
      i: Sequence[float], j: dict[str, int], k: Dict[int, str], l: tuple[int, str],
      m: Tuple[int, ...], n: Optional[int], o: int | None, p: Union[int, str, None],
      q: Literal["a", 1, -2, True, None], r: Any, s=1, *, u: "list[Optional[str]]" = None,
      v: typing.Mapping[str, "Unknown"] = None, w: "typing.Annotated[bool, 1]" = False,
      x: Union[int, Any] = 0, y: object = 0, z: Literal[float] = 0) -> dict[str, list[int]]:
    pass
def nothing():
    pass
'''


@test
def inspect_schemas(py):
    """contract 2: each parameter's JSON Schema from its annotation, the function's input
    and output schemas (one interpreter of annotations, in the worker)."""
    fn = fn_entry(py, SCHEMAS, "f")
    want = {
        "a": {"type": "integer"}, "b": {"type": "number"}, "c": {"type": "boolean"},
        "d": {"type": "string"}, "e": {"type": "null"},
        "g": {"type": "array", "items": {"type": "integer"}},
        "h": {"type": "array", "items": {"type": "string"}},
        "i": {"type": "array", "items": {"type": "number"}},
        "j": {"type": "object", "additionalProperties": {"type": "integer"}},
        "k": {"type": "object"},
        "l": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
              "minItems": 2, "maxItems": 2},
        "m": {"type": "array", "items": {"type": "integer"}},
        "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "p": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
        "q": {"enum": ["a", 1, -2, True, None]},
        "r": {}, "s": {},
        "u": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "v": {"type": "object", "additionalProperties": {}},
        "w": {"type": "boolean"}, "x": {}, "y": {}, "z": {},
    }
    got = {p["name"]: p["schema"] for p in fn["parameters"]}
    for name in want:
        check(got.get(name) == want[name] and type(got.get(name)) is dict,
              "schema of %s (%s): %r, expected %r" % (name, [p["annotation"] for p in
              fn["parameters"] if p["name"] == name], got.get(name), want[name]))
    check(set(got) == set(want), "parameters %r" % sorted(got))
    q = got["q"]["enum"]
    check(q[3] is True and type(q[1]) is int, "Literal keeps bool and int apart: %r" % q)
    check(fn["input_schema"] == {"type": "object", "properties": want,
                                 "required": [n for n in "abcdeghijklmnopqr"],
                                 "additionalProperties": False},
          "input_schema %r" % fn["input_schema"])
    check(fn["output_schema"] == {"type": "object", "additionalProperties":
                                  {"type": "array", "items": {"type": "integer"}}},
          "output_schema %r" % fn["output_schema"])
    fn = fn_entry(py, SCHEMAS, "nothing")
    check(fn["input_schema"] == {"type": "object", "properties": {}, "required": [],
                                 "additionalProperties": False}, "%r" % fn["input_schema"])
    check(fn["output_schema"] == {}, "%r" % fn["output_schema"])


@test
def inspect_no_floats_and_types(py):
    ins = inspection(py, SIGS)
    stack = [ins]
    while stack:
        v = stack.pop()
        check(type(v) in (dict, list, str, int, bool, type(None)), "type %r in inspection" % type(v))
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


ELIG = '''\
def gen():
    yield 1

async def agen():
    yield 1

async def coro():
    return [x async for x in agen()]

def outer():
    def inner():
        yield 1
    return inner

def star(*args):
    return args

def kw(**kwargs):
    return kwargs

def twice():
    return 1

def twice():
    return 2

def rebound():
    return 1
rebound = None

def ok(a, b=1, *, c):
    return a
'''


@test
def inspect_eligibility(py):
    ins = inspection(py, ELIG)
    got = [(f["name"], f["eligible"], f["reason"]) for f in ins["functions"]]
    want = [("gen", False, "generator"), ("agen", False, "async_generator"),
            ("coro", True, None), ("outer", True, None), ("star", False, "var_positional"),
            ("kw", False, "var_keyword"), ("twice", False, "redefined"),
            ("twice", False, "redefined"), ("rebound", False, "redefined"), ("ok", True, None)]
    check(got == want, "eligibility %r" % got)


@test
def inspect_syntax_error(py):
    src = "def f(:\n    return 1  # /home/secret\n"
    resp = W.inspect(py, "x = 1\n" + src)
    check(resp.get("status") == "invalid_input" and resp.get("code") == "syntax_error",
          "%r" % resp)
    check("line 2" in resp["message"] and "secret" not in json.dumps(resp), "%r" % resp)
    check(resp["exception_type"] == "SyntaxError", "%r" % resp)


@test
def inspect_nul_byte(py):
    resp = W.inspect(py, "x = 1\0\n")
    check(resp.get("status") == "invalid_input" and resp.get("code") == "syntax_error",
          "%r" % resp)


@test
def inspect_digest_mismatch(py):
    run = W.run_worker(py, W.frame(W.inspect_request("def f(): pass\n",
                                                     digest=W.sha("def g(): pass\n"))))
    expect_failure(run, "source_mismatch", "digest_mismatch")


@test
def inspect_is_static(py):
    # the module is never executed: its top-level code would fail (and print) if it were
    src = 'print("EXECUTED")\nraise SystemExit(3)\ndef f():\n    return 1\n'
    run = W.run_worker(py, W.frame(W.inspect_request(src)))
    resp = run.resp
    check(resp["ok"] is True and [f["name"] for f in resp["inspection"]["functions"]] == ["f"],
          "%r" % resp)
    check(b"EXECUTED" not in run.stderr and b"EXECUTED" not in run.stdout, "module ran")


@test
def inspect_deep_source(py):
    # deeply nested expressions: either an answer or invalid_input, never a crash
    src = "def f():\n    return " + "(" * 150 + "1" + ")" * 150 + "\nx = " + "1+" * 20000 + "1\n"
    run = W.run_worker(py, W.frame(W.inspect_request(src)))
    resp = run.resp
    check(resp["ok"] is True or resp["status"] == "invalid_input", "%r" % resp)


# ---------------------------------------------------------------------------------------
# effects

EFFECTS_SRC = '''\
import os
import socket
import subprocess
import urllib.request
from pathlib import Path
from dataclasses import dataclass
import importlib
import requests

def add(a: int, b: int) -> int:
    return a + b

def connect(host):
    s = socket.socket()
    s.connect((host, 80))

def connect_inner():
    import socket as sk
    return sk.create_connection(("example.org", 80))

def unresolved(x):
    return frobnicate(x)

def _writer(path):
    with open(path, "w") as f:
        f.write("x")

def writes_via_helper(path: str) -> None:
    _writer(path)

def a1():
    return a2()

def a2():
    return a3()

def a3():
    return subprocess.run(["true"])

def ping(n):
    return pong(n - 1) if n else 0

def pong(n):
    os.remove("/tmp/x")
    return ping(n)

def reads(path):
    with open(path) as f:
        return f.read()

def mode_unknown(path, mode):
    return open(path, mode)

def env():
    return os.environ["HOME"], os.getenv("USER")

def dyn(code):
    return eval(code)

def dyn_getattr(obj, name):
    return getattr(obj, name)

def literal_getattr(x: int):
    return getattr(x, "real")

def dyn_import(name):
    return importlib.import_module(name)

def method_unknown(x):
    return x.frob()

def method_str(s: str) -> str:
    return s.strip().upper() + " ".join(["a", "b"])

def path_write(p):
    Path(p).write_text("x")

def url(u):
    return urllib.request.urlopen(u).read()

def req(u):
    return requests.get(u)

@dataclass
class Point:
    x: int
    y: int

def make_point(x: int, y: int):
    return Point(x, y).x

def sorter(items: list):
    return sorted(items, key=lambda v: len(v))

def mapper(paths: list):
    return list(map(os.remove, paths))

def local_data():
    d = {"a": [1, 2]}
    d["a"].append(3)
    parts = "a,b".split(",")
    for p in parts:
        p.strip()
    return d

def spawn():
    os.system("true")

if __name__ == "__main__":
    frobnicate()
'''


@test
def effects_pure(py):
    expect_effects(py, EFFECTS_SRC, "add", **ALL_ABSENT)


@test
def effects_network(py):
    expect_effects(py, EFFECTS_SRC, "connect", network="present", filesystem_write="absent",
                   subprocess="absent", environment="absent", dynamic_code="absent")
    expect_effects(py, EFFECTS_SRC, "connect_inner", network="present", subprocess="absent")
    expect_effects(py, EFFECTS_SRC, "url", network="present")
    expect_effects(py, EFFECTS_SRC, "req", network="present")


@test
def effects_unresolved(py):
    expect_effects(py, EFFECTS_SRC, "unresolved", **ALL_UNKNOWN)
    expect_effects(py, EFFECTS_SRC, "method_unknown", **ALL_UNKNOWN)


@test
def effects_transitive(py):
    expect_effects(py, EFFECTS_SRC, "writes_via_helper", filesystem_write="present",
                   network="absent", subprocess="absent")
    expect_effects(py, EFFECTS_SRC, "a1", subprocess="present", network="absent",
                   filesystem_write="absent")
    # a cycle: both ends see the write
    expect_effects(py, EFFECTS_SRC, "ping", filesystem_write="present", network="absent")
    expect_effects(py, EFFECTS_SRC, "pong", filesystem_write="present", network="absent")


@test
def effects_files(py):
    expect_effects(py, EFFECTS_SRC, "reads", filesystem_read="present",
                   filesystem_write="absent", network="absent")
    expect_effects(py, EFFECTS_SRC, "mode_unknown", filesystem_write="unknown",
                   filesystem_read="unknown", network="absent")
    expect_effects(py, EFFECTS_SRC, "path_write", filesystem_write="present", network="absent")
    expect_effects(py, EFFECTS_SRC, "mapper", filesystem_write="present", network="absent")


@test
def effects_environment_subprocess(py):
    expect_effects(py, EFFECTS_SRC, "env", environment="present", network="absent",
                   filesystem_write="absent")
    expect_effects(py, EFFECTS_SRC, "spawn", subprocess="present", network="absent")


@test
def effects_dynamic(py):
    for name in ("dyn", "dyn_getattr", "dyn_import"):
        e = effects(py, EFFECTS_SRC, name)
        check(e["dynamic_code"] == "present", "%s: %r" % (name, e))
        check(all(v != "absent" for v in e.values()), "%s: dynamic code leaves absents %r"
              % (name, e))
    expect_effects(py, EFFECTS_SRC, "literal_getattr", **ALL_ABSENT)


@test
def effects_known_pure_values(py):
    for name in ("method_str", "make_point", "sorter", "local_data"):
        expect_effects(py, EFFECTS_SRC, name, **ALL_ABSENT)


MODULE_LEVEL = '''\
import thirdparty
CLIENT = thirdparty.connect()

def add(a, b):
    return a + b
'''

STAR = '''\
from os import *

def f(p):
    return remove(p)

def g():
    return len([])
'''


@test
def effects_module_level_and_star(py):
    # loading the module is part of every call
    expect_effects(py, MODULE_LEVEL, "add", **ALL_UNKNOWN)
    expect_effects(py, STAR, "f", **ALL_UNKNOWN)
    expect_effects(py, STAR, "g", **ALL_UNKNOWN)


SHADOW = '''\
import os

def open(path):
    return path

def f(p):
    return open(p)

def g(os):
    return os.remove("x")

class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    def leak(self):
        return os.system("x")

def use_box():
    return Box(1).get()

def method_leak():
    b = Box(1)
    return b.leak()

def decorated_helper(fn):
    def wrapper(*a, **k):
        os.unlink("/tmp/y")
        return fn(*a, **k)
    return wrapper

@decorated_helper
def decorated():
    return 1
'''


@test
def effects_scopes(py):
    # the module's own open() shadows the builtin
    expect_effects(py, SHADOW, "f", **ALL_ABSENT)
    # a parameter named os is not the module: calling its method is unknown
    expect_effects(py, SHADOW, "g", network="unknown", subprocess="unknown")
    # calling the class may run any of its methods, so leak() is seen
    expect_effects(py, SHADOW, "use_box", subprocess="present")
    expect_effects(py, SHADOW, "method_leak", subprocess="present")
    # a decorator's wrapper is what a call runs
    expect_effects(py, SHADOW, "decorated", filesystem_write="present")


ASYNC_EFF = '''\
import asyncio

async def sleepy(n: int) -> int:
    await asyncio.sleep(0)
    return n

async def conn(host: str):
    r, w = await asyncio.open_connection(host, 80)
    return 1

async def sub():
    p = await asyncio.create_subprocess_exec("true")
    return 1
'''


MORE = '''\
from subprocess import run as sh
import builtins, os, shutil, tempfile

def via_alias():
    return sh(["true"])

def via_builtins(code):
    return builtins.exec(code)

def via_dunder_import(n):
    return __import__(n)

def via_compile(src):
    return compile(src, "x", "exec")

def copies(a, b):
    shutil.copy(a, b)

def temp():
    return tempfile.mkdtemp()

def lists(d):
    return os.listdir(d)

def putenv():
    os.environ["X"] = "1"

def local_fn_escape():
    def inner():
        os.system("x")
    return inner
'''


@test
def effects_more(py):
    expect_effects(py, MORE, "via_alias", subprocess="present", network="absent")
    for name in ("via_builtins", "via_dunder_import", "via_compile"):
        expect_effects(py, MORE, name, dynamic_code="present", network="unknown")
    expect_effects(py, MORE, "copies", filesystem_read="present", filesystem_write="present",
                   network="absent", subprocess="absent")
    expect_effects(py, MORE, "temp", filesystem_write="present", environment="present")
    expect_effects(py, MORE, "lists", filesystem_read="present", filesystem_write="absent")
    expect_effects(py, MORE, "putenv", environment="present", filesystem_write="absent")
    # returning a function does not run it
    expect_effects(py, MORE, "local_fn_escape", **ALL_ABSENT)


@test
def effects_async(py):
    expect_effects(py, ASYNC_EFF, "sleepy", **ALL_ABSENT)
    expect_effects(py, ASYNC_EFF, "conn", network="present")
    expect_effects(py, ASYNC_EFF, "sub", subprocess="present")


# ---------------------------------------------------------------------------------------
# calls: success

CALLS = '''\
import asyncio
from typing import Optional, List, Dict

_SENTINEL = object()
state = []

def add(a: int, b: int) -> int:
    return a + b

async def aadd(a: int, b: int = 10) -> int:
    await asyncio.sleep(0)
    return a + b

async def gathered(n: int):
    async def one(i):
        await asyncio.sleep(0)
        return i * i
    return list(await asyncio.gather(*[one(i) for i in range(n)]))

def shape(a, b=2, /, c=3, *, d, e=5):
    return [a, b, c, d, e]

def gap(a=1, b=2, /):
    return [a, b]

def omitted(x=_SENTINEL, *, y=_SENTINEL):
    return [x is _SENTINEL, y is _SENTINEL]

def echo(v):
    return v

def maybe(x: Optional[int] = 5, y: "int | None" = 5, z=5, w: Optional[List[int]] = None):
    return [x, y, z, w]

def strict_int(x: int):
    return x

def strict_list(x: List[int]):
    return x

def strict_dict(x: dict):
    return x

def mutate():
    state.append(1)
    return len(state)

def noisy():
    import os, sys
    print("to stdout " * 100)
    sys.stdout.write("more stdout\\n")
    sys.stderr.write("to stderr\\n")
    os.write(1, b"raw fd 1\\n")
    return "quiet"

def cwd_empty():
    import os
    return os.listdir(".")

def unicode():
    return {"s": "\\u00fc\\u2028\\U0001F600", "k\\u00e9": [1.5, -0.0, 2**63 - 1, True, None]}

def too_big():
    return [-(2**63), 2**64]
'''


@test
def call_sync(py):
    expect_value(do_call(py, CALLS, "add", {"a": 2, "b": 3}), 5)


@test
def call_async(py):
    expect_value(do_call(py, CALLS, "aadd", {"a": 2}), 12)
    expect_value(do_call(py, CALLS, "gathered", {"n": 4}), [0, 1, 4, 9])


@test
def call_positional_keyword_only(py):
    expect_value(do_call(py, CALLS, "shape", {"a": 1, "d": 4}), [1, 2, 3, 4, 5])
    expect_value(do_call(py, CALLS, "shape", {"a": 1, "b": 20, "c": 30, "d": 4, "e": 50}),
                 [1, 20, 30, 4, 50])
    # an omitted positional-only default before a given one: its own default is passed
    expect_value(do_call(py, CALLS, "gap", {"b": 9}), [1, 9])


@test
def call_omitted_defaults(py):
    expect_value(do_call(py, CALLS, "omitted", {}), [True, True])
    expect_value(do_call(py, CALLS, "omitted", {"y": 1}), [True, False])


@test
def call_null_admitted(py):
    expect_value(do_call(py, CALLS, "maybe", {"x": None, "y": None, "z": None, "w": None}),
                 [None, None, None, None])
    expect_value(do_call(py, CALLS, "echo", {"v": None}), None)


@test
def call_fresh_state(py):
    # each call is a fresh process: module state never survives
    expect_value(do_call(py, CALLS, "mutate", {}), 1)
    expect_value(do_call(py, CALLS, "mutate", {}), 1)


@test
def call_noisy_output(py):
    run = do_call(py, CALLS, "noisy", {})
    expect_value(run, "quiet")
    # the function's stdout is the run's stdout (contract 2; it went to stderr before)
    check(b"to stdout" in run.stdout and b"raw fd 1" in run.stdout, "stdout %r" % run.stdout[:300])
    check(b"to stderr" in run.stderr and b"to stdout" not in run.stderr,
          "stderr %r" % run.stderr[:300])


@test
def call_workdir(py):
    expect_value(do_call(py, CALLS, "cwd_empty", {}), [])


@test
def call_unicode_and_numbers(py):
    run = do_call(py, CALLS, "unicode", {})
    expect_value(run, {"s": "\u00fc\u2028\U0001F600", "k\u00e9": [1.5, -0.0, 2 ** 63 - 1, True,
                                                                  None]})
    # the frame is UTF-8, not escaped
    check("\U0001F600".encode("utf-8") in run.raw, "raw frame %r" % run.raw[:200])


@test
def call_argument_transport(py):
    v = {"a": [1, -2, 3.25, 1e300, "x\u0000y", {"n": None, "t": True, "f": False}],
         "empty": {}, "list": [], "big": 2 ** 63 - 1, "neg": -(2 ** 63), "s": "\u00e9\U0001F600"}
    expect_value(do_call(py, CALLS, "echo", {"v": v}), v)
    # integers beyond 64 bits cannot be carried exactly by the parent: refused
    W.expect_failure(do_call(py, CALLS, "too_big", {}), "result_invalid", "int_out_of_range")


DC = '''\
from dataclasses import dataclass, asdict

@dataclass
class P:
    x: int
    y: int = 2

def make(x: int):
    return asdict(P(x))

if __name__ == "__main__":
    raise SystemExit("main guard ran")
'''


@test
def call_module_registered(py):
    # dataclasses look the module up in sys.modules; __name__ is the module's name
    expect_value(do_call(py, DC, "make", {"x": 1}), {"x": 1, "y": 2})


@test
def call_module_named_like_stdlib(py):
    src = "import asyncio\nasync def f(x: int):\n    await asyncio.sleep(0)\n    return x\n"
    ins = W.inspect(py, src, module="json")["inspection"]
    req = W.call_request(src, "f", {"x": 3}, ins, module="json", filename="json.py")
    expect_value(W.run_worker(py, W.frame(req)), 3)


FDS = '''\
import os

def inheritable():
    out = []
    for fd in range(64):
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:
            pass
    return out

def fd3_closed():
    try:
        os.fstat(3)
    except OSError:
        return True
    return False

def stdin_empty():
    return os.read(0, 10) == b""
'''


@test
def call_descriptors(py):
    # only stdin/stdout/stderr reach what the function starts; fd 3 itself is closed
    expect_value(do_call(py, FDS, "inheritable", {}), [0, 1, 2])
    expect_value(do_call(py, FDS, "fd3_closed", {}), True)
    expect_value(do_call(py, FDS, "stdin_empty", {}), True)


# ---------------------------------------------------------------------------------------
# calls: invalid input

@test
def call_missing_argument(py):
    expect_failure(do_call(py, CALLS, "add", {"a": 1}), "invalid_input", "missing_argument")
    expect_failure(do_call(py, CALLS, "shape", {"a": 1}), "invalid_input", "missing_argument")


@test
def call_unknown_argument(py):
    expect_failure(do_call(py, CALLS, "add", {"a": 1, "b": 2, "c": 3}), "invalid_input",
                   "unknown_argument")


@test
def call_null_not_allowed(py):
    expect_failure(do_call(py, CALLS, "strict_int", {"x": None}), "invalid_input",
                   "null_not_allowed")
    expect_failure(do_call(py, CALLS, "strict_list", {"x": None}), "invalid_input",
                   "null_not_allowed")
    expect_failure(do_call(py, CALLS, "strict_dict", {"x": None}), "invalid_input",
                   "null_not_allowed")


@test
def call_args_not_object(py):
    expect_failure(do_call(py, CALLS, "add", [1, 2]), "invalid_input", "args_not_object")


@test
def call_input_too_large(py):
    args = {"a": 1, "b": 2}
    size = len((W.canon(args) + "\n").encode("utf-8"))
    expect_value(do_call(py, CALLS, "add", args, in_max=size), 3)
    expect_failure(do_call(py, CALLS, "add", args, in_max=size - 1), "invalid_input",
                   "input_too_large")


# ---------------------------------------------------------------------------------------
# calls: binding

BIND = '''\
def sync(a, b=1):
    return a

async def coro(a):
    return a

def gen():
    yield 1

class C:
    pass

def replaced():
    return 1

globals()["replaced"] = len
'''


@test
def binding_function_missing(py):
    entry = dict(fn_entry(py, BIND, "sync"), name="ghost")
    expect_failure(call_with_entry(py, BIND, "ghost", {"a": 1}, entry), "binding_failed",
                   "function_missing")


@test
def binding_not_a_function(py):
    expect_failure(do_call(py, BIND, "replaced", {}), "binding_failed", "not_a_function")
    entry = dict(fn_entry(py, BIND, "sync"), name="C", parameters=[])
    expect_failure(call_with_entry(py, BIND, "C", {}, entry), "binding_failed",
                   "not_a_function")


@test
def binding_async_mismatch(py):
    entry = dict(fn_entry(py, BIND, "sync"), **{"async": True})
    expect_failure(call_with_entry(py, BIND, "sync", {"a": 1}, entry), "binding_failed",
                   "async_mismatch")
    entry = dict(fn_entry(py, BIND, "coro"), **{"async": False})
    expect_failure(call_with_entry(py, BIND, "coro", {"a": 1}, entry), "binding_failed",
                   "async_mismatch")


@test
def binding_generator(py):
    entry = dict(fn_entry(py, BIND, "gen"), eligible=True, reason=None)
    expect_failure(call_with_entry(py, BIND, "gen", {}, entry), "binding_failed",
                   "generator_function")


@test
def binding_signature_mismatch(py):
    base = fn_entry(py, BIND, "sync")
    for change in ({"name": "z"}, {"kind": "keyword_only"}, {"has_default": True}):
        params = [dict(base["parameters"][0], **change), base["parameters"][1]]
        entry = dict(base, parameters=params)
        args = {params[0]["name"]: 1}
        expect_failure(call_with_entry(py, BIND, "sync", args, entry), "binding_failed",
                       "signature_mismatch")
    entry = dict(base, parameters=base["parameters"][:1])
    expect_failure(call_with_entry(py, BIND, "sync", {"a": 1}, entry), "binding_failed",
                   "signature_mismatch")


DECO = '''\
import functools

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return {"wrapped": fn(*args, **kwargs)}
    return wrapper

@logged
def hello(name: str, /, *, punct: str = "!") -> str:
    return "hello " + name + punct

@functools.lru_cache(maxsize=None)
def cached(x: int) -> int:
    return x
'''


@test
def binding_decorated(py):
    # a functools.wraps wrapper is a plain function with the planned signature
    expect_value(do_call(py, DECO, "hello", {"name": "bob"}), {"wrapped": "hello bob!"})
    # lru_cache's wrapper is not a plain function
    expect_failure(do_call(py, DECO, "cached", {"x": 1}), "binding_failed", "not_a_function")


@test
def binding_not_eligible(py):
    entry = fn_entry(py, ELIG, "star")
    run = do_call(py, ELIG, "star", {})
    expect_failure(run, "binding_failed", "not_eligible")
    check(entry["eligible"] is False, "star is ineligible")


@test
def module_starts_mark(py):
    """A call's worker writes one empty frame just before the module's code runs, and
    only then: a failure found before (not eligible, bad arguments, a digest mismatch)
    has no mark, so the parent knows nothing of the module ran; an inspection never
    has one."""
    src = "import os\nX = os.getpid()\ndef f(a: int):\n    return a\n"
    run = do_call(py, src, "f", {"a": 1})
    check(run.raw.startswith(W.MODULE_STARTS), "no mark before a call's response: %r"
          % run.raw[:40])
    check(not run.raw[8:].startswith(W.MODULE_STARTS), "two marks: %r" % run.raw[:40])
    expect_value(run, 1)
    for args in ({}, {"a": 1, "b": 2}):
        run = do_call(py, src, "f", args)
        check(not run.raw.startswith(W.MODULE_STARTS),
              "a mark before a failure found before the import: %r" % run.raw[:40])
    run = do_call(py, ELIG, "star", {})
    check(not run.raw.startswith(W.MODULE_STARTS), "a mark before not_eligible")
    run = W.run_worker(py, W.frame(W.inspect_request(src)))
    check(not run.raw.startswith(W.MODULE_STARTS), "a mark in an inspection")


# ---------------------------------------------------------------------------------------
# calls: execution

EXC = '''\
import sys

def boom(path: str):
    raise ValueError("cannot open " + path + " token=hunter2")

def leave():
    sys.exit("/home/alice/.ssh/id_rsa")

def interrupt():
    raise KeyboardInterrupt("/secret/ki")

class Weird(Exception):
    pass

def custom():
    raise Weird("/secret/custom")

def ok():
    return 1
'''


@test
def execution_exception_text(py):
    # contract 2 (issue 11): the exception's type, message and the user's traceback are
    # the caller's to read (they were kept out of the frame before)
    secret = "/home/alice/private/key.pem"
    run = do_call(py, EXC, "boom", {"path": secret})
    resp = expect_failure(run, "execution_failed", "exception", "ValueError")
    check(resp["message"] == "the function raised an exception", "message %r" % resp["message"])
    exc = resp["exception"]
    check(exc["message"] == "cannot open " + secret + " token=hunter2", "message %r" % exc)
    check('File "mod.py", line 4, in boom' in exc["traceback"]
          and "raise ValueError" in exc["traceback"]
          and exc["traceback"].startswith("Traceback (most recent call last):\n")
          and exc["traceback"].endswith("ValueError: cannot open " + secret + " token=hunter2\n"),
          "traceback %r" % exc["traceback"])
    check(exc["traceback"] in run.stderr.decode(), "stderr %r" % run.stderr[-2000:])


@test
def execution_base_exceptions(py):
    run = do_call(py, EXC, "leave", {})
    expect_failure(run, "execution_failed", "exception", "SystemExit")
    expect_failure(do_call(py, EXC, "interrupt", {}), "execution_failed", "exception",
                   "KeyboardInterrupt")
    expect_failure(do_call(py, EXC, "custom", {}), "execution_failed", "exception", "Weird")


@test
def execution_async_exception(py):
    src = "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n    raise OSError('/x/y')\n"
    run = do_call(py, src, "f", {})
    resp = expect_failure(run, "execution_failed", "exception", "OSError")
    check(resp["exception"]["message"] == "/x/y", "exception %r" % resp["exception"])
    check("asyncio" not in resp["exception"]["traceback"], "asyncio's frames %r"
          % resp["exception"]["traceback"])


@test
def execution_module_error(py):
    src = EXC + '\nopen("/nonexistent/secret/dir/file")\n'
    run = do_call(py, src, "ok", {})
    resp = expect_failure(run, "execution_failed", "module_error", "FileNotFoundError")
    check("line 21, in <module>" in resp["exception"]["traceback"],
          "traceback %r" % resp["exception"]["traceback"])


# ---------------------------------------------------------------------------------------
# calls: results

RESULTS = '''\
import math

def r_set():
    return {1, 2}

def r_tuple():
    return (1, 2)

def r_nested_tuple():
    return {"a": [1, (2,)]}

def r_bytes():
    return b"x"

def r_nan():
    return float("nan")

def r_inf():
    return [math.inf]

def r_int_keys():
    return {1: "a"}

def r_object():
    return object()

def r_cycle():
    a = []
    a.append(a)
    return a

def r_bool_subclass():
    import enum
    class E(enum.IntEnum):
        A = 1
    return E.A

def r_surrogate():
    return "\\ud800"

def r_deep(n: int):
    v = None
    for _ in range(n):
        v = [v]
    return v

def r_big(n: int):
    return "x" * n

def r_coroutine():
    async def c():
        return 1
    return c()
'''


@test
def result_invalid_values(py):
    for name in ("r_set", "r_tuple", "r_nested_tuple", "r_bytes", "r_nan", "r_inf",
                 "r_int_keys", "r_object", "r_bool_subclass", "r_surrogate", "r_coroutine"):
        run = do_call(py, RESULTS, name, {})
        resp = expect_failure(run, "result_invalid", "not_json")
        check("value" not in resp, "%s: value present" % name)


@test
def result_depth(py):
    expect_failure(do_call(py, RESULTS, "r_cycle", {}), "result_invalid", "too_deep")
    expect_failure(do_call(py, RESULTS, "r_deep", {"n": 1002}), "result_invalid", "too_deep")
    run = do_call(py, RESULTS, "r_deep", {"n": 1000})
    resp = run.resp
    check(resp.get("ok") is True, "depth 1000: %r" % {k: resp[k] for k in resp if k != "value"})


@test
def result_output_limit(py):
    # "x" * n is n + 2 bytes of JSON plus the newline
    expect_value(do_call(py, RESULTS, "r_big", {"n": 97}, out_max=100), "x" * 97)
    expect_failure(do_call(py, RESULTS, "r_big", {"n": 98}, out_max=100), "output_limit",
                   "output_too_large")
    run = do_call(py, RESULTS, "r_big", {"n": 5 * 1024 * 1024})
    expect_failure(run, "output_limit", "output_too_large")
    check(len(run.raw) < 1000, "failure frame of %d bytes" % len(run.raw))


# ---------------------------------------------------------------------------------------
# source mismatch

@test
def mismatch_chain(py):
    src = CALLS
    ins = inspection(py, src)
    good = W.call_request(src, "add", {"a": 1, "b": 2}, ins)
    expect_value(W.run_worker(py, W.frame(good)), 3)

    def variant(**change):
        r = dict(good)
        r.update(change)
        return W.run_worker(py, W.frame(r))

    tampered = src.replace("return a + b", "return a - b")
    cases = {
        "tampered source": variant(source=tampered),
        "tampered source with its digest": variant(source=tampered, source_digest=W.sha(tampered)),
        "plan digest": variant(plan_digest=W.sha("other")),
        "plan text": variant(plan=good["plan"].replace('"kind":"call"', '"kind":"cal"')),
        "inspection text": variant(inspection=good["inspection"].replace('"lineno":', '"lineno": ')),
    }
    # a plan that binds another source
    p = json.loads(good["plan"])
    p["source"]["digest"] = W.sha("x")
    ptext = W.canon(p) + "\n"
    cases["plan source digest"] = variant(plan=ptext, plan_digest=W.sha(ptext))
    p = json.loads(good["plan"])
    p["kind"] = "run"
    ptext = W.canon(p) + "\n"
    cases["plan kind"] = variant(plan=ptext, plan_digest=W.sha(ptext))
    # the plan's function differs from the inspection's entry
    p = json.loads(good["plan"])
    p["function"]["parameters"][0]["annotation"] = "str"
    ptext = W.canon(p) + "\n"
    cases["plan function"] = variant(plan=ptext, plan_digest=W.sha(ptext))
    p = json.loads(good["plan"])
    ptext = W.canon(p) + "\n"
    cases["another function"] = variant(plan=ptext, plan_digest=W.sha(ptext), function="aadd")
    for what, run in cases.items():
        try:
            expect_failure(run, "source_mismatch", "digest_mismatch")
        except W.Check as e:
            raise W.Check("%s: %s" % (what, e))


# ---------------------------------------------------------------------------------------
# framing

@test
def frame_bad_header(py):
    for data in (b"", b"\0\0\0", b"\0" * 7):
        expect_failure(W.run_worker(py, data), "worker_failed", "bad_request")


@test
def frame_oversized_length(py):
    data = ((64 << 20) + 1).to_bytes(8, "big") + b"{}"
    expect_failure(W.run_worker(py, data), "worker_failed", "bad_request")
    expect_failure(W.run_worker(py, b"\xff" * 8), "worker_failed", "bad_request")


@test
def frame_truncated_and_trailing(py):
    body = W.canon(W.inspect_request("def f(): pass\n")).encode()
    expect_failure(W.run_worker(py, (len(body) + 10).to_bytes(8, "big") + body),
                   "worker_failed", "bad_request")
    expect_failure(W.run_worker(py, W.frame(body) + b"x"), "worker_failed", "bad_request")


@test
def call_worker_has_no_inspection(py):
    # a call's worker is started without src/worker/inspection/: an inspect request to
    # it is refused plainly, and a call through it works
    core = W.worker_text(inspection=False)
    expect_failure(W.run_worker(py, W.frame(W.inspect_request("x = 1\n")), text=core),
                   "worker_failed", "bad_request")
    expect_value(do_call(py, CALLS, "add", {"a": 2, "b": 3}), 5)


@test
def frame_garbage(py):
    bad = [b"not json", b"[1, 2]", b"\xff\xfe{}", b'"str"', b'{"a": NaN}',
           b'{"version": "govex.frame/v1", "version": "govex.frame/v1"}',
           b'{"version": "govex.frame/v0", "op": "inspect"}',
           W.canon(dict(W.inspect_request("x=1\n"), op="run")).encode(),
           W.canon(dict(W.inspect_request("x=1\n"), source=5)).encode(),
           json.dumps(dict(W.inspect_request("x=1\n"), source="\ud800")).encode(),
           b"{" * 100000]
    for data in bad:
        try:
            expect_failure(W.run_worker(py, W.frame(data)), "worker_failed", "bad_request")
        except W.Check as e:
            raise W.Check("%r: %s" % (data[:60], e))


@test
def frame_call_fields(py):
    good = W.call_request(CALLS, "add", {"a": 1, "b": 2}, inspection(py, CALLS))
    for change in ({"limits": None}, {"limits": {"call_input_bytes": 1}},
                   {"limits": {"call_input_bytes": "1", "call_output_bytes": 1}},
                   {"plan": None}, {"function": 3}):
        r = dict(good)
        r.update(change)
        expect_failure(W.run_worker(py, W.frame(r)), "worker_failed", "bad_request")


@test
def frame_no_response_descriptor(py):
    # without fd 3 the worker cannot answer: it says so on stderr and exits non-zero
    import subprocess
    p = subprocess.run([py, "-I", "-S", "-c", W.worker_text()], input=b"", capture_output=True,
                       timeout=60, env={})
    check(p.returncode != 0 and b"fd 3" in p.stderr, "exit %r, stderr %r"
          % (p.returncode, p.stderr[-300:]))


# ---------------------------------------------------------------------------------------
# op "snippet" (REPL runs, src/lib/repl.c)


def _snippet_ok(run, value_text=None):
    check(run.returncode == 0, "exit %r, stderr %r" % (run.returncode, run.stderr[-1000:]))
    resp = run.resp
    check(resp.get("ok") is True and resp.get("status") == "success", "frame %r" % (resp,))
    if value_text is not None:
        want = b'{"ok":true,"status":"success","value":' + value_text + b',"version":"' \
            + FRAME_VERSION.encode() + b'"}'
        check(run.raw[8:] == want, "frame %r, expected %r" % (run.raw[8:], want))
    return resp


@test
def snippet_value_frame(py):
    # floats in python's shortest form, keys in the value's order, UTF-8 as is
    run = W.run_snippet(py, "x = 2\n{'b': [0.1, 1e-07, x], 'a': 'é', 'n': None}\n")
    _snippet_ok(run, '{"b":[0.1,1e-07,2],"a":"é","n":null}'.encode())
    run = W.run_snippet(py, "x = 1\n")
    resp = _snippet_ok(run)
    check("value" not in resp and "value_omitted" not in resp, "no value: %r" % resp)
    run = W.run_snippet(py, "print('out')\nimport sys\nsys.stderr.write('err\\n')\n3\n")
    _snippet_ok(run, b"3")
    check(run.stdout == b"out\n" and run.stderr == b"err\n", "stdout %r stderr %r"
          % (run.stdout, run.stderr))


@test
def snippet_stdin_inputs(py):
    run = W.run_snippet(py, "import sys\nsys.stdin.buffer.read()[::-1].decode()\n",
                        stdin=b"abc\x00def")
    _snippet_ok(run, b'"fed\\u0000cba"')
    run = W.run_snippet(py, "INPUTS['a'][1]\n", inputs='{"a":[1,{"b":2}]}')
    _snippet_ok(run, b'{"b":2}')
    run = W.run_snippet(py, "INPUTS['a'].append(1)\n", inputs='{"a":[]}')
    check(run.returncode == 1, "exit %r" % run.returncode)
    exc = run.resp["exception"]
    check(exc["type"] == "TypeError" and "read-only" in exc["message"]
          and "<string>" not in exc["traceback"], "exception %r" % exc)


@test
def snippet_exception_and_exit(py):
    run = W.run_snippet(py, "def f():\n    raise ValueError('bad')\nf()\n")
    check(run.returncode == 1, "exit %r" % run.returncode)
    resp = run.resp
    check(resp["ok"] is False and resp["status"] == "execution_failed"
          and resp["code"] == "exception" and resp["exception_type"] == "ValueError",
          "frame %r" % resp)
    exc = resp["exception"]
    check(exc["message"] == "bad" and exc["traceback"] == run.stderr.decode()
          and exc["traceback"].startswith("Traceback (most recent call last):\n"
                                          '  File "<snippet>", line 3, in <module>\n'),
          "exception %r, stderr %r" % (exc, run.stderr))
    # SystemExit: python's exit status, and an answer without a value (so that the
    # parent tells it from a process that ended without answering)
    run = W.run_snippet(py, "raise SystemExit(5)\n")
    check(run.returncode == 5 and run.resp == {"version": W.FRAME_VERSION, "ok": True,
                                               "status": "success"},
          "exit %r frame %r" % (run.returncode, run.raw))
    run = W.run_snippet(py, "raise SystemExit('bye')\n")
    check(run.returncode == 1 and run.stderr == b"bye\n" and "value" not in run.resp,
          "exit %r stderr %r" % (run.returncode, run.stderr))
    # the digest is checked before anything runs
    run = W.run_worker(py, W.frame(W.snippet_request("print('ran')\n", digest=W.sha("x"))),
                       text=W.worker_text(inspection=False))
    expect_failure(run, "source_mismatch", "digest_mismatch")
    check(b"ran" not in run.stdout, "the code ran")


@test
def snippet_values_refused(py):
    import time
    start = time.monotonic()
    run = W.run_snippet(py, "a = [1]\nfor _ in range(60):\n    a = [a, a]\na\n")
    took = time.monotonic() - start
    resp = _snippet_ok(run)
    check(resp.get("value_omitted") == {"reason": "too_large", "type": "list"}, "%r" % resp)
    # 2**60 nodes would never end; a million take well under a second of CPU (the suite
    # runs many workers at once on a loaded machine: the wall bound is loose here, and
    # tests/call/test_repl.py holds it to 2 s through govex)
    check(took < 30, "a shared-reference value took %.1f s" % took)
    for code, reason, tname in (("float('inf')", "not_json", "float"),
                                ("{1: 1}", "not_json", "dict"), ("2 ** 63", "not_json", "int"),
                                ("[[[]]] * 1", None, None), ("'x' * 50", "too_large", "str")):
        run = W.run_snippet(py, code + "\n", value_max=40)
        resp = _snippet_ok(run)
        if reason is None:
            check(resp.get("value") == [[[]]], "%s: %r" % (code, resp))
            continue
        om = resp.get("value_omitted")
        check(om and om["reason"] == reason and om["type"] == tname, "%s: %r" % (code, resp))
    deep = "v = []\nfor _ in range(300):\n    v = [v]\nv\n"
    check(_snippet_ok(W.run_snippet(py, deep)).get("value_omitted", {}).get("reason")
          == "not_json", "300 deep")


@test
def snippet_top_level_await(py):
    run = W.run_snippet(py, "import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, 7)\n")
    _snippet_ok(run, b"7")


def snippet_old_pythons():
    """3.6 and 3.7 (not in WANTED: call mode needs 3.8): the snippet op works, top-level
    await is the user's SyntaxError."""
    import glob
    out = []
    for v in ("3.6", "3.7"):
        found = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python%s" % (v, v)))
        if not found:
            out.append(("py" + v + ": snippet", None, "python%s not installed" % v))
            continue
        py = found[-1]

        def case(py=py):
            _snippet_ok(W.run_snippet(py, "[0.1, INPUTS['a']]\n", inputs='{"a":"é"}'),
                        '[0.1,"é"]'.encode())
            run = W.run_snippet(py, "import asyncio\nawait asyncio.sleep(0)\n")
            check(run.returncode == 1 and run.resp["exception"]["type"] == "SyntaxError",
                  "exit %r frame %r" % (run.returncode, run.raw))
            run = W.run_snippet(py, "1/0\n")
            check(run.resp["exception"]["traceback"].endswith("division by zero\n"),
                  "%r" % run.raw)
        out.append(("py" + v + ": snippet", case, None))
    return out


# ---------------------------------------------------------------------------------------

def main():
    tap = W.Tap()
    pythons = W.find_pythons()
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) \
            as pool:
        for label, path, reason in pythons:
            for fn in TESTS:
                name = "%s: %s" % (label, fn.__name__)
                if path is None:
                    jobs.append((name, None, reason))
                else:
                    jobs.append((name, pool.submit(W.run_case, fn, path), None))
        for name, fn, reason in snippet_old_pythons():
            if fn is None:
                jobs.append((name, None, reason))
            else:
                jobs.append((name, pool.submit(W.run_case, fn), None))
        for name, fut, reason in jobs:
            if fut is None:
                tap.result(name, skip=reason)
            else:
                tap.result(name, fut.result())
    tap.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
