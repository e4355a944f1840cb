#!/usr/bin/env python3
"""Isolation (issue 9 items 3, 4, 9, 10, 13 and their class): the sandbox reaches no
host socket, FIFO, device, tty, process or kernel object it could use against the
host or another run; /proc shows nothing of the host; nothing but the interpreter is
executed.  Every payload runs behind the probe's canary (escapetest.proven).

The contract is /work/notes/contract.md, decisions 5, 6 and 7.
"""
import json
import os
import pty
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

LOADER = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
LIBC_BANNER = "GNU C Library"


def _libc():
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split(None, 5)[-1].strip()
            if re.search(r"/libc(\.so\.6|-[0-9.]+\.so)$", p):
                return os.path.realpath(p)
    e.skip("glibc", "no libc.so.6 mapped in this process")


def outside_tmp(t):
    """A directory of this test that is not beneath /tmp (read roots beneath /tmp are
    refused by contract 6), traversable by nobody."""
    d = tempfile.mkdtemp(prefix="govex-rt-", dir="/var/tmp")
    os.chmod(d, 0o755)
    t.defer(shutil.rmtree, d, True)
    return d


# ------------------------------------------------------------------ item 3: sockets

class UnixListener:
    """A pathname socket, mode 0600, counting connections."""

    def __init__(self, path, owner=None):
        self.path = path
        self.hits = []
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.bind(path)
        os.chmod(path, 0o600)
        if owner is not None:
            os.chown(path, owner, owner)
        self.s.listen(8)
        self.s.settimeout(0.2)
        self.stop = False
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _loop(self):
        while not self.stop:
            try:
                c, _ = self.s.accept()
                self.hits.append(c.recv(64))
                c.close()
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.th.join(2)
        self.s.close()


SOCKET_DENIED = ("EACCES", "EAFNOSUPPORT")   # contract 7: network deny, any family


def _socket_ops(sock_path, abstract):
    return [["unix_socket_kind", "stream", {"as": "unix_stream"}],
            ["unix_socket_kind", "dgram", {"as": "unix_dgram"}],
            ["unix_connect", sock_path, {"as": "pathname"}],
            ["abstract", abstract, {"as": "abstract"}],
            ["socketpair_x", {"as": "socketpair"}]]


def _check_sockets(res, ls, abstract_hits):
    for label in ("unix_stream", "unix_dgram", "pathname", "abstract"):
        e.denied_any(res, label, SOCKET_DENIED)
    g.eq(e.allowed(res, "socketpair"), "x", "socketpair(AF_UNIX) (asyncio needs it)")
    g.eq(ls.hits, [], "connections that reached the 0600 socket in the read root")
    g.eq(abstract_hits, [], "connections that reached the host's abstract socket")


def _abstract_listener(t):
    name = "govex-rt-%s" % uuid.uuid4().hex
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + name)
    s.listen(8)
    s.settimeout(0.2)
    hits = []
    stop = []

    def loop():
        while not stop:
            try:
                c, _ = s.accept()
                hits.append(1)
                c.close()
            except OSError:
                pass
    th = threading.Thread(target=loop, daemon=True)
    th.start()

    def close():
        stop.append(1)
        th.join(2)
        s.close()
    t.defer(close)
    return name, hits


def test_unix_sockets_in_read_root(t):
    """Item 3: a 0600 socket (an ssh-agent's) in a read root, the host's abstract
    sockets: socket(AF_UNIX) itself is refused under network: deny."""
    e.need_restricted("network_deny")
    d = outside_tmp(t)
    agent = os.path.join(d, "agent.sock")
    ls = UnixListener(agent)
    t.defer(ls.close)
    abstract, ahits = _abstract_listener(t)
    pol = e.policy(t, filesystem={"read": [d]})
    _, doc, res = e.run_proven(t, _socket_ops(agent, abstract), pol=pol)
    _check_sockets(res, ls, ahits)


def test_unix_sockets_in_read_root_as_nobody(t):
    """The same with the caller's own socket (same uid: file permissions do not help)."""
    sb = e.need_unprivileged_sandbox(t)
    d = outside_tmp(t)
    agent = os.path.join(d, "agent.sock")
    ls = UnixListener(agent, owner=e.NOBODY)
    t.defer(ls.close)
    abstract, ahits = _abstract_listener(t)
    pol = e.policy(t, filesystem={"read": [d]})
    os.chmod(pol, 0o644)
    _, doc, res = e.run_proven_as_nobody(t, sb, _socket_ops(agent, abstract), pol)
    _check_sockets(res, ls, ahits)


# ------------------------------------------------------------------ item 4: special files

def test_read_root_beneath_tmp_refused(t):
    """Item 4 / contract 6: a read root beneath /tmp (where Landlock cannot make it
    read-only, so its FIFOs were writable) is refused at planning."""
    e.need_restricted("fs_read_allowlist")
    ro = os.path.join("/tmp", "govex-rt-%s" % uuid.uuid4().hex)
    os.mkdir(ro)
    t.defer(shutil.rmtree, ro, True)
    fifo = os.path.join(ro, "fifo")
    os.mkfifo(fifo, 0o600)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    t.defer(os.close, rfd)
    ops = [["open_flags", fifo, "O_WRONLY", "O_NONBLOCK", {"as": "fifo"}]]
    # a read root of /tmp itself is the host's /tmp, read-only (the run gets no private
    # /tmp then): its FIFOs are under a read-only Landlock rule (EACCES)
    pol = e.policy(t, name="tmp.json", filesystem={"read": ["/tmp"]})
    _, doc, res = e.run_proven(t, ops, pol=pol)
    e.denied(res, "fifo", "EACCES")
    for i, root in enumerate([ro]):
        pol = e.policy(t, name="f%d.json" % i, filesystem={"read": [root]})
        for cmd in ("plan", "run"):
            r = t.run([cmd, "--policy", pol, "--json", "-c", e.proven_code(ops)])
            doc = r.json()
            # refused at planning, before anything runs
            if doc.get("status") != "policy_refused":
                got = ""
                try:
                    got = os.read(rfd, 64)
                except BlockingIOError:
                    pass
                raise g.Failure("read root %s beneath /tmp accepted by %s (the FIFO got %r)"
                                % (root, cmd, got))
            e.refused(r, "read_root_under_tmp", root)


def test_special_files_in_read_root(t):
    """A FIFO and a device node in a read root outside /tmp: the FIFO is not writable
    (read-only Landlock rule: EACCES), the device not openable (nodev: EACCES)."""
    e.need_restricted("fs_read_allowlist", "landlock")
    d = outside_tmp(t)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo, 0o666)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    t.defer(os.close, rfd)
    ops = [["open_flags", fifo, "O_WRONLY", "O_NONBLOCK", {"as": "fifo_w"}]]
    if os.geteuid() == 0:
        os.mknod(os.path.join(d, "zero"), 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        os.mknod(os.path.join(d, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        ops += [["open_flags", os.path.join(d, "zero"), "O_RDONLY", {"as": "dev_r"}],
                ["open_flags", os.path.join(d, "null"), "O_WRONLY", {"as": "dev_w"}]]
    pol = e.policy(t, filesystem={"read": [d]})
    _, doc, res = e.run_proven(t, ops, pol=pol)
    e.denied(res, "fifo_w", "EACCES")
    try:
        got = os.read(rfd, 64)
    except BlockingIOError:
        got = b""
    g.eq(got, b"", "bytes written into the host's FIFO")
    if os.geteuid() == 0:
        e.denied(res, "dev_r", "EACCES")
        e.denied(res, "dev_w", "EACCES")


def test_hardlinks_to_host_files(t):
    """Hard links from a writable place to a host file the sandbox can see: EXDEV
    (a different mount) everywhere; the host file keeps one link."""
    e.need_restricted("fs_write_allowlist")
    d = outside_tmp(t)
    ro = os.path.join(d, "ro")
    rw = os.path.join(d, "rw")
    os.mkdir(ro, 0o755)
    os.mkdir(rw, 0o777)
    os.chmod(rw, 0o777)
    secret = os.path.join(ro, "secret")
    with open(secret, "w") as f:
        f.write("s3cret")
    os.chmod(secret, 0o644)
    libc = _libc()
    pol = e.policy(t, filesystem={"read": [ro], "write": [rw]})
    ops = [["link", secret, "wd-link", {"as": "ro_to_workdir"}],
           ["link", secret, "/tmp/l1", {"as": "ro_to_tmp"}],
           ["link", secret, os.path.join(rw, "l2"), {"as": "ro_to_rw"}],
           ["link", libc, os.path.join(rw, "l3"), {"as": "lib_to_rw"}],
           ["link", libc, "/tmp/l4", {"as": "lib_to_tmp"}],
           ["write", "/tmp/own", {"as": "own"}],
           ["link", "/tmp/own", "/tmp/own2", {"as": "same_mount"}]]
    _, doc, res = e.run_proven(t, ops, pol=pol)
    g.eq(e.allowed(res, "same_mount"), 2, "a link within /tmp (the op works)")
    for label in ("ro_to_workdir", "ro_to_tmp", "ro_to_rw", "lib_to_rw", "lib_to_tmp"):
        e.denied(res, label, "EXDEV")
    g.eq(os.stat(secret).st_nlink, 1, "links of the host file")
    g.eq(os.listdir(rw), [], "files made in the write root")


# ------------------------------------------------------------------ tty, /proc/<pid>, pidfd

TIOCSTI, TIOCLINUX = 0x5412, 0x541C


def test_tiocsti_on_a_real_tty(t):
    """govex started on a terminal: no tty reaches the program, and TIOCSTI/TIOCLINUX
    on any descriptor is refused (EPERM, as today); nothing is typed into the host's
    terminal."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    master, slave = pty.openpty()
    t.defer(os.close, master)
    ops = [["fd_links", {"as": "fds"}], ["read", "/dev/tty", {"as": "devtty"}]]
    for fd in (0, 1, 2):
        ops += [["tty_ioctl", fd, TIOCSTI, False, {"as": "sti%d" % fd}],
                ["tty_ioctl", fd, TIOCSTI, True, {"as": "sti_hi%d" % fd}],
                ["tty_ioctl", fd, TIOCLINUX, False, {"as": "linux%d" % fd}]]
    p = subprocess.Popen([g.GOVEX, "run", "--policy", e.policy(t), "--json", "-c",
                          e.proven_code(ops)], cwd=t.tmp, stdin=slave, stdout=subprocess.PIPE,
                         stderr=slave, start_new_session=True)
    os.close(slave)
    t.defer(e._killpg, p.pid)
    try:
        out, _ = p.communicate(timeout=g.HARD_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise g.Failure("govex did not finish")
    typed = b""
    os.set_blocking(master, False)
    try:
        while True:
            b = os.read(master, 4096)
            if not b:
                break
            typed += b
    except (BlockingIOError, OSError):
        pass
    doc = e.result_of(out)
    res = e.probe_lines(doc["stdout"])
    g.check(res is not None, "no probe output: %r" % doc)
    e.proven(res)
    links = e.allowed(res, "fds")
    g.check(not any("pts" in v or "tty" in v or "ptmx" in v for v in links.values()),
            "a terminal reaches the program: %r" % links)
    e.denied(res, "devtty", "ENOENT")
    for fd in (0, 1, 2):
        for label in ("sti%d", "sti_hi%d", "linux%d"):
            e.denied(res, label % fd, "EPERM")
    g.check(b"\x06" not in typed, "a byte was pushed into the host's terminal: %r" % typed)


def test_proc_of_the_shim(t):
    """/proc/<pid> of the supervisor inside the sandbox (pid 1) is absent (proc's
    hidepid): its memory, root, cwd, fds, environment, maps, and its stat, statm and
    status (which a run could poll to watch what PID 1 does) are ENOENT, and /proc
    lists no PID 1."""
    e.need_restricted("process_tree_kill")
    ops = [["pids", {"as": "pids"}], ["getpid", {"as": "me"}]]
    for part in ("environ", "maps", "mem", "auxv", "syscall", "stack", "stat", "statm",
                 "status"):
        ops.append(["read", "/proc/1/" + part, {"as": part}])
    for link in ("root", "cwd", "exe"):
        ops.append(["readlink", "/proc/1/" + link, {"as": link}])
    ops.append(["listdir", "/proc/1/fd", {"as": "fd"}])
    ops.append(["listdir", "/proc/1/map_files", {"as": "map_files"}])
    ops.append(["read", "/proc/self/maps", {"as": "own_maps"}])
    _, doc, res = e.run_proven(t, ops)
    e.allowed(res, "own_maps")      # the ops work on a process the code may see
    me = e.allowed(res, "me")
    if me == 1:
        e.skip("shim", "the program is pid 1 here: no supervisor to attack")
    for label in ("environ", "maps", "mem", "auxv", "syscall", "stack", "stat", "statm",
                  "status", "root", "cwd", "exe", "fd", "map_files"):
        e.denied(res, label, "ENOENT")
    g.check(1 not in e.allowed(res, "pids"), "/proc lists PID 1: %r" % res["pids"])


def test_pidfd_of_host_pids(t):
    """pidfd_open of govex's host pid finds nothing (ESRCH) or is not on the allowlist
    (ENOSYS); pidfd_getfd is never allowed (ENOSYS)."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    host = [os.getpid(), os.getppid()]
    ops = [["pidfd_open", host[0], {"as": "harness"}],
           ["pidfd_open", host[1], {"as": "parent"}],
           ["syscall2", "pidfd_getfd", 0, 0, 0, {"as": "getfd"}]]
    _, doc, res = e.run_proven(t, ops)
    for label in ("harness", "parent"):
        e.denied_any(res, label, ("ESRCH", "ENOSYS"))
    e.denied(res, "getfd", "ENOSYS")


# ------------------------------------------------------------------ never-allowed syscalls

NEVER = ["ptrace", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
         "mount_setattr", "listmount", "statmount", "lsm_get_self_attr",
         "lsm_set_self_attr", "lsm_list_modules", "futex_waitv", "cachestat", "unshare",
         "setns", "inotify_init1", "inotify_init", "fanotify_init", "mq_open", "kcmp",
         "pidfd_getfd", "process_vm_readv", "io_uring_setup", "userfaultfd", "bpf",
         "perf_event_open", "keyctl"]


def _never_ops():
    return [["syscall2", n, 0, 0, 0, 0, {"as": n}] for n in NEVER] + \
        [["syscall", "mount", 0, 0, 0, 0, 0, {"as": "mount"}],
         ["ptrace_attach", 1, {"as": "ptrace_attach"}]]


def _check_never(res):
    for n in NEVER + ["mount", "ptrace_attach"]:
        e.denied(res, n, "ENOSYS")


def test_never_allowed_syscalls(t):
    """Contract 7: ptrace, the new mount API, listmount/statmount, lsm_*, futex_waitv,
    cachestat, unshare/setns, inotify, fanotify, mq_open, kcmp, pidfd_getfd... are off
    the allowlist: ENOSYS (the allowlist's default action)."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    _, doc, res = e.run_proven(t, _never_ops())
    _check_never(res)


def test_never_allowed_syscalls_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    e.need_x86_64()
    pol = e.policy(t)
    os.chmod(pol, 0o644)
    _, doc, res = e.run_proven_as_nobody(t, sb, _never_ops(), pol)
    _check_never(res)


# ------------------------------------------------------------------ item 9: other runs

def test_concurrent_runs_isolated(t):
    """Item 9 (as root): two concurrent runs have distinct uids from the range, and a
    run whose policy reads the directory where fresh workdirs used to live finds
    nothing of the other run (contract 5, 6)."""
    e.need_restricted("fs_write_allowlist", "fresh_workdir")
    if os.geteuid() != 0:
        e.skip("root", "per-run uids are a root feature")
    s = outside_tmp(t)
    tmpdir = os.path.join(s, "tmp")
    rw = os.path.join(s, "rw")
    for d in (tmpdir, rw):
        os.mkdir(d)
        os.chmod(d, 0o777)
    half = uuid.uuid4().hex
    secret = "govex-rt-secret-" + half
    pol_a = e.policy(t, name="a.json", filesystem={"write": [rw]}, limits={"wall_ms": 20000})
    pol_b = e.policy(t, name="b.json", filesystem={"read": [tmpdir], "write": [rw]},
                     limits={"wall_ms": 20000})
    ops_a = [["write", "secret.txt", "govex-rt-secret-" + half, {"as": "secret"}],
             ["write", os.path.join(rw, "a-ready"), "a", {"as": "ready"}],
             ["wait_file", os.path.join(rw, "b-done"), 15.0, {"as": "wait"}]]
    ops_b = [["wait_file", os.path.join(rw, "a-ready"), 15.0, {"as": "wait"}],
             ["find", tmpdir, "govex-rt-secret-", {"as": "find"}],
             ["write", os.path.join(rw, "b-done"), "b", {"as": "done"}]]
    out = {}

    def go(name, pol, ops):
        try:
            out[name] = e.run_proven(t, ops, pol=pol, extra_env={"TMPDIR": tmpdir},
                                     timeout=25)
        except BaseException as ex:   # noqa: BLE001 - reported below
            out[name] = ex
    ths = [threading.Thread(target=go, args=("a", pol_a, ops_a)),
           threading.Thread(target=go, args=("b", pol_b, ops_b))]
    for th in ths:
        th.start()
    for th in ths:
        th.join(40)
    for k in ("a", "b"):
        if isinstance(out.get(k), BaseException):
            raise out[k]
    res_a, res_b = out["a"][2], out["b"][2]
    e.allowed(res_a, "secret")
    e.allowed(res_b, "wait")
    g.eq(e.allowed(res_b, "find"), [], "files of the other run found by a run reading "
                                       "TMPDIR (%s)" % secret)
    ua = os.stat(os.path.join(rw, "a-ready")).st_uid
    ub = os.stat(os.path.join(rw, "b-done")).st_uid
    g.check(ua != ub, "two concurrent runs share uid %d" % ua)
    for u in (ua, ub):
        g.check(e.SANDBOX_UID_BASE <= u < e.SANDBOX_UID_BASE + e.SANDBOX_UID_COUNT,
                "uid %d of a run is not in the sandbox range" % u)
    g.eq(os.listdir(tmpdir), [], "host workdirs in TMPDIR")


def _inotify_ops():
    return [["inotify_exhaust", 100000, {"as": "inotify"}],
            ["syscall2", "fanotify_init", 0, 0, {"as": "fanotify"}],
            ["syscall2", "mq_open", 0, 0, 0, 0, {"as": "mq_open"}]]


def test_inotify_exhaustion(t):
    """Item 9: one run took every inotify instance of the shared uid; now inotify (and
    fanotify, mq_open) are off the allowlist: ENOSYS at the first call."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    _, doc, res = e.run_proven(t, _inotify_ops())
    for label in ("inotify", "fanotify", "mq_open"):
        e.denied(res, label, "ENOSYS")


def test_inotify_exhaustion_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    e.need_x86_64()
    pol = e.policy(t)
    os.chmod(pol, 0o644)
    _, doc, res = e.run_proven_as_nobody(t, sb, _inotify_ops(), pol)
    for label in ("inotify", "fanotify", "mq_open"):
        e.denied(res, label, "ENOSYS")


def _host_pipe_size_as_nobody():
    code = ("import os, fcntl; r, w = os.pipe(); print(fcntl.fcntl(w, 1032))")
    if not os.path.exists("/usr/bin/python3"):
        e.skip("python3", "no /usr/bin/python3 for uid %d" % e.NOBODY)
    p = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", code], capture_output=True, timeout=10,
                       preexec_fn=e.nobody_preexec(), cwd="/")
    return int(p.stdout.strip() or 0)


def test_pipe_buffers_per_user_as_nobody(t):
    """A per-user kernel limit the allowlist cannot close: pipe buffer pages are charged
    to the caller's uid (pipe-user-pages-soft).  A run that takes 120 pipes of 1 MiB
    must not shrink every later pipe of the same user to one page."""
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    with open("/proc/sys/fs/pipe-user-pages-soft") as f:
        soft = int(f.read())
    if soft == 0:
        e.skip("pipe_user_pages", "no per-user pipe limit on this host")
    before = _host_pipe_size_as_nobody()
    if before <= 4096:
        e.skip("pipe_user_pages", "uid %d is already at its pipe limit" % e.NOBODY)
    rw = os.path.join(home, "rw")
    os.mkdir(rw)
    os.chmod(rw, 0o777)
    pol = e.policy(t, filesystem={"write": [rw]}, limits={"wall_ms": 20000})
    os.chmod(pol, 0o644)
    ops = [["pipe_hog", 120, 1 << 20, {"as": "hog"}],
           ["write", os.path.join(rw, "hogged"), "x", {"as": "hogged"}],
           ["wait_file", os.path.join(rw, "checked"), 15.0, {"as": "wait"}]]
    seen = {}

    def during(p):
        if g.wait_for_file(os.path.join(rw, "hogged"), 15.0, popen=p) is not None:
            seen["during"] = _host_pipe_size_as_nobody()
        with open(os.path.join(rw, "checked"), "w") as f:
            f.write("x")
    _, doc, res = e.run_proven_as_nobody(t, sb, ops, pol, during=during, timeout=30)
    g.check("during" in seen, "the run never took its pipes: %r" % res.get("hog"))
    g.eq(seen["during"], before, "size of a new pipe of uid %d on the host while a run "
                                 "holds %r pipes of 1 MiB" % (e.NOBODY, res.get("hog")))


# ------------------------------------------------------------------ item 10: /proc

def _proc_ops():
    return [["read", "/proc/cmdline", {"as": "cmdline"}],
            ["listdir", "/proc/sys", {"as": "sys"}],
            ["read", "/proc/kallsyms", {"as": "kallsyms"}],
            ["read", "/proc/modules", {"as": "modules"}],
            ["readall", "/proc/self/mountinfo", {"as": "mountinfo"}],
            ["readall", "/proc/self/cgroup", {"as": "cgroup"}],
            ["getcwd", {"as": "cwd"}]]


def _need_proc_subset():
    rel = os.uname().release.split(".")
    if (int(rel[0]), int(re.match(r"\d+", rel[1]).group())) < (5, 8):
        e.skip("proc_subset", "kernel %s has no procfs subset=pid" % os.uname().release)


def _check_proc(res, host_paths):
    for label in ("cmdline", "sys", "kallsyms", "modules"):
        e.denied(res, label, "ENOENT")
    g.eq(e.allowed(res, "cwd"), "/govex/work", "the fresh workdir's path inside")
    mi = e.allowed(res, "mountinfo")
    for p in host_paths:
        g.check(p not in mi, "mountinfo shows the host path %s:\n%s" % (p, mi))
    g.check(" /govex/work " in mi, "no /govex/work mount in mountinfo:\n%s" % mi)
    cg = e.allowed(res, "cgroup")
    bad = [l for l in cg.splitlines() if l and l.split(":", 2)[-1] != "/"]
    g.eq(bad, [], "/proc/self/cgroup lines showing a host cgroup")


def test_proc_shows_no_host(t):
    """Item 10: no kernel command line, /proc/sys or kallsyms (subset=pid); mountinfo
    names no host workdir (the fresh workdir is a tmpfs at /govex/work); the cgroup is
    '/' (own cgroup namespace)."""
    e.need_restricted("fresh_workdir")
    _need_proc_subset()
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    os.chmod(tmpdir, 0o777)
    _, doc, res = e.run_proven(t, _proc_ops(), extra_env={"TMPDIR": tmpdir})
    _check_proc(res, [tmpdir, t.tmp, "/govex-"])


def test_proc_shows_no_host_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    _need_proc_subset()
    home = sb[0]
    pol = e.policy(t)
    os.chmod(pol, 0o644)
    _, doc, res = e.run_proven_as_nobody(t, sb, _proc_ops(), pol)
    _check_proc(res, [home, "/govex-"])


# ------------------------------------------------------------------ item 13: exec

def _exec_run(t, ops, pol=None, runner=None):
    """One run whose last op may replace the probe.  Returns the probe results, or
    None when the probe was replaced (the canary line is still checked)."""
    if runner is not None:
        doc = runner(ops)
    else:
        r = t.run(["run", "--policy", pol or e.policy(t), "--json", "-c",
                   e.proven_code(ops)])
        doc = r.result()
    outp = doc.get("stdout") or ""
    if "GOVEX-EXECED" in outp or LIBC_BANNER in outp:
        raise g.Failure("a program other than the interpreter ran in the sandbox: "
                        "stdout=%r" % outp[-300:])
    canary = [l for l in outp.splitlines() if l.startswith("GOVEX-CANARY ")]
    g.check(canary, "the canary did not run: %r %r" % (doc.get("status"), outp[-300:]))
    e.proven({"canary": json.loads(canary[0][len("GOVEX-CANARY "):])})
    return e.probe_lines(outp), doc


def test_exec_written_binary(t):
    """Item 13: a binary the code wrote (in /tmp, in the workdir) cannot be executed.
    Under subprocess: deny no execve but the interpreter's own start gets through
    (ENOSYS: the shim's seccomp listener let the first through and closed); where
    subprocesses are allowed, writable mounts are still noexec (EACCES)."""
    e.need_restricted("subprocess_deny", "landlock")
    libc = _libc()
    allow = e.policy(t, name="sub.json", subprocess="allow")
    for pol, errno_name in ((None, "ENOSYS"), (allow, "EACCES")):
        for where in ("/tmp/x", "x"):
            res, doc = _exec_run(t, [["copy_exec", libc, where, {"as": "copy"}],
                                     ["execv", where if where.startswith("/") else "./x",
                                      {"as": "exec"}]], pol=pol)
            g.check(res is not None, "the probe was replaced (%s)" % where)
            e.allowed(res, "copy")
            e.denied(res, "exec", errno_name)


def test_exec_host_binary(t):
    """Item 13: a host executable the sandbox can read (libc.so.6 runs as a program)
    is not executable under subprocess: deny: no execve gets past the interpreter's
    (ENOSYS), and Landlock grants EXECUTE only to the interpreter and its loader behind
    that."""
    e.need_restricted("subprocess_deny", "landlock")
    libc = _libc()
    res, doc = _exec_run(t, [["execv", libc, {"as": "exec"}]])
    g.check(res is not None, "the probe was replaced")
    e.denied(res, "exec", "ENOSYS")


def test_exec_through_the_loader(t):
    """The ELF loader may be executed (contract 6), and it maps its argument itself
    with mmap(PROT_EXEC): a written file (noexec mount) must not run, nor a read-only
    host binary (read binds are not noexec)."""
    e.need_restricted("subprocess_deny", "landlock")
    libc = _libc()
    # written binary: the loader's mmap fails on the noexec mount
    res, doc = _exec_run(t, [["copy_exec", libc, "/tmp/x", {"as": "copy"}],
                             ["execv", LOADER, "/tmp/x", {"as": "exec"}]])
    if res is not None:
        e.denied_any(res, "exec", ("EACCES", "ENOSYS"))
    # a read-only host binary through the loader
    res, doc = _exec_run(t, [["execv", LOADER, libc, {"as": "exec"}]])
    if res is not None:
        e.denied_any(res, "exec", ("EACCES", "ENOSYS"))


def test_memfd_exec(t):
    """memfd_create + execveat(AT_EMPTY_PATH): a memfd lives on no mount Landlock or
    noexec covers; it must not run (not named by the contract: any denial)."""
    e.need_restricted("subprocess_deny", "landlock")
    e.need_x86_64()
    libc = _libc()
    res, doc = _exec_run(t, [["memfd_exec", libc, {"as": "exec"}]])
    g.check(res is not None, "the probe was replaced")
    e.denied_any(res, "exec", ("ENOSYS", "EACCES", "EPERM"))


def test_mmap_exec_of_written_files(t):
    """Item 13: mmap(PROT_EXEC) of a file in /tmp or the workdir fails (noexec: EPERM);
    mprotect(PROT_EXEC) of such a mapping fails (EACCES)."""
    e.need_restricted("fs_write_allowlist")
    ops = [["mmap_exec", "/tmp/code", {"as": "tmp"}],
           ["mmap_exec", "code", {"as": "workdir"}],
           ["mprotect_exec", "/tmp/code2", {"as": "mprotect_tmp"}]]
    res, doc = _exec_run(t, ops)
    e.denied(res, "tmp", "EPERM")
    e.denied(res, "workdir", "EPERM")
    e.denied(res, "mprotect_tmp", "EACCES")


def test_exec_written_binary_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    libc = _libc()
    pol = e.without_aggregate(e.policy(t))
    os.chmod(pol, 0o644)

    def runner(ops):
        rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c",
                                   e.proven_code(ops)], cwd=home, env=env,
                                  preexec=e.nobody_preexec(), binary=binary)
        return e.result_of(out)
    res, doc = _exec_run(t, [["copy_exec", libc, "/tmp/x", {"as": "copy"}],
                             ["execv", "/tmp/x", {"as": "exec"}],
                             ["mmap_exec", "/tmp/code", {"as": "mmap"}]], runner=runner)
    g.check(res is not None, "the probe was replaced")
    e.denied(res, "exec", "ENOSYS")
    e.denied(res, "mmap", "EPERM")


if __name__ == "__main__":
    sys.exit(g.main([
        ("3: unix sockets (pathname 0600, abstract) refused under network deny",
         test_unix_sockets_in_read_root),
        ("3: the caller's own 0600 socket refused as nobody",
         test_unix_sockets_in_read_root_as_nobody),
        ("4: a read root beneath /tmp is refused (FIFO)", test_read_root_beneath_tmp_refused),
        ("4: FIFO and device nodes in a read root are closed", test_special_files_in_read_root),
        ("hard links to host files: EXDEV", test_hardlinks_to_host_files),
        ("TIOCSTI/TIOCLINUX on a real tty refused", test_tiocsti_on_a_real_tty),
        ("/proc/1 (the supervisor) is closed", test_proc_of_the_shim),
        ("pidfd_open of host pids finds nothing", test_pidfd_of_host_pids),
        ("never-allowed syscalls give ENOSYS", test_never_allowed_syscalls),
        ("never-allowed syscalls give ENOSYS as nobody", test_never_allowed_syscalls_as_nobody),
        ("9: concurrent runs: own uid, no access to each other's workdir",
         test_concurrent_runs_isolated),
        ("9: inotify cannot be exhausted", test_inotify_exhaustion),
        ("9: inotify cannot be exhausted as nobody", test_inotify_exhaustion_as_nobody),
        ("9: pipe buffers of the caller's uid cannot be exhausted as nobody",
         test_pipe_buffers_per_user_as_nobody),
        ("10: /proc shows no host (cmdline, mountinfo, cgroup)", test_proc_shows_no_host),
        ("10: /proc shows no host as nobody", test_proc_shows_no_host_as_nobody),
        ("13: a written binary cannot be executed", test_exec_written_binary),
        ("13: a host binary cannot be executed", test_exec_host_binary),
        ("13: the ELF loader runs neither written nor host binaries",
         test_exec_through_the_loader),
        ("13: memfd_create + execveat does not execute", test_memfd_exec),
        ("13: mmap/mprotect PROT_EXEC of written files fails", test_mmap_exec_of_written_files),
        ("13: a written binary cannot be executed as nobody",
         test_exec_written_binary_as_nobody),
    ]))
