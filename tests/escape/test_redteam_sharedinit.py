#!/usr/bin/env python3
"""Red team RT-S: attacks on the shared run init (src/lib/backend/restricted/zyg.c,
init_clone; zyg_init.c, init_main; zyg_io.c, spec_load; zyg_int.h, zs/z_*).

A warm run's init B (PID 1 of the run's own PID, mount, IPC and UTS namespaces) is cloned
by the template T with CLONE_VM: B's memory IS T's memory, which every later run's
program P is forked from.  What keeps runs apart (the author's list): B calls the kernel
with raw system calls only (no libc errno, no lock); B's stack is MADV_DONTFORK'd after B
forked its own P, before any run's data comes; the run's spec (code, environment, argv,
files list, call-mode data) is read by B into an anonymous MADV_DONTFORK buffer, so a P
forked later cannot inherit it; B blocks every signal (an inherited Python handler would
write T's memory); B is not dumpable (the flag is the mm's: T's too); P drops every
capability and has no_new_privs, Landlock and seccomp; T waits while a B forks its P.

DESIGN.md "Warm runs": a run never sees another run's (or the template's) state, same
results as a cold run; "Trust boundaries": runs cannot see or touch each other.  Each
test below attacks that from the code a run controls, and (as root) from the host side
too, looking at T's memory and every process of the runtime directly: a secret of a live
run may be in T's memory only in mappings no fork copies (smaps VmFlags "dc").  Secrets
are searched as two halves, h1 immediately followed by h2, never joined in a searching
process.  As root the library runtime runs in this process; the unprivileged variants
(B, P and T all the caller's uid, one user namespace: only "not dumpable" and the
sandbox keep P off T's memory) drive a runtime in a helper process run as nobody
(65534).  Anything dangerous stays inside the sandbox (test_redteam_warm's guard: the
snippet exits 97 unless it finds itself in one).  Prints TAP."""
import ctypes
import errno
import hashlib
import inspect
import json
import os
import platform
import secrets
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402
import test_redteam_warm as rw  # noqa: E402
import test_redteam_zyg as rz  # noqa: E402


# ---------------------------------------------------------------- policies, secrets

ENV = {"allow": ["RTS_SECRET"], "inherit": False,
       "set": {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}}


def pol_doc(**limits):
    lim = {"wall_ms": 20000}
    lim.update(limits)
    return rw.strict_doc(environment=ENV, limits=lim)


# every secret: PREFIX and 29 random characters; its halves 16 bytes each.  A search
# looks for PREFIX, then a known first half there, then its second half right after
PREFIX = "Qzj"


def new_secret(tag=None):
    return PREFIX + secrets.token_hex(15)[:29]


def halves(s):
    b = s.encode()
    return (b[:len(b) // 2], b[len(b) // 2:])


def owner_of(name):
    """The run a secret's name ("A:code", "run 3 env") belongs to."""
    return name.split(":")[0] if ":" in name else name.rsplit(" ", 1)[0]


def find_pairs(data, pairs, base=0):
    """[(index of the pair, offset)] of each (h1, h2) of PAIRS in DATA: h1 (PREFIX
    first) immediately followed by h2."""
    first = {h1: (k, h2) for k, (h1, h2) in enumerate(pairs)}
    n1 = len(pairs[0][0])
    pre = PREFIX.encode()
    out = []
    i = data.find(pre)
    while i >= 0:
        v = first.get(data[i:i + n1])
        if v is not None and data[i + n1:i + n1 + len(v[1])] == v[1]:
            out.append((v[0], base + i))
        i = data.find(pre, i + 1)
    return out


def halves_src(pairs):
    """Python text of a list of (h1, h2) bytes pairs: no secret contiguous in it."""
    return "[" + ", ".join("(%r, %r)" % (a, b) for a, b in pairs) + "]"


def short(doc):
    return {k: (str(v)[-600:] if k in ("stdout", "stderr") else v) for k, v in doc.items()
            if k in ("status", "termination", "exit_code", "signal", "stdout", "stderr",
                     "diagnostics", "value")}


# ---------------------------------------------------------------- host-side views

KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def same_mm(a, b):
    """kcmp(A, B, KCMP_VM): True when A and B share one address space (None: unknown)."""
    if KCMP is None:
        return None
    r = _libc.syscall(ctypes.c_long(KCMP), ctypes.c_long(a), ctypes.c_long(b),
                      ctypes.c_long(1), ctypes.c_long(0), ctypes.c_long(0))
    return None if r < 0 else r == 0


def templates():
    """{T: [its run inits]}: the processes below this one whose children are named
    govex-init (the run inits, B; T is the interpreter that clones them)."""
    d = rw.descendants()
    out = {}
    for p, (pp, comm) in d.items():
        if comm == "govex-init" and d.get(pp, (0, ""))[1] != "govex-init":
            out.setdefault(pp, []).append(p)
    return out


def shared_init_note():
    """Whether the run inits share their template's memory here (kcmp), for the
    diagnostics (on an architecture without raw syscalls in zyg_int.h B is a copy)."""
    seen = []
    for tp, inits in templates().items():
        for b in inits[:1]:
            seen.append(same_mm(tp, b))
    return seen


def mm_layout(pid):
    """[(start, end, maps line, VmFlags)] of PID's mappings (smaps)."""
    out, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                try:
                    a, b = (int(x, 16) for x in head.split("-"))
                except ValueError:
                    continue
                cur = [a, b, line.rstrip("\n"), ""]
                out.append(cur)
            elif line.startswith("VmFlags:") and cur is not None:
                cur[3] = line.split(":", 1)[1].strip()
    return out


def host_scan(pid, pairs):
    """PID's memory (as root, through /proc/PID/mem) searched for each (h1, h2):
    [(index of the pair, address, maps line, VmFlags)]."""
    hits = []
    try:
        layout = mm_layout(pid)
        fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    except OSError:
        return None
    over = max(len(a) + len(b) for a, b in pairs)
    try:
        for a, b, line, flags in layout:
            if "r" not in line.split()[1] or line.endswith(("[vvar]", "[vsyscall]",
                                                            "[vvar_vclock]")):
                continue
            off = a
            while off < b:
                n = min(4 << 20, b - off)
                try:
                    data = os.pread(fd, n + min(over, b - off - n), off)
                except OSError:
                    break
                for k, at in find_pairs(data, pairs, off):
                    hits.append((k, at, line, flags))
                off += n
    finally:
        os.close(fd)
    return sorted(set(hits))


def tmpl_figures(tp):
    """T's VmRSS and VmSize (KiB), its mappings, the KiB of its no-fork mappings (the
    run inits' stacks and spec buffers) and its live run inits."""
    st = {}
    with open("/proc/%d/status" % tp) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmSize"):
                st[k] = int(v.split()[0])
    lay = mm_layout(tp)
    dc = sum(b - a for a, b, _l, fl in lay if "dc" in fl.split()) >> 10
    return {"rss": st.get("VmRSS"), "size": st.get("VmSize"), "maps": len(lay),
            "dc_kib": dc, "inits": len(templates().get(tp, []))}


def settle(rt, quiet=0.4, timeout=10.0):
    """Waits until no run is in flight and the set of run inits stayed the same for
    QUIET s (the spares refilled)."""
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        s = rt.stats() or {}
        cur = (s.get("runs_in_flight"), sorted(p for v in templates().values() for p in v))
        if cur != last:
            last, since = cur, time.monotonic()
        elif cur[0] in (0, None) and time.monotonic() - since >= quiet:
            return
        time.sleep(0.05)


# ---------------------------------------------------------------- a runtime as nobody

DRIVER_MAIN = r'''
import ctypes, json, os, sys, threading
lib = ctypes.CDLL(sys.argv[1])
lib.govex_result_json.restype = ctypes.c_char_p
lib.govex_result_json.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
err = _Err()
pol = ctypes.c_void_p()
data = open(sys.argv[2], "rb").read()
if lib.govex_policy_parse(data, ctypes.c_size_t(len(data)), ctypes.byref(pol),
                          ctypes.byref(err)) < 0:
    sys.exit("policy: %r" % err.msg)
rt = ctypes.c_void_p()
opts = _Opts()
if lib.govex_runtime_new(pol, ctypes.byref(opts), ctypes.byref(rt), ctypes.byref(err)) < 0:
    sys.exit("runtime: %r" % err.msg)
if lib.govex_runtime_warm(rt, ctypes.byref(err)) < 0:
    sys.exit("warm: %r" % err.msg)

def run(r):
    req = _Req()
    src = r["code"].encode()
    req.code, req.code_len = src, len(src)
    keep = [src]
    if r.get("stdin") is not None:
        b = r["stdin"].encode()
        keep.append(b)
        req.stdin_data, req.stdin_len = b, len(b)
    if r.get("env"):
        arr = (ctypes.c_char_p * (len(r["env"]) + 1))(*[x.encode() for x in r["env"]], None)
        keep.append(arr)
        req.env = arr
    if r.get("repl"):
        req.repl = 1
        if r.get("inputs") is not None:
            ib = json.dumps(r["inputs"]).encode()
            keep.append(ib)
            req.inputs_json, req.inputs_len = ib, len(ib)
    res = ctypes.c_void_p()
    e = _Err()
    if lib.govex_runtime_run(rt, ctypes.byref(req), ctypes.byref(res), ctypes.byref(e)) < 0 \
            or not res:
        return {"status": "driver_error", "error": e.msg.decode(errors="replace")}
    doc = json.loads(lib.govex_result_json(res, None).decode())
    lib.govex_result_free(res)
    return doc

def stats():
    p = ctypes.c_void_p()
    if not hasattr(lib, "govex_runtime_stats_json") or \
            lib.govex_runtime_stats_json(rt, ctypes.byref(p)) < 0 or not p:
        return None
    s = ctypes.string_at(p.value).decode()
    ctypes.CDLL(None).free(p)
    return json.loads(s)

for line in sys.stdin:
    step = json.loads(line)
    if step.get("op") == "stats":
        out = stats()
    elif step.get("op") == "batch":
        out = [None] * len(step["runs"])
        def one(i, r):
            out[i] = run(r)
        ths = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(step["runs"])]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
    else:
        out = run(step)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
lib.govex_runtime_free(rt)
lib.govex_policy_free(pol)
'''


def driver_text():
    """A self-contained driver (the ctypes records are test_redteam_warm's)."""
    return "import ctypes\n\n" + "\n".join(
        inspect.getsource(c) for c in (rw._Err, rw._File, rw._Opts, rw._Req)) + DRIVER_MAIN


class NobodyRuntime:
    """One warm library runtime in a process of uid 65534 (the unprivileged sandbox: B,
    P and T one uid in one user namespace), driven by JSON lines."""

    def __init__(self, t):
        e.need_restricted()
        sb = e.need_unprivileged_sandbox(t)
        home, env, binary = sb
        bindir = os.path.dirname(binary)
        src = e.rc_libgovex()._name
        self.lib = os.path.join(bindir, "libgovex.so")
        shutil.copy2(os.path.realpath(src), self.lib)
        os.chmod(self.lib, 0o755)
        drv = os.path.join(bindir, "rts-driver.py")
        with open(drv, "w") as f:
            f.write(driver_text())
        os.chmod(drv, 0o644)
        doc = pol_doc()
        doc["limits"] = dict(doc["limits"], **e.NO_AGGREGATE)
        polf = os.path.join(home, "rts-policy.json")
        with open(polf, "w") as f:
            json.dump(doc, f)
        os.chmod(polf, 0o644)
        py = shutil.which("python3", path=env["PATH"])
        self.p = subprocess.Popen([py, drv, self.lib, polf], cwd=home, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, preexec_fn=e.nobody_preexec(),
                                  start_new_session=True)
        t.defer(self.kill)

    def step(self, obj, timeout=60.0):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        line = self.p.stdout.readline() if r else b""
        if not line:
            self.kill()
            raise g.Failure("the runtime as nobody gave no answer: %r"
                            % self.p.stderr.read()[-800:])
        return json.loads(line)

    def run(self, code, **kw):
        d = dict(kw, code=code)
        return self.step(d)

    def batch(self, runs):
        return self.step({"op": "batch", "runs": runs})

    def stats(self):
        return self.step({"op": "stats"})

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.p.wait()


def maybe_nobody(t):
    """A NobodyRuntime, or None where this host has no unprivileged sandbox (then the
    unprivileged half of a test is left out, saying so)."""
    try:
        return NobodyRuntime(t)
    except g.Skip as x:
        print("# (no runtime as nobody: %s)" % x)
        return None


# ================================================================ 1. PID 1's memory

REACH = r'''
import errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def en(n):
    return errno.errorcode.get(n, str(n))
def tryit(fn):
    try:
        v = fn()
        return ["OK", v if isinstance(v, (int, str)) else len(v)]
    except OSError as x:
        return en(x.errno)
def opn(p, fl):
    fd = _o.open(p, fl)
    _o.close(fd)
    return "opened"
out = {}
for base in ("/proc/1", "/proc/1/task/1"):
    for how, fl in (("r", _o.O_RDONLY), ("w", _o.O_WRONLY), ("rw", _o.O_RDWR)):
        out["open %s %s/mem" % (how, base)] = tryit(lambda: opn(base + "/mem", fl))
    for f in ("maps", "smaps", "smaps_rollup", "numa_maps", "pagemap", "environ", "auxv",
              "syscall", "stack", "io", "personality"):
        out["read %s/%s" % (base, f)] = tryit(lambda: open("%s/%s" % (base, f), "rb").read(4096))
    for f in ("map_files", "fd", "fdinfo", "cwd", "root"):
        out["list %s/%s" % (base, f)] = tryit(lambda: _o.listdir("%s/%s" % (base, f)))
    for f in ("cwd", "root", "exe", "ns/pid", "ns/mnt", "ns/user"):
        out["readlink %s/%s" % (base, f)] = tryit(lambda: _o.readlink("%s/%s" % (base, f)))
    for f in ("clear_refs", "coredump_filter"):
        out["open w %s/%s" % (base, f)] = tryit(lambda: opn("%s/%s" % (base, f), _o.O_WRONLY))
class IOV(ctypes.Structure):
    _fields_ = [("b", ctypes.c_void_p), ("l", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
def vm(nr, addr):
    loc, rem = IOV(ctypes.addressof(buf), 16), IOV(addr, 16)
    r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(1), ctypes.byref(loc), ctypes.c_long(1),
                     ctypes.byref(rem), ctypes.c_long(1), ctypes.c_long(0))
    return "OK %d" % r if r >= 0 else en(ctypes.get_errno())
# this process is a fork of the template: id(None) is mapped at the same address there.
# At address 0 a permission that passed shows as EFAULT (and nothing is written)
out["process_vm_readv 1 @None"] = vm(SYS_VM[0], id(None))
out["process_vm_readv 1 @0"] = vm(SYS_VM[0], 0)
out["process_vm_writev 1 @0"] = vm(SYS_VM[1], 0)
for name, req in (("attach", 16), ("seize", 0x4206)):
    r = libc.syscall(ctypes.c_long(SYS_PTRACE), ctypes.c_long(req), ctypes.c_long(1), None,
                     None)
    err_ = ctypes.get_errno()
    if r == 0:   # (let it go at once: PID 1 is the template's memory)
        libc.syscall(ctypes.c_long(SYS_PTRACE), ctypes.c_long(17), ctypes.c_long(1), None,
                     None)
    out["ptrace %s 1" % name] = "OK" if r == 0 else en(err_)
pfd = libc.syscall(ctypes.c_long(SYS_PIDFD[0]), ctypes.c_long(1), ctypes.c_long(0))
got = []
if pfd >= 0:
    got = [n for n in range(64) if libc.syscall(ctypes.c_long(SYS_PIDFD[1]), ctypes.c_long(pfd),
                                               ctypes.c_long(n), ctypes.c_long(0)) >= 0]
out["pidfd_getfd 1"] = ["OK", got] if got else "none"
try:
    pid = _o.fork()
except OSError as x:
    out["fork"] = en(x.errno)
else:
    if pid == 0:
        r = 0
        for k, p in enumerate(("/proc/1/mem", "/proc/1/maps", "/proc/1/environ")):
            try:
                open(p, "rb").read(16)
                r |= 1 << k
            except OSError:
                pass
        _o._exit(r)
    _, st = _o.waitpid(pid, 0)
    out["child reads PID 1 (bits)"] = _o.waitstatus_to_exitcode(st) or "none"
out["read /proc/1/status"] = tryit(lambda: open("/proc/1/status", "rb").read())
out["read /proc/1/cmdline"] = tryit(lambda: open("/proc/1/cmdline", "rb").read())
out["list /proc (PID 1 in it)"] = "OK" if "1" in _o.listdir("/proc") else "absent"
emit({"out": out})
'''

SYSNR = {"x86_64": {"vm": (310, 311), "ptrace": 101, "pidfd": (434, 438)},
         "aarch64": {"vm": (270, 271), "ptrace": 117, "pidfd": (434, 438)}}

# (pidfd_open on PID 1 is a handle to a process the run may signal, as a cold run's;
# what it must not give is PID 1's descriptors: pidfd_getfd)
MAY_SUCCEED = {"fork"}
# the signals B must block (zyg_init.c, init_main: all of them; SIGKILL and SIGSTOP
# cannot be)
MUST_BLOCK = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP,
              signal.SIGCHLD, signal.SIGALRM, signal.SIGQUIT, signal.SIGPIPE, signal.SIGSEGV)


def reach_code():
    nr = SYSNR.get(platform.machine())
    if nr is None:
        e.skip("x86_64", "system call numbers of this probe are x86_64's and aarch64's")
    return rw.guarded("SYS_VM = %r\nSYS_PTRACE = %r\nSYS_PIDFD = %r\n"
                      % (nr["vm"], nr["ptrace"], nr["pidfd"]) + REACH)


def reach_bad(doc, what):
    bad = []
    rw.no_guard_refusal(doc)
    if doc.get("status") != "success":
        return ["%s: the probe did not end well: %r" % (what, short(doc))]
    o = rw.emitted(doc, what)
    for k, v in sorted(o["out"].items()):
        if k == "pidfd_open 1" or k in MAY_SUCCEED:
            continue
        if not isinstance(v, str) or v.startswith("OK") or v == "EFAULT":
            bad.append("%s: %s -> %r" % (what, k, v))
    if o["out"].get("pidfd_getfd 1") != "none":
        bad.append("%s: pidfd_getfd took PID 1's descriptors: %r"
                   % (what, o["out"].get("pidfd_getfd 1")))
    return bad


def host_sigblk_bad(rt, what):
    """As root, from the host (a run cannot read PID 1's status: proc's hidepid hides
    it): the SigBlk of every run init (B) there is while a run lives -- the spares' and
    the live run's -- holds every signal of MUST_BLOCK."""
    if os.geteuid() != 0:
        return []
    live = {}

    def sleeper():
        live["doc"] = rt.run("import time\ntime.sleep(1.0)\nprint('slept')\n")

    th = threading.Thread(target=sleeper, daemon=True)
    th.start()
    time.sleep(0.4)
    blks = {}
    for pid in sorted(p for v in templates().values() for p in v):
        try:
            with open("/proc/%d/status" % pid) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
            blks[pid] = int(st["SigBlk"].strip(), 16)
        except (OSError, KeyError, ValueError):
            pass
    th.join(30)
    bad = []
    if not blks:
        bad.append("%s: no run init found from the host while a run lived" % what)
    for pid, blk in sorted(blks.items()):
        missing = [signal.Signals(s).name for s in MUST_BLOCK if not blk >> (s - 1) & 1]
        if missing:
            bad.append("%s: run init %d does not block %s (SigBlk %x)"
                       % (what, pid, missing, blk))
    print("# %s: SigBlk of %d run inits read from the host" % (what, len(blks)))
    return bad


# seen failing (on purpose, in a copy of the sources): init_main without PR_SET_DUMPABLE 0
# (as nobody /proc/1/fd then lists; mem, maps, environ stay closed by Landlock's ptrace
# rule).  Would catch: PR_SET_DUMPABLE 0 dropped (or reset
# by a later credential change of T's mm) -- as nobody /proc/1/mem, maps, environ,
# map_files, pagemap then open, and they are T's memory; a B that no longer blocks its
# signals (SigBlk)
def test_pid1_memory_unreachable(t):
    """From inside warm runs (plain and REPL, as root and as nobody, where B, P and T
    are one uid in one user namespace): every way to PID 1's memory -- which is the
    template's, every later run's program is forked from it -- fails: /proc/1/mem (and
    /proc/1/task/1/mem) opened for read, write, read-write; maps, smaps, smaps_rollup,
    numa_maps, pagemap, environ, auxv, syscall, stack, io, personality read; map_files,
    fd, fdinfo, cwd, root listed; cwd, root, exe, ns/* read as links; clear_refs and
    coredump_filter (flags of the mm) opened for writing; process_vm_readv at an address
    the template has mapped (id(None): the run is its fork) and at 0 (EFAULT there would
    mean the permission passed), process_vm_writev at 0; ptrace ATTACH and SEIZE;
    pidfd_getfd of PID 1's descriptors; a forked child of the run (where the policy lets
    it fork) the same; PID 1's status and cmdline read, PID 1 listed in /proc (absent:
    proc's hidepid).  And PID 1 blocks every signal (its SigBlk read from the host, as
    root)."""
    e.need_restricted()
    code = reach_code()
    bad = []
    rt = rw.with_runtime(t, pol_doc())
    for i in range(2):
        for repl in (False, True):
            bad += reach_bad(rt.run(code, repl=repl), "root, %s run %d"
                             % ("REPL" if repl else "plain", i))
    bad += host_sigblk_bad(rt, "root")
    print("# run inits share their template's memory (kcmp): %r" % shared_init_note())
    nb = maybe_nobody(t)
    if nb:
        for repl in (False, True):
            bad += reach_bad(nb.run(code, repl=repl), "as nobody, %s"
                             % ("REPL" if repl else "plain"))
        bad += host_sigblk_bad(nb, "as nobody")
        nb.close()
    g.check(not bad, "PID 1's (the template's) memory within reach:\n  " + "\n  ".join(bad))


# ================================================================ 2. memory between runs

# the searching run's own memory: every readable mapping through /proc/self/mem, in
# chunks overlapping by the longest needle; a control secret the run builds itself
# must be found (the search works), the others never
SCAN = r'''
import time as _t, sys as _s
_T0 = _t.monotonic()
_CTRL = "".join(CTRL)          # built here: this one IS in this process
def scan_all(pairs):
    found, nbytes, errs = [], 0, []
    pairs = list(pairs) + [(CTRL[0].encode(), CTRL[1].encode())]
    over = max(len(a) + len(b) for a, b in pairs)
    first = {h1: (k, h2) for k, (h1, h2) in enumerate(pairs)}
    n1 = len(pairs[0][0])
    pre = PREFIX
    fd = _o.open("/proc/self/mem", _o.O_RDONLY)
    try:
        for line in open("/proc/self/maps").read().splitlines():
            p = line.split()
            if "r" not in p[1] or (len(p) > 5 and p[5] in ("[vvar]", "[vsyscall]",
                                                           "[vvar_vclock]")):
                continue
            a, b = (int(x, 16) for x in p[0].split("-"))
            off = a
            while off < b:
                n = min(1 << 20, b - off)
                try:
                    data = _o.pread(fd, n + min(over, b - off - n), off)
                except OSError as x:
                    errs.append([line, x.errno])
                    break
                nbytes += len(data)
                i = data.find(pre)
                while i >= 0:
                    v = first.get(data[i:i + n1])
                    if v is not None and data[i + n1:i + n1 + len(v[1])] == v[1]:
                        found.append([v[0], "%x" % (off + i), line])
                    i = data.find(pre, i + 1)
                off += n
    finally:
        _o.close(fd)
    found = [list(x) for x in sorted(set(tuple(f) for f in found))]
    ctrl = [f for f in found if f[0] == len(pairs) - 1]
    return {"found": [f for f in found if f[0] != len(pairs) - 1], "ctrl": len(ctrl),
            "bytes": nbytes, "errors": errs[:5]}
'''

# what a scanning run also reads of PID 1 (the template's memory, where the kernel lets
# anyone: the command line)
SCANNER = SCAN + r'''
res = scan_all(PAIRS)
try:
    cl = open("/proc/1/cmdline", "rb").read()
    res["cmdline"] = [k for k, (h1, h2) in enumerate(PAIRS)
                      if any(cl[i + len(h1):i + len(h1) + len(h2)] == h2
                             for i in [j for j in range(len(cl)) if cl.startswith(h1, j)])]
except OSError as x:
    res["cmdline"] = x.errno
res["t"] = [_T0, _t.monotonic()]
emit(res)
'''

# a run holding secrets: in its code, environment, stdin, a file in (and, REPL, INPUTS)
HOLDER = r'''
import sys, time
t0 = time.monotonic()
S_CODE = "%s"
kept = [S_CODE, _o.environ.get("RTS_SECRET"), sys.stdin.read()]
try:
    kept.append(open("in.txt").read())
except OSError:
    kept.append(None)
try:
    kept.append(INPUTS["s"])
except NameError:
    pass
time.sleep(HOLD)
emit({"t": [t0, time.monotonic()], "kept": [len(k or "") for k in kept]})
'''


def scanner_code(pairs):
    ctrl = halves(new_secret("ctrl"))
    return rw.guarded("PREFIX = %r\nPAIRS = %s\nCTRL = (%r, %r)\n"
                      % (PREFIX.encode(), halves_src(pairs), ctrl[0].decode(),
                         ctrl[1].decode()) + SCANNER)


def holder_code(code_secret, hold):
    return rw.guarded("HOLD = %r\n" % hold + HOLDER % code_secret)


def scan_bad(doc, what, names):
    rw.no_guard_refusal(doc)
    o = rw.emitted(doc, what)
    bad = []
    for k, addr, line in o["found"]:
        bad.append("%s found %s at %s in %s" % (what, names[k], addr, line))
    if isinstance(o.get("cmdline"), int) and o["cmdline"] != errno.ENOENT:
        bad.append("%s: /proc/1/cmdline neither hidden nor read: errno %d"
                   % (what, o["cmdline"]))
    elif isinstance(o.get("cmdline"), int):
        pass    # PID 1 hidden (hidepid): nothing of it to search
    elif o.get("cmdline"):
        bad.append("%s found %r in /proc/1/cmdline" % (what, [names[k] for k in o["cmdline"]]
                                                      if isinstance(o["cmdline"], list)
                                                      else o["cmdline"]))
    if o["ctrl"] < 1:
        bad.append("%s: its own control secret not found (the search is broken): %r"
                   % (what, {k: v for k, v in o.items() if k != "found"}))
    return bad, o


def host_side_bad(pairs, names, owners, what):
    """As root: every process of the runtime (below this one) searched from the host.
    A secret may be in its own run's program (OWNERS: name -> the set of processes that
    may hold it, filled here with the first non-template process found holding it) and
    in the template's memory only in mappings no fork copies (VmFlags dc)."""
    if os.geteuid() != 0:
        return [], 0
    bad, in_t = [], 0
    tps = templates()
    desc = rw.descendants()
    for pid in sorted(desc):
        tmpl = next((tp for tp in tps if pid == tp or pid in tps[tp]), None)
        if tmpl is not None and pid != tmpl:
            continue  # (an init: the template's memory, searched once as the template's)
        hits = host_scan(pid, pairs)
        if hits is None:
            continue
        for k, addr, line, flags in hits:
            name = names[k]
            if tmpl is not None:
                in_t += 1
                if "dc" not in flags.split():
                    bad.append("%s: %s in the template %d (%s) at %x in a mapping a fork "
                               "copies: %s [VmFlags %s]" % (what, name, pid, desc[pid][1],
                                                           addr, line, flags))
                continue
            own = owners.setdefault(owner_of(name), set())
            if not own:
                own.add(pid)
            if pid not in own:
                bad.append("%s: %s in process %d (%s), which is not its run's (%r): at %x "
                           "in %s" % (what, name, pid, desc[pid][1], sorted(own), addr, line))
    return bad, in_t


# seen failing (on purpose, in a copy of the sources): spec_load without its
# MADV_DONTFORK (the holders' code and environment in the template's copied memory and
# in the scans of later runs and spares), init_main without the madvise of its stack
# (the file names of files in, bound from B's stack, found there).  Would catch:
# spec_load's buffer without MADV_DONTFORK (or the madvise after the read), B's stack
# made DONTFORK only after the
# run's data is on it, the go spec mapped instead of read, a buffer T never unmaps (the
# secret still in T after the run), a spare's P forked while another init wrote a run's
# data into memory a fork copies
def test_live_run_secret_not_in_later_runs(t):
    """Runs A (plain: a secret in its code, its environment, its stdin, a file in and
    that file's name), A2 (REPL: in its code, environment and INPUTS) and A3 (as A, with
    a limit of its own: no spare of its shape, so its init gets the run's spec with the
    run, not with a go) hold their secrets ~3 s.  While they are live, 20 sequential runs and two more
    threads of 5 (plain and REPL) each search ALL of their own readable memory and
    /proc/1/cmdline for every secret (given as halves, never joined), while the template
    makes new spares (their programs forked while A's init is live).  Then, as root,
    from the host: every process of the runtime searched; a secret may be in its run's
    own program only, and in the template's memory only in mappings no fork copies
    (smaps "dc"); after the holders ended, not in the template's memory at all (their
    buffers unmapped).  Three more scans after A ended."""
    e.need_restricted()
    rt = rw.with_runtime(t, pol_doc())
    for repl in (False, True, False, True):
        rt.run("pass\n", repl=repl)
    time.sleep(0.3)
    st0 = rt.stats() or {}
    sec = {}
    for run in ("A", "A2", "A3"):
        for where in ("code", "env", "stdin", "file", "fname", "inputs"):
            sec["%s:%s" % (run, where)] = new_secret(run.lower() + where[:2])
    names = sorted(sec)
    pairs = [halves(sec[n]) for n in names]
    hold = 3.0
    holders = {}

    def holder(run):
        repl = run == "A2"
        kw = {"stdin": sec[run + ":stdin"], "env": ["RTS_SECRET=" + sec[run + ":env"]],
              "repl": repl}
        if repl:
            kw["inputs"] = {"s": sec[run + ":inputs"]}
        else:
            # (a file's name too: the init binds each file in by its name, from its stack)
            kw["files"] = [("in.txt", sec[run + ":file"]), (sec[run + ":fname"], "x")]
        if run == "A3":
            kw["limits"] = rz.limit_vector(open_files=123)
        holders[run] = rt.run(holder_code(sec[run + ":code"], hold), **kw)

    births = {}
    stop = threading.Event()

    def watch_inits():
        while not stop.is_set():
            for p in (p for v in templates().values() for p in v):
                births.setdefault(p, time.monotonic())
            time.sleep(0.03)

    before_inits = set(p for v in templates().values() for p in v)
    ths = [threading.Thread(target=holder, args=(r,), daemon=True) for r in ("A", "A2", "A3")]
    wth = threading.Thread(target=watch_inits, daemon=True)
    wth.start()
    for th in ths:
        th.start()
    time.sleep(0.5)
    code = scanner_code(pairs)
    scans, bad = [], []
    lock = threading.Lock()

    def scanner(n, offset):
        for i in range(n):
            d = rt.run(code, repl=(i + offset) % 2 == 1)
            with lock:
                scans.append(("scan %d.%d" % (offset, i), d))

    host = {"bad": [], "in_t": 0, "done": False}

    def host_look():
        time.sleep(1.0)
        owners = {}
        b, n = host_side_bad(pairs, names, owners, "while the holders live")
        host["bad"] += b
        host["in_t"] += n
        host["done"] = True

    extra = [threading.Thread(target=scanner, args=(5, k + 1), daemon=True) for k in range(2)]
    hth = threading.Thread(target=host_look, daemon=True)
    hth.start()
    for th in extra:
        th.start()
    scanner(20, 0)
    for th in extra + [hth]:
        th.join(60)
    for th in ths:
        th.join(60)
    stop.set()
    wth.join(5)
    # after: three more scans, and (root) the template's memory has nothing of them
    for i in range(3):
        scans.append(("scan after %d" % i, rt.run(code, repl=i == 1)))
    settle(rt)
    if os.geteuid() == 0:
        # (their programs are gone: no process may hold any of it now)
        gone = {owner_of(n): {-1} for n in names}
        b, n = host_side_bad(pairs, names, gone, "after the holders ended")
        bad += b
        if n:
            bad.append("after the holders ended the template's memory still holds %d of "
                       "their secrets (a buffer not unmapped)" % n)
    bad += host["bad"]
    times = []
    for what, d in scans:
        b, o = scan_bad(d, what, names)
        bad += b
        times.append(o["t"])
    for run in ("A", "A2", "A3"):
        d = holders.get(run)
        if d is None or d.get("status") != "success":
            bad.append("holder %s: %r" % (run, short(d or {})))
    g.check(not bad, "a live run's secret reached another run (or stays in the template):"
            "\n  " + "\n  ".join(bad[:40]))
    # (not vacuous: the scans overlapped the holders, spares were made meanwhile, the
    # holders' specs were in the template's memory, both the go and the direct path)
    ht = [rw.emitted(holders[r], "holder " + r)["t"] for r in ("A", "A2", "A3")]
    lo, hi = max(x[0] for x in ht), min(x[1] for x in ht)
    during = sum(1 for a, b in times if a >= lo and b <= hi)
    new = [p for p, born in births.items() if p not in before_inits and lo <= born <= hi]
    st1 = rt.stats() or {}
    ws = st1.get("warm", {})
    ws0 = st0.get("warm", {})
    sp = (ws.get("spare_runs") or 0) - (ws0.get("spare_runs") or 0)
    direct = (ws.get("warm_runs") or 0) - (ws0.get("warm_runs") or 0) - sp
    print("# %d scans within the holders' life, %d run inits made meanwhile, %d secrets "
          "seen in the template's no-fork memory, %d runs on spares, %d not; shared: %r"
          % (during, len(new), host["in_t"], sp, direct, shared_init_note()))
    g.check(during >= 15, "only %d scans ran while all holders were live: %r %r"
            % (during, ht, times))
    g.check(len(new) >= 5, "only %d run inits were made while the holders lived" % len(new))
    g.check(sp > 0 and direct > 0, "runs on spares %d, runs without one %d: both paths "
            "(the go's spec and the run's) must have been taken" % (sp, direct))
    if os.geteuid() == 0 and any(shared_init_note()):
        g.check(host["done"] and host["in_t"] > 0,
                "the holders' secrets were never seen in the template's memory from the "
                "host (the search from the host is broken?)")


# a run with a secret of its own (code, environment, stdin) that waits until the others
# hold theirs, then searches its memory for all the others'
EACH = r'''
import sys, time
S_CODE = "%s"
kept = [S_CODE, _o.environ.get("RTS_SECRET"), sys.stdin.read()]
time.sleep(WAIT)
res = scan_all(PAIRS)
time.sleep(0.2)
res["t"] = [_T0, time.monotonic()]
emit(res)
'''


# seen failing: none (the design held)
def test_concurrent_runs_scan_each_other(t):
    """Sixteen runs at once (plain and REPL), each with a secret of its own in its code,
    environment and stdin: each waits until all are live, then searches all of its own
    readable memory for the other fifteen's (halves, never joined; its own control
    found).  As root, during it the host searches every process of the runtime too
    (each secret only in its run's program, and in the template only where no fork
    copies).  Then a second round (new spares, made while the first round's inits
    lived)."""
    e.need_restricted()
    rt = rw.with_runtime(t, pol_doc())
    for repl in (False, True):
        rt.run("pass\n", repl=repl)
    bad = []
    ctrl = halves(new_secret("ctrl"))
    for rnd in range(2):
        secs = [new_secret("c%d%02d" % (rnd, i)) for i in range(16)]
        envs = [new_secret("e%d%02d" % (rnd, i)) for i in range(16)]
        ins = [new_secret("i%d%02d" % (rnd, i)) for i in range(16)]
        names = ["run %d code" % i for i in range(16)] + ["run %d env" % i for i in range(16)] \
            + ["run %d stdin" % i for i in range(16)]
        allp = [halves(s) for s in secs + envs + ins]

        def one(i):
            others = [p for k, p in enumerate(allp) if k % 16 != i]
            code = rw.guarded("WAIT = 1.0\nPREFIX = %r\nPAIRS = %s\nCTRL = (%r, %r)\n"
                              % (PREFIX.encode(), halves_src(others), ctrl[0].decode(),
                                 ctrl[1].decode()) + SCAN + EACH % secs[i])
            return rt.run(code, repl=i % 3 == 2, env=["RTS_SECRET=" + envs[i]],
                          stdin=ins[i])

        host = {}

        def host_look():
            time.sleep(0.7)
            host["r"] = host_side_bad(allp, names, {}, "round %d, from the host" % rnd)

        hth = threading.Thread(target=host_look, daemon=True)
        hth.start()
        docs = rw.parallel([lambda i=i: one(i) for i in range(16)])
        hth.join(30)
        times = []
        for i, d in enumerate(docs):
            others = [n for k, n in enumerate(names) if k % 16 != i]
            try:
                b, o = scan_bad(d, "round %d run %d" % (rnd, i), others)
            except g.Failure as x:
                bad.append(str(x)[:500])
                continue
            bad += b
            times.append(o["t"])
        b = host.get("r", ([], 0))[0]
        # (names are per process here: one run's three secrets are one owner's)
        bad += [x for x in b]
        if times:
            lo = max(a for a, _b in times)
            live = sum(1 for a, b_ in times if a <= lo <= b_)
            g.check(live >= 12, "round %d: only %d of the runs were live together" % (rnd, live))
    g.check(not bad, "concurrent runs reach each other's secrets:\n  " + "\n  ".join(bad[:40]))


# ================================================================ 3. signals to PID 1

SIGNALS = r'''
import signal, errno, ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SIGS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGCHLD,
        signal.SIGALRM, signal.SIGUSR2, signal.SIGQUIT, signal.SIGPIPE, signal.SIGWINCH,
        signal.SIGCONT, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU, signal.SIGSEGV]
res = {}
pp = _o.getppid()
for target in sorted({1, pp}):
    for s in SIGS:
        try:
            _o.kill(target, s)
            res["%d %s" % (target, s.name)] = "sent"
        except OSError as x:
            res["%d %s" % (target, s.name)] = errno.errorcode.get(x.errno, x.errno)
for i in range(200):
    for s in SIGS[:6]:
        try:
            _o.kill(1, s)
        except OSError:
            pass
for s in SIGS[:6]:
    r = libc.syscall(ctypes.c_long(SYS_TGKILL), ctypes.c_long(1), ctypes.c_long(1),
                     ctypes.c_long(s))
    res["tgkill 1 %s" % s.name] = "sent" if r == 0 else errno.errorcode.get(ctypes.get_errno())
    # rt_sigqueueinfo, si_code SI_QUEUE (-1), a value with it
    info = (ctypes.c_int * 32)(int(s), 0, -1, _o.getpid(), _o.getuid(), 0x5254535f)
    r = libc.syscall(ctypes.c_long(SYS_SIGQUEUE), ctypes.c_long(1), ctypes.c_long(s),
                     ctypes.byref(info))
    res["sigqueue 1 %s" % s.name] = "sent" if r == 0 else errno.errorcode.get(ctypes.get_errno())
time.sleep(0.3)
st = {}
try:
    for line in open("/proc/1/status"):
        k, _, v = line.partition(":")
        st[k] = v.strip()
except OSError as x:    # PID 1 hidden (hidepid): the host reads it (host_signals)
    st = {"hidden": errno.errorcode.get(x.errno, x.errno)}
print("alive", flush=True)
emit({"res": res, "ppid": pp, "pid1": {k: st.get(k) for k in ("SigBlk", "ShdPnd", "SigPnd",
                                                              "SigCgt", "State", "hidden")
                                       if k in st}})
'''

SIGNR = {"x86_64": (234, 129), "aarch64": (131, 138)}

# a run whose result is known: a checksum of a computation and a value
NEXT = r'''
import hashlib, os, sys
h = hashlib.sha256()
for i in range(2000):
    h.update(str(i * i).encode())
print("NEXT %s %d %d" % (h.hexdigest(), sum(range(100000)), 6 * 7), flush=True)
'''
NEXT_REPL = NEXT + "'value %d' % (6 * 7)\n"


def next_expected():
    h = hashlib.sha256()
    for i in range(2000):
        h.update(str(i * i).encode())
    return "NEXT %s %d %d" % (h.hexdigest(), sum(range(100000)), 42)


def next_bad(doc, what, repl):
    exp = next_expected()
    out = (doc.get("stdout") or "").strip().splitlines()
    ok = (doc.get("status") == "success" and out[-1:] == [exp] and doc.get("exit_code") == 0
          and "KeyboardInterrupt" not in (doc.get("stderr") or "") and
          (not repl or doc.get("value") == "value 42"))
    return [] if ok else ["%s: %r" % (what, short(doc))]


def signal_runs(rt, what):
    nr = SIGNR.get(platform.machine())
    if nr is None:
        e.skip("x86_64", "system call numbers of this probe are x86_64's and aarch64's")
    code = rw.guarded("SYS_TGKILL = %d\nSYS_SIGQUEUE = %d\n" % nr + SIGNALS)
    bad = []
    for repl in (False, True):
        d = rt.run(code, repl=repl)
        rw.no_guard_refusal(d)
        kind = "REPL" if repl else "plain"
        if d.get("status") != "success" or "alive" not in (d.get("stdout") or "") or \
                d.get("exit_code") != 0:
            bad.append("%s, the %s run that signals PID 1: %r" % (what, kind, short(d)))
            continue
        o = rw.emitted(d, what)
        sent = sorted(k for k, v in o["res"].items() if v == "sent")
        print("# %s %s: ppid %r, %d signals delivered to PID 1, PID 1 then %r"
              % (what, kind, o["ppid"], len(sent), o["pid1"]))
        if not sent:
            print("# %s: no signal reached PID 1 from the run (%r): the host's signals "
                  "below are what reaches it" % (what, sorted(set(o["res"].values()))))
        # the next runs: their programs forked after the signals came (spares refilled)
        for i in range(8):
            r = i % 2 == 1
            bad += next_bad(rt.run(NEXT_REPL if r else NEXT, repl=r),
                            "%s, run %d after the %s signal run" % (what, i, kind), r)
            if i == 3:
                time.sleep(0.2)
    return bad


HOST_SIGS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGCHLD,
             signal.SIGALRM, signal.SIGUSR2, signal.SIGPIPE)


def host_signals(rt):
    """As root: the same signals sent from the host to every run init (B) there is --
    the spares' waiting for a run and a live run's -- which the sandbox keeps the run
    itself from doing (uid, Landlock's signal scope): they are delivered, stay pending
    (blocked), and change nothing: the live run ends well, the next runs are right."""
    if os.geteuid() != 0:
        return []
    bad = []
    live = {}

    def sleeper():
        live["doc"] = rt.run("import time\ntime.sleep(1.0)\nprint('slept')\n")

    th = threading.Thread(target=sleeper, daemon=True)
    th.start()
    time.sleep(0.4)
    inits = sorted(p for v in templates().values() for p in v)
    pending = {}
    for _ in range(20):
        for pid in inits:
            for s in HOST_SIGS:
                try:
                    os.kill(pid, s)
                except ProcessLookupError:
                    pass
    for pid in inits:
        try:
            with open("/proc/%d/status" % pid) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
            pending[pid] = int(st["ShdPnd"].strip(), 16) | int(st["SigPnd"].strip(), 16)
        except (OSError, KeyError, ValueError):
            pass
    th.join(30)
    d = live.get("doc") or {}
    if (d.get("status"), d.get("stdout")) != ("success", "slept\n"):
        bad.append("host signals to every run init: the live run ended %r" % short(d))
    want = sum(1 << (s - 1) for s in HOST_SIGS)
    held = [p for p, m in pending.items() if m & want == want]
    print("# host signals to %d run inits: %d hold them all pending" % (len(inits), len(held)))
    if not held:
        bad.append("the host's signals were pending in none of the run inits %r: %r"
                   % (inits, {p: "%x" % m for p, m in pending.items()}))
    time.sleep(0.2)
    for i in range(8):
        r = i % 2 == 1
        bad += next_bad(rt.run(NEXT_REPL if r else NEXT, repl=r),
                        "run %d after the host's signals to the run inits" % i, r)
    return bad


# seen failing (on purpose, in a copy of the sources): init_main blocking SIGCHLD only
# (the host's signals pending in no init: handled or fatal).  CPython clears a tripped
# signal in every fork (PyOS_AfterFork_Child), so the next runs' KeyboardInterrupt is
# not what shows it.  Would catch: B with a signal unblocked whose
# handler is the interpreter's (inherited from T: SIGINT's C handler writes "tripped"
# into T's memory, and every P forked later raises KeyboardInterrupt at its first
# bytecode); a B killed or stopped by a signal from its program (the run's result)
def test_signals_to_pid1(t):
    """A run sends SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGCHLD, SIGALRM (and SIGUSR2,
    SIGQUIT, SIGPIPE, SIGWINCH, SIGCONT, SIGVTALRM, SIGPROF, SIGXCPU, SIGSEGV) to PID 1
    and to its parent (the same), floods it, and sends tgkill and rt_sigqueueinfo: the
    run still ends success with its output, and the next eight runs (plain and REPL,
    new spares among them) print the right checksum and value, exit 0, no
    KeyboardInterrupt.  As root and as nobody (the sandbox may refuse the signals: the
    program's uid differs from its init's as root, Landlock's signal scope).  And, as
    root, the same signals sent from the host to every run init there is (idle spares'
    and a live run's): delivered, they stay pending in B (it blocks them all); the live
    run and the next runs are right."""
    e.need_restricted()
    rt = rw.with_runtime(t, pol_doc())
    bad = signal_runs(rt, "root")
    bad += host_signals(rt)
    nb = maybe_nobody(t)
    if nb:
        bad += signal_runs(nb, "as nobody")
        nb.close()
    g.check(not bad, "signals to PID 1 changed a run:\n  " + "\n  ".join(bad[:30]))


# ================================================================ 4. shared state

CORRUPT = r'''
import errno, ctypes, socket, fcntl
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def en(x):
    return errno.errorcode.get(x, str(x))
res, wrote = {}, []
def wr(p, data, opened_only=False):
    try:
        fd = _o.open(p, _o.O_WRONLY | _o.O_NONBLOCK)
    except OSError as x:
        res[p] = en(x.errno)
        return
    try:
        if opened_only:
            res[p] = "OPENED"
        else:
            _o.write(fd, data)
            res[p] = "WRITTEN"
    except OSError as x:
        res[p] = "opened, write " + en(x.errno)
    finally:
        _o.close(fd)
# PID 1's files (its memory is the template's: mem is only opened, never written)
for base in ("/proc/1", "/proc/1/task/1"):
    wr(base + "/mem", b"", opened_only=True)
    for f, d in (("comm", b"rts-pwned"), ("oom_score_adj", b"1000"), ("oom_adj", b"15"),
                 ("timerslack_ns", b"1"), ("coredump_filter", b"0x7f"), ("clear_refs", b"5"),
                 ("attr/current", b"unconfined"), ("attr/exec", b"unconfined"),
                 ("attr/fscreate", b"x"), ("attr/keycreate", b"x"), ("attr/sockcreate", b"x"),
                 ("attr/prev", b"x"), ("loginuid", b"0"), ("sessionid", b"1"),
                 ("setgroups", b"deny"), ("uid_map", b"0 0 1"), ("gid_map", b"0 0 1"),
                 ("projid_map", b"0 0 1"), ("autogroup", b"19"), ("sched", b"0"),
                 ("environ", b"x"), ("cmdline", b"x"), ("make-it-fail", b"1")):
        wr("%s/%s" % (base, f), d)
    for n in range(64):
        wr("%s/fd/%d" % (base, n), FORGED)
# what is writable here and might be shared: /dev/shm, the root of every writable mount
places = ["/dev/shm", "/tmp", _o.getcwd()]
for line in open("/proc/self/mountinfo"):
    a = line.split(" - ")[0].split()
    if "rw" in a[5].split(",") and not a[4].startswith(("/proc", "/sys", "/dev/pts")):
        places.append(a[4])
for p in sorted(set(places)):
    try:
        with open(_o.path.join(p, MARK), "w") as f:
            f.write(MARK)
        res["mark " + p] = "WRITTEN"
    except OSError as x:
        res["mark " + p] = en(x.errno)
# a memfd, SysV shared memory with a key, an abstract socket: in this run's namespaces
try:
    mfd = _o.memfd_create(MARK)
    _o.write(mfd, MARK.encode())
    res["memfd"] = mfd
except OSError as x:
    res["memfd"] = en(x.errno)
shmid = libc.shmget(ctypes.c_int(0x52545300), ctypes.c_size_t(4096), ctypes.c_int(0o1666))
res["shmget"] = shmid if shmid >= 0 else en(ctypes.get_errno())
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(b"\0" + MARK.encode())
    s.listen(1)
    res["abstract"] = "bound"
except OSError as x:
    res["abstract"] = en(x.errno)
for p, d in (("/proc/sys/kernel/ns_last_pid", b"100"), ("/proc/sys/vm/drop_caches", b"1"),
             ("/proc/sysrq-trigger", b"h")):
    wr(p, d)
emit(res)
'''

LOOK = r'''
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
seen = []
for top in ["/dev/shm", "/tmp", _o.getcwd(), "/"]:
    try:
        for n in _o.listdir(top):
            if n == MARK:
                seen.append(top)
    except OSError:
        pass
for line in open("/proc/self/mountinfo"):
    a = line.split(" - ")[0].split()
    if _o.path.exists(_o.path.join(a[4], MARK)):
        seen.append(a[4])
fds = []
for n in _o.listdir("/proc/self/fd"):
    try:
        l = _o.readlink("/proc/self/fd/" + n)
    except OSError:
        continue
    if "memfd" in l:
        fds.append(l)
shm = libc.shmget(ctypes.c_int(0x52545300), ctypes.c_size_t(0), ctypes.c_int(0))
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(b"\0" + MARK.encode())
    ab = "connected"
except OSError as x:
    ab = x.errno
try:
    comm1 = open("/proc/1/comm").read().strip()
except OSError as x:    # PID 1 hidden (hidepid): the host checks its name
    comm1 = _o.strerror(x.errno) if x.errno != 2 else "ENOENT"
emit({"seen": sorted(set(seen)), "memfds": fds, "shm": shm, "abstract": ab,
      "comm1": comm1})
'''

# a forged shim report (struct govex__shim_report: exited 0, nothing killed)
FORGED = b"\0" * 40


def host_comm_bad(what, i):
    """As root, from the host: every child of a template is a run init still named
    govex-init (a comm the attack wrote would show here; the run cannot read it)."""
    if os.geteuid() != 0:
        return []
    d = rw.descendants()
    tps = templates()
    odd = {p: c for p, (pp, c) in d.items() if pp in tps and c != "govex-init"
           and not c.startswith("zombie:")}
    return ["%s, run %d after the attack: a template's child renamed: %r" % (what, i, odd)] \
        if odd else []


def corrupt_case(rt, what):
    mark = "rts-mark-" + secrets.token_hex(6)
    d = rt.run(rw.guarded("MARK = %r\nFORGED = %r\n" % (mark, FORGED) + CORRUPT))
    rw.no_guard_refusal(d)
    bad = []
    if d.get("status") != "success":
        return ["%s: the attack run: %r" % (what, short(d))]
    res = rw.emitted(d, what)
    for k, v in sorted(res.items()):
        if k.startswith("/proc/1") or k.startswith("/proc/sys") or k == "/proc/sysrq-trigger":
            if isinstance(v, str) and (v.startswith(("OPENED", "WRITTEN", "opened"))):
                bad.append("%s: %s -> %s" % (what, k, v))
    print("# %s: written where private: %r" % (what, sorted(k for k, v in res.items()
                                                          if v == "WRITTEN")))
    for i in range(6):
        repl = i % 2 == 1
        look = rt.run(rw.guarded("MARK = %r\n" % mark + LOOK), repl=repl)
        o = rw.emitted(look, "%s, look %d" % (what, i))
        if o["seen"] or o["memfds"] or o["shm"] >= 0 or o["abstract"] == "connected" or \
                o["comm1"] not in ("govex-init", "ENOENT"):
            bad.append("%s, run %d after the attack sees it: %r" % (what, i, o))
        bad += host_comm_bad(what, i)
        bad += next_bad(rt.run(NEXT_REPL if repl else NEXT, repl=repl),
                        "%s, run %d after the attack" % (what, i), repl)
    return bad


# seen failing: none (the design held).  Would catch: a /proc/1 file of the shared mm
# (mem, coredump_filter, clear_refs) or B's (fd/N: its report pipe, attr, comm) writable
# from the program; a mount, /dev/shm, memfd, SysV key or abstract socket one run's
# program can leave for the next
def test_shared_state_not_corruptible(t):
    """A run tries everything writable it can find that PID 1 (the template's memory)
    might share: /proc/1 and /proc/1/task/1 mem (opened only), comm, oom_score_adj,
    timerslack_ns, coredump_filter, clear_refs (flags and state of the shared mm),
    attr/*, loginuid, uid_map..., fd/0..63 (a forged report written to each it
    opens); a marker in /dev/shm and at the root of every writable mount; a memfd, a
    SysV segment with a fixed key, an abstract socket; /proc/sys knobs.  None of PID 1's
    opens; the next six runs (plain and REPL) see no marker, memfd, segment or socket,
    PID 1 is still govex-init, and they print the right checksum and value.  As root
    and as nobody."""
    e.need_restricted()
    rt = rw.with_runtime(t, pol_doc())
    bad = corrupt_case(rt, "root")
    nb = maybe_nobody(t)
    if nb:
        bad += corrupt_case(nb, "as nobody")
        nb.close()
    g.check(not bad, "shared state a run could change:\n  " + "\n  ".join(bad[:30]))


# ================================================================ 5. leftovers

BURST = [
    ("print(%d)\n", False, None),
    ("%d\n", True, None),
    ("import os\nprint(%d)\nos._exit(3)\n", False, None),
    ("raise ValueError(%d)\n", False, None),
    ("import os, signal\nprint(%d, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
     False, None),
    ("print(open('in.txt').read(), %d)\n", False, "files"),
    ("import time\ntime.sleep(5)\nprint(%d)\n", False, "timeout"),
    ("x = %d\nx * 2\n", True, "limits"),
]


def burst_run(rt, i):
    code, repl, extra = BURST[i % len(BURST)]
    kw = {"repl": repl}
    if extra == "files":
        kw["files"] = [("in.txt", "f%d" % i)]
    elif extra == "timeout":
        kw["limits"] = rz.limit_vector(wall_ms=200)
    elif extra == "limits":
        kw["limits"] = rz.limit_vector(open_files=100 + i % 3)
    return rt.run(code % i, **kw)


def burst_ok(d, i):
    code, repl, extra = BURST[i % len(BURST)]
    st = d.get("status")
    if i % len(BURST) in (0, 5):
        return st == "success" and (d.get("stdout") or "").split()[-1:] == [str(i)]
    if i % len(BURST) == 1:
        return st == "success" and d.get("value") == i
    if i % len(BURST) == 7:
        return st == "success" and d.get("value") == 2 * i
    if extra == "timeout":
        return st not in ("success", None)
    return st not in ("success", None, "launch_failed")


# seen failing (on purpose, in a copy): kid_mem_free not called (431 mappings, 60 MiB
# more), its spec buffers' munmap left out (824 KiB more of no-fork buffers; mappings
# +2: the buffers merge).  Would catch: kid_mem_free not called (an
# init's stack, 384 KiB, and its spec buffers left mapped in T per run), a spec buffer
# not recorded for T to free (spec_load's, the go's), a run init never reaped
def test_template_memory_bounded(t):
    """208 warm runs in bursts of 16 (plain and REPL, ending well, by exception, by
    os._exit, by SIGKILL of themselves, by wall timeout; with files in; with limits of
    their own, so spares of other shapes are let go): every result right, and each
    template's resident and virtual size, its number of mappings and the size of its
    no-fork mappings (the run inits' stacks and spec buffers; less the inits alive at
    the time) do not grow with the runs: growth under 4 MiB, 16 mappings, 128 KiB of
    spec buffers (one run's spec is 4-6 KiB: a leak of one per run is ~200 pages; leaked
    buffers next to each other merge into one mapping, so the count alone would not
    show it)."""
    e.need_restricted()
    rt = rw.with_runtime(t, pol_doc())
    bad = []

    def burst(k):
        docs = rw.parallel([lambda j=j: burst_run(rt, k * 16 + j) for j in range(16)])
        for j, d in enumerate(docs):
            if not burst_ok(d, k * 16 + j):
                bad.append("run %d (%r): %r" % (k * 16 + j, BURST[(k * 16 + j) % len(BURST)][0],
                                                short(d)))

    burst(0)
    burst(1)
    settle(rt)
    tps = sorted(templates())
    g.check(tps, "no template found below this process (no govex-init child)")
    try:
        first = {tp: tmpl_figures(tp) for tp in tps}
    except OSError as x:
        e.skip("procfs", "the template's smaps cannot be read here: %s" % x)
    t0 = time.monotonic()
    for k in range(2, 15):
        burst(k)
    took = time.monotonic() - t0
    settle(rt)
    tps2 = sorted(templates())
    g.check(tps2 == tps, "the templates changed during the bursts: %r -> %r (retired?)"
            % (tps, tps2))
    last = {tp: tmpl_figures(tp) for tp in tps}
    per_init = 384  # KiB: zyg.c spare_make, guard + INIT_STACK + kid_mem page
    for tp in tps:
        a, b = first[tp], last[tp]
        bufs_a = a["dc_kib"] - a["inits"] * per_init
        bufs_b = b["dc_kib"] - b["inits"] * per_init
        print("# template %d: before %r, after %r (%d runs in %.1f s)"
              % (tp, a, b, 13 * 16, took))
        if b["rss"] - a["rss"] > 4096 or b["size"] - a["size"] > 4096 + \
                per_init * max(0, b["inits"] - a["inits"]):
            bad.append("template %d grew: %r -> %r" % (tp, a, b))
        if b["maps"] - a["maps"] > 16:
            bad.append("template %d has %d mappings more after 208 runs: %r -> %r"
                       % (tp, b["maps"] - a["maps"], a, b))
        if bufs_b - bufs_a > 128:
            bad.append("template %d keeps %d KiB more of no-fork buffers than its live "
                       "inits need: %r -> %r" % (tp, bufs_b - bufs_a, a, b))
    g.check(not bad, "\n  ".join(bad[:30]))


# ================================================================ 6. per-task state

CPU = r'''
import ctypes
import errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
res = []
cpus = sorted(_o.sched_getaffinity(0))
for c in cpus * 2:
    _o.sched_setaffinity(0, {c})
    cpu = ctypes.c_uint(9999)
    libc.syscall(ctypes.c_long(SYS_GETCPU), ctypes.byref(cpu), None, None)
    res.append([c, libc.sched_getcpu(), cpu.value])
emit(res)
'''


# seen failing: the current build (a warm run's sched_getcpu() keeps returning the CPU
# its template was last on; cold runs, and warm runs before init_clone's CLONE_VM, are
# right)
def test_sched_getcpu_as_cold(t):
    """The kernel state of a task that clone(CLONE_VM) does not copy is not the
    program's either (P is a fork of B, and B has what a CLONE_VM child has): glibc
    registers an rseq area for the main thread at start and reads sched_getcpu() from
    it; the kernel drops the registration for a CLONE_VM child, so in P glibc's area is
    a stale copy of T's that the kernel never updates.  The program's sched_getcpu()
    must agree with the getcpu system call on every CPU it is moved to (os.sched_
    setaffinity), as in a cold run.  (Native code that relies on the main thread's rseq
    -- per-CPU caches of allocators such as tcmalloc -- would run its restartable
    sequences unprotected.)"""
    e.need_restricted()
    nr = {"x86_64": 309, "aarch64": 168}.get(platform.machine())
    if nr is None:
        e.skip("x86_64", "getcpu's number is x86_64's and aarch64's here")
    if len(os.sched_getaffinity(0)) < 2:
        e.skip("cpus", "one CPU: sched_getcpu cannot be told from a stale copy")
    code = rw.guarded("SYS_GETCPU = %d\n" % nr + CPU)
    bad = []
    for warm in (False, True):
        rt = rw.WarmRuntime(pol_doc(), warm=warm)
        try:
            for repl in (False, True):
                for i in range(2):
                    d = rt.run(code, repl=repl)
                    rw.no_guard_refusal(d)
                    o = rw.emitted(d, "getcpu")
                    wrong = [x for x in o if x[1] != x[2] or x[2] != x[0]]
                    if wrong:
                        bad.append("%s %s run %d: [cpu set, sched_getcpu(), getcpu] %r"
                                   % ("warm" if warm else "cold", "REPL" if repl else "plain",
                                      i, o))
        finally:
            rt.close()
    g.check(not bad, "sched_getcpu() in a run is not the CPU it runs on:\n  "
            + "\n  ".join(bad))


TESTS = [
    ("PID 1's (the template's) memory out of reach from a warm run, root and nobody",
     test_pid1_memory_unreachable),
    ("a live run's secrets in no later run, spare or template mapping a fork copies",
     test_live_run_secret_not_in_later_runs),
    ("sixteen concurrent runs do not find each other's secrets",
     test_concurrent_runs_scan_each_other),
    ("signals to PID 1 change neither the run nor the next runs, root and nobody",
     test_signals_to_pid1),
    ("nothing writable shared with PID 1: next runs correct, root and nobody",
     test_shared_state_not_corruptible),
    ("208 runs in bursts: the template's memory and mappings do not grow",
     test_template_memory_bounded),
    ("sched_getcpu() in a warm run as in a cold one (rseq of a CLONE_VM child)",
     test_sched_getcpu_as_cold),
]

if __name__ == "__main__":
    only = os.environ.get("RTS_ONLY")
    g.main([x for x in TESTS if not only or only in x[1].__name__])
