#!/usr/bin/env python3
"""The core escapes again, with govex run by an ordinary user (nobody) through user
namespaces: the same walls without root, and what needs privilege (a writable
cgroup) reported as missing rather than faked."""
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def _run_as_nobody(t, sb, args, **kw):
    home, env, binary = sb
    rc, out, err, _ = e.spawn(args, cwd=home, env=env, preexec=e.nobody_preexec(),
                              binary=binary, **kw)
    return rc, out, err


def test_report_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    rc, out, err = _run_as_nobody(t, sb, ["backends", "--json"])
    rep = [b for b in json.loads(out) if b.get("name") == "restricted"][0]
    for c in ("fs_read_allowlist", "fs_write_allowlist", "network_deny", "syscall_filter",
              "subprocess_deny", "no_new_privileges", "process_tree_kill"):
        g.check(c in rep["enforced"], "%s not enforced for nobody: %r" % (c, rep))
    missing = {u["control"]: u["reason"] for u in rep.get("unavailable", [])}
    for c in ("memory_aggregate", "pids_aggregate", "cpu_time_aggregate"):
        # nobody normally has no writable cgroup: then the control is missing, with a
        # reason, never claimed
        g.check((c in rep["enforced"]) != (c in missing),
                "%s is both or neither enforced and missing: %r" % (c, rep))
        if c in missing:
            g.check(missing[c], "no reason given for missing %s" % c)
    if missing.keys() & {"memory_aggregate", "pids_aggregate", "cpu_time_aggregate"}:
        # strict sets memory, CPU and process limits of the whole run: without a cgroup
        # it is refused, never run under per-process rlimits by the same name
        pol = e.policy(t)
        rc, out, err = _run_as_nobody(t, sb, ["run", "--policy", pol, "--json", "-c",
                                              "pass"])
        doc = e.result_of(out)
        g.eq(doc["status"], "policy_refused", "strict without a cgroup")
        g.eq([d["code"] for d in doc["diagnostics"]], ["missing_controls"], "diagnostics")


# As nobody there is normally no writable cgroup, so no aggregate limit can be had: the
# core escapes are tried under strict without its memory, CPU and process limits.
NO_AGGREGATE = {"memory_bytes": None, "cpu_ms": None, "processes": None}


def test_core_escapes_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    e.need_x86_64()
    rw = t.path("rw")
    os.mkdir(rw)
    os.chmod(rw, 0o777)
    name = "govex-escape-%s" % uuid.uuid4().hex
    pol = e.policy(t, filesystem={"write": [rw]}, limits=NO_AGGREGATE)
    ops = [["read", "/etc/shadow", {"as": "shadow"}],
           ["write", "/tmp/" + name, {"as": "tmp"}],
           ["write", os.path.join(rw, "made"), {"as": "rw"}],
           ["fork", {"as": "fork"}], ["threads", 4, {"as": "threads"}],
           ["tcp", "127.0.0.1", 9, {"as": "tcp"}],
           ["status", {"as": "status"}], ["pids", {"as": "pids"}],
           ["ids", {"as": "ids"}],
           ["syscall", "io_uring_setup", 0, 0, {"as": "io_uring"}],
           ["syscall", "unshare", 0x10000000, {"as": "unshare"}],
           ["syscall", "mount", 0, 0, 0, 0, 0, {"as": "mount"}],
           ["ptrace_attach", 1, {"as": "ptrace"}],
           ["read", "/proc/1/environ", {"as": "init_environ"}]]
    rc, out, err = _run_as_nobody(t, sb, ["run", "--policy", pol, "--json", "-c",
                                                 e.probe_code(ops)])
    doc = e.result_of(out)
    g.eq(doc["backend"]["name"], "restricted", "backend")
    line = [l for l in doc["stdout"].splitlines() if l.startswith("GOVEX-PROBE ")]
    g.check(line, "no probe output: %r" % doc)
    res = json.loads(line[0][len("GOVEX-PROBE "):])
    e.denied(res, "shadow", "ENOENT")
    e.allowed(res, "tmp")
    g.check(not os.path.exists("/tmp/" + name), "a write to /tmp reached the host's")
    e.allowed(res, "rw")
    g.eq(os.stat(os.path.join(rw, "made")).st_uid, e.NOBODY, "owner of a file made inside")
    e.denied(res, "fork", "EPERM")
    g.eq(e.allowed(res, "threads"), [499500 + i for i in range(4)], "threads")
    e.denied(res, "tcp", "EAFNOSUPPORT")
    st = e.allowed(res, "status")
    g.eq((st.get("NoNewPrivs"), st.get("Seccomp"), st.get("CapEff")),
         ("1", "2", "0000000000000000"), "NoNewPrivs, Seccomp, CapEff")
    g.check(len(e.allowed(res, "pids")) <= 3, "pids visible: %r" % res["pids"])
    g.eq(e.allowed(res, "ids")[:4], [e.NOBODY] * 4, "ids inside")
    # off the seccomp allowlist: ENOSYS, as a syscall the kernel does not have
    for label in ("io_uring", "unshare", "mount", "ptrace"):
        e.denied(res, label, "ENOSYS")
    e.denied(res, "init_environ", "ENOENT")   # /proc/1 hidden (hidepid)


def test_timeout_leaves_nothing_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home = sb[0]
    marker = "gvx" + uuid.uuid4().hex[:11]
    pol = e.policy(t, limits=dict(NO_AGGREGATE, wall_ms=1000))
    code = ("import ctypes, time\n"
            "ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%r.encode()), 0, 0, 0)\n"
            "time.sleep(60)\n" % marker)
    t0 = time.monotonic()
    rc, out, err = _run_as_nobody(t, sb, ["run", "--policy", pol, "--json",
                                                 "-c", code])
    doc = e.result_of(out)
    g.eq(doc["termination"], "timeout", "termination")
    g.check(time.monotonic() - t0 < 5.0, "timeout took too long")
    g.eq(e.procs_with_comm(marker), [], "processes left behind")
    g.eq([n for n in os.listdir(home)], [], "temp dirs left behind")


if __name__ == "__main__":
    sys.exit(g.main([
        ("the backend report as nobody", test_report_as_nobody),
        ("core escapes are contained as nobody", test_core_escapes_as_nobody),
        ("a timeout as nobody leaves nothing behind", test_timeout_leaves_nothing_as_nobody),
    ]))
