"""The escape probe: a stdlib-only snippet run *inside* the sandbox.

A test appends one line, ``probe([...operations...])``, to this file's source and
runs the whole as the snippet.  Each operation is tried, and the probe prints one
line ``GOVEX-PROBE {json}`` with, per operation, either ``{"ok": true, "value": ...}``
or ``{"ok": false, "errno": "ENOENT"}`` (the errno's name), so a test asserts the
exact denial, not merely that something failed.

Operations are lists: [name, args...], and a result is keyed by the operation's
label (its index and name, or an explicit "as" label given as a last {"as": label}).
"""
import ctypes
import errno as _errno
import json
import os
import socket
import sys
import threading
import time


def _ename(e):
    return _errno.errorcode.get(e, str(e))


_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _syscall(nr, *args):
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


# x86_64 numbers (the tests skip these operations on other machines).
SYSCALLS = {
    "ptrace": 101, "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272,
    "setns": 308, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
    "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246,
    "init_module": 175, "finit_module": 313, "delete_module": 176,
    "process_vm_readv": 310, "process_vm_writev": 311, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "clone3": 435, "chroot": 161,
}


def op_read(path):
    with open(path, "rb") as f:
        return f.read(64).decode("latin-1")


def op_write(path, data="govex-escape"):
    with open(path, "w") as f:
        f.write(data)
    return os.stat(path).st_uid


def op_listdir(path):
    return sorted(os.listdir(path))


def op_stat(path):
    st = os.stat(path)
    return {"uid": st.st_uid, "gid": st.st_gid, "mode": st.st_mode}


def op_symlink_read(target, link):
    os.symlink(target, link)
    return op_read(link)


def op_tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2.0)
    s.connect((host, port))
    s.close()
    return "connected"


def op_udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    s.sendto(b"ping", (host, port))
    data = s.recv(64)
    return data.decode("latin-1")


def op_abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    s.connect("\0" + name)
    return "connected"


def op_netdev():
    # /proc/self/net: the sandbox's proc has subset=pid (no /proc/net link)
    with open("/proc/self/net/dev") as f:
        lines = f.read().splitlines()[2:]
    return sorted(l.split(":")[0].strip() for l in lines)


def op_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def op_subprocess(*argv):
    import subprocess
    return subprocess.run(list(argv) or [sys.executable, "-c", "pass"]).returncode


def op_system(cmd="true"):
    return os.system(cmd)


def op_posix_spawn():
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], {})
    os.waitpid(pid, 0)
    return pid


def op_threads(n=4):
    out = []
    ts = [threading.Thread(target=lambda i=i: out.append(sum(range(1000)) + i))
          for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sorted(out)


def op_syscall(name, *args):
    return _syscall(SYSCALLS[name], *args)


def op_ptrace_attach(pid):
    return _syscall(SYSCALLS["ptrace"], 16, pid, 0, 0)  # PTRACE_ATTACH


def op_ptrace_traceme():
    return _syscall(SYSCALLS["ptrace"], 0, 0, 0, 0)  # PTRACE_TRACEME


def op_tiocsti(highbits=False):
    cmd = 0x5412  # TIOCSTI
    if highbits:
        cmd |= 1 << 32
    c = ctypes.c_char(b"x")
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.ioctl(ctypes.c_int(0), ctypes.c_ulong(cmd), ctypes.byref(c))
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def op_kill(pid, sig):
    os.kill(pid, sig)
    return "sent"


def op_status():
    keep = ("NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "CapBnd", "Uid", "Gid")
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in keep:
                out[k] = v.strip()
    return out


def op_pids():
    return sorted(int(n) for n in os.listdir("/proc") if n.isdigit())


def op_secret_scan(*parts):
    secret = "".join(parts)
    found = []
    if any(secret in v for v in os.environ.values()):
        found.append("os.environ")
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        for part in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (n, part), "rb") as f:
                    if secret.encode() in f.read():
                        found.append("/proc/%s/%s" % (n, part))
            except OSError:
                pass
    return found


def op_fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))


def op_fill(path, limit):
    """Write 1 MiB chunks to path until an error or limit bytes; the error is the
    result (a clean stop at the limit is ok)."""
    chunk = b"\0" * (1 << 20)
    n = 0
    with open(path, "wb", buffering=0) as f:
        while n < limit:
            n += f.write(chunk)
    return n


def op_hostname():
    return socket.gethostname()


def op_ids():
    return [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()]


def op_setcomm(name):
    lib = _lib()
    lib.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)  # PR_SET_NAME
    return name


def op_sleep(seconds):
    time.sleep(seconds)
    return seconds


def _run_op(op):
    name, args = op[0], list(op[1:])
    fn = globals()["op_" + name]
    try:
        return {"ok": True, "value": fn(*args)}
    except OSError as e:
        return {"ok": False, "errno": _ename(e.errno) if e.errno else None,
                "error": type(e).__name__}
    except Exception as e:  # noqa: BLE001 - reported to the test, never swallowed
        return {"ok": False, "errno": None, "error": "%s: %s" % (type(e).__name__, e)}


def probe(ops):
    results = {}
    for i, op in enumerate(ops):
        label = "%d:%s" % (i, op[0])
        if op and isinstance(op[-1], dict) and "as" in op[-1]:
            label = op[-1]["as"]
            op = op[:-1]
        results[label] = _run_op(op)
    sys.stdout.write("GOVEX-PROBE " + json.dumps(results, sort_keys=True) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------- trust / isolation ops
# (added for test_trust.py and test_isolation.py; the operations above are unchanged)

MORE_SYSCALLS = {
    "execveat": 322, "memfd_create": 319, "pidfd_open": 434, "pidfd_send_signal": 424,
    "pidfd_getfd": 438, "kcmp": 312, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "listmount": 458, "statmount": 457, "lsm_get_self_attr": 459,
    "lsm_set_self_attr": 460, "lsm_list_modules": 461, "futex_waitv": 449,
    "cachestat": 451, "inotify_init1": 294, "inotify_init": 253, "fanotify_init": 300,
    "mq_open": 240, "open_tree": 428, "move_mount": 429, "fsopen": 430, "unshare": 272,
    "setns": 308, "ptrace": 101, "process_vm_readv": 310, "io_uring_setup": 425,
    "userfaultfd": 323, "bpf": 321, "perf_event_open": 298, "keyctl": 250,
    "memfd_secret": 447,
}


def op_syscall2(name, *args):
    return _syscall(MORE_SYSCALLS[name], *args)


def op_nsid(kind="pid"):
    return os.readlink("/proc/self/ns/" + kind)


def op_getpid():
    return os.getpid()


def op_readlink(path):
    return os.readlink(path)


def op_readall(path, limit=1 << 20):
    with open(path, "rb") as f:
        return f.read(limit).decode("latin-1")


def op_getcwd():
    return os.getcwd()


def op_open_flags(path, *flag_names):
    flags = 0
    for n in flag_names:
        flags |= getattr(os, n)
    fd = os.open(path, flags)
    try:
        if flags & (os.O_WRONLY | os.O_RDWR):
            return os.write(fd, b"govex-escape\n")
        return len(os.read(fd, 64))
    finally:
        os.close(fd)


def op_link(src, dst):
    os.link(src, dst)
    return os.stat(dst).st_nlink


def op_unix_socket_kind(kind="stream"):
    s = socket.socket(socket.AF_UNIX,
                      socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM)
    s.close()
    return "created"


def op_unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    s.connect(path)
    s.sendall(b"govex-escape")
    s.close()
    return "connected"


def op_socketpair_x():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.sendall(b"x")
    v = b.recv(1)
    a.close()
    b.close()
    return v.decode()


def op_pidfd_open(pid):
    fd = _syscall(MORE_SYSCALLS["pidfd_open"], pid, 0)
    os.close(fd)
    return "opened"


def op_inotify_exhaust(limit=100000):
    """Takes inotify instances until an error; the error (or the count) is the result."""
    fds = []
    try:
        while len(fds) < limit:
            fds.append(_syscall(MORE_SYSCALLS["inotify_init1"], 0o2000000))
        return len(fds)
    finally:
        for fd in fds:
            os.close(fd)


def op_copy_exec(src, dst):
    """Copies SRC to DST with mode 0755 (a 'binary the code wrote')."""
    with open(src, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(data)
    os.chmod(dst, 0o755)
    return len(data)


def op_execv(path, *argv):
    """Replaces the probe with PATH.  Success loses the probe's line: the program run
    is expected to print a GOVEX-EXECED line the test looks for."""
    sys.stdout.flush()
    os.execv(path, [path] + list(argv))


def op_memfd_exec(src, *argv):
    """memfd_create + write SRC's bytes + execveat(fd, "", AT_EMPTY_PATH)."""
    with open(src, "rb") as f:
        data = f.read()
    name = ctypes.create_string_buffer(b"govex-escape")
    fd = _syscall(MORE_SYSCALLS["memfd_create"], ctypes.addressof(name), 0)
    os.write(fd, data)
    sys.stdout.flush()
    args = [src] + list(argv)
    arr = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    envp = (ctypes.c_char_p * 1)(None)
    empty = ctypes.create_string_buffer(b"")
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(MORE_SYSCALLS["execveat"]), ctypes.c_long(fd),
                    ctypes.c_long(ctypes.addressof(empty)),
                    ctypes.c_long(ctypes.cast(arr, ctypes.c_void_p).value),
                    ctypes.c_long(ctypes.cast(envp, ctypes.c_void_p).value),
                    ctypes.c_long(0x1000))
    raise OSError(ctypes.get_errno(), "execveat returned %d" % r)


def op_memfd_create():
    name = ctypes.create_string_buffer(b"govex-escape")
    fd = _syscall(MORE_SYSCALLS["memfd_create"], ctypes.addressof(name), 0)
    os.close(fd)
    return "created"


def _mmap(fd, length, prot):
    lib = _lib()
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_long]
    ctypes.set_errno(0)
    addr = lib.mmap(None, length, prot, 0x02, fd, 0)   # MAP_PRIVATE
    if addr in (None, ctypes.c_void_p(-1).value) or addr == (1 << 64) - 1:
        raise OSError(ctypes.get_errno(), "mmap")
    return addr


def op_mmap_exec(path):
    """mmap(PROT_READ|PROT_EXEC) of PATH (a file the code can write, on /tmp say)."""
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(b"\xc3" * 4096)    # ret
    fd = os.open(path, os.O_RDONLY)
    try:
        _mmap(fd, 4096, 0x1 | 0x4)
        return "mapped"
    finally:
        os.close(fd)


def op_mprotect_exec(path):
    """mmap(PROT_READ) then mprotect(PROT_READ|PROT_EXEC)."""
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(b"\xc3" * 4096)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _mmap(fd, 4096, 0x1)
        lib = _lib()
        lib.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        ctypes.set_errno(0)
        if lib.mprotect(ctypes.c_void_p(addr), 4096, 0x1 | 0x4) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")
        return "executable"
    finally:
        os.close(fd)


def op_find(top, needle, maxdepth=6):
    """Files under TOP (walked, symlinks not followed) whose content has NEEDLE."""
    hits = []
    top_depth = top.rstrip("/").count("/")
    for d, dirs, files in os.walk(top, onerror=lambda e: None):
        if d.count("/") - top_depth >= maxdepth:
            dirs[:] = []
        for n in files:
            p = os.path.join(d, n)
            try:
                with open(p, "rb") as f:
                    if needle.encode() in f.read(1 << 16):
                        hits.append(p)
            except OSError:
                pass
    return hits


def op_deep_tree(depth, name="d"):
    """A DEPTH-deep chain of directories under the cwd (relative steps, so no path
    length limit), with a file at the bottom; returns to the start."""
    start = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name)
            os.chdir(name)
        with open("bottom", "w") as f:
            f.write("x")
    finally:
        os.fchdir(start)
        os.close(start)
    return depth


def op_wait_file(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    raise OSError(_errno.ETIMEDOUT, "waited for " + path)


def op_pipe_hog(n=100, size=1 << 20):
    """Takes N pipes with SIZE-byte buffers (pipe buffers are charged per user)."""
    import fcntl
    got = []
    big = 0
    for _ in range(n):
        r, w = os.pipe()
        got.append((r, w))
        try:
            fcntl.fcntl(w, 1031, size)    # F_SETPIPE_SZ
            big += 1
        except OSError:
            pass                          # over the soft limit: keep taking small ones
    return [len(got), big]


def _host_passwd():
    """True when /etc/passwd exists and is not the sandbox's own (root, govex, nobody:
    contract section 5): a host's /etc shows through."""
    try:
        with open("/etc/passwd") as f:
            names = {ln.split(":", 1)[0] for ln in f.read(65536).splitlines() if ln}
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return not names <= {"root", "govex", "nobody"}


def op_canary_proof(host_pidns):
    """Proof, from inside, that this is a sandbox: own PID namespace, no_new_privs,
    seccomp filter mode, no host /etc."""
    st = op_status()
    out = {"pidns": os.readlink("/proc/self/ns/pid"), "NoNewPrivs": st.get("NoNewPrivs"),
           "Seccomp": st.get("Seccomp"), "etc_passwd": _host_passwd(),
           "etc": os.path.exists("/etc/hostname") or os.path.exists("/etc/shadow")}
    out["proven"] = (out["pidns"] != host_pidns and out["NoNewPrivs"] == "1" and
                     out["Seccomp"] == "2" and not out["etc_passwd"] and not out["etc"])
    return out


def probe_proven(host_pidns, ops):
    """Like probe(OPS), but runs OPS only after op_canary proved a sandbox; otherwise
    every op is reported as skipped (nothing dangerous ran)."""
    c = _run_op(["canary_proof", host_pidns])
    if not (c.get("ok") and c["value"].get("proven")):
        res = {"canary": c}
        for i, op in enumerate(ops):
            label = op[-1]["as"] if op and isinstance(op[-1], dict) else "%d:%s" % (i, op[0])
            res[label] = {"ok": False, "errno": None, "error": "skipped: no sandbox proven"}
        sys.stdout.write("GOVEX-PROBE " + json.dumps(res, sort_keys=True) + "\n")
        sys.stdout.flush()
        return
    sys.stdout.write("GOVEX-CANARY " + json.dumps(c, sort_keys=True) + "\n")
    sys.stdout.flush()
    results = {"canary": c}
    for i, op in enumerate(ops):
        label = "%d:%s" % (i, op[0])
        if op and isinstance(op[-1], dict) and "as" in op[-1]:
            label = op[-1]["as"]
            op = op[:-1]
        results[label] = _run_op(op)
    sys.stdout.write("GOVEX-PROBE " + json.dumps(results, sort_keys=True) + "\n")
    sys.stdout.flush()


def op_tty_ioctl(fd, cmd, highbits=False):
    """ioctl(FD, CMD) with a one-byte argument (TIOCSTI 0x5412, TIOCLINUX 0x541C)."""
    if highbits:
        cmd |= 1 << 32
    c = ctypes.c_char(b"\x06")     # TIOCLINUX subcode 6 / the byte TIOCSTI would push
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.ioctl(ctypes.c_int(fd), ctypes.c_ulong(cmd), ctypes.byref(c))
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def op_fd_links():
    out = {}
    for n in os.listdir("/proc/self/fd"):
        try:
            out[n] = os.readlink("/proc/self/fd/" + n)
        except OSError:
            pass
    return out


# ---------------------------------------------------------------- issue 9 red team
# The canary (is this really the sandbox?), memory and task bombs, a syscall sweep.
# A bomb operation refuses to run unless guard() has seen a proven sandbox inside the
# same process (the test also proves it with a canary run before sending the bomb).

def _status_fields():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def op_canary():
    """Facts the test checks before any dangerous operation: PID namespace, pid, no_new_privs,
    seccomp mode, and whether /etc is the host's."""
    st = _status_fields()
    etc = None
    try:
        s = os.stat("/etc")
        etc = [s.st_dev, s.st_ino]
    except OSError:
        pass
    return {"pid": os.getpid(), "pidns": os.readlink("/proc/self/ns/pid"),
            "nnp": st.get("NoNewPrivs"), "seccomp": st.get("Seccomp"), "etc": etc,
            "shadow": os.path.exists("/etc/shadow") or _host_passwd()}


_GUARD = {}


def guard(host_pidns, host_etc):
    """Called by a bomb snippet before anything dangerous: exits 97 unless this process is
    in another PID namespace than the host's, has no_new_privs and seccomp, and does not
    see the host's /etc."""
    c = op_canary()
    ok = (c["pidns"] != host_pidns and c["pid"] < 100 and c["nnp"] == "1"
          and c["seccomp"] == "2" and c["etc"] != host_etc and not c["shadow"])
    if not ok:
        sys.stdout.write("GOVEX-GUARD refused %s\n" % json.dumps(c))
        sys.stdout.flush()
        os._exit(97)
    _GUARD["ok"] = True


def _need_guard():
    if not _GUARD.get("ok"):
        raise RuntimeError("bomb without a proven sandbox")


def progress(what, n):
    """A line the test reads even when the run is killed right after."""
    sys.stdout.write("GOVEX-PROGRESS %s %d\n" % (what, n))
    sys.stdout.flush()


def op_memfd_fill(total, each=32 << 20):
    """memfd_create + ftruncate + write, EACH bytes per memfd (under the file size rlimit)
    until TOTAL bytes were written or an error; all fds stay open."""
    _need_guard()
    chunk = b"\x5a" * (1 << 20)
    fds, n = [], 0
    while n < total:
        fd = os.memfd_create("gvx%d" % len(fds))
        fds.append(fd)
        os.ftruncate(fd, each)
        done = 0
        while done < each and n < total:
            done += os.write(fd, chunk)
            n += len(chunk)
            if n % (16 << 20) == 0:
                progress("memfd", n)
    progress("memfd", n)
    return n


def op_sysv_fill(total, each=64 << 20):
    """SysV segments of EACH bytes: shmget, shmat, touch every page, shmdt (the segment
    stays, not removed) until TOTAL bytes were touched."""
    _need_guard()
    lib = _lib()
    lib.shmat.restype = ctypes.c_void_p
    lib.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    lib.shmdt.argtypes = [ctypes.c_void_p]
    n = 0
    while n < total:
        ctypes.set_errno(0)
        sid = lib.shmget(0, ctypes.c_size_t(each), 0o1600)  # IPC_PRIVATE, IPC_CREAT|0600
        if sid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = lib.shmat(sid, None, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "shmat")
        step = 1 << 20
        for off in range(0, each, step):
            ctypes.memset(addr + off, 0x5a, step)
            n += step
            if n % (16 << 20) == 0:
                progress("sysv", n)
        lib.shmdt(ctypes.c_void_p(addr))
    progress("sysv", n)
    return n


def op_msgq_fill(total):
    """Kernel memory: SysV message queues (msgget + msgsnd of 8 KiB messages, never
    received) until TOTAL bytes are queued or the kernel says no."""
    _need_guard()
    lib = _lib()
    size = 8192
    buf = ctypes.create_string_buffer(8 + size)
    ctypes.c_long.from_buffer(buf).value = 1  # mtype
    n = 0
    while n < total:
        ctypes.set_errno(0)
        qid = lib.msgget(0, 0o1600)  # IPC_PRIVATE, IPC_CREAT|0600
        if qid < 0:
            raise OSError(ctypes.get_errno(), "msgget")
        for _ in range(2):        # msgmnb is 16 KiB per queue by default
            ctypes.set_errno(0)
            if lib.msgsnd(qid, buf, ctypes.c_size_t(size), 0o4000) < 0:  # IPC_NOWAIT
                err = ctypes.get_errno()
                if err == _errno.EAGAIN:
                    break
                raise OSError(err, "msgsnd")
            n += size
            if n % (16 << 20) == 0:
                progress("sysvmsg", n)
    progress("sysvmsg", n)
    return n


def op_posix_shm_fill(total):
    """POSIX shared memory: files in /dev/shm ('absent' when there is none)."""
    _need_guard()
    if not os.path.isdir("/dev/shm"):
        return "absent"
    return _fill_files("/dev/shm/gvx", total, "posixshm")


def _fill_files(prefix, total, what, each=32 << 20):
    chunk = b"\x5a" * (1 << 20)
    n, i = 0, 0
    while n < total:
        with open("%s%d" % (prefix, i), "wb", buffering=0) as f:
            done = 0
            while done < each and n < total:
                done += f.write(chunk)
                n += len(chunk)
                if n % (16 << 20) == 0:
                    progress(what, n)
        i += 1
    progress(what, n)
    return n


def op_files_fill(prefix, total):
    """Files of 32 MiB each named PREFIX0, PREFIX1, ... (a tmpfs: /tmp, the workdir)."""
    _need_guard()
    return _fill_files(prefix, total, "files")


def op_thread_alloc(nthreads, each):
    """NTHREADS threads each allocate and touch EACH bytes and hold them."""
    _need_guard()
    held, errs = [], []
    ready = threading.Barrier(nthreads + 1)

    def work():
        try:
            held.append(b"\x5a" * each)
        except MemoryError:
            errs.append("ENOMEM")
        try:
            ready.wait(10)
        except threading.BrokenBarrierError:
            pass

    threading.stack_size(256 << 10)
    ts = [threading.Thread(target=work) for _ in range(nthreads)]
    for t in ts:
        t.start()
    ready.wait(10)
    progress("threads", len(held) * each)
    if errs:
        raise MemoryError("threads could not allocate")
    for t in ts:
        t.join()
    return len(held) * each


def op_tasks():
    return len(os.listdir("/proc/self/task"))


def op_raw_clone(limit):
    """Raw clone(CLONE_VM|CLONE_THREAD|...) threads running libc's pause(), not Python
    threads: until clone fails or LIMIT; returns [made, errno name, tasks counted]."""
    _need_guard()
    lib = _lib()
    flags = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000  # VM FS FILES SIGHAND THREAD SYSVSEM
    fn = ctypes.cast(lib.pause, ctypes.c_void_p)
    lib.clone.restype = ctypes.c_int
    lib.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    stacks, made, err = [], 0, None
    size = 32 << 10
    while made < limit:
        st = ctypes.create_string_buffer(size)
        stacks.append(st)
        top = (ctypes.addressof(st) + size - 64) & ~0xF
        ctypes.set_errno(0)
        r = lib.clone(fn, ctypes.c_void_p(top), flags, None)
        if r < 0:
            err = _ename(ctypes.get_errno())
            break
        made += 1
        if made % 16 == 0:
            progress("clone", made)
    _KEEP.append(stacks)
    return [made, err, op_tasks()]


_KEEP = []


def op_thread_bomb(limit):
    """threading.Thread until start() fails or LIMIT; returns [made, error, tasks]."""
    _need_guard()
    stop = threading.Event()
    threading.stack_size(64 << 10)
    made, err = 0, None
    while made < limit:
        t = threading.Thread(target=stop.wait, daemon=True)
        try:
            t.start()
        except RuntimeError as e:
            err = "RuntimeError: %s" % e
            break
        made += 1
        if made % 16 == 0:
            progress("threads", made)
    n = op_tasks()
    stop.set()
    return [made, err, n]


def op_busy(seconds, nthreads=1):
    """Burns CPU in NTHREADS threads (the main one included) for SECONDS of wall time."""
    end = time.monotonic() + seconds

    def spin():
        x = 0
        while time.monotonic() < end:
            x += 1

    ts = [threading.Thread(target=spin, daemon=True) for _ in range(nthreads - 1)]
    for t in ts:
        t.start()
    spin()
    return seconds


# x86_64 system call numbers by name, for the allowlist sweep (the kernel has them up to
# 469 as of 6.18; unknown numbers are ENOSYS from the kernel itself).
NR = {
    "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6,
    "poll": 7, "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12,
    "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16,
    "socket": 41, "socketpair": 53, "clone": 56, "fork": 57, "vfork": 58, "execve": 59,
    "exit": 60, "exit_group": 231, "execveat": 322, "clone3": 435, "pause": 34,
    "mq_open": 240, "keyctl": 250, "inotify_init": 253, "inotify_init1": 294,
    "fanotify_init": 300, "perf_event_open": 298, "bpf": 321, "userfaultfd": 323,
    "io_uring_setup": 425, "open_tree": 428, "fsopen": 430, "pidfd_getfd": 438,
    "process_madvise": 440, "mount_setattr": 442, "landlock_create_ruleset": 444,
    "memfd_secret": 447, "futex_waitv": 449, "cachestat": 451, "statmount": 457,
    "listmount": 458, "lsm_get_self_attr": 459, "lsm_set_self_attr": 460,
    "lsm_list_modules": 461, "ptrace": 101, "kcmp": 312, "add_key": 248,
    "request_key": 249, "unshare": 272, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "seccomp": 317,
}


def op_sweep(numbers, args=None):
    """Calls each syscall number with harmless arguments (-1 everywhere: a bad fd, a bad
    pointer, an invalid flag, an invalid signal) under a 0.3 s alarm, so a wrongly allowed
    call fails in the kernel (EBADF/EFAULT/EINVAL) and does nothing, and a blocking one is
    interrupted (EINTR).  ARGS maps a number (as a string) to other arguments.  Returns
    {number: errno name, or "ok:<value>"}."""
    import signal as _signal
    lib = _lib()
    old = _signal.signal(_signal.SIGALRM, lambda *a: None)
    out = {}
    try:
        for nr in numbers:
            a = (args or {}).get(str(nr), [-1] * 6)
            progress("sweep", nr)
            _signal.setitimer(_signal.ITIMER_REAL, 0.3)
            ctypes.set_errno(0)
            r = lib.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
            e = ctypes.get_errno()
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            out[str(nr)] = ("ok:%d" % r) if r >= 0 else _ename(e)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, old)
    return out


def op_ioctl(fd, cmd):
    lib = _lib()
    c = ctypes.c_char(b"x")
    ctypes.set_errno(0)
    r = lib.ioctl(ctypes.c_int(fd), ctypes.c_ulong(cmd), ctypes.byref(c))
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def op_unix_socket(kind="pathname", path="/tmp/gvx.sock"):
    """socket(AF_UNIX) itself (no connect needed): under network deny it is refused."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if kind == "abstract":
            s.bind("\0gvx-rt-b")
        elif kind == "pathname":
            s.bind(path)
    finally:
        s.close()
    return "made"


def op_socketpair():
    a, b = socket.socketpair()
    a.sendall(b"ping")
    data = b.recv(4)
    a.close()
    b.close()
    return data.decode()


def op_int80(nr):
    """An i386 system call (int 0x80) from a page of machine code: mov eax, NR; int 0x80;
    ret.  Returns its value if the process survives."""
    import mmap
    code = b"\xb8" + nr.to_bytes(4, "little") + b"\xcd\x80\xc3"
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    f = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
    sys.stdout.write("GOVEX-BEFORE int80\n")
    sys.stdout.flush()
    return f()


# ---------------------------------------------------------------- second red team (rc_)
# Exec once under subprocess: deny, prctl, raw clone flags, links across binds.  Every
# exec target is the interpreter itself (bound and granted EXECUTE by Landlock), so only
# the shim's exec-once guard stands between the call and a second program: success
# prints GOVEX-EXECED, which run_proven turns into a failure.

_RC_EXECED = "import sys; sys.stdout.write('GOVEX-EXECED\\n')"


def _rc_exec_argv():
    return [sys.executable, "-I", "-S", "-c", _RC_EXECED]


def _rc_try_exec(path=None):
    sys.stdout.flush()
    argv = _rc_exec_argv()
    try:
        os.execv(path or sys.executable, argv)
    except OSError as ex:
        return _ename(ex.errno)
    return "returned"


def op_rc_exec_thread():
    """execve from a second thread (not the one the interpreter started in)."""
    out = []
    th = threading.Thread(target=lambda: out.append(_rc_try_exec()))
    th.start()
    th.join(10)
    return out[0] if out else "hung"


def op_rc_exec_race(n=8, rounds=20):
    """N threads released together call execve ROUNDS times each: two notifications in
    flight at once, and a storm of them.  Returns {errno name: count}."""
    bar = threading.Barrier(n)
    got = {}
    lock = threading.Lock()

    def go():
        try:
            bar.wait(10)
        except threading.BrokenBarrierError:
            pass
        for _ in range(rounds):
            r = _rc_try_exec()
            with lock:
                got[r] = got.get(r, 0) + 1

    ts = [threading.Thread(target=go) for _ in range(n)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(30)
    return got


def _rc_execveat(dirfd, path, flags):
    args = _rc_exec_argv()
    arr = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    envp = (ctypes.c_char_p * 1)(None)
    p = ctypes.create_string_buffer(path.encode())
    sys.stdout.flush()
    lib = _lib()
    ctypes.set_errno(0)
    lib.syscall(ctypes.c_long(322), ctypes.c_long(dirfd), ctypes.c_long(ctypes.addressof(p)),
                ctypes.c_long(ctypes.cast(arr, ctypes.c_void_p).value),
                ctypes.c_long(ctypes.cast(envp, ctypes.c_void_p).value), ctypes.c_long(flags))
    raise OSError(ctypes.get_errno(), "execveat returned")


def op_rc_execveat_fd(opath=False):
    """execveat(fd, "", AT_EMPTY_PATH) on a descriptor of the interpreter itself."""
    fd = os.open(sys.executable, (0o10000000 if opath else os.O_RDONLY))  # O_PATH
    try:
        _rc_execveat(fd, "", 0x1000)
    finally:
        os.close(fd)


def op_rc_execveat_path():
    """execveat(AT_FDCWD, <interpreter>, 0): the other exec system call by name."""
    _rc_execveat(-100, sys.executable, 0)


def op_rc_exec_procfd():
    """execve("/proc/self/fd/N") of an open descriptor of the interpreter."""
    fd = os.open(sys.executable, os.O_RDONLY)
    try:
        r = _rc_try_exec("/proc/self/fd/%d" % fd)
    finally:
        os.close(fd)
    if r != "returned":
        raise OSError(getattr(_errno, r, 0), r)
    return r


def op_rc_exec():
    r = _rc_try_exec()
    raise OSError(getattr(_errno, r, 0), r)


def op_rc_stack_allow_then_exec():
    """Stacks a filter of our own that answers ALLOW to everything (allowed: prctl is on
    the list and no_new_privs is set), then calls execve: the stricter answer must win."""
    import struct
    ins = struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000)   # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
    buf = ctypes.create_string_buffer(ins)
    prog = struct.pack("HxxxxxxQ", 1, ctypes.addressof(buf))
    pbuf = ctypes.create_string_buffer(prog)
    _syscall(157, 22, 2, ctypes.addressof(pbuf))         # PR_SET_SECCOMP, FILTER
    return op_rc_exec()


def op_rc_stack_trace_then_exec():
    """A stacked filter answering TRACE for execve (no tracer: ENOSYS from the kernel,
    or the guard's answer, whichever wins): never a second program."""
    import struct
    ins = (struct.pack("HBBI", 0x20, 0, 0, 0) +            # ld [nr]
           struct.pack("HBBI", 0x15, 0, 1, 59) +           # jeq execve
           struct.pack("HBBI", 0x06, 0, 0, 0x7ff00000) +   # ret SECCOMP_RET_TRACE
           struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000))    # ret ALLOW
    buf = ctypes.create_string_buffer(ins)
    prog = struct.pack("HxxxxxxQ", 4, ctypes.addressof(buf))
    pbuf = ctypes.create_string_buffer(prog)
    _syscall(157, 22, 2, ctypes.addressof(pbuf))
    return op_rc_exec()


def op_rc_signal_shim(*sigs):
    """Signals pid 1 (the shim, holder of the execve listener) with each of SIGS, then
    tries execve.  Returns [[sig, errno or 'sent'], ..., exec result]."""
    out = []
    for s in sigs:
        try:
            os.kill(1, s)
            out.append([s, "sent"])
        except OSError as ex:
            out.append([s, _ename(ex.errno)])
    time.sleep(0.2)
    out.append(_rc_try_exec())
    return out


def op_rc_prctl(option, a2=0, a3=0, a4=0, a5=0):
    return _syscall(157, option, a2, a3, a4, a5)


def op_rc_clone_flags(flags):
    """Raw clone(FLAGS, stack 0) with flags that must be refused (a process, or a
    namespace).  A child, should one be made, exits at once."""
    lib = _lib()
    ctypes.set_errno(0)
    r = lib.syscall(ctypes.c_long(56), ctypes.c_ulong(flags), ctypes.c_long(0),
                    ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    if r == 0:
        os._exit(0)
    if r < 0:
        raise OSError(ctypes.get_errno(), "clone")
    try:
        os.waitpid(r, 0)
    except OSError:
        pass
    return "made %d" % r


def op_rc_hardlink(src, dst):
    os.link(src, dst)
    return "linked"


def op_rc_rename(src, dst):
    os.rename(src, dst)
    return "renamed"


def op_rc_write_new(path, data="govex-rc"):
    with open(path, "w") as f:
        f.write(data)
    return len(data)


def op_rc_madvise_mergeable():
    """madvise(MADV_MERGEABLE) on an anonymous mapping of our own."""
    import mmap
    m = mmap.mmap(-1, 1 << 16)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    try:
        return _syscall(28, addr, 1 << 16, 12)      # madvise, MADV_MERGEABLE
    finally:
        pass


def op_rc_setuid_file(src, dst, how="chmod", mode=0o4755):
    """Writes a copy of SRC (an executable) at DST and gives it MODE (set-user-ID) by
    chmod, fchmod, or at creation (open O_CREAT with the mode; umask 0).  Returns the
    mode the file has afterwards, seen from inside."""
    import stat as _stat
    with open(src or sys.executable, "rb") as f:
        data = f.read()
    if how == "create":
        old = os.umask(0)
        try:
            fd = os.open(dst, os.O_CREAT | os.O_WRONLY | os.O_EXCL, mode)
        finally:
            os.umask(old)
        os.write(fd, data)
        os.close(fd)
    else:
        with open(dst, "wb") as f:
            f.write(data)
            if how == "fchmod":
                os.fchmod(f.fileno(), mode)
        if how == "chmod":
            os.chmod(dst, mode)
    return _stat.S_IMODE(os.stat(dst).st_mode)


def op_rc_setxattr(path, name, hexvalue):
    """setxattr(PATH, NAME, bytes.fromhex(HEXVALUE)) on a file the run made."""
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(b"x")
    os.setxattr(path, name, bytes.fromhex(hexvalue))
    return "set"



# ---------------------------------------------------------------- second red team (rd_)
# Operations of tests/escape/test_redteam_*.py.  Bombs call _need_guard() first.

def op_rd_unix_fill(total, inflight=True, nofile_spare=16):
    """Kernel memory the memory cgroup may not see: socketpair(AF_UNIX) buffers filled
    until EAGAIN, up to the open-files limit; with INFLIGHT, filled sockets are then sent
    (SCM_RIGHTS) into a carrier socket and closed here, so they hold their buffers
    without holding an fd (the kernel bounds fds in flight per user by RLIMIT_NOFILE).
    Stops at TOTAL bytes queued.  Returns [bytes queued, sockets filled, error]."""
    _need_guard()
    import resource
    import array
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    chunk = b"\x5a" * 65536
    queued, filled, err = 0, 0, None
    keep = []

    def fill(s):
        n = 0
        while True:
            try:
                n += s.send(chunk)
            except BlockingIOError:
                return n

    def fresh_pair():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.setblocking(False)
        b.setblocking(False)
        return a, b

    carriers = []
    try:
        while queued < total:
            if len(keep) + 2 * len(carriers) + nofile_spare + 4 >= soft:
                if not inflight:
                    break
                # move the filled sockets into a carrier's queue, then close them here
                c1, c2 = fresh_pair()
                carriers.append((c1, c2))
                moved = 0
                while keep:
                    batch = keep[:200]
                    try:
                        c1.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                             array.array("i", [s.fileno() for s in batch]))])
                    except OSError as e:  # ETOOMANYREFS: the per-user in-flight bound
                        err = _ename(e.errno)
                        break
                    for s in batch:
                        s.close()
                    del keep[:200]
                    moved += len(batch)
                if not moved or err:
                    break
                continue
            a, b = fresh_pair()
            queued += fill(a) + fill(b)
            keep += [a, b]
            filled += 2
            if filled % 32 == 0:
                progress("unix", queued)
    except OSError as e:
        err = _ename(e.errno)
    progress("unix", queued)
    _KEEP.append((keep, carriers))
    return [queued, filled, err]


def op_rd_cgroup_paths():
    """What the run sees of cgroups: /proc/self/cgroup and whether /sys/fs/cgroup exists."""
    with open("/proc/self/cgroup") as f:
        own = f.read().splitlines()
    return {"own": own, "sysfs": os.path.exists("/sys/fs/cgroup")}


def op_rd_cgroup_write(rel, data):
    """Opens /sys/fs/cgroup/REL for writing and writes DATA (a limit, our pid)."""
    with open("/sys/fs/cgroup/" + rel, "w") as f:
        f.write(data)
    return "written"


def op_rd_write_mode(path, data, mode):
    """Writes DATA to PATH created with MODE (umask cleared); returns its owner."""
    old = os.umask(0)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    finally:
        os.umask(old)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)
    st = os.stat(path)
    return [st.st_uid, st.st_mode & 0o777]


def op_rd_uid():
    return [os.getuid(), os.geteuid(), os.getgid()]


def op_rd_plant_fifos(slots_dir, n=8):
    """Replaces slot lock files 0..N-1 in SLOTS_DIR by FIFOs (unlinking a lock file a
    live run holds would also hand its slot to the next run)."""
    done = []
    for i in range(n):
        p = os.path.join(slots_dir, "%d.lock" % i)
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
        os.mkfifo(p, 0o600)
        done.append(i)
    return done


def op_rd_unlink(path):
    os.unlink(path)
    return "unlinked"


def op_rd_exec_flood(seconds, nthreads=8):
    """NTHREADS threads call execve("/nonexistent") in a loop for SECONDS: under
    subprocess: deny each call is a seccomp notification the shim answers (work done
    outside the run's cgroup).  Returns [calls, last errno name]."""
    _need_guard()
    lib = _lib()
    argv = (ctypes.c_char_p * 2)(b"/nonexistent-gvx", None)
    end = time.monotonic() + seconds
    count = [0]
    errs = []

    def spin():
        e = 0
        while time.monotonic() < end:
            ctypes.set_errno(0)
            lib.execve(b"/nonexistent-gvx", argv, None)
            e = ctypes.get_errno()
            count[0] += 1
        errs.append(e)

    ts = [threading.Thread(target=spin, daemon=True) for _ in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return [count[0], _ename(errs[0]) if errs else None]


def op_rd_output_flood(seconds, fd=1):
    """Writes 64 KiB blocks to FD for SECONDS (far past stdout_bytes); returns bytes."""
    b = b"x" * 65536
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += os.write(fd, b)
    return n


def op_rd_plant_setid(src, dst, mode=0o6755, how="chmod"):
    """Copies SRC to DST and gives it MODE (setuid/setgid bits) by chmod, or by creating
    it with that mode (how="open"); returns [mode, uid, gid] as seen inside."""
    with open(src, "rb") as f:
        data = f.read()
    if how == "open":
        old = os.umask(0)
        try:
            fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        finally:
            os.umask(old)
        os.write(fd, data)
        os.close(fd)
    else:
        with open(dst, "wb") as f:
            f.write(data)
        os.chmod(dst, mode)
    st = os.stat(dst)
    return [st.st_mode & 0o7777, st.st_uid, st.st_gid]


def op_rd_sigqueue_hog(n, hold):
    """Queues N instances of SIGRTMIN (blocked) to itself with kill(): kill() overrides
    RLIMIT_SIGPENDING but each pending signal still counts against the uid's pending-
    signal count, which the caller's other processes share when the run keeps the
    caller's uid.  Holds them HOLD seconds (the test looks meanwhile).  Returns [queued,
    errno name]."""
    import signal as _signal
    _need_guard()
    sig = _signal.SIGRTMIN
    _signal.pthread_sigmask(_signal.SIG_BLOCK, [sig])
    done, err = 0, None
    while done < n:
        try:
            os.kill(os.getpid(), sig)
        except OSError as e:
            err = _ename(e.errno)
            break
        done += 1
    progress("sigqueue", done)
    time.sleep(hold)
    return [done, err]


def op_rd_own_cgroup_write(ctrl, fname, data):
    """Writes DATA to FNAME of this process's own cgroup of controller CTRL, found under
    /sys/fs/cgroup/CTRL by the cgroup inode /proc/self/cgroup cannot name (the cgroup
    namespace shows "/"): the deepest directory whose tasks file lists our tid."""
    top = "/sys/fs/cgroup/" + ctrl
    me = str(threading.get_native_id())
    found = None
    for d, subs, files in os.walk(top):
        if "tasks" in files:
            try:
                with open(os.path.join(d, "tasks")) as f:
                    if me in f.read().split():
                        found = d
            except OSError:
                pass
    if not found:
        raise OSError(_errno.ENOENT, "own cgroup not found under " + top)
    with open(os.path.join(found, fname), "w") as f:
        f.write(data)
    return found
