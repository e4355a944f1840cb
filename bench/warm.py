#!/usr/bin/env python3
"""Warm runs against cold runs through one long-lived library runtime each.

Loads libgovex (ctypes), makes two runtimes with the same policy (one made warm by
govex_runtime_warm),
checks both give the same result, then times N plain runs of `print(6*7)` through each,
interleaved (cold, warm, cold, warm...), and prints p50/p99 per kind; then the throughput
with --inflight runs in flight (threads; the library releases the GIL in ctypes calls),
in alternating batches.  A benchmark, not a test: it never fails on noise.

usage: bench/warm.py [--lib build/libgovex.so] [--runs 200] [--inflight 16]
                     [--preset strict] [--code 'print(6*7)'] [--batches 3]
                     [--call examples/mod.py:add --args '{"a": 1, "b": 2}']

With --call, each "run" is a govex_runtime_call (inspection and call: two sandboxed
worker runs, both forked from the template when warm).
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Options(ctypes.Structure):
    _fields_ = [("approve", ctypes.c_void_p), ("approve_userdata", ctypes.c_void_p),
                ("audit", ctypes.c_void_p), ("audit_userdata", ctypes.c_void_p),
                ("audit_fd", ctypes.c_int), ("probe_cache_dir", ctypes.c_char_p),
                ("backend", ctypes.c_char_p), ("sandbox_uid", ctypes.c_uint32),
                ("sandbox_gid", ctypes.c_uint32), ("sandbox_uid_count", ctypes.c_uint32)]


class Request(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p), ("code", ctypes.c_char_p),
                ("code_len", ctypes.c_size_t), ("_tail", ctypes.c_char * 512)]


class Source(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("len", ctypes.c_size_t), ("path", ctypes.c_char_p),
                ("notebook", ctypes.c_int), ("module", ctypes.c_char_p)]


class Call(ctypes.Structure):
    _fields_ = [("source", Source), ("function", ctypes.c_char_p), ("args", ctypes.c_char_p),
                ("args_len", ctypes.c_size_t), ("_tail", ctypes.c_char * 512)]


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("sys_errno", ctypes.c_int),
                ("message", ctypes.c_char * 240)]


def load(path):
    lib = ctypes.CDLL(path)
    lib.govex_policy_preset.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(Error)]
    lib.govex_runtime_new.argtypes = [ctypes.c_void_p, ctypes.POINTER(Options),
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Error)]
    lib.govex_runtime_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Request),
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Error)]
    lib.govex_runtime_call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Call),
                                       ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Error)]
    lib.govex_result_json.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.govex_result_json.restype = ctypes.c_char_p
    lib.govex_result_free.argtypes = [ctypes.c_void_p]
    lib.govex_runtime_free.argtypes = [ctypes.c_void_p]
    lib.govex_runtime_warm.argtypes = [ctypes.c_void_p, ctypes.POINTER(Error)]
    return lib


def runtime(lib, preset, warm):
    pol = ctypes.c_void_p()
    err = Error()
    if lib.govex_policy_preset(preset.encode(), ctypes.byref(pol), ctypes.byref(err)) < 0:
        sys.exit("policy: %s" % err.message.decode())
    opts = Options()
    rt = ctypes.c_void_p()
    if lib.govex_runtime_new(pol, ctypes.byref(opts), ctypes.byref(rt), ctypes.byref(err)) < 0:
        sys.exit("runtime: %s" % err.message.decode())
    if warm and lib.govex_runtime_warm(rt, ctypes.byref(err)) < 0:
        sys.exit("warm: %s" % err.message.decode())
    return rt


def run(lib, rt, code):
    res = ctypes.c_void_p()
    err = Error()
    t = time.perf_counter()
    if isinstance(code, tuple):  # a call: (source, function, args)
        src, fn, args = code
        call = Call(source=Source(data=src, len=len(src)), function=fn, args=args,
                    args_len=len(args))
        r = lib.govex_runtime_call(rt, None, ctypes.byref(call), ctypes.byref(res),
                                   ctypes.byref(err))
    else:
        req = Request(code=code, code_len=len(code))
        r = lib.govex_runtime_run(rt, ctypes.byref(req), ctypes.byref(res), ctypes.byref(err))
    if r < 0:
        raise RuntimeError(err.message.decode())
    dt = time.perf_counter() - t
    doc = json.loads(lib.govex_result_json(res, None))
    lib.govex_result_free(res)
    return dt, doc


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def throughput(lib, rt, code, inflight, total):
    left = [total]
    lock = threading.Lock()
    bad = []

    def worker():
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            _dt, doc = run(lib, rt, code)
            if doc.get("status") != "success":
                bad.append(doc.get("status"))

    ths = [threading.Thread(target=worker) for _ in range(inflight)]
    t = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return total / (time.perf_counter() - t), bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libgovex.so"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--preset", default="strict")
    ap.add_argument("--code", default="print(6*7)")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--call", default=None, metavar="FILE:FUNCTION",
                    help="time govex_runtime_call of FUNCTION (with --args) instead")
    ap.add_argument("--args", default="{}")
    a = ap.parse_args()
    lib = load(a.lib)
    code = a.code.encode()
    if a.call:
        path, fn = a.call.rsplit(":", 1)
        with open(path, "rb") as f:
            code = (f.read(), fn.encode(), a.args.encode())
    cold, warm = runtime(lib, a.preset, 0), runtime(lib, a.preset, 1)
    _, dc = run(lib, cold, code)
    _, dw = run(lib, warm, code)  # starts the template
    for k in ("status", "stdout", "exit_code", "value"):
        if dc.get(k) != dw.get(k):
            sys.exit("cold and warm differ in %s: %r vs %r" % (k, dc.get(k), dw.get(k)))
    if dc.get("backend", {}).get("controls") != dw.get("backend", {}).get("controls"):
        sys.exit("cold and warm claim different controls")
    times = {"cold": [], "warm": []}
    for _ in range(a.runs):
        for kind, rt in (("cold", cold), ("warm", warm)):
            dt, doc = run(lib, rt, code)
            if doc.get("status") != "success":
                sys.exit("%s run: %s" % (kind, json.dumps(doc)[:400]))
            times[kind].append(dt * 1000)
    print("%d runs each, interleaved, preset %s, %s" %
          (a.runs, a.preset, "call %s %s" % (a.call, a.args) if a.call else "code %r" % a.code))
    for kind in ("cold", "warm"):
        xs = times[kind]
        print("  %-5s p50 %7.2f ms  p99 %7.2f ms  mean %7.2f ms" %
              (kind, statistics.median(xs), pct(xs, 99), statistics.mean(xs)))
    print("  warm/cold p50: %.3f" % (statistics.median(times["warm"]) /
                                     statistics.median(times["cold"])))
    # throughput: batches of cold and warm alternated (the load of a shared machine
    # moves between batches), the median batch of each
    total = max(a.runs // 2, 4 * a.inflight)
    rates = {"cold": [], "warm": []}
    for _ in range(a.batches):
        for kind, rt in (("cold", cold), ("warm", warm)):
            rps, bad = throughput(lib, rt, code, a.inflight, total)
            if bad:
                sys.exit("%s: %d runs not success: %s" % (kind, len(bad), bad[:3]))
            rates[kind].append(rps)
    for kind in ("cold", "warm"):
        print("  %-5s %d in flight: %7.1f runs/s (median of %d batches of %d: %s)" %
              (kind, a.inflight, statistics.median(rates[kind]), a.batches, total,
               " ".join("%.0f" % r for r in rates[kind])))
    lib.govex_runtime_free(cold)
    lib.govex_runtime_free(warm)


if __name__ == "__main__":
    main()
