#!/usr/bin/env python3
"""Processes: none may be created under strict (threads still work), none outside the
run can be seen, signalled or traced, and nothing of govex's own leaks in."""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def test_no_subprocess_under_strict(t):
    e.need_restricted("subprocess_deny")
    ops = [["fork", {"as": "fork"}], ["subprocess", {"as": "subprocess"}],
           ["posix_spawn", {"as": "posix_spawn"}], ["system", "true", {"as": "system"}],
           ["threads", 8, {"as": "threads"}]]
    _, doc, res = e.run_probe(t, ops)
    e.denied(res, "fork", "EPERM")
    e.denied(res, "subprocess", "EPERM")
    e.denied(res, "posix_spawn", "EPERM")
    # system() reports its failure to start a shell as -1 (or 127 << 8)
    g.check(e.allowed(res, "system") != 0, "os.system ran a shell: %r" % res["system"])
    g.eq(e.allowed(res, "threads"), [499500 + i for i in range(8)], "threads' results")
    g.eq(doc["status"], "success", "status")


def test_kill_everything(t):
    """kill(-1, SIGKILL) reaches nothing outside; govex's own pid is not there."""
    e.need_restricted("process_tree_kill")
    me = os.getpid()
    kill = int(signal.SIGKILL)
    ops = [["kill", -1, kill, {"as": "all"}],
           ["kill", me, kill, {"as": "harness"}],
           ["kill", 1, kill, {"as": "init"}]]
    r, doc, res = e.run_probe(t, ops)
    # alone in its PID namespace: nobody to signal (init is exempt)
    e.denied(res, "all", "ESRCH")
    g.check(res["harness"].get("errno") in ("ESRCH", "EPERM"),
            "signalling a host pid: %r" % res["harness"])
    g.eq(doc["status"], "success", "status (the run survived its own kill(1))")


def test_kill_govex_itself(t):
    """The program is told govex's pid (from outside) and tries to kill it."""
    e.need_restricted("process_tree_kill")
    # The pid is only known after the spawn: the snippet reads it from its stdin.
    code = ("import sys, os, signal, errno\n"
            "pid = int(sys.stdin.readline())\n"
            "try:\n"
            "    os.kill(pid, signal.SIGKILL); print('KILL sent')\n"
            "except OSError as ex:\n"
            "    print('KILL', errno.errorcode[ex.errno])\n")
    import subprocess
    p = subprocess.Popen([g.GOVEX, "run", "--policy", e.policy(t), "--json", "--stdin", "-",
                          "-c", code], cwd=t.tmp, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    t.defer(e._killpg, p.pid)
    try:
        out, err = p.communicate(("%d\n" % p.pid).encode(), timeout=20)
    except subprocess.TimeoutExpired:
        raise g.Failure("govex did not finish")
    g.eq(p.returncode, 0, "govex exit status (it must not be killed)")
    doc = e.result_of(out)
    g.check("KILL ESRCH" in doc["stdout"] or "KILL EPERM" in doc["stdout"],
            "the program could signal govex: %r" % doc["stdout"])


def test_secret_environment(t):
    e.need_restricted("env_allowlist")
    secret = "govex-escape-secret-%d" % os.getpid()
    # the code names the secret in two halves: the code itself is not the leak
    half = len(secret) // 2
    _, doc, res = e.run_probe(t, [["secret_scan", secret[:half], secret[half:],
                                   {"as": "scan"}]],
                              extra_env={"GOVEX_ESCAPE_SECRET": secret,
                                         "AWS_SECRET_ACCESS_KEY": secret})
    g.eq(e.allowed(res, "scan"), [], "places inside where govex's secret is readable")


def test_inherited_fds(t):
    e.need_restricted("fd_hygiene")
    secret = t.write("fd-secret", "s3cret")
    fd = os.open(secret, os.O_RDONLY)   # inheritable: govex gets it
    t.defer(os.close, fd)
    rfd, wfd = os.pipe()
    t.defer(os.close, rfd)
    t.defer(os.close, wfd)
    code = e.probe_code([["fds", {"as": "fds"}], ["read", "/proc/self/fd/%d" % fd,
                                                    {"as": "byfd"}]])
    rc, out, err, _ = e.spawn(["run", "--policy", e.policy(t), "--json", "-c", code],
                              cwd=t.tmp, pass_fds=(fd, rfd, wfd))
    doc = e.result_of(out)
    line = [l for l in doc["stdout"].splitlines() if l.startswith("GOVEX-PROBE ")]
    g.check(line, "no probe output: %r %r" % (doc["stdout"], err))
    res = __import__("json").loads(line[0][len("GOVEX-PROBE "):])
    fds = e.allowed(res, "fds")
    # 0, 1, 2 and the descriptor listdir itself used
    g.check(set(fds) - {0, 1, 2} <= {3} and len(fds) <= 4, "fds inside: %r" % fds)
    if fd != 3:
        e.denied(res, "byfd", "ENOENT")


if __name__ == "__main__":
    sys.exit(g.main([
        ("no fork, subprocess, spawn or system under strict; threads work",
         test_no_subprocess_under_strict),
        ("kill(-1) and kill of outside pids reach nothing", test_kill_everything),
        ("the program cannot kill govex", test_kill_govex_itself),
        ("a secret in govex's environment is not visible", test_secret_environment),
        ("descriptors inherited by govex do not reach the program", test_inherited_fds),
    ]))
