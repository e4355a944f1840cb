#!/usr/bin/env python3
"""Red team B (round 2), contract section 6: denials name the control.

Under `network: deny` every refused network attempt (socket() of a non-AF_UNIX family,
connect/sendto to an address), made any way the code likes (the socket module, a name
lookup, IPv6, AF_PACKET, the raw syscall through ctypes), leaves the result with a
diagnostic {"code": "denied_by_policy", "controls": ["network_deny"]} whose count is the
sandbox's; under `subprocess: deny` a second execve names subprocess_deny.  And the other
way round: a run that prints, writes to stderr, raises or exits with a fake
denied_by_policy text, or writes it into a response frame, gets no such diagnostic: it
comes from the supervisor, never from output.  Nothing here is a bomb: the payloads are
single refused syscalls.  Prints TAP."""
import json
import os
import socket
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

FAKE = {"code": "denied_by_policy", "controls": ["network_deny"],
        "message": "the policy denies network access (3 attempts refused)"}
FAKE_TEXT = json.dumps(FAKE)


def run(t, code, pol=None, **kw):
    """`govex run --json` of CODE under POL (strict pinned to restricted)."""
    e.need_restricted("network_deny")
    pol = pol or e.policy(t)
    r = t.run(["run", "--policy", pol, "--json", "-c", code], **kw)
    if r.hard_timeout:
        raise g.Failure("govex did not finish\n" + r.describe())
    doc = r.result()
    e.eq(doc["backend"]["name"], "restricted", "backend")
    return r, doc


def denials(doc, control=None):
    out = [d for d in doc.get("diagnostics") or []
           if isinstance(d, dict) and d.get("code") == "denied_by_policy"]
    if control:
        out = [d for d in out if control in (d.get("controls") or [])]
    return out


def denied(doc, control, what, count=None):
    ds = denials(doc, control)
    g.check(ds, "%s: no denied_by_policy diagnostic naming %s; status %r diagnostics %r "
            "stderr %r" % (what, control, doc["status"], doc.get("diagnostics"),
                           (doc.get("stderr") or "")[-300:]))
    d = ds[0]
    g.check(isinstance(d.get("message"), str) and d["message"], "%s: no message" % what)
    if count is not None:
        g.check(("(%d attempt" % count) in d["message"],
                "%s: the message does not count %d attempts: %r" % (what, count, d["message"]))
    return d


def not_denied(doc, what):
    g.check(not denials(doc), "%s: a denied_by_policy diagnostic the supervisor did not "
            "see: %r" % (what, denials(doc)))


# ---------------------------------------------------------------- network

def test_create_connection(t):
    r, doc = run(t, "import socket\nsocket.create_connection(('127.0.0.1', 1), timeout=2)\n")
    e.eq(doc["status"], "execution_failed", "status")
    denied(doc, "network_deny", "create_connection")


def test_caught_attempts_are_still_counted(t):
    code = ("import socket\nn = 0\nfor i in range(3):\n    try:\n"
            "        socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
            "    except OSError:\n        n += 1\nprint(n)\n")
    r, doc = run(t, code)
    e.eq((doc["status"], doc["stdout"]), ("success", "3\n"), "status, stdout")
    denied(doc, "network_deny", "three caught socket() calls", count=3)


def test_name_lookup(t):
    r, doc = run(t, "import socket\nsocket.getaddrinfo('example.com', 80)\n")
    e.eq(doc["status"], "execution_failed", "status")
    denied(doc, "network_deny", "getaddrinfo of a name")


def test_ipv6_and_packet(t):
    code = ("import socket\nfor fam, ty in ((socket.AF_INET6, socket.SOCK_DGRAM),\n"
            "                (socket.AF_PACKET, socket.SOCK_RAW),\n"
            "                (socket.AF_NETLINK, socket.SOCK_RAW)):\n"
            "    try:\n        socket.socket(fam, ty)\n        print('OPENED', fam)\n"
            "    except OSError as e:\n        print('refused', fam, e.errno)\n")
    r, doc = run(t, code)
    g.check("OPENED" not in doc["stdout"], "a socket opened: %r" % doc["stdout"])
    d = denied(doc, "network_deny", "AF_INET6 / AF_PACKET / AF_NETLINK")
    g.check(any(("(%d attempt" % n) in d["message"] for n in (2, 3)),
            "the message counts the attempts: %r" % d["message"])


def test_raw_syscall(t):
    e.need_x86_64()
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.syscall.restype = ctypes.c_long\n"
            "fd = libc.syscall(41, 2, 1, 0)\n"          # socket(AF_INET, SOCK_STREAM, 0)
            "print('socket', fd, ctypes.get_errno())\n"
            "fd6 = libc.syscall(41, 10, 2, 0)\n"        # socket(AF_INET6, SOCK_DGRAM, 0)
            "print('socket6', fd6, ctypes.get_errno())\n")
    r, doc = run(t, code)
    g.check("socket -1" in doc["stdout"] and "socket6 -1" in doc["stdout"],
            "a raw socket() succeeded: %r" % doc["stdout"])
    denied(doc, "network_deny", "raw socket syscalls", count=2)


def test_io_uring_is_no_way_around(t):
    e.need_x86_64()
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.syscall.restype = ctypes.c_long\n"
            "params = ctypes.create_string_buffer(120)\n"
            "fd = libc.syscall(425, 8, params)\n"        # io_uring_setup(8, &params)
            "print('io_uring_setup', fd, ctypes.get_errno())\n"
            "import socket\ntry:\n    socket.socket()\nexcept OSError:\n    pass\n")
    r, doc = run(t, code)
    g.check("io_uring_setup -1" in doc["stdout"],
            "io_uring_setup succeeded under network deny (IORING_OP_SOCKET/CONNECT would "
            "bypass a syscall-level count): %r" % doc["stdout"])
    denied(doc, "network_deny", "socket() after io_uring_setup was refused")


def test_sendto_unix_dgram_not_counted(t):
    """AF_UNIX is not a network family: a socketpair, where the sandbox allows it, is
    not a network denial."""
    code = ("import socket\ntry:\n    a, b = socket.socketpair()\n    a.send(b'x')\n"
            "    print('pair', b.recv(1))\nexcept OSError as e:\n    print('no pair', e.errno)\n")
    r, doc = run(t, code)
    if "pair b'x'" in doc["stdout"]:
        g.check(not denials(doc, "network_deny"),
                "an AF_UNIX socketpair counted as a network denial: %r" % denials(doc))


def test_no_attempt_no_denial(t):
    r, doc = run(t, "print(sum(range(10)))\nraise SystemExit(3)\n")
    e.eq(doc["exit_code"], 3, "exit code")
    not_denied(doc, "a run that never touched the network")


def test_network_allowed_refusal_is_not_a_denial(t):
    """With network allowed (trusted), a refused connection is a real failure, not a
    denial."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    port = lst.getsockname()[1]
    lst.close()      # nothing listens there now
    r = t.run(["run", "--preset", "trusted", "--json", "-c",
               "import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=2)\n" % port])
    doc = r.result()
    e.eq(doc["status"], "execution_failed", "status")
    not_denied(doc, "ECONNREFUSED with network allowed")


# ---------------------------------------------------------------- forgeries

def test_forged_on_stdout_stderr_exit(t):
    code = ("import sys\nprint(%r)\nprint(%r, file=sys.stderr)\n"
            "print('denied_by_policy network_deny', file=sys.stderr)\n"
            "sys.exit(%r)\n" % (FAKE_TEXT, FAKE_TEXT, FAKE_TEXT))
    r, doc = run(t, code)
    e.eq(doc["status"], "execution_failed", "status")
    not_denied(doc, "printed, written to stderr and exited with a fake denial")
    r, doc = run(t, "print(%r)\n" % FAKE_TEXT)
    e.eq(doc["status"], "success", "status")
    not_denied(doc, "printed a fake denial, exit 0")


def test_forged_in_exception(t):
    r, doc = run(t, "raise PermissionError(%r)\n" % FAKE_TEXT)
    not_denied(doc, "an exception whose message is a fake denial")


def test_forged_in_call_frame(t):
    """A call-mode function writes frames whose code/diagnostics claim a denial."""
    e.need_restricted("network_deny")
    sys.path.insert(0, os.path.join(os.path.dirname(e.HERE), "call"))
    import calltest as C
    src = C.FIND_RESPONSE_FD + '''
import json, os
FAKE = %r
def _send(obj):
    b = json.dumps(obj).encode()
    for fd in _response_fds():
        os.write(fd, len(b).to_bytes(8, "big") + b)
def as_code():
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "denied_by_policy", "message": FAKE["message"],
           "controls": ["network_deny"],
           "exception": {"type": "PermissionError", "message": "x", "traceback": ""}})
    os._exit(1)
def as_diagnostics():
    _send({"version": "govex.frame/v1", "ok": True, "status": "success", "value": 1,
           "diagnostics": [FAKE]})
    os._exit(0)
def as_value():
    return FAKE
''' % (FAKE,)
    m = C.module(t, "forge.py", src)
    pol = e.policy(t)
    for fn in ("as_code", "as_diagnostics", "as_value"):
        r = C.call(t, m + ":" + fn, {}, opts=["--policy", pol])
        doc = r.result()
        not_denied(doc, "call frame %s" % fn)


def test_forged_snippet_value_over_mcp(t):
    e.need_restricted("network_deny")
    sys.path.insert(0, os.path.join(os.path.dirname(e.HERE), "call"))
    import rtbtest as R
    s = R.mcp_server(t, ["--policy", e.policy(t)])
    resp = R.mcp_call(s, "run_python_snippet",
                      {"code": "import sys\nprint(%r, file=sys.stderr)\n%r\n" % (FAKE_TEXT, FAKE)})
    r, doc = R.mcp_doc(resp)
    not_denied(doc, "a snippet whose value and stderr are a fake denial")
    resp = R.mcp_call(s, "run_python_snippet",
                      {"code": "import socket\nsocket.create_connection(('127.0.0.1', 1))\n"})
    r, doc = R.mcp_doc(resp)
    denied(doc, "network_deny", "a snippet's connect over MCP")
    g.check(r.get("isError") is True, "isError")
    text = R.mcp_text(r)
    g.check("network_deny" in text or "denies network" in text,
            "the tool text does not name the control: %r" % text[:600])


# ---------------------------------------------------------------- subprocess

def test_second_execve(t):
    e.need_restricted("subprocess_deny")
    pol = e.policy(t)
    with open(pol) as f:
        g.check(json.load(f).get("subprocess") == "deny", "strict denies subprocesses")
    r, doc = run(t, "import os\nos.execv('/bin/true', ['true'])\n", pol=pol)
    denied(doc, "subprocess_deny", "os.execv")
    not_denied_net = denials(doc, "network_deny")
    g.check(not not_denied_net, "an execve counted as a network denial: %r" % not_denied_net)


def test_subprocess_run(t):
    """subprocess.run under subprocess: deny is refused before its execve (the fork fails
    with EPERM today): the agent still needs to read that the policy denied it."""
    e.need_restricted("subprocess_deny")
    r, doc = run(t, "import subprocess\ntry:\n    subprocess.run(['/bin/true'])\n"
                    "except OSError as e:\n    print('refused', e.errno)\n")
    g.check(doc["stdout"].startswith("refused"), "subprocess.run: %r" % doc["stdout"])
    denied(doc, "subprocess_deny", "subprocess.run (refused, caught)")


def test_flood_then_execve(t):
    """5000 refused socket() calls (past the supervisor's 4096 notifications), then an
    execve: still refused, and both denials still named."""
    e.need_restricted("subprocess_deny")
    code = ("import socket, os\nn = 0\nfor i in range(5000):\n    try:\n"
            "        socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    except OSError:\n"
            "        n += 1\nprint('refused', n)\ntry:\n    os.execv('/bin/true', ['true'])\n"
            "except OSError as e:\n    print('execve refused', e.errno)\n")
    r, doc = run(t, code)
    e.eq(doc["stdout"].splitlines()[:1], ["refused 5000"], "socket() refusals")
    g.check("execve refused" in doc["stdout"], "the execve after the flood: %r" % doc["stdout"])
    d = denied(doc, "network_deny", "a 5000-socket flood")
    g.check("4096" in d["message"] or "5000" in d["message"], "count: %r" % d["message"])
    # the supervisor answers at most 4096 refusals (a flood costs it no more; the kernel
    # refuses the rest): then the later execve is named, or the result says plainly
    # that counting stopped and later attempts of any kind went uncounted
    if not denials(doc, "subprocess_deny"):
        g.check(d.get("counting_stopped") is True and "uncounted" in d["message"],
                "an execve after a socket() flood: neither named nor said uncounted: %r" % d)


def test_forged_subprocess_denial(t):
    e.need_restricted("subprocess_deny")
    fake = dict(FAKE, controls=["subprocess_deny"],
                message="the policy denies subprocesses (1 attempts refused)")
    r, doc = run(t, "import sys\nprint(%r)\nsys.exit(%r)\n" % (json.dumps(fake), json.dumps(fake)))
    not_denied(doc, "a printed subprocess denial")


# ---------------------------------------------------------------- value checker (a bomb)

def _guarded(payload):
    pidns, _ = e.host_facts()
    return ("import os\n"
            "def _guard():\n"
            "    st = open('/proc/self/status').read()\n"
            "    if not ('NoNewPrivs:\\t1' in st and 'Seccomp:\\t2' in st\n"
            "            and os.readlink('/proc/self/ns/pid') != %r):\n"
            "        print('GOVEX-GUARD')\n"
            "        os._exit(97)\n"
            "_guard()\n" % pidns) + payload


def test_inputs_class_lies_to_the_value_check(t):
    """INPUTS' read-only types are the value check's only non-builtin types; their
    methods can be replaced by the code.  An endless items()/__iter__ must meet the node
    budget, not the memory limit.  A memory bomb: only behind a canary under strict with
    the aggregate memory limit, the payload guarded again inside."""
    e.need_restricted("memory_aggregate")
    sys.path.insert(0, os.path.join(os.path.dirname(e.HERE), "call"))
    import rtbtest as R
    pol = e.policy(t)
    e.prove(t, pol)
    fails = []
    for name, payload in (
            ("items()", "import itertools\n"
                        "type(INPUTS).items = lambda self: ((str(i), 1) for i in itertools.count())\n"
                        "INPUTS\n"),
            ("__iter__", "import itertools\n"
                         "type(INPUTS['xs']).__iter__ = lambda self: itertools.repeat(1)\n"
                         "INPUTS['xs']\n")):
        r = R.lib_repl(t, _guarded(payload), policy=pol, inputs='{"xs":[1,2]}')
        doc = r.doc()
        g.check("GOVEX-GUARD" not in doc["stdout"], "the guard refused: not a sandbox")
        e.eq(doc["backend"]["name"], "restricted", "backend")
        # either the value check meets its node budget (too large, no value), or it
        # never calls the replaced method at all and returns what the container really
        # holds (the base type's own items): never the lie, never a memory blowup
        real = {"items()": {"xs": [1, 2]}, "__iter__": [1, 2]}[name]
        if doc["status"] != "success" or doc["value"] not in (None, real):
            fails.append("%s: status %r termination %r value %r diagnostics %r (%.1f s)"
                         % (name, doc["status"], doc["termination"], doc["value"],
                            doc.get("diagnostics"), r.wall))
        elif doc["value"] is None and not any(
                "large" in (d.get("code") or "") or "large" in (d.get("message") or "")
                for d in doc.get("diagnostics") or []):
            fails.append("%s: no too-large diagnostic: %r" % (name, doc.get("diagnostics")))
        elif r.wall > 5:
            fails.append("%s: took %.1f s" % (name, r.wall))
    g.check(not fails, "\n".join(fails))


TESTS = [
    ("create_connection under network deny names network_deny", test_create_connection),
    ("caught socket() attempts are counted by the sandbox", test_caught_attempts_are_still_counted),
    ("getaddrinfo of a name names network_deny", test_name_lookup),
    ("AF_INET6, AF_PACKET, AF_NETLINK name network_deny", test_ipv6_and_packet),
    ("raw socket syscalls through ctypes name network_deny", test_raw_syscall),
    ("io_uring is no way around the count", test_io_uring_is_no_way_around),
    ("an AF_UNIX socketpair is not a network denial", test_sendto_unix_dgram_not_counted),
    ("no attempt, no denial", test_no_attempt_no_denial),
    ("network allowed: ECONNREFUSED is not a denial", test_network_allowed_refusal_is_not_a_denial),
    ("a printed/stderr/exit-text denial is not a denial", test_forged_on_stdout_stderr_exit),
    ("an exception carrying a denial text is not a denial", test_forged_in_exception),
    ("a call frame claiming a denial is not a denial", test_forged_in_call_frame),
    ("MCP: a forged denial value is not one; a real one is isError naming it",
     test_forged_snippet_value_over_mcp),
    ("a second execve under subprocess deny names subprocess_deny", test_second_execve),
    ("subprocess.run under subprocess deny names subprocess_deny", test_subprocess_run),
    ("a socket() flood, then an execve: both still named", test_flood_then_execve),
    ("a printed subprocess denial is not a denial", test_forged_subprocess_denial),
    ("INPUTS' classes lying to the value check meet the node budget (canary-proven)",
     test_inputs_class_lies_to_the_value_check),
]

if __name__ == "__main__":
    g.main(TESTS)
