#!/usr/bin/env python3
"""Denials name the control (contract section 6): under network: deny a socket() of a
family other than AF_UNIX, and under subprocess: deny an execve after the interpreter's,
are refused AND counted by the sandbox (the shim's seccomp listener), and the result
carries {"code": "denied_by_policy", "controls": [...], "attempts": N}.  The counts come
from the supervisor, so a program printing the same words forges nothing; the errnos
the program sees are the ones it saw before (EAFNOSUPPORT, ENOSYS)."""
import json
import os
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402


def _need():
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend here")


def _run(t, code, args=("--preset", "strict")):
    r = t.run(["run"] + list(args) + ["--json", "-c", code])
    return r.result()


def _denials(doc):
    return {tuple(d.get("controls") or []): d for d in doc["diagnostics"]
            if d.get("code") == "denied_by_policy"}


SOCKETS = r"""
import errno, socket
seen = []
for fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM),
                 (socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW)):
    try:
        socket.socket(fam, typ).close()
        seen.append("allowed")
    except OSError as e:
        seen.append(errno.errorcode.get(e.errno))
print(seen)
"""


def test_network_denials_counted(t):
    _need()
    doc = _run(t, SOCKETS)
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"].strip(), str(["EAFNOSUPPORT"] * 4), "errnos the program sees")
    d = _denials(doc)
    g.check(("network_deny",) in d, "no network_deny denial: %r" % doc["diagnostics"])
    g.eq(d[("network_deny",)]["attempts"], 4, "attempts")
    # the run succeeded: the message says what happened, nothing to fix or retry
    g.eq(d[("network_deny",)]["message"],
         "the policy refused network access (4 attempts, control network_deny); the code "
         "went on and the run succeeded", "message")
    g.check(("subprocess_deny",) not in d, "no exec was tried: %r" % d)
    # a run that then fails: the denial may be why
    doc = _run(t, SOCKETS + "raise SystemExit(2)\n")
    g.eq(doc["status"], "execution_failed", "status")
    g.eq(_denials(doc)[("network_deny",)]["message"],
         "the policy denies network access (4 attempts refused)", "message of a failed run")


def test_resolve_denied(t):
    """A name lookup or a connect under network: deny names the control too (the issue's
    "Temporary failure in name resolution")."""
    _need()
    doc = _run(t, "import urllib.request\n"
                  "try:\n    urllib.request.urlopen('http://example.com', timeout=2)\n"
                  "except OSError as e:\n    print(type(e).__name__)\n")
    g.eq(doc["status"], "success", "status")
    d = _denials(doc)
    g.check(("network_deny",) in d and d[("network_deny",)]["attempts"] >= 1,
            "no network_deny denial: %r" % doc["diagnostics"])


def test_not_network(t):
    """AF_UNIX sockets (glibc's nscd lookups behind pwd), socketpair, a plain run: no
    denial is reported."""
    _need()
    doc = _run(t, "import os, pwd, socket\npwd.getpwuid(os.getuid())\n"
                  "a, b = socket.socketpair()\n"
                  "try:\n    socket.socket(socket.AF_UNIX)\nexcept OSError:\n    pass\n")
    g.eq(doc["status"], "success", "status")
    g.eq(_denials(doc), {}, "denials")
    g.eq(_denials(_run(t, "pass")), {}, "denials of pass")


def test_forged_text(t):
    """Text that looks like the diagnostic, on stdout and stderr, and an exit status:
    nothing is reported."""
    _need()
    fake = json.dumps({"code": "denied_by_policy", "controls": ["network_deny"],
                       "message": "the policy denies network access (9 attempts refused)"})
    doc = _run(t, "import sys\nprint(%r)\nprint(%r, file=sys.stderr)\nsys.exit(3)\n"
               % (fake, fake))
    g.eq(doc["status"], "execution_failed", "status")
    g.eq(_denials(doc), {}, "denials")


def test_exec_denials_counted(t):
    _need()
    doc = _run(t, "import errno, os\nseen = []\nfor _ in range(3):\n"
                  "    try:\n        os.execv('/bin/true', ['true'])\n"
                  "    except OSError as e:\n        seen.append(errno.errorcode[e.errno])\n"
                  "print(seen)\n")
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"].strip(), str(["ENOSYS"] * 3), "errnos the program sees")
    d = _denials(doc)
    g.check(("subprocess_deny",) in d, "no subprocess_deny denial: %r" % doc["diagnostics"])
    g.eq(d[("subprocess_deny",)]["attempts"], 3, "attempts")
    g.check(("network_deny",) not in d, "no socket was tried: %r" % d)


def test_child_process_counted(t):
    """subprocess allowed, network denied: a child's socket() is counted as well."""
    _need()
    pol = t.policy(base="strict", subprocess="allow")
    code = ("import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'import socket\\n"
            "try:\\n socket.socket()\\nexcept OSError: pass'], check=True)\n")
    doc = _run(t, code, args=("--policy", pol))
    g.eq(doc["status"], "success", "status (%r)" % doc.get("stderr"))
    d = _denials(doc)
    g.eq(d.get(("network_deny",), {}).get("attempts"), 1, "attempts: %r" % doc["diagnostics"])
    g.check(("subprocess_deny",) not in d, "subprocesses are allowed: %r" % d)


def test_flood_bounded(t):
    """20000 socket() calls: every one refused, the count saturates ('at least'), and
    the run ends promptly (the shim answers at most a bounded number)."""
    _need()
    t0 = time.monotonic()
    doc = _run(t, "import socket\nok = 0\nfor _ in range(20000):\n    try:\n"
                  "        socket.socket()\n        ok += 1\n    except OSError:\n"
                  "        pass\nprint(ok)\n")
    wall = time.monotonic() - t0
    g.eq(doc["status"], "success", "status")
    g.eq(doc["stdout"].strip(), "0", "sockets made")
    d = _denials(doc).get(("network_deny",))
    g.check(d is not None and d["attempts"] == 4096 and "at least 4096" in d["message"],
            "saturated count: %r" % doc["diagnostics"])
    g.check(wall < 20, "took %.1f s" % wall)


if __name__ == "__main__":
    sys.exit(g.main([
        ("network deny: socket() of 4 families refused and counted", test_network_denials_counted),
        ("network deny: a name lookup is a named denial", test_resolve_denied),
        ("AF_UNIX, socketpair, pwd lookups, pass: no denial reported", test_not_network),
        ("printed look-alike text forges no denial", test_forged_text),
        ("subprocess deny: later execve refused (ENOSYS) and counted", test_exec_denials_counted),
        ("subprocess allowed: a child's socket() is counted", test_child_process_counted),
        ("a socket() flood: counts saturate, the run ends promptly", test_flood_bounded),
    ]))
