#!/usr/bin/env python3
"""Service mode under many clients (issue 23; DESIGN "Service mode under many clients"):
`govex mcp --http` on loopback, tried as several clients and an attacker would.

- a spare that fails before its cgroups exist leaves the server's descriptors alone
  (fd 0 was closed, then whatever took fd 0 after it);
- paths match exactly: "/mcp%00" is not "/mcp";
Stdlib only.
"""
import http.client as httpclient
import json
import os
import resource
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mcptest as m  # noqa: E402
from rthttp import *  # noqa: E402,F401,F403


def _fds(pid):
    """{fd: what it is} of process PID (/proc/PID/fd)."""
    d = "/proc/%d/fd" % pid
    out = {}
    for n in os.listdir(d):
        try:
            out[int(n)] = os.readlink(os.path.join(d, n))
        except OSError:
            pass
    return out


def _own(link):
    """A descriptor that belongs to one spare or run (made and closed with it)."""
    return (link.startswith("anon_inode:[pidfd]") or link.startswith("/run/govex/") or
            link.startswith("/sys/fs/cgroup/") or link.startswith("pipe:") or
            link.startswith("socket:") or link.startswith("/dev/shm/") or
            link.startswith("/memfd:"))


def _listen_inode(port):
    """The inode of the socket listening on 127.0.0.1:PORT (/proc/net/tcp)."""
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            w = line.split()
            if w[1].endswith(":%04X" % port) and w[3] == "0A":
                return w[9]
    raise m.Failure("nothing listens on port %d in /proc/net/tcp" % port)


class KeepAlive:
    """One HTTP/1.1 connection kept open: made while descriptors are plenty, it serves
    calls while the server can open none."""

    def __init__(self, port):
        self.c = httpclient.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, id, code):
        body = json.dumps(modern(id, "tools/call", snippet_params(code)))
        self.c.request("POST", "/mcp", body, JSON_HEADERS)
        r = self.c.getresponse()
        return r.status, r.read()


def _spare_log(log):
    try:
        with open(log) as f:
            return [l.strip() for l in f if l.startswith("spare ")]
    except OSError:
        return []


EARLY = ("spare: slot:", "spare: plan:", "spare: cgroup:")


def test_spare_failure_keeps_descriptors(t):
    """Spares (warm runs made ahead) that fail before their cgroups exist -- the server
    out of descriptors (its RLIMIT_NOFILE lowered under it, as a busy host's EMFILE) --
    close nothing of the server's: its fd 0 and every descriptor that is not a run's or
    a spare's are the same afterwards, and calls are served as before."""
    log = os.path.join(t, "warm.log")
    env = dict(os.environ, GOVEX_WARM_LOG=log)
    env.pop("GOVEX_WARM", None)
    s = HttpServer(t, preset="strict", env=env)
    pid = s.p.pid
    c = KeepAlive(s.port)
    for i in (1, 2):                            # the template and its spares are up
        st, body = c.call(i, str(i))
        m.eq(st, 200, "warm-up call %d (%r)" % (i, body[:300]))
        time.sleep(0.3)
    before = _fds(pid)
    m.check(0 in before, "the server has no fd 0 to begin with: %r" % before)
    # the server's own descriptors: there before and after a run took a spare
    st, _ = c.call(3, "3")
    time.sleep(0.3)
    again = _fds(pid)
    listen = "socket:[%s]" % _listen_inode(s.port)
    stable = {k: v for k, v in before.items() if again.get(k) == v and
              (k <= 2 or v == listen or not _own(v))}
    m.check(listen in stable.values(), "the listening socket %s not found: %r"
            % (listen, before))
    m.check(0 in stable, "fd 0 changed across an ordinary call: %r -> %r"
            % (before.get(0), again.get(0)))
    # Lower the limit to the lowest free descriptor plus k: with k small the call fails,
    # larger it runs on a spare and the spare's replacement fails at the step the
    # descriptors run out -- the first steps (slot, plan, cgroups) come before its
    # cgroups exist.  k grows until such a failure is logged.
    old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    early = []
    try:
        for k in range(0, 40):
            cur = _fds(pid)
            low = min(i for i in range(len(cur) + 1) if i not in cur)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (low + k, old[1]))
            try:
                c.call(100 + k, "1")
            finally:
                time.sleep(0.2)
                resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
            early = [l for l in _spare_log(log) if any(e in l for e in EARLY)]
            if early:
                break
            time.sleep(0.2)
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
    m.check(early, "no spare failed before its cgroups with the descriptors running out "
            "(GOVEX_WARM_LOG's spare lines: %r)" % _spare_log(log))
    # calls as before (what a closed descriptor is reused for shows up meanwhile)
    for i in range(5):
        st, body = c.call(200 + i, "%d * 7" % i)
        m.eq(st, 200, "call %d after the spares failed (%r)" % (i, body[-300:]))
        m.check(b'"value":%d' % (i * 7) in body, "call %d's value: %r" % (i, body[-400:]))
    time.sleep(0.5)
    after = _fds(pid)
    changed = {k: (v, after.get(k)) for k, v in stable.items() if after.get(k) != v}
    m.eq(changed, {}, "the server's descriptors (fd: before, after) once spares failed "
         "early (%r)" % early)
    m.eq(s.stop(), 0, "exit status after SIGTERM")


def test_paths_exact(t):
    """A path is served only when it is exactly /mcp, /healthz, /readyz or /metrics as sent:
    a percent-encoded NUL (libmicrohttpd decodes it, and C strings end there) or any other
    escape is 404, for every method; the plain paths still work."""
    s = HttpServer(t)
    body = json.dumps(modern(1, "tools/list")).encode()
    for path in ("/mcp", "/healthz", "/readyz", "/metrics"):
        for bad in (path + "%00", path + "%00.json", path + "%2500", path[:2] + "%%%02x" %
                    ord(path[2]) + path[3:], path + "%2f", path + "/", "/" + path):
            for method in ("POST", "GET", "DELETE"):
                r = http(s.port, method, bad, JSON_HEADERS, body if method == "POST" else b"")
                m.eq(r.status, 404, "%s %s" % (method, bad))
    r = http(s.port, "POST", "/mcp", JSON_HEADERS, body)
    m.eq(r.status, 200, "POST /mcp")
    m.check(r.response_to(1).get("result", {}).get("tools"), "tools/list: %r" % r.body[:300])
    r = http(s.port, "POST", "/mcp?x=%00", JSON_HEADERS, body)
    m.eq(r.status, 200, "POST /mcp with a query (the query is not the path)")
    for path in ("/healthz", "/readyz", "/metrics"):
        m.eq(http(s.port, "GET", path).status, 200, "GET " + path)
    m.eq(s.stop(), 0, "exit status after SIGTERM")


TESTS = [
    ("a spare failing before its cgroups leaves fd 0 and the others alone",
     test_spare_failure_keeps_descriptors),
    ("paths match exactly: /mcp%00 is 404", test_paths_exact),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
