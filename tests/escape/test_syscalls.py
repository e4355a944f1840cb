#!/usr/bin/env python3
"""The seccomp filter, no_new_privs and the dropped privileges, seen from inside."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

DENIED = ["io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2",
          "pivot_root", "unshare", "setns", "keyctl", "add_key", "request_key", "bpf",
          "perf_event_open", "userfaultfd", "kexec_load", "init_module", "finit_module",
          "delete_module", "process_vm_readv", "process_vm_writev", "open_tree",
          "move_mount", "fsopen", "chroot"]


def test_dangerous_syscalls_denied(t):
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    ops = [["syscall", name, 0, 0, 0, 0, {"as": name}] for name in DENIED]
    ops.append(["syscall", "clone3", 0, 0, {"as": "clone3"}])
    _, doc, res = e.run_probe(t, ops)
    # off the seccomp allowlist: ENOSYS, as a syscall the kernel does not have
    for name in DENIED:
        e.denied(res, name, "ENOSYS")
    # clone3 too, so that libc falls back to clone(), whose flags are checked
    e.denied(res, "clone3", "ENOSYS")


def test_ptrace_denied(t):
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    ops = [["ptrace_traceme", {"as": "traceme"}], ["ptrace_attach", 1, {"as": "attach1"}]]
    _, doc, res = e.run_probe(t, ops)
    e.denied(res, "traceme", "ENOSYS")
    e.denied(res, "attach1", "ENOSYS")


def test_tiocsti_denied(t):
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    ops = [["tiocsti", False, {"as": "plain"}], ["tiocsti", True, {"as": "highbits"}]]
    _, doc, res = e.run_probe(t, ops)
    e.denied(res, "plain", "EPERM")
    # the command is compared on its low 32 bits, as the kernel reads it
    e.denied(res, "highbits", "EPERM")


def test_no_new_privs_and_seccomp(t):
    e.need_restricted("no_new_privileges", "syscall_filter")
    _, doc, res = e.run_probe(t, [["status", {"as": "st"}]])
    st = e.allowed(res, "st")
    g.eq(st.get("NoNewPrivs"), "1", "NoNewPrivs")
    g.eq(st.get("Seccomp"), "2", "Seccomp")
    g.eq(st.get("CapEff"), "0000000000000000", "CapEff")
    g.eq(st.get("CapPrm"), "0000000000000000", "CapPrm")
    g.eq(st.get("CapBnd"), "0000000000000000", "CapBnd")
    uid = st.get("Uid", "").split()
    g.check(uid and "0" not in uid, "code runs with uid 0 somewhere: %r" % uid)


def test_other_abi_killed(t):
    """An x32 syscall number on x86_64 is another ABI: the process is killed."""
    e.need_restricted("syscall_filter")
    e.need_x86_64()
    code = ("import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.syscall.restype = ctypes.c_long\n"
            "print('before', flush=True)\n"
            "r = libc.syscall(ctypes.c_long(0x40000000 | 39))\n"   # x32 getpid
            "print('after', r, ctypes.get_errno(), flush=True)\n")
    r = t.run(["run", "--policy", e.policy(t), "--json", "-c", code])
    doc = r.result()
    g.eq(doc["stdout"], "before\n", "stdout")
    g.eq(doc["termination"], "signaled", "termination")
    g.eq(doc["signal"], 31, "signal (SIGSYS)")


if __name__ == "__main__":
    sys.exit(g.main([
        ("io_uring, mount, unshare, keyctl, bpf, perf, userfaultfd... denied",
         test_dangerous_syscalls_denied),
        ("ptrace is denied", test_ptrace_denied),
        ("TIOCSTI is denied, high bits or not", test_tiocsti_denied),
        ("NoNewPrivs 1, Seccomp 2, no capabilities", test_no_new_privs_and_seccomp),
        ("another syscall ABI kills the process", test_other_abi_killed),
    ]))
