#!/usr/bin/env python3
"""`govex mcp --http`: MCP's streamable HTTP transport (docs/mcp.md "HTTP").  Both eras over
POST /mcp (JSON and SSE answers), sessions for the legacy versions, each request's
notifications on its own stream only, the controls (token, Origin/Host, bounds, rate,
calls waiting), /healthz /readyz /metrics and the SIGTERM drain.  Loopback only."""
import json
import os
import signal
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402

ARGS = ["--preset", "trusted"]
TOKEN = "s3cr3t-token-0123456789abcdef"


def init(s, version="2025-11-25"):
    st, h, msgs = s.rpc("initialize", {"protocolVersion": version, "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
    m.eq(st, 200, "initialize status")
    sid = h.get("mcp-session-id")
    m.check(sid and len(sid) >= 32, "a session id of 128 bits or more: %r" % sid)
    m.eq(msgs[0]["result"]["protocolVersion"], version, "negotiated")
    st, _, _ = s.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                      {"Mcp-Session-Id": sid})
    m.eq(st, 202, "notifications/initialized")
    return sid


def modern_call(code, **meta):
    return {"name": "run_python_snippet", "arguments": {"code": code},
            "_meta": m.meta(**meta)}


def result_of(msgs, id):
    r = [x for x in msgs if x.get("id") == id]
    m.check(len(r) == 1, "one response with id %r in %r" % (id, msgs))
    return r[0]


def test_legacy_session(t):
    s = m.HttpServer(ARGS)
    sid = init(s)
    hs = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    st, h, msgs = s.rpc("tools/list", {}, id=2, headers=hs)
    m.eq(st, 200, "tools/list")
    m.eq(h.get("content-type"), "application/json", "content type")
    m.check(any(x["name"] == "run_python_snippet" for x in msgs[0]["result"]["tools"]), "tools")
    st, h, msgs = s.rpc("tools/call", {"name": "run_python_snippet",
                                       "arguments": {"code": "6*7"}}, id=3, headers=hs)
    m.eq(st, 200, "tools/call (JSON)")
    m.eq(m.result_doc(msgs[0])["value"], 42, "value")
    # a request without the session, with an unknown one, after DELETE
    st, _, _ = s.rpc("ping", id=4)
    m.eq(st, 400, "no Mcp-Session-Id")
    st, _, _ = s.rpc("ping", id=5, headers={"Mcp-Session-Id": "0" * 64})
    m.eq(st, 404, "unknown session")
    st, _, _ = s.rpc("ping", id=6, headers={"Mcp-Session-Id": sid,
                                           "MCP-Protocol-Version": "1999-01-01"})
    m.eq(st, 400, "unsupported MCP-Protocol-Version")
    st, _, _ = s.rpc("ping", id=7, headers={"Mcp-Session-Id": sid,
                                           "MCP-Protocol-Version": "2025-03-26"})
    m.eq(st, 200, "another supported MCP-Protocol-Version (the official suite sends one)")
    st, _, _ = s.http("DELETE", headers={"Mcp-Session-Id": sid})
    m.eq(st, 200, "DELETE")
    st, _, _ = s.rpc("ping", id=8, headers={"Mcp-Session-Id": sid})
    m.eq(st, 404, "ended session")
    st, _, _ = s.http("GET")
    m.eq(st, 405, "GET /mcp (no server stream)")


def test_session_bound(t):
    """1024 sessions at most: the 1025th ends the one unused longest (404), not the server."""
    s = m.HttpServer(ARGS + ["--rate", "1000000"])
    first = init(s)
    c = s.conn()
    msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}}}
    last = None
    for _ in range(1024):
        st, h, _ = s.post(msg, conn=c)
        m.eq(st, 200, "initialize")
        last = h["mcp-session-id"]
    c.close()
    m.eq(s.rpc("ping", id=2, headers={"Mcp-Session-Id": first})[0], 404, "the oldest ended")
    m.eq(s.rpc("ping", id=3, headers={"Mcp-Session-Id": last})[0], 200, "the newest serves")


def test_session_cancel(t):
    """In a session, notifications/cancelled (and DELETE) end the call and its request:
    the waiting POST is answered at once (JSON: a -32000 error; SSE: the stream ends)."""
    s = m.HttpServer(ARGS)
    sid = init(s)
    hs = {"Mcp-Session-Id": sid}
    for how, sse in (("cancelled", False), ("cancelled", True), ("delete", False)):
        if how == "delete":
            sid = init(s)
            hs = {"Mcp-Session-Id": sid}
        res = {}

        def call():
            res["r"] = s.rpc("tools/call", {"name": "run_python_snippet", "arguments": {
                "code": "import time\ntime.sleep(4)"}}, id=7, headers=hs, sse=sse)
            res["t"] = time.monotonic()
        th = threading.Thread(target=call)
        th.start()
        time.sleep(0.7)
        t0 = time.monotonic()
        if how == "cancelled":
            st, _, _ = s.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 7}}, hs)
            m.eq(st, 202, "the notification")
        else:
            m.eq(s.http("DELETE", headers=hs)[0], 200, "DELETE")
        th.join(20)
        st, _, msgs = res["r"]
        m.check(res["t"] - t0 < 2, "%s (sse %s): answered %.1f s later" % (how, sse,
                                                                        res["t"] - t0))
        m.eq(st, 200, "status")
        if sse:
            m.check(not [x for x in msgs if "id" in x], "the stream ends without a reply")
        else:
            m.eq(msgs[0]["error"]["code"], -32000, "%s: error" % how)


def test_versions(t):
    s = m.HttpServer(ARGS)
    for v in ("2025-03-26", "2025-06-18", "2025-11-25"):
        sid = init(s, v)
        st, _, msgs = s.rpc("ping", id=9, headers={"Mcp-Session-Id": sid,
                                                  "MCP-Protocol-Version": v})
        m.eq((st, msgs[0].get("result")), (200, {}), "ping in %s" % v)


def test_modern_stateless(t):
    s = m.HttpServer(ARGS)
    st, h, msgs = s.rpc("server/discover", {"_meta": m.meta()}, id="d")
    m.eq(st, 200, "discover")
    m.check("mcp-session-id" not in h, "no session for 2026-07-28")
    m.check("2026-07-28" in msgs[0]["result"]["supportedVersions"], "versions")
    st, _, msgs = s.rpc("tools/call", modern_call("6*7"), id=1,
                        headers={"MCP-Protocol-Version": "2026-07-28"})
    m.eq(st, 200, "call")
    m.eq(msgs[0]["result"]["resultType"], "complete", "resultType")
    m.eq(m.result_doc(msgs[0])["value"], 42, "value")
    st, _, _ = s.rpc("tools/call", modern_call("1"), id=2,
                     headers={"MCP-Protocol-Version": "2025-11-25"})
    m.eq(st, 400, "header and _meta disagree")
    # a response or notification: 202, no body
    st, _, body = s.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 99}})
    m.eq((st, body), (202, b""), "notification")
    # unreadable: 400 with a JSON-RPC error
    st, _, body = s.post(b"{not json", {"Content-Type": "application/json"})
    m.eq(st, 400, "parse error status")
    m.eq(json.loads(body)["error"]["code"], -32700, "parse error")


def test_numbers_past_64_bits(t):
    """Over HTTP too (issue 23, item 7): 200 with -32602 naming the argument and the
    request's id; an id past 64 bits answered with it (-32600); never 400 -32700."""
    s = m.HttpServer(ARGS)
    params = modern_call("1")
    params["arguments"]["timeout_ms"] = 2 ** 64
    st, _, msgs = s.rpc("tools/call", params, id=5)
    m.eq(st, 200, "status (valid JSON)")
    m.eq((msgs[0].get("id"), msgs[0].get("error", {}).get("code")), (5, -32602),
         "an argument past 64 bits: %r" % msgs)
    m.check("'timeout_ms'" in msgs[0]["error"]["message"], "named: %r" % msgs[0]["error"])
    st, _, msgs = s.rpc("tools/call", modern_call("6*7"), id=2 ** 64)
    m.eq(st, 200, "status of an id past 64 bits")
    m.eq((msgs[0].get("id"), msgs[0].get("error", {}).get("code")), (2 ** 64, -32600),
         "an id past 64 bits is answered with it: %r" % msgs)
    sid = init(s)
    st, _, msgs = s.rpc("ping", None, id=-(2 ** 70), headers={"Mcp-Session-Id": sid})
    m.eq((st, msgs[0].get("id"), msgs[0].get("error", {}).get("code")), (200, -(2 ** 70), -32600),
         "in a session: %r" % msgs)
    st, _, msgs = s.rpc("tools/call", modern_call("6*7"), id=3)
    m.eq(m.result_doc(msgs[0])["value"], 42, "served after them")


def test_sse_stream(t):
    s = m.HttpServer(ARGS)
    code = "import time\nprint('one', flush=True)\ntime.sleep(1.2)\nprint('two')\n6*7"
    st, h, msgs = s.rpc("tools/call", modern_call(
        code, **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "p"}),
        id=11, sse=True)
    m.eq(st, 200, "status")
    m.check(h.get("content-type", "").startswith("text/event-stream"), "SSE: %r" % h)
    logs = [x["params"]["data"] for x in msgs if x.get("method") == "notifications/message"
            and x["params"].get("logger") == "stdout"]
    m.eq(logs, ["one", "two"], "output lines as log notifications")
    m.check(any(x.get("method") == "notifications/progress" for x in msgs), "progress")
    m.eq(msgs[-1].get("id"), 11, "the response comes last")
    m.eq(m.result_doc(msgs[-1])["value"], 42, "value")


def test_streams_are_private(t):
    """Two clients' calls at once, same JSON-RPC id: each stream carries its own output
    and its own result only."""
    s = m.HttpServer(ARGS + ["--max-concurrent", "2"])
    out = {}

    def client(tag):
        code = ("import time\nfor i in range(3):\n    print('%s', i, flush=True)\n"
                "    time.sleep(0.3)\n'%s'" % (tag, tag))
        out[tag] = s.rpc("tools/call", modern_call(
            code, **{"io.modelcontextprotocol/logLevel": "debug", "progressToken": tag}),
            id=1, sse=True)
    th = [threading.Thread(target=client, args=(x,)) for x in ("alpha", "bravo")]
    for x in th:
        x.start()
    for x in th:
        x.join(60)
    for tag, other in (("alpha", "bravo"), ("bravo", "alpha")):
        st, _, msgs = out[tag]
        text = json.dumps(msgs)
        m.eq(st, 200, tag)
        m.check(other not in text, "%s's stream carries %s's messages: %s" % (tag, other, text))
        m.eq(m.result_doc(msgs[-1])["value"], tag, "result")
        m.eq(len([x for x in msgs if x.get("method") == "notifications/message"
                  and x["params"].get("logger") == "stdout"]), 3, "its three lines")


def test_token(t):
    tf = m.write(t, "token", TOKEN + "\n")
    os.chmod(tf, 0o600)
    s = m.HttpServer(ARGS + ["--token-file", tf])
    msg = {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
           "params": {"_meta": m.meta()}}
    for hdr in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer " + TOKEN[:-1]},
                {"Authorization": "Bearer " + TOKEN + "x"}, {"Authorization": "Basic " + TOKEN},
                {"Authorization": TOKEN}):
        st, h, body = s.post(msg, hdr)
        m.eq(st, 401, "Authorization %r" % hdr)
        m.check(h.get("www-authenticate", "").startswith("Bearer"), "WWW-Authenticate")
        m.check("error" in json.loads(body), "JSON body")
    st, _, _ = s.http("POST", "/mcp?access_token=" + TOKEN, msg, {"Accept": "application/json"})
    m.eq(st, 401, "a token in the query is not one")
    st, _, _ = s.post(msg, {"Authorization": "Bearer " + TOKEN})
    m.eq(st, 200, "right token")
    st, _, _ = s.post(msg, {"Authorization": "bearer " + TOKEN})
    m.eq(st, 200, "the scheme is case-insensitive")
    m.eq(s.http("GET", "/metrics")[0], 401, "/metrics needs it")
    m.eq(s.http("GET", "/metrics", headers={"Authorization": "Bearer " + TOKEN})[0], 200,
         "/metrics with it")
    for p in ("/healthz", "/readyz"):
        st, _, body = s.http("GET", p)
        m.eq(st, 200, p + " needs no token")
        m.eq(list(json.loads(body)), ["status"], p + " says its status only")


def test_refusals(t):
    # off loopback without a token
    s = m.HttpServer(ARGS, addr="0.0.0.0:0", wait=False)
    m.eq(s.wait(60), 125, "0.0.0.0 without --token-file")
    m.check("token" in s.stderr(), "says why: " + s.stderr()[-300:])
    m.check("serving" not in s.stderr() and "runs start" not in s.stderr(),
            "refused before the runtime starts: " + s.stderr()[-300:])
    s = m.HttpServer(ARGS, addr="example.com:80", wait=False)
    m.eq(s.wait(60), 2, "a name is not an address (usage error)")
    good = m.write(t, "good", TOKEN + "\n")
    os.chmod(good, 0o600)
    bad = {"empty": "\n", "short": "abc\n"}
    for name, data in bad.items():
        f = m.write(t, name, data)
        os.chmod(f, 0o600)
        s = m.HttpServer(ARGS + ["--token-file", f], wait=False)
        m.eq(s.wait(60), 125, "token file " + name)
    ww = m.write(t, "ww", TOKEN + "\n")
    os.chmod(ww, 0o620)
    s = m.HttpServer(ARGS + ["--token-file", ww], wait=False)
    m.eq(s.wait(60), 125, "group-writable token file")
    ln = os.path.join(t, "link")
    os.symlink(good, ln)
    s = m.HttpServer(ARGS + ["--token-file", ln], wait=False)
    m.eq(s.wait(60), 125, "symlinked token file")
    s = m.HttpServer(ARGS + ["--token-file", good], addr="0.0.0.0:0")
    m.check(s.url, "0.0.0.0 with a token serves")


def test_origin_host(t):
    s = m.HttpServer(ARGS + ["--allow-origin", "https://app.example"])
    msg = {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
           "params": {"_meta": m.meta()}}
    m.eq(s.post(msg, {"Origin": "https://evil.example"})[0], 403, "foreign Origin")
    m.eq(s.post(msg, {"Origin": "null"})[0], 403, "Origin null")
    m.eq(s.post(msg, {"Origin": "http://localhost.evil.example"})[0], 403, "lookalike")
    st, h, _ = s.post(msg, {"Origin": "https://app.example"})
    m.eq(st, 200, "allowed Origin")
    m.eq(h.get("access-control-allow-origin"), "https://app.example", "CORS echo")
    m.eq(s.post(msg, {"Origin": "http://localhost:5173"})[0], 200, "loopback Origin")
    m.eq(s.post(msg, {"Host": "evil.example:%d" % s.port})[0], 403, "rebinding Host")
    m.eq(s.post(msg, {"Host": "127.0.0.1.nip.io"})[0], 403, "lookalike Host")
    m.eq(s.post(msg, {"Host": "localhost:%d" % s.port})[0], 200, "localhost Host")


def test_bounds(t):
    s = m.HttpServer(ARGS)
    # a body announced larger than 17 MiB: refused before it is sent
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % ((17 << 20) + 1))
    head = c.recv(4096)
    c.close()
    m.check(head.startswith(b"HTTP/1.1 413"), "413 before the body: %r" % head[:100])
    # a chunked body: refused at the headers (411), before a byte of it is read
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
              b"Content-Type: application/json\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    got = b""
    try:
        for _ in range(20):
            c.sendall(chunk)
    except OSError:
        pass
    try:
        got = c.recv(4096)
    except OSError:
        pass
    c.close()
    m.check(got.startswith(b"HTTP/1.1 411"), "a chunked body: %r" % got[:100])
    # two lengths: 400 and the connection closed, the bytes after never a request
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}"
              b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    got = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    c.close()
    m.check(got.startswith(b"HTTP/1.1 400"), "two Content-Lengths: %r" % got[:100])
    m.eq(got.count(b"HTTP/1.1 "), 1, "responses on a connection with two Content-Lengths")
    st, _, _ = s.http("POST", "/mcp", b"{}", {"Accept": "application/json",
                                              "X-Big": "a" * (17 << 10)})
    m.check(st == 431, "headers past 16 KiB: %d" % st)
    m.eq(s.http("GET", "/nope")[0], 404, "unknown path")
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for ct in ({}, {"Content-Type": "text/plain"}, {"Content-Type": "application/jsonx"},
               {"Content-Type": "application/x-www-form-urlencoded"}):
        m.eq(s.http("POST", "/mcp", ping, dict(ct, Accept="application/json"))[0], 415,
             "Content-Type %r" % ct)
    m.eq(s.post({"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"Accept": "text/html"})[0], 406, "Accept admits neither")


def test_connections(t):
    """--max-connections: past it, a connection is not served (libmicrohttpd stops
    accepting); a request's headers must arrive within 10 s (slowloris: dribbling a byte
    at a time does not keep a connection)."""
    s = m.HttpServer(ARGS + ["--max-connections", "4"])
    held = []
    t_start = time.monotonic()
    for _ in range(4):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=40)
        c.sendall(b"POST /mcp HTTP/1.1\r\n")
        held.append(c)
    extra = socket.create_connection(("127.0.0.1", s.port), timeout=2)
    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    try:
        got = extra.recv(100)
    except socket.timeout:
        got = None
    m.check(not got, "a fifth connection is not served: %r" % got)
    # one of the four dribbles a header byte every 2 s: closed all the same
    dribbler, closed_at = held[1], {}

    def dribble():
        try:
            for _ in range(15):
                time.sleep(2)
                dribbler.sendall(b"X")
        except OSError:
            closed_at["t"] = time.monotonic() - t_start
    th = threading.Thread(target=dribble)
    th.start()
    try:
        got = held[0].recv(100)
    except OSError:
        got = b"(error)"
    idle = time.monotonic() - t_start
    m.check(got == b"" and 9 < idle < 13, "unfinished headers closed after %.1f s (%r)"
            % (idle, got))
    th.join(40)
    m.check(closed_at.get("t", 99) < 16, "the dribbler kept its connection: %r" % closed_at)
    for c in held:
        c.close()
    extra.settimeout(10)
    got = extra.recv(100)
    m.check(got.startswith(b"HTTP/1.1 200"), "the waiting connection is served once there "
            "is room: %r" % got[:40])
    extra.close()
    text = s.http("GET", "/metrics")[2].decode()
    m.check('govex_http_rejected_total{reason="deadline"}' in text, text)


def test_rate(t):
    s = m.HttpServer(ARGS + ["--rate", "5"])
    msg = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": m.meta()}}
    codes = [s.post(msg)[0] for _ in range(25)]
    m.check(codes[:10] == [200] * 10, "a burst of 2N passes: %r" % codes)
    m.check(429 in codes, "then 429: %r" % codes)
    st, h, body = s.post(msg)
    m.eq((st, h.get("retry-after")), (429, "1"), "Retry-After")
    m.check(s.http("GET", "/healthz")[0] == 200, "probes are not rate-limited")
    time.sleep(1.2)
    m.eq(s.post(msg)[0], 200, "refilled")


def test_queue_full(t):
    """--max-concurrent 1 --max-queued 4: 1 running + 4 waiting, the rest 429 with a
    Retry-After and a message naming the bound; /metrics counts them."""
    s = m.HttpServer(ARGS + ["--max-concurrent", "1", "--max-queued", "4", "--rate", "1000"])
    res = []

    def one(i):
        st, h, msgs = s.rpc("tools/call", modern_call("import time\ntime.sleep(2)"), id=i)
        res.append((st, h.get("retry-after"), msgs))
    th = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for x in th:
        x.start()
        time.sleep(0.05)
    for x in th:
        x.join(60)
    m.eq(sorted(r[0] for r in res), [200] * 5 + [429] * 3, "1 running + 4 waiting; the rest 429")
    for st, ra, msgs in res:
        if st == 429:
            m.check(ra and ra.isdigit() and 1 <= int(ra) <= 60, "Retry-After %r" % ra)
            m.check("--max-queued" in msgs[0]["error"]["message"], "%r" % msgs)
    text = s.http("GET", "/metrics")[2].decode()
    m.check('govex_http_requests_total{code="429"} 3' in text, text)
    m.check('govex_queue_rejected_total{reason="client_calls"} 3' in text, text)


def _session_call(s, sid, code, id):
    return s.rpc("tools/call", {"name": "run_python_snippet", "arguments": {"code": code}},
                 id=id, headers={"Mcp-Session-Id": sid}, timeout=120)


def test_fair_share(t):
    """Issue 23, case 1: --max-concurrent 2; client A (a session, 127.0.0.1) posts eight
    3 s sleeps, then client B (another session) posts print(6*7): B is answered within
    about one run's time (its call takes the first slot that frees), not after A's queue.
    A's calls all complete; /metrics shows the queue and its clients meanwhile."""
    s = m.HttpServer(ARGS + ["--max-concurrent", "2", "--rate", "1000"])
    a, b = init(s), init(s)
    res = {}

    def one(i):
        res[i] = _session_call(s, a, "import time\ntime.sleep(3)\n%d" % i, i)
    th = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for x in th:
        x.start()
        time.sleep(0.03)
    time.sleep(0.5)
    during = s.http("GET", "/metrics")[2].decode()
    t0 = time.monotonic()
    st, _, msgs = _session_call(s, b, "print(6*7)", 100)
    took = time.monotonic() - t0
    m.eq(st, 200, "B's status")
    m.eq(m.result_doc(msgs[0])["stdout"], "42\n", "B's output")
    m.check(took < 4.5, "B answered after %.1f s behind A's eight 3 s calls (one run: 3 s)"
            % took)
    m.check("govex_calls_queued 6" in during and "govex_calls_running 2" in during
            and 'govex_queue_client_calls_max{state="waiting"} 6' in during,
            "A's eight calls: 2 running, 6 waiting: " + during[-3000:])
    for x in th:
        x.join(60)
    m.eq(sorted(res), list(range(8)), "A's calls answered")
    for i, (st, _, msgs) in res.items():
        m.eq((st, m.result_doc(msgs[0])["value"]), (200, i), "A's call %d" % i)
    text = s.http("GET", "/metrics")[2].decode()
    m.check("govex_queue_wait_seconds_count 9" in text, text[-3000:])


def test_client_tokens(t):
    """--client-tokens: a bearer token per client (issue 23: "by token where tokens
    identify clients").  Each listed token is accepted, any other is 401; the token names
    the client for the scheduler, so two stateless clients on loopback (one address group)
    still get a share each: alpha's eight 3 s calls do not hold bravo's print(6*7).  A
    file that breaks a rule stops the server (125), naming the line."""
    ta, tb = "alpha-token-0123456789", "bravo-token-0123456789"
    f = m.write(t, "clients", "# name token\nalpha %s\n\nbravo %s\n" % (ta, tb))
    os.chmod(f, 0o600)
    s = m.HttpServer(ARGS + ["--client-tokens", f, "--max-concurrent", "2", "--rate", "1000"])
    call = modern_call("6*7")
    for tok, want in ((None, 401), ("wrong-token-0123456789", 401), (ta, 200), (tb, 200)):
        h = {"Authorization": "Bearer " + tok} if tok else {}
        m.eq(s.rpc("tools/call", call, id=1, headers=h)[0], want, "token %r" % tok)
    res = {}

    def one(i):
        res[i] = s.rpc("tools/call", modern_call("import time\ntime.sleep(3)\n%d" % i), id=i,
                       headers={"Authorization": "Bearer " + ta}, timeout=120)
    th = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for x in th:
        x.start()
        time.sleep(0.03)
    time.sleep(0.5)
    text = s.http("GET", "/metrics", headers={"Authorization": "Bearer " + ta})[2].decode()
    m.check('govex_client_calls{client="alpha",state="waiting"} 6' in text and
            'govex_client_calls{client="alpha",state="running"} 2' in text,
            "alpha's calls by name in /metrics: " + text[-2500:])
    t0 = time.monotonic()
    st, _, msgs = s.rpc("tools/call", modern_call("print(6*7)"), id=100,
                        headers={"Authorization": "Bearer " + tb}, timeout=120)
    took = time.monotonic() - t0
    m.eq((st, m.result_doc(msgs[0])["stdout"]), (200, "42\n"), "bravo's call")
    m.check(took < 4.5, "bravo answered after %.1f s behind alpha's eight 3 s calls" % took)
    for x in th:
        x.join(60)
    m.eq(sorted(st for st, _, _ in res.values()), [200] * 8, "alpha's calls")
    bad = {"a name with a space": "al pha %s\n" % ta, "no token": "alpha\n",
           "a short token": "alpha short\n", "a name twice": "a %s\na %s\n" % (ta, tb),
           "a token twice": "a %s\nb %s\n" % (ta, ta), "nothing": "# none\n",
           "a bad name": "al/pha %s\n" % ta}
    for what, data in bad.items():
        g = m.write(t, "bad", data)
        os.chmod(g, 0o600)
        b = m.HttpServer(ARGS + ["--client-tokens", g], wait=False)
        m.eq(b.wait(60), 125, "client tokens file with " + what)
        m.check("--client-tokens" in b.stderr(), "says why: " + b.stderr()[-300:])
    os.chmod(f, 0o620)
    b = m.HttpServer(ARGS + ["--client-tokens", f], wait=False)
    m.eq(b.wait(60), 125, "a group-writable client tokens file")


def test_queue_timeout(t):
    """--queue-timeout 1: a call that waits longer than that is answered with an error
    naming the limit, and never runs."""
    s = m.HttpServer(ARGS + ["--max-concurrent", "1", "--queue-timeout", "1", "--rate", "1000"])
    flag = os.path.join(t, "ran")
    res = {}

    def one(i, code):
        res[i] = s.rpc("tools/call", modern_call(code), id=i, timeout=60)
    first = threading.Thread(target=one, args=(1, "import time\ntime.sleep(4)"))
    first.start()
    time.sleep(0.3)
    one(2, "open(%r, 'w').close()" % flag)
    st, _, msgs = res[2]
    m.eq(st, 200, "status")
    err = msgs[0].get("error", {})
    m.check(err.get("code") == -32000 and "--queue-timeout" in err.get("message", ""),
            "the queued call's answer: %r" % msgs)
    first.join(30)
    time.sleep(0.5)
    m.check(not os.path.exists(flag), "the timed-out call ran")
    text = s.http("GET", "/metrics")[2].decode()
    m.check('govex_queue_rejected_total{reason="wait_timeout"} 1' in text, text[-2000:])


def test_metrics_ready(t):
    s = m.HttpServer(ARGS)
    s.rpc("tools/call", modern_call("6*7"), id=1)
    s.rpc("tools/call", modern_call("1/0"), id=2)
    st, h, body = s.http("GET", "/metrics")
    text = body.decode()
    m.eq(st, 200, "metrics")
    m.check(h.get("content-type", "").startswith("text/plain; version=0.0.4"), "format")
    for name in ("govex_runs_total{status=\"success\"} 1", "govex_runs_total{status=\"execution_failed\"} 1",
                 "govex_run_duration_seconds_count 2",
                 "govex_runs_in_flight 0", "govex_warm_templates", "govex_http_requests_total",
                 "govex_refusals_total", "govex_http_rejected_total"):
        m.check(name in text, "%s in\n%s" % (name, text))
    m.eq(s.http("GET", "/readyz")[0], 200, "ready (GOVEX_WARM unset: as the build offers)")
    # a denial (strict: no network) counts under its control
    s = m.HttpServer(["--preset", "strict"])
    st, _, msgs = s.rpc("tools/call", modern_call(
        "import socket\ntry:\n    socket.socket(socket.AF_INET)\nexcept OSError:\n    pass"), id=3)
    doc = m.result_doc(msgs[0])
    codes = [d["code"] for d in doc["diagnostics"]]
    m.check("denied_by_policy" in codes or "missing_controls" in codes, "a refusal: %r" % doc)
    text = s.http("GET", "/metrics")[2].decode()
    m.check('govex_refusals_total{control="network_deny"} 1' in text
            or 'govex_refusals_total{control=' in text and "missing_controls" in codes, text)


def test_drain(t):
    s = m.HttpServer(ARGS + ["--drain-timeout", "10"])
    res = {}

    def call():
        res["r"] = s.rpc("tools/call", modern_call("import time\ntime.sleep(1.5)\n'done'"), id=1)
    th = threading.Thread(target=call)
    th.start()
    time.sleep(0.5)
    s.signal(signal.SIGTERM)
    time.sleep(0.2)
    m.eq(s.http("GET", "/readyz")[0], 503, "readyz while draining")
    m.eq(s.http("GET", "/healthz")[0], 200, "healthz while draining")
    m.eq(s.rpc("tools/call", modern_call("1"), id=2)[0], 503, "new calls while draining")
    th.join(30)
    st, _, msgs = res["r"]
    m.eq(st, 200, "the call in flight finished")
    m.eq(m.result_doc(msgs[0])["value"], "done", "its result")
    m.eq(s.wait(20), 0, "exit status after the drain")


def test_drain_timeout_cancels(t):
    s = m.HttpServer(ARGS + ["--drain-timeout", "1"])
    res = {}

    def call():
        res["r"] = s.rpc("tools/call", modern_call("import time\ntime.sleep(4)"), id=1)
    th = threading.Thread(target=call)
    th.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    s.signal(signal.SIGTERM)
    m.eq(s.wait(20), 0, "exit status")
    th.join(20)
    m.check(time.monotonic() - t0 < 3.5, "cancelled at the drain timeout")
    st, _, msgs = res["r"]
    m.eq(msgs[0]["error"]["code"], -32000, "the waiting request was answered: %r" % (msgs,))


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


def test_sigkill_leaves_nothing(t):
    """SIGKILL on the server: the run it started dies with it (strict: in its sandbox).
    strict leaves no workdir on the host; trusted (the controlled backend) leaves its
    locked host workdir, which the next govex sweeps (src/lib/workdir.c)."""
    for preset in ("strict", "trusted"):
        tmp = os.path.join(t, "tmp-" + preset)
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp)
        s = m.HttpServer(["--preset", preset], env=env)
        code = ("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(30)")
        c = s.conn(timeout=60)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": modern_call(code, **{
                               "io.modelcontextprotocol/logLevel": "info"})})
        c.request("POST", "/mcp", body, {"Host": "127.0.0.1:%d" % s.port,
                                         "Accept": "text/event-stream",
                                         "Content-Type": "application/json"})
        r = c.getresponse()
        line = b""
        while b"notifications/message" not in line:
            line = r.fp.readline()
            m.check(line, "the stream ended before the run printed")
        inner = int(json.loads(line.split(b"data: ", 1)[1])["params"]["data"])
        # the pid the run saw may be its namespace's: take the server's descendants
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()
                and int(p) != s.p.pid and _ppid_chain_has(int(p), s.p.pid)]

        def cmd(p):
            try:
                return open("/proc/%d/cmdline" % p, "rb").read()
            except OSError:
                return b""
        m.check(any(b"python" in cmd(p) for p in pids),
                "%s: the run's interpreter is among the server's descendants %r"
                % (preset, [cmd(p)[:60] for p in pids]))
        s.signal(signal.SIGKILL)
        s.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        m.eq([p for p in pids if alive(p)], [], "%s: processes left after SIGKILL (run pid %d)"
             % (preset, inner))
        c.close()
        left = os.listdir(tmp)
        if preset == "strict":
            m.eq(left, [], "strict: nothing in TMPDIR")
        else:
            m.check(all(n.startswith("govex-w-") for n in left), "trusted: %r" % left)
            s2 = m.HttpServer(["--preset", preset], env=env)
            st, _, msgs = s2.rpc("tools/call", modern_call("6*7"), id=1)
            m.eq(st, 200, "the next server serves")
            m.eq(sorted(set(left) & set(os.listdir(tmp))), [],
                 "trusted: the killed server's workdir is swept by the next run")


def test_disconnect_cancels(t):
    """A stateless client that closes its connection mid-call (an SSE stream, or a request
    waiting for its JSON reply): the run is cancelled, the server keeps serving."""
    s = m.HttpServer(ARGS)
    for sse in (True, False):
        pidfile = os.path.join(t, "pid%d" % sse)
        code = ("import os, time\nopen(%r + '.t', 'w').write(str(os.getpid()))\n"
                "os.rename(%r + '.t', %r)\ntime.sleep(30)" % (pidfile, pidfile, pidfile))
        c = s.conn(timeout=60)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": modern_call(code)})
        c.request("POST", "/mcp", body, {"Host": "127.0.0.1:%d" % s.port,
                                         "Accept": "text/event-stream" if sse
                                         else "application/json",
                                         "Content-Type": "application/json"})
        t0 = time.monotonic()
        while not os.path.exists(pidfile) and time.monotonic() - t0 < 10:
            time.sleep(0.02)
        pid = int(open(pidfile).read())
        m.check(alive(pid), "the run is up")
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        t0 = time.monotonic()
        while alive(pid) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        # the policy's wall limit (5 s) would end it too: it must go well before
        m.check(time.monotonic() - t0 < 3, "%s: the run outlived its client by %.1f s"
                % ("SSE" if sse else "JSON", time.monotonic() - t0))
    st, _, msgs = s.rpc("tools/call", modern_call("6*7"), id=2)
    m.eq((st, m.result_doc(msgs[0])["value"]), (200, 42), "still serving")


def _ppid_chain_has(pid, ancestor):
    for _ in range(20):
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(") ", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


TESTS = [
    ("legacy session over HTTP: initialize, id, list, call, 400/404, DELETE, version header",
     test_legacy_session),
    ("session versions 2025-03-26, 2025-06-18, 2025-11-25", test_versions),
    ("sessions are bounded: the one unused longest ends", test_session_bound),
    ("in a session, notifications/cancelled and DELETE end the waiting request",
     test_session_cancel),
    ("2026-07-28 stateless: no session, discover and call; 202; parse error 400",
     test_modern_stateless),
    ("numbers past 64 bits: -32602 naming the argument, an id answered as sent",
     test_numbers_past_64_bits),
    ("SSE: a call's output lines and progress, then its response", test_sse_stream),
    ("two clients at once: each stream carries only its own messages", test_streams_are_private),
    ("bearer token: 401 with WWW-Authenticate; probes need none", test_token),
    ("refused at start (125): off loopback without token, bad token files", test_refusals),
    ("Origin and Host (DNS rebinding): 403", test_origin_host),
    ("bounds: 413 before the body, chunked 411, two lengths 400, 431, 404, 415, 406",
     test_bounds),
    ("connection limit; headers within 10 s (slowloris)", test_connections),
    ("per-address rate: 429 with Retry-After, then refilled", test_rate),
    ("calls waiting bounded: 429", test_queue_full),
    ("fair share: one client's queue does not hold another's call", test_fair_share),
    ("--queue-timeout: a call waiting past it is answered and never runs", test_queue_timeout),
    ("--client-tokens: a token per client, which names it for the scheduler",
     test_client_tokens),
    ("/metrics and /readyz", test_metrics_ready),
    ("SIGTERM drains: readyz 503, the call in flight completes, exit 0", test_drain),
    ("SIGTERM past --drain-timeout: the call is cancelled and answered", test_drain_timeout_cancels),
    ("SIGKILL on the server: no process of its runs left; strict no workdir, trusted's "
     "swept by the next run", test_sigkill_leaves_nothing),
    ("a client that closes its stream cancels its call", test_disconnect_cancels),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
