#!/usr/bin/env python3
"""Per-client latency of `govex mcp --http` with a noisy neighbour (issue 23).

A quiet client (its own session) calls run_python_snippet `6*7` every --interval
seconds, first alone, then while a noisy client (another session) keeps --noisy calls of
`time.sleep(--sleep)` in flight on as many connections, for --seconds each.  Reports the
quiet client's latency (p50, p90, max) alone and beside the neighbour, the noisy
client's, and every answer that was not a successful run (HTTP 429 counted apart).  With
one first-come-first-served queue the quiet client waits behind the neighbour's queue;
with per-client fair scheduling it waits for the next slot that frees (about one of the
neighbour's runs at most).  A benchmark: it exits 1 only when the server misbehaves (an
answer that is neither a result nor a 429), never on speed.

usage: bench/http_fair.py [--govex build/govex] [--preset trusted] [--max-concurrent 2]
                          [--noisy 6] [--sleep 1] [--interval 0.5] [--seconds 15] [--json]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(a):
    err = tempfile.NamedTemporaryFile(prefix="http-fair-", delete=False)
    p = subprocess.Popen([a.govex, "mcp", "--preset", a.preset, "--http", "127.0.0.1:0",
                          "--max-concurrent", str(a.max_concurrent), "--rate", "1000000"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        mo = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", open(err.name).read())
        if mo:
            return p, int(mo.group(1)), err.name
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    sys.exit("the server did not start:\n" + open(err.name).read())


class Client:
    """One legacy session (its own client for the scheduler)."""

    def __init__(self, port, name):
        self.port = port
        self.hdr = {"Host": "127.0.0.1:%d" % port, "Content-Type": "application/json",
                    "Accept": "application/json"}
        st, h, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": name, "version": "0"}}})
        if st != 200:
            sys.exit("initialize: HTTP %d" % st)
        self.hdr["Mcp-Session-Id"] = h["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg, conn=None):
        c = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        c.request("POST", "/mcp", json.dumps(msg), self.hdr)
        r = c.getresponse()
        data = r.read()
        h = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, h, data

    def call(self, code, i, conn):
        """(seconds, 'ok' | '429' | what went wrong)"""
        t0 = time.perf_counter()
        try:
            st, _, data = self.post({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                     "params": {"name": "run_python_snippet",
                                                "arguments": {"code": code}}}, conn)
        except (OSError, http.client.HTTPException) as e:
            return time.perf_counter() - t0, repr(e)
        dt = time.perf_counter() - t0
        if st == 429:
            return dt, "429"
        try:
            doc = json.loads(data).get("result", {}).get("structuredContent", {})
        except ValueError:
            doc = {}
        return dt, "ok" if st == 200 and doc.get("status") == "success" else data[:200]


def quiet_loop(cl, a, until, out):
    c = http.client.HTTPConnection("127.0.0.1", cl.port, timeout=300)
    i = 0
    while time.monotonic() < until:
        t0 = time.monotonic()
        out.append(cl.call("6*7", i, c))
        i += 1
        time.sleep(max(0.0, a.interval - (time.monotonic() - t0)))
    c.close()


def noisy_loop(cl, a, until, out, k):
    c = http.client.HTTPConnection("127.0.0.1", cl.port, timeout=300)
    i = 0
    while time.monotonic() < until:
        r = cl.call("import time\ntime.sleep(%g)" % a.sleep, k * 100000 + i, c)
        out.append(r)
        i += 1
        if r[1] != "ok":
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", cl.port, timeout=300)
            time.sleep(0.2)
    c.close()


def summary(res):
    lat = sorted(d for d, r in res if r == "ok")
    q = statistics.quantiles(lat, n=10) if len(lat) > 1 else lat * 9
    return {"calls": len(res), "ok": len(lat), "http_429": sum(r == "429" for _, r in res),
            "other_errors": sum(r not in ("ok", "429") for _, r in res),
            "p50_ms": round(q[4] * 1000) if lat else None,
            "p90_ms": round(q[8] * 1000) if lat else None,
            "max_ms": round(lat[-1] * 1000) if lat else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--govex", default=os.path.join(ROOT, "build", "govex"))
    ap.add_argument("--preset", default="trusted")
    ap.add_argument("--max-concurrent", type=int, default=2)
    ap.add_argument("--noisy", type=int, default=6, help="the neighbour's calls in flight")
    ap.add_argument("--sleep", type=float, default=1.0, help="each of its calls, seconds")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    p, port, errpath = start(a)
    bad = []
    try:
        quiet, noisy = Client(port, "quiet"), Client(port, "noisy")
        alone = []
        quiet_loop(quiet, a, time.monotonic() + a.seconds, alone)
        beside, loud = [], []
        until = time.monotonic() + a.seconds
        th = [threading.Thread(target=noisy_loop, args=(noisy, a, until, loud, k))
              for k in range(a.noisy)]
        for t in th:
            t.start()
        time.sleep(min(1.0, a.sleep))  # the neighbour's queue fills first
        quiet_loop(quiet, a, until, beside)
        for t in th:
            t.join()
        bad = [r for _, r in alone + beside + loud if r not in ("ok", "429")]
    finally:
        p.terminate()
        p.wait(60)
        os.unlink(errpath)
    res = {"govex": a.govex, "max_concurrent": a.max_concurrent, "noisy_in_flight": a.noisy,
           "noisy_sleep_s": a.sleep, "quiet_alone": summary(alone),
           "quiet_beside_noisy": summary(beside), "noisy": summary(loud)}
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print("%-20s %s" % (k, v))
        for e in bad[:5]:
            print("error: %r" % (e,))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
