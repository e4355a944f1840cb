#!/usr/bin/env python3
"""Data through `govex mcp` (stdio) against a one-shot `govex run`, per MiB (issue 23).

For each size (1 KiB ... 64 MiB of output; input files up to 16 MiB, the most a
message carries) it times:
  out/oneshot  govex run -c "sys.stdout.write('x' * N)"            (stdout to a pipe)
  out/mcp      the same code as run_python_snippet, from the request's last byte written
               to the reply's last byte read (the line is not parsed)
  in/oneshot   govex run --file f=PATH -c "len(open('f','rb').read())"
  in/mcp       the same with files: [{name, base64}]
and the live-output case: the client set logging/setLevel info and the code prints
200 KB as 6,666 lines of 30 bytes; counted: the notifications/message it got and the
time to the reply.  Cost per MiB is (t(N) - t(1 KiB)) / MiB, the median of --rounds.
A policy file made here lifts the output bounds (stdout_bytes 2^27, wall 120 s).
A benchmark, not a test: it never fails on noise.

usage: bench/mcp_data.py [--govex build/govex] [--rounds 3] [--max-mib 64] [--json]
"""
import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20


def policy(d, govex):
    doc = json.loads(subprocess.run([govex, "policy", "show", "trusted"], check=True,
                                    stdout=subprocess.PIPE).stdout)
    lim = doc["limits"]
    lim.update(stdout_bytes=1 << 27, wall_ms=120000, call_input_bytes=1 << 24)
    p = os.path.join(d, "policy.json")
    json.dump(doc, open(p, "w"))
    return p


class Mcp:
    def __init__(self, govex, pol):
        self.p = subprocess.Popen([govex, "mcp", "--policy", pol, "--max-concurrent", "1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "mcp_data", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append((time.perf_counter(), line))
                self.cv.notify_all()

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def req(self, method, params):
        """(seconds from the request written to its reply read, notifications, reply)"""
        self.id += 1
        key = b'"id":%d,' % self.id
        with self.cv:
            self.lines.clear()
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                           "params": params}).encode() + b"\n"
        t0 = time.perf_counter()
        self.p.stdin.write(body)
        self.p.stdin.flush()
        with self.cv:
            while True:
                for i, (t, line) in enumerate(self.lines):
                    if key in line[:64]:
                        notes = sum(b'"notifications/message"' in l[:200]
                                    for _, l in self.lines[:i])
                        return t - t0, notes, line
                self.cv.wait(120)

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def oneshot(govex, pol, code, files=()):
    argv = [govex, "run", "--policy", pol]
    for f in files:
        argv += ["--file", "f=" + f]
    t = time.perf_counter()
    subprocess.run(argv + ["-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def per_mib(times, base, n):
    return round((statistics.median(times) - base) * 1000 / (n / MIB), 1) if n >= MIB else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--govex", default=os.path.join(ROOT, "build", "govex"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="mcp-data-")
    pol = policy(d, a.govex)
    srv = Mcp(a.govex, pol)
    out_sizes = [1 << 10] + [m * MIB for m in (1, 4, 16, 64) if m <= a.max_mib]
    in_sizes = [1 << 10] + [m * MIB for m in (1, 4, 12) if m <= a.max_mib]
    res = {"govex": a.govex, "output": {}, "input": {}}
    base = {}
    for n in out_sizes:
        code = "import sys\nsys.stdout.write('x' * %d)" % n
        o = [oneshot(a.govex, pol, code) for _ in range(a.rounds)]
        mc = [srv.req("tools/call", {"name": "run_python_snippet",
                                     "arguments": {"code": code}})[0]
              for _ in range(a.rounds)]
        if n == out_sizes[0]:
            base["o"], base["m"] = statistics.median(o), statistics.median(mc)
        res["output"][n] = {"oneshot_s": round(statistics.median(o), 3),
                            "mcp_s": round(statistics.median(mc), 3),
                            "oneshot_ms_per_mib": per_mib(o, base["o"], n),
                            "mcp_ms_per_mib": per_mib(mc, base["m"], n)}
    for n in in_sizes:
        path = os.path.join(d, "in.bin")
        data = os.urandom(n)
        open(path, "wb").write(data)
        b64 = base64.b64encode(data).decode()
        code = "len(open('f', 'rb').read())"
        o = [oneshot(a.govex, pol, code, [path]) for _ in range(a.rounds)]
        mc = [srv.req("tools/call", {"name": "run_python_snippet",
                                     "arguments": {"code": code, "files": [
                                         {"name": "f", "base64": b64}]}})[0]
              for _ in range(a.rounds)]
        if n == in_sizes[0]:
            base["oi"], base["mi"] = statistics.median(o), statistics.median(mc)
        res["input"][n] = {"oneshot_s": round(statistics.median(o), 3),
                           "mcp_s": round(statistics.median(mc), 3),
                           "oneshot_ms_per_mib": per_mib(o, base["oi"], n),
                           "mcp_ms_per_mib": per_mib(mc, base["mi"], n)}
    srv.req("logging/setLevel", {"level": "info"})
    code = "for i in range(6666):\n    print('%029d' % i)"
    live = [srv.req("tools/call", {"name": "run_python_snippet", "arguments": {"code": code}})
            for _ in range(a.rounds)]
    t, notes, line = live[-1]
    doc = json.loads(line)["result"]["structuredContent"]
    res["live_200kb"] = {"s": round(statistics.median(x[0] for x in live), 3),
                         "notifications": notes, "stdout_bytes": doc["stdout_bytes"],
                         "stdout_whole": doc["stdout"] == "".join("%029d\n" % i
                                                                  for i in range(6666))}
    srv.close()
    if a.json:
        print(json.dumps(res))
    else:
        print(a.govex)
        for kind in ("output", "input"):
            for n, r in res[kind].items():
                print("%-6s %9d B  oneshot %.3f s (%s ms/MiB)  mcp %.3f s (%s ms/MiB)" % (
                    kind, n, r["oneshot_s"], r["oneshot_ms_per_mib"], r["mcp_s"],
                    r["mcp_ms_per_mib"]))
        print("live 200 KB: %s" % res["live_200kb"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
