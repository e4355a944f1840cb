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
