#!/usr/bin/env python3
"""The README's commands a new user types first, under the default policy, on whatever
host this is: run, call, inspect, mcp over stdio (the snippet tool and a module's tool),
and govex backends.  tests/vm/test_vm.py runs it on a fresh Debian 12 machine as root and
as a user; every suite host runs it too."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import govextest as g  # noqa: E402

MOD = os.path.join(g.REPO, "examples", "mod.py")


def test_run(t):
    r = t.run(["run", "-c", "print(6*7)"])
    r.expect_rc(0)
    g.eq(r.stdout, b"42\n", "govex run -c 'print(6*7)'")


def test_call(t):
    r = t.run(["call", MOD + ":add", "--args", '{"a": 40, "b": 2}'])
    r.expect_rc(0)
    g.eq(r.stdout.strip(), b"42", "govex call examples/mod.py:add")


def test_inspect(t):
    r = t.run(["inspect", "--json", MOD])
    r.expect_rc(0)
    names = [f["name"] for f in r.json()["functions"]]
    g.check("add" in names, "inspect lists add: %r" % names)


def _mcp(args, messages, want, timeout=120):
    """Sends MESSAGES to `govex mcp ARGS` over stdio and reads until every id in WANT is
    answered (stdin stays open meanwhile: its end is the client's goodbye)."""
    p = subprocess.Popen([g.GOVEX, "mcp"] + args, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    by_id = {}
    try:
        p.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        p.stdin.flush()
        import select
        import time
        deadline = time.monotonic() + timeout
        buf = b""
        while not set(want) <= set(by_id) and time.monotonic() < deadline:
            r, _, _ = select.select([p.stdout], [], [], 1.0)
            if not r:
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    msg = json.loads(line)
                    if "id" in msg:
                        by_id[msg["id"]] = msg
        p.stdin.close()
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, by_id, p.stderr.read()


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "smoke", "version": "1"}}}
INITED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_mcp_stdio(t):
    rc, by_id, err = _mcp(["--module", MOD], [
        INIT, INITED,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "run_python_snippet", "arguments": {"code": "print(6*7)"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 40, "b": 2}}}], want=(1, 2))
    g.eq(rc, 0, "govex mcp exit status (stderr %r)" % err[-1000:])
    snip = by_id.get(1, {}).get("result", {})
    g.check(not snip.get("isError"), "snippet: %r" % by_id.get(1))
    g.eq(snip["structuredContent"]["stdout"], "42\n", "snippet stdout")
    add = by_id.get(2, {}).get("result", {})
    g.check(not add.get("isError"), "add: %r" % by_id.get(2))
    g.eq(add["structuredContent"]["value"], 42, "add's value")


def test_backends(t):
    r = t.run(["backends"])
    r.expect_rc(0)
    g.check(b"restricted" in r.stdout, "backends: %r" % r.stdout)


TESTS = [
    ("govex run -c 'print(6*7)' under strict prints 42", test_run),
    ("govex call examples/mod.py:add prints 42", test_call),
    ("govex inspect examples/mod.py", test_inspect),
    ("govex mcp --module over stdio: the snippet and a module's tool", test_mcp_stdio),
    ("govex backends", test_backends),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
