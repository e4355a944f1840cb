#!/usr/bin/env python3
"""Second red team (issue 9), limits: per-run cgroups against memory the cgroup may not
see (AF_UNIX socket buffers, fds in flight), the cgroup's own files, CPU spread over many
threads, tasks made by racing threads, and whether usage in the result tells the truth.

Every payload runs behind escapetest.run_bomb (a canary run under the same policy
first, and the snippet's own guard).  A failing test here is a finding: it says what
was taken beyond which limit."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

MIB = 1 << 20


def _pol(t, name="p.json", **limits):
    lim = {"wall_ms": 20000}
    lim.update(limits)
    return e.policy(t, name=name, limits=lim)


def test_unix_socket_buffers(t):
    """memory_aggregate says kernel memory is included.  socketpair(AF_UNIX) stays
    allowed under network: deny; its queued data (skbs) is kernel memory.  With a 32 MiB
    memory limit and strict's 256 open files, fill every socket's buffer, then move the
    filled sockets into flight (SCM_RIGHTS) and take more.  What was queued must stay
    within the limit (or the run must end memory_limit)."""
    e.need_restricted("memory_aggregate")
    limit = 32 * MIB
    pol = _pol(t, memory_bytes=limit, open_files=256)
    t0 = time.monotonic()
    _, doc, res, prog = e.run_bomb(t, pol, [["rd_unix_fill", 512 * MIB, True,
                                             {"as": "unix"}]], timeout=40)
    took = time.monotonic() - t0
    queued = prog.get("unix", 0)
    peak = doc["usage"]["max_rss_bytes"]
    print("# queued %d MiB in AF_UNIX buffers, cgroup peak %s MiB, termination %s, "
          "result %r, %.1f s" % (queued // MIB, peak and peak // MIB, doc["termination"],
                                 res and res.get("unix"), took))
    g.check(queued <= limit + 16 * MIB,
            "AF_UNIX socket buffers held %d MiB of kernel memory under a %d MiB "
            "memory_aggregate limit (cgroup peak %s MiB, termination %s): socket "
            "buffers are not charged to the run's memory cgroup"
            % (queued // MIB, limit // MIB, peak and peak // MIB, doc["termination"]))


def test_unix_socket_buffers_peak_truthful(t):
    """Whatever the limit does, usage.max_rss_bytes claims to be the run's memory: it
    must not report a fraction of what the run held in socket buffers."""
    e.need_restricted("memory_aggregate")
    pol = _pol(t, memory_bytes=512 * MIB, open_files=256)
    _, doc, res, prog = e.run_bomb(t, pol, [["rd_unix_fill", 96 * MIB, False,
                                             {"as": "unix"}]], timeout=40)
    queued = prog.get("unix", 0)
    peak = doc["usage"]["max_rss_bytes"]
    print("# queued %d MiB, reported peak %s MiB" % (queued // MIB, peak and peak // MIB))
    g.check(isinstance(peak, int) and peak >= queued - 8 * MIB,
            "the run held %d MiB in AF_UNIX socket buffers and its result says "
            "max_rss_bytes %s MiB" % (queued // MIB, peak and peak // MIB))


def test_cgroup_files_unreachable(t):
    """/proc/self/cgroup shows the run's cgroup namespace root ("/"), and even with /sys
    as a read root the code cannot raise its own memory limit or move itself out."""
    e.need_restricted("memory_aggregate", "pids_aggregate")
    pol = _pol(t, memory_bytes=64 * MIB, processes=16)
    _, doc, res = e.run_proven(t, [["rd_cgroup_paths", {"as": "paths"}]], pol=pol)
    own = e.allowed(res, "paths")["own"]
    for line in own:
        g.check(line.endswith(":/"), "/proc/self/cgroup shows a host path: %r" % own)
    pol2 = e.policy(t, name="sys.json", limits={"wall_ms": 20000, "memory_bytes": 64 * MIB,
                                                "processes": 16},
                    filesystem={"read": ["/sys"]})
    r = t.run(["run", "--policy", pol2, "--json", "-c", e.proven_code([
        ["rd_cgroup_paths", {"as": "paths"}],
        ["rd_cgroup_write", "memory/memory.limit_in_bytes", "-1", {"as": "memroot"}],
        ["rd_cgroup_write", "memory/tasks", "1", {"as": "tasksroot"}],
        ["rd_cgroup_write", "pids/pids.max", "max", {"as": "pidsroot"}],
        ["rd_cgroup_write", "memory.max", "max", {"as": "v2"}],
    ])])
    doc = r.result()
    if doc["status"] == "policy_refused" or doc["status"] == "invalid_input":
        print("# a read root of /sys is refused at planning: %r" % doc.get("diagnostics"))
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    e.proven(res)
    for label in ("memroot", "tasksroot", "pidsroot", "v2"):
        g.check(not res[label].get("ok"), "a cgroup file under /sys was writable: %s %r"
                % (label, res[label]))


def test_cpu_spread_over_threads(t):
    """cpu_ms 60 burnt by 16 busy threads (on every CPU at once, started right after
    the process is up): the overshoot stays about one poll per CPU, and usage.cpu_ms is
    the cgroup's (at least the budget: the run was killed for spending it)."""
    e.need_restricted("cpu_time_aggregate")
    budget = 60
    pol = _pol(t, cpu_ms=budget, wall_ms=15000)
    code = e.probe_code([["busy", 10, 16, {"as": "busy"}]])
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=25)
    doc = r.result()
    g.eq(doc["termination"], "cpu_limit", "termination")
    used = doc["usage"]["cpu_ms"]
    ncpu = len(os.sched_getaffinity(0))
    g.check(isinstance(used, int) and budget <= used <= budget + 25 * ncpu + 20,
            "cpu_ms %d with 16 threads on %d CPUs: usage.cpu_ms %r" % (budget, ncpu, used))


def test_pids_racing_threads(t):
    """Threads made from many threads at once (racing each other) never pass
    processes: 32."""
    e.need_restricted("pids_aggregate")
    pol = _pol(t, processes=32, memory_bytes=512 * MIB)
    prelude = r'''
def op_rd_race(nstarters, each):
    _need_guard()
    stop = threading.Event()
    threading.stack_size(64 << 10)
    peak = [0]
    errs = []
    def starter():
        for _ in range(each):
            th = threading.Thread(target=stop.wait, daemon=True)
            try:
                th.start()
            except RuntimeError as ex:
                errs.append(str(ex))
                return
            peak[0] = max(peak[0], op_tasks())
    ss = []
    for _ in range(nstarters):
        s = threading.Thread(target=starter, daemon=True)
        try:
            s.start()
            ss.append(s)
        except RuntimeError as ex:
            errs.append(str(ex))
    for s in ss:
        s.join(10)
    n = op_tasks()
    stop.set()
    return [max(peak[0], n), len(errs)]
'''
    e.prove(t, pol)
    code = e.PROBE_SRC + "\n" + prelude + "\nguard(%r, %r)\nprobe([['rd_race', 12, 40, {'as': 'race'}]])\n" \
        % e.host_facts()
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=30)
    doc = r.result()
    res = e.probe_of(doc)
    g.check(res is not None, "no probe output: %r" % {k: doc.get(k) for k in
                                                     ("status", "termination", "stderr")})
    peak, nerr = e.allowed(res, "race")
    g.check(peak <= 32, "%d tasks seen under processes: 32" % peak)
    g.check(nerr > 0, "no thread start ever failed")


def _children_cpu_ms():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000.0


def test_cpu_outside_the_cgroup_exec_flood(t):
    """cpu_time_aggregate: every CPU-millisecond of the run.  Under subprocess: deny each
    execve after the first is a seccomp user notification answered by the shim, which is
    not in the run's cgroup.  8 threads calling execve in a loop make the host burn CPU
    the cgroup never sees.  Measured from outside: the CPU of govex and everything
    under it (children rusage of this test) minus usage.cpu_ms must stay small."""
    e.need_restricted("cpu_time_aggregate", "subprocess_deny")
    budget = 500
    pol = _pol(t, cpu_ms=budget, wall_ms=6000)
    e.prove(t, pol)
    before = _children_cpu_ms()
    r = t.run(["run", "--policy", pol, "--json", "-c",
               e.bomb_code([["rd_exec_flood", 5.0, 8, {"as": "flood"}]])], timeout=20)
    host = _children_cpu_ms() - before
    doc = r.result()
    used = doc["usage"]["cpu_ms"]
    print("# termination %s, usage.cpu_ms %r, host CPU of govex + shim + program %.0f ms, "
          "probe %r" % (doc["termination"], used, host,
                        (e.probe_of(doc) or {}).get("flood")))
    g.check(isinstance(used, int), "no cpu_ms in the result")
    g.check(host - used <= 150,
            "the run made the host spend %.0f ms of CPU and its result says cpu_ms %d "
            "(budget %d, termination %s): %.0f ms were spent outside the run's cgroup "
            "(the shim answering execve notifications), beyond cpu_ms"
            % (host, used, budget, doc["termination"], host - used))


def test_cpu_baseline_busy_loop(t):
    """Control for the test above: a plain busy loop under the same budget; the host's
    CPU beyond usage.cpu_ms (govex and the shim's own work) stays small."""
    e.need_restricted("cpu_time_aggregate")
    budget = 500
    pol = _pol(t, cpu_ms=budget, wall_ms=6000)
    before = _children_cpu_ms()
    r = t.run(["run", "--policy", pol, "--json", "-c",
               e.probe_code([["busy", 5, 1, {"as": "busy"}]])], timeout=20)
    host = _children_cpu_ms() - before
    doc = r.result()
    used = doc["usage"]["cpu_ms"]
    print("# busy: termination %s, cpu_ms %r, host %.0f ms" % (doc["termination"], used, host))
    g.eq(doc["termination"], "cpu_limit", "termination")
    g.check(host - used <= 150, "host CPU %.0f ms vs cpu_ms %d" % (host, used))


def test_cpu_outside_the_cgroup_output_flood(t):
    """Output past stdout_bytes: govex keeps reading (and dropping) whatever the run
    writes until it ends, so the host spends about as much CPU in govex as the run
    spends writing: with cpu_ms 1500 the host burns about twice that.  The run is not
    stopped at the bound (termination exited, status output_limit)."""
    e.need_restricted("cpu_time_aggregate")
    budget = 1500
    pol = _pol(t, cpu_ms=budget, wall_ms=6000)
    before = _children_cpu_ms()
    r = t.run(["run", "--policy", pol, "--json", "-c",
               e.probe_code([["rd_output_flood", 4.0, 1, {"as": "flood"}]])], timeout=20)
    host = _children_cpu_ms() - before
    doc = r.result()
    used = doc["usage"]["cpu_ms"]
    print("# status %s termination %s, stdout_bytes %r, cpu_ms %r, host CPU %.0f ms"
          % (doc["status"], doc["termination"], doc.get("stdout_bytes"), used, host))
    g.check(host - used <= 300,
            "the run wrote %r bytes past a %d-byte stdout bound; govex drained them all: "
            "host CPU %.0f ms for a run whose cpu_ms is %r (%s): the draining is CPU "
            "spent for the run outside its cgroup"
            % (doc.get("stdout_bytes"), 65536, host, used, doc["termination"]))


if __name__ == "__main__":
    sys.exit(g.main([
        ("AF_UNIX socket buffers (and fds in flight) stay within memory_bytes",
         test_unix_socket_buffers),
        ("max_rss_bytes counts what the run holds in AF_UNIX socket buffers",
         test_unix_socket_buffers_peak_truthful),
        ("cgroup files: namespace root only, not writable even with /sys readable",
         test_cgroup_files_unreachable),
        ("cpu_ms 60 spread over 16 threads: bounded overshoot, truthful cpu_ms",
         test_cpu_spread_over_threads),
        ("threads started by racing threads never pass processes: 32",
         test_pids_racing_threads),
        ("execve notifications: the shim's CPU is not charged beyond cpu_ms",
         test_cpu_outside_the_cgroup_exec_flood),
        ("control: a busy loop's host CPU matches its cpu_ms", test_cpu_baseline_busy_loop),
        ("output past stdout_bytes: govex's draining is not CPU beyond cpu_ms",
         test_cpu_outside_the_cgroup_output_flood),
    ]))
