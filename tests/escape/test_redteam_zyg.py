#!/usr/bin/env python3
"""Red team RT-Z: attacks on the warm template's C side (zyg.c) and on spares
(template_spare.c): runs made ahead of their requests, every step of their own taken
(namespaces, cgroups, seccomp, Landlock, ids, rlimits) before a "go" hands them the run's
own records.

DESIGN.md "Warm runs": same controls, same result document, same statuses as a cold run;
a run never sees another run's state.  "Trust boundaries": runs cannot see or touch each
other; nothing a run could have written decides anything.  Each test below attacks one
of those through what is new here -- the network-namespace pool, the spares' shapes and
their go, the run's init (PID 1, B) as seen from the program (P), the helper loaded from a
memfd, the host side's bookkeeping of spares -- and fails when the attack works.

GOVEX_WARM_SPARE=1 is set around the library runtimes that must run on spares (each run
then waits for a spare made for its shape; the stats' spare_runs prove it).  Anything
that could harm the host runs behind test_redteam_warm's guard (the snippet exits 97
unless it finds itself in a sandbox).  Prints TAP."""
import contextlib
import os
import secrets
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402
import test_redteam_warm as rw  # noqa: E402


# ---------------------------------------------------------------- helpers

@contextlib.contextmanager
def envvar(**kv):
    """Sets (None: unsets) environment variables of this process -- the library reads
    GOVEX_WARM_SPARE and GOVEX_WARM_RECYCLE with getenv at each run -- restored after."""
    old = {k: os.environ.get(k) for k in kv}
    try:
        for k, v in kv.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wstats(rt):
    s = rt.stats()
    return (s or {}).get("warm") or {}


def spare_runs(rt):
    return wstats(rt).get("spare_runs")


def expect_spares(rt, before, n, what):
    """The runtime's stats show N more runs on spares than BEFORE."""
    after = spare_runs(rt)
    if before is None or after is None or rw.COLD_DEBUG:
        return
    g.check(after - before >= n, "%s: %d runs but spare_runs went %r -> %r (stats %r)"
            % (what, n, before, after, wstats(rt)))


def host_fds():
    """{fd: what} of this process (the library's host side lives here)."""
    out = {}
    for n in os.listdir("/proc/self/fd"):
        try:
            out[int(n)] = os.readlink("/proc/self/fd/" + n)
        except OSError:
            pass
    return out


def kinds(fds):
    """The counts of pidfds and sockets among FDS' targets."""
    pid = sum(1 for v in fds.values() if "pidfd" in v)
    sock = sum(1 for v in fds.values() if v.startswith("socket:"))
    return pid, sock


def inits():
    return sorted(p for p, (_, c) in rw.descendants().items() if c == "govex-init")


def limit_vector(**kw):
    """struct govex_limits of a request (rw._Req.limits: wall, cpu, memory, processes,
    open_files, file_size, stdout, stderr)."""
    order = ["wall_ms", "cpu_ms", "memory_bytes", "processes", "open_files",
             "file_size_bytes", "stdout_bytes", "stderr_bytes"]
    return [kw.get(k, 0) for k in order]


def summary(doc):
    return (doc.get("status"), doc.get("termination"), doc.get("exit_code"), doc.get("signal"),
            sorted(d.get("code") for d in doc.get("diagnostics") or [] if isinstance(d, dict)))


def diags(doc):
    return [(d.get("code"), d.get("message")) for d in doc.get("diagnostics") or []
            if isinstance(d, dict)]


# ================================================================ 1. spares' rlimits

def cold_min_memory(repl, lo, hi):
    """The smallest memory_bytes (MiB, LO..HI) at which a cold run of this kind succeeds,
    or None."""
    code = "1 + 1\n" if repl else "print('hi')\n"
    for mb in range(lo, hi + 1):
        rt = rw.WarmRuntime(rw.strict_doc(limits={"memory_bytes": mb << 20}), warm=False)
        try:
            d = rt.run(code, repl=repl)
        finally:
            rt.close()
        if d["status"] == "success":
            return mb
    return None


def test_low_memory_limit_on_a_spare_as_cold(t):
    """A spare took its rlimits ahead (RLIMIT_AS = memory_bytes) and only then maps the
    go's spec (zyg.c, program_go: spec_map's mmap after the ZR_RLIMIT records were set).
    A memory limit a cold run lives with (1 MiB over the smallest a cold run of the kind
    succeeds at) must let the same run on a spare succeed too -- not launch_failed
    ("shim: Cannot allocate memory"), which also retires the template at every such
    run (each next run pays a template start)."""
    e.need_restricted("memory_aggregate")
    bad = []
    for repl, lo, hi in ((False, 8, 40), (True, 12, 48)):
        what = "REPL" if repl else "plain"
        mb = cold_min_memory(repl, lo, hi)
        if mb is None:
            continue  # no cold run of this kind fits any of these limits here
        mb += 1
        pol = rw.strict_doc(limits={"memory_bytes": mb << 20})
        cold = rw.WarmRuntime(pol, warm=False)
        try:
            cd = cold.run("1 + 1\n" if repl else "print('hi')\n", repl=repl)
        finally:
            cold.close()
        with envvar(GOVEX_WARM_SPARE="1"):
            rt = rw.with_runtime(t, pol)
            before = spare_runs(rt)
            for i in range(3):
                d = rt.run("1 + 1\n" if repl else "print('hi')\n", repl=repl)
                if summary(d) != summary(cd):
                    bad.append("%s run %d on a spare, memory_bytes %d MiB: %r %r; cold: %r"
                               % (what, i, mb, summary(d), diags(d), summary(cd)))
            expect_spares(rt, before, 3, "%s runs at %d MiB" % (what, mb))
            w = wstats(rt)
            if w.get("ready") is not True:
                bad.append("%s: the runtime's templates were retired by these runs: %r"
                           % (what, w))
            rt.close()
    g.check(not bad, "a limit a cold run meets fails on a spare:\n  " + "\n  ".join(bad))


# ================================================================ 2. spares' shapes

SHAPE_SEEN = r'''
import resource, errno
rl = {n: list(resource.getrlimit(getattr(resource, n)))
      for n in ("RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CPU", "RLIMIT_AS")}
kids, err = [], None
for i in range(40):
    try:
        pid = _o.fork()
    except OSError as x:
        err = errno.errorcode.get(x.errno, x.errno)
        break
    if pid == 0:
        import time
        time.sleep(0.5)
        _o._exit(0)
    kids.append(pid)
for k in kids:
    _o.waitpid(k, 0)
emit({"rl": rl, "forked": len(kids), "fork_err": err})
'''


def test_each_shape_field_gets_its_own_spare(t):
    """A spare is taken only by a run shaped like it (template_spare.c, shape_fits).
    After spares were made for the policy's limits, a request changing ONE of the limits
    a spare took ahead (memory_bytes -> RLIMIT_AS and the memory cgroup, open_files ->
    RLIMIT_NOFILE, file_size_bytes -> RLIMIT_FSIZE, cpu_ms -> RLIMIT_CPU and the budget,
    processes -> the pids cgroup) runs with its own value, twice (the second on a spare
    made for its shape), and the policy's again after."""
    e.need_restricted("memory_aggregate", "pids_aggregate", "cpu_time_aggregate")
    pol = rw.strict_doc(subprocess="allow")
    base = pol["limits"]
    code = rw.guarded(SHAPE_SEEN)
    changes = [("open_files", 40, lambda o: o["rl"]["RLIMIT_NOFILE"][0] == 40),
               ("file_size_bytes", 1 << 20, lambda o: o["rl"]["RLIMIT_FSIZE"][0] == 1 << 20),
               ("cpu_ms", 3000, lambda o: o["rl"]["RLIMIT_CPU"][0] == 3),
               ("memory_bytes", 200 << 20, lambda o: o["rl"]["RLIMIT_AS"][0] == 200 << 20),
               ("processes", 6, lambda o: o["forked"] == 5)]

    def default_ok(o):
        return (o["rl"]["RLIMIT_NOFILE"][0] == base["open_files"] and
                o["rl"]["RLIMIT_FSIZE"][0] == base["file_size_bytes"] and
                o["rl"]["RLIMIT_CPU"][0] == (base["cpu_ms"] + 999) // 1000 and
                o["rl"]["RLIMIT_AS"][0] == base["memory_bytes"] and
                o["forked"] == min(40, base["processes"] - 1))

    bad = []
    with envvar(GOVEX_WARM_SPARE="1"):
        rt = rw.with_runtime(t, pol)
        before = spare_runs(rt)
        n = 0
        for name, value, ok in changes:
            seq = [("policy's", None, default_ok), (name, {name: value}, ok),
                   (name + " again", {name: value}, ok), ("policy's after " + name, None,
                                                           default_ok)]
            for label, lim, check in seq:
                d = rt.run(code, limits=limit_vector(**(lim or {})))
                n += 1
                rw.no_guard_refusal(d)
                try:
                    o = rw.emitted(d, label)
                except g.Failure as x:
                    bad.append(str(x))
                    continue
                if not check(o):
                    bad.append("%s run: %r" % (label, o))
        expect_spares(rt, before, n, "shape runs")
    g.check(not bad, "a run got another shape's spare:\n  " + "\n  ".join(bad))


# ================================================================ 3. network namespaces

NETNS = r"""
import socket, time, array
t0 = time.monotonic()
ns = _o.readlink("/proc/self/ns/net")
def rd(p):
    try:
        return open(p).read()
    except OSError as x:
        return "ERR %d" % x.errno
# what is in this namespace as the run starts: unix sockets by inode (the run's init may
# still hold its own socketpair with the program a moment: told apart by the inodes
# the earlier runs report as theirs)
unix = [l.split()[6] for l in rd("/proc/self/net/unix").splitlines()[1:] if len(l.split()) > 6]
dev = {}
for l in rd("/proc/self/net/dev").splitlines()[2:]:
    name, _, rest = l.partition(":")
    dev[name.strip()] = [int(x) for x in rest.split()][:10]
made, mine = [], []
for fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM),
                 (socket.AF_NETLINK, socket.SOCK_RAW), (17, socket.SOCK_RAW),
                 (socket.AF_UNIX, socket.SOCK_DGRAM)):
    try:
        globals().setdefault("_keep", []).append(socket.socket(fam, typ))
        made.append([fam, typ])
    except OSError:
        pass
if LEAVE:
    # unix socketpairs (allowed under network: deny, as cold) left in flight: each end's
    # descriptor sent into its own queue, both closed -- only the kernel's garbage
    # collector frees them, some time after the run ended
    for i in range(LEAVE):
        try:
            a, b = socket.socketpair()
        except OSError:
            break
        mine += [str(_o.fstat(a.fileno()).st_ino), str(_o.fstat(b.fileno()).st_ino)]
        fds = array.array("i", [a.fileno(), b.fileno()])
        try:
            b.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            a.sendmsg([b"y"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        except OSError:
            pass
        a.close()
        b.close()
time.sleep(HOLD)
emit({"ns": ns, "unix": unix, "dev": dev, "made": made, "mine": mine,
      "t": [t0, time.monotonic()]})
"""


def test_network_namespaces_own_and_clean(t):
    """network: deny: each run has a network namespace of its own (zyg.c: one of the
    template's pool, one run at a time, kept only when clean).  Eight runs in flight at
    once never share one; a run leaves unix sockets in flight in its namespace
    (socketpairs, each end queued in itself: freed only by the garbage collector, after
    the run) and the runs right after it -- one of which the pool may hand that
    namespace -- never find one of them there; no run finds an interface but a loopback
    that never moved a packet, nor can make an inet, netlink or packet socket."""
    e.need_restricted()
    pol = rw.strict_doc()
    bad = []
    with envvar(GOVEX_WARM_SPARE="1"):
        rt = rw.with_runtime(t, pol)
        rt.run("pass\n")

        def one(hold, leave=0):
            d = rt.run(rw.guarded("HOLD, LEAVE = %r, %r\n" % (hold, leave) + NETNS))
            rw.no_guard_refusal(d)
            return rw.emitted(d, "netns run")

        conc = rw.parallel([lambda: one(1.0) for _ in range(8)])
        for i, a in enumerate(conc):
            for b in conc[i + 1:]:
                if a["ns"] == b["ns"] and a["t"][0] < b["t"][1] and b["t"][0] < a["t"][1]:
                    bad.append("two runs in flight at once share %s" % a["ns"])
        seen = list(conc)
        left = set()
        for rnd in range(40):
            o = one(0, leave=40)
            seen.append(o)
            if not o["mine"]:
                bad.append("the attack made no socketpair (test assumption): %r" % o)
            left.update(o["mine"])
            # at once, runs enough to take every run init made ahead: one of them is
            # likely the one the pool gave the attacker's namespace to next
            for n in rw.parallel([lambda: one(0) for _ in range(6)]):
                seen.append(n)
                found = [ino for ino in n["unix"] if ino in left]
                if found:
                    bad.append("%s: a run finds %d sockets an earlier run left there"
                               % (n["ns"], len(found)))
    for o in seen:
        if o["made"]:
            bad.append("a run made sockets under network: deny: %r" % o["made"])
        if set(o["dev"]) - {"lo"} or any(o["dev"].get("lo", [0])):
            bad.append("%s: interfaces/counters: %r" % (o["ns"], o["dev"]))
    g.check(not bad, "\n  ".join(sorted(set(bad))[:20]))


# ================================================================ 4. PID 1 from P

PID1 = r'''
import ctypes, struct, signal, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) for x in a])
    return [r, ctypes.get_errno()]
got = {}
pfd = sc(434, 1, 0)
got["getfd"] = [n for n in range(64) if pfd[0] >= 0 and sc(438, pfd[0], n, 0)[0] >= 0]
got["ptrace"] = [sc(101, req, 1, 0, 0)[0] for req in (16, 0x4206)]
class IOV(ctypes.Structure):
    _fields_ = [("b", ctypes.c_void_p), ("l", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
loc, rem = IOV(ctypes.addressof(buf), 64), IOV(0x400000, 64)
got["vm"] = [libc.syscall(ctypes.c_long(nr), ctypes.c_long(1), ctypes.byref(loc),
                          ctypes.c_long(1), ctypes.byref(rem), ctypes.c_long(1),
                          ctypes.c_long(0)) for nr in (310, 311)]
got["kcmp"] = sc(312, 2, 1, 0, 0, 0)[0]
# a forged report (struct govex__shim_report: exited 0, nothing killed) and a forged
# launch error, on every descriptor this process has or can open of PID 1's
FAKE = struct.pack("=iiqqiII4x", 0, 0, 0, 0, 0, 0, 0)
wrote = []
fds = [int(n) for n in _o.listdir("/proc/self/fd")]
std = set()
for fd in (0, 1, 2):
    try:
        std.add(_o.fstat(fd).st_ino)
    except OSError:
        pass
for fd in fds:
    try:
        other = _o.fstat(fd).st_ino not in std
    except OSError:
        other = False
    if fd > 2 and other:
        try:
            _o.write(fd, FAKE)
            wrote.append(["self", fd])
        except OSError:
            pass
for n in range(64):
    try:
        fd = _o.open("/proc/1/fd/%d" % n, _o.O_WRONLY | _o.O_NONBLOCK)
    except OSError:
        continue
    try:
        _o.write(fd, FAKE)
        wrote.append(["pid1", n])
    except OSError:
        pass
    _o.close(fd)
got["wrote"] = wrote
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD,
          signal.SIGSTOP, signal.SIGKILL):
    try:
        _o.kill(1, s)
    except OSError:
        pass
got["alive"] = True
emit(got)
_o._exit(3)
'''


def pid1_bad(doc, what):
    out = []
    rw.no_guard_refusal(doc)
    o = rw.emitted(doc, what)
    if o["getfd"]:
        out.append("%s: pidfd_getfd took PID 1's descriptors %r" % (what, o["getfd"]))
    if any(r >= 0 for r in o["ptrace"]) or any(r >= 0 for r in o["vm"]) or o["kcmp"] >= 0:
        out.append("%s: ptrace/process_vm/kcmp on PID 1: %r" % (what, o))
    if o["wrote"]:
        out.append("%s: a forged report written to %r" % (what, o["wrote"]))
    if (doc.get("status"), doc.get("exit_code")) != ("execution_failed", 3):
        out.append("%s: the run exited 3, the result says %r %r" % (what, summary(doc),
                                                                  diags(doc)))
    return out


def nobody_spare_run(t, sb, code):
    """`govex run` as uid 65534 (one user namespace: the run's init has the run's uid)
    with GOVEX_WARM=1 and GOVEX_WARM_SPARE=1; checks GOVEX_WARM_LOG says "warm spare"."""
    home, env, binary = sb
    pol = e.without_aggregate(e.policy(t, name="nobody/p.json"))
    os.chmod(pol, 0o644)
    log = os.path.join(home, "warm-%s.log" % secrets.token_hex(4))
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", code], cwd=home,
                              env=dict(env, GOVEX_WARM="1", GOVEX_WARM_SPARE="1",
                                       GOVEX_WARM_LOG=log),
                              preexec=e.nobody_preexec(), binary=binary)
    doc = e.result_of(out)
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    g.check(rw.COLD_DEBUG or lines[-1:] == ["warm spare"],
            "as nobody the run was not on a spare: %r (%r)" % (lines, err[-300:]))
    return doc


def test_pid1_unreachable_and_report_unforgeable(t):
    """From the program (P): PID 1 (the run's init, B: its report pipe, kill pipe,
    watch socket and guard listener) through pidfd_getfd, ptrace, process_vm_readv and
    writev, kcmp, /proc/1/fd, every signal; and a forged shim report (exited 0) written
    to every descriptor P has.  The run exits 3 and its result says so -- as root and
    as an unprivileged caller (where B and P share one uid), plain and REPL kinds."""
    e.need_restricted()
    bad = []
    code = rw.guarded(PID1)
    with envvar(GOVEX_WARM_SPARE="1"):
        rt = rw.with_runtime(t, rw.strict_doc())
        before = spare_runs(rt)
        for i in range(2):
            bad += pid1_bad(rt.run(code), "root, spare run %d" % i)
        expect_spares(rt, before, 2, "PID 1 runs")
    try:
        sb = e.need_unprivileged_sandbox(t)
    except g.Skip:
        sb = None
    if sb:
        bad += pid1_bad(nobody_spare_run(t, sb, code), "as nobody, on a spare")
    g.check(not bad, "\n  ".join(bad))


# ================================================================ 5. the helper's memfd

HELPER = r'''
import hashlib
maps = [l.split() for l in open("/proc/self/maps") if "govex-zyg" in l]
mem = _o.open("/proc/self/mem", _o.O_RDONLY)
h = hashlib.sha256()
ranges = []
for m in maps:
    a, b = (int(x, 16) for x in m[0].split("-"))
    ranges.append([m[0], m[1]])
    # what the inits execute and read, not the data segment (a private copy each
    # process writes: a spare's and a forked run's differ)
    if "r" in m[1] and "w" not in m[1]:
        h.update(_o.pread(mem, b - a, a))
_o.close(mem)
opened = []
def try_rw(p):
    try:
        fd = _o.open(p, _o.O_RDWR)
    except OSError as x:
        return x.errno
    opened.append(p)
    try:
        # e_ident's padding (bytes 9-15 of the ELF header, in the first mapped page):
        # harmless to the code, seen by every later mapping of the file
        _o.pwrite(fd, b"RTZ", 9)
        opened.append(p + " (written)")
    except OSError:
        pass
    _o.close(fd)
if ATTACK:
    for n in _o.listdir("/proc/self/fd"):
        try:
            if "memfd" in _o.readlink("/proc/self/fd/" + n):
                try_rw("/proc/self/fd/" + n)
        except OSError:
            pass
    for r, _p in ranges:
        try_rw("/proc/self/map_files/" + r)
        try_rw("/proc/1/map_files/" + r)
emit({"maps": ranges, "hash": h.hexdigest(), "opened": opened})
'''


def test_helper_memfd_unreachable(t):
    """The template's C side is a shared object in a memfd every later run init (B, as
    root in the run's namespaces) executes from.  A run looks for a writable way to it
    (an inherited descriptor, /proc/self/map_files, /proc/1/map_files) and writes a
    marker where it can; the helper's mapped bytes of the next runs are the first run's
    (nothing of one run changes the code later runs' inits run)."""
    e.need_restricted()
    rt = rw.with_runtime(t, rw.strict_doc())
    rt.run("pass\n")
    first = rw.emitted(rt.run(rw.guarded("ATTACK = False\n" + HELPER)), "before")
    g.check(first["maps"], "no govex-zyg mapping in a warm run: is this zyg.c's template?")
    att = rw.emitted(rt.run(rw.guarded("ATTACK = True\n" + HELPER)), "attack")
    bad = []
    if att["opened"]:
        bad.append("the helper opened for writing: %r" % att["opened"])
    for i in range(3):
        later = rw.emitted(rt.run(rw.guarded("ATTACK = False\n" + HELPER)), "later %d" % i)
        if later["hash"] != first["hash"]:
            bad.append("run %d after the attack maps other helper bytes" % i)
    g.check(not bad, "\n  ".join(bad))


# ================================================================ 6. host-side leaks

def test_failed_go_leaks_nothing(t):
    """A run that takes a spare but whose go cannot be made (its environment puts its
    spec over ZYG_SPEC_MAX: rwarm_go_spec_memfd fails) ends launch_failed -- and leaves
    nothing on the host: the spare's watch socket and its init's pidfd are closed, and
    the spare's init is not kept waiting for a go that never comes (template_spare.c,
    rwarm_spare_run)."""
    e.need_restricted()
    names = ["RTZBIG%d" % i for i in range(10)]
    pol = rw.strict_doc(environment={"allow": names, "inherit": False,
                                     "set": {"LANG": "C.UTF-8"}})
    fd0 = host_fds()
    bad = []
    big = ["%s=%s" % (n, "v" * (7 << 20)) for n in names]
    with envvar(GOVEX_WARM_SPARE="1"):
        rt = rw.WarmRuntime(pol)
        try:
            rt.run("pass\n")
            before = spare_runs(rt)
            for i in range(2):
                d = rt.run("print('x')\n", env=big)
                if d["status"] == "success":
                    bad.append("a %d MiB environment ran?" % (len(big) * 7))
            expect_spares(rt, before, 2, "runs with an oversized go")
            d = rt.run("print('after')\n")
            e.eq((d["status"], d["stdout"]), ("success", "after\n"), "the run after")
        finally:
            rt.close()
    del big
    fd1 = host_fds()
    p0, s0 = kinds(fd0)
    p1, s1 = kinds(fd1)
    if (p1, s1) != (p0, s0):
        bad.append("after runtime free the host holds %d pidfds and %d sockets more: %r"
                   % (p1 - p0, s1 - s0, {k: v for k, v in fd1.items() if k not in fd0}))
    g.check(e.wait_until(lambda: not rw.descendants(zombies=True), 5.0),
            "processes left after runtime free: %r" % rw.descendants(zombies=True))
    g.check(not bad, "\n  ".join(bad))


def test_spare_churn_leaks_nothing(t):
    """Shapes changing at every run (three limit sets), both kinds (plain and REPL),
    bursts of six concurrent runs, templates retired every second run
    (GOVEX_WARM_RECYCLE=2): what the runtime holds stays bounded (run inits, host
    descriptors, slots in the stats), and after runtime free nothing is left: no process,
    no descriptor, no run cgroup of a free slot."""
    e.need_restricted()
    fd0 = host_fds()
    lims = [limit_vector(), limit_vector(memory_bytes=200 << 20), limit_vector(open_files=100)]
    bad = []
    peak = {"inits": 0, "fds": 0, "slots": 0}
    with envvar(GOVEX_WARM_RECYCLE="2"):
        rt = rw.WarmRuntime(rw.strict_doc())
        try:
            for i in range(18):
                repl = i % 4 == 3
                if i % 6 == 5:
                    ds = rw.parallel([lambda j=j: rt.run("print(%d)\n" % j, limits=lims[j % 3])
                                      for j in range(6)])
                    for j, d in enumerate(ds):
                        if (d["status"], d["stdout"]) != ("success", "%d\n" % j):
                            bad.append("burst run %d: %r %r" % (j, summary(d), d["stdout"]))
                d = rt.run("%d\n" % i if repl else "print(%d)\n" % i, limits=lims[i % 3],
                           repl=repl)
                ok = d.get("value") == i if repl else d["stdout"] == "%d\n" % i
                if d["status"] != "success" or not ok:
                    bad.append("run %d: %r %r %r" % (i, summary(d), d["stdout"], d.get("value")))
                if i % 3 == 2:
                    time.sleep(0.3)
                    peak["inits"] = max(peak["inits"], len(inits()))
                    peak["fds"] = max(peak["fds"], len(host_fds()))
                    peak["slots"] = max(peak["slots"], len(wstats(rt).get("spare_slots") or []))
        finally:
            rt.close()
    # two templates (plain, REPL), each with its own two inits made ahead and the host's
    # two spares (an init each); a retired template's until its last run ends
    if peak["inits"] > 16 or peak["slots"] > 4 or peak["fds"] > len(fd0) + 64:
        bad.append("what the runtime held grew: %r (host fds at start %d)" % (peak, len(fd0)))
    fd1 = host_fds()
    if kinds(fd1) != kinds(fd0) or len(fd1) > len(fd0):
        bad.append("host descriptors after runtime free: %r"
                   % {k: v for k, v in fd1.items() if k not in fd0})
    g.check(e.wait_until(lambda: not rw.descendants(zombies=True), 5.0),
            "processes left after runtime free: %r" % rw.descendants(zombies=True))
    left = e.wait_until(lambda: not e.leftover_run_cgroups(), 3.0)
    if not left:
        bad.append("run cgroups left: %r" % e.leftover_run_cgroups())
    g.check(not bad, "\n  ".join(bad))


# ================================================================ 7. concurrent spares

OWN = r'''
import sys, time, json
t0 = time.monotonic()
inp = sys.stdin.read()
f = open("in.txt").read()
st = {}
for l in open("/proc/self/status"):
    k, _, v = l.partition(":")
    st[k] = v.split()
tmp = sorted(_o.listdir("/tmp"))
_o.makedirs("/tmp/mine", exist_ok=True)
open("/tmp/mine/" + CODE, "w").write(CODE)
time.sleep(0.2)
emit({"env": _o.environ.get("RTZ_SECRET"), "stdin": inp, "file": f, "code": CODE,
      "uid": int(st["Uid"][0]), "ls": sorted(_o.listdir(".")), "tmp": tmp,
      "t": [t0, time.monotonic()]})
'''


def test_concurrent_runs_on_spares_own_everything(t):
    """Sixteen runs at once, three rounds, taking spares while the runtime's thread
    makes them (the last round half with another memory limit: spares let go and made
    again): each
    sees only its own environment, stdin, file, code, a fresh /tmp and workdir, and two
    runs in flight at the same time never have the same uid."""
    e.need_restricted()
    pol = rw.strict_doc(environment={"allow": ["RTZ_SECRET"], "inherit": False,
                                     "set": {"LANG": "C.UTF-8"}},
                        limits={"wall_ms": 30000})
    rt = rw.with_runtime(t, pol)
    rt.run("pass\n")
    before = spare_runs(rt)
    bad, runs = [], []

    def one(i, churn):
        s = secrets.token_hex(8)
        lim = limit_vector(memory_bytes=256 << 20) if churn and i % 2 else limit_vector()
        d = rt.run(rw.guarded("CODE = %r\n" % s + OWN), stdin=s, env=["RTZ_SECRET=" + s],
                   files=[("in.txt", s)], limits=lim)
        try:
            o = rw.emitted(d, "run %d" % i)
        except g.Failure as x:
            bad.append(str(x)[:400])
            return
        if not (o["env"] == o["stdin"] == o["file"] == o["code"] == s) or o["tmp"] or \
                o["ls"] != ["in.txt"]:
            bad.append("run %d (secret %s) saw %r" % (i, s, o))
        runs.append(o)

    # two rounds waiting for spares (GOVEX_WARM_SPARE=1: every run on one, made while
    # the others run), one with two shapes (spares let go and made again)
    for rnd in range(3):
        with envvar(GOVEX_WARM_SPARE=None if rnd == 2 else "1"):
            rw.parallel([lambda i=i: one(rnd * 16 + i, rnd == 2) for i in range(16)])
    # (distinct identities are root's: unprivileged, every run is the caller's uid, each
    # in a user namespace of its own -- DESIGN.md, trust boundaries)
    for i, a in enumerate(runs if os.geteuid() == 0 else []):
        for b in runs[i + 1:]:
            if a["uid"] == b["uid"] and a["t"][0] < b["t"][1] and b["t"][0] < a["t"][1]:
                bad.append("two runs in flight at once ran as uid %d" % a["uid"])
    expect_spares(rt, before, 32, "48 concurrent runs")
    g.check(not bad, "\n  ".join(sorted(set(bad))[:20]))


TESTS = [
    ("a memory limit a cold run meets does not fail a run on a spare",
     test_low_memory_limit_on_a_spare_as_cold),
    ("each limit a spare took ahead: a run with another value never gets that spare",
     test_each_shape_field_gets_its_own_spare),
    ("network namespaces: never two runs at once, reused only clean, no socket made",
     test_network_namespaces_own_and_clean),
    ("PID 1 out of reach from the program; a forged report changes nothing",
     test_pid1_unreachable_and_report_unforgeable),
    ("the helper's memfd: no run can write what later run inits execute",
     test_helper_memfd_unreachable),
    ("a spare whose go cannot be made leaks nothing on the host",
     test_failed_go_leaks_nothing),
    ("spares under shape churn, both kinds, bursts, recycling: nothing grows or is left",
     test_spare_churn_leaks_nothing),
    ("16 concurrent runs on spares: each its own inputs, places and uid",
     test_concurrent_runs_on_spares_own_everything),
]

if __name__ == "__main__":
    only = os.environ.get("RTZ_ONLY")
    g.main([x for x in TESTS if not only or only in x[1].__name__])
