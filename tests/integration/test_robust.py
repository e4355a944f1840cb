#!/usr/bin/env python3
"""Robustness at the edges: a lost result, closed stdio, FIFOs, host limits."""
import json
import os
import resource
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def raw(args, *, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, preexec_fn=None,
        timeout=20):
    """govex ARGS with the given stdio; preexec_fn may close one (close_fd)."""
    p = subprocess.run([g.GOVEX] + list(args), cwd=cwd, stdin=stdin, stdout=stdout,
                       stderr=subprocess.PIPE, timeout=timeout, start_new_session=True,
                       preexec_fn=preexec_fn)
    return p


def close_fd(fd):
    def f():
        os.close(fd)
    return f


OUTPUT_COMMANDS = [
    ["run", "--json", "-c", "print(1)"],
    ["run", "-c", "print(1)"],
    ["exec", "--json", "--preset", "trusted", "--", "/bin/true"],
    ["backends", "--json"],
    ["backends"],
    ["version"],
    ["plan", "-c", "print(1)"],
    ["policy", "show", "strict"],
]


def call_command(t):
    mod = t.write("m.py", "def f(x: int) -> int:\n    return x\n")
    return ["call", "--json", mod + ":f", "--args", '{"x": 1}']


def test_stdout_full(t):
    g.need_python()
    with open("/dev/full", "wb") as full:
        for args in OUTPUT_COMMANDS + [call_command(t)]:
            p = raw(args, cwd=t.tmp, stdout=full)
            g.check(p.returncode != 0, "govex %s > /dev/full exited 0" % " ".join(args))
            g.check(b"standard output" in p.stderr,
                    "govex %s > /dev/full: stderr does not say why: %r" % (" ".join(args),
                                                                         p.stderr))


def test_stdout_closed(t):
    g.need_python()
    for args in OUTPUT_COMMANDS + [call_command(t)]:
        p = raw(args, cwd=t.tmp, stdout=None, preexec_fn=close_fd(1))
        g.check(p.returncode != 0, "govex %s >&- exited 0" % " ".join(args))
        g.check(b"standard output" in p.stderr,
                "govex %s >&-: stderr does not say why: %r" % (" ".join(args), p.stderr))


def test_mcp_stdin_closed(t):
    # stdin closed: the server sees the end of its input at once and leaves
    try:
        p = raw(["mcp"], cwd=t.tmp, stdin=None, preexec_fn=close_fd(0), timeout=15)
    except subprocess.TimeoutExpired:
        raise g.Failure("govex mcp <&- did not exit within 15 s")
    g.eq(p.returncode, 0, "exit status of govex mcp <&-")


def test_run_stdin_closed(t):
    # --stdin - with stdin closed reads as empty; nothing of govex's lands on fd 0
    g.need_python()
    p = raw(["run", "--json", "--preset", "trusted", "--stdin", "-", "-c",
             "import sys; print(repr(sys.stdin.read()))"], cwd=t.tmp, stdin=None,
            preexec_fn=close_fd(0))
    g.eq(p.returncode, 0, "exit status (stderr %r)" % p.stderr)
    g.eq(json.loads(p.stdout)["stdout"], "''\n", "the program's stdin")


def test_fifo_refused(t):
    fifo = t.path("fifo")
    os.mkfifo(fifo)
    cases = [
        (["run", "--json", "--policy", fifo, "-c", "1"], g.EXIT_REFUSED, "invalid_policy"),
        (["run", "--json", "--plan", fifo, "-c", "1"], g.EXIT_REFUSED, "invalid_plan"),
        (["exec", "--json", "--policy", fifo, "--", "/bin/true"], g.EXIT_REFUSED,
         "invalid_policy"),
        (["call", "--json", "--plan", fifo], g.EXIT_REFUSED, "invalid_plan"),
        (["policy", "check", fifo], 2, None),
    ]
    for args, rc, code in cases:
        r = t.run(args, timeout=10)
        r.expect_rc(rc)
        g.check(fifo in r.err and "not a regular file" in r.err,
                "the error names the path and the cause: %r" % r.err)
        if code:
            g.diag(r.result(), code)


def test_fifo_stdin_still_read(t):
    # a FIFO (process substitution) is a legitimate --stdin and --args-file
    g.need_python()
    fifo = t.path("fifo")
    os.mkfifo(fifo)
    import threading

    def feed():
        with open(fifo, "wb") as f:
            f.write(b"hello")
    th = threading.Thread(target=feed, daemon=True)
    th.start()
    r = t.run(["run", "--json", "--preset", "trusted", "--stdin", fifo, "-c",
               "import sys; print(sys.stdin.read())"])
    th.join(5)
    r.expect_rc(0)
    g.eq(r.result()["stdout"], "hello\n", "stdout")


def low_nofile(n):
    def f():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return f


def test_host_nofile_below_policy(t):
    # the host's hard RLIMIT_NOFILE (64) is below the strict preset's open_files (256):
    # refused when planned, naming both, instead of a launch failing at rlimit_nofile
    g.need_python()
    p = raw(["run", "--json", "-c", "print(1)"], cwd=t.tmp, preexec_fn=low_nofile(64))
    g.eq(p.returncode, g.EXIT_REFUSED, "exit status (stderr %r)" % p.stderr)
    doc = json.loads(p.stdout)
    g.eq(doc["status"], "policy_refused", "status")
    d = g.diag(doc, "host_limit_too_low")
    g.eq((d.get("limit"), d.get("rlimit"), d.get("value"), d.get("host_hard_limit")),
         ("open_files", "RLIMIT_NOFILE", 256, 64), "the diagnostic's fields")
    g.check("64" in d["message"] and "256" in d["message"], "message: %r" % d["message"])
    # a policy within the host's limit runs (the interpreter probe fits in it too)
    pol = g.preset("strict")
    pol["limits"]["open_files"] = 32
    path = t.write_json("p.json", pol)
    p = raw(["run", "--json", "--policy", path, "-c", "print(1)"], cwd=t.tmp,
            preexec_fn=low_nofile(64))
    g.eq(p.returncode, 0, "exit status with open_files 32 (stdout %r stderr %r)"
         % (p.stdout[:400], p.stderr))


def test_ask_without_terminal_no_terminal(t):
    # no controlling terminal (a session of its own): every command says no_terminal
    g.need_python()
    pol = t.policy(network="allow", approval=["network"])
    mod = t.write("m.py", "def f(x: int) -> int:\n    return x\n")
    for args in (["run", "--json", "--ask", "--policy", pol, "-c", "print(1)"],
                 ["exec", "--json", "--ask", "--policy", pol, "--", "/bin/true"],
                 ["call", "--json", "--ask", "--policy", pol, mod + ":f", "--args", '{"x":1}']):
        r = t.run(args)
        r.expect_rc(g.EXIT_REFUSED)
        g.diag(r.result(), "no_terminal")


def test_platform_defaults_false_refused_at_planning(t):
    if not g.backend_available("restricted"):
        raise g.Skip("feature:restricted: the restricted backend is unavailable here")
    g.need_python()
    pol = g.preset("strict")
    pol["filesystem"]["platform_defaults"] = False
    path = t.write_json("p.json", pol)
    r = t.run(["plan", "--policy", path, "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    r = t.run(["run", "--json", "--policy", path, "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    doc = r.result()
    g.eq(doc["status"], "policy_refused", "status")
    d = g.diag(doc, "interpreter_not_readable")
    g.check(d.get("path", "").startswith("/"), "the missing file is named: %r" % d)


def test_env_value_not_utf8(t):
    g.need_python()
    pol = t.policy(environment={"allow": ["A"]})
    r = t.run(["run", "--json", "--policy", pol, "--env", b"A=x\xffsecret".decode(
        "utf-8", "surrogateescape"), "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    d = g.diag(r.result(), "invalid_environment")
    g.eq(d.get("name"), "A", "the variable named")
    g.check("secret" not in r.out and "secret" not in r.err, "the value was echoed")


def test_named_backend_refusal_says_who(t):
    r = t.run(["run", "--json", "--backend", "controlled", "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    m = g.diag(r.result(), "missing_controls")["message"]
    g.check("forced: selected" not in m and "'controlled'" in m and "--backend" in m,
            "message: %r" % m)


def test_named_workdir_missing(t):
    g.need_python()
    wd = t.path("no", "such", "dir")
    pol = t.policy(workdir=wd)
    r = t.run(["plan", "--policy", pol, "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    r = t.run(["run", "--json", "--policy", pol, "-c", "print(1)"])
    r.expect_rc(g.EXIT_REFUSED)
    g.eq(g.diag(r.result(), "workdir_missing").get("path"), wd, "path")


TESTS = [
    ("a result written to a full stdout: non-zero, said on stderr", test_stdout_full),
    ("a result written to a closed stdout: non-zero, said on stderr", test_stdout_closed),
    ("govex mcp with stdin closed sees its end and exits", test_mcp_stdin_closed),
    ("govex run with stdin closed: --stdin - is empty", test_run_stdin_closed),
    ("a policy or plan that is a FIFO is refused at once, naming it", test_fifo_refused),
    ("a FIFO is still read as --stdin", test_fifo_stdin_still_read),
    ("a host hard RLIMIT_NOFILE below open_files: refused when planned, naming both",
     test_host_nofile_below_policy),
    ("--ask without a terminal: no_terminal for run, exec and call",
     test_ask_without_terminal_no_terminal),
    ("platform_defaults false without the interpreter's files: refused when planned",
     test_platform_defaults_false_refused_at_planning),
    ("an environment value that is not UTF-8: refused naming the variable",
     test_env_value_not_utf8),
    ("a refusal on a named backend says who named it", test_named_backend_refusal_says_who),
    ("a named workdir that does not exist: refused when planned", test_named_workdir_missing),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
