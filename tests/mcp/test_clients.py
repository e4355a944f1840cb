#!/usr/bin/env python3
"""Real MCP clients from npm against `govex mcp`: the TypeScript SDK v1 (Client +
StdioClientTransport, the 2025 handshake) and the v2 client pinned to the stateless
revision 2026-07-28; then both again over streamable HTTP (`govex mcp --http`: v1 with
its session, v2 stateless).  The clients are installed from tests/mcp/node/package.json; without
a reachable npm registry the tests skip (feature:npm)."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

MODULE = '''"""Arithmetic for the client tests."""


def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b
'''


def http_url(t, mod, defaults=False):
    """A `govex mcp --http` with the arguments the clients give their stdio server (or,
    defaults: every setting but the preset left alone)."""
    args = ["--preset", "trusted"] + ([] if defaults else ["--max-concurrent", "4"])
    args += ["--module", mod] if mod else []
    return m.HttpServer(args, cwd=t).url


def v1(scenario, with_module=False, http=False, defaults=False):
    def test(t):
        mod = m.write(t, "arith.py", MODULE) if with_module else None
        url = http_url(t, mod, defaults) if http else None
        info = m.node_client("client_v1.mjs", scenario, t, mod, url=url)
        if scenario == "concurrent":
            m.check(info["elapsed_ms"] < 3000, "elapsed %r" % info)
    return test


def v2(scenario, http=False):
    def test(t):
        mod = m.write(t, "arith.py", MODULE)
        url = http_url(t, mod) if http else None
        info = m.node_client("client_v2.mjs", scenario, t, mod, url=url)
        m.eq(info.get("version"), "2026-07-28", "negotiated version")
    return test


TESTS = [
    ("sdk v1: tools/list shows run_python_snippet with policy-derived bounds", v1("list")),
    ("sdk v1: run_python_snippet prints 42 and returns a value", v1("snippet")),
    ("sdk v1: a module function is a tool and runs in call mode", v1("module", True)),
    ("sdk v1: failing runs are isError with valid structured content", v1("failing")),
    ("sdk v1: arguments outside the schema are isError results naming them", v1("badargs")),
    ("sdk v1: an unknown tool is -32602", v1("unknown")),
    ("sdk v1: AbortSignal cancels the run quickly; the server keeps serving", v1("cancel")),
    ("sdk v1: four 1 s calls overlap (well under 4 s)", v1("concurrent")),
    ("sdk v1: ping", v1("ping")),
    ("client v2: version pinned to 2026-07-28, list and calls", v2("pin")),
    ("client v2: version negotiation 'auto' selects 2026-07-28", v2("auto")),
    ("http: sdk v1 (session): run_python_snippet", v1("snippet", http=True)),
    ("http: sdk v1 (session): a module function", v1("module", True, http=True)),
    ("http: sdk v1 (session): failing runs are isError", v1("failing", http=True)),
    ("http: sdk v1 (session): AbortSignal cancels the run quickly", v1("cancel", http=True)),
    ("http: sdk v1 (session): four 1 s calls overlap", v1("concurrent", http=True)),
    ("http: sdk v1 (session): ping", v1("ping", http=True)),
    ("http: sdk v1 (session): 50 calls at once, default settings: all succeed",
     v1("burst50", http=True, defaults=True)),
    ("http: client v2 pinned to 2026-07-28 (stateless)", v2("pin", http=True)),
    ("http: client v2 'auto' selects 2026-07-28", v2("auto", http=True)),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
