#!/usr/bin/env python3
"""Issue 9 items 5, 6, 7: the aggregate limits hold against memory the process does not
map (memfd, SysV and POSIX shared memory, tmpfs), tasks made by raw clone() or Python
threads, and CPU budgets far below a second.  Every bomb runs only after a canary run
under the same policy proved the sandbox (escapetest.run_bomb), and guards itself.

Contract (notes/contract.md 4): a per-run cgroup accounts memory (kernel memory
included), tasks and CPU; usage.max_rss_bytes is the cgroup's peak; the CPU overshoot
is bounded by ~max(1 ms, poll) x CPUs."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

MIB = 1 << 20
LIMIT = 512 * MIB            # the strict preset's memory_bytes
SLACK = 16 * MIB             # cgroup peak may exceed the limit by reclaim granularity
TOTAL = 1024 * MIB           # what each memory bomb tries to take


def _strict(t, name="p.json", **limits):
    lim = {"wall_ms": 20000, "memory_bytes": LIMIT}
    lim.update(limits)
    return e.policy(t, name=name, limits=lim)


def _memory_outcome(doc, res, prog, what, op_label):
    """The bomb ended as the contract says: killed for memory (memory_limit /
    resource_limit), or its allocation failed inside; the peak in the result is at
    least what was touched, and within the limit."""
    touched = prog.get(what, 0)
    peak = doc["usage"]["max_rss_bytes"]
    if doc["termination"] == "memory_limit":
        g.eq(doc["status"], "resource_limit", "status of a run killed for memory")
    else:
        g.check(res is not None and op_label in res,
                "the run neither ended memory_limit nor reported its allocation: "
                "termination %r status %r stdout %r" % (doc["termination"], doc["status"],
                                                          (doc.get("stdout") or "")[-300:]))
        got = res[op_label]
        g.check(not got.get("ok"),
                "%s took %d MiB under a %d MiB memory limit and the run went on: %r"
                % (what, touched // MIB, LIMIT // MIB, got))
    g.check(touched <= LIMIT + SLACK,
            "%s touched %d MiB under a %d MiB limit" % (what, touched // MIB, LIMIT // MIB))
    g.check(isinstance(peak, int) and peak >= touched - 8 * MIB,
            "usage.max_rss_bytes %r MiB is below what %s touched (%d MiB): the peak is "
            "not the cgroup's" % (peak and peak // MIB, what, touched // MIB))
    g.check(peak <= LIMIT + SLACK, "usage.max_rss_bytes %d MiB above the %d MiB limit"
            % (peak // MIB, LIMIT // MIB))


def _later_run_ok(t, pol):
    _, doc, res = e.run_probe(t, [["tasks", {"as": "tasks"}]], pol=pol)
    g.eq(doc["status"], "success", "status of the run after the bomb")
    g.eq(e.allowed(res, "tasks"), 1, "tasks of a later run")


def test_memfd(t):
    e.need_restricted("memory_aggregate")
    pol = _strict(t)
    t0 = time.monotonic()
    _, doc, res, prog = e.run_bomb(t, pol, [["memfd_fill", TOTAL, {"as": "memfd"}]])
    took = time.monotonic() - t0
    _memory_outcome(doc, res, prog, "memfd", "memfd")
    g.check(took < 20.0, "the memfd bomb took %.1f s" % took)
    _later_run_ok(t, pol)


def test_sysv_shm(t):
    e.need_restricted("memory_aggregate")
    pol = _strict(t)
    _, doc, res, prog = e.run_bomb(t, pol, [["sysv_fill", TOTAL, {"as": "sysv"}]])
    if res is not None and res["sysv"].get("errno") in ("ENOSYS", "EPERM") \
            and prog.get("sysv", 0) == 0:
        # SysV shared memory refused outright by the syscall filter: contained
        return _later_run_ok(t, pol)
    _memory_outcome(doc, res, prog, "sysv", "sysv")
    _later_run_ok(t, pol)


def test_sysv_msg_kernel_memory(t):
    """Messages queued in SysV message queues are kernel memory (up to msgmni x msgmnb,
    ~500 MiB per IPC namespace by default): the cgroup accounts kernel memory too."""
    e.need_restricted("memory_aggregate")
    pol = _strict(t)
    _, doc, res, prog = e.run_bomb(t, pol, [["msgq_fill", TOTAL, {"as": "msg"}]])
    if res is not None and res["msg"].get("errno") in ("ENOSYS", "EPERM") \
            and prog.get("sysvmsg", 0) == 0:
        return _later_run_ok(t, pol)
    _memory_outcome(doc, res, prog, "sysvmsg", "msg")
    _later_run_ok(t, pol)


def test_posix_shm(t):
    e.need_restricted("memory_aggregate")
    pol = _strict(t)
    _, doc, res, prog = e.run_bomb(t, pol, [["posix_shm_fill", TOTAL, {"as": "shm"}]])
    if res is not None and res["shm"].get("value") == "absent":
        # no /dev/shm in the sandbox: POSIX shared memory has nowhere to be made
        print("# no /dev/shm inside the sandbox: shm_open has nothing to fill")
        return _later_run_ok(t, pol)
    _memory_outcome(doc, res, prog, "posixshm", "shm")
    _later_run_ok(t, pol)


def test_tmpfs_fill(t):
    """The private /tmp and the fresh workdir are tmpfs: their pages are the run's
    memory (the peak shows them), and together they cannot pass the limit."""
    e.need_restricted("memory_aggregate")
    pol = _strict(t, file_size_bytes=64 * MIB)
    ops = [["files_fill", "/tmp/gvx-fill", TOTAL, {"as": "tmp"}],
           ["files_fill", "gvx-fill", TOTAL, {"as": "work"}]]
    # today's fresh workdir is a host directory under TMPDIR: keep it in the test's dir
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    os.chmod(t.tmp, 0o711)
    os.chmod(tmpdir, 0o777)
    _, doc, res, prog = e.run_bomb(t, pol, ops, extra_env={"TMPDIR": tmpdir})
    touched = prog.get("files", 0)
    # progress counts per op; the peak must cover at least the larger of them, and the
    # sum written by both must stay within the limit
    if res is not None:
        total = sum(prog_v for prog_v in [_written(res, "tmp"), _written(res, "work")])
        g.check(total <= LIMIT + SLACK, "tmpfs fills took %d MiB under a %d MiB limit"
                % (total // MIB, LIMIT // MIB))
    peak = doc["usage"]["max_rss_bytes"]
    g.check(isinstance(peak, int) and peak >= touched - 8 * MIB,
            "usage.max_rss_bytes %d MiB is below the %d MiB written to tmpfs: tmpfs pages "
            "are not accounted to the run" % (peak // MIB, touched // MIB))
    g.check(peak <= LIMIT + SLACK, "usage.max_rss_bytes %d MiB above the limit" % (peak // MIB))
    _later_run_ok(t, pol)


def _written(res, label):
    got = res.get(label) or {}
    if got.get("ok"):
        return got["value"]
    return 0


def test_threads_allocating(t):
    e.need_restricted("memory_aggregate")
    pol = _strict(t)
    _, doc, res, prog = e.run_bomb(t, pol, [["thread_alloc", 8, 128 * MIB, {"as": "thr"}]])
    _memory_outcome(doc, res, prog, "threads", "thr")
    _later_run_ok(t, pol)


# ---------------------------------------------------------------- tasks

def _tasks_outcome(doc, res, label, limit):
    g.check(res is not None, "the run printed no probe result: %r %r"
            % (doc["termination"], (doc.get("stdout") or "")[-300:]))
    got = res[label]
    g.check(got.get("ok"), "%s: %r" % (label, got))
    made, err, tasks = got["value"]
    g.check(tasks <= limit, "%d tasks in the run under processes: %d (%d made, stopped by %r)"
            % (tasks, limit, made, err))
    g.check(made < limit, "%d extra tasks made under processes: %d" % (made, limit))
    g.check(err is not None, "task creation never failed (%d made)" % made)


def test_raw_clone(t):
    e.need_restricted("pids_aggregate")
    e.need_x86_64()
    pol = _strict(t, processes=64)
    t0 = time.monotonic()
    _, doc, res, prog = e.run_bomb(t, pol, [["raw_clone", 400, {"as": "clone"}]])
    _tasks_outcome(doc, res, "clone", 64)
    g.eq(res["clone"]["value"][1], "EAGAIN", "errno of the clone past the limit")
    g.check(time.monotonic() - t0 < 20.0, "took too long")
    _later_run_ok(t, pol)


def test_thread_bomb(t):
    e.need_restricted("pids_aggregate")
    pol = _strict(t, processes=64)
    _, doc, res, prog = e.run_bomb(t, pol, [["thread_bomb", 400, {"as": "threads"}]])
    _tasks_outcome(doc, res, "threads", 64)
    _later_run_ok(t, pol)


# ---------------------------------------------------------------- CPU

def _cpu_run(t, cpu_ms, nthreads):
    pol = _strict(t, name="cpu-%d-%d.json" % (cpu_ms, nthreads), cpu_ms=cpu_ms,
                  wall_ms=15000)
    code = e.probe_code([["busy", 10, nthreads, {"as": "busy"}]])
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=25)
    doc = r.result()
    g.eq(doc["backend"]["name"], "restricted", "backend")
    g.eq(doc["termination"], "cpu_limit", "termination (cpu_ms %d, %d busy threads)"
         % (cpu_ms, nthreads))
    g.eq(doc["status"], "resource_limit", "status")
    return doc


def test_cpu_1ms(t):
    e.need_restricted("cpu_time_aggregate")
    for n in (1, 2):
        doc = _cpu_run(t, 1, n)
        used = doc["usage"]["cpu_ms"]
        g.check(isinstance(used, int) and used <= 25,
                "cpu_ms 1 with %d busy thread(s) used %r ms of CPU" % (n, used))


def test_cpu_300ms(t):
    e.need_restricted("cpu_time_aggregate")
    for n in (1, 2):
        doc = _cpu_run(t, 300, n)
        used = doc["usage"]["cpu_ms"]
        g.check(isinstance(used, int) and 290 <= used <= 350,
                "cpu_ms 300 with %d busy thread(s) used %r ms of CPU" % (n, used))


if __name__ == "__main__":
    sys.exit(g.main([
        ("memfd: 1 GiB of memfds under 512 MiB is a memory_limit, peak is real", test_memfd),
        ("SysV shm: touched segments are the run's memory", test_sysv_shm),
        ("SysV message queues (kernel memory) are the run's memory",
         test_sysv_msg_kernel_memory),
        ("POSIX shm in /dev/shm is the run's memory", test_posix_shm),
        ("tmpfs (/tmp, workdir) pages are the run's memory", test_tmpfs_fill),
        ("threads each allocating stay within the memory limit", test_threads_allocating),
        ("raw clone() threads stop at processes: 64", test_raw_clone),
        ("a threading.Thread bomb stops at processes: 64", test_thread_bomb),
        ("cpu_ms 1: at most ~25 ms of CPU, cpu_limit (1 and 2 threads)", test_cpu_1ms),
        ("cpu_ms 300: at most ~350 ms of CPU, cpu_limit (1 and 2 threads)", test_cpu_300ms),
    ]))
