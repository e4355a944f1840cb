#!/usr/bin/env python3
"""Filtered networking through `govex mcp` (issue 26): a server whose policy has a network
allowlist gives every run the same confinement and ledger as `govex run`, over stdio and
over HTTP, and runs in flight at once have proxies of their own (one run's ledger holds
nothing of another's).  Every listener is the test's own, on the host's loopback."""
import json
import os
import socket
import subprocess
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcptest as m  # noqa: E402


class Http:
    """An HTTP listener on the host's loopback: answers "hello PATH" to every request,
    counting the connections."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.port = self.s.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.hits += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _serve(c):
        c.settimeout(30)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                b = c.recv(4096)
                if not b:
                    return
                data += b
            path = data.split(b" ")[1].decode("latin-1")
            body = ("hello " + path).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                      % (len(body), body))
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.s.close()


def need_allowlist():
    out = subprocess.run([m.GOVEX, "backends", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
    try:
        rep = {b["name"]: b for b in json.loads(out)}.get("restricted") or {}
    except (ValueError, KeyError, TypeError):
        rep = {}
    if rep.get("available") is not True:
        raise m.Skip("feature:userns the restricted backend is not available here")
    if "network_allowlist" not in rep.get("enforced", []):
        raise m.Skip("feature:userns this host cannot enforce network_allowlist")


def policy(t, allow, name="policy.json"):
    doc = json.loads(subprocess.run([m.GOVEX, "policy", "show", "strict"], check=True,
                                    stdout=subprocess.PIPE).stdout)
    doc["network"] = {"allow": allow}
    doc["backend"] = "restricted"
    # room for a loaded machine or a guest under TCG (strict's wall is 5 s)
    doc["limits"]["wall_ms"] = 60000
    doc["limits"]["cpu_ms"] = 30000
    return m.write(t, name, json.dumps(doc))


# A snippet that fetches PATH from an allowed port and tries a refused one; it prints
# what it got, "ALLOWED <status> <body>" and "REFUSED <status>".
FETCH = r'''
import urllib.request, urllib.error
def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
print("ALLOWED", *get(@A@, "/@TAG@"))
print("REFUSED", get(@R@, "/x")[0])
'''


def fetch_code(allowed, refused, tag):
    return FETCH.replace("@A@", str(allowed)).replace("@R@", str(refused)).replace("@TAG@", tag)


def check_doc(doc, allowed, refused, tag):
    m.eq(doc["status"], "success", "status (stderr %r)" % (doc.get("stderr"),))
    m.check("network_allowlist" in doc["backend"]["controls"],
            "network_allowlist not claimed: %r" % (doc["backend"]["controls"],))
    lines = doc["stdout"].splitlines()
    m.eq(lines, ["ALLOWED 200 hello /%s" % tag, "REFUSED 403"], "what the run got")
    led = doc.get("egress")
    m.check(isinstance(led, list), "no egress ledger in structuredContent: %r"
            % sorted(doc.keys()))
    ok = [x for x in led if x["allowed"]]
    m.eq([(x["host"], x["port"], x["connections"]) for x in ok],
         [("127.0.0.1", allowed, 1)], "the allowed entries")
    m.check(ok[0]["bytes_up"] > 0 and ok[0]["bytes_down"] > len("hello /" + tag),
            "bytes of the allowed GET: %r" % (ok[0],))
    bad = [x for x in led if not x["allowed"]]
    m.eq([(x["host"], x["port"], x["reason"]) for x in bad],
         [("127.0.0.1", refused, "not_in_allowlist")], "the refused entries")
    d = [x for x in doc["diagnostics"] if x["code"] == "denied_by_policy"]
    m.eq([(x["controls"], x["destination"], x["attempts"]) for x in d],
         [(["network_allowlist"], "127.0.0.1:%d" % refused, 1)], "the denials")


def test_stdio(t):
    need_allowlist()
    ok, refused = Http(), Http()
    try:
        s = m.Server(["--policy", policy(t, ["127.0.0.1:%d" % ok.port])], cwd=t)
        s.initialize()
        r = s.call("run_python_snippet", {"code": fetch_code(ok.port, refused.port, "a")},
                   timeout=90)
        doc = m.result_doc(r)
        check_doc(doc, ok.port, refused.port, "a")
        # the text the model reads names the refusal too
        text = m.text_of(r)
        m.check("network allowlist" in text and "127.0.0.1:%d" % refused.port in text,
                "the text does not name the refused destination: %r" % text[-1500:])
        m.eq(refused.hits, 0, "connections that reached the refused listener")
        m.eq(ok.hits, 1, "connections that reached the allowed listener")
        s.close()
    finally:
        ok.close()
        refused.close()


def test_http_concurrent(t):
    """Service mode: two calls in flight at once, each with its own proxy: each run's
    ledger has its own request only."""
    need_allowlist()
    ok, refused = Http(), Http()
    try:
        s = m.HttpServer(["--policy", policy(t, ["127.0.0.1:%d" % ok.port]),
                          "--max-concurrent", "2"], cwd=t)
        st, h, msgs = s.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}})
        m.eq(st, 200, "initialize")
        sid = h.get("mcp-session-id")
        hdr = {"Mcp-Session-Id": sid} if sid else {}
        if sid:
            s.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=hdr)
        out = {}

        def call(tag, i):
            # the first sleeps so that both are in flight at once
            code = ("import time; time.sleep(%s)\n" % (1 if tag == "p" else 0)) + \
                fetch_code(ok.port, refused.port, tag)
            st, _, msgs = s.rpc("tools/call", {"name": "run_python_snippet",
                                               "arguments": {"code": code}},
                                id=i, headers=hdr, timeout=120)
            out[tag] = (st, msgs)

        th = [threading.Thread(target=call, args=(tag, i)) for i, tag in ((2, "p"), (3, "q"))]
        for x in th:
            x.start()
        for x in th:
            x.join(150)
        for tag in ("p", "q"):
            m.check(tag in out, "call %s did not end" % tag)
            st, msgs = out[tag]
            m.eq(st, 200, "HTTP status of call %s" % tag)
            check_doc(m.result_doc(msgs[-1]), ok.port, refused.port, tag)
        m.eq(refused.hits, 0, "connections that reached the refused listener")
        m.eq(ok.hits, 2, "connections that reached the allowed listener")
    finally:
        ok.close()
        refused.close()


TESTS = [
    ("stdio: an allowlist's run, its ledger and denial in structuredContent and the text",
     test_stdio),
    ("HTTP: two runs in flight, each with a proxy and a ledger of its own",
     test_http_concurrent),
]

if __name__ == "__main__":
    sys.exit(m.main(TESTS))
