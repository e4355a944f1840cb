#!/usr/bin/env python3
"""Latency and throughput of tool calls through one long-lived `govex mcp` over stdio.

Starts `govex mcp --preset P --module examples/mod.py`, initializes, then times
sequential calls of run_python_snippet (`code: "6*7"`) and of the module tool `add`
(p50, p99), and the rate with K calls in flight (`--inflight`, default 16).  With
--compare OTHER_GOVEX the same is measured for another build, the two servers
interleaved round by round.  A benchmark, not a test: it never fails on noise.

usage: bench/mcp.py [--govex build/govex] [--compare OTHER] [--preset strict]
                    [--calls 200] [--inflight 16] [--burst 400] [--rounds 2] [--gap 0]

--gap MS sleeps MS milliseconds before each sequential call: the calls of an agent,
seconds apart, find an idle server (its CPUs asleep, its spares made and warmed up);
back to back (the default) they find it busy with the previous call's aftermath.

The in-flight rate is measured in --rounds alternating bursts per build (the median
is printed), with the machine's CPU time per call over the bursts: all CPUs' busy time
from /proc/stat, divided by the calls -- every process's, the server's, its sandboxes'
and the kernel's work for them (and whatever else runs: a quiet machine reads true).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server:
    def __init__(self, govex, preset):
        self.p = subprocess.Popen(
            [govex, "mcp", "--preset", preset, "--max-concurrent", "16",
             "--module", os.path.join(ROOT, "examples", "mod.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.lock = threading.Lock()
        self.waiting = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            if "id" in msg and msg["id"] in self.waiting:
                with self.lock:
                    done = self.waiting.pop(msg["id"])
                done(msg)

    def start_cb(self, method, params, done):
        """Sends a request; DONE(msg) is called in the reader thread with its answer."""
        with self.lock:
            self.next_id += 1
            self.waiting[self.next_id] = done
            self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                        "params": params})

    def start(self, method, params):
        ev, box = threading.Event(), []

        def done(msg):
            box.append(msg)
            ev.set()
        self.start_cb(method, params, done)
        return ev, box

    def request(self, method, params):
        ev, box = self.start(method, params)
        ev.wait(60)
        msg = box[0]
        if "error" in msg or msg.get("result", {}).get("isError"):
            raise SystemExit("bench: %s failed: %s" % (method, json.dumps(msg)[:500]))
        return msg

    def close(self):
        self.p.stdin.close()
        self.p.wait(30)


CALLS = {
    "run_python_snippet": {"name": "run_python_snippet", "arguments": {"code": "6*7"}},
    "add (module tool)": {"name": "add", "arguments": {"a": 40, "b": 2}},
}


def timed(s, params):
    t = time.perf_counter()
    s.request("tools/call", params)
    return time.perf_counter() - t


def burst(s, params, n, inflight):
    """N calls, INFLIGHT at a time, sent as one client sends them: this thread writes a
    request each time an answer makes room, the reader thread takes the answers (no
    thread per call: the client's own CPU stays small next to the server's)."""
    sem = threading.Semaphore(inflight)
    done = []
    all_done = threading.Event()

    def one(msg):
        done.append(msg)
        sem.release()
        if len(done) == n:
            all_done.set()
    t = time.perf_counter()
    for _ in range(n):
        sem.acquire()
        s.start_cb("tools/call", params, one)
    if not all_done.wait(120):
        raise SystemExit("bench: %d of %d calls answered in 120 s" % (len(done), n))
    el = time.perf_counter() - t
    bad = [m for m in done if "error" in m or m["result"].get("isError")]
    if bad:
        raise SystemExit("bench: %d of %d calls failed: %s" % (len(bad), n,
                                                                json.dumps(bad[0])[:300]))
    return n / el


def busy_ms():
    """All CPUs' busy time so far (/proc/stat: user, nice, system, irq, softirq,
    steal), in ms."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000.0 / hz


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--govex", default=os.path.join(ROOT, "build", "govex"))
    ap.add_argument("--compare", default=None)
    ap.add_argument("--preset", default="strict")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--burst", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--gap", type=float, default=0.0)
    a = ap.parse_args()
    builds = [("this build", a.govex)] + ([("compared", a.compare)] if a.compare else [])
    servers = {name: Server(path, a.preset) for name, path in builds}
    times = {(b, c): [] for b, _ in builds for c in CALLS}
    for name, s in servers.items():  # warm up (probes, caches)
        for c in CALLS.values():
            for _ in range(3):
                timed(s, c)
    for i in range(a.calls):
        order = builds if i % 2 == 0 else builds[::-1]
        for name, _ in order:
            for c, params in CALLS.items():
                if a.gap:
                    time.sleep(a.gap / 1000.0)
                times[(name, c)].append(timed(servers[name], params))
    rates = {name: [] for name, _ in builds}
    cpu = {name: [] for name, _ in builds}
    for r in range(a.rounds):
        for name, _ in (builds if r % 2 == 0 else builds[::-1]):
            b0 = busy_ms()
            rates[name].append(burst(servers[name], CALLS["run_python_snippet"], a.burst,
                                     a.inflight))
            cpu[name].append((busy_ms() - b0) / a.burst)
    for s in servers.values():
        s.close()
    print("preset %s, %d sequential calls of each kind (interleaved%s), %d in flight for %d "
          "snippets" % (a.preset, a.calls, ", %g ms apart" % a.gap if a.gap else "",
                        a.inflight, a.burst))
    for name, _ in builds:
        for c in CALLS:
            v = sorted(times[(name, c)])
            print("%-10s %-20s p50 %6.2f ms   p99 %6.2f ms" % (
                name, c, statistics.median(v) * 1e3, v[int(len(v) * 0.99) - 1] * 1e3))
        print("%-10s %-20s %6.1f runs/s  (CPU %.2f ms a call, all CPUs)" % (
            name, "snippets in flight", statistics.median(rates[name]),
            statistics.median(cpu[name])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
