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


def raw(args, *, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, pass_fds=(),
        preexec_fn=None, timeout=20):
    """govex ARGS with the given stdio (a closed fd: None in pass_fds terms, see below)."""
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


TESTS = [
    ("a result written to a full stdout: non-zero, said on stderr", test_stdout_full),
    ("a result written to a closed stdout: non-zero, said on stderr", test_stdout_closed),
    ("govex mcp with stdin closed sees its end and exits", test_mcp_stdin_closed),
    ("govex run with stdin closed: --stdin - is empty", test_run_stdin_closed),
    ("a policy or plan that is a FIFO is refused at once, naming it", test_fifo_refused),
    ("a FIFO is still read as --stdin", test_fifo_stdin_still_read),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
