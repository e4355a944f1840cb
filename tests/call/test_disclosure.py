#!/usr/bin/env python3
"""The policy's results.disclosure (govex-policy(5)): `full` (the default) gives a call's
stdout, stderr and its exception's type, message and traceback; `sanitized` gives none
of them -- what the call printed never reaches the result (not even how much), its
exception is its type name only, the message is govex's words -- and says so in an
`output_withheld` diagnostic on every call.  The value and the status are the same.
Its policies' digests: `full` is the default and leaves the canonical bytes as they
were.  On both backends; the MCP tools (warm) in tests/mcp/test_tools.py style below.
Prints TAP."""
import json
import os
import subprocess

import calltest as C
from calltest import check, eq

S = C.Suite()

SECRETS = ("OUT-s3cr3t", "ERR-s3cr3t", "MSG-s3cr3t", "TB-s3cr3t_frame", "LOAD-s3cr3t")

MOD = '''
import sys

def TB_s3cr3t_frame(x):
    raise ValueError("MSG-s3cr3t %s" % x)

def f(x: int) -> int:
    print("OUT-s3cr3t")
    sys.stderr.write("ERR-s3cr3t\\n")
    if x < 0:
        TB_s3cr3t_frame(x)
    return x * 2
'''

BROKEN = '''
import sys
print("OUT-s3cr3t")
raise KeyError("LOAD-s3cr3t")

def f() -> int:
    return 1
'''


def sanitized(t, preset):
    return ["--policy", C.policy(t, base=preset, results={"disclosure": "sanitized"})]


def no_secret(t, r, what):
    text = r.out + r.err
    for s in SECRETS:
        check(s not in text and s.replace("-", "_") not in text,
              "%s: %r reached the result or govex's output: %s" % (what, s, text[:600]))


def withheld_last(doc):
    codes = [d["code"] for d in doc["diagnostics"]]
    eq(codes[-1:], ["output_withheld"], "the last diagnostic")
    eq(codes.count("output_withheld"), 1, "output_withheld diagnostics")


@S.both("sanitized: a call that prints gives its value, no output, no count")
def test_sanitized_success(t, preset):
    m = C.module(t, "m.py", MOD)
    r = C.call(t, m + ":f", {"x": 21}, opts=sanitized(t, preset))
    doc = C.check_result(t, r, "success")
    eq(doc["value"], 42, "value")
    eq((doc["stdout"], doc["stderr"], doc["stdout_bytes"], doc["stderr_bytes"]),
       ("", "", 0, 0), "stdout, stderr and their byte counts")
    withheld_last(doc)
    no_secret(t, r, "a success")


@S.both("sanitized: an exception by its type name only")
def test_sanitized_exception(t, preset):
    m = C.module(t, "m.py", MOD)
    r = C.call(t, m + ":f", {"x": -1}, opts=sanitized(t, preset))
    doc = C.check_result(t, r, "execution_failed")
    exc = [d for d in doc["diagnostics"] if d["code"] == "exception"]
    eq(len(exc), 1, "exception diagnostics")
    eq(exc[0], {"code": "exception", "exception_type": "ValueError",
                "message": "the function raised ValueError"}, "the exception diagnostic")
    withheld_last(doc)
    no_secret(t, r, "an exception")
    # the text form too (what a human sees)
    r2 = C.call(t, m + ":f", {"x": -1}, opts=sanitized(t, preset), json_out=False)
    check("the function raised ValueError" in r2.err, "text form: %r" % r2.err)
    no_secret(t, r2, "the text form")


@S.both("sanitized: a module that raises while loading")
def test_sanitized_module_error(t, preset):
    m = C.module(t, "b.py", BROKEN)
    r = C.call(t, m + ":f", {}, opts=sanitized(t, preset))
    doc = r.json()
    check(doc["status"] != "success", "a broken module succeeded: %r" % doc)
    no_secret(t, r, "a module error")
    eq((doc["stdout"], doc["stdout_bytes"]), ("", 0), "stdout of a module error")


@S.both("full (the default): output, message and traceback reach the result")
def test_full_default(t, preset):
    m = C.module(t, "m.py", MOD)
    for opts in (["--preset", preset],
                 ["--policy", C.policy(t, base=preset, results={"disclosure": "full"})]):
        r = C.call(t, m + ":f", {"x": -1}, opts=opts)
        doc = C.check_result(t, r, "execution_failed")
        eq(doc["stdout"], "OUT-s3cr3t\n", "stdout under full")
        check("ERR-s3cr3t" in doc["stderr"], "stderr under full: %r" % doc["stderr"])
        exc = [d for d in doc["diagnostics"] if d["code"] == "exception"][0]
        check("MSG-s3cr3t" in exc["exception"]["message"], "message: %r" % exc)
        check("TB_s3cr3t_frame" in exc["exception"]["traceback"], "traceback: %r" % exc)
        check("output_withheld" not in [d["code"] for d in doc["diagnostics"]],
              "output_withheld under full")


@S.test("digests: full is the default (same digest), sanitized is bound")
def test_digests(t):
    def digest(doc):
        p = t.write_json("p%d.json" % len(os.listdir(t.tmp)), doc)
        r = t.run(["policy", "digest", p])
        eq(r.returncode, 0, "govex policy digest: %s" % r.err)
        return r.out.strip()
    base = {"version": "govex.policy/v1"}
    d0 = digest(base)
    eq(digest(dict(base, results={})), d0, "results: {} changes the digest")
    eq(digest(dict(base, results={"disclosure": "full"})), d0,
       "disclosure full changes the digest")
    ds = digest(dict(base, results={"disclosure": "sanitized"}))
    check(ds != d0, "sanitized has the default's digest")
    r = t.run(["policy", "canon", t.write_json("s.json", dict(
        base, results={"disclosure": "sanitized"}))])
    eq(json.loads(r.out).get("results"), {"disclosure": "sanitized"}, "canonical form")
    r = t.run(["policy", "canon", t.write_json("f.json", base)])
    check("results" not in json.loads(r.out), "the default's canonical form names results")


@S.test("a bad disclosure is refused by name")
def test_bad_values(t):
    for bad, want in (({"disclosure": "partial"}, "results.disclosure"),
                      ({"disclosure": 1}, "results.disclosure"),
                      ({"disclose": "full"}, "results"),
                      ("sanitized", "results")):
        p = t.write_json("bad%d.json" % len(os.listdir(t.tmp)),
                         {"version": "govex.policy/v1", "results": bad})
        r = t.run(["policy", "canon", p])
        check(r.returncode != 0, "accepted results %r" % (bad,))
        check(want in r.err, "the error for %r does not name %s: %r"
              % (bad, want, r.err))


def mcp(t, pol, module, calls):
    """`govex mcp --policy POL --module MODULE` over stdio: the tool list, then CALLS
    (tools/call params), their replies."""
    p = subprocess.Popen([C.gt.GOVEX, "mcp", "--policy", pol, "--module", module],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=t.tmp)
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]
    msgs += [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": c}
             for i, c in enumerate(calls)]
    p.stdin.write("".join(json.dumps(m) + "\n" for m in msgs).encode())
    p.stdin.flush()
    got, lines = {}, []
    want = {0, 1} | {2 + i for i in range(len(calls))}
    while not want <= set(got):     # stdin stays open until every reply is in
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line.decode())
        m = json.loads(line)
        if "id" in m:
            got[m["id"]] = m
    p.stdin.close()
    err = p.stderr.read()
    p.wait(30)
    out = "".join(lines).encode()
    return got, out.decode() + err.decode()


@S.test("sanitized through govex mcp: the description says so, nothing leaks")
def test_mcp_sanitized(t):
    m = C.module(t, "m.py", MOD)
    pol = C.policy(t, base="strict", results={"disclosure": "sanitized"})
    got, text = mcp(t, pol, m, [{"name": "f", "arguments": {"x": 21}},
                                {"name": "f", "arguments": {"x": -1}}])
    tool = [x for x in got[1]["result"]["tools"] if x["name"] == "f"][0]
    check("sanitized" in tool["description"] and "discarded" in tool["description"],
          "the tool's description: %r" % tool["description"])
    ok, bad = got[2]["result"], got[3]["result"]
    eq(ok["structuredContent"]["value"], 42, "value through MCP")
    check(bad.get("isError") is True, "the exception is not isError: %r" % bad)
    check("ValueError" in bad["content"][0]["text"], "text: %r" % bad["content"][0]["text"])
    for s in SECRETS:
        check(s not in text, "%r reached an MCP message: %s" % (s, text[:800]))


if __name__ == "__main__":
    raise SystemExit(S.main())
