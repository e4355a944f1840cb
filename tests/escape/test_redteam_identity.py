#!/usr/bin/env python3
"""Second red team (issue 9), identities and host state: run slots and the per-slot uid,
files a run leaves in a shared write root, hostile lock directories for an unprivileged
caller, the cache directory's special files, and the sweep of dead host workdirs
(symlinks, hardlinks, and a bind mount of the same file system inside one).

A failing test here is a finding; its message says what was seen."""
import json
import os
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def _need_root():
    if os.geteuid() != 0:
        e.skip("root", "per-slot identities exist only as root")


def _shared_write_root(t):
    os.chmod(t.tmp, 0o711)
    w = t.path("shared")
    os.mkdir(w)
    os.chmod(w, 0o1777)          # writable by every slot's uid, sticky like /tmp
    return w


def _pol(t, w, name="p.json"):
    return e.policy(t, name=name, limits={"wall_ms": 20000}, filesystem={"write": [w]})


# ---------------------------------------------------------------- slots and uids

def test_next_run_of_a_slot_reads_what_the_last_left(t):
    """Not run: the contract is now the one this test documents (README "Identity":
    write roots are shared state across runs; a slot's ids isolate concurrent runs).
    Kept as the reproduction.

    README: "concurrent runs cannot read each other's files".  A run that keeps a
    secret 0600 in a shared write root (a cache volume, say) relies on its uid.  The
    next run that takes the same slot has the same uid, so it reads the secret.

    Expected (the claim read literally): denied.  If the contract is only about
    CONCURRENT runs, this test documents that a write root is shared state across
    time (same slot = same uid), and README/DESIGN must say so."""
    _need_root()
    e.need_restricted("syscall_filter")
    w = _shared_write_root(t)
    pol = _pol(t, w)
    secret = os.path.join(w, "secret")
    _, doc, res = e.run_proven(t, [["rd_write_mode", secret, "tenant-a-secret", 0o600,
                                    {"as": "w"}], ["rd_uid", {"as": "id"}]], pol=pol)
    owner, mode = e.allowed(res, "w")
    g.eq(mode, 0o600, "mode of the secret")
    g.check(e.is_run_id(owner), "owner %r is not a run id" % owner)
    # the next runs: slot N is the lowest free one, so with no other run in flight
    # it is the same slot again (retry: other runs of the host may hold slots)
    for attempt in range(4):
        _, doc2, res2 = e.run_proven(t, [["read", secret, {"as": "r"}],
                                         ["rd_uid", {"as": "id"}]], pol=pol)
        uid2 = e.allowed(res2, "id")[0]
        if uid2 == owner:
            break
    else:
        print("# never got slot uid %d again (other runs in flight): inconclusive" % owner)
        return
    got = res2["r"]
    g.check(not got.get("ok"),
            "a later run (uid %d, the same slot) read the 0600 secret an earlier run "
            "left in the shared write root: %r -- a slot's uid is reused by every later "
            "run of that slot, so \"runs cannot read each other's files\" holds only for "
            "concurrent runs" % (uid2, got))


def test_concurrent_runs_cannot_read_0600(t):
    """Two runs in flight at once have distinct uids: B cannot read A's 0600 file in
    the shared write root, nor replace it (sticky directory)."""
    _need_root()
    e.need_restricted("syscall_filter")
    w = _shared_write_root(t)
    pol = _pol(t, w)
    secret = os.path.join(w, "a-secret")
    gate = os.path.join(w, "b-done")
    holder = {}

    def run_a():
        holder["a"] = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code([
            ["rd_write_mode", secret, "tenant-a-secret", 0o600, {"as": "w"}],
            ["rd_uid", {"as": "id"}],
            ["wait_file", gate, 15.0, {"as": "wait"}]])], timeout=30)

    th = threading.Thread(target=run_a)
    th.start()
    try:
        g.check(e.wait_until(lambda: os.path.exists(secret), 15.0),
                "run A never wrote its secret")
        _, doc, res = e.run_proven(t, [["read", secret, {"as": "r"}],
                                       ["write", secret, "overwritten", {"as": "ow"}],
                                       ["rd_uid", {"as": "id"}]], pol=pol)
    finally:
        with open(gate, "w") as f:
            f.write("x")
        th.join(30)
    resa = e.probe_lines(holder["a"].result().get("stdout"))
    g.check(resa is not None, "run A printed nothing")
    ua, ub = e.allowed(resa, "id")[0], e.allowed(res, "id")[0]
    g.check(ua != ub, "two concurrent runs had the same uid %d" % ua)
    e.denied(res, "r", "EACCES")
    e.denied(res, "ow", "EACCES")


def _suid_fs(path):
    return not (os.statvfs(path).f_flag & os.ST_NOSUID)


def _host_exec_as_nobody(path):
    """Runs PATH (a byte-for-byte copy of this host's python3, checked by the caller)
    as nobody on the host; returns its (ruid, euid, suid, rgid, egid, sgid)."""
    p = subprocess.run([path, "-I", "-S", "-c",
                        "import os; print(list(os.getresuid() + os.getresgid()))"],
                       preexec_fn=e.nobody_preexec(), capture_output=True, text=True,
                       timeout=10, env={"PATH": "/usr/bin:/bin"})
    return json.loads(p.stdout) if p.returncode == 0 else "failed: %r" % p.stderr[-300:]


def test_setuid_file_left_for_host_users(t):
    """A run (as root: uid base+N) copies the interpreter into its write root and sets
    the setuid and setgid bits (chmod 06755, or open(O_CREAT, 06755)).  The write
    root is nosuid inside the sandbox, but not on the host: any local user who runs the
    file gets the slot's uid and gid, the identity of every later run of that slot (its
    files in write roots, its processes for kill()).  (open(O_CREAT, 06755) is stripped
    to 0755 here; chmod is not.)  Expected: the bits are refused (seccomp on
    chmod/fchmod/fchmodat/fchmodat2 mode S_ISUID|S_ISGID, as flatpak does)."""
    _need_root()
    e.need_restricted("syscall_filter")
    w = _shared_write_root(t)
    if not _suid_fs(w):
        e.skip("suid", "the test's directory is on a nosuid file system")
    pol = _pol(t, w)
    exe = os.path.realpath(sys.executable)
    _, doc, res = e.run_proven(t, [
        ["rd_plant_setid", "/proc/self/exe", os.path.join(w, "by-chmod"), 0o6755, "chmod",
         {"as": "chmod"}],
        ["rd_plant_setid", "/proc/self/exe", os.path.join(w, "by-open"), 0o6755, "open",
         {"as": "open"}],
        ["rd_uid", {"as": "id"}]], pol=pol)
    uid = e.allowed(res, "id")[0]
    print("# inside: chmod %r, open %r" % (res["chmod"], res["open"]))
    found = []
    for name in ("by-chmod", "by-open"):
        p = os.path.join(w, name)
        if not os.path.exists(p):
            continue
        st = os.stat(p)
        if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            found.append("%s: mode %o owner %d:%d" % (name, st.st_mode & 0o7777, st.st_uid,
                                                       st.st_gid))
    if not found:
        return
    # show what a host user gets (only a byte-for-byte copy of a host interpreter runs)
    got = None
    p = os.path.join(w, "by-chmod")
    with open(p, "rb") as f1:
        planted = f1.read()
    for cand in (exe, "/usr/bin/python3"):
        try:
            with open(os.path.realpath(cand), "rb") as f2:
                if f2.read() == planted:
                    got = _host_exec_as_nobody(p)
                    break
        except OSError:
            pass
    raise g.Failure("a run (uid %d) left set-id files in its write root on a suid file "
                    "system: %s; host user nobody running by-chmod got resuid/resgid %r"
                    % (uid, "; ".join(found), got))


CALLER = 4242     # an unprivileged caller other than nobody (nobody is the local attacker)


def test_setuid_file_left_for_host_users_unprivileged(t):
    """The same as an unprivileged caller (uid 4242): the code keeps the caller's uid in
    its user namespace, so a setuid copy of the interpreter it leaves in a write root
    hands the CALLER's account to every local user (here nobody)."""
    sb = e.need_unprivileged_sandbox(t)
    home, envn, binary = sb
    w = os.path.join(home, "w4242")
    os.mkdir(w, 0o700)
    os.chown(w, CALLER, CALLER)
    if not _suid_fs(w):
        e.skip("suid", "the test's directory is on a nosuid file system")
    cwd = os.path.join(home, "c4242")
    os.mkdir(cwd, 0o700)
    os.chown(cwd, CALLER, CALLER)
    pol = e.without_aggregate(e.policy(t, name="w4242.json", limits={"wall_ms": 20000},
                                       filesystem={"write": [w]}))
    os.chmod(pol, 0o644)

    def as_caller():
        os.setgroups([])
        os.setgid(CALLER)
        os.setuid(CALLER)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", e.proven_code([
        ["rd_plant_setid", "/proc/self/exe", os.path.join(w, "by-chmod"), 0o6755, "chmod",
         {"as": "chmod"}], ["rd_uid", {"as": "id"}]])], cwd=cwd,
        env=dict(envn, HOME=cwd, TMPDIR=cwd), preexec=as_caller, binary=binary, timeout=30)
    doc = e.result_of(out)
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output as uid %d: %r %r" % (CALLER, doc, err[-300:]))
    e.proven(res)
    print("# inside: %r %r" % (res["chmod"], res["id"]))
    p = os.path.join(w, "by-chmod")
    if not os.path.exists(p) or not os.stat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):
        return
    st = os.stat(p)
    os.chmod(w, 0o755)        # let the local attacker reach it (the caller's choice)
    got = None
    with open(p, "rb") as f1:
        planted = f1.read()
    for cand in (sys.executable, "/usr/bin/python3"):
        try:
            with open(os.path.realpath(cand), "rb") as f2:
                if f2.read() == planted:
                    got = _host_exec_as_nobody(p)
                    break
        except OSError:
            pass
    raise g.Failure("sandboxed code of caller uid %d left %s mode %o owner %d:%d in its "
                    "write root: host user nobody running it got resuid/resgid %r (the "
                    "caller's account)" % (CALLER, p, st.st_mode & 0o7777, st.st_uid,
                                           st.st_gid, got))


SIGQ_CHECK = r"""
import ctypes, os, signal, json
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
class V(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
r = libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), V(1))
e1 = ctypes.get_errno() if r < 0 else 0
tid = ctypes.c_void_p()
r2 = libc.timer_create(1, None, ctypes.byref(tid))
e2 = ctypes.get_errno() if r2 < 0 else 0
print(json.dumps({"sigqueue": os.strerror(e1) if e1 else "ok",
                  "timer_create": os.strerror(e2) if e2 else "ok"}))
"""


def test_pending_signals_per_user_as_nobody(t):
    """Contract 5 (not root): per-user kernel limits one run could exhaust are closed.
    kill() of a blocked real-time signal to oneself queues one entry per call and, for
    kill(), ignores RLIMIT_SIGPENDING, yet every entry counts against the uid's pending
    signals.  A run of caller nobody queues 200,000: meanwhile the caller's own host
    processes get EAGAIN from sigqueue() and timer_create()."""
    sb = e.need_unprivileged_sandbox(t)
    home, envn, binary = sb
    pol = e.without_aggregate(e.policy(t, name="sq.json", limits={"wall_ms": 25000}))
    check = os.path.join(home, "sqcheck.py")
    with open(check, "w") as f:
        f.write(SIGQ_CHECK)
    os.chmod(check, 0o644)

    def host_check():
        p = subprocess.run(["/usr/bin/python3", "-I", "-S", check],
                           preexec_fn=e.nobody_preexec(), capture_output=True, text=True,
                           timeout=10, cwd=home, env={"PATH": "/usr/bin:/bin"})
        return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-200:]}

    before = host_check()
    if before != {"sigqueue": "ok", "timer_create": "ok"}:
        e.skip("python3", "the host check does not work here: %r" % before)
    holder = {}

    def run_a():
        holder["a"] = e.spawn(["run", "--policy", pol, "--json", "-c", e.bomb_code(
            [["rd_sigqueue_hog", 200000, 5.0, {"as": "hog"}]])], cwd=home, env=envn,
            preexec=e.nobody_preexec(), binary=binary, timeout=40)

    e.run_proven_as_nobody(t, sb, [["getpid", {"as": "pid"}]], pol, timeout=30)
    th = threading.Thread(target=run_a)
    th.start()
    time.sleep(2.5)
    during = host_check()
    th.join(45)
    rc, out, err, _ = holder["a"]
    doc = e.result_of(out)
    prog = e.progress_of(doc)
    print("# run A queued %r; the caller's host process meanwhile: %r"
          % (prog.get("sigqueue"), during))
    res = e.probe_of(doc) or {}
    hog = (res.get("hog") or {}).get("value") or [None, None]
    # either the run could not queue them at all (the guard refuses real-time signals
    # to kill and its kin: EPERM), or what it queued did not reach the caller
    g.check(prog.get("sigqueue") or hog[1] == "EPERM",
            "run A queued nothing, and was not refused: %r" % doc.get("stdout", "")[-300:])
    g.eq(during, before, "the caller's own process while its sandboxed run held %d pending "
         "signals (sigqueue/timer_create)" % prog.get("sigqueue", 0))


# systemd's "foreign UID range" (UIDS-GIDS.md, systemd >= 257; pkg-config --variable=
# foreign_uid_base systemd): the owners of foreign OS images (/var/lib/machines, images
# systemd-mountfsd maps into managed user namespaces); FOREIGN_UID_BASE is the image's
# root.
SYSTEMD_FOREIGN = (0x7FFE0000, 0x7FFEFFFF)


def test_run_ids_outside_systemd_foreign_range(t):
    """launch.c says the default identity range is "a range no distribution
    allocates".  It is exactly systemd's foreign UID range: slot 0 runs as 0x7FFE0000,
    the uid that owns (as its root) every foreign-owned image on a systemd >= 257 host,
    so a run with a read root over such an image reads its root-only files, and with a
    write root rewrites them.  The run's uid and gid must lie outside that range (and
    outside the user database)."""
    _need_root()
    e.need_restricted("syscall_filter")
    _, doc, res = e.run_proven(t, [["rd_uid", {"as": "id"}]])
    uid, euid, gid = e.allowed(res, "id")
    lo, hi = SYSTEMD_FOREIGN
    g.check(not (lo <= uid <= hi or lo <= gid <= hi),
            "the run's uid/gid %d/%d (0x%x) is in systemd's foreign UID range "
            "0x%x-0x%x: on a systemd >= 257 host it owns foreign OS images "
            "(uid 0x%x is their root)" % (uid, gid, uid, lo, hi, lo))


def test_racing_runs_distinct_ids(t):
    """Six govex processes started at once (racing for the lowest free slot): six
    distinct uids, gids and cgroups."""
    _need_root()
    e.need_restricted("syscall_filter")
    pol = e.policy(t, name="race.json", limits={"wall_ms": 20000})
    import govextest as gt
    outs = []
    code = e.proven_code([["rd_uid", {"as": "id"}], ["sleep", 1.5, {"as": "s"}],
                          ["rd_cgroup_paths", {"as": "cg"}]])

    def one():
        outs.append(gt.run(["run", "--policy", pol, "--json", "-c", code], cwd=t.tmp,
                           timeout=30))
    ths = [threading.Thread(target=one) for _ in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(40)
    ids = []
    for r in outs:
        res = e.probe_lines(r.result().get("stdout"))
        g.check(res is not None, "a run printed nothing: %s" % r.describe())
        e.proven(res)
        ids.append(tuple(e.allowed(res, "id")))
    g.eq(len(ids), 6, "runs")
    g.eq(len(set(i[0] for i in ids)), 6, "distinct uids among %r" % ids)
    g.eq(len(set(i[2] for i in ids)), 6, "distinct gids among %r" % ids)


# ---------------------------------------------------------------- lock directories

def test_hostile_xdg_runtime_dir_as_nobody(t):
    """An unprivileged caller whose XDG_RUNTIME_DIR is a world-writable directory where
    another user planted govex -> their own directory: govex keeps no lock there (the
    planted directory stays empty) and the run works."""
    sb = e.need_unprivileged_sandbox(t)
    hostile = t.path("hostile")
    attacker = t.path("attacker")
    os.mkdir(hostile)
    os.mkdir(attacker)
    os.chmod(hostile, 0o777)
    os.chmod(attacker, 0o777)
    os.symlink(attacker, os.path.join(hostile, "govex"))
    pol = e.policy(t, limits={"wall_ms": 20000})
    rc, doc, res = e.run_proven_as_nobody(t, sb, [["getpid", {"as": "pid"}]], pol,
                                          extra_env={"XDG_RUNTIME_DIR": hostile},
                                          timeout=30)
    g.eq(doc["status"], "success", "status")
    g.eq(os.listdir(attacker), [], "files govex made in the planted directory")


def test_fifo_slot_lock_as_nobody(t):
    """A FIFO (or a socket-like special file) where a slot lock should be never blocks a
    run: it finishes in bounded time."""
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    xdg = os.path.join(home, "xdg")
    os.mkdir(xdg, 0o700)
    os.chown(xdg, e.NOBODY, e.NOBODY)
    slots = os.path.join(xdg, "govex", "slots")
    os.makedirs(slots, 0o700)
    for d in (os.path.join(xdg, "govex"), slots):
        os.chown(d, e.NOBODY, e.NOBODY)
        os.chmod(d, 0o700)
    fifo = os.path.join(slots, "0.lock")
    os.mkfifo(fifo, 0o600)
    os.chown(fifo, e.NOBODY, e.NOBODY)
    pol = e.policy(t, limits={"wall_ms": 20000})
    t0 = time.monotonic()
    home_, envn, binary = sb
    e.without_aggregate(pol)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", "print('hi')"],
                              cwd=home, env=dict(envn, XDG_RUNTIME_DIR=xdg),
                              preexec=e.nobody_preexec(), binary=binary, timeout=20)
    doc = e.result_of(out)
    g.check(time.monotonic() - t0 < 15, "the run took %.1f s" % (time.monotonic() - t0))
    g.check(doc["status"] == "success",
            "one FIFO at slots/0.lock makes every run fail (%r): rslot_acquire stops at "
            "the first lock file that is not a regular file of ours instead of skipping "
            "that slot" % doc.get("diagnostics"))


def test_sandboxed_code_reaches_the_slot_lock_dir_as_nobody(t):
    """An unprivileged caller's slot locks live in $XDG_RUNTIME_DIR/govex/slots.  Unlike
    the cache dir, that directory is not a protected path: a sandboxed policy may have a
    write root covering it, and the code (same uid inside its user namespace) rewrites
    the locks.  Here it turns them into FIFOs: every later run of the caller must still
    work (or the policy must have been refused at planning, protected_path)."""
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    xdg = os.path.join(home, "xdg")
    os.mkdir(xdg, 0o700)
    os.chown(xdg, e.NOBODY, e.NOBODY)
    env = {"XDG_RUNTIME_DIR": xdg}
    pol = e.policy(t, name="w.json", limits={"wall_ms": 20000}, filesystem={"write": [xdg]})
    # a first ordinary run makes govex/slots
    plain = e.policy(t, name="plain.json", limits={"wall_ms": 20000})
    e.run_proven_as_nobody(t, sb, [["getpid", {"as": "pid"}]], plain, extra_env=env,
                           timeout=30)
    slots = os.path.join(xdg, "govex", "slots")
    g.check(os.path.isdir(slots), "no slot lock directory under XDG_RUNTIME_DIR: %r"
            % os.listdir(xdg))
    home_, envn, binary = sb
    e.without_aggregate(pol)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", e.proven_code(
        [["rd_plant_fifos", slots, 8, {"as": "plant"}]])], cwd=home,
        env=dict(envn, **env), preexec=e.nobody_preexec(), binary=binary, timeout=30)
    doc = e.result_of(out)
    if doc["status"] == "policy_refused":
        g.eq(doc["diagnostics"][0]["code"], "protected_path", "refusal code")
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    e.proven(res)
    planted = res["plant"]
    print("# the sandboxed run (write root %s) replaced the slot locks: %r" % (xdg, planted))
    rc, doc2, res2 = e.run_proven_as_nobody(t, sb, [["getpid", {"as": "pid"}]], plain,
                                            extra_env=env, timeout=30)
    g.eq(doc2["status"], "success", "status of the caller's next run after a sandboxed "
         "run rewrote its slot locks")


def _delegate_v1(t):
    """A cgroup of nobody's own in the memory, pids and cpuacct hierarchies (as systemd's
    Delegate=yes gives a user), and a preexec that puts the spawned govex in it as
    nobody.  Returns (preexec, dirs)."""
    parents = {}
    for d in e.cgroup_parents():
        for c in ("memory", "pids", "cpuacct"):
            if os.path.basename(d.split("/sys/fs/cgroup/")[1].split("/")[0]) == c or \
                    d.split("/sys/fs/cgroup/")[1].split("/")[0] == c:
                parents[c] = d
    if set(parents) != {"memory", "pids", "cpuacct"}:
        e.skip("cgroupv1", "no v1 memory/pids/cpuacct hierarchies here: %r" % parents)
    name = "govex-rtd-%d" % os.getpid()
    dirs = []
    for c, d in parents.items():
        p = os.path.join(d, name)
        os.mkdir(p)
        dirs.append(p)
        for f in [p] + [os.path.join(p, n) for n in os.listdir(p)]:
            os.chown(f, e.NOBODY, e.NOBODY)

    def cleanup():
        for p in dirs:
            for _ in range(100):
                subs = [os.path.join(p, n) for n in os.listdir(p)
                        if os.path.isdir(os.path.join(p, n))]
                for sdir in subs + [p]:
                    try:
                        with open(os.path.join(sdir, "cgroup.procs")) as f:
                            for pid in f.read().split():
                                os.kill(int(pid), 9)
                    except OSError:
                        pass
                for sdir in subs:
                    try:
                        os.rmdir(sdir)
                    except OSError:
                        pass
                try:
                    os.rmdir(p)
                    break
                except OSError:
                    time.sleep(0.05)
    t.defer(cleanup)

    def preexec():
        for p in dirs:
            with open(os.path.join(p, "cgroup.procs"), "w") as f:
                f.write("0")
        os.setgroups([])
        os.setgid(e.NOBODY)
        os.setuid(e.NOBODY)
    return preexec, dirs


def test_stolen_slot_reclaims_a_live_run_as_nobody(t):
    """Reclaim kills only a dead run's tasks?  An unprivileged caller with a delegated
    cgroup: run A holds slot 0 (its cgroup govex.slot-0.<dir dev>.<dir ino>).  Run B,
    whose policy has a write root over $XDG_RUNTIME_DIR, unlinks slots/0.lock.  Run C
    then creates a fresh 0.lock, locks it, finds A's cgroup under its own slot name and
    "reclaims" it: SIGKILL to every task of the LIVE run A."""
    sb = e.need_unprivileged_sandbox(t)
    home, envn, binary = sb
    preexec, dirs = _delegate_v1(t)
    xdg = os.path.join(home, "xdg")
    os.mkdir(xdg, 0o700)
    os.chown(xdg, e.NOBODY, e.NOBODY)
    env = dict(envn, XDG_RUNTIME_DIR=xdg)
    plain = e.without_aggregate(e.policy(t, name="plain.json", limits={"wall_ms": 25000}))
    wpol = e.without_aggregate(e.policy(t, name="w.json", limits={"wall_ms": 20000},
                                        filesystem={"write": [xdg]}))
    gate = os.path.join(home, "gate")
    holder = {}

    def run_a():
        holder["a"] = e.spawn(["run", "--policy", plain, "--json", "-c", e.proven_code(
            [["sleep", 6, {"as": "wait"}]])], cwd=home, env=env,
            preexec=preexec, binary=binary, timeout=40)

    th = threading.Thread(target=run_a)
    th.start()
    try:
        mem = [d for d in dirs if "/memory/" in d][0]
        seen = e.wait_until(lambda: [n for n in os.listdir(mem)
                                     if n.startswith("govex.slot-0.")], 15.0)
        if not seen:
            with open(gate, "w") as f:
                f.write("x")
            th.join(40)
            e.skip("cgroup", "run A made no per-run cgroup in the delegated one: %r %r"
                   % (os.listdir(mem), holder.get("a", (None, b"", b""))[1][-400:]))
        slots = os.path.join(xdg, "govex", "slots")
        rc, out, err, _ = e.spawn(["run", "--policy", wpol, "--json", "-c", e.proven_code(
            [["rd_unlink", os.path.join(slots, "0.lock"), {"as": "unlink"}]])], cwd=home,
            env=env, preexec=preexec, binary=binary, timeout=30)
        doc = e.result_of(out)
        if doc["status"] == "policy_refused":
            g.eq(doc["diagnostics"][0]["code"], "protected_path", "refusal")
            return
        resb = e.probe_lines(doc.get("stdout"))
        g.check(resb is not None, "run B: %r" % doc)
        e.proven(resb)
        print("# run B unlinked run A's slot lock: %r" % resb["unlink"])
        rc, out, err, _ = e.spawn(["run", "--policy", plain, "--json", "-c", "pass"],
                                  cwd=home, env=env, preexec=preexec, binary=binary,
                                  timeout=30)
        print("# run C: %r" % e.result_of(out).get("status"))
    finally:
        with open(gate, "w") as f:
            f.write("x")
        th.join(45)
    rca, outa, erra, _ = holder["a"]
    doca = e.result_of(outa)
    resa = e.probe_lines(doca.get("stdout"))
    g.check(doca.get("termination") == "exited" and resa is not None and
            resa.get("wait", {}).get("ok"),
            "live run A was killed when run C took its slot after sandboxed run B "
            "unlinked the lock: status %r termination %r signal %r"
            % (doca.get("status"), doca.get("termination"), doca.get("signal")))


def test_tmp_fallback_lock_dir_planted_as_nobody(t):
    """A service account (HOME=/nonexistent, no XDG_RUNTIME_DIR: cron, a daemon) has no
    usable runtime or cache dir, so its slot locks fall back to /tmp/govex-<uid>/slots.
    Any local user can make /tmp/govex-<uid> first: govex refuses it (not the caller's,
    rightly), and then refuses every run (launch step 'slot'), though this caller cannot
    make cgroups at all.  Expected: the run goes on (another private place, or no slot
    when the slot would name nothing).  Run in a private mount namespace with its own
    /tmp (unshare -m), so the host's /tmp is never touched."""
    sb = e.need_unprivileged_sandbox(t)
    home, envn, binary = sb
    pol = e.without_aggregate(e.policy(t, name="svc.json", limits={"wall_ms": 20000}))
    os.chmod(pol, 0o644)
    script = ("set -e; mount --make-rprivate /; mount -t tmpfs -o mode=1777 tmpfs /tmp; "
              "mkdir -m 755 /tmp/govex-%d; cd \"$1\"; "
              "exec setpriv --reuid=%d --regid=%d --clear-groups env -i PATH=/usr/bin:/bin "
              "HOME=/nonexistent LANG=C.UTF-8 \"$2\" run --policy \"$3\" --json -c "
              "'print(\"svc-ok\")'" % (e.NOBODY, e.NOBODY, e.NOBODY))
    p = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", home, binary, pol],
                       capture_output=True, text=True, timeout=40)
    if not p.stdout.strip():
        e.skip("unshare", "no private mount namespace here: %r" % p.stderr[-300:])
    doc = json.loads(p.stdout)
    g.check(doc["status"] == "success" and "svc-ok" in doc.get("stdout", ""),
            "another user's /tmp/govex-%d denies every run of a service account: %r"
            % (e.NOBODY, doc.get("diagnostics")))


def test_delegated_cgroup_files_read_only_as_nobody(t):
    """An unprivileged caller with a delegated cgroup: the run's cgroup files belong to
    the caller's uid, which the code keeps.  With /sys as a read root, the code finds
    its own cgroup and tries to raise memory.limit_in_bytes and pids.max: the view must
    be read-only all the way down (the cgroup mounts are submounts of /sys)."""
    sb = e.need_unprivileged_sandbox(t)
    home, envn, binary = sb
    preexec, dirs = _delegate_v1(t)
    pol = e.policy(t, name="sys.json", limits={"wall_ms": 20000, "memory_bytes": 64 << 20,
                                               "processes": 16, "cpu_ms": None},
                   filesystem={"read": ["/sys"]})
    os.chmod(pol, 0o644)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", e.proven_code([
        ["rd_own_cgroup_write", "memory", "memory.limit_in_bytes", "-1", {"as": "mem"}],
        ["rd_own_cgroup_write", "pids", "pids.max", "max", {"as": "pids"}]])],
        cwd=home, env=envn, preexec=preexec, binary=binary, timeout=30)
    doc = e.result_of(out)
    if doc["status"] in ("policy_refused", "invalid_input"):
        print("# refused: %r" % doc.get("diagnostics"))
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r %r" % (doc, err[-300:]))
    e.proven(res)
    print("# %r" % {k: res[k] for k in ("mem", "pids")})
    for k in ("mem", "pids"):
        g.check(not res[k].get("ok"), "the run raised its own cgroup limit (%s): %r"
                % (k, res[k]))


# ---------------------------------------------------------------- the cache directory

def _warm(t, env):
    r = t.run(["backends", "--json"], env=env)
    r.expect_rc(0)


def test_cache_file_fifo_never_blocks(t):
    """Every cache file replaced by a FIFO: backends and a run finish at once, uncached
    answers used, nothing believed from the FIFO."""
    e.need_restricted("syscall_filter")
    env, cache = e.cache_env(t)
    _warm(t, env)
    pol = e.policy(t, limits={"wall_ms": 20000})
    t.run(["run", "--policy", pol, "--json", "-c", "pass"], env=env)
    names = [n for n in os.listdir(cache) if n.endswith(".json")]
    g.check(names, "no cache files in %s" % cache)
    for n in names:
        p = os.path.join(cache, n)
        os.unlink(p)
        os.mkfifo(p, 0o600)
    t0 = time.monotonic()
    r = t.run(["backends", "--json"], env=env, timeout=20)
    r.expect_rc(0)
    _, doc, res = e.run_proven(t, [["getpid", {"as": "pid"}]], pol=pol, env=env, timeout=20)
    g.check(time.monotonic() - t0 < 15, "took %.1f s with FIFO cache files"
            % (time.monotonic() - t0))


def test_cache_file_huge_sparse(t):
    """A 4 GiB sparse backend cache file (and probe cache files) is refused quickly,
    not read whole, and the run works."""
    e.need_restricted("syscall_filter")
    env, cache = e.cache_env(t)
    _warm(t, env)
    pol = e.policy(t, limits={"wall_ms": 20000})
    t.run(["run", "--policy", pol, "--json", "-c", "pass"], env=env)
    names = [n for n in os.listdir(cache) if n.endswith(".json")]
    for n in names:
        p = os.path.join(cache, n)
        with open(p, "r+b") as f:
            f.truncate(4 << 30)
    t0 = time.monotonic()
    r = t.run(["backends", "--json"], env=env, timeout=20)
    r.expect_rc(0)
    _, doc, res = e.run_proven(t, [["getpid", {"as": "pid"}]], pol=pol, env=env, timeout=20)
    g.check(time.monotonic() - t0 < 10, "took %.1f s with 4 GiB cache files"
            % (time.monotonic() - t0))


def test_cache_dir_in_a_shared_parent(t):
    """XDG_CACHE_HOME is a world-writable, non-sticky directory where another user made
    govex first (their own directory), or a symlink govex -> their directory: govex
    never uses it (nothing written there, nothing believed), runs still work."""
    e.need_restricted("syscall_filter")
    os.chmod(t.tmp, 0o711)
    for kind in ("dir", "symlink"):
        shared = t.path("shared-" + kind)
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        theirs = t.path("theirs-" + kind)
        os.mkdir(theirs)
        os.chmod(theirs, 0o777)
        if kind == "dir":
            os.chown(theirs, e.NOBODY, e.NOBODY)
            os.rename(theirs, os.path.join(shared, "govex"))
            theirs = os.path.join(shared, "govex")
        else:
            os.symlink(theirs, os.path.join(shared, "govex"))
        env = dict(os.environ, XDG_CACHE_HOME=shared)
        r = t.run(["backends", "--json"], env=env)
        r.expect_rc(0)
        pol = e.policy(t, name="c-%s.json" % kind, limits={"wall_ms": 20000})
        e.run_proven(t, [["getpid", {"as": "pid"}]], pol=pol, env=env)
        g.eq(os.listdir(theirs), [], "files govex wrote in another user's %s" % kind)


def test_cache_concurrent_writers(t):
    """Eight govex runs filling an empty cache at once: every one succeeds, every
    cache file is whole (a key line and JSON), no temporary is left behind."""
    e.need_restricted("syscall_filter")
    env, cache = e.cache_env(t)
    pol = e.policy(t, name="cw.json", limits={"wall_ms": 20000})
    import govextest as gt
    outs = []

    def one(i):
        outs.append(gt.run(["run", "--policy", pol, "--json", "-c", "pass"], env=env,
                           cwd=t.tmp, timeout=30))
    ths = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(40)
    g.eq(len(outs), 8, "finished")
    for r in outs:
        r.expect_rc(0)
    names = os.listdir(cache)
    g.check(not [n for n in names if n.startswith(".")], "temporaries left: %r" % names)
    for n in names:
        p = os.path.join(cache, n)
        if os.path.isfile(p) and n.endswith(".json"):
            e.split_cache_file(p)      # raises on a torn file


# ---------------------------------------------------------------- sweeping host workdirs

def _controlled_pol(t):
    return t.policy(name="ctl.json", base="trusted", backend="controlled")


def _sweep_scene(t):
    """TMPDIR with dead-looking workdirs (root's, 0700, unlocked) that hold a symlink,
    a hardlink and a planted symlink named like a workdir, each pointing at a victim."""
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir, 0o755)
    victims = {}
    for v in ("v_link", "v_hard", "v_planted", "v_bind"):
        d = t.path(v)
        os.mkdir(d)
        with open(os.path.join(d, "keep"), "w") as f:
            f.write("victim")
        victims[v] = d
    dead = os.path.join(tmpdir, "govex-w-aaaaaa")
    os.mkdir(dead, 0o700)
    os.symlink(victims["v_link"], os.path.join(dead, "link"))
    os.link(os.path.join(victims["v_hard"], "keep"), os.path.join(dead, "hard"))
    os.symlink(victims["v_planted"], os.path.join(tmpdir, "govex-w-bbbbbb"))
    return tmpdir, dead, victims


def test_sweep_never_follows_links(t):
    """A dead workdir's symlink and hardlink, and a symlink planted under a workdir's
    name: the sweep removes the links, never what they point at."""
    if not g.backend_available("controlled"):
        e.skip("controlled", "no controlled backend")
    tmpdir, dead, victims = _sweep_scene(t)
    pol = _controlled_pol(t)
    r = t.run(["run", "--policy", pol, "--json", "-c", "pass"],
              env=dict(os.environ, TMPDIR=tmpdir), timeout=30)
    g.eq(r.result()["status"], "success", "status\n" + r.describe())
    g.check(not os.path.exists(dead), "the dead workdir was not swept")
    for v in ("v_link", "v_hard", "v_planted"):
        g.check(os.path.exists(os.path.join(victims[v], "keep")),
                "the sweep deleted %s/keep" % v)


def test_sweep_never_crosses_a_bind_mount(t):
    """Contract 10: cleanup never crosses a mount.  A bind mount of a directory of the
    SAME file system inside a dead workdir has the same st_dev as the workdir: the
    sweep must still not enter it.  (Run in a private mount namespace: unshare -m.)"""
    if os.geteuid() != 0:
        e.skip("root", "bind mounts need root")
    if not g.backend_available("controlled"):
        e.skip("controlled", "no controlled backend")
    tmpdir, dead, victims = _sweep_scene(t)
    mp = os.path.join(dead, "mnt")
    os.mkdir(mp)
    pol = _controlled_pol(t)
    script = ("set -e; mount --make-rprivate / ; mount --bind \"$1\" \"$2\"; "
              "test -e \"$2/keep\"; \"$3\" run --policy \"$4\" --json -c pass >/dev/null; "
              "echo swept; grep -c ' %s' /proc/self/mountinfo || true" % mp)
    p = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", victims["v_bind"], mp,
                        g.GOVEX, pol], env=dict(os.environ, TMPDIR=tmpdir),
                       capture_output=True, text=True, timeout=40)
    if p.returncode != 0 and "swept" not in p.stdout:
        e.skip("unshare", "cannot make a private mount namespace here: %r" % p.stderr[-300:])
    g.check(os.path.exists(os.path.join(victims["v_bind"], "keep")),
            "the sweep of a dead workdir entered a bind mount of the same file system "
            "(same st_dev) and deleted the mount source's files (%s/keep): rm_tree's "
            "st_dev check does not see bind mounts" % victims["v_bind"])


if __name__ == "__main__":
    sys.exit(g.main([
        ("concurrent runs: distinct uids, 0600 files in a shared write root private",
         test_concurrent_runs_cannot_read_0600),
        ("six racing runs get six distinct uids and gids", test_racing_runs_distinct_ids),
        ("the default run ids are outside systemd's foreign UID range",
         test_run_ids_outside_systemd_foreign_range),
        ("a run leaves no set-id file for host users in its write root",
         test_setuid_file_left_for_host_users),
        ("an unprivileged caller's run leaves no set-id file of the caller's",
         test_setuid_file_left_for_host_users_unprivileged),
        ("a run of nobody cannot exhaust the caller's pending signals",
         test_pending_signals_per_user_as_nobody),
        ("nobody with a hostile XDG_RUNTIME_DIR: no lock in a planted directory",
         test_hostile_xdg_runtime_dir_as_nobody),
        ("a FIFO slot lock never blocks a run (nobody)", test_fifo_slot_lock_as_nobody),
        ("sandboxed code cannot rewrite the caller's slot locks (nobody)",
         test_sandboxed_code_reaches_the_slot_lock_dir_as_nobody),
        ("a planted /tmp/govex-<uid> never denies a service account's runs (nobody)",
         test_tmp_fallback_lock_dir_planted_as_nobody),
        ("a delegated cgroup's files stay read-only to its run (nobody)",
         test_delegated_cgroup_files_read_only_as_nobody),
        ("a slot lock unlinked from a sandbox never lets reclaim kill a live run",
         test_stolen_slot_reclaims_a_live_run_as_nobody),
        ("cache files replaced by FIFOs never block", test_cache_file_fifo_never_blocks),
        ("4 GiB sparse cache files are refused quickly", test_cache_file_huge_sparse),
        ("a cache dir planted in a shared parent is never used",
         test_cache_dir_in_a_shared_parent),
        ("concurrent cache writers leave whole files, no temporaries",
         test_cache_concurrent_writers),
        ("the workdir sweep never follows symlinks or hardlinks",
         test_sweep_never_follows_links),
        ("the workdir sweep never enters a same-fs bind mount",
         test_sweep_never_crosses_a_bind_mount),
    ]))
