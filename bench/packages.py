#!/usr/bin/env python3
"""A pandas snippet through `govex mcp`, with python.preload and without, side by side.

Starts two long-lived `govex mcp` servers over stdio on the same interpreter (default
Debian's /usr/bin/python3.11 with its site directories: python3-pandas installed), one
with `python.preload: ["pandas"]` and one without, and times the same groupby snippet
(run_python_snippet) through each, the two interleaved call by call.  Prints p50 and
p90 of each and their ratio.  A benchmark, not a test: it never fails on noise.

usage: bench/packages.py [--govex build/govex] [--interpreter /usr/bin/python3.11]
                         [--calls 15] [--module pandas]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNIPPET = ("import pandas as pd\n"
           "df = pd.DataFrame({'k': [i % 7 for i in range(1000)], 'v': range(1000)})\n"
           "int(df.groupby('k').v.sum().sum())\n")


class Server:
    def __init__(self, govex, policy):
        self.p = subprocess.Popen([govex, "mcp", "--policy", policy],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def rpc(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("server exited")
            m = json.loads(line)
            if m.get("id") == self.next_id:
                return m

    def call(self):
        t = time.perf_counter()
        m = self.rpc("tools/call", {"name": "run_python_snippet",
                                    "arguments": {"code": SNIPPET}})
        dt = time.perf_counter() - t
        sc = m.get("result", {}).get("structuredContent", {})
        if sc.get("status") != "success" or sc.get("value") != 499500:
            raise SystemExit("unexpected result: %s" % json.dumps(m)[:600])
        return dt

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def policy(govex, interp, preload, path):
    p = json.loads(subprocess.check_output([govex, "policy", "show", "strict"]))
    p["python"] = {"interpreter": interp, "site": True}
    if preload:
        p["python"]["preload"] = preload
    p["limits"]["wall_ms"] = 30000
    p["limits"]["cpu_ms"] = 30000
    p["limits"]["memory_bytes"] = 1 << 30
    with open(path, "w") as f:
        json.dump(p, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--govex", default=os.path.join(ROOT, "build", "govex"))
    ap.add_argument("--interpreter", default="/usr/bin/python3.11")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--module", default="pandas")
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    policy(a.govex, a.interpreter, None, os.path.join(d, "plain.json"))
    policy(a.govex, a.interpreter, [a.module], os.path.join(d, "preload.json"))
    plain = Server(a.govex, os.path.join(d, "plain.json"))
    pre = Server(a.govex, os.path.join(d, "preload.json"))
    # the first call of each starts its template (and, with preload, imports pandas)
    first = (plain.call(), pre.call())
    t_plain, t_pre = [], []
    for _ in range(a.calls):
        t_plain.append(plain.call())
        t_pre.append(pre.call())
    plain.close()
    pre.close()

    def q(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(p * len(v)))]

    print("first call (template start): without %.0f ms, with preload %.0f ms"
          % (first[0] * 1e3, first[1] * 1e3))
    print("%-22s %10s %10s" % ("", "p50 ms", "p90 ms"))
    print("%-22s %10.1f %10.1f" % ("without preload", q(t_plain, .5) * 1e3, q(t_plain, .9) * 1e3))
    print("%-22s %10.1f %10.1f" % ("python.preload", q(t_pre, .5) * 1e3, q(t_pre, .9) * 1e3))
    print("ratio (p50): 1/%.0f" % (statistics.median(t_plain) / statistics.median(t_pre)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
