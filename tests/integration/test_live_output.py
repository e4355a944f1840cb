#!/usr/bin/env python3
"""Live output: on a terminal and without --json, run/exec/call pass the program's output
through as it arrives and in order; --json and pipes are unchanged."""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


class Pty:
    """govex ARGS with stdout and stderr on one terminal (stdin /dev/null)."""

    def __init__(self, t, args):
        self.master, slave = pty.openpty()
        self.p = subprocess.Popen([g.GOVEX] + args, cwd=t.tmp, stdin=subprocess.DEVNULL,
                                  stdout=slave, stderr=slave, start_new_session=True,
                                  close_fds=True)
        os.close(slave)
        t.defer(self.close)
        self.buf = b""

    def read_until(self, want, timeout):
        end = time.monotonic() + timeout
        while want not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    b = os.read(self.master, 4096)
                except OSError:     # EIO: the terminal's other side is closed
                    return want in self.buf
                if not b:
                    return want in self.buf
                self.buf += b
        return True

    def finish(self, timeout=30):
        self.read_until(b"\0never\0", 0.2)
        rc = self.p.wait(timeout)
        self.read_until(b"\0never\0", 0.2)
        return rc

    def close(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.p.wait()
        try:
            os.close(self.master)
        except OSError:
            pass


# The program prints, then waits for the test to answer (a file) before it goes on:
# without live output the first line would only appear once the run ended.
WAITER = ("import os, sys, time\n"
          "print('first-line', flush=True)\n"
          "for _ in range(400):\n"
          "    if os.path.exists(%r):\n"
          "        break\n"
          "    time.sleep(0.025)\n"
          "else:\n"
          "    print('no-answer', flush=True)\n"
          "print('second-line', flush=True)\n")


def test_run_live(t):
    g.need_python()
    answer = t.path("answer")
    pol = g.preset("trusted")
    pol["filesystem"]["read"] = sorted(set(pol["filesystem"]["read"] + [t.tmp]))
    path = t.write_json("p.json", pol)
    # controlled: the program sees the test's directory (the answer file)
    s = Pty(t, ["run", "--policy", path, "--backend", "controlled", "-c", WAITER % answer])
    got = s.read_until(b"first-line", 8.0)
    g.check(got, "no live output before the run ended: %r" % s.buf)
    open(answer, "w").close()
    rc = s.finish()
    g.eq(rc, 0, "exit status")
    out = s.buf.replace(b"\r\n", b"\n")
    g.eq(out, b"first-line\nsecond-line\n", "the whole output, once")


ORDER = ("import sys, time\n"
         "for i in range(3):\n"
         "    sys.stdout.write('out%d\\n' % i); sys.stdout.flush(); time.sleep(0.05)\n"
         "    sys.stderr.write('err%d\\n' % i); sys.stderr.flush(); time.sleep(0.05)\n"
         "sys.exit(3)\n")


def test_order_and_exit(t):
    g.need_python()
    for backend in ("restricted", "controlled"):
        if not g.backend_available(backend):
            continue
        preset = "strict" if backend == "restricted" else "trusted"
        s = Pty(t, ["run", "--preset", preset, "--backend", backend, "-c", ORDER])
        rc = s.finish()
        g.eq(rc, 3, "%s: exit status" % backend)
        out = s.buf.replace(b"\r\n", b"\n")
        g.eq(out, b"out0\nerr0\nout1\nerr1\nout2\nerr2\n",
             "%s: stdout and stderr in arrival order, nothing printed twice" % backend)


def test_failure_summary_after_output(t):
    g.need_python()
    s = Pty(t, ["run", "--preset", "trusted", "--timeout-ms", "300", "-c",
                "import time\nprint('before', flush=True)\ntime.sleep(5)\n"])
    rc = s.finish()
    g.eq(rc, 124, "exit status")
    out = s.buf.replace(b"\r\n", b"\n").decode()
    g.check(out.startswith("before\n") and "timeout" in out and out.count("before") == 1,
            "output then the summary: %r" % out)


def test_exec_and_call_live(t):
    g.need_python()
    s = Pty(t, ["exec", "--preset", "trusted", "--", "sh", "-c", "echo one; echo two >&2"])
    g.eq(s.finish(), 0, "exec exit status")
    g.eq(s.buf.replace(b"\r\n", b"\n"), b"one\ntwo\n", "exec output")
    t.write("mod.py", "import sys\n\ndef f() -> int:\n"
            "    sys.stderr.write('from-call\\n')\n    sys.stderr.flush()\n    return 7\n")
    s = Pty(t, ["call", "--preset", "trusted", "mod.py:f"])
    g.eq(s.finish(), 0, "call exit status")
    out = s.buf.replace(b"\r\n", b"\n")
    g.check(out.endswith(b"7\n") and out.count(b"from-call") == 1,
            "call: the output live, then the value: %r" % out)


def test_json_and_pipes_unchanged(t):
    g.need_python()
    code = "import sys\nprint('o')\nsys.stderr.write('e\\n')\n"
    s = Pty(t, ["run", "--preset", "trusted", "--json", "-c", code])
    g.eq(s.finish(), 0, "exit status")
    text = s.buf.replace(b"\r\n", b"\n").decode()
    doc = json.loads(text)
    g.eq((doc["stdout"], doc["stderr"]), ("o\n", "e\n"), "--json on a terminal: one document")
    r = t.run(["run", "--preset", "trusted", "-c", code])
    r.expect_rc(0)
    g.eq((r.stdout, r.stderr), (b"o\n", b"e\n"), "pipes: the output once, at the end")


TESTS = [
    ("run on a terminal: output shown while the program still runs", test_run_live),
    ("stdout and stderr in arrival order, the program's exit status", test_order_and_exit),
    ("a failure's summary comes after the live output", test_failure_summary_after_output),
    ("exec and call pass output through live", test_exec_and_call_live),
    ("--json on a terminal and output to pipes are unchanged", test_json_and_pipes_unchanged),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
