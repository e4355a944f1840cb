#!/usr/bin/env python3
"""Filtered networking (network: {"allow": [...]}, issue 26): a run reaches exactly the
destinations its policy lists, only through govex's proxy, and its result says what it
reached.  Every listener is the test's own, on the host's loopback: the run (in a network
namespace of its own, whose loopback has only the proxy's listener) can reach them only
through the proxy, which is the point."""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

PROXY = ("127.0.0.1", 3128)
# The runs' time: strict's 5 s wall is a host's margin, and a guest under TCG (tests/vm)
# takes several times longer to start Python and import urllib.
ROOMY = {"wall_ms": 60000, "cpu_ms": 30000}
SCHEMA_DIR = os.path.join(g.REPO, "docs", "schema")


def schema_valid(name, doc):
    """DOC validates against docs/schema/NAME.schema.json (where jsonschema is)."""
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        return
    with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
        v = Draft202012Validator(json.load(f))
    errs = ["%s: %s" % ("/".join(str(p) for p in x.absolute_path), x.message[:200])
            for x in v.iter_errors(doc)]
    g.check(not errs, "%s does not validate: %s" % (name, errs[:5]))


class Server:
    """A TCP listener on the host's loopback: HTTP ("GET" answered 200 "hello
    PATH") or echo, counting connections and noting when each one ends."""

    def __init__(self, family=socket.AF_INET, host="127.0.0.1", http=False):
        self.s = socket.socket(family, socket.SOCK_STREAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind((host, 0))
        self.s.listen(64)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.http = http
        self.hits = 0
        self.closed_at = []
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop:
            try:
                c, _ = self.s.accept()
            except OSError:
                continue
            self.hits += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        c.settimeout(60)
        try:
            if self.http:
                data = b""
                while b"\r\n\r\n" not in data:
                    b = c.recv(4096)
                    if not b:
                        return
                    data += b
                path = data.split(b" ")[1]
                body = b"hello " + path
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close"
                          b"\r\n\r\n%s" % (len(body), body))
            else:
                while True:
                    b = c.recv(4096)
                    if not b:
                        break
                    c.sendall(b)
        except OSError:
            pass
        finally:
            self.closed_at.append(time.monotonic())
            c.close()

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.s.close()


def host_has_ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


# What runs inside: each step prints one JSON line "EGRESS {label: outcome}".
INSIDE = r'''
import errno, json, os, socket, urllib.request, urllib.error
out = {}
def note(label, fn):
    try:
        out[label] = {"ok": True, "value": fn()}
    except urllib.error.HTTPError as x:
        out[label] = {"ok": False, "http": x.code, "body": x.read().decode()}
    except urllib.error.URLError as x:
        r = x.reason
        out[label] = {"ok": False, "errno": errno.errorcode.get(getattr(r, "errno", 0) or 0),
                      "text": str(r)}
    except OSError as x:
        out[label] = {"ok": False, "errno": errno.errorcode.get(x.errno or 0), "text": str(x)}
def get(url, proxies=None):
    h = urllib.request.ProxyHandler(proxies) if proxies is not None else \
        urllib.request.ProxyHandler()
    with urllib.request.build_opener(h).open(url, timeout=10) as r:
        return [r.status, r.read().decode()]
def connect(target, payload=b"ping"):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT " + target.encode() + b" HTTP/1.1\r\nHost: " + target.encode() +
              b"\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            break
        head += b
    status = head.split(b"\r\n", 1)[0].decode()
    head, _, rest = head.partition(b"\r\n\r\n")
    if " 200 " not in status + " ":
        while True:
            b = s.recv(4096)
            if not b:
                break
            rest += b
        s.close()
        return [status, rest.decode()]
    s.sendall(payload)
    got = b""
    while len(got) < len(payload):
        b = s.recv(4096)
        if not b:
            break
        got += b
    s.close()
    return [status, got.decode()]
def direct(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
        return "connected"
    finally:
        s.close()
A, B, R, V6 = %(A)d, %(B)d, %(R)d, %(V6)d
note("urllib_allowed", lambda: get("http://127.0.0.1:%%d/ok" %% A))
note("connect_allowed", lambda: connect("127.0.0.1:%%d" %% B))
note("urllib_refused", lambda: get("http://127.0.0.2:%%d/no" %% A))
note("connect_refused", lambda: connect("127.0.0.1:%%d" %% R))
note("rebinding", lambda: connect("localhost:%%d" %% R))
note("numeric_decimal", lambda: connect("2130706433:%%d" %% B))
note("numeric_short", lambda: connect("127.1:%%d" %% B))
note("numeric_hex", lambda: connect("0x7f.0.0.1:%%d" %% B))
if V6:
    note("ipv6_allowed", lambda: connect("[::1]:%%d" %% V6))
    note("ipv6_mapped_refused", lambda: connect("[::ffff:127.0.0.1]:%%d" %% R))
note("noproxy_urllib", lambda: get("http://127.0.0.1:%%d/direct" %% A, proxies={}))
note("direct_tcp", lambda: direct("127.0.0.1", A))
note("direct_refused_port", lambda: direct("127.0.0.1", R))
note("direct_outside", lambda: direct("192.0.2.1", 80))
note("direct_v6", lambda: direct("::1", V6 or A, socket.AF_INET6))
note("dns_lookup", lambda: socket.getaddrinfo("example.com", 80))
note("netdev", lambda: sorted(ln.split(":")[0].strip() for ln in
                              open("/proc/self/net/dev").read().splitlines()[2:]))
def udp_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00"
             b"\x00\x01\x00\x01", ("192.0.2.53", 53))
    return s.recv(512).hex()
note("udp_dns", udp_dns)
def fastopen(send):
    # a port of the run's own loopback other than the proxy's, with a listener there:
    # sending with MSG_FASTOPEN would connect without connect(), past Landlock's rule
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    s = socket.socket()
    try:
        send(s, lst.getsockname())
        return "sent"
    finally:
        s.close()
        lst.close()
note("fastopen_sendto", lambda: fastopen(lambda s, a: s.sendto(b"x", 0x20000000, a)))
note("fastopen_sendmsg", lambda: fastopen(
    lambda s, a: s.sendmsg([b"x"], [], 0x20000000, a)))
note("af_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).fileno())
note("af_netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).fileno())
note("af_packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).fileno())
note("raw_inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1).fileno())
note("tcp_proto", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 6).fileno() > 2)
note("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).fileno())
note("icmp_dgram", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, 1).fileno())
note("resolv_conf", lambda: open("/etc/resolv.conf").read())
note("env", lambda: {k: os.environ.get(k) for k in
                     ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                      "ALL_PROXY", "NO_PROXY")})
print("EGRESS " + json.dumps(out))
'''


def inside(A, B, R, V6):
    return INSIDE % {"A": A, "B": B, "R": R, "V6": V6}


def parse(doc):
    for line in (doc.get("stdout") or "").splitlines():
        if line.startswith("EGRESS "):
            return json.loads(line[len("EGRESS "):])
    raise g.Failure("the run printed no outcome: status=%r stdout=%r stderr=%r diags=%r"
                    % (doc.get("status"), (doc.get("stdout") or "")[-400:],
                       (doc.get("stderr") or "")[-800:], doc.get("diagnostics")))


class Setup:
    def __init__(self, t):
        self.http = Server(http=True)
        self.echo = Server()
        self.refused = Server()  # listed under no entry: must never be reached
        t.defer(self.http.close)
        t.defer(self.echo.close)
        t.defer(self.refused.close)
        self.v6 = None
        if host_has_ipv6_loopback():
            self.v6 = Server(socket.AF_INET6, "::1")
            t.defer(self.v6.close)
        allow = ["127.0.0.1:%d" % self.http.port, "127.0.0.1:%d" % self.echo.port,
                 # a name (localhost: loopback) listed with a port nothing else allows
                 "localhost:%d" % self.refused.port, "*.example.invalid:443"]
        if self.v6:
            allow.append("[::1]:%d" % self.v6.port)
        self.allow = allow
        self.code = inside(self.http.port, self.echo.port, self.refused.port,
                           self.v6.port if self.v6 else 0)


def check_outcome(s, doc, res):
    g.eq(doc["status"], "success", "status")
    schema_valid("result", doc)
    g.check("network_allowlist" in doc["backend"]["controls"],
            "network_allowlist not claimed: %r" % (doc["backend"]["controls"],))
    g.check("network_deny" not in doc["backend"]["controls"], "network_deny claimed")
    url = "http://127.0.0.1:3128"
    g.eq(e.allowed(res, "env"), {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url,
                                 "https_proxy": url, "ALL_PROXY": url, "NO_PROXY": ""},
         "the proxy's environment")
    # allowed: through urllib (HTTP_PROXY), and a raw CONNECT to the proxy
    g.eq(e.allowed(res, "urllib_allowed"), [200, "hello /ok"], "urllib to an allowed one")
    g.eq(e.allowed(res, "connect_allowed"), ["HTTP/1.1 200 Connection established", "ping"],
         "CONNECT to an allowed destination")
    # refused: 403 with the reason
    r = res["urllib_refused"]
    g.check(r.get("http") == 403 and "not in this run's network allowlist" in r.get("body"),
            "urllib to a refused one: %r" % (r,))
    r = e.allowed(res, "connect_refused")
    g.check(r[0].startswith("HTTP/1.1 403") and "network allowlist" in r[1],
            "CONNECT to a refused one: %r" % (r,))
    # a listed name that resolves to an address no entry lists (loopback): refused
    r = e.allowed(res, "rebinding")
    g.check(r[0].startswith("HTTP/1.1 403") and "resolves only to addresses" in r[1],
            "a name resolving to a refused address: %r" % (r,))
    for label in ("numeric_decimal", "numeric_short", "numeric_hex"):
        r = e.allowed(res, label)
        g.check(r[0].startswith("HTTP/1.1 403") or r[0].startswith("HTTP/1.1 400"),
                "%s: an alias of an allowed address: %r" % (label, r))
    if s.v6:
        g.eq(e.allowed(res, "ipv6_allowed"), ["HTTP/1.1 200 Connection established", "ping"],
             "CONNECT to an allowed [::1]")
        r = e.allowed(res, "ipv6_mapped_refused")
        g.check(r[0].startswith("HTTP/1.1 403"), "mapped IPv6 of a refused one: %r" % (r,))
    # without the proxy: nothing.  The run's namespace has only its loopback; where
    # Landlock has TCP rights (ABI 4), a second wall: connect() only to the proxy's port
    g.eq(e.allowed(res, "netdev"), ["lo"], "network interfaces inside")
    if e.landlock_abi() >= 4:
        for label in ("noproxy_urllib", "direct_tcp", "direct_refused_port",
                      "direct_outside", "direct_v6"):
            e.denied(res, label, "EACCES")
    else:
        e.denied(res, "noproxy_urllib", "ECONNREFUSED")
        e.denied(res, "direct_tcp", "ECONNREFUSED")
        e.denied(res, "direct_refused_port", "ECONNREFUSED")
        e.denied_any(res, "direct_outside", ("ENETUNREACH", "EHOSTUNREACH"))
        e.denied_any(res, "direct_v6", ("ECONNREFUSED", "EADDRNOTAVAIL", "ENETUNREACH"))
    g.check(not res["dns_lookup"].get("ok"), "a name resolved inside: %r" % (res["dns_lookup"],))
    e.denied_any(res, "udp_dns", ("ENETUNREACH", "EHOSTUNREACH"))
    # no connect past connect(): sending with MSG_FASTOPEN is refused by seccomp
    e.denied(res, "fastopen_sendto", "EPERM")
    e.denied(res, "fastopen_sendmsg", "EPERM")
    e.denied(res, "resolv_conf", "ENOENT")
    for label in ("af_unix", "af_netlink", "af_packet"):
        e.denied(res, label, "EAFNOSUPPORT")
    e.denied(res, "raw_inet", "EPERM")
    g.eq(e.allowed(res, "tcp_proto"), True, "a TCP socket by its protocol number")
    # no other protocol (no module loaded on the run's behalf)
    e.denied(res, "sctp", "ENOSYS")
    e.denied(res, "icmp_dgram", "ENOSYS")
    # the host's listeners: the allowed ones reached through the proxy only, the
    # refused one never
    g.eq(s.refused.hits, 0, "connections that reached the refused listener")
    g.eq(s.http.hits, 1, "connections to the allowed HTTP listener")
    g.eq(s.echo.hits, 1, "connections to the allowed echo listener")

    # the ledger and the denials
    led = doc.get("egress")
    g.check(isinstance(led, list), "no egress ledger: %r" % (doc.keys(),))
    def entry(host, port, allowed):
        m = [x for x in led if x["host"] == host and x["port"] == port and
             x["allowed"] == allowed]
        g.check(m, "no ledger entry %s:%s allowed=%s in %r" % (host, port, allowed, led))
        return m[0]
    a = entry("127.0.0.1", s.http.port, True)
    g.check(a["bytes_up"] > 0 and a["bytes_down"] > len("hello /ok"),
            "bytes of the allowed GET: %r" % (a,))
    b = entry("127.0.0.1", s.echo.port, True)
    g.check(b["bytes_up"] == 4 and b["bytes_down"] >= 4, "bytes of the tunnel: %r" % (b,))
    g.eq(entry("127.0.0.2", s.http.port, False)["reason"], "not_in_allowlist", "reason")
    g.eq(entry("127.0.0.1", s.refused.port, False)["reason"], "not_in_allowlist", "reason")
    g.eq(entry("localhost", s.refused.port, False)["reason"], "refused_address", "reason")
    denials = {d["destination"]: d for d in doc["diagnostics"]
               if d["code"] == "denied_by_policy"}
    # (the IPv4-mapped form of 127.0.0.1 is 127.0.0.1: one destination, two attempts)
    for dest, reason, n in (("127.0.0.2:%d" % s.http.port, "not_in_allowlist", 1),
                            ("127.0.0.1:%d" % s.refused.port, "not_in_allowlist",
                             2 if s.v6 else 1),
                            ("localhost:%d" % s.refused.port, "refused_address", 1)):
        d = denials.get(dest)
        g.check(d is not None, "no denied_by_policy for %s: %r" % (dest, doc["diagnostics"]))
        g.eq(d["controls"], ["network_allowlist"], "controls of the denial")
        g.eq(d["reason"], reason, "reason of the denial of %s" % dest)
        g.eq(d["attempts"], n, "attempts at %s" % dest)


def test_allowlist_as_root(t):
    e.need_restricted("network_allowlist")
    s = Setup(t)
    pol = e.policy(t, network={"allow": s.allow}, limits=ROOMY)
    r = t.run(["run", "--policy", pol, "--json", "-c", s.code])
    doc = r.result()
    check_outcome(s, doc, parse(doc))


def test_allowlist_warm_runtime(t):
    """A runtime that forks runs from templates (GOVEX_WARM=1) runs an allowlist's
    cold: the same confinement, the same ledger, never unfiltered."""
    e.need_restricted("network_allowlist")
    s = Setup(t)
    pol = e.policy(t, network={"allow": s.allow}, limits=ROOMY)
    r = t.run(["run", "--policy", pol, "--json", "-c", s.code], extra_env={"GOVEX_WARM": "1"})
    doc = r.result()
    check_outcome(s, doc, parse(doc))


def test_allowlist_as_nobody(t):
    home, env, binary = e.need_unprivileged_sandbox(t)
    s = Setup(t)
    pol = e.without_aggregate(e.policy(t, network={"allow": s.allow}, limits=ROOMY))
    os.chmod(pol, 0o644)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", s.code], cwd=home,
                              env=env, preexec=e.nobody_preexec(), binary=binary)
    doc = e.result_of(out)
    check_outcome(s, doc, parse(doc))


def test_plan_and_policy(t):
    """The plan states the allowlist (canonical: sorted, one spelling); deny and allow
    keep their digests; bad entries are refused naming the entry."""
    pol = e.policy(t, network={"allow": ["B.example.com.:443", "10.0.0.5:8080",
                                         "[::1]:443", "*.Example.org:443",
                                         "b.example.com:443"]})
    r = t.run(["plan", "--policy", pol, "--json", "-c", "pass"])
    r.expect_rc(0)
    g.eq(r.json()["network"], {"allow": ["*.example.org:443", "10.0.0.5:8080", "[::1]:443",
                                         "b.example.com:443"]}, "the plan's network")
    g.check("network_allowlist" in r.json()["controls"]["required"], "required controls")
    schema_valid("plan", r.json())
    with open(pol) as f:
        schema_valid("policy", json.load(f))
    for doc, want in ((["nohost"], "network.allow[0]"),
                      (["a.example.com:0"], "network.allow[0]"),
                      (["ok.example:1", "127.1:80"], "network.allow[1]"),
                      (["*.*.example:80"], "network.allow[0]"),
                      ("some", "network.allow")):
        p = t.write_json("bad.json", dict(g.preset("strict"), network={"allow": doc}))
        r = t.run(["policy", "check", p])
        g.check(r.returncode == 2 and want in r.err, "%r: rc=%r %r" % (doc, r.returncode, r.err))
    p = t.write_json("bad.json", dict(g.preset("strict"), network={"alow": []}))
    r = t.run(["policy", "check", p])
    g.check(r.returncode == 2 and 'did you mean "allow"' in r.err, "typo: %r" % (r.err,))
    p = t.write_json("bad.json", dict(g.preset("strict"), network=["a:1"]))
    r = t.run(["policy", "check", p])
    g.check(r.returncode == 2 and "network" in r.err, "an array: %r" % (r.err,))


def test_tunnel_cut_at_run_end(t):
    """A CONNECT tunnel held past the wall time ends with the run."""
    e.need_restricted("network_allowlist")
    echo = Server()
    t.defer(echo.close)
    pol = e.policy(t, network={"allow": ["127.0.0.1:%d" % echo.port]}, limits={"wall_ms": 6000})
    code = ("import socket, time\n"
            "s = socket.create_connection(('127.0.0.1', 3128))\n"
            "s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n')\n"
            "print(s.recv(100), flush=True)\n"
            "time.sleep(600)\n" % echo.port)
    r = t.run(["run", "--policy", pol, "--json", "-c", code])
    end = time.monotonic()
    doc = r.result()
    g.eq(doc["status"], "timeout", "status")
    g.eq(echo.hits, 1, "the tunnel reached the echo server")
    e.wait_until(lambda: echo.closed_at, 5.0)
    g.check(echo.closed_at and echo.closed_at[0] - end < 2.0,
            "the tunnel outlived the run: %r after its end" %
            ([c - end for c in echo.closed_at],))


def test_connection_limit(t):
    """network_connections bounds the connections of a run: the rest get 503 and count
    as the policy's denials."""
    e.need_restricted("network_allowlist")
    echo = Server()
    t.defer(echo.close)
    pol = e.policy(t, network={"allow": ["127.0.0.1:%d" % echo.port]},
                   limits=dict(ROOMY, network_connections=3))
    code = ("import socket\n"
            "for i in range(5):\n"
            "    s = socket.create_connection(('127.0.0.1', 3128))\n"
            "    s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n')\n"
            "    print(s.recv(100).split(b'\\r\\n')[0].decode(), flush=True)\n"
            "    s.close()\n" % echo.port)
    r = t.run(["run", "--policy", pol, "--json", "-c", code])
    doc = r.result()
    lines = doc["stdout"].splitlines()
    g.eq(lines[:3], ["HTTP/1.1 200 Connection established"] * 3, "the first three")
    g.eq([ln[:12] for ln in lines[3:]], ["HTTP/1.1 503"] * 2, "the last two")
    g.eq(echo.hits, 3, "connections that reached the echo server")
    d = [x for x in doc["diagnostics"] if x["code"] == "denied_by_policy"]
    g.check(d and d[0]["reason"] == "total_limit" and d[0]["attempts"] == 2,
            "the limit's denials: %r" % (d,))


if __name__ == "__main__":
    sys.exit(g.main([
        ("allowed via urllib and CONNECT, the rest refused, as root", test_allowlist_as_root),
        ("the same as nobody", test_allowlist_as_nobody),
        ("the same in a warm runtime (run cold)", test_allowlist_warm_runtime),
        ("the plan states the allowlist; bad entries named", test_plan_and_policy),
        ("a tunnel past the wall time is cut when the run ends", test_tunnel_cut_at_run_end),
        ("network_connections bounds a run's connections", test_connection_limit),
    ]))
