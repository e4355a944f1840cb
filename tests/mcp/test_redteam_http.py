#!/usr/bin/env python3
"""Round-3 red team RT-H: attacks on `govex mcp --http` (contract 3, section 4).

Every expectation comes from the contract (section 4) and DESIGN ("Tool provider and MCP
transports"), not from the code: auth (missing, wrong, prefix, case, token in the query,
the shape and timing of refusals), Origin and Host (DNS rebinding), body and header
bounds, slowloris and connection floods, 429 behaviour, session fixation and hijack, one
client's results or notifications reaching another, SSE streams nobody reads or that
are abandoned, malformed HTTP and JSON-RPC (a small seeded fuzz loop), SIGTERM drain,
SIGKILL leftovers, the non-loopback refusal (exit 125) and the token-file rules.

Network: loopback only (127.0.0.0/8 sources to stand for distinct clients); the
non-loopback refusals run inside a network namespace this test makes (`unshare -n`), so a
server that wrongly listens on 0.0.0.0 is reachable from nowhere.

Stdlib only; raw sockets so the tests control every byte.  GOVEX_RTH_FUZZ_SEED and
GOVEX_RTH_FUZZ_N reproduce or widen the fuzz loop.
"""
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mcptest as m  # noqa: E402
from rthttp import *  # noqa: E402,F401,F403
from rthttp import LEGACY, MODERN, LISTEN, MIB  # noqa: E402

TOKEN = "rth-Token-0123456789-abcdefXYZ"      # 30 bytes, mixed case
BODY_MAX = 17 * MIB                             # MCP_LINE_MAX

try:                                            # floods need descriptors
    _soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(_hard, 8192), _hard))
except (ValueError, OSError):
    pass


# ---------------------------------------------------------------- auth

def test_auth_required(t):
    """With --token-file, /mcp (every method) and /metrics without a valid bearer token:
    401, WWW-Authenticate: Bearer, a JSON {"error":...} body that does not echo what the
    client sent; the right token works; /healthz and /readyz need none."""
    s = HttpServer(t, token=TOKEN)
    p = s.port
    init = req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                 "clientInfo": {"name": "x", "version": "1"}})
    body = json.dumps(init).encode()
    flipped = TOKEN.swapcase()
    bad = {
        "missing": None,
        "wrong same length": "Bearer " + "x" * len(TOKEN),
        "prefix (all but the last byte)": "Bearer " + TOKEN[:-1],
        "first 16 bytes": "Bearer " + TOKEN[:16],
        "token plus a byte": "Bearer " + TOKEN + "A",
        "token twice": "Bearer " + TOKEN + TOKEN,
        "token in another case": "Bearer " + flipped,
        "empty bearer": "Bearer ",
        "scheme only": "Bearer",
        "no scheme": TOKEN,
        "basic with the token": "Basic " + __import__("base64").b64encode(
            (TOKEN + ":").encode()).decode(),
        "token as the scheme": TOKEN + " " + TOKEN,
        "comma list": "Bearer x, Bearer " + TOKEN,
    }
    for what, auth in bad.items():
        for method, path, b in (("POST", "/mcp", body), ("GET", "/mcp", b""),
                                ("DELETE", "/mcp", b""), ("GET", "/metrics", b"")):
            h = dict(JSON_HEADERS)
            h["Authorization"] = auth
            r = http(p, method, path, h, b)
            m.eq(r.status, 401, "%s %s with %s" % (method, path, what))
            m.check((r.h("www-authenticate") or "").split(" ")[0].lower() == "bearer",
                    "%s %s with %s: WWW-Authenticate %r" % (method, path, what,
                                                            r.h("www-authenticate")))
            m.check(is_json_error_body(r), "%s %s with %s: body not {\"error\":...}: %r"
                    % (method, path, what, r.body[:200]))
            m.check(TOKEN.encode() not in r.raw and TOKEN[:16].encode() not in r.raw,
                    "the 401 echoes the token (%s)" % what)
    # the token in the query string is not a credential
    for q in ("access_token", "token", "bearer", "auth", "authorization"):
        r = http(p, "POST", "/mcp?%s=%s" % (q, TOKEN), JSON_HEADERS, body)
        m.eq(r.status, 401, "token in the query (?%s=)" % q)
    r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Cookie="token=" + TOKEN), body)
    m.eq(r.status, 401, "token in a cookie")
    # other paths that reach the same handlers
    for path in ("/mcp/", "/MCP", "//mcp", "/mcp%00", "/./mcp", "/metrics/", "/mcp;x"):
        r = http(p, "POST", path, JSON_HEADERS, body)
        m.check(r.status in (401, 404, 400, 405),
                "POST %s without a token answered %r: %r" % (path, r.status, r.body[:200]))
        m.check(r.status != 200, "POST %s without a token answered 200" % path)
    # the right token
    r = post(p, init, token=TOKEN)
    m.eq(r.status, 200, "initialize with the token")
    m.check("result" in r.response_to(1), "initialize result")
    # healthz / readyz: no token, nothing but status
    for path in ("/healthz", "/readyz"):
        r = http(p, "GET", path)
        m.check(r.status in (200, 503), "%s without a token: %r" % (path, r.status))
        leak = [w for w in (TOKEN, t, "policy", "Python", "python", "runs_", "warm",
                            "govex_", "/mcp") if w.encode() in r.body]
        m.check(not leak and len(r.body) <= 128,
                "%s reveals more than status: %r" % (path, r.body[:300]))
    m.check(s.alive(), "the server died")


def test_auth_refusal_shape_and_timing(t):
    """A wrong token's 401 must not depend on how much of it was right: same status,
    header names and body whether nothing, all but the last byte, or a longer or shorter
    token was sent; and median latencies within a few ms of each other (a byte-at-a-time
    compare or a per-length branch that sleeps, hashes or logs differently shows)."""
    s = HttpServer(t, token=TOKEN)
    init = json.dumps(req(1, "tools/list", {"_meta": m.meta()})).encode()
    cands = {
        "none right": "Z" * len(TOKEN),
        "all but last": TOKEN[:-1] + ("a" if TOKEN[-1] != "a" else "b"),
        "first half": TOKEN[:len(TOKEN) // 2] + "Z" * (len(TOKEN) - len(TOKEN) // 2),
        "shorter": TOKEN[:-4],
        "longer": TOKEN + "abcd",
        "much longer": TOKEN * 40,
    }
    shapes, times = {}, {k: [] for k in cands}
    for rnd in range(25):
        order = list(cands)
        random.shuffle(order)
        for k in order:
            h = dict(JSON_HEADERS, Authorization="Bearer " + cands[k])
            t0 = time.perf_counter()
            r = http(s.port, "POST", "/mcp", h, init)
            times[k].append(time.perf_counter() - t0)
            hdrs = tuple(sorted(x for x in r.headers if x not in ("date",)))
            shape = (r.status, hdrs, r.body)
            if rnd == 0:
                shapes[k] = shape
            m.eq(shape, shapes[k], "the refusal's shape for %s changed between requests" % k)
    distinct = set(shapes.values())
    m.check(len(distinct) == 1, "the 401 differs by how much of the token was right: %r"
            % shapes)
    m.eq(next(iter(distinct))[0], 401, "status")
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    spread = max(med.values()) - min(med.values())
    # gross differences only (a per-byte compare differs by nanoseconds): 5 ms, or half
    # the fastest median on a loaded machine
    m.check(spread < max(5.0, min(med.values()) / 2), "median 401 latency differs by %.2f ms across wrong tokens: %r"
            % (spread, {k: round(v, 3) for k, v in med.items()}))


# ---------------------------------------------------------------- origin, host

ORIGIN_BAD = ["http://evil.example", "https://evil.example:443", "null",
              "http://localhost.evil.example", "http://127.0.0.1.nip.io",
              "http://localhost@evil.example", "http://evil.example#localhost",
              "http://evil.example/http://localhost", "http://127.0.0.1.evil.example:80",
              "file://", "http://0.0.0.0", "http://[::1].evil.example",
              "http://127.0.0.2.nip.io:8080", "http://localhost%2eevil.example"]
ORIGIN_LOOPBACK = ["http://localhost", "http://localhost:5173", "https://localhost:1",
                   "http://127.0.0.1", "http://127.0.0.1:65535", "https://127.0.0.1:8443",
                   "http://[::1]", "http://[::1]:3000"]


def _init_body():
    return json.dumps(req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                            "clientInfo": {"name": "o", "version": "1"}})
                      ).encode()


def test_origin(t):
    """Origin present and not allowed: 403 (JSON body), on every method of /mcp, with or
    without a valid token; bound to loopback the loopback origins (any port) pass; an
    --allow-origin value passes and only exactly it."""
    s = HttpServer(t, "--allow-origin", "https://good.example")
    p, body = s.port, _init_body()
    for o in ORIGIN_BAD + ["https://good.example.evil", "https://good.example:444",
                           "http://good.example", "https://evil.good.example"]:
        for method, b in (("POST", body), ("GET", b""), ("DELETE", b"")):
            r = http(p, method, "/mcp", dict(JSON_HEADERS, Origin=o), b)
            m.eq(r.status, 403, "%s /mcp with Origin %r" % (method, o))
            m.check(is_json_error_body(r), "403 body for Origin %r: %r" % (o, r.body[:200]))
        r = http(p, "GET", "/metrics", {"Origin": o})
        m.eq(r.status, 403, "GET /metrics with Origin %r" % o)
    for o in ORIGIN_LOOPBACK + ["https://good.example"]:
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Origin=o), body)
        m.eq(r.status, 200, "POST /mcp with the allowed Origin %r" % o)
    # CORS: a preflight from a foreign origin is refused and nothing ever grants it
    for o in ("http://evil.example", "null"):
        r = http(p, "OPTIONS", "/mcp", {"Origin": o, "Access-Control-Request-Method": "POST",
                                        "Access-Control-Request-Headers": "content-type"})
        m.check(r.status in (403, 405), "OPTIONS preflight from %r: %r" % (o, r.status))
        acao = r.h("access-control-allow-origin")
        m.check(acao in (None, ""), "a preflight from %r got Access-Control-Allow-Origin %r"
                % (o, acao))
    for o in ORIGIN_LOOPBACK[:2] + ["https://good.example"]:
        r = http(p, "OPTIONS", "/mcp", {"Origin": o, "Access-Control-Request-Method": "POST"})
        acao = r.h("access-control-allow-origin")
        m.check(acao in (None, o), "preflight from %r: Access-Control-Allow-Origin %r (only "
                "that origin may be named, never *)" % (o, acao))
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Origin=o), body)
        m.check(r.h("access-control-allow-origin") in (None, o),
                "POST from %r: Access-Control-Allow-Origin %r" % (o, r.h("access-control-allow-origin")))
    # with a token, a bad Origin is still refused
    s2 = HttpServer(t, token=TOKEN)
    r = post(s2.port, json.loads(body), token=TOKEN, extra={"Origin": "http://evil.example"})
    m.eq(r.status, 403, "bad Origin with a valid token")


HOST_BAD = ["evil.example", "evil.example:%d", "localhost.evil.example:%d",
            "127.0.0.1.nip.io:%d", "attacker.localhost.evil:%d", "0.0.0.0:%d",
            "192.168.1.10:%d", "[::ffff:8.8.8.8]:%d", "evil.example:80", "localhost@evil:%d",
            "127.0.0.1:%d.evil.example", "xn--localhost:%d"]
HOST_GOOD = ["127.0.0.1:%d", "localhost:%d", "127.0.0.1", "localhost"]


def test_host_dns_rebinding(t):
    """Bound to loopback, no token (the DNS-rebinding setting): a Host that is not a
    loopback name is refused 403 on /mcp and /metrics; a request without Host (HTTP/1.1)
    is not served either."""
    s = HttpServer(t)
    p, body = s.port, _init_body()
    for hb in HOST_BAD:
        hv = hb % p if "%d" in hb else hb
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Host=hv), body)
        m.eq(r.status, 403, "POST /mcp with Host %r" % hv)
        r = http(p, "GET", "/metrics", {"Host": hv})
        m.eq(r.status, 403, "GET /metrics with Host %r" % hv)
    for hg in HOST_GOOD:
        hv = hg % p if "%d" in hg else hg
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Host=hv), body)
        m.eq(r.status, 200, "POST /mcp with the loopback Host %r" % hv)
    r = http(p, "POST", "/mcp", dict(JSON_HEADERS, Host=None), body)
    m.check(r.status in (400, 403), "HTTP/1.1 without Host: %r" % r.status)
    # a session made on a good Host cannot be driven through a rebound name
    c = Session(p)
    r = c.post(req(5, "tools/list"), extra={"Host": "evil.example:%d" % p})
    m.eq(r.status, 403, "an existing session through a rebound Host")


def test_loopback_binds(t):
    """Bound to [::1], localhost or another 127/8 address, no token: the same DNS-rebinding
    and Origin rules as 127.0.0.1 (a foreign Host or Origin is 403)."""
    body = _init_body()
    for addr in ("[::1]:0", "localhost:0", "127.0.0.2:0"):
        try:
            s = HttpServer(t, addr=addr)
        except m.Failure as x:
            if addr == "[::1]:0" and not socket.has_ipv6:
                continue
            raise x
        host = s.host.strip("[]")
        if host == "localhost":
            host = "127.0.0.1" if http(s.port, "GET", "/healthz").status == 200 else "::1"
        ok = "[::1]:%d" % s.port if ":" in host else "localhost:%d" % s.port
        r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, Host=ok), body, host=host)
        m.eq(r.status, 200, "bound to %s, Host %s" % (addr, ok))
        for hv in ("evil.example:%d" % s.port, "evil.example"):
            r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, Host=hv), body, host=host)
            m.eq(r.status, 403, "bound to %s, Host %r" % (addr, hv))
        r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, Host=ok,
                                               Origin="http://evil.example"), body, host=host)
        m.eq(r.status, 403, "bound to %s, a foreign Origin" % addr)
        s.cleanup()


NETNS_PROBE = r"""
import json, os, subprocess, sys, time
sys.path.insert(0, %(here)r)
import mcptest as m
m.GOVEX = %(govex)r
from rthttp import *
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
t = %(t)r
s = HttpServer(t, addr="0.0.0.0:0", token=%(token)r, wait=False)
open(os.path.join(t, "server.pid"), "w").write(str(s.p.pid))
s.wait_listening()
out = {}
body = json.dumps(req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                        "clientInfo": {"name": "n", "version": "1"}})).encode()
out["no_token_from_loopback"] = http(s.port, "POST", "/mcp", JSON_HEADERS, body).status
out["token"] = post(s.port, json.loads(body), token=%(token)r).status
out["token_loopback_origin"] = post(s.port, json.loads(body), token=%(token)r,
                                    extra={"Origin": "http://localhost:8080"}).status
out["no_token_metrics"] = http(s.port, "GET", "/metrics").status
s.cleanup()
print(json.dumps(out))
"""


def test_non_loopback_with_token(t):
    """Bound to 0.0.0.0 with a token, inside a private network namespace: a client on
    127.0.0.1 still needs the token (401 without, on /mcp and /metrics), and loopback
    Origins are not allowed by default there (403): the loopback allowances hold only
    when the server is bound to loopback."""
    ns = _unshare()
    if not shutil.which("ip"):
        raise m.Skip("feature:netns ip(8) is not installed")
    script = os.path.join(t, "probe.py")
    with open(script, "w") as f:
        f.write(NETNS_PROBE % {"here": HERE, "govex": m.GOVEX, "t": t, "token": TOKEN})
    try:
        r = subprocess.run(ns + [sys.executable, script], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=90)
    finally:
        try:                    # the server in the namespace, should the probe have died
            os.killpg(int(open(os.path.join(t, "server.pid")).read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    lines = [l for l in r.stdout.decode().splitlines() if l.startswith("{")]
    m.check(lines, "the probe in the namespace failed: %s" % r.stderr.decode()[-1500:])
    out = json.loads(lines[-1])
    m.eq(out["token"], 200, "with the token")
    m.eq(out["no_token_from_loopback"], 401, "a loopback peer without the token")
    m.eq(out["no_token_metrics"], 401, "/metrics from a loopback peer without the token")
    m.eq(out["token_loopback_origin"], 403, "Origin http://localhost:8080 on a non-loopback "
         "bind (not in --allow-origin)")


# ---------------------------------------------------------------- bounds

def test_body_bounds(t):
    """A body over 17 MiB is refused 413 before the server reads it all (the client has
    sent only the headers); chunked bodies are bounded the same; the server's memory
    does not grow by the bodies it refused; a body just under the bound is read."""
    plain = memory_binary()
    s = HttpServer(t, binary=plain)
    p = s.port
    rss0 = s.rss_kb()
    # Content-Length over the bound, headers only
    sock = connect(p, timeout=10)
    sock.sendall(build("POST", "/mcp", p, dict(JSON_HEADERS, **{
        "Content-Length": str(BODY_MAX + 1)})))
    t0 = time.monotonic()
    r = parse(read_response(sock, 10))
    sock.close()
    m.eq(r.status, 413, "Content-Length MCP_LINE_MAX+1, only headers sent (%.1f s)"
         % (time.monotonic() - t0))
    m.check(is_json_error_body(r), "413 body: %r" % r.body[:200])
    # an absurd Content-Length
    for cl in (str(1 << 40), "18446744073709551615", "99999999999999999999999"):
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, **{"Content-Length": cl}), b"",
                 timeout=10)
        m.check(r.status in (413, 400), "Content-Length %s: %r" % (cl, r.status))
    # a few parallel near-limit bodies refused: memory returns
    for _ in range(3):
        r = http(p, "POST", "/mcp", JSON_HEADERS, b"[" + b" " * (BODY_MAX + 10) + b"]",
                 timeout=60)
        m.check(r.status in (413, None), "a 17 MiB+ body: %r" % r.status)
    # just under the bound: read and answered (JSON-RPC level), not 413
    big = json.dumps(modern(7, "tools/call", snippet_params("1"))).encode()
    big = big[:-1] + b" " * (BODY_MAX - len(big) - 64) + b"}"
    r = http(p, "POST", "/mcp", JSON_HEADERS, big, timeout=120)
    m.check(r.status != 413, "a body of %d bytes (under 17 MiB) was refused 413" % len(big))
    time.sleep(0.5)
    grew = (s.rss_kb() - rss0) / 1024.0
    if plain:
        m.check(grew < 80, "server RSS grew %.0f MiB after refused bodies" % grew)
    else:
        rss_note("body bounds")
    m.check(healthy(s), "not healthy after the body bounds")


def test_body_chunked(t):
    """A chunked body (no Content-Length) past 17 MiB: 413 with a JSON body, as for a
    declared length; the server's memory stays bounded."""
    plain = memory_binary()
    s = HttpServer(t, binary=plain)
    p = s.port
    rss0 = s.rss_kb()
    # chunked, 1 MiB at a time up to 24 MiB, looking for an answer after every chunk
    sock = connect(p, timeout=10)
    h = dict(JSON_HEADERS, **{"Transfer-Encoding": "chunked", "Content-Length": None})
    sock.sendall(build("POST", "/mcp", p, h))
    chunk = b"%x\r\n%s\r\n" % (MIB, b" " * MIB)
    sent, got, how = 0, b"", "the server kept reading"
    while sent < 24 * MIB and not got:
        try:
            sock.sendall(chunk)
            sent += MIB
        except OSError as x:
            how = "send failed after %d MiB: %s" % (sent // MIB, x)
            # the server may have answered and closed: its answer is still to be read
            try:
                sock.settimeout(5)
                got = sock.recv(65536)
            except OSError:
                pass
            break
        sock.setblocking(False)
        try:
            got = sock.recv(65536)
            if not got:
                how = "EOF after %d MiB" % (sent // MIB)
                break
        except BlockingIOError:
            pass
        except OSError as x:
            how = "recv failed after %d MiB: %s" % (sent // MIB, x)
            break
        finally:
            sock.settimeout(10)
    if got:
        got += read_response(sock, 5)
    sock.close()
    r = parse(got)
    m.check(r.status in (413, 411), "a chunked body past 17 MiB (%d MiB sent): no 413 but %s "
            "(%r); the contract wants 413 with a JSON body" % (sent // MIB, how, got[:120]))
    m.check(is_json_error_body(r), "413 body: %r" % r.body[:200])
    grew = (s.rss_kb() - rss0) / 1024.0
    if plain:
        m.check(grew < 40, "server RSS grew %.0f MiB for a refused chunked body" % grew)
    m.check(healthy(s), "not healthy after a chunked body")


def test_body_budget(t):
    """Twenty connections from four addresses (within the per-address limits) each send
    16 MiB of a 16 MiB body but its last byte: the server does not hold 320 MiB; past its
    documented all-connections budget (256 MiB) bodies are refused; it stays healthy."""
    plain = memory_binary()
    if not plain:
        raise m.Skip("needs an unsanitized govex (GOVEX_PLAIN): ASan's quarantine and shadow "
                     "memory make its RSS meaningless")
    s = HttpServer(t, binary=plain)
    p = s.port
    rss0 = s.rss_kb()
    size = 16 * MIB
    head = build("POST", "/mcp", p, dict(JSON_HEADERS, **{"Content-Length": str(size)}))
    payload = b" " * (size - 1)
    socks, failed = [], 0
    try:
        for k in range(20):
            try:
                c = connect(p, src="127.0.0.%d" % (20 + k % 4), timeout=20)
                c.sendall(head)
                c.sendall(payload)
                socks.append(c)
            except OSError:
                failed += 1
        time.sleep(1.0)
        grew = (s.rss_kb() - rss0) / 1024.0
        m.check(healthy(s), "not healthy while bodies are held")
        m.check(grew < 300, "server RSS grew %.0f MiB holding %d partial 16 MiB bodies "
                "(%d refused)" % (grew, len(socks), failed))
    finally:
        for c in socks:
            c.close()
    m.check(s.alive(), "the server died")


def test_header_bounds(t):
    """Headers over 16 KiB: 431 (or MHD's 413/400, documented), never served; a huge
    request line or header block does not take the server down."""
    s = HttpServer(t)
    p, body = s.port, _init_body()
    cases = {
        "one 17 KiB header": {"X-Pad": "a" * (17 * 1024)},
        "one 40 KiB header": {"X-Pad": "a" * (40 * 1024)},
        "700 small headers (>16 KiB)": {"X-P%d" % i: "b" * 20 for i in range(700)},
        "a 17 KiB Authorization": {"Authorization": "Bearer " + "c" * (17 * 1024)},
        "a 17 KiB Mcp-Session-Id": {"Mcp-Session-Id": "d" * (17 * 1024)},
    }
    for what, extra in cases.items():
        r = http(p, "POST", "/mcp", dict(JSON_HEADERS, **extra), body, timeout=20)
        m.check(r.status in (431, 413, 400), "%s: %r" % (what, r.status))
    r = http(p, "POST", "/mcp?" + "q" * (100 * 1024), JSON_HEADERS, body, timeout=20)
    m.check(r.status in (414, 431, 413, 400), "a 100 KiB request target: %r" % r.status)
    # 4 MiB of headers, streamed
    sock = connect(p, timeout=20)
    try:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % p)
        for i in range(4096):
            sock.sendall(b"X-F%d: %s\r\n" % (i, b"e" * 1000))
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.close()
    # under the bound: served
    r = http(p, "POST", "/mcp", dict(JSON_HEADERS, **{"X-Pad": "a" * 8000}), body)
    m.eq(r.status, 200, "an 8 KB header is within bounds")
    m.check(healthy(s), "not healthy after the header bounds")


# ---------------------------------------------------------------- slowloris, floods

def test_slowloris(t):
    """Slow clients from one address (127.0.0.2) cannot starve another (127.0.0.3): 300
    connections that sent half a request and then trickle or go silent; the other client
    is answered promptly; silent ones are closed by the idle timeout (within 90 s)."""
    s = HttpServer(t)
    p = s.port
    slow = []
    for i in range(300):
        try:
            c = connect(p, src="127.0.0.2", timeout=5)
            c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-A: " % p)
            slow.append(c)
        except OSError:
            break
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for c in slow[:150]:
                try:
                    c.send(b"a")
                except OSError:
                    pass
            stop.wait(1.0)
    th = threading.Thread(target=trickle, daemon=True)
    th.start()
    try:
        for _ in range(5):
            t0 = time.monotonic()
            r = http(p, "POST", "/mcp", JSON_HEADERS, json.dumps(
                modern(1, "tools/list")).encode(), src="127.0.0.3", timeout=10)
            el = time.monotonic() - t0
            m.eq(r.status, 200, "another client while %d slow connections are open" % len(slow))
            m.check(el < 2.0, "another client waited %.2f s behind slow connections" % el)
            time.sleep(0.5)
        # the silent half is closed by the server's idle timeout
        silent = slow[150:]

        def closed(c):
            c.setblocking(False)
            try:
                c.recv(4096)            # EOF or the server's answer: it let go
                return True
            except BlockingIOError:
                return False
            except OSError:
                return True
        t0 = time.monotonic()
        left = wait_for(lambda: all(closed(c) for c in silent), 90, step=1.0)
        m.check(left, "silent half-requests still open %.0f s later (no idle timeout)"
                % (time.monotonic() - t0))
    finally:
        stop.set()
        th.join(5)
        for c in slow:
            c.close()
    m.check(s.alive(), "the server died")


def test_connection_flood(t):
    """One address opens 2,000 connections (idle, complete requests never sent): the
    per-address limit keeps another address served; the flooder's excess connections
    are refused or closed, not queued forever; the server survives and its fd count
    returns."""
    s = HttpServer(t)
    p = s.port
    fds0 = len(os.listdir("/proc/%d/fd" % s.p.pid))
    conns, refused, t0 = [], 0, time.monotonic()
    for i in range(2000):
        if time.monotonic() - t0 > 20 or refused > 50:
            break                   # a full accept queue: connects time out one by one
        try:
            c = connect(p, src="127.0.0.4", timeout=1)
            conns.append(c)
        except OSError:
            refused += 1
    try:
        time.sleep(0.5)
        t0 = time.monotonic()
        r = http(p, "POST", "/mcp", JSON_HEADERS, json.dumps(modern(1, "tools/list")).encode(),
                 src="127.0.0.5", timeout=10)
        m.eq(r.status, 200, "another address while one holds %d connections" % len(conns))
        m.check(time.monotonic() - t0 < 2.0, "another address waited %.2f s"
                % (time.monotonic() - t0))
        # the flooder itself: a request on a fresh connection is refused (429/503/closed)
        r = http(p, "POST", "/mcp", JSON_HEADERS, json.dumps(modern(1, "tools/list")).encode(),
                 src="127.0.0.4", timeout=5)
        held = len(os.listdir("/proc/%d/fd" % s.p.pid)) - fds0
        m.check(held < 1500, "the server holds %d descriptors for one address's %d idle "
                "connections (no per-IP limit)" % (held, len(conns)))
    finally:
        for c in conns:
            c.close()
    time.sleep(1.0)
    m.check(healthy(s), "not healthy after the flood")
    fds = len(os.listdir("/proc/%d/fd" % s.p.pid))
    m.check(fds - fds0 < 20, "descriptors went from %d to %d after the flood ended"
            % (fds0, fds))


# ---------------------------------------------------------------- 429

def _call_thread(port, msg, out, key, src=None, timeout=90):
    def go():
        try:
            out[key] = post(port, msg, src=src, timeout=timeout)
        except Exception as e:      # noqa: BLE001 -- reported by the caller
            out[key] = e
    th = threading.Thread(target=go, daemon=True)
    th.start()
    return th


def test_429_queue_bound(t):
    """--max-concurrent 1, the default queue (64 calls per running slot for one client):
    one call holds the slot, 70 more come at once from one client (stateless, loopback,
    from four source addresses so that libmicrohttpd's per-address connection limit is
    not what refuses them): 64 wait, the excess get 429 with Retry-After and a JSON body;
    a refused call never runs; every accepted call completes; afterwards calls are
    accepted again."""
    s = HttpServer(t, "--max-concurrent", "1")
    out, ths = {}, []
    first = os.path.join(t, "ran0")
    code0 = "import time\nopen(%r, 'w').close()\ntime.sleep(4)\n0" % first
    ths.append(_call_thread(s.port, modern(0, "tools/call", snippet_params(code0)), out, 0))
    deadline = time.monotonic() + 30
    while not os.path.exists(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(1, 71):
        f = os.path.join(t, "ran%d" % i)
        code = "open(%r, 'w').close()\n%d" % (f, i)
        ths.append(_call_thread(s.port, modern(i, "tools/call", snippet_params(code)), out, i,
                                src="127.0.0.%d" % (2 + i % 4), timeout=180))
    for th in ths:
        th.join(180)
    bad = {k: v for k, v in out.items() if not isinstance(v, Resp)}
    m.check(not bad, "requests failed at the client: %r" % bad)
    refused = [i for i, r in out.items() if r.status == 429]
    served = [i for i, r in out.items() if r.status == 200]
    m.eq(sorted(refused + served), list(range(71)), "every call is 200 or 429 (%r)"
         % {i: r.status for i, r in out.items()})
    m.eq(len(refused), 6, "1 running + 64 waiting of 71: refused (statuses %r)"
         % sorted(r.status for r in out.values()))
    for i in refused:
        r = out[i]
        m.check(retry_after_ok(r.h("retry-after")), "429 without a valid Retry-After: %r"
                % r.headers)
        m.check(is_json_error_body(r), "429 body: %r" % r.body[:200])
        m.check(not os.path.exists(os.path.join(t, "ran%d" % i)),
                "call %d was refused 429 but its code ran" % i)
    for i in served:
        m.eq(value_of(out[i].response_to(i)), i, "call %d's value" % i)
    r = post(s.port, modern(99, "tools/call", snippet_params("99")))
    m.eq(r.status, 200, "a call after the burst")
    m.eq(value_of(r.response_to(99)), 99, "value after the burst")


def test_429_rate_per_address(t):
    """--rate 5: a burst from 127.0.0.6 is cut with 429 + Retry-After; X-Forwarded-For and
    Forwarded do not make a new client, nor does another loopback address; after
    Retry-After the first is served again."""
    s = HttpServer(t, rate="5")
    body = json.dumps(modern(1, "tools/list")).encode()
    codes, first429 = [], None
    for i in range(80):
        fwd = {"X-Forwarded-For": "10.9.%d.%d" % (i // 200, i % 200),
               "Forwarded": "for=10.8.0.%d" % (i % 250), "X-Real-IP": "10.7.0.%d" % i}
        r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, **fwd), body, src="127.0.0.6")
        codes.append(r.status)
        if r.status == 429 and first429 is None:
            first429 = r
    m.check(first429 is not None, "80 requests at once on --rate 5 (forwarding headers "
            "varied): none refused: %r" % codes)
    m.check(codes.count(200) <= 40, "%d of 80 served at --rate 5" % codes.count(200))
    ra = first429.h("retry-after")
    m.check(retry_after_ok(ra), "429 Retry-After %r" % ra)
    m.check(is_json_error_body(first429), "429 body %r" % first429.body[:200])
    r = http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.0.7")
    m.eq(r.status, 429, "another loopback address is the same client (127.0.0.0/8 is one)")
    wait = min(int(ra) if ra and ra.strip().isdigit() else 2, 5)
    time.sleep(wait + 0.3)
    r = http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.0.6")
    m.eq(r.status, 200, "the limited address after Retry-After (%s s)" % ra)


# ---------------------------------------------------------------- sessions

def test_rate_loopback_one_client(t):
    """--rate 2 (issue 23, item 3): 20 pings from one address get mostly 429, and so do 20
    pings from 127.0.1.1 ... 127.0.1.20 (any local process can bind a 127/8 source, and a
    loopback server needs no token: all of 127.0.0.0/8 is one client).  On [::1] the rate
    holds too."""
    s = HttpServer(t, rate="2")
    body = json.dumps(modern(1, "tools/list")).encode()
    one = [http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.0.1").status
           for _ in range(20)]
    m.check(one.count(429) >= 12, "20 pings from 127.0.0.1 at --rate 2: %r" % one)
    time.sleep(2.5)
    many = [http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.1.%d" % i).status
            for i in range(1, 21)]
    m.check(many.count(429) >= 12, "20 pings from 127.0.1.1 ... 127.0.1.20 at --rate 2: "
            "each address a client of its own? %r" % many)
    s6 = HttpServer(t, rate="2", addr="[::1]:0")
    v6 = [http(s6.port, "POST", "/mcp", dict(JSON_HEADERS, Host="[::1]:%d" % s6.port), body,
               host="::1").status for _ in range(20)]
    m.check(v6.count(429) >= 12 and 200 in v6, "20 pings on [::1] at --rate 2: %r" % v6)


def test_session_ids(t):
    """Mcp-Session-Id: visible ASCII, at least 128 random bits (22+ base64 or 32+ hex
    characters), never repeated, no shared structure between consecutive ids."""
    s = HttpServer(t)
    ids = [Session(s.port).id for _ in range(24)]
    m.eq(len(set(ids)), len(ids), "distinct session ids")
    for i in ids:
        m.check(all(0x21 <= ord(ch) <= 0x7e for ch in i), "session id %r not visible ASCII" % i)
        hexish = re.fullmatch(r"[0-9a-fA-F-]+", i) is not None
        bits = len(i.replace("-", "")) * (4 if hexish else 6)
        m.check(bits >= 128, "session id %r carries < 128 bits (%d)" % (i, bits))
    pre = os.path.commonprefix(ids)
    m.check(len(pre) <= 3, "session ids share a prefix %r: %r" % (pre, ids[:4]))
    m.check(len(set(len(i) for i in ids)) == 1, "session ids vary in length: %r" % ids[:6])


def test_session_fixation(t):
    """An initialize carrying an attacker-chosen Mcp-Session-Id never makes that id a
    session; the chosen id is 404 afterwards; the id the server returned differs."""
    s = HttpServer(t)
    p = s.port
    chosen = "attacker-chosen-0123456789abcdef0123456789"
    r = post(p, req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "f", "version": "1"}}),
             session=chosen)
    if r.status == 200:
        got = r.h("mcp-session-id")
        m.check(got and got != chosen, "the server adopted the client's session id %r" % got)
    else:
        m.check(r.status in (400, 404), "initialize with a chosen id: %r" % r.status)
    r = post(p, req(2, "tools/list"), session=chosen, version=LEGACY)
    m.eq(r.status, 404, "the attacker-chosen id afterwards")
    # a victim's live id reused in an initialize does not reset or take over the victim
    v = Session(p)
    r = post(p, req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                      "clientInfo": {"name": "evil", "version": "1"}}),
             session=v.id)
    if r.status == 200 and "result" in r.response_to(1):
        m.check(r.h("mcp-session-id") != v.id, "re-initialize handed out the victim's id")
    _, lst = v.rpc("tools/list")
    m.check("result" in lst, "the victim's session after another initialize: %r" % lst)


def test_session_rules(t):
    """After initialize: no Mcp-Session-Id → 400; unknown → 404; DELETE ends it (404
    after); DELETE of an unknown id does not end others; an unsupported
    MCP-Protocol-Version → 400; with a token the session id alone is no credential."""
    s = HttpServer(t, token=TOKEN)
    p = s.port
    a = Session(p, token=TOKEN)
    b = Session(p, token=TOKEN)
    r = post(p, req(3, "tools/list"), token=TOKEN, version=LEGACY)
    m.eq(r.status, 400, "no session id after initialize")
    for bogus in ("nope", a.id[:-1], a.id + "x", a.id.upper() if a.id.upper() != a.id
                  else a.id.lower(), a.id + "," + b.id):
        r = post(p, req(3, "tools/list"), token=TOKEN, session=bogus, version=LEGACY)
        m.check(r.status in (404, 400), "session id %r: %r" % (bogus, r.status))
    for v in ("1999-01-01", "2025-11-25x", "2026-07-28; 2025-11-25"):
        r = a.post(req(4, "tools/list"), extra={"MCP-Protocol-Version": v})
        m.eq(r.status, 400, "MCP-Protocol-Version %r" % v)
    # the session id without the token
    r = post(p, req(5, "tools/list"), session=a.id, version=LEGACY)
    m.eq(r.status, 401, "a valid session id without the token")
    r = http(p, "DELETE", "/mcp", {"Mcp-Session-Id": a.id})
    m.eq(r.status, 401, "DELETE of a session without the token")
    _, lst = a.rpc("tools/list")
    m.check("result" in lst, "session a after unauthenticated DELETE: %r" % lst)
    # DELETE of unknown ids leaves others alone
    r = http(p, "DELETE", "/mcp", {"Authorization": "Bearer " + TOKEN,
                                   "Mcp-Session-Id": "unknown-session"})
    m.check(r.status in (404, 400), "DELETE unknown: %r" % r.status)
    r = http(p, "DELETE", "/mcp", {"Authorization": "Bearer " + TOKEN,
                                   "Mcp-Session-Id": a.id})
    m.check(r.status in (200, 202, 204), "DELETE a: %r" % r.status)
    r = a.post(req(6, "tools/list"))
    m.eq(r.status, 404, "session a after DELETE")
    _, lst = b.rpc("tools/list")
    m.check("result" in lst, "session b after a's DELETE: %r" % lst)
    m.check(healthy(s), "not healthy")


def test_session_flood_bounded(t):
    """5,000 initializes (never closed) from one client: the server keeps a bounded
    number of sessions (some refused or the oldest expired), its memory stays bounded,
    and it still serves."""
    plain = memory_binary()
    s = HttpServer(t, binary=plain)
    rss0 = s.rss_kb()
    body = _init_body()
    ids, codes = [], {}
    for i in range(5000):
        r = http(s.port, "POST", "/mcp", JSON_HEADERS, body, timeout=10)
        codes[r.status] = codes.get(r.status, 0) + 1
        if r.status == 200 and r.h("mcp-session-id"):
            ids.append(r.h("mcp-session-id"))
    live = 0
    for sid in ids[:50]:
        r = post(s.port, req(2, "tools/list"), session=sid, version=LEGACY)
        live += r.status == 200
    grew = (s.rss_kb() - rss0) / 1024.0
    m.check(healthy(s), "not healthy after 5,000 sessions")
    m.check(len(ids) < 5000 or live < 50,
            "5,000 sessions made and the first 50 all still live (codes %r): no bound"
            % codes)
    if plain:
        m.check(grew < 64, "server RSS grew %.0f MiB for %d sessions" % (grew, len(ids)))
    else:
        rss_note("session flood")


def test_session_lockout(t):
    """One address, within the default rate (50/s, bursts of 100), makes sessions for 30 s
    and never ends them: another address can still start a session.  (The contract bounds
    sessions and rates per client address; a bound that one client can fill for everyone
    turns it into a lock-out of every legacy client.)"""
    s = HttpServer(t, rate=None)
    body = _init_body()
    codes, t0 = {}, time.monotonic()
    while time.monotonic() - t0 < 30:
        r = http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.0.30")
        codes[r.status] = codes.get(r.status, 0) + 1
        if r.status == 503:
            break
        time.sleep(0.018 if r.status == 200 else 0.05)
    # all of loopback is one client for the rate (issue 23): the new client waits out
    # the shared bucket's Retry-After; what is tested is the session table's bound
    time.sleep(1.5)
    r = http(s.port, "POST", "/mcp", JSON_HEADERS, body, src="127.0.0.31")
    m.eq(r.status, 200, "a new client's initialize after one address made %d sessions in "
         "%.0f s within the rate limit (%r)" % (codes.get(200, 0), time.monotonic() - t0, codes))


# ---------------------------------------------------------------- cross-client isolation

ISO_CODE = ("import time, sys\nfor i in range(5):\n    print(%r + str(i), flush=True)\n"
            "    print(%r + str(i), file=sys.stderr, flush=True)\n    time.sleep(0.1)\n%r")


def _sse_lines(r):
    """The run's output lines (loggers stdout and stderr) and progress tokens in R."""
    out = []
    for msg in r.messages():
        if msg.get("method") == "notifications/message" and \
                msg["params"].get("logger") in ("stdout", "stderr"):
            out.append(str(msg["params"].get("data")))
        elif msg.get("method") == "notifications/progress":
            out.append("progress:" + str(msg["params"].get("progressToken")))
    return out


def test_isolation_sessions(t):
    """Two sessions, same JSON-RPC ids, same progress token, at once: each gets its own
    result; only a session that set a log level gets log lines, and only its own; a
    notifications/cancelled from B naming A's request id does not cancel A's call."""
    s = HttpServer(t, "--max-concurrent", "4")
    a, b = Session(s.port, name="A"), Session(s.port, name="B")
    a.rpc("logging/setLevel", {"level": "info"})
    for rnd in range(4):
        out = {}
        pa = snippet_params(ISO_CODE % ("A-out-", "A-err-", "A%d" % rnd))
        pb = snippet_params(ISO_CODE % ("B-out-", "B-err-", "B%d" % rnd))
        pa["_meta"] = {"progressToken": "same"}
        pb["_meta"] = {"progressToken": "same"}
        for who, c, prm in (("A", a, pa), ("B", b, pb)):
            def go(who=who, c=c, prm=prm):
                out[who] = c.post(req(7, "tools/call", prm),
                                  extra={"Accept": "text/event-stream, application/json"})
            th = threading.Thread(target=go, daemon=True)
            th.start()
            out["th" + who] = th
        out["thA"].join(60)
        out["thB"].join(60)
        ra, rb = out["A"], out["B"]
        m.eq((ra.status, rb.status), (200, 200), "statuses")
        m.eq(value_of(ra.response_to(7)), "A%d" % rnd, "A's result (round %d)" % rnd)
        m.eq(value_of(rb.response_to(7)), "B%d" % rnd, "B's result (round %d)" % rnd)
        la, lb = _sse_lines(ra), _sse_lines(rb)
        m.check(not [x for x in la if x.startswith("B-")], "B's output reached A: %r" % la)
        m.check(not [x for x in lb if x.startswith(("A-", "B-"))],
                "log lines reached B, which set no level: %r" % lb)
        m.check([x for x in la if x.startswith("A-out-")],
                "A set level info and got none of its lines: %r" % la)
    # cross-session cancel
    pidf = os.path.join(t, "pidA")
    code = ("import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(1.5)\n'A'"
            % pidf)
    out = {}
    th = threading.Thread(target=lambda: out.setdefault(
        "A", a.post(req(9, "tools/call", snippet_params(code)))), daemon=True)
    th.start()
    m.check(wait_for(lambda: os.path.exists(pidf), 15), "A's run never started")
    r = b.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 9, "reason": "hostile"}})
    m.check(r.status in (202, 200, 400, 404), "B's cancel: %r" % r.status)
    # and a stateless one (no session), in both eras' shapes
    for params in ({"requestId": 9}, {"requestId": 9, "_meta": m.meta()}):
        r = post(s.port, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": params})
        m.check(r.status in (202, 200, 400, 404), "a stateless cancel: %r" % r.status)
    th.join(30)
    m.eq(out["A"].status, 200, "A's call after B's cancel")
    m.eq(value_of(out["A"].response_to(9)), "A", "B cancelled A's call")


def test_isolation_stateless(t):
    """Stateless 2026-07-28: 8 clients at once, each with id 1 and logLevel info, each
    printing its own tag: every response and every log line is the client's own."""
    s = HttpServer(t, "--max-concurrent", "4")
    for rnd in range(3):
        out, ths = {}, []
        for k in range(8):
            tag = "C%d-" % k
            msg = modern(1, "tools/call", snippet_params(ISO_CODE % (tag, tag, tag + "v")),
                         **{"io.modelcontextprotocol/logLevel": "info", "progressToken": 1})
            ths.append(_call_thread(s.port, msg, out, k))
        for th in ths:
            th.join(90)
        for k in range(8):
            r = out.get(k)
            m.check(isinstance(r, Resp) and r.status == 200, "client %d: %r" % (k, r))
            m.eq(value_of(r.response_to(1)), "C%d-v" % k, "client %d's result" % k)
            lines = [x for x in _sse_lines(r) if not x.startswith("progress:")]
            other = [x for x in lines if not x.startswith("C%d-" % k)]
            m.check(not other, "client %d got others' lines: %r" % (k, other))
            summaries = [x for x in r.messages() if x.get("method") == "notifications/message"
                         and x["params"].get("logger") not in ("stdout", "stderr")]
            m.check(len(summaries) <= 1, "client %d got %d call summaries for one call: %r"
                    % (k, len(summaries), summaries))
    m.check(healthy(s), "not healthy")


def test_delete_during_calls(t):
    """DELETE of a session while four of its calls stream SSE (and a fifth waits in the
    queue): every client gets an answer or a close within seconds, the runs end, other
    sessions are untouched, the server stays healthy (no sanitizer report)."""
    s = HttpServer(t, "--max-concurrent", "4")
    a, b = Session(s.port, name="A"), Session(s.port, name="B")
    a.rpc("logging/setLevel", {"level": "debug"})
    name = marker()
    code = marked(name, "import time\nfor i in range(100):\n    print('l', i, flush=True)\n"
                  "    time.sleep(0.05)\n'done'")
    out, ths = {}, []
    for k in range(5):
        def go(k=k):
            try:
                out[k] = a.post(req(k + 1, "tools/call", snippet_params(code, timeout_ms=4000)),
                                extra={"Accept": "text/event-stream"}, timeout=20)
            except Exception as x:      # noqa: BLE001 -- reported below
                out[k] = x
        th = threading.Thread(target=go, daemon=True)
        th.start()
        ths.append(th)
    try:
        m.check(wait_for(lambda: len(procs_with_comm(name)) >= 4, 15), "calls never started")
        time.sleep(0.3)
        r = http(s.port, "DELETE", "/mcp", {"Mcp-Session-Id": a.id})
        m.check(r.status in (200, 202, 204), "DELETE: %r" % r.status)
        t0 = time.monotonic()
        for th in ths:
            th.join(max(0.1, 8 - (time.monotonic() - t0)))
        m.check(not any(th.is_alive() for th in ths), "clients still waiting 8 s after their "
                "session was deleted: %r" % {k: v for k, v in out.items()})
        m.check(wait_for(lambda: not procs_with_comm(name), 5),
                "runs of the deleted session still alive 5 s later")
        _, lst = b.rpc("tools/list")
        m.check("result" in lst, "session B after A's DELETE: %r" % lst)
    finally:
        kill_comm(name)
    m.check(healthy(s), "not healthy after DELETE during calls")


def test_cancelled_requests_end(t):
    """A call cancelled by its own session (notifications/cancelled) gets no JSON-RPC
    reply, but its HTTP exchange must still end (a response or a close) within seconds;
    otherwise each cancelled POST is a connection the server holds for ever (waiting
    requests are exempt from the idle timeout), with no call to count against the queue:
    a client fills the per-address and then the total connection limits that way."""
    s = HttpServer(t, "--max-concurrent", "8")
    a = Session(s.port, name="A")
    name = marker()
    code = marked(name, "import time\ntime.sleep(30)\n'done'")
    fds0 = len(os.listdir("/proc/%d/fd" % s.p.pid))
    out, ths = {}, []
    for k in range(8):
        accept = "text/event-stream" if k % 2 else "application/json"
        def go(k=k, accept=accept):
            t0 = time.monotonic()
            try:
                r = a.post(req(k + 1, "tools/call", snippet_params(code)),
                           extra={"Accept": accept}, src="127.0.0.40", timeout=25)
                out[k] = ("ended", r.status, time.monotonic() - t0)
            except m.Failure:
                out[k] = ("held", None, time.monotonic() - t0)
        th = threading.Thread(target=go, daemon=True)
        th.start()
        ths.append(th)
    try:
        m.check(wait_for(lambda: len(procs_with_comm(name)) >= 8, 20), "calls never started")
        for k in range(8):
            r = a.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": k + 1, "reason": "test"}})
            m.check(r.status in (200, 202), "cancel %d: %r" % (k + 1, r.status))
        m.check(wait_for(lambda: not procs_with_comm(name), 5), "cancelled runs still alive")
        t0 = time.monotonic()
        for th in ths:
            th.join(max(0.1, 6 - (time.monotonic() - t0)))
        held = [k for k, th in enumerate(ths) if th.is_alive()]
        fds = len(os.listdir("/proc/%d/fd" % s.p.pid))
        m.check(not held, "%d of 8 cancelled requests (JSON and SSE) still open 6 s after "
                "their cancellation, the runs gone (server descriptors %d -> %d)"
                % (len(held), fds0, fds))
    finally:
        kill_comm(name)
    m.check(healthy(s), "not healthy")


# ---------------------------------------------------------------- SSE exhaustion

STALL = ("for i in range(4000):\n    print('z' * 60, flush=True)\nimport time\n"
         "time.sleep(30)\n")


def test_sse_stalled_readers(t):
    """Eight clients accept SSE, ask for log lines, and never read while their calls
    print 240 KB and sleep: each call's 3 s timeout is still enforced (its process is gone
    by 8 s) and another client is answered meanwhile."""
    s = HttpServer(t, "--max-concurrent", "8")
    name = marker()
    socks = []
    try:
        for k in range(8):
            msg = modern(k, "tools/call", snippet_params(marked(name, STALL), timeout_ms=3000),
                         **{"io.modelcontextprotocol/logLevel": "debug"})
            body = json.dumps(msg).encode()
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.settimeout(10)
            c.bind(("127.0.0.8", 0))
            c.connect(("127.0.0.1", s.port))
            c.sendall(build("POST", "/mcp", s.port, dict(JSON_HEADERS, **{
                "Accept": "text/event-stream, application/json"}), body))
            socks.append(c)
        m.check(wait_for(lambda: procs_with_comm(name), 15), "the calls never started")
        t0 = time.monotonic()
        r = http(s.port, "POST", "/mcp", JSON_HEADERS,
                 json.dumps(modern(50, "tools/list")).encode(), src="127.0.0.9", timeout=10)
        m.eq(r.status, 200, "another client while 8 SSE readers stall")
        m.check(time.monotonic() - t0 < 2.0, "another client waited %.2f s"
                % (time.monotonic() - t0))
        time.sleep(8.0)
        alive = procs_with_comm(name)
        m.check(not alive, "runs alive 8 s into a 3 s timeout while their SSE clients did "
                "not read (pids %r)" % alive)
    finally:
        for c in socks:
            c.close()
        kill_comm(name)
    time.sleep(0.5)
    m.check(healthy(s), "not healthy after stalled SSE readers")


def test_sse_framing_injection(t):
    """A run whose output carries SSE framing (CR, LF, CRLF, "data:" lines, a forged reply
    to its own request id) cannot end its event early or forge the reply: the client parses
    the stream and gets the run's real value, and no extra message."""
    s = HttpServer(t)
    forged = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "text", "text": "FORGED"}], "structuredContent": {"value": "FORGED"}}})
    code = ("import sys\nf = %r\n"
            "sys.stdout.write('a\\r\\n\\r\\ndata: ' + f + '\\r\\n\\r\\n')\n"
            "sys.stdout.write('b\\rdata: ' + f + '\\r\\r')\n"
            "sys.stdout.write('\\n\\ndata: ' + f + '\\n\\n')\n"
            "sys.stderr.write('event: message\\rdata: ' + f + '\\n\\n')\n"
            "sys.stdout.flush()\n'real'" % forged)
    for extra in ({"io.modelcontextprotocol/logLevel": "debug"}, {}):
        msg = modern(1, "tools/call", snippet_params(code), **extra)
        r = post(s.port, msg, extra={"Accept": "text/event-stream"})
        m.eq(r.status, 200, "status")
        replies = [x for x in r.messages() if "method" not in x]
        m.eq(len(replies), 1, "replies in the stream: %r" % [str(x)[:200] for x in replies])
        m.eq(value_of(replies[0]), "real", "the run's value (forged in its output: FORGED)")
    m.check(healthy(s), "not healthy")


def test_sse_abandoned(t):
    """Twelve SSE calls printing log lines; every client resets its connection mid-stream:
    the server survives (no write to a gone connection crashes it), the pool frees (new
    calls run), nothing of those runs lingers past their timeout."""
    s = HttpServer(t, "--max-concurrent", "4")
    name = marker()
    code = marked(name, "import time\nfor i in range(40):\n    print('line', i, flush=True)\n"
                  "    time.sleep(0.05)\n'done'")
    try:
        for wave in range(2):
            socks = []
            for k in range(12):
                msg = modern(k, "tools/call", snippet_params(code, timeout_ms=4000),
                             **{"io.modelcontextprotocol/logLevel": "info"})
                c = connect(s.port, src="127.0.0.10")
                c.sendall(build("POST", "/mcp", s.port, dict(JSON_HEADERS, **{
                    "Accept": "text/event-stream"}), json.dumps(msg).encode()))
                socks.append(c)
            time.sleep(0.4)
            for c in socks:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
            time.sleep(0.3)
            m.check(s.alive(), "the server died after abandoned SSE streams (wave %d): %s"
                    % (wave, s.stderr()[-800:]))
        r = post(s.port, modern(77, "tools/call", snippet_params("77")), timeout=60)
        m.eq(r.status, 200, "a call after abandoned streams")
        m.eq(value_of(r.response_to(77)), 77, "its value")
        m.check(wait_for(lambda: not procs_with_comm(name), 15),
                "runs of abandoned streams still alive 15 s later")
    finally:
        kill_comm(name)
    m.check(healthy(s), "not healthy after abandoned streams")
    m.eq(s.stop(), 0, "exit status after SIGTERM")


def test_hangup_races(t):
    """Clients that vanish (RST or FIN) at random moments around their call's end, JSON
    and SSE, sessions and stateless, 160 times from 8 threads: the server survives, a
    sanitizer build reports nothing, and calls still work."""
    s = HttpServer(t, "--max-concurrent", "4")
    sess = Session(s.port)
    sess.rpc("logging/setLevel", {"level": "debug"})
    seed = random.randrange(1 << 30)
    errors = []

    def worker(w):
        rng = random.Random(seed + w)
        for i in range(20):
            code = "import time\nprint('x', flush=True)\ntime.sleep(%.3f)\n%d" % (
                rng.uniform(0.0, 0.25), i)
            if rng.random() < 0.5:
                msg = modern(i, "tools/call", snippet_params(code),
                             **{"io.modelcontextprotocol/logLevel": "debug"})
                hs = dict(JSON_HEADERS)
            else:
                msg = req(1000 * w + i, "tools/call", snippet_params(code))
                hs = mcp_headers(session=sess.id, version=LEGACY)
            if rng.random() < 0.5:
                hs["Accept"] = "text/event-stream"
            try:
                c = connect(s.port, src="127.0.0.%d" % (60 + w), timeout=10)
                c.sendall(build("POST", "/mcp", s.port, hs, json.dumps(msg).encode()))
                time.sleep(rng.uniform(0.0, 0.4))
                if rng.random() < 0.5:
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    c.shutdown(socket.SHUT_WR)
                c.close()
            except OSError as x:
                errors.append("worker %d case %d: %s" % (w, i, x))
    ths = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(120)
    time.sleep(1.0)
    m.check(s.alive(), "the server died (seed %d): %s" % (seed, s.stderr()[-1500:]))
    m.check(healthy(s), "not healthy after hang-up races (seed %d)" % seed)
    r = post(s.port, modern(5, "tools/call", snippet_params("6*7")))
    m.eq(value_of(r.response_to(5)), 42, "a call after the races (seed %d)" % seed)
    m.check(len(errors) < 20, "client-side errors: %r" % errors[:5])
    m.eq(s.stop(), 0, "exit status after SIGTERM (seed %d)" % seed)


# ---------------------------------------------------------------- malformed HTTP / JSON-RPC

MALFORMED_HTTP = [
    b"\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"POST /mcp HTTP/9.9\r\nHost: h\r\n\r\n",
    b"POST /mcp\r\n\r\n",
    b"POST  /mcp  HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n{}{}{",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked"
    b"\r\nContent-Type: application/json\r\n\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"ffffffffffffffff\r\nab\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\x00b\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n X-Folded: y\r\n\r\n",
    b"POST /mcp HTTP/1.1\nHost: 127.0.0.1\nContent-Length: 2\n\n{}",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}GET /x HTTP/1.1\r\n\r\n",
    b"FOO /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}",
    b"TRACE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /../../../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"POST /mcp HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,   # a TLS ClientHello
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    bytes(range(256)),
]


def test_malformed_http(t):
    """Malformed and hostile requests: a 4xx (or 405 for methods) or a closed connection,
    never a 2xx served from them, never a 5xx, never /etc/passwd; the server stays up."""
    s = HttpServer(t)
    p = s.port
    for i, raw in enumerate(MALFORMED_HTTP):
        raw = raw.replace(b"Host: 127.0.0.1\r", b"Host: 127.0.0.1:%d\r" % p)
        try:
            c = connect(p, timeout=15)
            try:
                c.sendall(raw)
            except OSError:
                pass
            r = parse(read_response(c, 5))     # no Connection: close: keep-alive is fine
            c.close()
        except ConnectionRefusedError:
            raise m.Failure("the server stopped listening before request %d" % i)
        m.check(r.status is None or 400 <= r.status < 500 or r.status in (501, 505),
                "malformed request %d %r: %r" % (i, raw[:60], r))
        m.check(b"root:x:0:0" not in r.raw, "request %d served /etc/passwd" % i)
        m.check(s.alive(), "the server died on malformed request %d %r" % (i, raw[:60]))
    # request smuggling: after an ambiguous body length (RFC 9112 6.3: an unrecoverable
    # error), the bytes after the shorter reading are not served as a second request
    smug = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % p
    base = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" % p)
    for what, hdrs, body in (
            ("two Content-Lengths", b"Content-Length: 2\r\nContent-Length: 60\r\n", b"{}"),
            ("Content-Length and chunked", b"Content-Length: 60\r\nTransfer-Encoding: chunked"
             b"\r\n", b"0\r\n\r\n"),
            ("Content-Length with a sign", b"Content-Length: +2\r\n", b"{}"),
            ("obfuscated chunked", b"Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n",
             b"0\r\n\r\n")):
        c = connect(p, timeout=15)
        c.sendall(base + hdrs + b"\r\n" + body + smug)
        first = read_response(c, 5)
        second = read_response(c, 2)
        c.close()
        m.check(b"govex_runs_total" not in first + second,
                "%s: the request smuggled in its body was served (GET /metrics answered): "
                "%r" % (what, (first + second)[:400]))
        m.check(not first.startswith(b"HTTP/1.1 2"), "%s: served %r" % (what, first[:120]))
    m.check(healthy(s), "not healthy after malformed requests")


def _mutate(rng, b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and b:
            del b[rng.randrange(len(b)):]
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:
            pos = rng.randrange(len(b) + 1)
            b[pos:pos] = rng.choice([b"{", b"[", b"\"", b"\\u0000", b"\xff\xfe", b"1e999999",
                                     b"-0", b"null", b",", b"}", b"]", b"\\ud800", b"\x00"])
        elif op == 3 and b:
            i = rng.randrange(len(b))
            b[i:i] = b[i:i + rng.randint(1, 40)] * rng.randint(1, 50)
        elif op == 4 and b:
            i, j = sorted(rng.randrange(len(b)) for _ in range(2))
            del b[i:j]
        else:
            b += rng.choice([b"\n{}", b" ", b"\x00", b"]"])
    return bytes(b)


FUZZ_SEEDS = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": m.meta()}},
    {"jsonrpc": "2.0", "id": "x", "method": "tools/call",
     "params": dict(snippet_params("1+1"), _meta=m.meta())},
    {"jsonrpc": "2.0", "id": 2, "method": "initialize",
     "params": {"protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "f", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    {"jsonrpc": "2.0", "id": 3, "method": "ping"},
]
FIXED_BODIES = [
    b"", b"null", b"[]", b"[{}]", b"{}", b"\"str\"", b"1", b"{\"jsonrpc\":\"2.0\"}",
    b"[" + b",".join(json.dumps(x).encode() for x in FUZZ_SEEDS) + b"]",
    b"[" * 200000 + b"]" * 200000,
    b"{\"a\":" * 100000 + b"1" + b"}" * 100000,
    b"{\"jsonrpc\":\"2.0\",\"id\":" + b"9" * 5000 + b",\"method\":\"ping\"}",
    b"{\"jsonrpc\":\"2.0\",\"id\":{\"o\":1},\"method\":\"ping\"}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[1,2]}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,"
    b"\"method\":\"ping\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"\u2028\",\"method\":\"ping\"}".encode(),
    b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
]


def _fuzz_check(s, what, r):
    m.check(r.status is not None, "%s: no HTTP answer" % what)
    m.check(r.status < 500, "%s: %d %r" % (what, r.status, r.body[:300]))
    if r.status == 200:
        try:
            msgs = r.messages()
        except (ValueError, UnicodeDecodeError) as e:
            raise m.Failure("%s: a 200 whose body is not JSON-RPC (%s): %r"
                            % (what, e, r.body[:300]))
        m.check(msgs and all(isinstance(x, dict) and x.get("jsonrpc") == "2.0" for x in msgs),
                "%s: a 200 with %r" % (what, r.body[:300]))


def test_fuzz_jsonrpc(t):
    """Seeded mutations of valid messages plus fixed hostile bodies (deep nesting,
    batches, bad ids, duplicate keys, several messages in one body), stateless and within
    a session: every answer is a 4xx or a JSON-RPC message, never a 5xx or silence; the
    server stays up and still runs a call correctly."""
    seed = int(os.environ.get("GOVEX_RTH_FUZZ_SEED") or random.randrange(1 << 30))
    n = int(os.environ.get("GOVEX_RTH_FUZZ_N", "250"))
    rng = random.Random(seed)
    s = HttpServer(t)
    sess = Session(s.port)
    for i, body in enumerate(FIXED_BODIES):
        for mode in ("stateless", "session"):
            extra = ({"Mcp-Session-Id": sess.id, "MCP-Protocol-Version": LEGACY}
                     if mode == "session" else {})
            r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, **extra), body, timeout=30)
            _fuzz_check(s, "fixed body %d (%s) %r" % (i, mode, body[:50]), r)
            m.check(s.alive(), "the server died on fixed body %d %r" % (i, body[:50]))
    for i in range(n):
        body = _mutate(rng, json.dumps(rng.choice(FUZZ_SEEDS)).encode())
        mode = rng.choice(("stateless", "session"))
        extra = ({"Mcp-Session-Id": sess.id, "MCP-Protocol-Version": LEGACY}
                 if mode == "session" else {})
        if rng.random() < 0.2:
            extra["Content-Type"] = rng.choice(["text/plain", "application/json; charset=x",
                                                "", "application/json\x7f"])
        if rng.random() < 0.2:
            extra["Accept"] = rng.choice(["text/html", "*/*", "", "text/event-stream"])
        r = http(s.port, "POST", "/mcp", dict(JSON_HEADERS, **extra), body, timeout=30)
        _fuzz_check(s, "seed %d case %d (%s) %r" % (seed, i, mode, body[:80]), r)
        m.check(s.alive(), "seed %d: the server died on case %d %r" % (seed, i, body[:80]))
    r = post(s.port, modern(5, "tools/call", snippet_params("6*7")))
    m.eq(value_of(r.response_to(5)), 42, "a call after the fuzz (seed %d)" % seed)
    _, lst = sess.rpc("tools/list")
    m.check("result" in lst, "the session after the fuzz (seed %d)" % seed)
    m.check(healthy(s), "not healthy after the fuzz (seed %d)" % seed)
    m.eq(s.stop(), 0, "exit status after SIGTERM (seed %d)" % seed)


# ---------------------------------------------------------------- drain, kill

def test_sigterm_drain(t):
    """SIGTERM with a call in flight: /readyz stops being 200 at once; a new call is not
    run; the in-flight call completes with its result; exit 0.  SIGINT likewise."""
    s = HttpServer(t, "--drain-timeout", "20")
    pidf = os.path.join(t, "pid")
    code = ("import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(2.0)\n"
            "'drained'" % pidf)
    out = {}
    th = _call_thread(s.port, modern(1, "tools/call", snippet_params(code)), out, "a")
    m.check(wait_for(lambda: os.path.exists(pidf), 15), "the call never started")
    m.eq(http(s.port, "GET", "/readyz").status, 200, "readyz before SIGTERM")
    os.kill(s.p.pid, signal.SIGTERM)
    time.sleep(0.3)
    r = http(s.port, "GET", "/readyz", timeout=5)
    m.check(r.status != 200, "readyz 200 after SIGTERM (draining)")
    late = os.path.join(t, "late")
    r = post(s.port, modern(2, "tools/call", snippet_params(
        "open(%r, 'w').close()\n1" % late)), timeout=10)
    m.check(r.status != 200 or "result" not in (r.response_to(2) if r.status == 200 else {}),
            "a call sent while draining was served: %r" % r)
    th.join(30)
    ra = out.get("a")
    m.check(isinstance(ra, Resp) and ra.status == 200, "the in-flight call: %r" % (ra,))
    m.eq(value_of(ra.response_to(1)), "drained", "the in-flight call's value")
    m.eq(s.p.wait(15), 0, "exit status after SIGTERM")
    m.check(not os.path.exists(late), "a call sent while draining ran")
    # SIGINT, idle
    s2 = HttpServer(t)
    os.kill(s2.p.pid, signal.SIGINT)
    m.eq(s2.p.wait(10), 0, "exit status after SIGINT")


def test_drain_timeout(t):
    """--drain-timeout 1 with a 30 s call: exit 0 within a few seconds of SIGTERM, the
    run's process gone, and the waiting client gets an answer or a close (no hang)."""
    s = HttpServer(t, "--drain-timeout", "1")
    pidf = os.path.join(t, "pid")
    code = ("import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(30)\n"
            % pidf)
    out = {}
    th = _call_thread(s.port, modern(1, "tools/call", snippet_params(code)), out, "a",
                      timeout=20)
    m.check(wait_for(lambda: os.path.exists(pidf), 15), "the call never started")
    pid = int(open(pidf).read())
    t0 = time.monotonic()
    os.kill(s.p.pid, signal.SIGTERM)
    try:
        rc = s.p.wait(15)
    except subprocess.TimeoutExpired:
        raise m.Failure("still running 15 s after SIGTERM with --drain-timeout 1")
    el = time.monotonic() - t0
    m.eq(rc, 0, "exit status")
    m.check(el < 5.0, "exit took %.1f s with --drain-timeout 1" % el)
    m.check(wait_for(lambda: not pid_alive(pid), 2), "the run outlived the drain")
    th.join(20)
    m.check(not th.is_alive(), "the client still waits after the server exited")
    ra = out.get("a")
    m.check(not isinstance(ra, Resp) or ra.status is None or ra.status >= 200,
            "the in-flight client: %r" % (ra,))


def test_drain_stalled_reader(t):
    """SIGTERM while a client stopped reading its SSE stream (its call printed 1 MB of
    log lines): the server still exits 0 within --drain-timeout plus a few seconds."""
    s = HttpServer(t, "--drain-timeout", "2")
    name = marker()
    code = marked(name, "for i in range(16000):\n    print('y' * 60, flush=True)\n"
                  "import time\ntime.sleep(1)\n'x'")
    msg = modern(1, "tools/call", snippet_params(code, timeout_ms=4000),
                 **{"io.modelcontextprotocol/logLevel": "debug"})
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.settimeout(10)
    c.connect(("127.0.0.1", s.port))
    try:
        c.sendall(build("POST", "/mcp", s.port, dict(JSON_HEADERS, **{
            "Accept": "text/event-stream"}), json.dumps(msg).encode()))
        m.check(wait_for(lambda: procs_with_comm(name), 15), "the call never started")
        time.sleep(1.5)
        t0 = time.monotonic()
        os.kill(s.p.pid, signal.SIGTERM)
        try:
            rc = s.p.wait(12)
        except subprocess.TimeoutExpired:
            raise m.Failure("still running 12 s after SIGTERM (--drain-timeout 2) while a "
                            "client does not read its stream")
        m.eq(rc, 0, "exit status")
        m.check(time.monotonic() - t0 < 7.0, "exit took %.1f s with --drain-timeout 2"
                % (time.monotonic() - t0))
    finally:
        c.close()
        kill_comm(name)


def test_sigkill_leaves_nothing(t):
    """SIGKILL of the server process alone (restricted backend, 4 calls in flight): the
    runs' processes die with it, no cgroup of its runs is left once the slots are used
    again, no workdir is left in TMPDIR."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "escape"))
    import escapetest as e  # noqa: E402
    import test_leftovers as tl  # noqa: E402
    try:
        e.need_restricted("process_tree_kill")
    except e.g.Skip as x:
        raise m.Skip(str(x))
    os.chmod(t, 0o711)
    tmpdir, cache = os.path.join(t, "tmpdir"), os.path.join(t, "cache")
    os.mkdir(tmpdir)
    os.chmod(tmpdir, 0o777)
    os.mkdir(cache, 0o700)
    env = dict(os.environ, TMPDIR=tmpdir, XDG_CACHE_HOME=cache)
    name = marker()
    s = HttpServer(t, "--max-concurrent", "4", preset="strict", env=env)
    out, ths = {}, []
    for k in range(4):
        code = marked(name, "import time\ntime.sleep(60)\n")
        ths.append(_call_thread(s.port, modern(k, "tools/call", snippet_params(code)), out, k,
                                timeout=30))
    try:
        m.check(wait_for(lambda: len(procs_with_comm(name)) >= 4, 30),
                "the 4 runs never came up: %r %s" % (out, s.stderr()[-800:]))
        # the cgroups the runs are in (other sessions on this machine have their own)
        mine = set()
        for pid in procs_with_comm(name):
            try:
                with open("/proc/%d/cgroup" % pid) as f:
                    for line in f:
                        mine |= {part for part in line.strip().split(":", 2)[2].split("/")
                                 if part.startswith("govex.")}
            except OSError:
                pass
        m.check(mine, "the runs' govex.* cgroups could not be read from /proc")
        killed = {s.p.pid}
        os.kill(s.p.pid, signal.SIGKILL)
        s.p.wait(10)
        gone = wait_for(lambda: not procs_with_comm(name), 2.5)
        m.check(gone, "processes of the SIGKILLed server's runs alive 2.5 s later: %r"
                % procs_with_comm(name))
        for th in ths:
            th.join(10)
        # a new server and a wave of runs take the slots again
        s2 = HttpServer(t, "--max-concurrent", "10", preset="strict",
                        env=env)
        wave, wths = {}, []
        for k in range(10):
            wths.append(_call_thread(s2.port, modern(k, "tools/call",
                                                     snippet_params("import time\n"
                                                                    "time.sleep(0.3)\n1")),
                                     wave, k))
        for th in wths:
            th.join(60)
        os.kill(s2.p.pid, signal.SIGTERM)
        s2.p.wait(30)
        left = [c for c in tl._dead_run_cgroups(killed, cache) if os.path.basename(c) in mine]
        m.eq(left, [], "cgroups of the SIGKILLed server's runs (%s) left behind"
             % sorted(mine))
        m.eq(sorted(os.listdir(tmpdir)), [], "files left in TMPDIR")
    finally:
        kill_comm(name)


# ---------------------------------------------------------------- startup refusals

def _refused(t, argv, env=None, timeout=20):
    """Runs ARGV; returns (exit status, stderr), or (None, stderr) after killing it if it
    printed a listening line or outlived TIMEOUT."""
    errpath = os.path.join(t, "refused.err")
    with open(errpath, "wb") as err:
        p = subprocess.Popen(argv, cwd=t, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        end = time.monotonic() + timeout
        while p.poll() is None and time.monotonic() < end:
            if LISTEN.search(open(errpath, "rb").read().decode("utf-8", "replace")):
                break
            time.sleep(0.02)
        rc = p.poll()
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        p.stdin.close()
    return rc, open(errpath, "rb").read().decode("utf-8", "replace")


def _unshare():
    u = shutil.which("unshare")
    if not u or os.geteuid() != 0:
        raise m.Skip("feature:netns needs root and unshare(1) to bind non-loopback "
                     "addresses safely")
    r = subprocess.run([u, "-n", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise m.Skip("feature:netns unshare -n fails here")
    return [u, "-n"]


def test_non_loopback_needs_token(t):
    """Inside a private network namespace: every non-loopback ADDR (any-address spellings
    included) without --token-file is refused with exit 125 and a message, never listens;
    loopback spellings start."""
    ns = _unshare()
    for addr in ("0.0.0.0:0", "[::]:0", "[::ffff:0.0.0.0]:0", "[0:0:0:0:0:0:0:0]:0",
                 "10.255.255.1:0", "[fe80::1]:0", "[::ffff:10.1.2.3]:0", "[::0]:0"):
        rc, err = _refused(t, ns + [m.GOVEX, "mcp", "--preset", "trusted", "--http", addr])
        m.check(rc is not None, "--http %s without a token kept running: %s" % (addr, err))
        m.check(not LISTEN.search(err), "--http %s without a token listened: %s" % (addr, err))
        m.eq(rc, 125, "--http %s without a token: exit status (%s)" % (addr, err.strip()))
        m.check(err.strip(), "--http %s: refused without a message" % addr)
    # spellings that are not an IPv4, [IPv6] or localhost: never listen without a token
    for addr in ("0:0", "0x0:0", "017700000001:0", "localhost.:0", "127.1:0", "::1:0",
                 "[::1%lo]:0", ":0", "*:0"):
        rc, err = _refused(t, ns + [m.GOVEX, "mcp", "--preset", "trusted", "--http", addr])
        m.check(rc is not None and not LISTEN.search(err) or
                re.search(r"http://(127\.0\.0\.1|\[::1\]|localhost):", err),
                "--http %s without a token listened on a non-loopback address: %s"
                % (addr, err))
        if rc is not None and not LISTEN.search(err):
            m.check(rc != 0, "--http %s: exit 0 without serving" % addr)


def test_token_file_rules(t):
    """--token-file: the first line, its newline stripped; refused (125) when empty,
    shorter than 16 bytes, a symlink, writable by group or others, missing, a directory;
    accepted at 16 bytes."""
    good = "0123456789abcdef"
    cases = []
    p = os.path.join(t, "nothing")
    open(p, "w").close()
    os.chmod(p, 0o600)
    cases.append(("zero bytes", p, 125))
    cases.append(("15 bytes", write_token(t, good[:15], "short"), 125))
    cases.append(("newline only", write_token(t, "", "nl"), 125))
    cases.append(("group-writable", write_token(t, good + "xx", "gw", 0o620), 125))
    cases.append(("other-writable", write_token(t, good + "xx", "ow", 0o602), 125))
    cases.append(("world-rw 0666", write_token(t, good + "xx", "w666", 0o666), 125))
    target = write_token(t, good + "yy", "target")
    os.symlink(target, os.path.join(t, "link"))
    cases.append(("a symlink", os.path.join(t, "link"), 125))
    os.mkdir(os.path.join(t, "dir"), 0o700)
    cases.append(("a directory", os.path.join(t, "dir"), 125))
    cases.append(("missing", os.path.join(t, "missing"), 125))
    for what, path, want in cases:
        rc, err = _refused(t, [m.GOVEX, "mcp", "--preset", "trusted", "--http", "127.0.0.1:0",
                               "--token-file", path])
        m.check(not LISTEN.search(err), "token file %s: the server listened: %s" % (what, err))
        m.eq(rc, want, "token file %s: exit status (%s)" % (what, err.strip()[-300:]))
    # 16 bytes exactly, newline stripped, only the first line
    p = os.path.join(t, "ok")
    with open(p, "w") as f:
        f.write(good + "\nsecond-line-ignored\n")
    os.chmod(p, 0o600)
    s = HttpServer(t, token_file=p)
    init = req(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                 "clientInfo": {"name": "x", "version": "1"}})
    m.eq(post(s.port, init, token=good).status, 200, "the 16-byte first line is the token")
    for wrong in (good + "\\n", good + "second-line-ignored",
                  "second-line-ignored", good[:15]):
        m.eq(post(s.port, init, token=wrong).status, 401, "token %r" % wrong)


TESTS = [
    ("auth: missing, wrong, prefix, case, scheme, query, cookie -> 401; health needs none",
     test_auth_required),
    ("auth: a wrong token's refusal has one shape and one timing", test_auth_refusal_shape_and_timing),
    ("Origin: foreign -> 403, loopback and --allow-origin pass", test_origin),
    ("Host: non-loopback names -> 403 (DNS rebinding)", test_host_dns_rebinding),
    ("loopback binds ([::1], localhost, 127.0.0.2) keep the Host/Origin rules",
     test_loopback_binds),
    ("bound off loopback with a token: loopback peers and origins get no favours",
     test_non_loopback_with_token),
    ("body over 17 MiB -> 413 before it is read; chunked bounded", test_body_bounds),
    ("a chunked body over 17 MiB -> 413", test_body_chunked),
    ("bodies held at once are bounded in memory", test_body_budget),
    ("headers over 16 KiB -> 431/413/400", test_header_bounds),
    ("slowloris from one address does not starve another; idle timeout", test_slowloris),
    ("a connection flood from one address: per-IP limit", test_connection_flood),
    ("429: waiting calls bounded, Retry-After, refused calls never run", test_429_queue_bound),
    ("429: per-address rate, forwarding headers ignored", test_429_rate_per_address),
    ("429: all of 127.0.0.0/8 is one client; [::1]", test_rate_loopback_one_client),
    ("session ids: 128+ random bits", test_session_ids),
    ("session fixation: a client-chosen id never becomes a session", test_session_fixation),
    ("session rules: 400/404/DELETE/version/token", test_session_rules),
    ("session flood: bounded count and memory", test_session_flood_bounded),
    ("one address cannot take every session", test_session_lockout),
    ("isolation: two sessions, same ids, logs, progress, cancel", test_isolation_sessions),
    ("isolation: stateless clients at once", test_isolation_stateless),
    ("DELETE of a session while its calls stream", test_delete_during_calls),
    ("a cancelled request's HTTP exchange ends", test_cancelled_requests_end),
    ("SSE: stalled readers keep timeouts and do not starve others", test_sse_stalled_readers),
    ("SSE: run output cannot forge SSE events or the reply", test_sse_framing_injection),
    ("SSE: abandoned streams do not crash or leak the pool", test_sse_abandoned),
    ("clients vanishing around their call's end (races)", test_hangup_races),
    ("malformed HTTP: 4xx or close, never 2xx/5xx", test_malformed_http),
    ("JSON-RPC fuzz over HTTP", test_fuzz_jsonrpc),
    ("SIGTERM drains: readyz 503, in-flight completes, exit 0; SIGINT", test_sigterm_drain),
    ("--drain-timeout cancels what is left and exits 0", test_drain_timeout),
    ("a reader that stalls does not hold the drain past its timeout", test_drain_stalled_reader),
    ("SIGKILL leaves no process, cgroup or workdir", test_sigkill_leaves_nothing),
    ("non-loopback without a token: exit 125 (private netns)", test_non_loopback_needs_token),
    ("token file rules", test_token_file_rules),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
