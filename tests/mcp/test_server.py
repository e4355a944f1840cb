#!/usr/bin/env python3
"""`govex mcp` behaviour over raw JSON-RPC: snippet semantics (value, INPUTS, tracebacks),
module tools in call mode, concurrency, cancellation, shutdown, approval, audit, hostile
runs."""
import json
import re
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

TRUSTED = ["--preset", "trusted"]


def server(t, *extra, init=True):
    s = m.Server(TRUSTED + list(extra), cwd=t)
    if init:
        s.initialize()
    return s


def run(s, code, **extra):
    a = {"code": code}
    a.update(extra)
    r = s.call("run_python_snippet", a)
    return r, m.result_doc(r)


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rindex(")") + 2] not in "ZX"


def wait_dead(pid, grace):
    end = time.monotonic() + grace
    while pid_alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def wait_file(path, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                s = f.read()
            if s:
                return s
        except OSError:
            pass
        time.sleep(0.01)
    raise m.Failure("%s never appeared" % path)


def pid_snippet(pidfile, sleep=30):
    return ("import os, time\nopen(%r, 'w').write(str(os.getpid()))\nos.rename(%r, %r)\n"
            "time.sleep(%d)\n" % (pidfile + ".tmp", pidfile + ".tmp", pidfile, sleep))


# ---------------------------------------------------------------- snippet semantics

def test_value(t):
    s = server(t)
    r, d = run(s, "import math\nprint('side')\n{'pi': round(math.pi, 3), 'ok': True, 'n': None}")
    m.eq(d["status"], "success", "status")
    m.eq(d["value"], {"pi": 3.142, "ok": True, "n": None}, "value")
    m.eq(d["stdout"], "side\n", "stdout (the value line is taken out)")
    m.eq(d["stdout_bytes"], 5, "stdout_bytes")
    m.check("value: {" in m.text_of(r), "value in the text: " + m.text_of(r))
    _, d = run(s, "x = 1\nx = 2")
    m.eq(d["value"], None, "no final expression: no value")
    _, d = run(s, "{1, 2}")
    m.eq(d["value"], None, "set value")
    m.eq([(x["code"], x.get("reason")) for x in d["diagnostics"]],
         [("value_omitted", "not_json")], "diagnostic")
    _, d = run(s, "float('nan')")
    m.eq([(x["code"], x.get("reason")) for x in d["diagnostics"]],
         [("value_omitted", "not_json")], "nan is not finite JSON")
    _, d = run(s, "import sys\nsys.stdout.write('no newline')\n7")
    m.eq((d["stdout"], d["value"]), ("no newline", 7), "output without a newline")


def test_tracebacks_keep_line_numbers(t):
    s = server(t)
    _, d = run(s, "a = 1\n\n\ndef g(x):\n    return {}[x]\n\ng('key')\n")
    m.eq(d["status"], "execution_failed", "status")
    m.eq(d["exit_code"], 1, "exit code")
    err = d["stderr"]
    m.check('File "<snippet>", line 7, in <module>' in err, "line 7: " + err)
    m.check('File "<snippet>", line 5, in g' in err, "line 5: " + err)
    m.check("<string>" not in err and "_govex" not in err, "wrapper frames shown: " + err)
    _, d = run(s, "x = 1\ny = (\n")
    m.check('File "<snippet>", line 2' in d["stderr"] and "SyntaxError" in d["stderr"],
            "syntax error location: " + d["stderr"])
    m.eq(d["exit_code"], 1, "exit code of a syntax error")
    _, d = run(s, "import sys\nsys.exit(4)")
    m.eq((d["status"], d["exit_code"], d["stderr"]), ("execution_failed", 4, ""), "sys.exit")


def test_inputs(t):
    s = server(t)
    inputs = {"xs": [1, 2, 3], "name": "Zoë", "nested": {"k": [True, None]}}
    _, d = run(s, "sum(INPUTS['xs']), INPUTS['name'], INPUTS['nested']",
               inputs=inputs)
    m.eq(d["value"], None, "a tuple is not JSON")
    _, d = run(s, "[sum(INPUTS['xs']), INPUTS['name'], INPUTS['nested']]", inputs=inputs)
    m.eq(d["value"], [6, "Zoë", {"k": [True, None]}], "INPUTS")
    _, d = run(s, "INPUTS['xs'].append(4)", inputs=inputs)
    m.check("read-only" in d["stderr"], "INPUTS is read-only: " + d["stderr"])
    _, d = run(s, "INPUTS['new'] = 1", inputs=inputs)
    m.check("read-only" in d["stderr"], "INPUTS is read-only: " + d["stderr"])
    _, d = run(s, "c = dict(INPUTS); c['new'] = 1; sorted(c)", inputs=inputs)
    m.eq(d["value"], ["name", "nested", "new", "xs"], "a copy is writable")
    _, d = run(s, "'INPUTS' in globals()")
    m.eq(d["value"], False, "no INPUTS without inputs")
    # bounded by the policy's call_input_bytes, as a tool argument
    pol = m.write(t, "p.json", json.dumps({"version": "govex.policy/v1",
                                           "limits": {"call_input_bytes": 100},
                                           "network": "allow", "subprocess": "allow",
                                           "shell": "allow",
                                           "filesystem": {"read": ["/"], "write": ["/"]}}))
    s2 = m.Server(["--policy", pol], cwd=t)
    r = s2.call("run_python_snippet", {"code": "1", "inputs": {"x": "y" * 200}})
    msg = m.argument_error(r, "inputs over call_input_bytes")
    m.check(msg.startswith("args.inputs: "), "names the argument: " + msg)


def test_large_code_runs_unwrapped(t):
    """Code up to code_bytes runs REPL-style whole (the code travels in the worker's
    frame, not inside a wrapper that would eat into the bound), with or without inputs."""
    s = server(t)
    big = "x = 0\n" + "x += 1\n" * 9300 + "print(x)\nx"     # ~65 KiB
    m.check(len(big) <= 65536, "test code too big")
    _, d = run(s, big)
    m.eq((d["status"], d["stdout"], d["value"]), ("success", "9300\n", 9300), "value")
    r = s.call("run_python_snippet", {"code": big, "inputs": {"a": 1}})
    d = m.result_doc(r)
    m.eq((d["status"], d["value"]), ("success", 9300), "with inputs")
    r = s.call("run_python_snippet", {"code": "x" * 65537})
    msg = m.argument_error(r, "code over code_bytes")
    m.check(msg.startswith("args.code: "), "names the argument: " + msg)


def test_stdin_and_truncation(t):
    s = server(t)
    _, d = run(s, "import sys\ndata = sys.stdin.read()\nprint(len(data))\ndata.upper()",
               stdin="abc\n")
    m.eq((d["stdout"], d["value"]), ("4\n", "ABC\n"), "stdin")
    r, d = run(s, "print('y' * 100000)")
    m.check(d["stdout_truncated"], "truncated")
    m.eq(d["stdout_bytes"], 100001, "bytes produced")
    text = m.text_of(r)
    m.check("TRUNCATED" in text and "100001 bytes" in text, "truncation said: " + text[:300])
    m.check(len(text) < 20000, "the text is bounded (%d)" % len(text))


def test_refusals_are_tool_errors(t):
    # a policy that needs approval, and no approver: refused, isError, a valid document
    pol = m.write(t, "approve.json", json.dumps({"version": "govex.policy/v1",
                                                 "approval": ["subprocess"],
                                                 "subprocess": "allow"}))
    s = m.Server(["--policy", pol], cwd=t)
    r = s.call("run_python_snippet", {"code": "print(1)"})
    d = m.result_doc(r)
    m.eq(d["status"], "policy_refused", "status")
    m.eq(r["result"]["isError"], True, "isError")
    m.check("approval" in m.text_of(r), "reason in the text: " + m.text_of(r))
    # the default policy is strict: refused where no sandbox backend works, else run
    s2 = m.Server([], cwd=t)
    r = s2.call("run_python_snippet", {"code": "print(1)"})
    d = m.result_doc(r)
    m.check(d["status"] in ("success", "policy_refused"), "strict: %s" % d["status"])


def test_approver(t):
    pol = m.write(t, "approve.json", json.dumps({"version": "govex.policy/v1",
                                                 "approval": ["subprocess"],
                                                 "subprocess": "allow"}))
    seen = os.path.join(t, "plan-seen")
    s = m.Server(["--policy", pol, "--approver", "cat > %s; exit 0" % seen], cwd=t)
    r = s.call("run_python_snippet", {"code": "print('approved')"})
    d = m.result_doc(r)
    m.eq(d["status"], "success", "approved run: %s" % d["diagnostics"])
    plan = json.loads(open(seen).read())
    m.eq(plan.get("version"), "govex.plan/v1", "the approver got the plan")
    s2 = m.Server(["--policy", pol, "--approver", "exit 1"], cwd=t)
    d = m.result_doc(s2.call("run_python_snippet", {"code": "print('denied')"}))
    m.eq(d["status"], "policy_refused", "denied run")


def test_audit(t):
    log = os.path.join(t, "audit.jsonl")
    s = server(t, "--audit", log)
    run(s, "print('audited')")
    run(s, "raise SystemExit(2)")
    m.eq(s.close(), 0, "exit")
    lines = [json.loads(l) for l in open(log) if l.strip()]
    m.check(len(lines) >= 4, "audit lines: %d" % len(lines))
    m.check(all(l.get("version") == "govex.audit/v1" for l in lines), "versions")
    text = open(log).read()
    m.check("mcp.tool=run_python_snippet" in text or "run_python_snippet" in text,
            "the tool is named in the audit metadata")
    m.check("audited" not in text, "no code or output in the audit trail")


# ---------------------------------------------------------------- module tools

MODULE = '''"""Functions for the MCP module tests."""
from typing import Optional


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Returns a + b."""
    return a + b


async def greet(name: str, excited: Optional[bool] = None) -> str:
    return "hi " + name + ("!" if excited else "")


def stats(xs: list[float], label: str | None = None, meta: dict = {}) -> dict:
    return {"n": len(xs), "sum": sum(xs), "label": label}


def fails(msg: str):
    raise ValueError(msg)


def _hidden(x):
    return x


def gen(n: int):
    yield n


def anything(x, *, y=1):
    return [x, y]
'''


def test_module_tools(t):
    mod = m.write(t, "funcs.py", MODULE)
    s = server(t, "--module", mod)
    tools = {x["name"]: x for x in s.result("tools/list")["tools"]}
    m.eq(sorted(tools), ["add", "anything", "fails", "greet", "run_python_snippet", "stats"],
         "tools (eligible public functions, sorted)")
    add = tools["add"]
    m.check(add["description"].startswith("Add two integers."), "docstring: " + add["description"])
    sch = add["inputSchema"]
    m.eq((sch["type"], sch["additionalProperties"], sch["required"]),
         ("object", False, ["a"]), "add schema")
    m.eq(sch["properties"]["a"]["type"], "integer", "int")
    m.eq(tools["greet"]["inputSchema"]["properties"]["excited"]["anyOf"],
         [{"type": "boolean"}, {"type": "null"}], "Optional[bool]")
    st = tools["stats"]["inputSchema"]["properties"]
    m.eq(st["xs"]["type"], "array", "list[float]")
    m.eq(st["xs"]["items"]["type"], "number", "list[float] items")
    m.eq(st["label"]["anyOf"], [{"type": "string"}, {"type": "null"}], "str | None")
    m.eq(st["meta"]["type"], "object", "dict")
    m.eq(tools["stats"]["inputSchema"]["required"], ["xs"], "defaults are not required")
    m.check("type" not in tools["anything"]["inputSchema"]["properties"]["x"],
            "no annotation: any JSON")
    m.check("outputSchema" in add, "output schema")

    r = s.call("add", {"a": 40})
    d = m.result_doc(r)
    m.eq((d["status"], d["value"]), ("success", 42), "add(40)")
    m.eq(m.result_doc(s.call("greet", {"name": "ada", "excited": True}))["value"], "hi ada!",
         "async function")
    m.eq(m.result_doc(s.call("stats", {"xs": [1, 2.5]}))["value"],
         {"n": 2, "sum": 3.5, "label": None}, "stats")
    r = s.call("fails", {"msg": "bad"})
    d = m.result_doc(r)
    m.check(r["result"]["isError"] and d["status"] != "success", "a raising function: %s"
            % d["status"])
    for args, name in (({}, "args.a"), ({"a": "x"}, "args.a"), ({"a": 1, "c": 2}, "args.c"),
                       ({"a": 1.5}, "a"), ({"a": True}, "a")):
        msg = m.argument_error(s.call("add", args), "bad arguments %r" % (args,))
        m.check(name in msg, "%r names the argument %s: %s" % (args, name, msg))


def test_argument_errors_by_version(t):
    """2025-11-25 and the 2026-07-28 era: invalid arguments are a tool result (isError)
    naming the argument; the versions before keep JSON-RPC -32602."""
    mod = m.write(t, "funcs.py", MODULE)
    for version in m.LEGACY_VERSIONS:
        s = m.Server(TRUSTED + ["--module", mod], cwd=t)
        s.initialize(version)
        for name, args in (("add", {"a": "x"}), ("run_python_snippet", {"code": 1}),
                           ("run_python_snippet", {"code": "1", "timeout_ms": 10 ** 9})):
            r = s.call(name, args)
            if version >= "2025-11-25":
                m.argument_error(r, "%s %s %r" % (version, name, args))
            else:
                m.eq(r.get("error", {}).get("code"), -32602, "%s %s %r" % (version, name,
                                                                          args))
                m.check("invalid arguments" in r["error"]["message"], r["error"]["message"])
        r = s.call("no_such_tool", {})
        m.eq(r.get("error", {}).get("code"), -32602, "%s: an unknown tool" % version)
        s.close()
    s = m.Server(TRUSTED + ["--module", mod], cwd=t)
    r = s.call("add", {"a": "x"}, meta=m.meta())
    msg = m.argument_error(r, "modern add")
    m.eq(r["result"].get("resultType"), "complete", "modern result")
    m.check(msg.startswith("args.a: "), "names the argument: " + msg)


def test_descriptions_follow_the_policy(t):
    """run_python_snippet says which Python, what the policy denies and its limits; a
    module function's description says the same after its docstring."""
    mod = m.write(t, "funcs.py", MODULE)
    descs = {}
    for preset in ("strict", "trusted"):
        s = m.Server(["--preset", preset, "--module", mod], cwd=t)
        s.initialize()
        tools = {x["name"]: x for x in s.result("tools/list")["tools"]}
        descs[preset] = tools["run_python_snippet"]["description"]
        m.check(re.search(r"Python 3\.\d+\.\d+ \(", descs[preset]), "which Python: "
                + descs[preset])
        m.check("DENIED" in tools["add"]["description"] if preset == "strict"
                else "allowed" in tools["add"]["description"], "add: " +
                tools["add"]["description"])
        s.close()
    strict, trusted = descs["strict"], descs["trusted"]
    for text in ("Network access is DENIED", "starting subprocesses is DENIED",
                 "only the standard library", "5000 ms of wall time", "512 MiB of memory",
                 "INPUTS", "await", "GOVEX_OUTPUT_DIR", "stdin"):
        m.check(text in strict, "strict says %r: %s" % (text, strict))
    m.check("Network access is allowed" in trusted and "of memory" not in trusted,
            "trusted: " + trusted)
    m.check(strict != trusted, "the descriptions differ by policy")


def test_exception_is_readable(t):
    """An exception's type, message and the user's own frames are in the text."""
    s = server(t)
    r = s.call("run_python_snippet", {"code": "def f(x):\n    return 1 / x\n\nf(0)\n"})
    d = m.result_doc(r)
    text = m.text_of(r)
    m.eq(d["status"], "execution_failed", "status")
    m.check("ZeroDivisionError: division by zero" in text, "type and message: " + text)
    m.check('File "<snippet>", line 2, in f' in text, "the user's frame: " + text)
    m.check("govex" not in text.split("status:", 1)[1].split("\n", 1)[1],
            "no govex frames: " + text)
    m.eq(text.count("ZeroDivisionError: division by zero"),
         1 + (1 if any(x["code"] == "exception" for x in d["diagnostics"]) else 0),
         "the traceback is shown once (plus the diagnostic's one-line message): " + text)


def live_lines(notes, logger):
    """The lines of a stream's log notifications (each carries one or more)."""
    out = []
    for n in notes:
        if n.get("method") == "notifications/message" and n["params"].get("logger") == logger:
            out += n["params"]["data"].split("\n")
    return out


def live_notes(notes, logger):
    return [n for n in notes if n.get("method") == "notifications/message"
            and n["params"].get("logger") == logger]


def test_live_output(t):
    """While a call runs, its output lines are notifications/message (stdout at info,
    stderr at warning), only when the client set a level that admits them, all before
    the reply."""
    s = server(t)
    code = ("import sys, time\nprint('one', flush=True)\nprint('err', file=sys.stderr, "
            "flush=True)\ntime.sleep(0.3)\nprint('two')\nprint('x' * 5000)\n"
            "print('no newline', end='')")
    notes = []
    s.call("run_python_snippet", {"code": code}, notes=notes)
    m.eq(live_lines(notes, "stdout") + live_lines(notes, "stderr"), [], "no level: no lines")
    s.result("logging/setLevel", {"level": "info"})
    notes = []
    s.call("run_python_snippet", {"code": code}, notes=notes)
    if not live_lines(notes, "stdout"):
        raise m.Skip("feature:live-output this build does not stream output (contract "
                     "section 3)")
    m.eq(live_lines(notes, "stdout"), ["one", "two", "x" * 5000, "no newline"], "stdout lines")
    m.eq(live_lines(notes, "stderr"), ["err"], "stderr lines")
    levels = {n["params"]["logger"]: n["params"]["level"] for n in notes
              if n.get("method") == "notifications/message"}
    m.eq((levels["stdout"], levels["stderr"]), ("info", "warning"), "levels")
    s.result("logging/setLevel", {"level": "warning"})
    notes = []
    s.call("run_python_snippet", {"code": code}, notes=notes)
    m.eq((live_lines(notes, "stdout"), live_lines(notes, "stderr")), ([], ["err"]),
         "level warning: stderr only")
    # modern: the request's own log level
    notes = []
    s.call("run_python_snippet", {"code": "print('m')"}, notes=notes,
           meta=m.meta(**{"io.modelcontextprotocol/logLevel": "info"}))
    m.eq(live_lines(notes, "stdout"), ["m"], "modern logLevel")


def test_live_output_coalesced(t):
    """Issue 23: 200 KB of 30-byte lines went out as 6,666 notifications.  Now they are
    coalesced: at most 100 notifications, every line in order, nothing lost from the
    result; a line longer than 64 KiB comes in pieces; a lone line after a pause is not
    held until the end of the run.  (A policy that keeps 1 MiB of stdout: live output
    stops where the result's stream is cut.)"""
    doc = json.loads(subprocess.run([m.GOVEX, "policy", "show", "trusted"], check=True,
                                    stdout=subprocess.PIPE).stdout)
    doc["limits"]["stdout_bytes"] = 1 << 20
    s = m.Server(["--policy", m.write(t, "policy.json", json.dumps(doc))], cwd=t)
    s.initialize()
    s.result("logging/setLevel", {"level": "info"})
    notes = []
    code = "for i in range(6666):\n    print('%029d' % i)"
    r = s.call("run_python_snippet", {"code": code}, notes=notes)
    want = ["%029d" % i for i in range(6666)]
    n = len(live_notes(notes, "stdout"))
    m.check(1 <= n <= 100, "200 KB of lines as %d notifications" % n)
    got = live_lines(notes, "stdout")
    m.check(got == want, "%d lines of 6666, the first difference at %r" % (
        len(got), next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)))
    m.check(m.result_doc(r)["stdout"] == "".join(x + "\n" for x in want),
            "the result's stdout is not whole")
    notes = []
    r = s.call("run_python_snippet", {"code": "print('y' * 150000)"}, notes=notes)
    pieces = [x["params"]["data"] for x in live_notes(notes, "stdout")]
    m.check("".join(pieces) == "y" * 150000, "a long line in pieces: %r"
            % [len(p) for p in pieces])
    m.check(all(len(p) <= 65536 for p in pieces) and len(pieces) >= 3, [len(p) for p in pieces])
    # a line, then a pause: it arrives while the run still sleeps
    s.start("tools/call", {"name": "run_python_snippet", "arguments": {
        "code": "import time\nprint('a')\nprint('b', flush=True)\ntime.sleep(2)\n1"}})
    t0 = time.monotonic()
    seen = []
    while time.monotonic() - t0 < 1.8 and live_lines(seen, "stdout") != ["a", "b"]:
        msg = s.recv(2)
        if msg.get("method"):
            seen.append(msg)
    m.eq(live_lines(seen, "stdout"), ["a", "b"], "lines during the pause (after %.1f s)"
         % (time.monotonic() - t0))


PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJ"
           "RU5ErkJggg==")


def test_files_in_and_out(t):
    """files in (text, base64) are read-only in the working directory; what the run
    leaves in GOVEX_OUTPUT_DIR comes back: images as image content, other files as
    embedded resources."""
    s = server(t)
    code = ("import os, base64\nout = os.environ['GOVEX_OUTPUT_DIR']\n"
            "open(os.path.join(out, 'plot.png'), 'wb').write(open('in.png', 'rb').read())\n"
            "open(os.path.join(out, 'table.csv'), 'w').write(open('data.csv').read().upper())\n"
            "open('data.csv').read()")
    r = s.call("run_python_snippet", {"code": code, "files": [
        {"name": "data.csv", "text": "a,b\n1,2\n"}, {"name": "in.png", "base64": PNG_B64}]})
    d = m.result_doc(r)
    if "files" not in d:
        raise m.Skip("feature:files this build has no files in and out (contract section 4)")
    m.eq(d["value"], "a,b\n1,2\n", "the text file in")
    m.eq(sorted(f["name"] for f in d["files"]), ["plot.png", "table.csv"], "files listed")
    content = r["result"]["content"]
    img = [c for c in content if c["type"] == "image"]
    res = [c for c in content if c["type"] == "resource"]
    m.eq((len(img), img[0]["mimeType"], img[0]["data"]), (1, "image/png", PNG_B64), "image")
    m.eq((res[0]["resource"]["uri"], res[0]["resource"]["mimeType"],
          res[0]["resource"]["text"]), ("govex://output/table.csv", "text/csv",
                                        "A,B\n1,2\n"), "resource")
    # read-only in the sandbox (controlled, for trusted code, hands a 0444 copy that
    # root may still write: see govex(1))
    s2 = m.Server(["--preset", "strict"], cwd=t)
    r = s2.call("run_python_snippet", {"code": "open('data.csv', 'w').write('x')",
                                       "files": [{"name": "data.csv", "text": "a"}]})
    m.eq(r["result"]["isError"], True, "a file in is read-only")
    s2.close()


def test_numbers_are_the_librarys_bytes(t):
    """structuredContent carries the result document's own bytes: the adapter does not
    write its numbers again (jansson would print 0.1 as 0.10000000000000001)."""
    mod = m.write(t, "fl.py", "def f():\n    return [0.1, 2.5, 1e-07]\n")
    cli = subprocess.run([m.GOVEX, "call", "--preset", "trusted", "--json", mod + ":f"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=t, timeout=60)
    want = re.search(rb'"value":(\[[^]]*\])', cli.stdout)
    m.check(want, "govex call --json: %r" % cli.stdout[:300])
    s = server(t, "--module", mod)
    r = s.call("f", {})
    m.eq(m.result_doc(r)["value"], [0.1, 2.5, 1e-07], "value")
    line = [x for x in s.raw if b'"structuredContent"' in x][-1]
    got = re.search(rb'"value":(\[[^]]*\])', line)
    m.eq(got and got.group(1), want.group(1), "the value's bytes as the library wrote them")
    if want.group(1) != b"[0.1,2.5,1e-07]":
        raise m.Skip("feature:short-floats the library writes %s (contract section 7)"
                     % want.group(1).decode())


def test_top_level_await(t):
    """Top-level await works in a snippet; the value may be awaited; an exception in a
    coroutine shows only the user's frames."""
    s = server(t)
    _, d = run(s, "import asyncio\nawait asyncio.sleep(0.01)\nx = 20\n"
                  "await asyncio.sleep(0, x + 22)")
    m.eq((d["status"], d["value"]), ("success", 42), "awaited value")
    r, d = run(s, "import asyncio\nasync def f():\n    raise ValueError('boom')\nawait f()")
    text = m.text_of(r)
    m.check("ValueError: boom" in text and 'File "<snippet>", line 3, in f' in text, text)
    m.check("asyncio" not in d["stderr"].split("Traceback", 1)[1].split("ValueError")[0]
            .replace("import asyncio", ""), "no asyncio frames: " + d["stderr"])


def test_module_changed_on_disk(t):
    mod = m.write(t, "funcs.py", MODULE)
    s = server(t, "--module", mod)
    m.eq(m.result_doc(s.call("add", {"a": 1}))["value"], 3, "before")
    with open(mod, "a") as f:
        f.write("\n# edited after the server started\n")
    r = s.call("add", {"a": 1})
    d = m.result_doc(r)
    m.eq(d["status"], "source_mismatch", "changed module")
    m.eq(r["result"]["isError"], True, "isError")
    os.unlink(mod)
    d = m.result_doc(s.call("add", {"a": 1}))
    m.eq(d["status"], "source_mismatch", "removed module")


def test_module_errors_at_start(t):
    bad = m.write(t, "bad.py", "def f(:\n")
    s = m.Server(TRUSTED + ["--module", bad], cwd=t)
    code = s.p.wait(30)
    m.check(code != 0, "a module that does not parse stops the server (exit %d)" % code)
    m.check("bad.py" in s.stderr(), "the message names the module: " + s.stderr())
    s = m.Server(TRUSTED + ["--module", os.path.join(t, "missing.py")], cwd=t)
    m.check(s.p.wait(30) != 0, "a missing module stops the server")
    mod = m.write(t, "funcs.py", MODULE)
    clash = m.write(t, "clash.py", "def add(a: int) -> int:\n    return a\n")
    s = m.Server(TRUSTED + ["--module", mod, "--module", clash], cwd=t)
    m.check(s.p.wait(30) != 0 and "add" in s.stderr(), "two tools with one name")


# ---------------------------------------------------------------- concurrency, cancellation

def test_numbers_past_64_bits(t):
    """Valid JSON with a number jansson cannot hold (issue 23, item 7): an argument past 64
    bits is -32602 naming it, answered with the request's id; an id past 64 bits is -32600
    answered with that id; the server goes on serving; invalid JSON is still -32700."""
    mod = m.write(t, "funcs.py", MODULE)
    s = server(t, "--module", mod)
    for n, a in ((2 ** 64, {"a": 2 ** 64}), (-(2 ** 63) - 1, {"a": 1, "b": -(2 ** 63) - 1})):
        r = s.call("add", a)
        m.check("error" in r, "add with %d: an error expected, got %s" % (n, m._short(r)))
        m.eq(r["error"]["code"], -32602, "add with %d: code" % n)
        msg = r["error"]["message"]
        name = "'a'" if "b" not in a else "'b'"
        m.check(name in msg and str(n) in msg and "64-bit" in msg,
                "the message names the argument and the number: %r" % msg)
    # nested, and a real past a double (Python's json writes neither: raw lines)
    s.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stats",'
               b'"arguments":{"xs":[1,2e400]}}}\n')
    r = s.wait_for(7)
    m.eq(r.get("error", {}).get("code"), -32602, "a real past a double: %s" % m._short(r))
    m.check("'xs[1]'" in r["error"]["message"], "the element is named: %r" % r["error"])
    for big in (2 ** 64, -(2 ** 63) - 1, 10 ** 30):
        r = s.request("ping", id=big)
        m.eq(r.get("id"), big, "the reply carries the id as sent")
        m.eq(r.get("error", {}).get("code"), -32600, "an id past 64 bits: %s" % m._short(r))
        m.check(str(big) in r["error"]["message"], "the message names the id: %r" % r["error"])
    s.send_raw(b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":1e999}}\n')
    r = s.wait_for(8)
    m.eq(r.get("error", {}).get("code"), -32602, "params.x past a double")
    m.check("params.x" in r["error"]["message"], "the path is named: %r" % r["error"])
    r = s.call("add", {"a": 2 ** 63 - 1, "b": -(2 ** 63)})
    m.eq(m.result_doc(r)["value"], -1, "the 64-bit bounds themselves are taken")
    s.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"ping","x":18446744073709551616\n')
    r = s.recv()
    m.eq((r.get("id"), r.get("error", {}).get("code")), (None, -32700),
         "invalid JSON around a big number is still a parse error")
    m.eq(s.result("ping"), {}, "the server goes on")


def test_out_of_descriptors_is_named(t):
    """Issue 23: a server out of file descriptors (EMFILE) said -32603 "out of memory".
    With its soft RLIMIT_NOFILE lowered to the descriptors it holds, a call is -32603 naming
    EMFILE; with the limit back, calls run again."""
    import resource
    s = server(t)
    run(s, "1")
    pid = s.p.pid
    n = len(os.listdir("/proc/%d/fd" % pid))
    old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (n, old[1]))   # the soft limit only
    try:
        r = s.call("run_python_snippet", {"code": "1"})
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
    err = r.get("error") or {}
    m.eq(err.get("code"), -32603, "out of descriptors: %s" % m._short(r))
    msg = err.get("message", "")
    m.check("memory" not in msg and "file descriptors" in msg and "Too many open files" in msg,
            "the message says what it is: %r" % msg)
    _, doc = run(s, "6*7")
    m.eq(doc["value"], 42, "served again")


def test_long_messages_read_exactly(t):
    """A message past 64 KiB is parsed without its long strings (issue 23: data at pipe
    speed); what it means and what is wrong with it must not change: invalid UTF-8, a raw
    control character, a bad escape, an unpaired surrogate or \u0000 inside a long string
    is still -32700; a long key is still a key (duplicates found); the arguments reach
    the run exactly (escapes, non-ASCII, an escaped "arguments" key)."""
    s = server(t)
    pad = "a" * 70000

    def raw(i, inner):
        return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
                b'"run_python_snippet","arguments":{"code":"len(INPUTS[\'s\'])",'
                b'"inputs":{"s":"%s"}}}}\n' % (i, inner))
    for i, bad in enumerate((b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x01", b"\\x",
                             b"\\ud800", b"\\udc00x", b"\\u0000", b"\\u12zz"), 1):
        s.send_raw(raw(i, pad.encode() + bad + pad.encode()))
        r = s.recv(30)
        m.eq((r.get("id"), r.get("error", {}).get("code")), (None, -32700),
             "a long string with %r: %s" % (bad, m._short(r, 300)))
    s.send_raw(raw(10, pad.encode() + "\u00e9\u4e2d\U0001f600".encode() + pad.encode()))
    r = s.wait_for(10)
    m.eq(m.result_doc(r)["value"], 2 * len(pad) + 3, "raw UTF-8 in a long string")
    s.send_raw(b'{"jsonrpc":"2.0","id":20,"method":"ping","params":{"%s":1,"%s":2}}\n'
               % (pad.encode(), pad.encode()))
    r = s.recv(30)
    m.eq(r.get("error", {}).get("code"), -32700, "a duplicate long key")
    text = pad + "\u00e9\u4e2d\U0001f600\\\"/\n\t" + pad
    r = s.call("run_python_snippet", {"code": "INPUTS['s']", "inputs": {"s": text}})
    m.eq(m.result_doc(r)["value"], text, "a long string with escapes and non-ASCII, exact")
    body = json.dumps({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {
        "name": "run_python_snippet", "arguments": {"code": "len(INPUTS['s'])",
                                                    "inputs": {"s": pad}}}})
    s.send_raw(body.replace('"arguments"', '"\\u0061rguments"').encode() + b"\n")
    r = s.wait_for(21)
    m.eq(m.result_doc(r)["value"], len(pad), "an escaped key: the arguments still found")


def test_stdio_queue_as_before(t):
    """Over stdio (one client) 256 calls may still wait by default, with no queue-time
    limit: 150 calls at once on --max-concurrent 1 all run."""
    s = server(t, "--max-concurrent", "1")
    ids = [s.start("tools/call", {"name": "run_python_snippet",
                                  "arguments": {"code": "%d" % i}}) for i in range(150)]
    for i, id in enumerate(ids):
        r = s.wait_for(id, timeout=120)
        m.check("result" in r, "call %d of 150: %s" % (i, m._short(r, 300)))
        m.eq(m.result_doc(r)["value"], i, "call %d's value" % i)


def test_concurrent_overlap(t):
    s = server(t, "--max-concurrent", "4")
    t0 = time.monotonic()
    ids = [s.start("tools/call", {"name": "run_python_snippet",
                                  "arguments": {"code": "import time\ntime.sleep(1)\n%d" % i}})
           for i in range(4)]
    values = [m.result_doc(s.wait_for(i))["value"] for i in ids]
    el = time.monotonic() - t0
    m.eq(values, [0, 1, 2, 3], "values")
    m.check(el < 3.0, "four 1 s calls took %.2f s" % el)
    # max-concurrent 1 serializes them
    s1 = server(t, "--max-concurrent", "1")
    t0 = time.monotonic()
    ids = [s1.start("tools/call", {"name": "run_python_snippet",
                                   "arguments": {"code": "import time\ntime.sleep(0.5)"}})
           for _ in range(3)]
    for i in ids:
        m.result_doc(s1.wait_for(i))
    m.check(time.monotonic() - t0 >= 1.4, "max-concurrent 1 ran calls at once")


def test_cancel(t):
    s = server(t)
    pidfile = os.path.join(t, "pid")
    i = s.start("tools/call", {"name": "run_python_snippet",
                               "arguments": {"code": pid_snippet(pidfile)}})
    pid = int(wait_file(pidfile))
    t0 = time.monotonic()
    s.notify("notifications/cancelled", {"requestId": i, "reason": "test"})
    m.check(wait_dead(pid, 2.0), "the run survived its cancellation")
    m.check(time.monotonic() - t0 < 2.0, "slow cancellation")
    r = s.request("ping", {})
    m.eq(r.get("result"), {}, "ping after cancel")
    time.sleep(0.3)
    if s.stash or not s.q.empty():
        raise m.Failure("a cancelled request got a reply: %r" % (s.stash or s.q.get()))
    # a queued call is dropped; a cancel for an unknown id is ignored
    s1 = server(t, "--max-concurrent", "1")
    a = s1.start("tools/call", {"name": "run_python_snippet",
                                "arguments": {"code": "import time\ntime.sleep(0.5)\n'a'"}})
    b = s1.start("tools/call", {"name": "run_python_snippet", "arguments": {"code": "'b'"}})
    s1.notify("notifications/cancelled", {"requestId": b})
    s1.notify("notifications/cancelled", {"requestId": 123456})
    m.eq(m.result_doc(s1.wait_for(a))["value"], "a", "the running call")
    m.eq(s1.request("ping").get("result"), {}, "ping")
    m.check(not s1.stash, "the queued, cancelled call got a reply")


def test_duplicate_inflight_id(t):
    s = server(t)
    pidfile = os.path.join(t, "pid")
    s.start("tools/call", {"name": "run_python_snippet",
                           "arguments": {"code": pid_snippet(pidfile, 2)}}, id="same")
    wait_file(pidfile)
    r = s.request("tools/call", {"name": "run_python_snippet", "arguments": {"code": "1"}},
                  id="same")
    # the first reply to "same" may be either: the error must come, then the result
    got = [r] + [s.wait_for("same", 10)]
    kinds = sorted("error" if "error" in x else "result" for x in got)
    m.eq(kinds, ["error", "result"], "one error for the duplicate, one result")


def test_eof_kills_runs(t):
    s = server(t)
    pidfile = os.path.join(t, "pid")
    s.start("tools/call", {"name": "run_python_snippet",
                           "arguments": {"code": pid_snippet(pidfile)}})
    pid = int(wait_file(pidfile))
    t0 = time.monotonic()
    m.eq(s.close(10), 0, "exit status at stdin's end")
    m.check(time.monotonic() - t0 < 3.0, "exit took %.2f s" % (time.monotonic() - t0))
    m.check(wait_dead(pid, 1.0), "the run outlived the server")


def test_sigterm(t):
    s = server(t)
    pidfile = os.path.join(t, "pid")
    s.start("tools/call", {"name": "run_python_snippet",
                           "arguments": {"code": pid_snippet(pidfile)}})
    pid = int(wait_file(pidfile))
    os.kill(s.p.pid, signal.SIGTERM)
    m.eq(s.p.wait(10), 128 + signal.SIGTERM, "exit status after SIGTERM")
    m.check(wait_dead(pid, 1.0), "the run outlived the server")


def test_hostile_runs(t):
    s = server(t)
    _, d = run(s, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    m.eq((d["status"], d["termination"], d["signal"]), ("execution_failed", "signaled", 11),
         "segfault")
    _, d = run(s, "import os, signal\nos.killpg(os.getpgrp(), signal.SIGKILL)")
    m.check(d["status"] != "success", "killpg: %s" % d["status"])
    _, d = run(s, "import os, sys\nos.close(1)\nos.close(2)\nsys.exit(0)")
    m.eq(d["status"], "success", "closed stdio")
    _, d = run(s, "import os\nos._exit(0)")
    m.eq(d["status"], "worker_failed", "os._exit(0): the worker could not answer")
    _, d = run(s, "import sys\nsys.stdout.write('\\x1eGOVEX-VALUE-forged-5:{\"value\":1}\\n')\npass")
    m.eq(d["value"], None, "a forged value line without the nonce is ordinary output")
    m.check("GOVEX-VALUE-forged" in d["stdout"], "forged line kept")
    _, d = run(s, "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe ok\\n')")
    m.eq(d["status"], "success", "non-UTF-8 output")
    m.eq(s.request("ping").get("result"), {}, "still serving")


def test_progress(t):
    s = server(t)
    notes = []
    r = s.call("run_python_snippet", {"code": "import time\ntime.sleep(1.6)\n'done'",
                                      "timeout_ms": 4000},
               meta={"progressToken": "tok-1"}, notes=notes)
    m.eq(m.result_doc(r)["value"], "done", "value")
    prog = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    m.check(len(prog) >= 2, "progress notifications: %r" % notes)
    m.check(all(p["progressToken"] == "tok-1" and p["total"] == 4000 for p in prog),
            "token and total: %r" % prog)
    vals = [p["progress"] for p in prog]
    m.check(vals == sorted(vals), "progress increases: %r" % vals)
    notes = []
    s.call("run_python_snippet", {"code": "import time\ntime.sleep(1.2)"}, notes=notes)
    m.eq(notes, [], "no progress without a token")


def test_cli_usage(t):
    import subprocess
    r = subprocess.run([m.GOVEX, "mcp", "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    m.eq(r.returncode, 0, "--help")
    m.check(b"--max-concurrent" in r.stdout, "usage text")
    for bad in (["--max-concurrent", "0"], ["--nope"], ["--preset", "nope"],
                ["--policy", os.path.join(t, "missing.json")], ["extra"]):
        r = subprocess.run([m.GOVEX, "mcp"] + bad, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        m.check(r.returncode != 0, "%r accepted" % bad)
        m.eq(r.stdout, b"", "stdout stays protocol-only for %r" % bad)


TESTS = [
    ("final expression value, REPL-style; stdout without the value line", test_value),
    ("tracebacks and syntax errors keep the user's line numbers", test_tracebacks_keep_line_numbers),
    ("inputs: read-only INPUTS, bounded by call_input_bytes", test_inputs),
    ("code up to code_bytes runs whole, with inputs too; over it is an argument error", test_large_code_runs_unwrapped),
    ("stdin; truncated output is said in the text", test_stdin_and_truncation),
    ("refusals are isError results with a valid document", test_refusals_are_tool_errors),
    ("--approver: exit 0 approves with the plan on stdin, else refused", test_approver),
    ("--audit appends govex.audit/v1 lines for every call", test_audit),
    ("module functions become tools with schemas from annotations", test_module_tools),
    ("invalid arguments: isError from 2025-11-25 on, -32602 before",
     test_argument_errors_by_version),
    ("descriptions say which Python, what the policy denies, the limits",
     test_descriptions_follow_the_policy),
    ("an exception's type, message and the user's frames are in the text",
     test_exception_is_readable),
    ("live output: lines as notifications/message by level", test_live_output),
    ("live output coalesced: 200 KB of lines in at most 100 notifications, none lost",
     test_live_output_coalesced),
    ("files in and out: images and embedded resources", test_files_in_and_out),
    ("structuredContent keeps the library's bytes (numbers not re-encoded)",
     test_numbers_are_the_librarys_bytes),
    ("top-level await in a snippet", test_top_level_await),
    ("a module changed on disk gives source_mismatch", test_module_changed_on_disk),
    ("bad modules and clashing names stop the server at start", test_module_errors_at_start),
    ("numbers past 64 bits: -32602 naming the argument, an id answered as sent",
     test_numbers_past_64_bits),
    ("out of file descriptors: -32603 says so, not out of memory",
     test_out_of_descriptors_is_named),
    ("messages past 64 KiB: read exactly, errors as before", test_long_messages_read_exactly),
    ("stdio: 256 calls may wait, none timed out, as before", test_stdio_queue_as_before),
    ("calls overlap up to --max-concurrent", test_concurrent_overlap),
    ("notifications/cancelled kills the run and sends no reply", test_cancel),
    ("a duplicate in-flight id is refused", test_duplicate_inflight_id),
    ("stdin EOF ends the server and the runs in flight", test_eof_kills_runs),
    ("SIGTERM ends the server and the runs in flight", test_sigterm),
    ("hostile runs do not take the server down", test_hostile_runs),
    ("notifications/progress with a progress token", test_progress),
    ("govex mcp --help and bad command lines", test_cli_usage),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
