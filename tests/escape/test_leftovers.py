#!/usr/bin/env python3
"""Issue 9 item 15: SIGKILL of govex itself (not of its group) with ten runs or calls in
flight leaves nothing behind once later runs have happened: no process of the dead
runs, no govex.* cgroup of a dead run, no workdir, and the cache directory does not
gain files per run -- nor per cgroup path govex is started from.

Contract 5: a run holds a slot lock (flock, released by the kernel when govex dies); the
slot names its cgroups (govex.slot-N) and the controlled backend's host workdir; whoever
takes slot N next reclaims what a killed run left there.  Contract 6: the restricted
fresh workdir is a tmpfs inside the sandbox, so nothing is on the host at all.
Contract 1: one backend-cache file per (build, euid), rewritten in place."""
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

N = 10
SLEEPER = r'''
import ctypes, os, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%(marker)r.encode()), 0, 0, 0)
open(%(flag)r, "w").write("up")
time.sleep(60)
'''
CALL_MODULE = r'''
import ctypes, os, time
def hold(marker, flag):
    ctypes.CDLL(None).prctl(15, ctypes.c_char_p(marker.encode()), 0, 0, 0)
    open(flag, "w").write("up")
    time.sleep(60)
    return 1
'''
SLOT_DIRS = ("/run/govex/slots",)


def _marker():
    return "gvx" + uuid.uuid4().hex[:11]


def _env(t, tmpdir, cache):
    env = dict(os.environ)
    env.update({"TMPDIR": tmpdir, "XDG_CACHE_HOME": cache})
    return env


def _dirs(t):
    os.chmod(t.tmp, 0o711)
    rw = t.path("rw")
    tmpdir = t.path("tmpdir")
    cache = t.path("cache")
    for d in (rw, tmpdir):
        os.mkdir(d)
        os.chmod(d, 0o777)
    os.mkdir(cache, 0o700)
    return rw, tmpdir, cache


def _cache_files(cache):
    """Files in the cache dir, slot lock files aside (as non-root the slot locks may live
    there: one per concurrent run at most, not one per run), and cached inspections aside
    (one per module source, not per run, pruned to 64: the killed calls' module may have
    been inspected before the kill)."""
    out = []
    for root, dirs, files in os.walk(cache):
        out += [os.path.join(root, f) for f in files
                if not f.endswith(".lock") and not f.startswith("inspect-v1-")]
    return sorted(out)


def _slot_free(n, cache):
    """True when nobody holds slot N's lock (a dead run's slot)."""
    runtime = os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "govex")
    for d in SLOT_DIRS + (runtime, os.path.join(runtime, "slots"), cache,
                          os.path.join(cache, "govex"), os.path.join(cache, "govex", "slots")):
        p = os.path.join(d, "%s.lock" % n)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    return None


def _dead_run_cgroups(killed, cache):
    """govex.* cgroups of runs that are over: today's govex.<pid>.<seq> of a govex pid
    this test killed, or govex.slot-N whose slot lock nobody holds.  (Other sessions on
    the machine may have cgroups of their own in the shared v1 hierarchies.)"""
    out = []
    for c in e.run_cgroups():
        name = os.path.basename(c)
        m = re.match(r"govex\.(\d+)\.\d+$", name)
        if m and int(m.group(1)) in killed:
            out.append(c)
            continue
        m = re.match(r"govex\.slot-(\d+)$", name)
        if m and _slot_free(m.group(1), cache):
            out.append(c)
    return out


def _kill_marked(marker):
    for pid in e.procs_with_comm(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start(argv, env, cwd):
    return subprocess.Popen([g.GOVEX] + argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _kill_in_flight(t, procs, flags, marker):
    """Waits for every run to be up, then SIGKILLs each govex process (only govex: its
    children are left to govex's own mechanisms)."""
    t.defer(_kill_marked, marker)
    for p in procs:
        t.defer(e._killpg, p.pid)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and not all(os.path.exists(f) for f in flags):
        time.sleep(0.05)
    up = [f for f in flags if os.path.exists(f)]
    g.check(len(up) == len(flags), "only %d of %d runs came up" % (len(up), len(flags)))
    killed = set()
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
        killed.add(p.pid)
    for p in procs:
        p.wait(10)
    return killed


def _next_runs(t, env, pol, n=1):
    """N short runs at once (a wave takes the slots the dead runs held)."""
    procs = [_start(["run", "--policy", pol, "--json", "-c", "print(1)"], env, t.tmp)
             for _ in range(n)]
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            e._killpg(p.pid)
            raise g.Failure("a run after the kills did not finish in 30 s")
    g.check(all(p.returncode == 0 for p in procs),
            "runs after the kills failed: %r" % [p.returncode for p in procs])


def _check(t, killed, marker, tmpdir, cache, before_cache, env, pol):
    # the next run
    _next_runs(t, env, pol, 1)
    time.sleep(0.5)
    alive = e.procs_with_comm(marker)
    g.eq(alive, [], "processes of the SIGKILLed runs still alive after the next run")
    # a wave that takes every slot the dead runs could have held
    _next_runs(t, env, pol, N)
    left = _dead_run_cgroups(killed, cache)
    g.eq(left, [], "cgroups of SIGKILLed runs left behind")
    g.eq(sorted(os.listdir(tmpdir)), [], "workdirs of SIGKILLed runs left in TMPDIR")
    inspections = [f for _, _, fs in os.walk(cache) for f in fs if f.startswith("inspect-v1-")]
    g.check(len(inspections) <= 1, "one module, at most one cached inspection: %r"
            % inspections)
    after = _cache_files(cache)
    g.check(len(after) <= len(before_cache),
            "the cache dir grew from %d to %d files over %d runs: %r"
            % (len(before_cache), len(after), 2 * N + 1, after))


def test_sigkill_runs(t):
    e.need_restricted("process_tree_kill")
    rw, tmpdir, cache = _dirs(t)
    env = _env(t, tmpdir, cache)
    marker = _marker()
    pol = e.policy(t, filesystem={"write": [rw]}, limits={"wall_ms": 60000})
    quick = e.policy(t, name="quick.json")
    _next_runs(t, env, quick, 1)              # warm the caches
    before = _cache_files(cache)
    flags = [os.path.join(rw, "flag%d" % i) for i in range(N)]
    procs = [_start(["run", "--policy", pol, "--json", "-c",
                     SLEEPER % {"marker": marker, "flag": f}], env, t.tmp) for f in flags]
    killed = _kill_in_flight(t, procs, flags, marker)
    _check(t, killed, marker, tmpdir, cache, before, env, quick)


def test_sigkill_calls(t):
    """Ten calls in flight, five on each backend (strict = restricted, trusted =
    controlled, whose fresh workdir is a host directory)."""
    e.need_restricted("process_tree_kill")
    rw, tmpdir, cache = _dirs(t)
    env = _env(t, tmpdir, cache)
    marker = _marker()
    mod = t.write("m.py", CALL_MODULE)
    os.chmod(mod, 0o644)
    strict = e.policy(t, name="strict.json", filesystem={"write": [rw]},
                      limits={"wall_ms": 60000})
    trusted = g.preset("trusted")
    trusted["limits"] = dict(trusted["limits"], wall_ms=60000)
    trusted = t.write_json("trusted.json", trusted)
    quick = e.policy(t, name="quick.json")
    _next_runs(t, env, quick, 1)
    before = _cache_files(cache)
    flags = [os.path.join(rw, "flag%d" % i) for i in range(N)]
    procs = []
    for i, f in enumerate(flags):
        pol = strict if i % 2 == 0 else trusted
        procs.append(_start(["call", "--policy", pol, "--json", mod + ":hold", "--args",
                             json.dumps({"marker": marker, "flag": f})], env, t.tmp))
    killed = _kill_in_flight(t, procs, flags, marker)
    _check(t, killed, marker, tmpdir, cache, before, env, quick)


def _own_cgroup_dir():
    """A cgroup directory of ours where we may make children (root, v1 or v2)."""
    for d in e.cgroup_parents():
        if os.access(d, os.W_OK) and os.path.exists(os.path.join(d, "cgroup.procs")):
            return d
    return None


def test_cache_bounded_across_cgroups(t):
    """govex started from 5 different cgroups: the backend cache is one file per
    (build, euid), rewritten in place, not one per cgroup path."""
    e.need_restricted("process_tree_kill")
    if os.geteuid() != 0:
        e.skip("root", "making cgroups to start govex from needs root here")
    parent = _own_cgroup_dir()
    if not parent:
        e.skip("cgroup", "no writable cgroup directory of ours")
    rw, tmpdir, cache = _dirs(t)
    env = _env(t, tmpdir, cache)
    quick = e.policy(t, name="quick.json")
    _next_runs(t, env, quick, 1)
    before = _cache_files(cache)
    made = []
    tag = uuid.uuid4().hex[:8]
    try:
        for i in range(5):
            d = os.path.join(parent, "gvx-rtb-%s-%d" % (tag, i))
            os.mkdir(d)
            made.append(d)
            procs_file = os.path.join(d, "cgroup.procs")

            def enter(p=procs_file):
                with open(p, "w") as f:
                    f.write(str(os.getpid()))
            p = subprocess.Popen([g.GOVEX, "run", "--policy", quick, "--json", "-c",
                                  "print(1)"], cwd=t.tmp, env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=enter)
            try:
                p.wait(30)
            finally:
                e._killpg(p.pid)
            g.eq(p.returncode, 0, "run from cgroup %d" % i)
    finally:
        for d in made:
            for sub in os.listdir(d) if os.path.isdir(d) else []:
                if sub.startswith("govex."):
                    try:
                        os.rmdir(os.path.join(d, sub))
                    except OSError:
                        pass
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.05)
    after = _cache_files(cache)
    g.check(len(after) <= len(before),
            "the cache dir grew from %d to %d files after runs from 5 cgroups: %r"
            % (len(before), len(after), [os.path.basename(a) for a in after]))


if __name__ == "__main__":
    sys.exit(g.main([
        ("SIGKILL of govex with 10 runs in flight leaves nothing", test_sigkill_runs),
        ("SIGKILL of govex with 10 calls in flight (both backends) leaves nothing",
         test_sigkill_calls),
        ("the cache dir does not grow per cgroup path", test_cache_bounded_across_cgroups),
    ]))
