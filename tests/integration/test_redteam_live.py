#!/usr/bin/env python3
"""Round-2 red team RT-A: live output (contract section 3), written against the contract
before the implementation.

The library's on_output callback carries exactly the result's bytes (same bytes, in
order, per stream), never a byte past the output bounds, and as they arrive.  The CLI
on a terminal without --json passes the run's output through live and in order, never
past the bounds; --json on a terminal is unchanged.

Terminal control sequences (RT-A's decision, the contract leaves it open): the run's
own bytes go to the terminal UNCHANGED, byte for byte the result's bytes -- the contract
says "stdout bytes to its stdout", it is what govex printed at the end before this
round and what `python script.py` does; a caller who does not want a program to drive
their terminal uses --json or a pipe.  What govex prints ITSELF after the run (its
status line on a failure, diagnostics naming files the run chose) must stay readable
whatever the run printed: it starts on a line of its own, carries no control character
taken from the run, and is not swallowed by a sequence the run left open (an
unterminated OSC string, concealed text): govex ends such state (ST and SGR reset)
before its own line.  test_terminal_status_line_survives checks that part; it is the
one expectation here that goes beyond the contract's text.
"""
import base64
import errno
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import threading
import time
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "escape"))
sys.dont_write_bytecode = True
import rtahelp as h  # noqa: E402
import govextest as g  # noqa: E402

KiB = 1024


def _streams(ans):
    out = {1: b"", 2: b""}
    for s, data, _ in ans["chunks"]:
        g.check(s in (1, 2), "callback with stream %r" % s)
        g.check(len(data) > 0, "callback with an empty chunk")
        out[s] += data
    return out


MIXED = r'''
import os, sys, time
os.write(1, b"line one\n")
os.write(2, b"err \xff\xfe not utf-8 \x1b[31mred\x1b[0m\n")
os.write(1, b"no newline yet")
time.sleep(0.05)
os.write(1, b" ... now\n\x00NUL and \r CR\n")
for i in range(50):
    os.write(1 + (i % 2), b"%d " % i * 30 + b"\n")
os.write(2, b"tail without newline")
'''



def _exec_pol(t):
    """strict (restricted) with the system python's standard library readable: govex
    exec binds the executable and its libraries, not its stdlib."""
    import glob
    libs = sorted(p for p in glob.glob("/usr/lib/python3.*") if os.path.isdir(p))
    real = os.path.realpath("/usr/bin/python3")
    want = [p for p in libs if p.endswith(os.path.basename(real))] or libs[-1:]
    return h.pol(t, name="exec.json", filesystem={"read": want})

def test_callback_carries_the_result_bytes(t):
    """Per stream, the callback's chunks joined are exactly the result's stdout and
    stderr bytes (non-UTF-8, ESC, NUL, CR, partial lines included)."""
    ans = h.lib_run(t, MIXED, h.policy_doc(), callback=True)
    g.check("doc" in ans, "no result: %r" % ans)
    g.eq(ans["doc"]["status"], "success", "status")
    got = _streams(ans)
    g.check(ans["chunks"], "the callback was never called")
    g.eq(got[1], ans["stdout_raw"], "stdout through the callback vs the result's stdout")
    g.eq(got[2], ans["stderr_raw"], "stderr through the callback vs the result's stderr")


FLOOD = r'''
import os
for i in range(64):
    os.write(%d, b"%%06d" %% i + b"x" * 16378)
'''


def test_callback_never_past_the_bound(t):
    """A run writes 1 MiB to stdout (then, another run, to stderr) with the 64 KiB
    bound: the callback sees at most the bound, exactly the result's kept bytes; with
    a request limit of 100 bytes, at most 100."""
    for fd in (1, 2):
        ans = h.lib_run(t, FLOOD % fd, h.policy_doc(), callback=True)
        g.check("doc" in ans, "no result: %r" % ans)
        got = _streams(ans)
        raw = ans["stdout_raw"] if fd == 1 else ans["stderr_raw"]
        g.check(len(got[fd]) <= 64 * KiB, "fd %d: %d bytes passed to the callback past the "
                "64 KiB bound" % (fd, len(got[fd])))
        g.check(got[fd] == raw, "fd %d: callback bytes (%d) differ from the result's kept "
                "bytes (%d)" % (fd, len(got[fd]), len(raw)))
        g.check(got[fd], "fd %d: the callback saw nothing" % fd)
    limits = [0] * 8
    limits[6] = 100                                  # stdout_bytes
    ans = h.lib_run(t, FLOOD % 1, h.policy_doc(), callback=True, limits=limits)
    got = _streams(ans)
    g.check(len(got[1]) <= 100, "%d bytes passed with a 100-byte request bound"
            % len(got[1]))
    g.check(got[1] == ans["stdout_raw"], "callback (%d bytes) vs result (%d bytes) with a "
            "100-byte bound" % (len(got[1]), len(ans["stdout_raw"])))


LATE = r'''
import sys, time
print("early", flush=True)
time.sleep(2.0)
print("late", flush=True)
'''


def test_callback_is_live(t):
    """The first line reaches the callback while the run still sleeps (at least 1 s
    before its last line), not when it ends."""
    ans = h.lib_run(t, LATE, h.policy_doc(), callback=True)
    g.check("doc" in ans, "no result: %r" % ans)
    early = [ts for s, d, ts in ans["chunks"] if b"early" in d]
    late = [ts for s, d, ts in ans["chunks"] if b"late" in d]
    g.check(early and late, "callback chunks: %r" % ans["chunks"])
    g.check(late[0] - early[0] >= 1.0, "early arrived %.2f s, late %.2f s: not live"
            % (early[0], late[0]))


def test_callback_on_kills(t):
    """A run killed for its output (20 MiB past the bound: output_limit) and a run
    killed at its wall time while printing: the callback saw exactly the kept bytes,
    nothing past the bound, nothing after the kill."""
    flood = "import os\nwhile True:\n    os.write(1, b'f' * 65536)\n"
    ans = h.lib_run(t, flood, h.policy_doc(), callback=True, timeout=60)
    g.check("doc" in ans, "no result: %r" % ans)
    got = _streams(ans)
    g.check(len(got[1]) <= 64 * KiB, "%d bytes passed past the bound" % len(got[1]))
    g.check(got[1] == ans["stdout_raw"], "callback %d bytes vs kept %d (status %s)"
            % (len(got[1]), len(ans["stdout_raw"]), ans["doc"]["status"]))
    ticker = ("import sys, time\ni = 0\nwhile True:\n    print('tick %d' % i, flush=True)\n"
              "    i += 1\n    time.sleep(0.001)\n")
    limits = [0] * 8
    limits[0] = 1000                                 # wall_ms
    ans = h.lib_run(t, ticker, h.policy_doc(), callback=True, limits=limits)
    g.eq(ans["doc"]["status"], "timeout", "status of the ticker")
    got = _streams(ans)
    g.check(got[1] == ans["stdout_raw"], "timeout: callback %d bytes vs kept %d"
            % (len(got[1]), len(ans["stdout_raw"])))


# ---------------------------------------------------------------- the CLI on a terminal

def pty_run(t, args, timeout=30):
    """govex ARGS with stdout and stderr on one pseudo-terminal in raw mode (no CR
    added), stdin /dev/null.  Returns (rc, [(seconds, bytes)...], wall)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    t0 = time.monotonic()
    p = subprocess.Popen([g.GOVEX] + list(args), cwd=t.tmp, stdin=subprocess.DEVNULL,
                         stdout=slave, stderr=slave, start_new_session=True, close_fds=True)
    os.close(slave)
    got = []
    deadline = t0 + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    b = os.read(master, 65536)
                except OSError as ex:
                    if ex.errno == errno.EIO:
                        break
                    raise
                if not b:
                    break
                got.append((time.monotonic() - t0, b))
            elif p.poll() is not None:
                # drain what is left
                continue
        rc = p.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
        os.close(master)
    return rc, got, time.monotonic() - t0


ORDER = r'''
import os, time
os.write(1, b"<one>")
time.sleep(0.2)
os.write(2, b"<two>")
time.sleep(0.2)
os.write(1, b"<three>\n")
time.sleep(1.5)
os.write(2, b"<four>\n")
'''


def test_cli_terminal_live_and_in_order(t):
    """govex run on a terminal, no --json: <one> (stdout), <two> (stderr), <three>
    (stdout), <four> (stderr) appear in that order, <one> well before the end."""
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "-c", ORDER])
    data = b"".join(b for _, b in got)
    g.eq(rc, 0, "exit status (output %r)" % data)
    idx = [data.find(m) for m in (b"<one>", b"<two>", b"<three>", b"<four>")]
    g.check(all(i >= 0 for i in idx), "markers missing on the terminal: %r" % data)
    g.check(idx == sorted(idx), "stdout and stderr out of order on the terminal: %r" % data)
    first = [ts for ts, b in got if b"<one>" in b]
    last = got[-1][0]
    g.check(first and last - first[0] >= 1.0,
            "<one> reached the terminal at %.2f s, the end at %.2f s: not live"
            % (first[0] if first else -1, last))
    g.eq(data.replace(b"<four>\n", b"").find(b"govex"), -1, "govex printed something "
         "after a successful run: %r" % data)


def test_cli_terminal_bound(t):
    """On a terminal, a run writing 1 MiB to stdout and to stderr under 64 KiB bounds:
    at most 64 KiB of each reaches the terminal (plus govex's own status line)."""
    code = ("import os\nfor i in range(64):\n    os.write(1, b'o' * 16384)\n"
            "for i in range(64):\n    os.write(2, b'e' * 16384)\n")
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "-c", code], timeout=40)
    data = b"".join(b for _, b in got)
    g.check(data.count(b"o") <= 64 * KiB + 200, "%d stdout bytes on the terminal past the "
            "64 KiB bound" % data.count(b"o"))
    g.check(data.count(b"e") <= 64 * KiB + 200, "%d stderr bytes on the terminal past the "
            "64 KiB bound" % data.count(b"e"))
    g.check(data.count(b"o") >= 1024, "the run's stdout never reached the terminal")


def test_cli_terminal_bytes_unchanged(t):
    """On a terminal the run's bytes (ESC sequences, non-UTF-8, CR) pass unchanged: what
    the terminal receives before govex's own text is exactly the result's bytes."""
    code = ("import os\nos.write(1, b'\\x1b[1mbold\\x1b[0m \\xff\\xfe \\r\\n')\n"
            "os.write(1, b'\\x1b]0;title\\x07 end\\n')\n")
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "-c", code])
    data = b"".join(b for _, b in got)
    want = b"\x1b[1mbold\x1b[0m \xff\xfe \r\n\x1b]0;title\x07 end\n"
    g.eq(data, want, "the terminal's bytes")
    g.eq(rc, 0, "exit status")


def test_cli_terminal_failure_output_once(t):
    """A run that prints and fails (exit 3; and one killed at its wall time): its output
    reaches the terminal once (live), not again at the end."""
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "-c",
                                "import sys\nprint('ONCE-OUT')\n"
                                "print('ONCE-ERR', file=sys.stderr)\nsys.exit(3)\n"])
    data = b"".join(b for _, b in got)
    g.eq(rc, 3, "exit status (terminal: %r)" % data)
    g.eq((data.count(b"ONCE-OUT"), data.count(b"ONCE-ERR")), (1, 1),
         "times the output appears on the terminal: %r" % data)
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "--timeout-ms", "800", "-c",
                                "import time\nprint('ONCE-T', flush=True)\ntime.sleep(30)\n"])
    data = b"".join(b for _, b in got)
    g.eq(rc, g.EXIT_TIMEOUT, "exit status (terminal: %r)" % data)
    g.eq(data.count(b"ONCE-T"), 1, "times the output appears on the terminal: %r" % data)


def test_cli_terminal_never_handed_to_the_run(t):
    """Live output goes through govex: with govex on a terminal the run's stdout and
    stderr are still not a terminal, /dev/tty cannot be opened, and TIOCSTI on fds
    0-2 fails (a run holding the caller's terminal could push keystrokes into it)."""
    code = ("import os, json, fcntl, termios\nr = {}\n"
            "r['isatty'] = [os.isatty(i) for i in (0, 1, 2)]\n"
            "try:\n    os.open('/dev/tty', os.O_RDWR)\n    r['devtty'] = True\n"
            "except OSError as e:\n    r['devtty'] = e.errno\n"
            "r['tiocsti'] = []\nfor fd in (0, 1, 2):\n    try:\n"
            "        fcntl.ioctl(fd, termios.TIOCSTI, b'#')\n        r['tiocsti'].append(fd)\n"
            "    except OSError:\n        pass\n"
            "print('RTA-TTY ' + json.dumps(r))\n")
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "-c", code])
    data = b"".join(b for _, b in got)
    line = [l for l in data.splitlines() if l.startswith(b"RTA-TTY ")]
    g.check(line, "no answer from the run: %r" % data)
    r = json.loads(line[0][8:])
    g.eq(r["isatty"], [False, False, False], "isatty(0, 1, 2) inside with govex on a tty")
    g.check(r["devtty"] is not True, "the run opened /dev/tty")
    g.eq(r["tiocsti"], [], "fds on which TIOCSTI worked")


def test_cli_terminal_json_unchanged(t):
    """--json on a terminal: exactly one govex.result/v1 document, no live bytes."""
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "--json", "-c", ORDER])
    data = b"".join(b for _, b in got)
    try:
        doc = json.loads(data.decode())
    except ValueError as ex:
        raise g.Failure("--json on a terminal is not one JSON document (%s): %r" % (ex, data))
    g.eq(doc["stdout"], "<one><three>\n", "result stdout")


def _procs_with_comm(name):
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/comm" % n) as f:
                    if f.read().strip() == name:
                        out.append(int(n))
            except OSError:
                pass
    return out


STALL = ("import ctypes, os, time\nctypes.CDLL(None).prctl(15, b'%s', 0, 0, 0)\n"
         "for i in range(64):\n    os.write(1, b'y' * 1000)\ntime.sleep(30)\n")


def _stalled(t, comm, during):
    """govex run on a terminal nobody reads (a stalled terminal: ^S, a stopped pager, a
    stuck ssh); DURING(popen) runs meanwhile.  Returns (run processes seen by DURING,
    govex's exit status after the terminal is drained)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    p = subprocess.Popen([g.GOVEX, "run", "--policy", h.pol(t), "--timeout-ms", "2000",
                          "-c", STALL % comm], cwd=t.tmp, stdin=subprocess.DEVNULL,
                         stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        seen = during(p)
        end = time.monotonic() + 30
        while time.monotonic() < end:            # drain: let govex finish
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    if not os.read(master, 65536):
                        break
                except OSError:
                    break
            elif p.poll() is not None:
                break
        rc = p.wait(timeout=10)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
        os.close(master)
        for pid in _procs_with_comm(comm):
            t.kill_later(pid)
    return seen, rc


def test_cli_stalled_terminal_keeps_wall_time(t):
    """The run writes 64 KB to a terminal nobody reads, then sleeps: govex's live
    passthrough blocks on the terminal, but the run's wall time (2 s) is still enforced:
    5 s after the start the run's process is gone.  And govex cancelled by SIGINT while
    the terminal is stalled: the run is gone 2 s later."""
    def late_look(p):
        time.sleep(5.0)
        return _procs_with_comm("rta-stall-wall")
    seen, rc = _stalled(t, "rta-stall-wall", late_look)
    g.check(not seen, "the run was still alive 5 s into a 2 s wall limit while the terminal "
            "was stalled (pids %r): the supervisor blocked writing live output and stopped "
            "enforcing the wall time" % seen)
    g.eq(rc, g.EXIT_TIMEOUT, "exit status")

    def interrupt(p):
        time.sleep(1.0)
        os.kill(p.pid, signal.SIGINT)
        time.sleep(2.0)
        return _procs_with_comm("rta-stall-int")
    seen, rc = _stalled(t, "rta-stall-int", interrupt)
    g.check(not seen, "the run was still alive 2 s after SIGINT to govex while the "
            "terminal was stalled (pids %r)" % seen)


def test_terminal_status_line_survives(t):
    """RT-A's expectation (see the module's docstring): a run that leaves an OSC string
    open, concealed text on, and no final newline, then times out: govex's status line
    on the terminal starts on a new line, after a string terminator and an SGR reset,
    so the terminal shows it; it carries no ESC of the run's."""
    code = ("import os, time\nos.write(2, b'\\x1b[8m\\x1b]0;swallow everything after')\n"
            "time.sleep(30)\n")
    rc, got, wall = pty_run(t, ["run", "--policy", h.pol(t), "--timeout-ms", "1000",
                                "-c", code])
    data = b"".join(b for _, b in got)
    g.eq(rc, g.EXIT_TIMEOUT, "exit status (terminal: %r)" % data)
    run_part = b"\x1b[8m\x1b]0;swallow everything after"
    g.check(data.startswith(run_part), "the run's bytes first: %r" % data)
    rest = data[len(run_part):]
    i = rest.find(b"govex")
    g.check(i >= 0, "no status line from govex: %r" % data)
    before = rest[:i]
    g.check(b"\x07" in before or b"\x1b\\" in before,
            "the run's open OSC string is not terminated before govex's line: %r" % rest)
    g.check(b"\x1b[0m" in before or b"\x1b[m" in before,
            "no SGR reset before govex's line (concealed text stays on): %r" % rest)
    g.check(before.endswith(b"\n") or b"\n" in before,
            "govex's line does not start on a new line: %r" % rest)
    g.check(b"\x1b" not in rest[i:], "an ESC inside govex's own text: %r" % rest[i:])


def test_cli_exec_terminal_live(t):
    """govex exec on a terminal: live, like run."""
    rc, got, wall = pty_run(t, ["exec", "--policy", _exec_pol(t), "--",
                                os.path.realpath("/usr/bin/python3"), "-I", "-S", "-c", LATE])
    data = b"".join(b for _, b in got)
    g.eq(rc, 0, "exit status (terminal: %r)" % data)
    e = [ts for ts, b in got if b"early" in b]
    l_ = [ts for ts, b in got if b"late" in b]
    g.check(e and l_ and l_[0] - e[0] >= 1.0, "exec output not live on the terminal: %r"
            % got)


def test_cli_call_terminal_live(t):
    """govex call on a terminal: the function's stdout reaches the terminal while it
    runs (contract 2 and 3: a call's output is its own, passed through live)."""
    mod = t.write("mod.py", "import time\n\ndef f() -> int:\n    print('early', flush=True)\n"
                            "    time.sleep(2.0)\n    print('late', flush=True)\n    return 7\n")
    rc, got, wall = pty_run(t, ["call", "--policy", h.pol(t), mod + ":f"])
    data = b"".join(b for _, b in got)
    g.eq(rc, 0, "exit status (terminal: %r)" % data)
    e = [ts for ts, b in got if b"early" in b]
    l_ = [ts for ts, b in got if b"late" in b]
    g.check(e and l_ and l_[0] - e[0] >= 1.0, "call output not live on the terminal: %r"
            % got)
    g.check(b"7" in data.split(b"late", 1)[-1], "the value after the output: %r" % data)


if __name__ == "__main__":
    sys.exit(g.main([
        ("the callback carries exactly the result's bytes",
         test_callback_carries_the_result_bytes),
        ("the callback never sees bytes past the bounds", test_callback_never_past_the_bound),
        ("the callback is called as the output arrives", test_callback_is_live),
        ("CLI on a terminal: live and in order", test_cli_terminal_live_and_in_order),
        ("CLI on a terminal: never past the bounds", test_cli_terminal_bound),
        ("CLI on a terminal: the run's bytes unchanged", test_cli_terminal_bytes_unchanged),
        ("CLI on a terminal: the terminal is never handed to the run",
         test_cli_terminal_never_handed_to_the_run),
        ("CLI on a terminal with --json: one document", test_cli_terminal_json_unchanged),
        ("CLI on a terminal: a failed run's output appears once",
         test_cli_terminal_failure_output_once),
        ("CLI on a stalled terminal: wall time and SIGINT still end the run",
         test_cli_stalled_terminal_keeps_wall_time),
        ("CLI on a terminal: govex's status line survives what the run left open",
         test_terminal_status_line_survives),
        ("the callback on runs killed for output and for time", test_callback_on_kills),
        ("CLI exec on a terminal: live", test_cli_exec_terminal_live),
        ("CLI call on a terminal: live", test_cli_call_terminal_live),
    ]))
