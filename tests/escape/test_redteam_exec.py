#!/usr/bin/env python3
"""Second red team (rt-c): `subprocess: deny` means one execve (the interpreter's own
start), then none.  Attacks on the exec-once guard (a seccomp user-notification
listener held by the shim, PID 1 of the sandbox) and on the allowlist around it: exec
from a thread, racing and storming execs, execveat by fd or by name, /proc/self/fd,
stacking a permissive filter, signalling the shim, prctl options, raw clone flags; and
the file-system walls: hardlinks and renames from a write root to read roots.

Every exec target is the interpreter itself (bound, granted EXECUTE by Landlock), so
only the guard can refuse it; a success prints GOVEX-EXECED, which run_proven reports
as a failure.  Every payload runs behind the canary (run_proven).
"""
import os
import signal
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def _ok(doc):
    g.eq(doc["status"], "success", "status (the run goes on after refused execs)")


def test_exec_from_thread(t):
    e.need_restricted("subprocess_deny", "syscall_filter")
    _, doc, res = e.run_proven(t, [["rc_exec_thread", {"as": "thr"}]])
    g.eq(e.allowed(res, "thr"), "ENOSYS", "execve from a second thread")
    _ok(doc)


def test_exec_race_and_storm(t):
    """8 threads released together, 20 execs each: every one refused (ENOSYS: the shim
    closed its listener once the interpreter started, so the kernel answers without
    it), no hang, the run ends normally."""
    e.need_restricted("subprocess_deny", "syscall_filter")
    _, doc, res = e.run_proven(t, [["rc_exec_race", 8, 20, {"as": "race"}]])
    g.eq(e.allowed(res, "race"), {"ENOSYS": 160}, "racing execs")
    _ok(doc)


def test_execveat_variants(t):
    """execveat is off the allowlist (ENOSYS, before the guard is even asked): by fd
    (O_RDONLY and O_PATH, AT_EMPTY_PATH) and by name; execve of /proc/self/fd/N is
    the guard's (ENOSYS, its listener closed)."""
    e.need_restricted("subprocess_deny", "syscall_filter")
    e.need_x86_64()
    ops = [["rc_execveat_fd", False, {"as": "fd"}], ["rc_execveat_fd", True, {"as": "opath"}],
           ["rc_execveat_path", {"as": "name"}], ["rc_exec_procfd", {"as": "procfd"}]]
    _, doc, res = e.run_proven(t, ops)
    for label in ("fd", "opath", "name"):
        e.denied(res, label, "ENOSYS")
    e.denied(res, "procfd", "ENOSYS")
    _ok(doc)


def test_stacked_filter_cannot_allow_exec(t):
    """prctl(PR_SET_SECCOMP) is allowed (prctl is on the list): a stacked filter that
    answers ALLOW, or TRACE, cannot override the guard's notification."""
    e.need_restricted("subprocess_deny", "syscall_filter")
    e.need_x86_64()
    _, doc, res = e.run_proven(t, [["rc_stack_trace_then_exec", {"as": "trace"}],
                                   ["rc_stack_allow_then_exec", {"as": "allow"}]])
    # the guard's USER_NOTIF outranks TRACE and ALLOW; its listener is closed: ENOSYS
    e.denied(res, "trace", "ENOSYS")
    e.denied(res, "allow", "ENOSYS")
    _ok(doc)


def test_signal_the_shim(t):
    """The shim (pid 1) holds the listener: signals from inside do not reach it (as
    root the program is another uid: EPERM; unprivileged, pid 1 of a PID namespace
    ignores signals it has no handler for) and exec stays refused afterwards."""
    e.need_restricted("subprocess_deny", "process_tree_kill")
    sigs = [int(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1,
                             signal.SIGPIPE, signal.SIGCHLD, signal.SIGSTOP, signal.SIGKILL)]
    _, doc, res = e.run_proven(t, [["getpid", {"as": "me"}],
                                   ["rc_signal_shim"] + sigs + [{"as": "sig"}]])
    if e.allowed(res, "me") == 1:
        e.skip("shim", "the program is pid 1 here")
    got = e.allowed(res, "sig")
    g.eq(got[-1], "ENOSYS", "execve after signalling the shim")
    if os.geteuid() == 0:
        g.eq([x[1] for x in got[:-1]], ["EPERM"] * len(sigs),
             "signals to the root shim from the run's uid")
    _ok(doc)


PR_SET_MM, PR_SET_MM_START_CODE = 35, 1
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 47, 2
PR_SET_SECUREBITS = 28
PR_SET_IO_FLUSHER = 57
PR_SET_MEMORY_MERGE = 67
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SPECULATION_CTRL = 53


def test_prctl_options(t):
    """prctl is allowed whole: the options that could reach past the process need a
    capability the sandbox does not have (EPERM); the harmless ones work."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    ops = [["rc_prctl", PR_SET_MM, PR_SET_MM_START_CODE, 0x400000, {"as": "set_mm"}],
           ["rc_prctl", PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21, {"as": "ambient"}],
           ["rc_prctl", PR_SET_SECUREBITS, 0, {"as": "securebits"}],
           ["rc_prctl", PR_SET_IO_FLUSHER, 1, {"as": "io_flusher"}],
           ["rc_prctl", PR_SET_CHILD_SUBREAPER, 1, {"as": "subreaper"}],
           ["rc_prctl", PR_SET_PDEATHSIG, 9, {"as": "pdeathsig"}],
           ["rc_prctl", PR_SET_DUMPABLE, 1, {"as": "dumpable"}]]
    _, doc, res = e.run_proven(t, ops)
    for label in ("set_mm", "ambient", "securebits", "io_flusher"):
        e.denied(res, label, "EPERM")
    for label in ("subreaper", "pdeathsig", "dumpable"):
        g.eq(e.allowed(res, label), 0, label)
    _ok(doc)


SYSCALLS_OFF = {
    # name: (number, args)  -- each is off the allowlist: ENOSYS whatever the arguments
    "personality": (135, [0x0400000, 0, 0, 0, 0, 0]),      # READ_IMPLIES_EXEC
    "name_to_handle_at": (303, [-100, 0, 0, 0, 0, 0]),
    "open_by_handle_at": (304, [-100, 0, 0, 0, 0, 0]),
    "mbind": (237, [-1] * 6), "set_mempolicy": (238, [-1] * 6),
    "migrate_pages": (256, [1, -1, 0, 0, 0, 0]), "move_pages": (279, [1] + [0] * 5),
    "kcmp": (312, [1, 1, 0, 0, 0, 0]), "seccomp": (317, [3, 0, 0, 0, 0, 0]),  # GET_NOTIF_SIZES
    "process_vm_readv": (310, [1, 0, 0, 0, 0, 0]), "ptrace": (101, [16, 1, 0, 0, 0, 0]),
    "memfd_create": (319, [0, 0, 0, 0, 0, 0]), "clone3": (435, [0, 0, 0, 0, 0, 0]),
    "pidfd_getfd": (438, [0, 0, 0, 0, 0, 0]), "vmsplice": (278, [-1] * 6),
    "process_madvise": (440, [-1] * 6), "memfd_secret": (447, [0] * 6),
    "execveat": (322, [-1] * 6), "unshare": (272, [0x10000000, 0, 0, 0, 0, 0]),
    "setns": (308, [-1, 0, 0, 0, 0, 0]), "ioprio_set": (251, [1, 0, 0x6000, 0, 0, 0]),
    "sched_setattr": (314, [0, 0, 0, 0, 0, 0]), "sched_setscheduler": (144, [0, 1, 0, 0, 0, 0]),
}


def test_dangerous_syscalls_off_the_list(t):
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    nums = [v[0] for v in SYSCALLS_OFF.values()]
    args = {str(v[0]): v[1] for v in SYSCALLS_OFF.values()}
    _, doc, res = e.run_proven(t, [["sweep", nums, args, {"as": "sweep"}]])
    got = e.allowed(res, "sweep")
    bad = {n: got.get(str(v[0])) for n, v in SYSCALLS_OFF.items()
           if got.get(str(v[0])) != "ENOSYS"}
    g.check(not bad, "allowed (not ENOSYS): %r" % bad)
    _ok(doc)


def test_ksm_opt_in_refused(t):
    """FINDING (hardening): prctl(PR_SET_MEMORY_MERGE) (no capability needed on 6.18)
    and madvise(MADV_MERGEABLE) let sandboxed code put its memory into KSM, which
    deduplicates pages across every process of the host: where ksmd runs, the timing
    of a write to a merged page tells the run whether another run or a host process
    holds a page with the same bytes (the known KSM side channel).  Expected: refused
    (EPERM) by the guard filter, as F_SETPIPE_SZ is."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    _, doc, res = e.run_proven(t, [["rc_prctl", PR_SET_MEMORY_MERGE, 1, {"as": "prctl"}],
                                   ["rc_madvise_mergeable", {"as": "madvise"}]])
    e.denied(res, "prctl", "EPERM")
    e.denied(res, "madvise", "EPERM")
    _ok(doc)


CLONE_VM, CLONE_VFORK, CLONE_THREAD, CLONE_SIGHAND = 0x100, 0x4000, 0x10000, 0x800
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWTIME, CLONE_PARENT = 0x10000000, 0x20000, 0x80, 0x8000


def test_clone_flags(t):
    """Raw clone: a process with bits above 31 set (the kernel reads the low 32), a
    vfork, CLONE_PARENT, a thread asking for namespaces: all EPERM."""
    e.need_restricted("subprocess_deny", "syscall_filter")
    e.need_x86_64()
    thr = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD
    ops = [["rc_clone_flags", int(signal.SIGCHLD) | (1 << 32), {"as": "fork_hi"}],
           ["rc_clone_flags", int(signal.SIGCHLD) | (CLONE_THREAD << 32), {"as": "fork_hithread"}],
           ["rc_clone_flags", CLONE_VM | CLONE_VFORK | int(signal.SIGCHLD), {"as": "vfork"}],
           ["rc_clone_flags", CLONE_PARENT | int(signal.SIGCHLD), {"as": "parent"}],
           ["rc_clone_flags", thr | CLONE_NEWUSER, {"as": "thr_user"}],
           ["rc_clone_flags", thr | CLONE_NEWNS, {"as": "thr_ns"}],
           ["rc_clone_flags", thr | CLONE_NEWTIME, {"as": "thr_time"}]]
    _, doc, res = e.run_proven(t, ops)
    for label in ("fork_hi", "fork_hithread", "vfork", "parent", "thr_user", "thr_ns",
                  "thr_time"):
        e.denied(res, label, "EPERM")
    _ok(doc)


def _dirs(t):
    """A write root and a read root on the same host file system (outside /tmp)."""
    base = tempfile.mkdtemp(prefix="govex-rc-", dir="/var/tmp")
    t.defer(shutil.rmtree, base, True)
    os.chmod(base, 0o755)
    w, r = os.path.join(base, "w"), os.path.join(base, "r")
    os.mkdir(w, 0o777)
    os.mkdir(r, 0o755)
    os.chmod(w, 0o777)
    with open(os.path.join(r, "host.txt"), "w") as f:
        f.write("host file\n")
    os.chmod(os.path.join(r, "host.txt"), 0o666)   # DAC would allow a write: only the mounts stop it
    return base, w, r


def test_links_and_renames_across_binds(t):
    """A hardlink in the write root to a file of a read root (same host file system)
    and renames between them cross mounts: EXDEV; the read root's file is unchanged."""
    e.need_restricted("fs_write_allowlist")
    base, w, r = _dirs(t)
    pol = e.policy(t, filesystem={"read": [r], "write": [w]})
    ops = [["rc_hardlink", os.path.join(r, "host.txt"), os.path.join(w, "alias"), {"as": "link"}],
           ["rc_write_new", os.path.join(w, "mine"), {"as": "mine"}],
           ["rc_rename", os.path.join(w, "mine"), os.path.join(r, "planted"), {"as": "into_ro"}],
           ["rc_rename", os.path.join(r, "host.txt"), os.path.join(w, "stolen"), {"as": "out_ro"}],
           ["rc_write_new", os.path.join(r, "host.txt"), {"as": "write_ro"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol)
    e.denied(res, "link", "EXDEV")
    e.allowed(res, "mine")
    e.denied(res, "into_ro", "EXDEV")
    e.denied(res, "out_ro", "EXDEV")
    e.denied_any(res, "write_ro", ("EROFS", "EACCES"))
    with open(os.path.join(r, "host.txt")) as f:
        g.eq(f.read(), "host file\n", "the read root's file")
    g.check(not os.path.exists(os.path.join(r, "planted")), "a file was planted in a read root")
    g.check(os.path.exists(os.path.join(w, "mine")), "the write root's own file")
    _ok(doc)


def test_roots_swapped_for_symlinks_between_runs(t):
    """One runtime (its mount plan made once, as in a library user or `govex mcp`): after
    a first run, the write root and the read root are each replaced by a symlink to a
    host directory no policy names.  The next run must not write into it nor read from
    it (capture opens with RESOLVE_NO_SYMLINKS: the run fails to start, or the root is
    simply absent)."""
    e.need_restricted("fs_write_allowlist", "fs_read_allowlist")
    base, w, r = _dirs(t)
    secret = os.path.join(base, "secret")
    os.mkdir(secret, 0o777)
    os.chmod(secret, 0o777)
    with open(os.path.join(secret, "host.txt"), "w") as f:
        f.write("SECRET-host\n")
    os.chmod(os.path.join(secret, "host.txt"), 0o644)
    with open(os.path.join(r, "host.txt"), "w") as f:
        f.write("READ-root\n")
    pol = g.preset("strict")
    pol["backend"] = "restricted"
    pol["filesystem"] = dict(pol["filesystem"], read=[r], write=[w])
    code = ("import os\n"
            "try:\n    print('R', open(%r).read().strip())\n"
            "except OSError as ex:\n    print('R', type(ex).__name__)\n"
            "try:\n    open(%r, 'w').write('planted')\n    print('W ok')\n"
            "except OSError as ex:\n    print('W', type(ex).__name__)\n"
            % (os.path.join(r, "host.txt"), os.path.join(w, "planted.txt")))
    rt = e.RcRuntime(pol)
    t.defer(rt.close)
    first = rt.run(code)
    g.eq(first.get("status"), "success", "first run: %r" % first)
    g.eq(first.get("stdout"), "R READ-root\nW ok\n", "first run's output")
    os.unlink(os.path.join(w, "planted.txt"))
    os.rename(w, w + ".orig")
    os.symlink(secret, w)
    os.rename(r, r + ".orig")
    os.symlink(secret, r)
    second = rt.run(code)
    out = second.get("stdout") or ""
    g.check("SECRET-host" not in out, "the read root followed a swapped symlink: %r" % second)
    g.check(not os.path.exists(os.path.join(secret, "planted.txt")),
            "the write root followed a swapped symlink: %r" % second)


def test_setuid_files_in_a_write_root(t):
    """FINDING: the mounts inside are nosuid, but a file the run leaves in a write root
    is a host file: the run can make it set-user-ID (chmod, fchmod, or O_CREAT with
    mode 04755), owned by the run's uid.  Any host user who can reach the directory then
    runs code as that uid -- as root, the sandbox uid base+N a later run in slot N gets
    (its processes, its files); as an unprivileged caller, the CALLER's own uid.
    Demonstrated here: after the run, uid nobody executes the file and gets the run's
    uid as its euid.  Expected: chmod/fchmod/fchmodat/open/creat/mkdir with S_ISUID or
    S_ISGID refused (EPERM) by the guard filter (as Flatpak does), so no such file
    exists on the host."""
    e.need_restricted("fs_write_allowlist")
    base, w, r = _dirs(t)
    if not os.path.exists("/usr/bin/python3"):
        e.skip("python3", "no /usr/bin/python3")
    py = ""     # the sandbox's own interpreter (sys.executable inside)
    pol = e.policy(t, filesystem={"read": [r], "write": [w]},
                   python={"interpreter": "/usr/bin/python3", "site": False})
    ops = [["rc_setuid_file", py, os.path.join(w, "su-chmod"), "chmod", {"as": "chmod"}],
           ["rc_setuid_file", py, os.path.join(w, "su-fchmod"), "fchmod", {"as": "fchmod"}],
           ["rc_setuid_file", py, os.path.join(w, "su-create"), "create", {"as": "create"}],
           ["rc_setuid_file", py, os.path.join(w, "sg-chmod"), "chmod", 0o2755, {"as": "sgid"}],
           ["ids", {"as": "ids"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol)
    found = {}
    for n in ("su-chmod", "su-fchmod", "su-create", "sg-chmod"):
        p = os.path.join(w, n)
        if os.path.exists(p):
            st = os.stat(p)
            if st.st_mode & 0o6000:
                found[n] = (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid)
    proof = None
    if found and os.geteuid() == 0:
        import subprocess
        victim = os.path.join(w, "su-chmod" if "su-chmod" in found else sorted(found)[0])
        try:
            proof = subprocess.run([victim, "-I", "-S", "-c",
                                    "import os; print(os.getuid(), os.geteuid(), os.getgid(), os.getegid())"],
                                   preexec_fn=e.nobody_preexec(), capture_output=True,
                                   timeout=20).stdout.decode().strip()
        except Exception as ex:  # noqa: BLE001
            proof = "could not run: %s" % ex
    g.check(not found, "set-id files the run left on the host: %r; uid %d running one got "
            "'uid euid gid egid' = %r" % (found, e.NOBODY, proof))
    for label in ("chmod", "fchmod", "sgid"):
        e.denied(res, label, "EPERM")
    # at creation the kernel may strip the bit itself; refused or stripped, never set
    got = res.get("create") or {}
    g.check(not got.get("ok") or not (got.get("value") or 0) & 0o6000,
            "open(O_CREAT, 04755): %r" % got)


def test_setuid_files_as_unprivileged_caller(t):
    """FINDING (the severe form): the caller is an ordinary user (here nobody, 65534);
    the run keeps the caller's uid, so the set-user-ID file it leaves in the write root
    is the CALLER's: a third user (uid 4242 here) who can reach the directory executes it
    and gets the caller's uid as its euid -- untrusted code planted a backdoor into the
    caller's account.  Expected: chmod with S_ISUID/S_ISGID refused (EPERM)."""
    sb = e.need_unprivileged_sandbox(t)
    base, w, r = _dirs(t)
    os.chmod(w, 0o777)
    pol = e.policy(t, name="nb.json", filesystem={"read": [r], "write": [w]},
                   python={"interpreter": "/usr/bin/python3", "site": False})
    os.chmod(pol, 0o644)
    ops = [["rc_setuid_file", "", os.path.join(w, "su"), "chmod", {"as": "chmod"}]]
    rc, doc, res = e.run_proven_as_nobody(t, sb, ops, pol)
    p = os.path.join(w, "su")
    proof = None
    if os.path.exists(p) and os.stat(p).st_mode & 0o4000:
        import subprocess

        def other():
            os.setgroups([])
            os.setgid(4242)
            os.setuid(4242)
        try:
            proof = subprocess.run([p, "-I", "-S", "-c",
                                    "import os; print(os.getuid(), os.geteuid())"],
                                   preexec_fn=other, capture_output=True,
                                   timeout=20).stdout.decode().strip()
        except Exception as ex:  # noqa: BLE001
            proof = "could not run: %s" % ex
        st = os.stat(p)
        raise g.Failure("the run left %s mode %o owned by uid %d (the caller); uid 4242 "
                        "running it got 'uid euid' = %r" % (p, st.st_mode & 0o7777,
                                                            st.st_uid, proof))
    e.denied(res, "chmod", "EPERM")


def test_signal_the_shim_as_nobody(t):
    """Unprivileged, the shim and the program share a uid, and the shim (a clone of the
    govex CLI) still has the CLI's SIGINT/SIGTERM/SIGHUP handlers, so those signals from
    inside do reach pid 1.  They must change nothing: execve stays refused, the run ends
    normally.  (Hardening note: the shim should reset every handler to SIG_DFL, or be
    made with CLONE_CLEAR_SIGHAND, so that no host code runs on the sandbox's demand.)"""
    sb = e.need_unprivileged_sandbox(t)
    pol = e.policy(t, name="nb.json")
    os.chmod(pol, 0o644)
    sigs = [int(signal.SIGTERM), int(signal.SIGINT), int(signal.SIGHUP), int(signal.SIGUSR1)]
    rc, doc, res = e.run_proven_as_nobody(t, sb, [["getpid", {"as": "me"}],
                                                  ["rc_signal_shim"] + sigs + [{"as": "sig"}],
                                                  ["rc_exec_thread", {"as": "thr"}]], pol)
    if e.allowed(res, "me") == 1:
        e.skip("shim", "the program is pid 1 here")
    got = e.allowed(res, "sig")
    g.eq(got[-1], "ENOSYS", "execve after signalling the shim")
    g.eq(e.allowed(res, "thr"), "ENOSYS", "execve from a thread after the signals")
    g.eq(doc["status"], "success", "status")


def test_file_capabilities_in_a_write_root(t):
    """security.capability (file capabilities: cap_setuid+ep) and trusted.* xattrs on a
    file the run made in a write root: EPERM (no CAP_SETFCAP / CAP_SYS_ADMIN); user.*
    works; the host file carries no capability."""
    e.need_restricted("fs_write_allowlist")
    base, w, r = _dirs(t)
    pol = e.policy(t, filesystem={"read": [r], "write": [w]})
    # vfs_cap_data v2: magic 0x02000000 | EFFECTIVE, permitted = CAP_SETUID (bit 7)
    caps = (0x02000001).to_bytes(4, "little") + (1 << 7).to_bytes(4, "little") + bytes(12)
    f = os.path.join(w, "capfile")
    ops = [["rc_setxattr", f, "security.capability", caps.hex(), {"as": "fcaps"}],
           ["rc_setxattr", f, "trusted.govex", "01", {"as": "trusted"}],
           ["rc_setxattr", f, "user.govex", "01", {"as": "user"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol)
    e.denied(res, "fcaps", "EPERM")
    e.denied(res, "trusted", "EPERM")
    try:
        got = os.getxattr(f, "security.capability")
    except OSError:
        got = None
    g.eq(got, None, "security.capability on the host file")


if __name__ == "__main__":
    sys.exit(g.main([
        ("exec once: execve from a second thread is refused", test_exec_from_thread),
        ("exec once: 8 racing threads x 20 execs, all refused", test_exec_race_and_storm),
        ("exec once: execveat by fd/O_PATH/name ENOSYS, /proc/self/fd ENOSYS",
         test_execveat_variants),
        ("exec once: a stacked ALLOW/TRACE filter cannot let execve through",
         test_stacked_filter_cannot_allow_exec),
        ("exec once: signalling the shim changes nothing", test_signal_the_shim),
        ("exec once: signals to the shim as nobody (inherited handlers) change nothing",
         test_signal_the_shim_as_nobody),
        ("allowlist: prctl options that reach past the process are EPERM",
         test_prctl_options),
        ("allowlist: KSM opt-in (PR_SET_MEMORY_MERGE, MADV_MERGEABLE) is refused",
         test_ksm_opt_in_refused),
        ("allowlist: personality, handles, mempolicy, kcmp, seccomp(2) ... are ENOSYS",
         test_dangerous_syscalls_off_the_list),
        ("allowlist: raw clone flags (high bits, vfork, CLONE_PARENT, ns) are EPERM",
         test_clone_flags),
        ("mounts: hardlinks and renames from a write root to a read root are EXDEV",
         test_links_and_renames_across_binds),
        ("mounts: no set-user/group-ID file is left on the host in a write root",
         test_setuid_files_in_a_write_root),
        ("mounts: no set-user-ID file of the CALLER is left in a write root (as nobody)",
         test_setuid_files_as_unprivileged_caller),
        ("mounts: no file capability or trusted xattr on a write root's file",
         test_file_capabilities_in_a_write_root),
        ("mounts: roots swapped for symlinks between runs of one runtime are not followed",
         test_roots_swapped_for_symlinks_between_runs),
    ]))
