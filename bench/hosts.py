#!/usr/bin/env python3
"""What obtaining the host cgroup costs a one-shot `govex run` (README, "Hosts"), on a
systemd host with pure cgroup v2, interleaved in one run (same interpreter, same binary):

  scope      a login shell: govex asks systemd for a transient scope with Delegate=yes
             over sd-bus, moves into it, then into its leaf (every one-shot run does this)
  delegated  inside a scope with Delegate=yes: the leaf move only
  handed     GOVEX_CGROUP=<a cgroup of root's>: neither (root only)
  none       GOVEX_CGROUP=none, a policy without aggregate limits: no cgroup work at all

    python3 bench/hosts.py [-n RUNS] [--govex PATH]

Run it on such a host (tests/vm/vm.sh gives one; under TCG the absolute figures are
several times a real machine's: compare the columns).  Prints the median and p90 wall
time of `govex run -c pass` for each, and the differences to `none`.  A benchmark, not a
test: it never fails on numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(argv), p.returncode,
                                                p.stderr.decode()[-500:]))
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--govex", default=os.environ.get("GOVEX", "build/govex"))
    a = ap.parse_args()
    gx = os.path.abspath(a.govex)
    if not os.path.isdir("/run/systemd/system"):
        raise SystemExit("needs a systemd host with cgroup v2")
    tmp = tempfile.mkdtemp(prefix="govex-bench-hosts-")
    pol = json.loads(subprocess.run([gx, "policy", "show", "strict"], check=True,
                                    stdout=subprocess.PIPE).stdout)
    for k in ("memory_bytes", "processes", "cpu_ms"):
        pol["limits"].pop(k, None)
    nopol = os.path.join(tmp, "noagg.json")
    with open(nopol, "w") as f:
        json.dump(pol, f)
    base = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    cases = {
        "scope": ([gx, "run", "-c", "pass"], base),
        "none": ([gx, "run", "--policy", nopol, "-c", "pass"], dict(base, GOVEX_CGROUP="none")),
    }
    user = [] if os.geteuid() == 0 else ["--user"]
    cases["delegated"] = (["systemd-run", "-q", "--scope", "-p", "Delegate=yes"] + user +
                          [gx, "run", "-c", "pass"], base)
    # the scope's own cost, without govex's: subtracted from "delegated" below
    cases["scope-only"] = (["systemd-run", "-q", "--scope", "-p", "Delegate=yes"] + user +
                           ["true"], base)
    handed = None
    if os.geteuid() == 0:
        handed = "/sys/fs/cgroup/govex-bench-handed"
        os.makedirs(handed, exist_ok=True)
        cases["handed"] = ([gx, "run", "-c", "pass"], dict(base, GOVEX_CGROUP=handed))
    times = {k: [] for k in cases}
    try:
        for argv, env in cases.values():        # warm the caches (probe, report)
            timed(argv, env)
        for _ in range(a.n):
            for k, (argv, env) in cases.items():
                times[k].append(timed(argv, env))
    finally:
        if handed:
            os.rmdir(handed)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("govex run -c pass, %d runs each, interleaved (%s, kernel %s)"
          % (a.n, "root" if os.geteuid() == 0 else "user", os.uname().release))
    for k, v in times.items():
        v = sorted(v)
        print("  %-10s median %7.1f ms   p90 %7.1f ms   vs none %+7.1f ms"
              % (k, med[k], v[int(len(v) * 0.9) - 1], med[k] - med["none"]))
    print("  delegated minus the scope's own systemd-run: %+.1f ms vs none"
          % (med["delegated"] - med["scope-only"] - med["none"]))


if __name__ == "__main__":
    sys.exit(main())
