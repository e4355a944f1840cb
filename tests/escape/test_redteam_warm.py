#!/usr/bin/env python3
"""Red team RT-W (round 3, contract section 6): attacks on warm runs.

DESIGN.md "Warm runs": a run forked from a template has the same controls, statuses and
result document as a cold run and never sees another run's state (globals, modules,
environment, files, threads); "Trust boundaries": runs cannot see or touch each other,
aggregate limits are kernel-accounted.  So every test below either compares a warm run
with a cold one (CLI, GOVEX_WARM=1 vs 0, GOVEX_WARM_LOG proving the run was warm) or
drives one long-lived library runtime (govex_runtime_warm(), as `govex mcp` has) whose
runs share a template, and attacks from one run what the others (or the template, or the
host) hold.  Anything that could harm the host (kill(-1), forks, raw clone/vfork,
filling memory, writing into shared mappings) runs behind a guard that exits 97 unless
the snippet finds itself in a sandbox (its own PID namespace, no_new_privs, seccomp, not
the host's /etc); the CLI cases also prove the sandbox with the canary first.
Prints TAP."""
import ctypes
import hashlib
import json
import os
import secrets
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

# RTW_COLD_DEBUG=1 (for checking these tests themselves, never in CI): every "warm" run
# is made cold, so a test that fails then is wrong, not the warm runs
COLD_DEBUG = os.environ.get("RTW_COLD_DEBUG") == "1"

# ---------------------------------------------------------------- snippets' helpers

GUARD = r'''
import os as _o, json as _j
def _guard(pidns, etc):
    st = {}
    for _l in open("/proc/self/status"):
        _k, _, _v = _l.partition(":")
        st[_k] = _v.strip()
    try:
        _s = _o.stat("/etc")
        _e = [_s.st_dev, _s.st_ino]
    except OSError:
        _e = None
    ok = (_o.readlink("/proc/self/ns/pid") != pidns and _o.getpid() < 100
          and st.get("NoNewPrivs") == "1" and st.get("Seccomp") == "2"
          and _e != etc and not _o.path.exists("/etc/shadow"))
    if not ok:
        print("GOVEX-GUARD refused", flush=True)
        _o._exit(97)
_guard(%r, %r)
_dumps = _j.dumps
def emit(obj):
    print("RTW " + _dumps(obj, sort_keys=True, default=repr), flush=True)
'''

# the process's own memory, searched for a secret given in two halves: the whole secret
# never exists in the searching process unless something else put it there
SCAN = r'''
def scan_memory(halves):
    found = []
    fd = _o.open("/proc/self/mem", _o.O_RDONLY)
    try:
        for line in open("/proc/self/maps").read().splitlines():
            p = line.split()
            if "r" not in p[1] or (len(p) > 5 and p[5].startswith(("[vvar", "[vsyscall"))):
                continue
            a, b = (int(x, 16) for x in p[0].split("-"))
            if b - a > (512 << 20):
                continue
            try:
                data = _o.pread(fd, b - a, a)
            except OSError:
                continue
            for h1, h2 in halves:
                i = data.find(h1)
                while i >= 0:
                    if data[i + len(h1):i + len(h1) + len(h2)] == h2:
                        found.append([h1.decode(), line])
                        break
                    i = data.find(h1, i + 1)
    finally:
        _o.close(fd)
    return found
'''


def guarded(code):
    pidns, etc = e.host_facts()
    return GUARD % (pidns, etc) + code


def emitted(doc, what="run"):
    """The snippet's RTW line (the last), or a failure naming the run's ending."""
    for line in reversed((doc.get("stdout") or "").splitlines()):
        if line.startswith("RTW "):
            return json.loads(line[4:])
    raise g.Failure("%s printed no RTW line: status=%r stdout=%r stderr=%r diagnostics=%r"
                    % (what, doc.get("status"), (doc.get("stdout") or "")[-500:],
                       (doc.get("stderr") or "")[-800:], doc.get("diagnostics")))


def no_guard_refusal(doc):
    g.check("GOVEX-GUARD" not in (doc.get("stdout") or ""),
            "the guard refused (not a sandbox): %r" % (doc.get("stdout") or "")[-300:])


def halves(secret):
    s = secret.encode()
    return [s[:len(s) // 2], s[len(s) // 2:]]


# ---------------------------------------------------------------- the CLI, warm or cold

_LOGS = [0]


SPARE = os.environ.get("GOVEX_WARM_SPARE") == "1"


def cli(t, code, pol, warm, args=(), extra_env=None, **kw):
    """`govex run --json -c CODE` with GOVEX_WARM=1 (the run must be logged "warm" in
    GOVEX_WARM_LOG) or GOVEX_WARM=0.  Returns (Proc, result document)."""
    _LOGS[0] += 1
    log = t.path("warm-%d.log" % _LOGS[0])
    env = dict(extra_env or {})
    env["GOVEX_WARM"] = "1" if warm and not COLD_DEBUG else "0"
    env["GOVEX_WARM_LOG"] = log
    r = t.run(["run", "--policy", pol, "--json"] + list(args) + ["-c", code],
              extra_env=env, **kw)
    if r.hard_timeout:
        raise g.Failure("govex did not finish\n" + r.describe())
    doc = r.result()
    if warm and not COLD_DEBUG:
        lines = open(log).read().split("\n") if os.path.exists(log) else []
        lines = [x for x in lines if x]
        # (GOVEX_WARM_SPARE=1, test_warm_suite.py's second pass: on a spare)
        g.check(lines and lines[-1] == ("warm spare" if SPARE else "warm"),
                "GOVEX_WARM=1 but the run was not warm (GOVEX_WARM_LOG: %r); status %r "
                "stderr %r" % (lines, doc.get("status"), (doc.get("stderr") or "")[-300:]))
    e.eq(doc["backend"]["name"], "restricted", "backend")
    return r, doc


def both(t, code, pol, **kw):
    """(cold document, warm document) of the same run."""
    return cli(t, code, pol, False, **kw)[1], cli(t, code, pol, True, **kw)[1]


def denials_of(doc):
    return sorted((d.get("code"), tuple(d.get("controls") or ()), d.get("message"))
                  for d in doc.get("diagnostics") or []
                  if isinstance(d, dict) and d.get("code") == "denied_by_policy")


def diag_codes(doc):
    return sorted(d.get("code") for d in doc.get("diagnostics") or [] if isinstance(d, dict))


# ---------------------------------------------------------------- one warm library runtime

class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("pad", ctypes.c_int), ("msg", ctypes.c_char * 504)]


class _File(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_char_p), ("len", ctypes.c_size_t)]


class _Opts(ctypes.Structure):
    # struct govex_runtime_options; the trailing int is the `warm` field of the round-2
    # prototype (branch warm), ignored by a library with govex_runtime_warm()
    _fields_ = [("approve", ctypes.c_void_p), ("approve_userdata", ctypes.c_void_p),
                ("audit", ctypes.c_void_p), ("audit_userdata", ctypes.c_void_p),
                ("audit_fd", ctypes.c_int), ("probe_cache_dir", ctypes.c_char_p),
                ("backend", ctypes.c_char_p), ("sandbox_uid", ctypes.c_uint32),
                ("sandbox_gid", ctypes.c_uint32), ("sandbox_uid_count", ctypes.c_uint32),
                ("proto_warm", ctypes.c_int), ("spare", ctypes.c_char * 64)]


class _Req(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p), ("code", ctypes.c_char_p),
                ("code_len", ctypes.c_size_t), ("source_path", ctypes.c_char_p),
                ("stdin_data", ctypes.c_char_p), ("stdin_len", ctypes.c_size_t),
                ("workdir", ctypes.c_char_p), ("limits", ctypes.c_uint64 * 8),
                ("env", ctypes.POINTER(ctypes.c_char_p)), ("needs", ctypes.c_uint),
                ("shell", ctypes.c_int), ("metadata", ctypes.c_void_p),
                ("cancel", ctypes.c_void_p), ("repl", ctypes.c_int),
                ("inputs_json", ctypes.c_char_p), ("inputs_len", ctypes.c_size_t),
                ("files", ctypes.POINTER(_File)), ("n_files", ctypes.c_size_t),
                ("outputs", ctypes.c_int), ("on_output", ctypes.c_void_p),
                ("output_userdata", ctypes.c_void_p)]


def strict_doc(**changes):
    pol = g.preset("strict")
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(pol.get(k), dict):
            pol[k] = dict(pol[k], **v)
        else:
            pol[k] = v
    pol["backend"] = "restricted"
    return pol


class WarmRuntime:
    """One library runtime made warm with govex_runtime_warm() (the call `govex mcp`
    makes); run() may be called from several threads at once."""

    def __init__(self, policy_doc, warm=True):
        e.need_restricted()
        self.lib = lib = e.rc_libgovex()
        lib.govex_result_json.restype = ctypes.c_char_p
        lib.govex_result_json.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        err = _Err()
        pol = ctypes.c_void_p()
        data = json.dumps(policy_doc).encode()
        if lib.govex_policy_parse(data, ctypes.c_size_t(len(data)), ctypes.byref(pol),
                                  ctypes.byref(err)) < 0:
            raise g.Failure("govex_policy_parse: %r" % err.msg)
        self.pol = pol
        has_api = hasattr(lib, "govex_runtime_warm")
        opts = _Opts()
        opts.proto_warm = 1 if (warm and not has_api and not COLD_DEBUG) else 0
        rt = ctypes.c_void_p()
        if lib.govex_runtime_new(pol, ctypes.byref(opts), ctypes.byref(rt),
                                 ctypes.byref(err)) < 0:
            lib.govex_policy_free(pol)
            raise g.Failure("govex_runtime_new: %r" % err.msg)
        self.rt = rt
        self.closed = False
        if warm and has_api and not COLD_DEBUG:
            r = lib.govex_runtime_warm(rt, ctypes.byref(err))
            if r < 0:
                self.close()
                raise g.Failure("govex_runtime_warm() = %d (%s)"
                                % (r, err.msg.decode(errors="replace")))

    def stats(self):
        if not hasattr(self.lib, "govex_runtime_stats_json"):
            return None
        p = ctypes.c_void_p()
        if self.lib.govex_runtime_stats_json(self.rt, ctypes.byref(p)) < 0 or not p:
            raise g.Failure("govex_runtime_stats_json failed")
        s = ctypes.string_at(p.value).decode()
        ctypes.CDLL(None).free(p)
        return json.loads(s)

    def run(self, code, stdin=None, env=None, files=None, repl=False, inputs=None,
            outputs=False, limits=None, cancel=None):
        req = _Req()
        if cancel is not None:
            req.cancel = cancel
        src = code.encode()
        req.code, req.code_len = src, len(src)
        keep = [src]
        if stdin is not None:
            b = stdin.encode()
            keep.append(b)
            req.stdin_data, req.stdin_len = b, len(b)
        if env:
            arr = (ctypes.c_char_p * (len(env) + 1))(*[x.encode() for x in env], None)
            keep.append(arr)
            req.env = arr
        if files:
            fa = (_File * len(files))()
            for i, (n, d) in enumerate(files):
                nb, db = n.encode(), d.encode()
                keep += [nb, db]
                fa[i].name, fa[i].data, fa[i].len = nb, db, len(db)
            keep.append(fa)
            req.files, req.n_files = fa, len(files)
        if repl:
            req.repl = 1
            if inputs is not None:
                ib = json.dumps(inputs).encode()
                keep.append(ib)
                req.inputs_json, req.inputs_len = ib, len(ib)
        if outputs:
            req.outputs = 1
        for i, v in enumerate(limits or ()):
            req.limits[i] = v
        res = ctypes.c_void_p()
        err = _Err()
        r = self.lib.govex_runtime_run(self.rt, ctypes.byref(req), ctypes.byref(res),
                                       ctypes.byref(err))
        if r < 0 or not res:
            raise g.Failure("govex_runtime_run() = %d: %s" % (r, err.msg))
        doc = json.loads(self.lib.govex_result_json(res, None).decode())
        self.lib.govex_result_free(res)
        return doc

    def close(self):
        if not self.closed:
            self.closed = True
            self.lib.govex_runtime_free(self.rt)
            self.lib.govex_policy_free(self.pol)


def warm_runs(rt):
    s = rt.stats()
    if s is None:
        return None
    return s.get("warm", {}).get("warm_runs")


def with_runtime(t, policy_doc, warm=True):
    rt = WarmRuntime(policy_doc, warm=warm)
    t.defer(rt.close)
    return rt


def expect_warm(rt, before, n, what):
    """The runtime's stats show N more warm runs than BEFORE (None: no stats here)."""
    after = warm_runs(rt)
    if before is None or after is None or COLD_DEBUG:
        return
    g.check(after - before >= n, "%s: %d runs but warm_runs went %r -> %r (stats %r)"
            % (what, n, before, after, rt.stats()))


def parallel(fns):
    """Runs every fn in its own thread; returns their results (exceptions re-raised)."""
    out = [None] * len(fns)
    errs = []

    def go(i, fn):
        try:
            out[i] = fn()
        except BaseException as x:  # noqa: B902
            errs.append(x)

    ths = [threading.Thread(target=go, args=(i, f), daemon=True) for i, f in enumerate(fns)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(120)
    if errs:
        raise errs[0]
    if any(th.is_alive() for th in ths):
        raise g.Failure("a run did not return within 120 s")
    return out


# ---------------------------------------------------------------- host processes

def descendants(root=None, zombies=False):
    """{pid: (ppid, comm)} of every live (or with ZOMBIES, also unreaped) process below
    ROOT (default: this one)."""
    root = root or os.getpid()
    procs = {}
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % n) as f:
                st = f.read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            if fields[0] == "Z" and not zombies:
                continue
            if fields[0] == "Z":
                comm = "zombie:" + comm
            procs[int(n)] = (int(fields[1]), comm)
        except (OSError, ValueError, IndexError):
            pass
    out = {}
    frontier = {root}
    while frontier:
        nxt = {p for p, (pp, _) in procs.items() if pp in frontier and p not in out}
        for p in nxt:
            out[p] = procs[p]
        frontier = nxt
    return out


def depth(pid, tree):
    d = 0
    while pid in tree:
        pid = tree[pid][0]
        d += 1
    return d


def host_mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split()[4] for line in f)


# ================================================================ tests

def test_warm_is_on(t):
    """The precondition of every other test: a runtime can be made warm, its stats say
    so, and its runs are counted warm (the CLI's GOVEX_WARM=1 logs "warm")."""
    rt = with_runtime(t, strict_doc())
    s = rt.stats()
    if s is not None:
        w = s.get("warm") or {}
        g.check(w.get("enabled") is True and w.get("ready") is True and
                (w.get("templates") or 0) >= 1, "stats after govex_runtime_warm: %r" % s)
    before = warm_runs(rt)
    doc = rt.run("print(6 * 7)\n")
    e.eq((doc["status"], doc["stdout"]), ("success", "42\n"), "status, stdout")
    expect_warm(rt, before, 1, "a plain run")
    s = rt.stats()
    if s is not None:
        e.eq(s["warm"].get("cold_runs"), 0, "cold_runs (stats %r)" % s)
    _, doc = cli(t, "print(6 * 7)\n", e.policy(t), True)
    e.eq((doc["status"], doc["stdout"]), ("success", "42\n"), "CLI warm status, stdout")


# What a program can see of its own start state, compared warm vs cold.
STATE = r'''
import sys, signal, resource, threading, gc, pwd, grp, locale, time
fds = sorted(int(n) for n in _o.listdir("/proc/self/fd"))
def kind(fd):
    try:
        l = _o.readlink("/proc/self/fd/%d" % fd)
    except OSError as x:
        return "?%s" % x.errno
    return l.split(":")[0] if ":" in l else l
st = {}
for _l in open("/proc/self/status"):
    _k, _, _v = _l.partition(":")
    if _k.startswith(("Cap", "Sig", "NoNewPrivs", "Seccomp", "Groups", "Uid", "Gid",
                      "Speculation", "Threads")):
        st[_k] = _v.split() if _k in ("Uid", "Gid", "Groups") else _v.strip()
st.pop("SigQ", None)
um = _o.umask(0o22); _o.umask(um)
mi = []
for _l in open("/proc/self/mountinfo"):
    a = _l.split(" - ")[0].split()
    mi.append([a[4], "rw" if "rw" in a[5].split(",") else "ro"])
sigs = {}
for s in range(1, signal.NSIG):
    try:
        h = signal.getsignal(s)
    except (ValueError, OSError):
        continue
    sigs[s] = h if isinstance(h, int) or h is None else getattr(h, "__name__", repr(h))
rl = {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource)
      if n.startswith("RLIMIT_")}
try:
    me = pwd.getpwuid(_o.getuid()); me = [me.pw_name, me.pw_uid, me.pw_dir]
except KeyError:
    me = None
try:
    mg = grp.getgrgid(_o.getgid()).gr_name
except KeyError:
    mg = None
emit({"fds": [[f, kind(f)] for f in fds], "status": st, "umask": um, "cwd": _o.getcwd(),
      "cwd_list": sorted(_o.listdir(".")), "tmp_list": sorted(_o.listdir("/tmp")),
      "mounts_rw": sorted(set(m for m, rw in mi if rw == "rw")), "signals": sigs,
      "rlimits": rl, "env": dict(_o.environ), "argv": sys.argv, "flags": list(sys.flags),
      "path": sys.path, "ids": [_o.getpid(), _o.getppid(), _o.getpgrp(), _o.getsid(0)],
      "passwd_me": me, "group_me": mg, "uname": list(_o.uname())[:3],
      "threads": threading.active_count(), "gc": [gc.isenabled(), gc.get_threshold()],
      "recursion": sys.getrecursionlimit(), "switch": sys.getswitchinterval(),
      "enc": [sys.getfilesystemencoding(), sys.stdout.encoding, sys.stdout.errors,
              sys.stdout.line_buffering, sys.stdin.isatty()],
      "affinity": sorted(_o.sched_getaffinity(0)), "nice": _o.getpriority(_o.PRIO_PROCESS, 0),
      "tz": list(time.tzname), "locale": locale.setlocale(locale.LC_ALL),
      "hooks": [sys.excepthook is sys.__excepthook__, sys.displayhook is sys.__displayhook__,
                sys.gettrace(), sys.getprofile(), len(sys.meta_path), len(sys.path_hooks)],
      "dumpable": open("/proc/self/status").read().count("\n") > 0,
      "comm": open("/proc/self/comm").read().strip()})
'''


def test_start_state_warm_equals_cold(t):
    """fds (and what they are), capabilities, signal dispositions and mask, rlimits,
    umask, cwd, /tmp and workdir contents, writable mounts, ids, /etc/passwd's entry
    for the run's uid (hazard 2), environment, argv, flags: a warm run starts as a cold
    one does."""
    e.need_restricted()
    pol = e.policy(t)
    cold, warm = both(t, guarded(STATE), pol)
    c, w = emitted(cold, "cold"), emitted(warm, "warm")
    # a run on a spare (GOVEX_WARM_SPARE=1) has the spare's slot: its own ids, another
    # slot's than the cold run's (the uid is checked against its passwd entry below)
    if SPARE:
        for d in (c, w):
            uid = d["status"]["Uid"][0]
            d["status"] = dict(d["status"], Uid=["SLOT"] * 4, Gid=[
                "SLOT" if x == uid else x for x in d["status"]["Gid"]])
            if d["passwd_me"]:
                d["passwd_me"] = [d["passwd_me"][0], "SLOT"] + d["passwd_me"][2:]
    diffs = ["%s: cold %r, warm %r" % (k, c.get(k), w.get(k))
             for k in sorted(set(c) | set(w)) if k not in ("ids",) and c.get(k) != w.get(k)]
    # pid/ppid/pgrp/sid: the program under an init of its own, in its own session
    if w["ids"][2:] != [w["ids"][0], w["ids"][0]] or w["ids"][1] != c["ids"][1]:
        diffs.append("pid, ppid, pgrp, sid: cold %r, warm %r" % (c["ids"], w["ids"]))
    me = emitted(warm, "warm")
    if not (me["passwd_me"] and me["passwd_me"][0] == "govex" and
            me["passwd_me"][1] == int(me["status"]["Uid"][0])):
        diffs.append("the warm run's uid has no entry of its own in /etc/passwd: %r"
                     % (w["passwd_me"],))
    g.check(not diffs, "warm run's start state differs from cold:\n  " + "\n  ".join(diffs))


def test_warm_called_concurrently(t):
    """govex_runtime_warm() called from four threads at once while runs start on other
    threads: every call returns 0, every run succeeds with its own output, the stats add
    up (warm + cold = started, none in flight after), and runtime free leaves nothing."""
    e.need_restricted()
    rt = WarmRuntime(strict_doc(), warm=False)
    try:
        lib = rt.lib
        if not hasattr(lib, "govex_runtime_warm"):
            raise g.Failure("this library has no govex_runtime_warm()")

        def warm():
            err = _Err()
            return lib.govex_runtime_warm(rt.rt, ctypes.byref(err)), err.msg

        def run(i):
            d = rt.run("print(%d)\n" % i)
            return d["status"], d["stdout"]

        fns = [warm] * 4 + [lambda i=i: run(i) for i in range(6)]
        res = parallel(fns)
        g.check(all(r[0] == 0 for r in res[:4]), "govex_runtime_warm from 4 threads: %r"
                % (res[:4],))
        g.eq(res[4:], [("success", "%d\n" % i) for i in range(6)], "the runs")
        more = [rt.run("print('m')\n")["status"] for _ in range(4)]
        g.eq(more, ["success"] * 4, "runs after")
        st = rt.stats()
        w = st["warm"]
        g.check(st["runs_in_flight"] == 0 and w["warm_runs"] + w["cold_runs"] ==
                st["runs_started"] and w["warm_runs"] >= 4 and w["templates"] <= 2,
                "stats: %r" % st)
    finally:
        rt.close()
    g.check(e.wait_until(lambda: not descendants(zombies=True), 5.0),
            "processes left after runtime free: %r" % descendants(zombies=True))


# ---- state a run leaves for the next one (one template) ----

POISON = r'''
import sys, builtins, json, re, signal, atexit, threading, codecs, warnings, random, gc
import resource, linecache, copyreg, functools, collections, io
secret = sys.stdin.read() + _o.environ.get("RTW_TAG", "")
keep = [secret, secret.encode(), secret * 3]
builtins.RTW_POISON = secret
json.RTW_POISON = secret
json.dumps = lambda *a, **k: "POISONED"
re.compile("rtw-poison-" + secret[:8])
json.JSONEncoder.rtw = 1
sys.path.append("/rtw-poison")
sys.modules["rtw_poison"] = type(sys)("rtw_poison")
sys.meta_path.append(object())
_o.environ["RTW_POISON"] = secret
_o.putenv("RTW_POISON2", secret)
_o.umask(0o777)
signal.signal(signal.SIGUSR1, lambda *a: None)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
sys.setrecursionlimit(77)
sys.setswitchinterval(0.05)
gc.disable(); gc.set_threshold(1, 1, 1)
sys.excepthook = lambda *a: print("RTW-EXCEPTHOOK-LEAK")
threading.excepthook = lambda *a: None
warnings.simplefilter("ignore")
codecs.register(lambda n: None)
atexit.register(print, "RTW-ATEXIT-LEAK")
sys.addaudithook(lambda ev, args: ev == "open" and print("RTW-AUDIT-LEAK", flush=True))
threading.setprofile(lambda *a: None)
random.seed(0)
linecache.cache["rtw-poison"] = (1, None, [secret], "rtw")
copyreg.dispatch_table[complex] = lambda c: (complex, (0, 0))
resource.setrlimit(resource.RLIMIT_NOFILE, (17, 17))
try:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
except Exception:
    pass
open("/tmp/rtw-poison", "w").write(secret)
open("rtw-poison", "w").write(secret)
_o.chdir("/tmp")
ev = threading.Event()
threading.Thread(target=ev.wait, daemon=True, name="rtw-left").start()
import ctypes
ctypes.CDLL(None).prctl(15, b"rtw-poison", 0, 0, 0)
emit({"poisoned": True, "self_scan": scan_memory(HALVES)})
'''

WITNESS = r'''
import sys, builtins, json, re, signal, threading, codecs, warnings, random, gc, resource
import linecache, copyreg, collections, atexit
try:
    codecs.lookup("rtw_nonexistent")
    codec = "found"
except LookupError:
    codec = "none"
emit({"builtins": hasattr(builtins, "RTW_POISON"), "json": [hasattr(json, "RTW_POISON"),
      json.dumps({"a": 1})], "re": any("rtw-poison" in str(k) for k in re._cache),
      "odict": hasattr(json.JSONEncoder, "rtw"),
      "path": "/rtw-poison" in sys.path, "modules": "rtw_poison" in sys.modules,
      "meta_path": len(sys.meta_path), "env": [k for k in _o.environ if "RTW" in k],
      "umask": _o.umask(0o22), "sig": [repr(signal.getsignal(signal.SIGUSR1)),
      repr(signal.getsignal(signal.SIGTERM)),
      sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))],
      "recursion": sys.getrecursionlimit(), "switch": sys.getswitchinterval(),
      "gc": [gc.isenabled(), gc.get_threshold()],
      "excepthook": sys.excepthook is sys.__excepthook__,
      "threading_excepthook": threading.excepthook is threading.__excepthook__,
      "warnings": len(warnings.filters), "codec": codec, "atexit": atexit._ncallbacks(),
      "profile": threading.getprofile() if hasattr(threading, "getprofile") else None,
      "linecache": "rtw-poison" in linecache.cache, "copyreg": complex in copyreg.dispatch_table,
      "nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "cwd": _o.getcwd(),
      "tmp": sorted(_o.listdir("/tmp")), "workdir": sorted(_o.listdir(".")),
      "threads": sorted(th.name for th in threading.enumerate()),
      "tasks": len(_o.listdir("/proc/self/task")),
      "comm": open("/proc/self/comm").read().strip(),
      "random": random.random(), "memory": scan_memory(HALVES)})
'''


def leak_case(t, repl):
    pol = strict_doc(environment={"allow": ["RTW_TAG"]})
    rt = with_runtime(t, pol)
    before = warm_runs(rt)
    secret = "rtw-secret-" + secrets.token_hex(16)
    h = halves(secret)
    witness = guarded(SCAN + "HALVES = [(%r, %r)]\n" % (h[0], h[1]) + WITNESS)
    kw = {"repl": repl}
    if repl:
        kw["inputs"] = {"x": 1}
    r0 = rt.run(witness, **kw)
    w0 = emitted(r0, "first witness")
    poison_in = secret[:12]
    r1 = rt.run(guarded(SCAN + "HALVES = [(%r, %r)]\n" % (h[0], h[1]) + POISON),
                stdin=poison_in, env=["RTW_TAG=" + secret[12:]], **kw)
    g.check(emitted(r1, "poisoning run")["self_scan"],
            "the memory scan does not find the secret in the run that holds it")
    r2 = rt.run(witness, **kw)
    w2 = emitted(r2, "second witness")
    expect_warm(rt, before, 3, "three runs")
    for doc in (r0, r1, r2):
        no_guard_refusal(doc)
    g.check(w0["memory"] == [], "the first run already finds the secret?! %r" % w0["memory"])
    rand = (w0.pop("random"), w2.pop("random"))
    diffs = ["%s: before %r, after %r" % (k, w0.get(k), w2.get(k))
             for k in sorted(set(w0) | set(w2)) if w0.get(k) != w2.get(k)]
    for leak in ("RTW-ATEXIT-LEAK", "RTW-AUDIT-LEAK", "RTW-EXCEPTHOOK-LEAK"):
        if leak in (r2.get("stdout") or "") + (r2.get("stderr") or ""):
            diffs.append("the next run printed %s" % leak)
    g.check(rand[0] != rand[1], "random.random() repeats across runs: %r" % (rand,))
    g.check(not diffs, "state left by one warm run for the next:\n  " + "\n  ".join(diffs))


def test_state_does_not_leak_plain(t):
    """One run poisons everything a Python program can reach (modules, builtins,
    sys.path/modules/meta_path, environ, umask, signal handlers and mask, recursion
    limit, gc, hooks, atexit, audit hook, codecs, warnings, rlimits, cwd, /tmp, workdir,
    a thread, its comm) with a secret it got as data; the next run of the same template
    sees none of it, and the secret is nowhere in its memory."""
    leak_case(t, repl=False)


def test_state_does_not_leak_repl(t):
    """The same against REPL runs (govex's worker: MCP's run_python_snippet)."""
    leak_case(t, repl=True)


# ---- concurrency: every run sees only its own inputs, files, identity ----

CONC = r'''
import sys, time, pwd, hashlib
tag_in = sys.stdin.read()
tag_env = _o.environ.get("RTW_TAG")
tag_file = open("tag.txt").read() if _o.path.exists("tag.txt") else tag_in
open("/tmp/mine", "w").write(tag_in)
out = _o.environ.get("GOVEX_OUTPUT_DIR")
if out:
    open(_o.path.join(out, "out.txt"), "w").write(tag_in)
t0 = time.time()
time.sleep(0.3)
emit({"in": tag_in, "env": tag_env, "file": tag_file, "tmp": sorted(_o.listdir("/tmp")),
      "tmp_mine": open("/tmp/mine").read(), "cwd": sorted(_o.listdir(".")),
      "uid": _o.getuid(), "pw": list(pwd.getpwuid(_o.getuid()))[:3], "t": [t0, time.time()]})
'''


def test_concurrent_runs_see_only_their_own(t):
    """Eight threads, three runs each, on one warm runtime: each run gets its own stdin,
    environment value and file; each sees only its own (and its own /tmp and workdir),
    returns its own output file, and runs that overlap in time have distinct uids (as
    root) each with its own /etc/passwd entry."""
    pol = strict_doc(environment={"allow": ["RTW_TAG"]})
    rt = with_runtime(t, pol)
    before = warm_runs(rt)
    code = guarded(CONC)

    def worker(i):
        outs = []
        for j in range(3):
            tag = "rtw-%d-%d-%s" % (i, j, secrets.token_hex(4))
            # runs with files in and out may run cold (contract 2, hazard 3): one in three
            fio = j == 2
            doc = rt.run(code, stdin=tag, env=["RTW_TAG=" + tag],
                         files=[("tag.txt", tag)] if fio else None, outputs=fio)
            outs.append((tag, fio, doc))
        return outs

    results = [x for lst in parallel([lambda i=i: worker(i) for i in range(8)]) for x in lst]
    expect_warm(rt, before, len([x for x in results if not x[1]]), "concurrent runs")
    bad = []
    seen = []
    for tag, fio, doc in results:
        no_guard_refusal(doc)
        r = emitted(doc, tag)
        if [r["in"], r["env"], r["file"], r["tmp_mine"]] != [tag] * 4:
            bad.append("%s saw %r" % (tag, r))
        if r["tmp"] != ["mine"]:
            bad.append("%s: /tmp holds %r" % (tag, r["tmp"]))
        extra = [n for n in r["cwd"] if n not in ("tag.txt", "out", ".govex-out", "outputs")]
        if any("rtw" in n or "tag" in n for n in extra):
            bad.append("%s: workdir holds %r" % (tag, r["cwd"]))
        files = [f for f in doc.get("files") or doc.get("outputs") or []
                 if isinstance(f, dict)]
        want = hashlib.sha256(tag.encode()).hexdigest()
        if fio and not any(f.get("name") == "out.txt" and f.get("sha256") == want
                           for f in files):
            bad.append("%s: output files %r" % (tag, files))
        if os.geteuid() == 0:
            if r["pw"][0] != "govex" or r["pw"][2] != r["uid"]:
                bad.append("%s: /etc/passwd entry for uid %d: %r" % (tag, r["uid"], r["pw"]))
        seen.append((tag, r["uid"], r["t"]))
    if os.geteuid() == 0:
        for i, (ta, ua, (a0, a1)) in enumerate(seen):
            for tb, ub, (b0, b1) in seen[i + 1:]:
                if a0 < b1 and b0 < a1 and ua == ub:
                    bad.append("%s and %s overlapped with the same uid %d" % (ta, tb, ua))
    g.check(not bad, "concurrent warm runs:\n  " + "\n  ".join(bad[:20]))


def test_concurrent_repl_runs_get_their_own_values(t):
    """Twelve concurrent REPL runs (govex's worker, fd 3 frames) on one warm runtime, each
    with its own INPUTS: each value, stdout and status is its own."""
    rt = with_runtime(t, strict_doc())
    before = warm_runs(rt)
    code = "import time, sys\nprint(INPUTS['tag'])\ntime.sleep(0.2)\n{'v': INPUTS['tag']}\n"

    def one(i):
        tag = "repl-%d-%s" % (i, secrets.token_hex(4))
        return tag, rt.run(code, repl=True, inputs={"tag": tag})

    res = parallel([lambda i=i: one(i) for i in range(12)])
    bad = [(tag, d["status"], d.get("value"), d["stdout"]) for tag, d in res
           if (d["status"], d.get("value"), d["stdout"]) != ("success", {"v": tag}, tag + "\n")]
    expect_warm(rt, before, 12, "REPL runs")
    g.check(not bad, "concurrent REPL runs: %r" % bad)


LIMITS_SEEN = r"""
import resource, errno
rl = {n: resource.getrlimit(getattr(resource, n))[0]
      for n in ("RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC")}
emit({"rl": rl})
big = None
try:
    x = bytearray(200 << 20)
    for j in range(0, len(x), 4096):
        x[j] = 1
    big = "ALLOCATED"
    del x
except MemoryError:
    big = "MemoryError"
emit({"rl": rl, "big": big})
"""


def test_request_limits_are_per_run(t):
    """A request's own (lower) limits apply to its warm run only: a run asking for 64 MiB,
    40 open files and 1 MiB files is held to them, the next default run has the policy's
    again (nothing of the template's or the previous run's limits), as cold."""
    e.need_restricted("memory_aggregate")
    pol = strict_doc()
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    code = guarded(LIMITS_SEEN)
    low = [0, 0, 64 << 20, 0, 40, 1 << 20, 0, 0]
    seq = [None, low, None]
    out = {}
    for name, rt in (("cold", cold), ("warm", warm)):
        docs = [rt.run(code, limits=lim) for lim in seq]
        out[name] = [(d["status"], d.get("termination"),
                      (emitted(d, name)["rl"] if "RTW " in (d.get("stdout") or "") else None))
                     for d in docs]
        if "ALLOCATED" in (docs[1].get("stdout") or ""):
            out[name + "-over"] = "the low-memory run allocated 200 MiB"
    g.check("warm-over" not in out, out.get("warm-over", ""))
    e.eq(out["warm"], out["cold"], "statuses and rlimits of (default, low, default) runs")
    g.check(out["warm"][1][2] and out["warm"][1][2]["RLIMIT_NOFILE"] == 40,
            "the low run's rlimits: %r" % (out["warm"],))


# ---- reaching another run: abstract unix sockets, SysV and POSIX IPC ----

ABS_LISTEN = r'''
import socket, time
name = b"\0" + NAME.encode()
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
except OSError as x:
    emit({"create": x.errno})
    raise SystemExit(0)
s.bind(name)
s.listen(16)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d.bind(name + b"-dgram")
d.setblocking(False)
selfc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
selfc.connect(name)
c0, _ = s.accept()
s.settimeout(0.1)
accepted, grams = 0, 0
end = time.time() + 3.0
while time.time() < end:
    try:
        c, _ = s.accept()
        accepted += 1
    except (socket.timeout, OSError):
        pass
    try:
        while d.recv(100):
            grams += 1
    except OSError:
        pass
emit({"self_connect": True, "accepted": accepted, "grams": grams})
'''

ABS_CONNECT = r'''
import socket, time, errno
name = b"\0" + NAME.encode()
errs = set()
ok = 0
end = time.time() + 1.5
while time.time() < end:
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(name)
        ok += 1
        c.close()
    except OSError as x:
        errs.add(errno.errorcode.get(x.errno, x.errno))
    try:
        d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        d.sendto(b"x", name + b"-dgram")
        ok += 1
        d.close()
    except OSError as x:
        errs.add(errno.errorcode.get(x.errno, x.errno))
    time.sleep(0.05)
emit({"connected": ok, "errors": sorted(errs)})
'''


def abstract_case(t, pol):
    rt = with_runtime(t, pol)
    name = "rtw-abs-" + secrets.token_hex(6)
    pre = "NAME = %r\n" % name

    def listener():
        return rt.run(guarded(pre + ABS_LISTEN))

    def connector():
        time.sleep(1.0)
        return rt.run(guarded(pre + ABS_CONNECT))

    ld, cd = parallel([listener, connector])
    lr, cr = emitted(ld, "listener"), emitted(cd, "connector")
    if "create" in lr:
        # no unix socket at all under this policy (then the cold run's must fail too)
        cold = WarmRuntime(pol, warm=False)
        try:
            cl = emitted(cold.run(guarded(pre + ABS_LISTEN)), "cold listener")
        finally:
            cold.close()
        e.eq(lr, cl, "the warm listener fails as a cold one does")
        e.eq(cr["connected"], 0, "connections")
        return
    g.check(lr["self_connect"], "the listener could not use its own abstract socket")
    g.check(cr["connected"] == 0 and lr["accepted"] == 0 and lr["grams"] == 0,
            "one warm run reached another's abstract unix socket: listener %r, "
            "connector %r" % (lr, cr))


def test_abstract_socket_network_deny(t):
    """Under network: deny the runs of one template share its network namespace
    (warm.md): a run's abstract unix socket (stream and datagram) is not reachable
    from a concurrent run."""
    abstract_case(t, strict_doc())


def test_abstract_socket_network_allow(t):
    """The same with network: allow (the host's network namespace)."""
    e.need_restricted()
    abstract_case(t, strict_doc(network="allow"))


IPC_MAKE = r'''
import ctypes, time, errno
libc = ctypes.CDLL(None, use_errno=True)
try:
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
except OSError:
    librt = libc
made = {}
def ok(name, r):
    made[name] = r if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
ok("shm", libc.shmget(KEY, 4096, 0o1666))
ok("msg", libc.msgget(KEY, 0o1666))
ok("sem", libc.semget(KEY, 1, 0o1666))
librt.mq_open.restype = ctypes.c_int
ok("mq", librt.mq_open(("/" + NAME).encode(), 0o100 | 2, 0o666, None))
ok("posix_shm", _o.open("/dev/shm/" + NAME, _o.O_CREAT | _o.O_RDWR, 0o666)
   if _o.path.isdir("/dev/shm") and _o.access("/dev/shm", _o.W_OK) else -1)
print("RTW-MADE", flush=True)
time.sleep(HOLD)
emit({"made": made})
'''

IPC_FIND = r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
try:
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
except OSError:
    librt = libc
got = {}
def res(name, r):
    got[name] = ["FOUND", r] if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
res("shm", libc.shmget(KEY, 0, 0))
res("msg", libc.msgget(KEY, 0))
res("sem", libc.semget(KEY, 0, 0))
librt.mq_open.restype = ctypes.c_int
res("mq", librt.mq_open(("/" + NAME).encode(), 0, 0, None))
try:
    _o.open("/dev/shm/" + NAME, _o.O_RDONLY)
    got["posix_shm"] = ["FOUND"]
except OSError as x:
    got["posix_shm"] = errno.errorcode.get(x.errno, x.errno)
emit({"got": got})
'''


def test_ipc_between_runs(t):
    """SysV shm/msg/sem, POSIX message queues and /dev/shm: what one warm run creates
    (and holds) is not found by a concurrent run of the same template, nor by a later
    one."""
    rt = with_runtime(t, strict_doc())
    key = 0x52540000 + secrets.randbelow(0xffff)
    name = "rtw-ipc-" + secrets.token_hex(4)
    pre = "KEY = %d\nNAME = %r\n" % (key, name)

    def maker():
        return rt.run(guarded(pre + "HOLD = 2.5\n" + IPC_MAKE))

    def finder():
        time.sleep(1.2)
        return rt.run(guarded(pre + IPC_FIND))

    md, fd = parallel([maker, finder])
    later = rt.run(guarded(pre + IPC_FIND))
    made = emitted(md, "maker")["made"]
    bad = []
    for what, doc in (("concurrent", fd), ("later", later)):
        got = emitted(doc, what)["got"]
        for k, v in got.items():
            if isinstance(v, list):
                bad.append("%s run found %s (maker: %r)" % (what, k, made.get(k)))
    g.check(not bad, "IPC crosses warm runs:\n  " + "\n  ".join(bad))


# ---- inherited memory and descriptors ----

SHARED_MAPS = r'''
import ctypes
mine = []
for line in open("/proc/self/maps").read().splitlines():
    p = line.split()
    if "s" in p[1]:
        mine.append([p[1], p[5] if len(p) > 5 else ""])
        if MARK and "w" in p[1]:
            a = int(p[0].split("-")[0], 16)
            ctypes.memmove(a, MARK.encode(), len(MARK))
seen = []
for line in open("/proc/self/maps").read().splitlines():
    p = line.split()
    if "s" in p[1] and "r" in p[1] and LOOK:
        a = int(p[0].split("-")[0], 16)
        if ctypes.string_at(a, len(LOOK)) == LOOK.encode():
            seen.append(line)
fdl = []
for n in sorted(_o.listdir("/proc/self/fd"), key=int):
    try:
        fdl.append([int(n), _o.readlink("/proc/self/fd/" + n)])
    except OSError:
        pass
emit({"shared": mine, "seen": seen, "fds": fdl})
'''


def test_no_shared_mapping_or_fd_from_template(t):
    """A warm run has no MAP_SHARED mapping and no descriptor a cold run does not have
    (nothing of the template's); a marker written into every writable shared mapping by
    one run is not seen by the next."""
    e.need_restricted()
    pol = e.policy(t)
    mark = "RTW-MAP-" + secrets.token_hex(8)
    cold, warm = both(t, guarded("MARK = ''\nLOOK = ''\n" + SHARED_MAPS), pol)
    c, w = emitted(cold, "cold"), emitted(warm, "warm")
    bad = []
    extra = [m for m in w["shared"] if m not in c["shared"]]
    if extra:
        bad.append("shared mappings a cold run does not have: %r" % extra)
    cfd = sorted(x[0] for x in c["fds"])
    if sorted(x[0] for x in w["fds"]) != cfd:
        bad.append("descriptors: cold %r, warm %r" % (c["fds"], w["fds"]))
    rt = with_runtime(t, strict_doc())
    r1 = rt.run(guarded("MARK = %r\nLOOK = ''\n" % mark + SHARED_MAPS))
    r2 = rt.run(guarded("MARK = ''\nLOOK = %r\n" % mark + SHARED_MAPS))
    w1, w2 = emitted(r1, "marking run"), emitted(r2, "next run")
    extra = [m for m in w1["shared"] if "w" in m[0] or m not in c["shared"]]
    if extra:
        bad.append("a library warm run has shared mappings a cold run has not: %r" % extra)
    if w2["seen"]:
        bad.append("the next run sees the marker in %r" % w2["seen"])
    g.check(not bad, "\n  ".join(bad))


HOST_SECRET = r'''
import sys
found = []
for p in ("/proc/self/environ", "/proc/self/cmdline", "/proc/1/environ", "/proc/1/cmdline"):
    try:
        data = open(p, "rb").read()
    except OSError:
        continue
    h1, h2 = HALVES[0]
    i = data.find(h1)
    if i >= 0 and data[i + len(h1):i + len(h1) + len(h2)] == h2:
        found.append(p)
emit({"files": found, "memory": scan_memory(HALVES), "environ_keys": sorted(_o.environ)})
'''


def test_host_environment_not_in_warm_run(t):
    """The host's environment (a secret in the environment of the process that holds the
    runtime, or of `govex run`) is not in a warm run: not in os.environ, /proc/self/
    environ or cmdline (the template's), /proc/1/*, nor anywhere in the run's memory."""
    secret = "rtw-host-" + secrets.token_hex(16)
    h = halves(secret)
    code = guarded(SCAN + "HALVES = [(%r, %r)]\n" % (h[0], h[1]) + HOST_SECRET)
    _, doc = cli(t, code, e.policy(t), True, extra_env={"RTW_HOST_SECRET": secret})
    r = emitted(doc, "CLI warm run")
    os.environ["RTW_HOST_SECRET"] = secret
    try:
        rt = with_runtime(t, strict_doc())
        r2 = emitted(rt.run(code), "library warm run")
    finally:
        del os.environ["RTW_HOST_SECRET"]
    bad = []
    for what, x in (("CLI", r), ("library", r2)):
        if x["files"] or x["memory"] or "RTW_HOST_SECRET" in x["environ_keys"]:
            bad.append("%s: %r" % (what, x))
    g.check(not bad, "the host's environment reaches a warm run:\n  " + "\n  ".join(bad))


REACH = r"""
import errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def tryit(fn):
    try:
        v = fn()
        return ["OK", v if isinstance(v, (int, str)) else len(v)]
    except OSError as x:
        return errno.errorcode.get(x.errno, x.errno)
def wr(p):
    with open(p, "w") as f:
        f.write("x")
    return "written"
out = {}
for p in ("/proc/1/cwd", "/proc/1/root/tmp", "/proc/1/root/govex", "/proc/1/fd",
          "/proc/1/map_files"):
    out["list " + p] = tryit(lambda: sorted(_o.listdir(p)))
for p in ("/proc/1/environ", "/proc/1/mem", "/proc/1/maps", "/proc/1/fd/3",
          "/proc/1/fd/4", "/proc/1/fd/5", "/proc/1/fd/6"):
    out["read " + p] = tryit(lambda: open(p, "rb").read(64))
out["write /proc/1/cwd/rtw"] = tryit(lambda: wr("/proc/1/cwd/rtw"))
r = libc.syscall(ctypes.c_long(101), ctypes.c_long(16), ctypes.c_long(1), None, None)
out["ptrace attach 1"] = "OK" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
r = libc.syscall(ctypes.c_long(434), ctypes.c_long(1), ctypes.c_long(0))
out["pidfd_open 1"] = "OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
alive = []
for pid in range(1, 4096):
    try:
        _o.kill(pid, 0)
        alive.append(pid)
    except OSError as x:
        if x.errno == errno.EPERM:
            alive.append(pid)
out["pids"] = alive
out["proc"] = sorted(int(n) for n in _o.listdir("/proc") if n.isdigit())
emit(out)
"""


def test_reach_init_and_template(t):
    """From a warm run: PID 1's cwd, root, descriptors, memory, environment (the
    template's cwd and mounts lie under the run's), ptrace and pidfd of PID 1, every pid
    up to 4096 signalled with 0: a warm run reaches exactly what a cold run reaches."""
    e.need_restricted()
    pol = e.policy(t)
    cold, warm = both(t, guarded(REACH), pol)
    c, w = emitted(cold, "cold"), emitted(warm, "warm")
    bad = []
    for k in sorted(set(c) | set(w)):
        cv, wv = c.get(k), w.get(k)
        if cv == wv:
            continue
        # a warm run may be refused where a cold one is, only the errno may differ
        if not (isinstance(wv, str) and isinstance(cv, str)):
            bad.append("%s: cold %r, warm %r" % (k, cv, wv))
    g.check(not bad, "a warm run reaches what a cold one does not:\n  " + "\n  ".join(bad))


# ---- the run's init: signals, kill(-1), hangs ----

INIT_SIGNALS = r'''
import signal, time, errno
res = {}
for s in range(1, 32):
    if s in (signal.SIGKILL, signal.SIGSTOP):
        continue
    try:
        _o.kill(1, s)
        res[s] = "sent"
    except OSError as x:
        res[s] = errno.errorcode.get(x.errno, x.errno)
for i in range(300):
    for s in (signal.SIGINT, signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP):
        try:
            _o.kill(1, s)
        except OSError:
            pass
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(1), ctypes.c_long(0))
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGUSR1):
    libc.syscall(ctypes.c_long(200), ctypes.c_long(1), ctypes.c_long(s))          # tkill
    libc.syscall(ctypes.c_long(234), ctypes.c_long(1), ctypes.c_long(1), ctypes.c_long(s))
    if pfd >= 0:                                                                  # pidfd
        libc.syscall(ctypes.c_long(424), ctypes.c_long(pfd), ctypes.c_long(s), None,
                     ctypes.c_long(0))
try:
    _o.kill(-1, signal.SIGINT)
except OSError:
    pass
time.sleep(0.5)
print("alive", flush=True)
'''


def test_signals_to_init(t):
    """Every catchable signal sent (and flooded) to PID 1 and kill(-1, SIGINT): the
    run goes on and ends as a cold run does (success, "alive")."""
    e.need_restricted()
    pol = e.policy(t)
    e.prove(t, pol)
    cold, warm = both(t, guarded(INIT_SIGNALS), pol)
    no_guard_refusal(warm)
    e.eq((warm["status"], warm["stdout"].splitlines()[-1:]),
         (cold["status"], cold["stdout"].splitlines()[-1:]), "warm vs cold status, stdout")
    e.eq(warm["status"], "success", "status")


def both_as_nobody(t, code):
    """(cold, warm) result documents of CODE run by `govex run` as uid 65534 (the
    unprivileged sandbox: one user namespace, the caller's ids), after the canary."""
    e.need_restricted()
    if not hasattr(t, "rtw_sb"):
        t.rtw_sb = e.need_unprivileged_sandbox(t)
    sb = t.rtw_sb
    home = sb[0]
    pol = e.without_aggregate(e.policy(t, name="nobody/p.json"))
    os.chmod(pol, 0o644)
    log = os.path.join(home, "warm.log")
    docs = {}
    e.run_proven_as_nobody(t, sb, [["canary", {"as": "c"}]], pol)
    for warm in ("0", "1"):
        if os.path.exists(log):
            os.unlink(log)
        rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", code], cwd=home,
                                  env=dict(sb[1], GOVEX_WARM="0" if COLD_DEBUG else warm,
                                           GOVEX_WARM_LOG=log),
                                  preexec=e.nobody_preexec(), binary=sb[2])
        docs[warm] = e.result_of(out)
        if warm == "1":
            lines = open(log).read().split() if os.path.exists(log) else []
            g.check(COLD_DEBUG or lines[-1:] == ["warm"],
                    "as nobody with GOVEX_WARM=1 the run was not warm: %r" % lines)
    return docs["0"], docs["1"]


def test_reach_unprivileged(t):
    """As a user who is not root the run's init, template and run share one user
    namespace and uid: PID 1's places and every pid reachable from a warm run are still
    a cold run's, and the start state (capabilities, fds, signals...) and the filesystem
    view (/etc/passwd with the caller's ids included) are the same."""
    bad = []
    for name, code in (("reach", REACH), ("state", STATE), ("fs", FS_MATRIX)):
        cold, warm = both_as_nobody(t, guarded(code))
        c, w = emitted(cold, "cold " + name), emitted(warm, "warm " + name)
        for k in sorted(set(c) | set(w)):
            cv, wv = c.get(k), w.get(k)
            if cv != wv and not (name == "reach" and isinstance(cv, str) and
                                 isinstance(wv, str)) and k != "ids":
                bad.append("%s %s: cold %r, warm %r" % (name, k, cv, wv))
    g.check(not bad, "as nobody, warm vs cold:\n  " + "\n  ".join(bad))


def test_signals_to_init_unprivileged(t):
    """The same as a user who is not root (the run's init then has the run's uid)."""
    cold, warm = both_as_nobody(t, guarded(INIT_SIGNALS))
    no_guard_refusal(warm)
    e.eq((warm["status"], warm["stdout"].splitlines()[-1:]),
         (cold["status"], cold["stdout"].splitlines()[-1:]), "warm vs cold status, stdout")
    e.eq(warm["status"], "success", "status (%r)" % (warm.get("diagnostics"),))


INIT_BUSY = r'''
import signal, threading, time
def pester():
    while True:
        for s in (signal.SIGINT, signal.SIGCHLD, signal.SIGTERM, signal.SIGALRM):
            try:
                _o.kill(1, s)
            except OSError:
                pass
threading.Thread(target=pester, daemon=True).start()
end = time.time() + 20
x = 0
while time.time() < end:
    x += 1
print("NOT-STOPPED", flush=True)
'''


def test_cpu_limit_while_pestering_init(t):
    """A run that keeps signalling its init while burning CPU is still stopped by
    limits.cpu_ms, with the cold run's status, in about the same time."""
    e.need_restricted("cpu_time_aggregate")
    pol = e.policy(t, limits={"cpu_ms": 800, "wall_ms": 30000})
    e.prove(t, pol)
    (rc, cold), (rw, warm) = [cli(t, guarded(INIT_BUSY), pol, w, timeout=45)
                              for w in (False, True)]
    no_guard_refusal(warm)
    g.check("NOT-STOPPED" not in (warm.get("stdout") or ""), "the warm run was not stopped")
    e.eq((warm["status"], diag_codes(warm)), (cold["status"], diag_codes(cold)),
         "warm vs cold status, diagnostics")
    g.check(rw.wall < max(3 * rc.wall, rc.wall + 5), "warm took %.1f s, cold %.1f s"
            % (rw.wall, rc.wall))
    # (other users of this host may have warm runtimes: only an orphaned init counts)
    def orphans():
        out = []
        for pid in e.procs_with_comm("govex-init"):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == "1":
                        out.append(pid)
            except (OSError, IndexError):
                pass
        return out
    g.check(e.wait_until(lambda: not orphans(), 3.0), "an orphaned govex-init is left: %r"
            % orphans())


# ---- the template dies ----

def test_template_killed(t):
    """Every process the warm runtime keeps between runs (its template and the
    template's shim) SIGKILLed by the host: the next run still succeeds with its own
    output; the same while a run is in flight: that run ends (not hangs), never with
    another's output, and the runtime goes on; after runtime free nothing is left."""
    rt = WarmRuntime(strict_doc())
    try:
        doc = rt.run("print('one')\n")
        e.eq((doc["status"], doc["stdout"]), ("success", "one\n"), "first run")
        idle = descendants()
        g.check(idle, "no process kept between runs: is the runtime warm?")
        for pid in sorted(idle, key=lambda p: -depth(p, idle)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        doc = rt.run("print('two')\n")
        e.eq((doc["status"], doc["stdout"]), ("success", "two\n"),
             "the run after the template was killed")
        # three times: the template's death and the next run race (the failure seen
        # was intermittent)
        for attempt in range(3):
            idle = descendants()
            box = {}

            def inflight():
                box["doc"] = rt.run("import time\ntime.sleep(1.5)\nprint('three')\n")

            th = threading.Thread(target=inflight, daemon=True)
            t0 = time.monotonic()
            th.start()
            time.sleep(0.5)
            for pid in sorted(idle, key=lambda p: depth(p, idle)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            th.join(30)
            g.check(not th.is_alive(),
                    "the run in flight did not end after its template died")
            d3 = box["doc"]
            g.check(d3["stdout"] in ("", "three\n"),
                    "in-flight run's stdout: %r" % d3["stdout"])
            if d3["status"] == "success":
                e.eq(d3["stdout"], "three\n", "stdout of a successful in-flight run")
            g.check(time.monotonic() - t0 < 15, "the in-flight run took %.1f s"
                    % (time.monotonic() - t0))
            doc = rt.run("print('four')\n")
            e.eq((doc["status"], doc["stdout"]), ("success", "four\n"),
                 "attempt %d, the run after the template's shim was killed mid-run "
                 "(diagnostics %r, stderr %r; the in-flight run: %s %r)"
                 % (attempt, doc.get("diagnostics"), doc["stderr"][-300:], d3["status"],
                    d3.get("diagnostics")))
    finally:
        rt.close()
    left = e.wait_until(lambda: not descendants(), 5.0)
    g.check(left, "processes left after runtime free: %r" % descendants())


def test_roots_follow_the_policy_paths(t):
    """filesystem.read and .write name paths: when the host replaces the directory at a
    root's path (mv rd rd.old; mkdir rd -- e.g. data rotated out of the sandbox's
    view), the next run sees what is at the path now, as a cold run does -- a warm run
    must not go on reading the old directory (now at a path the policy does not name)
    or writing into it."""
    e.need_restricted("fs_write_allowlist")
    os.chmod(t.tmp, 0o711)
    base = t.path("roots")
    os.mkdir(base, 0o755)

    def layout():
        for d in ("rd", "wr", "rd.old", "wr.old"):
            p = os.path.join(base, d)
            if os.path.isdir(p):
                import shutil
                shutil.rmtree(p)
        os.mkdir(os.path.join(base, "rd"), 0o755)
        os.mkdir(os.path.join(base, "wr"))
        os.chmod(os.path.join(base, "wr"), 0o777)
        with open(os.path.join(base, "rd", "f"), "w") as f:
            f.write("old-content")
        os.chmod(os.path.join(base, "rd", "f"), 0o644)

    def swap():
        os.rename(os.path.join(base, "rd"), os.path.join(base, "rd.old"))
        os.mkdir(os.path.join(base, "rd"), 0o755)
        with open(os.path.join(base, "rd", "f"), "w") as f:
            f.write("new-content")
        os.chmod(os.path.join(base, "rd", "f"), 0o644)
        os.rename(os.path.join(base, "wr"), os.path.join(base, "wr.old"))
        os.mkdir(os.path.join(base, "wr"))
        os.chmod(os.path.join(base, "wr"), 0o777)

    pol = strict_doc(filesystem={"read": [os.path.join(base, "rd")],
                                 "write": [os.path.join(base, "wr")]})
    code = ("import os\nprint(open(%r).read())\nopen(%r, 'w').write('w')\n"
            % (os.path.join(base, "rd", "f"), os.path.join(base, "wr", "out")))
    seen = {}
    for warm in (False, True):
        layout()
        rt = WarmRuntime(pol, warm=warm)
        try:
            before = warm_runs(rt)
            first = rt.run(code)
            swap()
            second = rt.run(code)
            if warm:
                expect_warm(rt, before, 2, "runs with read and write roots")
        finally:
            rt.close()
        seen[warm] = (first["status"], first["stdout"], second["status"], second["stdout"],
                      sorted(os.listdir(os.path.join(base, "wr"))),
                      sorted(os.listdir(os.path.join(base, "wr.old"))))
    e.eq(seen[False][:2], ("success", "old-content\n"), "cold, first run (test assumption)")
    e.eq(seen[True], seen[False], "(first status, stdout, second status, stdout, wr, wr.old)"
         " warm vs cold")


def test_any_kept_process_killed(t):
    """Whatever process the warm runtime keeps between runs dies (the OOM killer, an
    operator: one at a time, the deepest first -- runs made ahead, their inits, the
    template, its shim), the next plain and REPL runs succeed in their usual time: a
    dead part is replaced or the run goes cold, never a run sent where nobody serves."""
    rt = WarmRuntime(strict_doc())
    bad = []
    try:
        rt.run("print(1)\n")
        rt.run("1\n", repl=True)
        killed = set()
        for _ in range(12):
            time.sleep(0.5)
            idle = descendants()
            left = [p for p in idle if p not in killed]
            if not left:
                break
            victim = max(left, key=lambda p: depth(p, idle))
            what = idle[victim][1]
            killed.add(victim)
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                continue
            time.sleep(0.2)
            for repl in (False, True):
                t0 = time.monotonic()
                d = rt.run("print('after')\n" if not repl else "'after'\n", repl=repl)
                took = time.monotonic() - t0
                ok = d["status"] == "success" and (d.get("value") == "after" if repl
                                                   else d["stdout"] == "after\n")
                if not ok or took > 8:
                    bad.append("after killing %d (%s): %s run %s in %.1f s %r"
                               % (victim, what, "REPL" if repl else "plain", d["status"],
                                  took, d.get("diagnostics")))
            if len(bad) >= 3:
                break
    finally:
        rt.close()
    # the inits of runs made ahead (warm.md names a run's init "govex-init"), all at once
    rt = WarmRuntime(strict_doc())
    try:
        rt.run("print(1)\n")
        time.sleep(0.5)
        idle = descendants()
        inits = [p for p, (_, c) in idle.items() if c == "govex-init"]
        for p in inits:
            os.kill(p, signal.SIGKILL)
        time.sleep(0.2)
        if inits:
            t0 = time.monotonic()
            d = rt.run("print('after')\n")
            took = time.monotonic() - t0
            if d["status"] != "success" or took > 8:
                bad.append("after killing the %d idle govex-init processes: %s in %.1f s %r"
                           % (len(inits), d["status"], took, d.get("diagnostics")))
    finally:
        rt.close()
    g.check(not bad, "\n  ".join(bad))
    g.check(e.wait_until(lambda: not descendants(zombies=True), 5.0),
            "processes left after runtime free: %r" % descendants(zombies=True))


UMOUNT_DRIVER = r"""
import json, os, subprocess, sys
sys.argv = ["x"]
sys.path.insert(0, HERE)
import test_redteam_warm as w
pol = w.strict_doc(filesystem={"read": [BASE + "/rd"]})
code = ("import os\ntry:\n    print(open(%r).read())\nexcept OSError as x:\n"
        "    print(type(x).__name__)\n" % (BASE + "/rd/sub/secret"))
out = {}
for warm in (False, True):
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", BASE + "/rd/sub"],
                   check=True)
    with open(BASE + "/rd/sub/secret", "w") as f:
        f.write("volume-data")
    os.chmod(BASE + "/rd/sub/secret", 0o644)
    rt = w.WarmRuntime(pol, warm=warm)
    try:
        first = rt.run(code)["stdout"]
        subprocess.run(["umount", BASE + "/rd/sub"], check=True)
        second = rt.run(code)["stdout"]
    finally:
        rt.close()
    out["warm" if warm else "cold"] = [first, second]
print("RTW " + json.dumps(out))
"""


def test_unmounted_volume_not_readable(t):
    """A file system the host mounted under a read root and then unmounted (a volume
    taken away from the sandboxes) is no longer readable by the next run, warm as cold
    (run in a private mount namespace of the test's own: unshare -m)."""
    e.need_restricted()
    if os.geteuid() != 0:
        e.skip("root", "mounting needs root")
    import subprocess
    os.chmod(t.tmp, 0o711)
    base = t.path("vol")
    os.makedirs(os.path.join(base, "rd", "sub"))
    for d in (base, os.path.join(base, "rd"), os.path.join(base, "rd", "sub")):
        os.chmod(d, 0o755)
    drv = t.write("drv.py", "HERE = %r\nBASE = %r\n" % (e.HERE, base) + UMOUNT_DRIVER)
    env = dict(os.environ, RTW_COLD_DEBUG=os.environ.get("RTW_COLD_DEBUG", ""))
    p = subprocess.run(["unshare", "-m", "sh", "-c", "mount --make-rprivate / && exec \"$0\" "
                        "\"$1\"", sys.executable, drv], capture_output=True, text=True,
                       timeout=120, env=env)
    lines = [x for x in p.stdout.splitlines() if x.startswith("RTW ")]
    if not lines and "unshare" in p.stderr and p.returncode != 0:
        e.skip("unshare", "no private mount namespace here: %r" % p.stderr[-300:])
    g.check(lines, "the driver printed nothing: rc %r stderr %r" % (p.returncode,
                                                                    p.stderr[-800:]))
    out = json.loads(lines[-1][4:])
    e.eq(out["cold"], ["volume-data\n", "FileNotFoundError\n"], "cold (test assumption)")
    e.eq(out["warm"], out["cold"], "warm: (before, after the host's umount)")


SYS_PY = "/usr/bin/python3"


def refused_policy(t):
    """strict with the system interpreter and a write root over its standard library:
    refused at planning (Trust boundaries), whatever runs."""
    if not os.path.exists(SYS_PY):
        e.skip("python3", "no %s" % SYS_PY)
    import subprocess
    stdlib = subprocess.run([SYS_PY, "-I", "-S", "-c",
                             "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, timeout=20, check=True).stdout.decode().strip()
    return e.policy(t, name="refused.json", filesystem={"write": [stdlib]},
                    python={"interpreter": SYS_PY, "site": False})


def test_template_start_failure_is_prompt(t):
    """A policy refused at planning (a write root over the interpreter's standard
    library) cannot have a template (its interpreter cannot even load its extension
    modules there): govex_runtime_warm(), `govex run`/`plan` with GOVEX_WARM=1 and
    `govex mcp` (warm by default) still answer at once -- the refusal, the initialize --
    instead of waiting out a template that has already died.  Measured against the cold
    path on the same policy (a few ms)."""
    e.need_restricted("fs_write_allowlist")
    pol = refused_policy(t)
    bad = []
    for cmd in ("plan", "run"):
        for warm in (False, True):
            t0 = time.monotonic()
            r = t.run([cmd, "--policy", pol, "--json", "-c", "print('hi')"],
                      extra_env={"GOVEX_WARM": "1" if warm and not COLD_DEBUG else "0"},
                      timeout=60)
            took = time.monotonic() - t0
            doc = r.result()
            if doc["status"] != "policy_refused" or took > 5:
                bad.append("govex %s, GOVEX_WARM=%d: %s after %.1f s" % (cmd, warm,
                                                                          doc["status"], took))
    sys.path.insert(0, os.path.join(os.path.dirname(e.HERE), "mcp"))
    import mcptest as m
    env = dict(os.environ)
    env.pop("GOVEX_WARM", None)
    if COLD_DEBUG:
        env["GOVEX_WARM"] = "0"
    s = m.Server(["--policy", pol], cwd=t.tmp, env=env)
    t.defer(s.cleanup)
    t0 = time.monotonic()
    try:
        s.initialize()
        took = time.monotonic() - t0
        if took > 5:
            bad.append("govex mcp answered initialize after %.1f s (stderr %r)"
                       % (took, s.stderr()[-300:]))
    except m.Failure as x:
        bad.append("govex mcp: %s" % x)
    with open(pol) as f:
        doc = json.load(f)
    t0 = time.monotonic()
    try:
        rt = WarmRuntime(doc)
        rt.close()
        r = "0"
    except g.Failure as x:
        r = str(x)
    took = time.monotonic() - t0
    if took > 5:
        bad.append("govex_runtime_warm took %.1f s (%s)" % (took, r))
    g.check(not bad, "a template that cannot start holds its callers:\n  " + "\n  ".join(bad))


# ---- denials and limits, warm vs cold ----

DENIAL_CASES = {
    "socket_inet_x3": r'''
import socket, errno
errs = []
for fam in (socket.AF_INET, socket.AF_INET, socket.AF_INET):
    try:
        socket.socket(fam, socket.SOCK_STREAM)
        errs.append("OPENED")
    except OSError as x:
        errs.append(errno.errorcode.get(x.errno, x.errno))
emit(errs)
''',
    "socket_raw_inet6_packet": r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
out = []
for fam, typ in ((10, 1), (17, 3), (16, 3)):
    r = libc.socket(fam, typ, 0)
    out.append("OPENED" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
emit(out)
''',
    "socket_unix_and_flood": r'''
import socket, errno, collections
out = collections.Counter()
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
    out["unix:OPENED"] += 1
except OSError as x:
    out["unix:" + errno.errorcode.get(x.errno, str(x.errno))] += 1
for i in range(5000):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
        out["OPENED"] += 1
    except OSError as x:
        out[errno.errorcode.get(x.errno, str(x.errno))] += 1
try:
    pid = _o.fork()
    if pid == 0:
        _o._exit(0)
    _o.waitpid(pid, 0)
    out["FORKED"] += 1
except OSError as x:
    out["fork:" + errno.errorcode.get(x.errno, str(x.errno))] += 1
emit(dict(out))
''',
    "fork": r'''
import errno
try:
    pid = _o.fork()
    if pid == 0:
        _o._exit(0)
    _o.waitpid(pid, 0)
    emit("FORKED")
except OSError as x:
    emit(errno.errorcode.get(x.errno, x.errno))
''',
    "posix_spawn_and_subprocess": r'''
import errno, subprocess
out = []
try:
    pid = _o.posix_spawn("/bin/true", ["true"], {})
    _o.waitpid(pid, 0)
    out.append("SPAWNED")
except OSError as x:
    out.append(errno.errorcode.get(x.errno, x.errno))
try:
    subprocess.run(["/bin/true"])
    out.append("RAN")
except OSError as x:
    out.append(errno.errorcode.get(x.errno, x.errno))
emit(out)
''',
    "execv": r'''
import errno
try:
    _o.execv("/bin/true", ["true"])
except OSError as x:
    emit(errno.errorcode.get(x.errno, x.errno))
''',
    "raw_clone_vfork": r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = []
r = libc.syscall(ctypes.c_long(56), ctypes.c_long(17), ctypes.c_long(0), ctypes.c_long(0),
                 ctypes.c_long(0), ctypes.c_long(0))
if r == 0:
    libc.syscall(ctypes.c_long(60), ctypes.c_long(0))
out.append("CLONED" if r > 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
r = libc.syscall(ctypes.c_long(58))
if r == 0:
    libc.syscall(ctypes.c_long(60), ctypes.c_long(0))
out.append("VFORKED" if r > 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
emit(out)
''',
}


def test_denials_warm_equal_cold(t):
    """Under strict (network and subprocess denied): socket() of AF_INET (three times),
    AF_INET6/AF_PACKET/AF_NETLINK through raw calls, fork, posix_spawn, subprocess, raw
    clone without CLONE_THREAD, vfork: a warm run gets the same errors, status and
    denied_by_policy diagnostics (controls, counts, messages) as a cold one."""
    e.need_restricted("network_deny", "subprocess_deny")
    pol = e.policy(t)
    e.prove(t, pol)
    bad = []
    for name, body in DENIAL_CASES.items():
        cold, warm = both(t, guarded(body), pol)
        no_guard_refusal(warm)
        c = (cold["status"], emitted(cold, name + " cold"), denials_of(cold))
        w = (warm["status"], emitted(warm, name + " warm"), denials_of(warm))
        if c != w:
            bad.append("%s: cold %r\n      warm %r" % (name, c, w))
        if not denials_of(cold):
            bad.append("%s: the cold run names no denial (test assumption): %r"
                       % (name, cold.get("diagnostics")))
    g.check(not bad, "warm vs cold denials:\n  " + "\n  ".join(bad))


LIMIT_CASES = {
    "heap": (r'''
chunks = []
for i in range(64):
    chunks.append(bytearray(8 << 20))
    for j in range(0, 8 << 20, 4096):
        chunks[-1][j] = 1
print("ALLOCATED-ALL", flush=True)
''', {"memory_bytes": 64 << 20}),
    "tmpfs": (r'''
with open("/tmp/fill", "wb") as f:
    for i in range(64):
        f.write(b"x" * (8 << 20))
        f.flush()
print("ALLOCATED-ALL", flush=True)
''', {"memory_bytes": 64 << 20, "file_size_bytes": 1 << 30}),
    "template_pages_then_heap": (r'''
import gc, sys
# write to every object the template left (copy-on-write: each page becomes the run's)
for o in gc.get_objects():
    try:
        o.__dict__["_rtw"] = 1
    except Exception:
        pass
chunks = []
for i in range(64):
    chunks.append(bytearray(4 << 20))
    for j in range(0, 4 << 20, 4096):
        chunks[-1][j] = 1
print("ALLOCATED-ALL", flush=True)
''', {"memory_bytes": 96 << 20}),
    "processes": (r'''
import time, errno
kids = 0
err = None
for i in range(64):
    try:
        pid = _o.fork()
    except OSError as x:
        err = errno.errorcode.get(x.errno, x.errno)
        break
    if pid == 0:
        time.sleep(3)
        _o._exit(0)
    kids += 1
emit({"kids": kids, "err": err})
''', {"processes": 8}),
}


def test_limits_warm_equal_cold(t):
    """memory_bytes (heap; tmpfs pages; heap after copying the template's pages),
    processes: a warm run is stopped as a cold one is (same status, same limit
    diagnostics, never past the limit)."""
    e.need_restricted("memory_aggregate", "pids_aggregate")
    bad = []
    for name, (body, limits) in LIMIT_CASES.items():
        changes = {"subprocess": "allow"} if name == "processes" else {}
        pol = e.policy(t, name="%s.json" % name, limits=limits, **changes)
        e.prove(t, pol)
        cold, warm = both(t, guarded(body), pol, timeout=60)
        no_guard_refusal(warm)
        if "ALLOCATED-ALL" in (warm.get("stdout") or ""):
            bad.append("%s: the warm run allocated past memory_bytes" % name)
        c = (cold["status"], diag_codes(cold))
        w = (warm["status"], diag_codes(warm))
        if name == "processes":
            cr, wr = emitted(cold, "cold"), emitted(warm, "warm")
            if wr["kids"] > limits["processes"] or abs(wr["kids"] - cr["kids"]) > 1:
                bad.append("processes: cold made %r, warm %r" % (cr, wr))
        if c != w:
            bad.append("%s: cold %r, warm %r" % (name, c, w))
    g.check(not bad, "warm vs cold limits:\n  " + "\n  ".join(bad))


def test_subprocess_allowed_warm_as_cold(t):
    """Under subprocess: allow a warm run runs programs as a cold one does (its execve
    is not taken for a second one), and the exit statuses match."""
    e.need_restricted()
    pol = e.policy(t, subprocess="allow")
    code = guarded("import subprocess\n"
                   "import sys\n"
                   "r = subprocess.run([sys.executable, '-I', '-S', '-c', 'print(\"rtw-echo\")'],"
                   " capture_output=True)\n"
                   "emit([r.returncode, r.stdout.decode()])\n")
    cold, warm = both(t, code, pol)
    e.eq((warm["status"], emitted(warm, "warm"), denials_of(warm)),
         (cold["status"], emitted(cold, "cold"), denials_of(cold)), "warm vs cold")
    e.eq(emitted(warm, "warm"), [0, "rtw-echo\n"], "the program's result")


BURN = r"""
import time, sys
t0 = time.process_time()
while time.process_time() - t0 < SECS:
    pass
with open("/tmp/fill", "wb") as f:
    for i in range(MB):
        f.write(b"y" * (1 << 20))
kids = []
for i in range(KIDS):
    pid = _o.fork()
    if pid == 0:
        time.sleep(0.2)
        _o._exit(0)
    kids.append(pid)
for k in kids:
    _o.waitpid(k, 0)
emit("done")
"""


def test_limits_are_each_runs_own(t):
    """One warm runtime, runs one after the other (the same slot, its cgroups possibly
    kept between runs): each run has the whole cpu_ms, memory_bytes and processes budget
    (60% of each used by every run: all succeed), and a run over the budget is still
    stopped."""
    e.need_restricted("cpu_time_aggregate", "memory_aggregate", "pids_aggregate")
    pol = strict_doc(subprocess="allow", limits={"cpu_ms": 1000, "memory_bytes": 96 << 20,
                                                 "processes": 10, "wall_ms": 20000})
    rt = with_runtime(t, pol)
    before = warm_runs(rt)
    ok = guarded("SECS, MB, KIDS = 0.6, 48, 6\n" + BURN)
    bad = []
    for i in range(5):
        doc = rt.run(ok)
        no_guard_refusal(doc)
        if doc["status"] != "success":
            bad.append("run %d (60%% of each budget): %s %r %r" % (i, doc["status"],
                                                                  diag_codes(doc),
                                                                  doc["stderr"][-300:]))
    over = [("cpu", "SECS, MB, KIDS = 5.0, 0, 0\n"), ("memory", "SECS, MB, KIDS = 0, 200, 0\n"),
            ("processes", "SECS, MB, KIDS = 0, 0, 20\n")]
    for what, pre in over:
        doc = rt.run(guarded(pre + BURN))
        if doc["status"] == "success":
            bad.append("a run over its %s budget succeeded" % what)
    doc = rt.run(ok)
    if doc["status"] != "success":
        bad.append("the run after the over-budget ones: %s %r" % (doc["status"], diag_codes(doc)))
    expect_warm(rt, before, 9, "budget runs")
    g.check(not bad, "\n  ".join(bad))


def test_usage_is_each_runs_own(t):
    """usage.cpu_ms and usage.max_rss_bytes of a warm run are its own: after a run that
    burned a second of CPU and touched 200 MiB, an idle run on the same runtime (same
    slot, its cgroups possibly kept) reports little of either."""
    e.need_restricted("memory_aggregate", "cpu_time_aggregate")
    rt = with_runtime(t, strict_doc())
    heavy = ("import time\nt0 = time.process_time()\nwhile time.process_time() - t0 < 1.0:\n"
             "    pass\nx = bytearray(200 << 20)\nfor j in range(0, len(x), 4096):\n"
             "    x[j] = 1\n")
    bad = []
    for i in range(3):
        h = rt.run(heavy)
        idle = rt.run("pass\n")
        hu, iu = h.get("usage") or {}, idle.get("usage") or {}
        if h["status"] != "success" or hu.get("cpu_ms", 0) < 800 or \
                hu.get("max_rss_bytes", 0) < (150 << 20):
            bad.append("heavy run %d: %s %r (test assumption)" % (i, h["status"], hu))
        if iu.get("cpu_ms", 1 << 30) > 400 or iu.get("max_rss_bytes", 1 << 40) > (100 << 20):
            bad.append("idle run after heavy run %d reports %r" % (i, iu))
    g.check(not bad, "\n  ".join(bad))


FORK_HOLD = r"""
import time, errno
kids, err = [], None
for i in range(N):
    try:
        pid = _o.fork()
    except OSError as x:
        err = errno.errorcode.get(x.errno, x.errno)
        break
    if pid == 0:
        time.sleep(HOLD)
        _o._exit(0)
    kids.append(pid)
print("RTW-HELD", flush=True)
for k in kids:
    _o.waitpid(k, 0)
emit({"held": len(kids), "err": err})
"""


def test_per_user_limits_between_runs(t):
    """Trust boundaries: no per-user kernel limit one run can exhaust for another.  One
    warm run holds 50 processes (RLIMIT_NPROC counts a uid's processes); a concurrent run
    of the same template can still fork 5."""
    e.need_restricted("pids_aggregate")
    if os.geteuid() != 0:
        e.skip("root", "distinct identities per run are the root case (DESIGN)")
    rt = with_runtime(t, strict_doc(subprocess="allow", limits={"processes": 60}))

    def holder():
        return rt.run(guarded("N, HOLD = 50, 3.0\n" + FORK_HOLD))

    def other():
        time.sleep(1.5)
        return rt.run(guarded("N, HOLD = 5, 0.1\n" + FORK_HOLD))

    hd, od = parallel([holder, other])
    h, o = emitted(hd, "holder"), emitted(od, "other")
    g.check(h["held"] >= 40, "the holder could not hold its processes: %r" % h)
    g.check(o["held"] == 5, "a run could not fork while another run holds %r: %r" % (h, o))


REPL_CASES = ["1 + 1\n", "x = INPUTS['a']\nx * 2\n", "raise ValueError('boom')\n",
              "import asyncio\nawait asyncio.sleep(0)\n'awaited'\n", "print('hi')\n",
              "import sys\nsys.exit(3)\n", "import os\nos.getcwd(), sorted(os.listdir('.'))\n",
              "import sys\nsys.stderr.write('e' * 70000)\n"]
PLAIN_CASES = ["print('x')\n", "raise KeyError('k')\n", "import sys\nsys.exit('bye')\n",
               "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
               "print('y' * 70000)\n", "import sys\nprint(sys.argv, sys.flags.isolated)\n",
               "import os, sys\nos.close(1)\nprint('z')\n",
               "raise KeyboardInterrupt\n"]


def comparable(doc):
    d = dict(doc)
    d.pop("usage", None)
    d["diagnostics"] = [{k: v for k, v in x.items() if k != "message" or "ms" not in str(v)}
                        for x in d.get("diagnostics") or []]
    return d


def test_result_documents_warm_equal_cold(t):
    """Same result document as a cold run (DESIGN "Warm runs"): for plain and REPL runs
    (values, exceptions, exits, signals, truncated output, top-level await, INPUTS,
    files in and out), everything but the usage figures is equal, controls included."""
    pol = strict_doc()
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    before = warm_runs(warm)
    bad = []
    n = 0
    for repl, cases in ((False, PLAIN_CASES), (True, REPL_CASES)):
        for code in cases:
            kw = {"repl": repl, "files": [("in.txt", "data")], "outputs": True}
            if repl:
                kw["inputs"] = {"a": 21}
            code2 = code + ("\nimport os\nopen(os.environ['GOVEX_OUTPUT_DIR'] + '/o.txt', 'w')"
                            ".write('o')\n" if "exit" not in code and "raise" not in code
                            and "kill" not in code and "close" not in code else "")
            c, w = comparable(cold.run(code2, **kw)), comparable(warm.run(code2, **kw))
            n += 1
            if c != w:
                keys = sorted(k for k in set(c) | set(w) if c.get(k) != w.get(k))
                bad.append("%s %r:\n      %s" % ("repl" if repl else "plain", code[:40],
                           "\n      ".join("%s: cold %r, warm %r" % (k, c.get(k), w.get(k))
                                           for k in keys)))
    expect_warm(warm, before, n, "result document runs")
    g.check(not bad, "warm vs cold result documents:\n  " + "\n  ".join(bad))


OUT_ATTACK = r"""
import os
OUT = os.environ["GOVEX_OUTPUT_DIR"]
open(os.path.join(OUT, "mine.txt"), "w").write("mine")
for n, tg in (("hostname", "/etc/hostname"), ("passwd", "/etc/passwd"),
              ("proc1", "/proc/1/environ"), ("root", "/")):
    os.symlink(tg, os.path.join(OUT, n))
os.link(os.path.join(OUT, "mine.txt"), os.path.join(OUT, "hard.txt"))
os.mkfifo(os.path.join(OUT, "fifo"))
if MODE == "dir":
    os.rename(OUT, OUT + ".old")
    os.symlink("/etc", OUT)
"""


def test_outputs_collected_by_the_relay(t):
    """Warm runs' outputs are collected by the host (outside the run's mount namespace,
    from the workdir's descriptor the run's init sent): symlinks to host files, a hard link, a FIFO, and the output directory
    replaced by a symlink to /etc give back exactly what a cold run gives back (its own
    regular file, nothing of the host) and never hang."""
    pol = strict_doc()
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    bad = []
    for mode in ("files", "dir"):
        code = "MODE = %r\n" % mode + OUT_ATTACK
        c, w = cold.run(code, outputs=True), warm.run(code, outputs=True)
        cf = sorted((f["name"], f["sha256"]) for f in c.get("files") or [])
        wf = sorted((f["name"], f["sha256"]) for f in w.get("files") or [])
        if (c["status"], cf, diag_codes(c)) != (w["status"], wf, diag_codes(w)):
            bad.append("%s: cold %r, warm %r" % (mode, (c["status"], cf, diag_codes(c)),
                                                 (w["status"], wf, diag_codes(w))))
        if any(n != "mine.txt" for n, _ in wf):
            bad.append("%s: the warm run returned %r" % (mode, wf))
    g.check(not bad, "\n  ".join(bad))


def test_cancel_timeout_stop(t):
    """A warm run cancelled through its token, one past wall_ms, and one that stops
    itself (SIGSTOP) end as the cold ones do (status, termination), promptly, and the
    runtime goes on."""
    pol = strict_doc(limits={"wall_ms": 1500})
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    lib = warm.lib
    bad = []
    for rt, what in ((cold, "cold"), (warm, "warm")):
        tok = ctypes.c_void_p()
        if lib.govex_cancel_new(ctypes.byref(tok)) < 0:
            raise g.Failure("govex_cancel_new failed")
        threading.Timer(0.5, lambda tk=tok: lib.govex_cancel(tk)).start()
        t0 = time.monotonic()
        d = rt.run("import time\nprint('started', flush=True)\ntime.sleep(30)\n", cancel=tok)
        took = time.monotonic() - t0
        lib.govex_cancel_free(tok)
        if (d["status"], d["termination"]) != ("cancelled", "cancelled") or took > 3:
            bad.append("%s cancel: %s/%s after %.1f s" % (what, d["status"], d["termination"],
                                                        took))
    for code in ("import time\ntime.sleep(30)\n",
                 "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\nprint('cont')\n",
                 "import threading, time\nthreading.Thread(target=time.sleep, args=(30,))"
                 ".start()\n"):
        t0 = time.monotonic()
        c = cold.run(code)
        tc = time.monotonic() - t0
        t0 = time.monotonic()
        w = warm.run(code)
        tw = time.monotonic() - t0
        if (c["status"], c["termination"], c["stdout"]) != (w["status"], w["termination"],
                                                            w["stdout"]):
            bad.append("%r: cold %s/%s %r, warm %s/%s %r" % (
                code[:40], c["status"], c["termination"], c["stdout"], w["status"],
                w["termination"], w["stdout"]))
        if tw > tc + 3:
            bad.append("%r: warm took %.1f s, cold %.1f s" % (code[:40], tw, tc))
    d = warm.run("print('after')\n")
    if (d["status"], d["stdout"]) != ("success", "after\n"):
        bad.append("the run after: %s %r" % (d["status"], d["stdout"]))
    g.check(not bad, "\n  ".join(bad))



# ---- no host process per warm run: the host's thread hands the run to its init ----

def host_children(pid):
    """The children (live or not yet reaped) of every thread of process PID."""
    kids = set()
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return kids


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def run_inits(plain_only=False):
    """The run inits the templates below this process made ahead (comm govex-init);
    PLAIN_ONLY: those of the plain runs' template (its parameters, the last argument of
    the command line it shares with its template, say "worker": false)."""
    out = []
    for pid, (_pp, comm) in descendants().items():
        if comm != "govex-init":
            continue
        if plain_only:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    params = json.loads(f.read().split(b"\0")[-2])
                if params.get("worker") is not False:
                    continue
            except (OSError, ValueError, IndexError, AttributeError):
                continue
        out.append(pid)
    return out


def settled_inits():
    """run_inits() once the templates have made their spare inits (two each, the plain
    runs' template included) and nothing changed for 0.3 s (an init made after a run
    took one has its name only once it is ready)."""
    last, since, end = None, time.monotonic(), time.monotonic() + 10
    while time.monotonic() < end:
        cur = sorted(run_inits())
        if cur != last:
            last, since = cur, time.monotonic()
        elif time.monotonic() - since >= 0.3 and len(run_inits(plain_only=True)) >= 2:
            break
        time.sleep(0.02)
    return last


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


NO_RELAY_CODE = r"""
import os, sys, time
od = os.environ.get("GOVEX_OUTPUT_DIR")
got = open("in.txt").read() if os.path.exists("in.txt") else "-"
if od:
    open(os.path.join(od, "out.txt"), "w").write(got + " out")
time.sleep(1.0)
print("ran", got, sys.stdin.read())
"""


def test_no_host_process_per_warm_run(t):
    """A warm run makes no process on the host (the host's thread hands the run to the
    template's init, places its files and collects its outputs): while warm runs with
    files in and outputs, outputs only, and neither go on (in a library host, and in the
    govex CLI with GOVEX_WARM=1), the host has no child but the ones it had before (its
    templates' shims, each in a PID namespace of its own); afterwards no child, zombie or
    descriptor more than before, and each run got its files and outputs."""
    rt = with_runtime(t, strict_doc())
    e.eq(rt.run("print('up')\n")["stdout"], "up\n", "first run")
    me = os.getpid()
    before, fds = host_children(me), fd_count()
    g.check(before, "no template process: is the runtime warm?")
    extra, stop = {}, threading.Event()

    def sample(pid, base):
        while not stop.is_set():
            for c in host_children(pid) - base:
                if c not in extra:
                    try:
                        with open("/proc/%d/cmdline" % c, "rb") as f:
                            extra[c] = f.read().replace(b"\0", b" ")[:120]
                    except OSError:
                        extra[c] = b"?"
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, args=(me, before), daemon=True)
    sampler.start()
    n0 = warm_runs(rt)
    kinds = [dict(files=[("in.txt", "f%d" % i)], outputs=True) for i in range(2)] + \
        [dict(outputs=True), dict()]
    try:
        docs = parallel([lambda kw=kw, i=i: rt.run(NO_RELAY_CODE, stdin="s%d" % i, **kw)
                         for i, kw in enumerate(kinds)])
    finally:
        stop.set()
        sampler.join(5)
    expect_warm(rt, n0, len(kinds), "runs with files and outputs")
    bad = []
    for i, (kw, d) in enumerate(zip(kinds, docs)):
        f = kw.get("files", [("", "-")])[0][1]
        if (d["status"], d["stdout"]) != ("success", "ran %s s%d\n" % (f, i)):
            bad.append("run %d: %s %r %r" % (i, d["status"], d["stdout"], d["stderr"][-300:]))
        names = sorted(x["name"] for x in d.get("files") or [])
        if names != (["out.txt"] if kw.get("outputs") else []):
            bad.append("run %d: files %r" % (i, d.get("files")))
    if extra:
        bad.append("children of the host during warm runs besides its templates: %r" %
                   extra)
    time.sleep(0.1)
    if host_children(me) != before:
        bad.append("children after the runs: %r, before %r" % (host_children(me), before))
    # the runtime holds its spares' descriptors (pipes, watch socket, pidfd): after the
    # same runs again (their spares replaced), the count is what it was
    settle(rt)
    fds = fd_count()
    parallel([lambda kw=kw, i=i: rt.run(NO_RELAY_CODE, stdin="s%d" % i, **kw)
              for i, kw in enumerate(kinds)])
    settle(rt)
    if fd_count() != fds:
        bad.append("descriptors: %d before the runs, %d after" % (fds, fd_count()))

    # the CLI: while the run goes on (until govex copies its output file out) every child
    # of govex is in a PID namespace of its own (a template's shim, a probe's); a relay
    # process would be a plain child, in govex's own (at exit, ASan's leak checker may
    # clone one: not watched)
    pol = t.write_json("nr.json", strict_doc())
    inp = t.write("in.txt", "cli-in")
    outd = t.path("out")
    os.mkdir(outd)
    seen = {}

    def watch_cli(p):
        try:
            own = os.readlink("/proc/%d/ns/pid" % p.pid)
        except OSError:
            return
        end = time.monotonic() + 20
        while time.monotonic() < end and not os.path.exists(os.path.join(outd, "out.txt")):
            try:
                with open("/proc/%d/stat" % p.pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return
            except OSError:
                return
            for c in host_children(p.pid):
                try:
                    ns = os.readlink("/proc/%d/ns/pid" % c)
                except OSError:
                    continue
                if ns == own and c not in seen:
                    try:
                        with open("/proc/%d/cmdline" % c, "rb") as f:
                            seen[c] = f.read().replace(b"\0", b" ")[:200]
                    except OSError:
                        seen[c] = b"?"
                else:
                    seen.setdefault(c, None)
            time.sleep(0.005)

    _, doc = cli(t, NO_RELAY_CODE, pol, True, args=["--file", "in.txt=" + inp,
                                                    "--output-dir", outd],
                 during=watch_cli)
    if (doc["status"], doc["stdout"]) != ("success", "ran cli-in \n"):
        bad.append("CLI run: %s %r %r" % (doc["status"], doc["stdout"], doc["stderr"][-300:]))
    try:
        got = open(os.path.join(outd, "out.txt")).read()
    except OSError as x:
        got = repr(x)
    if got != "cli-in out":
        bad.append("CLI output file: %r" % got)
    if not seen:
        bad.append("the CLI had no child at all: GOVEX_WARM=1 should start templates")
    plain = sorted((c, v) for c, v in seen.items() if v is not None)
    if plain:
        bad.append("children of govex in its own PID namespace during a warm run (a relay "
                   "process per run): %r" % plain)
    g.check(not bad, "\n  ".join(bad))


def test_init_dies_mid_handshake(t):
    """The run's init killed after it took the run and before the run's code could end
    (the host waiting for the workdir to place the files in, placing them, or the run
    under way): the run ends promptly (not at its wall deadline) as execution_failed
    (launch_failed), with none of its output, and the next run succeeds; the run's
    descriptors handed to a template that dies before any init took them (every init
    stopped): the same.  Nothing is left: no child, zombie or descriptor more than
    before, no cgroup of the run."""
    fds = fd_count()
    rt = with_runtime(t, strict_doc(limits={"wall_ms": 20000}))
    e.eq(rt.run("print('up')\n")["stdout"], "up\n", "first run")
    me = os.getpid()
    code = "import time\ntime.sleep(5)\nprint('late')\n"
    files = [("in.txt", "x" * (8 << 20))]  # (the host takes a while to place it)
    bad = []

    def in_flight():
        box = {}

        def go():
            box["t0"] = time.monotonic()
            box["doc"] = rt.run(code, files=files, outputs=True)
            box["t1"] = time.monotonic()
        th = threading.Thread(target=go, daemon=True)
        th.start()
        return th, box

    def ended(th, box, what, killed_at):
        th.join(15)
        if th.is_alive():
            bad.append("%s: the run did not end 15 s after its init died" % what)
            return
        d, took = box["doc"], box["t1"] - killed_at
        if (d["status"], d["termination"], d["stdout"]) != \
                ("execution_failed", "launch_failed", ""):
            bad.append("%s: %s/%s %r %r" % (what, d["status"], d["termination"],
                                            d["stdout"], d.get("diagnostics")))
        if took > 3:
            bad.append("%s: the run ended %.1f s after its init died" % (what, took))
        after = rt.run("print('next')\n")
        if (after["status"], after["stdout"]) != ("success", "next\n"):
            bad.append("%s: the run after: %s %r" % (what, after["status"], after["stdout"]))

    for attempt in range(3):
        # every init stopped, the run handed over (nobody takes it yet), then one init of
        # the plain template let go and killed as soon as it took the run (it holds the
        # run's descriptors: its count of them jumps)
        inits = settled_inits()
        signal_all(inits, signal.SIGSTOP)
        th, box = in_flight()
        time.sleep(0.3)
        plain = [p for p in run_inits(plain_only=True) if p in inits]
        count = {}
        for p in plain:
            try:
                count[p] = len(os.listdir("/proc/%d/fd" % p))
            except OSError:
                count[p] = 0
        signal_all(plain, signal.SIGCONT)
        # (a run on a spare -- a long-lived runtime makes them after its first run --: its
        # init had its descriptors before the run and takes only the go, no jump to see:
        # every init of the plain template is killed, the run's among them)
        victim, end = None, time.monotonic() + (0 if SPARE else 0.5)
        while victim is None and time.monotonic() < end:
            for p in plain:
                try:
                    if len(os.listdir("/proc/%d/fd" % p)) > count[p] + 4:
                        victim = p
                except OSError:
                    pass
        # (not seen: it is one of those let go, the others were stopped)
        killed_at = time.monotonic()
        signal_all([victim] if victim else plain, signal.SIGKILL)
        signal_all(inits, signal.SIGCONT)
        ended(th, box, "attempt %d (init killed)" % attempt, killed_at)

    # the run's descriptors queued at a template that dies with every init stopped
    inits = settled_inits()
    signal_all(inits, signal.SIGSTOP)
    tree = descendants()
    shims = set()
    for p in inits:  # the templates' shims: this process's children above the inits
        while p in tree and tree[p][0] != me:
            p = tree[p][0]
        if p in tree:
            shims.add(p)
    th, box = in_flight()
    time.sleep(0.5)
    if not th.is_alive():
        bad.append("the run ended with every init stopped: %r" % box.get("doc"))
    killed_at = time.monotonic()
    signal_all(shims, signal.SIGKILL)
    ended(th, box, "template killed", killed_at)

    rt.close()
    if not e.wait_until(lambda: not descendants(zombies=True), 5.0):
        bad.append("processes left after runtime free: %r" % descendants(zombies=True))
    if fd_count() != fds:
        bad.append("descriptors: %d before the runtime, %d after it was freed"
                   % (fds, fd_count()))
    left = e.leftover_run_cgroups()
    if left:
        bad.append("cgroups left: %r" % left)
    g.check(not bad, "\n  ".join(bad))


SLOT_CODE = r"""
import os, sys, time
print(os.getuid(), flush=True)
open(os.path.join(os.environ["GOVEX_OUTPUT_DIR"], "o.txt"), "w").write(open("in.txt").read())
time.sleep(30)
"""


def settle(rt):
    """Waits (5 s at most) until the runtime's spares are made: its count of spares and
    this process's descriptors the same for 300 ms."""
    end, last, since = time.monotonic() + 5, None, time.monotonic()
    while time.monotonic() < end:
        now = ((rt.stats().get("warm") or {}).get("spares"), fd_count())
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 0.3:
            return
        time.sleep(0.02)


def slot_free(uid, rt=None):
    """Whether the run slot of a run that had UID (as root: the slot's, base + N) is
    free at some moment within 5 s (a concurrent run may take a freed slot again at
    once; one that is never released never is), or held by one of runtime rt's spares
    (a spare made after the run may take the slot it freed: its stats list them).
    None: not a slot's uid."""
    import fcntl
    n = uid - 0x7f000000
    if os.geteuid() != 0 or not 0 <= n < 65536:
        return None
    path = "/run/govex/slots/%d.lock" % n
    end = time.monotonic() + 5
    while time.monotonic() < end:
        if rt is not None and n in (rt.stats().get("warm") or {}).get("spare_slots", []):
            return True
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.02)
        finally:
            os.close(fd)
    return False


def test_cancel_timeout_release_the_slot(t):
    """A warm run with files in and outputs, cancelled or past wall_ms, ends as the cold
    one does (status, termination, the output file it wrote), promptly, and its slot is
    released; the same when the cancellation or the deadline comes while the host waits
    for the run's init (every init stopped: the files not placed yet); no cgroup of a
    run is left."""
    pol = strict_doc(limits={"wall_ms": 1500})
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    lib = warm.lib
    files = [("in.txt", "in")]
    bad = []

    def cancelled_run(rt, after, during=None):
        tok = ctypes.c_void_p()
        if lib.govex_cancel_new(ctypes.byref(tok)) < 0:
            raise g.Failure("govex_cancel_new failed")
        threading.Timer(after, lambda: lib.govex_cancel(tok)).start()
        if during:
            threading.Timer(after + 0.3, during).start()
        try:
            return rt.run(SLOT_CODE, files=files, outputs=True, cancel=tok)
        finally:
            lib.govex_cancel_free(tok)

    def summary(d):
        return (d["status"], d["termination"],
                sorted((f["name"], f["sha256"]) for f in d.get("files") or []))

    for what, fn, limit in (("cancel", lambda rt: cancelled_run(rt, 0.5), 3.5),
                            ("timeout", lambda rt: rt.run(SLOT_CODE, files=files,
                                                          outputs=True), 4.5)):
        c = fn(cold)
        t0 = time.monotonic()
        w = fn(warm)
        took = time.monotonic() - t0
        if summary(c) != summary(w) or not w.get("files"):
            bad.append("%s: cold %r, warm %r" % (what, summary(c), summary(w)))
        if took > limit:
            bad.append("%s: the warm run took %.1f s" % (what, took))
        try:
            uid = int((w["stdout"] or "").split()[0])
        except (ValueError, IndexError):
            bad.append("%s: no uid printed: %r" % (what, w["stdout"]))
            continue
        if slot_free(uid, warm) is False:
            bad.append("%s: the slot of uid %d is not released" % (what, uid))

    # while the host waits for the init to place the files: every init stopped
    for what, fn, want in (
            ("cancel while the host waits for the init",
             lambda cont: cancelled_run(warm, 0.3, cont), "cancelled"),
            ("deadline while the host waits for the init",
             lambda cont: (threading.Timer(1.8, cont).start(),
                           warm.run(SLOT_CODE, files=files, outputs=True))[1], "timeout")):
        inits = settled_inits()
        signal_all(inits, signal.SIGSTOP)
        t0 = time.monotonic()
        w = fn(lambda: signal_all(inits, signal.SIGCONT))
        took = time.monotonic() - t0
        signal_all(inits, signal.SIGCONT)
        if (w["status"], w["termination"], w["stdout"]) != (want, want, ""):
            bad.append("%s: %s/%s %r" % (what, w["status"], w["termination"], w["stdout"]))
        if took > 4.5:
            bad.append("%s: took %.1f s" % (what, took))
    d = warm.run("import os\nprint(os.listdir('.'))\n")
    if (d["status"], d["stdout"]) != ("success", "[]\n"):
        bad.append("the run after: %s %r" % (d["status"], d["stdout"]))
    left = e.leftover_run_cgroups()
    if left:
        bad.append("cgroups left: %r" % left)
    g.check(not bad, "\n  ".join(bad))

def test_concurrent_denial_counts(t):
    """Four concurrent warm runs each refused k times (k = 1..4): each result counts its
    own k, never another run's."""
    e.need_restricted("network_deny")
    rt = with_runtime(t, strict_doc())
    code = guarded("import socket, sys, time\nk = int(sys.stdin.read())\n"
                   "for i in range(k):\n    time.sleep(0.1)\n    try:\n"
                   "        socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
                   "    except OSError:\n        pass\nemit(k)\n")

    def one(k):
        return rt.run(code, stdin=str(k))

    docs = parallel([lambda k=k: one(k) for k in (1, 2, 3, 4) for _ in range(2)])
    bad = []
    for k, d in zip([1, 1, 2, 2, 3, 3, 4, 4], docs):
        ds = denials_of(d)
        want = "(%d attempt" % k
        if emitted(d, "k=%d" % k) != k or not ds or want not in (ds[0][2] or ""):
            bad.append("k=%d: %r" % (k, ds))
    g.check(not bad, "denial counts of concurrent warm runs:\n  " + "\n  ".join(bad))


def test_recycling_under_load(t):
    """GOVEX_WARM_RECYCLE=2 with eight runs in flight at a time: templates are retired
    and replaced while runs of theirs are still going; every run ends as it should."""
    os.environ["GOVEX_WARM_RECYCLE"] = "2"
    try:
        rt = with_runtime(t, strict_doc())

        def worker(i):
            out = []
            for j in range(3):
                tag = "r%d-%d" % (i, j)
                d = rt.run("import time, sys\ntime.sleep(0.3)\nprint(sys.stdin.read())\n",
                           stdin=tag)
                out.append((tag, d["status"], d["stdout"]))
            return out

        res = [x for lst in parallel([lambda i=i: worker(i) for i in range(8)]) for x in lst]
    finally:
        del os.environ["GOVEX_WARM_RECYCLE"]
    bad = [r for r in res if r[1:] != ("success", r[0] + "\n")]
    g.check(not bad, "runs under recycling: %r" % bad)


FS_MATRIX = r"""
import errno, stat
def res(fn):
    try:
        v = fn()
        return "ok" if v is None else v
    except OSError as x:
        return errno.errorcode.get(x.errno, x.errno)
def mode(p):
    s = _o.lstat(p)
    return [stat.filemode(s.st_mode), s.st_uid == _o.getuid(), s.st_nlink > 0]
def wr(p):
    fd = _o.open(p, _o.O_WRONLY | _o.O_CREAT | _o.O_EXCL, 0o600)
    _o.close(fd)
    _o.unlink(p)
out = {}
import sys
paths = ["/", "/etc", "/etc/passwd", "/etc/group", "/etc/hostname", "/etc/shadow", "/usr",
         "/usr/bin", "/bin", "/root", "/home", "/var", "/var/tmp", "/run", "/dev", "/dev/shm",
         "/dev/null", "/dev/zero", "/dev/tty", "/sys", "/sys/fs/cgroup", "/proc/self",
         "/proc/sys/kernel", "/tmp", "/govex", "/govex/work", _o.getcwd(),
         sys.prefix, _o.path.dirname(_o.__file__), sys.executable]
for p in paths:
    out[p] = {"stat": res(lambda: mode(p)), "list": res(lambda: len(_o.listdir(p))),
              "read": res(lambda: len(open(p, "rb").read(16))),
              "create": res(lambda: wr(_o.path.join(p, "rtw-probe")))}
out["passwd"] = open("/etc/passwd").read().replace(str(_o.getuid()), "UID")
out["group"] = open("/etc/group").read().replace(str(_o.getgid()), "GID")
out["cgroup"] = open("/proc/self/cgroup").read()
out["exe"] = [sys.executable, sys.prefix, list(getattr(sys, "orig_argv", []))[:3]]
emit(out)
"""


def test_filesystem_matrix_warm_equals_cold(t):
    """stat, list, read and create on the root's places (/etc, /usr, /dev, /dev/shm,
    /sys, /proc, /tmp, the workdir, the interpreter's files...), /etc/passwd and
    /etc/group's text (the run's ids), /proc/self/cgroup: a warm run's view is a cold
    run's."""
    e.need_restricted()
    pol = e.policy(t)
    cold, warm = both(t, guarded(FS_MATRIX), pol)
    c, w = emitted(cold, "cold"), emitted(warm, "warm")
    diffs = ["%s: cold %r, warm %r" % (k, c.get(k), w.get(k))
             for k in sorted(set(c) | set(w)) if c.get(k) != w.get(k)]
    g.check(not diffs, "a warm run sees the filesystem otherwise:\n  " + "\n  ".join(diffs))


def mcp_server(t, pol, log, extra=()):
    sys.path.insert(0, os.path.join(os.path.dirname(e.HERE), "mcp"))
    import mcptest as m
    env = dict(os.environ, GOVEX_WARM_LOG=log)
    env.pop("GOVEX_WARM", None)
    s = m.Server(["--policy", pol] + list(extra), cwd=t.tmp, env=env)
    t.defer(s.cleanup)
    s.initialize()
    return m, s


def test_mcp_snippets(t):
    """`govex mcp` (warm by default): a run_python_snippet call that poisons builtins,
    modules, environ and /tmp with a secret from its stdin leaves nothing for the next
    call (memory scanned too); six concurrent calls with their own stdin, INPUTS and files
    each see only their own."""
    e.need_restricted()
    pol = e.policy(t)
    log = t.path("mcp-warm.log")
    m, s = mcp_server(t, pol, log, ["--max-concurrent", "6"])
    secret = "rtw-mcp-" + secrets.token_hex(16)
    h = halves(secret)
    poison = guarded("import sys, builtins, json\nsec = sys.stdin.read()\nkeep = [sec, sec * 2]\n"
                     "builtins.RTW = sec\njson.RTW = sec\n_o.environ['RTW'] = sec\n"
                     "open('/tmp/rtw', 'w').write(sec)\nemit('poisoned')\n")
    witness = guarded(SCAN + "HALVES = [(%r, %r)]\n" % (h[0], h[1]) +
                      "import builtins, json\nemit({'b': hasattr(builtins, 'RTW'), "
                      "'j': hasattr(json, 'RTW'), 'env': 'RTW' in _o.environ, "
                      "'tmp': sorted(_o.listdir('/tmp')), 'mem': scan_memory(HALVES)})\n")
    d1 = m.result_doc(s.call("run_python_snippet", {"code": poison, "stdin": secret}))
    d2 = m.result_doc(s.call("run_python_snippet", {"code": witness}))
    g.eq(emitted(d1, "poison"), "poisoned", "poisoning call")
    g.eq(emitted(d2, "witness"), {"b": False, "j": False, "env": False, "tmp": [], "mem": []},
         "what the next call finds")
    conc = guarded("import sys, time\ntime.sleep(0.2)\n"
                   "emit([sys.stdin.read(), open('tag.txt').read(), sorted(_o.listdir('/tmp'))])"
                   "\n")
    ids = {}
    for i in range(6):
        tag = "tag-%d-%s" % (i, secrets.token_hex(3))
        ids[s.start("tools/call", {"name": "run_python_snippet", "arguments": {
            "code": conc + "open('/tmp/x', 'w').write('x')\n", "stdin": tag,
            "files": [{"name": "tag.txt", "text": tag}]}})] = tag
    bad = []
    for i, tag in ids.items():
        d = m.result_doc(s.wait_for(i, 60))
        got = emitted(d, tag)
        if got != [tag, tag, []]:
            bad.append("%s saw %r" % (tag, got))
    # (one line a run: "warm", or "warm spare" for a run on a spare)
    lines = [x.split()[0] for x in open(log).read().splitlines() if x] \
        if os.path.exists(log) else []
    g.check(lines and all(x == "warm" for x in lines[:2]),
            "govex mcp's runs were not warm (GOVEX_WARM_LOG %r; stderr %r)"
            % (lines, s.stderr()[-400:]))
    g.check(not bad, "concurrent MCP calls:\n  " + "\n  ".join(bad))


MODULE = """import os, sys
COUNT = [0]
print("RTW-IMPORTED", file=sys.stderr)


def bump(n: int) -> dict:
    "Adds n to a module global."
    import builtins
    COUNT[0] += n
    had = hasattr(builtins, "RTW_MOD")
    builtins.RTW_MOD = 1
    os.environ["RTW_MOD"] = "1"
    open("/tmp/rtw-mod", "a").write("x")
    return {"count": COUNT[0], "had": had, "tmp": open("/tmp/rtw-mod").read()}
"""


def test_mcp_module_tool(t):
    """`govex mcp --module` (warm by default): each call of a module's tool imports the
    module afresh in its own run (the import's side effects each time, its globals
    new); nothing one call leaves (module global, builtins, environ, /tmp) is seen by
    the next."""
    e.need_restricted()
    pol = e.policy(t)
    mod = t.write("rtwmod.py", MODULE)
    log = t.path("mcp-mod.log")
    m, s = mcp_server(t, pol, log, ["--module", mod])
    docs = [m.result_doc(s.call("bump", {"n": 1})) for _ in range(3)]
    bad = []
    for i, d in enumerate(docs):
        if d["status"] != "success" or d.get("value") != {"count": 1, "had": False,
                                                          "tmp": "x"}:
            bad.append("call %d: %s %r %r" % (i, d["status"], d.get("value"),
                                             d.get("diagnostics")))
        if "RTW-IMPORTED" not in (d.get("stderr") or ""):
            bad.append("call %d: the module was not imported in the run: stderr %r"
                       % (i, d.get("stderr")))
    lines = [x.split()[0] for x in open(log).read().splitlines() if x] \
        if os.path.exists(log) else []
    g.check(lines and lines.count("warm") >= 3,
            "govex mcp's module calls were not warm (GOVEX_WARM_LOG %r)" % lines)
    g.check(not bad, "\n  ".join(bad))


FILE_OPS = r"""
import errno, stat
def res(fn):
    try:
        v = fn()
        return "ok" if v is None else v
    except OSError as x:
        return errno.errorcode.get(x.errno, x.errno)
st = _o.stat("in.txt")
out = {"mode": stat.filemode(st.st_mode), "mine": st.st_uid == _o.getuid(),
       "read": res(lambda: open("in.txt").read()),
       "write": res(lambda: open("in.txt", "a").write("x")),
       "chmod": res(lambda: _o.chmod("in.txt", 0o666)),
       "rename": res(lambda: _o.rename("in.txt", "moved.txt")),
       "link": res(lambda: _o.link("in.txt", "hard.txt")),
       "unlink": res(lambda: _o.unlink("in.txt")),
       "after": sorted(_o.listdir("."))}
try:
    import fcntl
    fd = _o.open("in.txt", _o.O_RDONLY)
    out["lease"] = res(lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK))
except OSError as x:
    out["lease"] = errno.errorcode.get(x.errno)
emit(out)
"""


def test_files_in_warm_as_cold(t):
    """Files handed to a warm run (placed by the host): what the run can do to
    them (read, append, chmod, rename, hard link, unlink) is what a cold run can do."""
    pol = strict_doc()
    cold, warm = WarmRuntime(pol, warm=False), with_runtime(t, pol)
    t.defer(cold.close)
    code = guarded(FILE_OPS)
    f = [("in.txt", "input data")]
    c = emitted(cold.run(code, files=f), "cold")
    w = emitted(warm.run(code, files=f), "warm")
    diffs = ["%s: cold %r, warm %r" % (k, c.get(k), w.get(k))
             for k in sorted(set(c) | set(w)) if c.get(k) != w.get(k)]
    # a module handed in as a file is importable from the workdir as in a cold run (no
    # import cache of the template's placeholder workdir)
    imp = ("import sys, os\nsys.path.insert(0, os.getcwd())\nimport rtwhelper\n"
           "print(rtwhelper.VALUE)\n")
    helper = [("rtwhelper.py", "VALUE = 'helped'\n")]
    for repl in (False, True):
        cd, wd = cold.run(imp, files=helper, repl=repl), warm.run(imp, files=helper, repl=repl)
        if (cd["status"], cd["stdout"]) != (wd["status"], wd["stdout"]):
            diffs.append("import of a file in (repl=%s): cold %s %r, warm %s %r %r"
                         % (repl, cd["status"], cd["stdout"], wd["status"], wd["stdout"],
                            wd["stderr"][-300:]))
    g.check(not diffs, "files in, warm vs cold:\n  " + "\n  ".join(diffs))


# ---- what forked runs share, as documented ----

RANDOMNESS = r'''
import random, tempfile, uuid
try:
    import ssl
    rb = ssl.RAND_bytes(16).hex()
except ImportError:
    rb = None
emit({"random": random.random(), "temp": next(tempfile._get_candidate_names()),
      "uuid": str(uuid.uuid4()), "hash": hash("rtw-hash-probe"), "ssl": rb,
      "aslr": id(None)})
'''


def test_randomness_and_recycling(t):
    """Runs of one template share the hash seed and layout (documented) but never a
    random stream (random, tempfile names, uuid4, OpenSSL's RAND_bytes: every run is PID
    2 of its own namespace, so a generator that detects forks by pid would repeat), plain
    and REPL (worker template) runs alike; two runtimes' templates have different
    hash seeds and layouts; with GOVEX_WARM_RECYCLE=2 (warm.md) the template is replaced
    and the hash seed re-randomized."""
    code = guarded(RANDOMNESS)
    rt = with_runtime(t, strict_doc())
    bad = []
    for repl in (False, True):
        runs = [emitted(rt.run(code, repl=repl), "run %d" % i) for i in range(4)]
        for k in ("random", "temp", "uuid", "ssl"):
            vals = [r[k] for r in runs]
            if len(set(vals)) != len(vals):
                bad.append("%s repeats across runs of one template (repl=%s): %r"
                           % (k, repl, vals))
    runs = [emitted(rt.run(code), "run %d" % i) for i in range(2)]
    rt2 = with_runtime(t, strict_doc())
    other = emitted(rt2.run(code), "another runtime")
    if other["hash"] == runs[0]["hash"]:
        bad.append("two runtimes' templates share the hash seed")
    os.environ["GOVEX_WARM_RECYCLE"] = "2"  # read by the library at each run
    try:
        rt3 = with_runtime(t, strict_doc())
        seeds = [emitted(rt3.run(code), "recycled %d" % i)["hash"] for i in range(6)]
    finally:
        del os.environ["GOVEX_WARM_RECYCLE"]
    if len(set(seeds)) < 2:
        bad.append("GOVEX_WARM_RECYCLE=2: six runs, one hash seed %r" % seeds)
    g.check(not bad, "\n  ".join(bad))


def test_burst_leaves_nothing(t):
    """60 warm runs, 6 in flight, some ending badly (exception, SIGKILL of themselves,
    a thread left, os._exit): after runtime free no process of ours and no new host
    mount is left."""
    mounts = host_mounts()
    rt = WarmRuntime(strict_doc())
    try:
        codes = ["print(1)\n", "raise ValueError('x')\n",
                 "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                 "import threading, time\nthreading.Thread(target=time.sleep, args=(30,),"
                 " daemon=True).start()\n", "import os\nos._exit(3)\n"]

        def worker(i):
            return [rt.run(codes[(i + j) % len(codes)])["status"] for j in range(10)]

        for i in range(len(codes)):
            rt.run(codes[i])
            rt.run(codes[i], repl=True)
        time.sleep(1.0)
        settle(rt)
        first = descendants(zombies=True)
        statuses = [s for lst in parallel([lambda i=i: worker(i) for i in range(6)])
                    for s in lst]
        g.check(statuses.count("success") >= 12, "statuses: %r" % statuses)
        time.sleep(1.0)
        settle(rt)
        kept = descendants(zombies=True)
        # (the runtime's spares, and each template's own two run inits ahead, made again
        # once a run ended, may be short of one at either look: an init and its program)
        slack = 2
        g.check(len(kept) <= max(len(first), 1) + slack and
                not any(c.startswith("zombie:") for _, c in kept.values()),
                "idle after 10 runs the runtime kept %d processes, after 60 more %d: %r"
                % (len(first), len(kept), kept))
    finally:
        rt.close()
    left = e.wait_until(lambda: not descendants(), 5.0)
    g.check(left, "processes left after runtime free: %r" % descendants())
    g.eq(host_mounts(), mounts, "host mount table after runtime free")


TESTS = [
    ("warm runs exist: govex_runtime_warm, stats, GOVEX_WARM=1", test_warm_is_on),
    ("govex_runtime_warm() from several threads while runs start", test_warm_called_concurrently),
    ("a warm run's start state equals a cold run's", test_start_state_warm_equals_cold),
    ("nothing of one run reaches the next (plain runs)", test_state_does_not_leak_plain),
    ("nothing of one run reaches the next (REPL runs)", test_state_does_not_leak_repl),
    ("concurrent warm runs see only their own inputs, files, identity",
     test_concurrent_runs_see_only_their_own),
    ("concurrent REPL runs get their own values", test_concurrent_repl_runs_get_their_own_values),
    ("a request's own limits are its run's only", test_request_limits_are_per_run),
    ("abstract unix sockets do not cross runs (network deny)",
     test_abstract_socket_network_deny),
    ("abstract unix sockets do not cross runs (network allow)",
     test_abstract_socket_network_allow),
    ("SysV / POSIX IPC does not cross runs", test_ipc_between_runs),
    ("no shared mapping or descriptor inherited from the template",
     test_no_shared_mapping_or_fd_from_template),
    ("the host's environment is not in a warm run", test_host_environment_not_in_warm_run),
    ("PID 1, the template's places, other pids: as cold", test_reach_init_and_template),
    ("signals to the run's init change nothing (root)", test_signals_to_init),
    ("as nobody: PID 1, other pids, start state as cold", test_reach_unprivileged),
    ("signals to the run's init change nothing (unprivileged)",
     test_signals_to_init_unprivileged),
    ("cpu_ms stops a run that pesters its init", test_cpu_limit_while_pestering_init),
    ("a killed template: runs go on, nothing left", test_template_killed),
    ("any process kept between runs killed: the next runs succeed", test_any_kept_process_killed),
    ("a template that cannot start fails at once", test_template_start_failure_is_prompt),
    ("read/write roots: what is at the policy's paths now", test_roots_follow_the_policy_paths),
    ("a volume the host unmounted is not readable any more", test_unmounted_volume_not_readable),
    ("denials: warm equals cold", test_denials_warm_equal_cold),
    ("limits: warm equals cold", test_limits_warm_equal_cold),
    ("subprocess allowed: warm runs programs as cold", test_subprocess_allowed_warm_as_cold),
    ("each run has its whole budget; over it is stopped", test_limits_are_each_runs_own),
    ("usage figures are each run's own", test_usage_is_each_runs_own),
    ("per-user kernel limits: one run cannot exhaust them for another",
     test_per_user_limits_between_runs),
    ("result documents: warm equals cold", test_result_documents_warm_equal_cold),
    ("files in: what a warm run can do to them, as cold", test_files_in_warm_as_cold),
    ("outputs collected by the relay: nothing of the host",
     test_outputs_collected_by_the_relay),
    ("filesystem view: warm equals cold", test_filesystem_matrix_warm_equals_cold),
    ("govex mcp snippets: nothing left, concurrent calls apart", test_mcp_snippets),
    ("govex mcp module tool: each call imports afresh, nothing left", test_mcp_module_tool),
    ("cancel, wall timeout, SIGSTOP: warm as cold", test_cancel_timeout_stop),
    ("a warm run makes no process on the host", test_no_host_process_per_warm_run),
    ("the run's init dies mid-handshake: the run ends at once, nothing left",
     test_init_dies_mid_handshake),
    ("cancel, wall timeout (also before the files are placed): the slot is released",
     test_cancel_timeout_release_the_slot),
    ("concurrent runs' denial counts are their own", test_concurrent_denial_counts),
    ("templates recycled under load: every run ends well", test_recycling_under_load),
    ("random streams not shared; hash seed re-randomized", test_randomness_and_recycling),
    ("a burst of warm runs leaves nothing", test_burst_leaves_nothing),
]

if __name__ == "__main__":
    only = os.environ.get("RTW_ONLY")
    g.main([x for x in TESTS if not only or only in x[1].__name__])
