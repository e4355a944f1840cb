#!/usr/bin/env python3
"""A bounded loopback load test of `govex mcp --http`: N stateless (2026-07-28) tools/call
requests of run_python_snippet (`code: "6*7"`) over C concurrent keep-alive connections.
Reports errors (a non-200 answer, a JSON-RPC error or a result that is not success: must
be 0), latency p50/p99/max, calls per second, and the server's RSS before and after
(VmRSS and VmHWM from /proc).  A benchmark: it exits 1 only on errors, never on speed.

usage: bench/http_load.py [--govex build/govex] [--preset strict] [--calls 2000]
                          [--connections 50] [--max-concurrent 16] [--json]
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
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http_load", "version": "0"}}


def rss(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


def start(a):
    err = tempfile.NamedTemporaryFile(prefix="http-load-", delete=False)
    p = subprocess.Popen([a.govex, "mcp", "--preset", a.preset, "--http", "127.0.0.1:0",
                          "--max-concurrent", str(a.max_concurrent),
                          "--max-connections", str(max(256, a.connections * 2)),
                          "--rate", "1000000"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        mo = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp",
                       open(err.name).read())
        if mo:
            return p, int(mo.group(1)), err.name
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    sys.exit("the server did not start:\n" + open(err.name).read())


def worker(port, jobs, lat, errors, lock):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    hdr = {"Host": "127.0.0.1:%d" % port, "Content-Type": "application/json",
           "Accept": "application/json"}
    while True:
        with lock:
            if not jobs:
                break
            i = jobs.pop()
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": "run_python_snippet",
                                      "arguments": {"code": "6*7"}, "_meta": META}})
        t0 = time.perf_counter()
        try:
            c.request("POST", "/mcp", body, hdr)
            r = c.getresponse()
            data = r.read()
            dt = time.perf_counter() - t0
            msg = json.loads(data)
            doc = msg.get("result", {}).get("structuredContent", {})
            ok = r.status == 200 and doc.get("status") == "success" and doc.get("value") == 42
            if not ok and doc:  # say what the run was, not the envelope
                data = json.dumps({"http": r.status, "status": doc.get("status"),
                                   "termination": doc.get("termination"),
                                   "signal": doc.get("signal"),
                                   "diagnostics": doc.get("diagnostics"),
                                   "usage": doc.get("usage"),
                                   "stderr": doc.get("stderr", "")[-200:]}).encode()
        except (OSError, ValueError, http.client.HTTPException) as e:
            dt, ok, data = time.perf_counter() - t0, False, repr(e).encode()
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with lock:
            lat.append(dt)
            if not ok:
                errors.append(data[:300].decode("utf-8", "replace"))
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--govex", default=os.path.join(ROOT, "build", "govex"))
    ap.add_argument("--preset", default="strict")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--max-concurrent", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    p, port, errpath = start(a)
    try:
        before = rss(p.pid)
        jobs = list(range(a.calls))
        lat, errors, lock = [], [], threading.Lock()
        th = [threading.Thread(target=worker, args=(port, jobs, lat, errors, lock))
              for _ in range(a.connections)]
        t0 = time.perf_counter()
        for t in th:
            t.start()
        for t in th:
            t.join()
        wall = time.perf_counter() - t0
        after = rss(p.pid)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics", headers={"Host": "127.0.0.1:%d" % port})
        metrics = c.getresponse().read().decode()
        c.close()
    finally:
        p.terminate()
        p.wait(60)
        os.unlink(errpath)
    lat.sort()
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    res = {"calls": a.calls, "connections": a.connections, "preset": a.preset,
           "max_concurrent": a.max_concurrent, "errors": len(errors),
           "p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2),
           "max_ms": round(lat[-1] * 1000, 2), "calls_per_s": round(a.calls / wall, 1),
           "rss_before_kib": before.get("VmRSS", 0) // 1024,
           "rss_after_kib": after.get("VmRSS", 0) // 1024,
           "rss_peak_kib": after.get("VmHWM", 0) // 1024, "exit_status": p.returncode}
    res["http_rejected"] = {l.split('"')[1]: int(l.split()[-1]) for l in metrics.splitlines()
                            if l.startswith("govex_http_rejected_total{")}
    res["runs"] = {l.split('"')[1]: int(l.split()[-1]) for l in metrics.splitlines()
                   if l.startswith("govex_runs_total{")}
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print("%-16s %s" % (k, v))
        for e in errors[:5]:
            print("error: " + e)
    return 1 if errors or p.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
