#!/usr/bin/env python3
"""--ask: approval asked on the terminal (a pseudo-terminal here), y approves."""
import os
import pty
import select
import signal
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def converse(argv, answer, cwd, timeout=20.0):
    """Runs govex on a new pseudo-terminal, answers the prompt, returns (status, text)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execv(g.GOVEX, [g.GOVEX] + argv)
        finally:
            os._exit(127)
    text = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the other side closed
                    break
                if not chunk:
                    break
                text += chunk
            if not answered and b"approve? [y/N]" in text:
                os.write(fd, answer)
                answered = True
        else:
            raise g.Failure("no end within %.0f s; output %r" % (timeout, text[-400:]))
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status), text.decode("utf-8", "replace"), answered
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def ask_policy(t):
    return t.policy(network="allow", approval=["network"])


def test_ask_yes(t):
    pol = ask_policy(t)
    rc, text, answered = converse(["run", "--policy", pol, "--ask", "-c", "print(6*7)"], b"y\n",
                                  t.tmp)
    g.check(answered, "no prompt on the terminal: %r" % text)
    g.check("network" in text, "the prompt names the permission: %r" % text)
    g.eq(rc, 0, "exit status after approving")
    g.check("42" in text.split("approve? [y/N]", 1)[1], "the program ran: %r" % text)


def test_ask_no(t):
    pol = ask_policy(t)
    marker = t.path("ran")
    rc, text, answered = converse(["run", "--policy", pol, "--ask", "-c",
                                   "open(%r, 'w').close()" % marker], b"n\n", t.tmp)
    g.check(answered, "no prompt on the terminal: %r" % text)
    g.eq(rc, g.EXIT_REFUSED, "exit status after denying")
    g.check("approval_denied" in text or "denied" in text, "refusal said: %r" % text)
    g.check(not os.path.exists(marker), "the program ran although denied")


def test_ask_without_terminal(t):
    # no controlling terminal: --ask refuses instead of running unapproved
    pol = ask_policy(t)
    r = t.run(["run", "--policy", pol, "--ask", "--json", "-c", "print(1)"])
    g.eq(r.returncode, g.EXIT_REFUSED, "exit status")


TESTS = [
    ("--ask on a terminal: y approves and the run goes ahead", test_ask_yes),
    ("--ask on a terminal: n denies and nothing runs", test_ask_no),
    ("--ask without a terminal refuses", test_ask_without_terminal),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
