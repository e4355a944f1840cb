#!/usr/bin/env python3
"""Golden JSON-RPC transcripts of `govex mcp` over stdio, both protocol eras, malformed and
oversized input included.

Each transcript in golden/NAME.jsonl is a list of lines {"send": MESSAGE} (or
{"send_raw": TEXT} for bytes that are not a JSON message, or {"send_oversized": N} for a
line of N bytes) and {"recv": MESSAGE}.  The test replays the sends and compares every
message the server writes, in order, after masking run-time fields (times, digests,
the server's version, the backend's control list).  A send waits for the messages that
follow it in the transcript, so the order is deterministic.

GOVEX_MCP_REGEN=1 rewrites the transcripts from the scripts below (review the diff).
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

GOLDEN = os.path.join(m.HERE, "golden")
REGEN = os.environ.get("GOVEX_MCP_REGEN") == "1"
ARGS = ["--preset", "trusted", "--max-concurrent", "2"]

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MS = re.compile(r"\b\d+ ms\)")
# the host's interpreter, named in the tools' descriptions
PYTHON = re.compile(r"Python \d+\.\d+\.\d+\S* \([^)]*\)")


def mask(v, key=None):
    """Run-time facts become placeholders; everything else must match exactly."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ("wall_ms", "cpu_ms", "max_rss_bytes") and isinstance(x, int):
                out[k] = "<n>"
            elif k == "controls" and isinstance(x, list):
                out[k] = "<controls>"
            elif k == "version" and key == "serverInfo" or (
                    k == "version" and key == "io.modelcontextprotocol/serverInfo"):
                out[k] = "<version>"
            elif k == "text" and isinstance(x, str) and x.startswith("{\"backend\""):
                # the whole result document as text (before 2025-06-18): masked as JSON
                out[k] = mask(json.loads(x))
            else:
                out[k] = mask(x, k)
        return out
    if isinstance(v, list):
        return [mask(x, key) for x in v]
    if isinstance(v, str):
        v = PYTHON.sub("Python <version> (<interpreter>)", v)
        return MS.sub("<n> ms)", DIGEST.sub("sha256:<digest>", v))
    return v


def env(version=m.MODERN, **kw):
    return {"_meta": m.meta(version, **kw)}


def snippet(code, **extra):
    a = {"code": code}
    a.update(extra)
    return {"name": "run_python_snippet", "arguments": a}


def req(id, method, params=None):
    r = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        r["params"] = params
    return r


def note(method, params=None):
    r = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        r["params"] = params
    return r


def modern_params(params, **kw):
    p = dict(params)
    p.update(env(**kw))
    return p


# Each script: a list of (send, number of messages the server answers with).
SCRIPTS = {
    "legacy_2025-11-25": [
        (req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "golden", "version": "1"}}), 1),
        (note("notifications/initialized"), 0),
        (req(2, "ping"), 1),
        (req(3, "tools/list", {}), 1),
        (req(4, "tools/call", snippet("print(6*7)\n6*7")), 1),
        (req(5, "tools/call", snippet("import sys\nprint('bye', file=sys.stderr)\n"
                                      "raise SystemExit(3)")), 1),
        (req(6, "tools/call", snippet("def f():\n    raise KeyError('k')\n\nf()\n")), 1),
        (req(7, "tools/call", snippet("x = INPUTS['n'] * 2\nx", inputs={"n": 21})), 1),
        (req(8, "tools/call", snippet("import time\ntime.sleep(3)", timeout_ms=200)), 1),
        (req(9, "tools/call", snippet("print(1)", timeout_ms=10 ** 7)), 1),
        (req(10, "tools/call", snippet("print(1)", extra=True)), 1),
        (req(11, "tools/call", {"name": "run_python_snippet"}), 1),
        (req(12, "tools/call", {"name": "no_such_tool", "arguments": {}}), 1),
        (req(13, "logging/setLevel", {"level": "info"}), 1),
        (req(14, "tools/call", snippet("1 + 1")), 2),      # notifications/message, result
        (req(15, "logging/setLevel", {"level": "loud"}), 1),
        (req(16, "resources/list", {}), 1),
        (req(17, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}), 1),
    ],
    "legacy_2024-11-05": [
        (req("a", "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                 "clientInfo": {"name": "old", "version": "0"}}), 1),
        (note("notifications/initialized"), 0),
        (req("b", "tools/call", snippet("print('hi')")), 1),
    ],
    "legacy_negotiation": [
        # a version the server does not speak: it answers with its latest handshake one
        (req(1, "initialize", {"protocolVersion": "2099-01-01", "capabilities": {}}), 1),
        (req(2, "ping"), 1),
    ],
    "modern_2026-07-28": [
        (req(1, "server/discover", env()), 1),
        (req(2, "tools/list", env()), 1),
        (req(3, "tools/call", modern_params(snippet("print('modern')\n[1, 2.5, None]"))), 1),
        (req(4, "tools/call", modern_params(snippet("raise ValueError('no')"))), 1),
        (req(5, "tools/call", modern_params({"name": "nope", "arguments": {}})), 1),
        (req(6, "tools/list", env(version="1999-12-31")), 1),
        (req(7, "server/discover", env(version="2027-01-01")), 1),
        (req(8, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                         m.MODERN}}), 1),
        (req(9, "ping", env()), 1),
        (req(10, "logging/setLevel", modern_params({"level": "info"})), 1),
        (req(11, "tools/list", modern_params({"cursor": "x"})), 1),
        (req(12, "tools/call", modern_params(
            snippet("'logged'"),
            **{"io.modelcontextprotocol/logLevel": "debug"})), 2),
        (req(13, "server/discover", {}), 1),
        (req(14, "tools/list", env(**{"io.modelcontextprotocol/clientInfo": "me"})), 1),
    ],
    "malformed": [
        ({"raw": "{not json"}, 1),
        ({"raw": "[]"}, 1),
        ({"raw": "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"}, 1),
        ({"raw": "42"}, 1),
        ({"raw": "\"ping\""}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}"}, 1),
        ({"raw": "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}"}, 1),
        ({"raw": "{\"id\":4,\"method\":\"ping\"}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":[1]}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                 "\"params\":{\"name\":\"run_python_snippet\",\"arguments\":[1]}}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\","
                 "\"params\":{\"name\":7}}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\","
                 "\"params\":{\"_meta\":[]}}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"params\":"
                 "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":5}}}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":"
                 "{\"name\":\"run_python_snippet\",\"arguments\":{\"code\":\"a\\u0000b\"}}}"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{}}"}, 0),   # a response: ignored
        ({"raw": "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}"}, 0),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                 "\"params\":{\"requestId\":999}}"}, 0),
        ({"raw": "   "}, 0),
        ({"bytes": "ff fe 7b 0a"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}\r"}, 1),
        ({"raw": "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/call\",\"params\":"
                 "{\"name\":\"run_python_snippet\",\"arguments\":{\"code\":\"1\","
                 "\"timeout_ms\":1.5}}}"}, 1),
        (req(15, "ping"), 1),
    ],
    "oversized": [
        ({"oversized": 18 << 20}, 1),
        (req(1, "ping"), 1),
        ({"oversized": (17 << 20) + 1}, 1),
        (req(2, "tools/call", snippet("print('after')")), 1),
    ],
}


def oversized_line(n):
    head = b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"x","arguments":{"code":"'
    tail = b'"}}}'
    return head + b"x" * (n - len(head) - len(tail)) + tail + b"\n"


def send_entry(s, entry):
    if "send" in entry:
        s.send(entry["send"])
    elif "send_raw" in entry:
        s.send_raw(entry["send_raw"].encode("utf-8") + b"\n")
    elif "send_bytes" in entry:
        s.send_raw(bytes.fromhex(entry["send_bytes"]))
    elif "send_oversized" in entry:
        s.send_raw(oversized_line(entry["send_oversized"]))


def to_entry(send):
    if "raw" in send and len(send) == 1:
        return {"send_raw": send["raw"]}
    if "bytes" in send and len(send) == 1:
        return {"send_bytes": send["bytes"]}
    if "oversized" in send and len(send) == 1:
        return {"send_oversized": send["oversized"]}
    return {"send": send}


def regen(name, t):
    s = m.Server(ARGS, cwd=t)
    lines = []
    for send, n in SCRIPTS[name]:
        e = to_entry(send)
        lines.append(e)
        send_entry(s, e)
        for _ in range(n):
            lines.append({"recv": mask(s.recv(30))})
    m.eq(s.close(), 0, "exit status at stdin's end")
    os.makedirs(GOLDEN, exist_ok=True)
    with open(os.path.join(GOLDEN, name + ".jsonl"), "w") as f:
        for e in lines:
            f.write(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n")


def replay(name, t):
    path = os.path.join(GOLDEN, name + ".jsonl")
    with open(path) as f:
        entries = [json.loads(l) for l in f if l.strip()]
    s = m.Server(ARGS, cwd=t)
    for i, e in enumerate(entries, 1):
        if "recv" in e:
            got = mask(s.recv(30))
            if got != e["recv"]:
                raise m.Failure("%s.jsonl line %d differs\nexpected: %s\ngot:      %s" % (
                    name, i, json.dumps(e["recv"], sort_keys=True)[:3000],
                    json.dumps(got, sort_keys=True)[:3000]))
        else:
            send_entry(s, e)
    # nothing more may come: a ping is answered next, and it is the only message
    s.send({"jsonrpc": "2.0", "id": "last", "method": "ping"})
    last = s.recv(30)
    m.eq(last, {"jsonrpc": "2.0", "id": "last", "result": {}}, "message after the transcript")
    m.eq(s.close(), 0, "exit status at stdin's end")


def transcript(name):
    def test(t):
        if REGEN:
            regen(name, t)
        replay(name, t)
    return test


TESTS = [("golden transcript %s" % n, transcript(n)) for n in SCRIPTS]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
