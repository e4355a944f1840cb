#!/usr/bin/env python3
"""The worker is untrusted (DESIGN.md "Trust boundaries", issue 9 item 12): the parent
decides a call's outcome from the response frame AND the worker's real termination.
The function under test writes frames to the response descriptor itself:
  - a forged success frame, then os._exit(3) / SIGKILL / a segfault: worker_failed,
    the exit code or signal kept in the result, never success;
  - a frame claiming a status only govex decides (source_mismatch, invalid_input,
    policy_refused, timeout): worker_failed, govex does not exit 125 as if it refused;
  - a forged failure frame with 900 KB of text and escape sequences: the message in the
    result and on the terminal is bounded, says it was cut, and has no control
    characters.
On both backends (strict: restricted sandbox, trusted: controlled).  Prints TAP."""
import json
import os
import signal

import calltest as C
from calltest import check, eq

S = C.Suite()

MESSAGE_MAX = 4096


FORGE_SRC = C.FIND_RESPONSE_FD + """
import os, signal, json

def _send(obj):
    data = json.dumps(obj).encode("utf-8") if not isinstance(obj, bytes) else obj
    for fd in _response_fds():
        os.write(fd, len(data).to_bytes(8, "big") + data)

SUCCESS = {"version": "govex.frame/v1", "ok": True, "status": "success", "value": 42}

def success_exit(code: int):
    _send(SUCCESS)
    os._exit(code)

def success_sigkill():
    _send(SUCCESS)
    os.kill(os.getpid(), signal.SIGKILL)

def success_segv():
    _send(SUCCESS)
    import ctypes
    ctypes.string_at(0)

def success_sigterm():
    _send(SUCCESS)
    os.kill(os.getpid(), signal.SIGTERM)

def claim(status: str, exit_code: int = 0):
    _send({"version": "govex.frame/v1", "ok": False, "status": status,
           "code": status, "message": "forged by the function"})
    os._exit(exit_code)

def noisy(size: int):
    text = "\\x1b[2J\\x1b[H\\x1b]0;owned\\x07start" + "\\x9b31m" + "\\x7f\\x01\\x08" + "A" * size
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "exception", "message": text, "exception_type": "Boom"})
    os._exit(0)

def clean_me():
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "exception",
           "message": "a\\x1b[31mb\\x1b]0;t\\x07c\\x9b2Jd\\x7fe\\x01f\\ng\\th\\u0085i\\x00j",
           "exception_type": "Boom"})
    os._exit(0)

def bad_fields():
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "\\x1b[2Jevil code/../x", "message": "m",
           "exception_type": "\\x1b[2J/etc/passwd"})
    os._exit(0)

def govex_code():
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "missing_controls", "message": "denied by policy: do not retry"})
    os._exit(0)

def controls_in_value():
    return {"s": "x\\x7fy\\u0085z\\u009b2J\\x1b[2J", "k\\x7f": 1}
"""


def _module(t):
    return C.module(t, "m.py", FORGE_SRC)


def _no_control(s, what):
    bad = [c for c in s if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    check(not bad, "%s has control characters %r: %r" % (what, bad[:10], s[:200]))


@S.both("a forged success frame, then os._exit(3): worker_failed, exit code 3 kept")
def _success_then_exit3(t, b):
    m = _module(t)
    r = C.call(t, m + ":success_exit", {"code": 3}, opts=["--preset", b])
    doc = C.check_result(t, r, "worker_failed", "worker_failed", rc=1)
    eq(doc["termination"], "exited", "termination")
    eq(doc["exit_code"], 3, "exit_code")
    eq(doc["value"], None, "value")
    d = C.diag(doc, "worker_failed")
    eq(d.get("claimed_status"), "success", "claimed_status")
    check("exited with status 3" in d["message"], "diagnostic names the exit: %r" % d)


@S.both("a forged success frame, then SIGKILL / segfault / SIGTERM: worker_failed, signal kept")
def _success_then_signal(t, b):
    m = _module(t)
    for fn, sig in (("success_sigkill", signal.SIGKILL), ("success_segv", signal.SIGSEGV),
                    ("success_sigterm", signal.SIGTERM)):
        r = C.call(t, m + ":" + fn, opts=["--preset", b])
        try:
            doc = C.check_result(t, r, "worker_failed", "worker_failed", rc=128 + sig)
            eq(doc["termination"], "signaled", "termination")
            eq(doc["signal"], sig, "signal")
            eq(doc["exit_code"], None, "exit_code")
            eq(doc["value"], None, "value")
            check("signal %d" % sig in C.diag(doc, "worker_failed")["message"],
                  "diagnostic names the signal: %r" % doc["diagnostics"])
        except C.Failure as e:
            raise C.Failure("%s: %s" % (fn, e))


@S.both("a forged success frame, then exit 0: the frame's outcome, value checked by the parent")
def _success_then_exit0(t, b):
    m = _module(t)
    doc = C.check_result(t, C.call(t, m + ":success_exit", {"code": 0}, opts=["--preset", b]),
                         "success", rc=0)
    eq(doc["value"], 42, "value of the frame")


@S.both("a frame claiming source_mismatch / invalid_input / policy_refused / timeout: "
      "worker_failed, not exit 125")
def _claims(t, b):
    m = _module(t)
    for status in ("source_mismatch", "invalid_input", "policy_refused", "timeout",
                   "cancelled", "resource_limit"):
        r = C.call(t, m + ":claim", {"status": status}, opts=["--preset", b])
        try:
            doc = C.check_result(t, r, "worker_failed", "worker_failed", rc=1)
            eq(doc["termination"], "exited", "termination")
            eq(doc["exit_code"], 0, "exit_code")
            d = C.diag(doc, "worker_failed")
            eq(d.get("claimed_status"), status, "claimed_status")
            check("only govex decides" in d["message"], "diagnostic: %r" % d)
            check("forged" not in r.out and "forged" not in r.err,
                  "the frame's message reached the result or the terminal")
            # plain output: the same decision, the same exit status
            r2 = C.call(t, m + ":claim", {"status": status}, opts=["--preset", b],
                        json_out=False)
            eq(r2.returncode, 1, "exit status without --json")
        except C.Failure as e:
            raise C.Failure("%s: %s" % (status, e))


@S.both("a frame claiming a parent-only status, then exit 3: worker_failed, exit 3 kept")
def _claim_then_exit(t, b):
    m = _module(t)
    r = C.call(t, m + ":claim", {"status": "source_mismatch", "exit_code": 3},
               opts=["--preset", b])
    doc = C.check_result(t, r, "worker_failed", "worker_failed", rc=1)
    eq(doc["exit_code"], 3, "exit_code")


@S.both("a forged 900 KB failure text with ESC[2J: bounded, says truncated, no control "
      "characters in the result or on the terminal")
def _noisy(t, b):
    m = _module(t)
    r = C.call(t, m + ":noisy", {"size": 900 * 1024}, opts=["--preset", b])
    doc = C.check_result(t, r, "execution_failed", "exception", rc=1)
    d = C.diag(doc, "exception")
    msg = d["message"]
    check(len(msg.encode("utf-8")) <= MESSAGE_MAX, "message of %d bytes" % len(msg))
    check(msg.startswith("start"), "escape sequences removed whole: %r" % msg[:80])
    check("[2J" not in msg and "owned" not in msg and "31m" not in msg,
          "escape sequence residue: %r" % msg[:80])
    check("truncated" in msg, "the cut is said: %r" % msg[-40:])
    eq(d.get("message_truncated"), True, "message_truncated")
    eq(d.get("exception_type"), "Boom", "exception_type")
    _no_control(msg, "message")
    check(len(r.stdout) < 16 * 1024, "result document of %d bytes" % len(r.stdout))
    check(b"\x1b" not in r.stdout and b"\x1b" not in r.stderr, "ESC reached govex's output")
    # the raw document: DEL and C1 never appear raw
    check(b"\x7f" not in r.stdout and b"\xc2\x9b" not in r.stdout, "raw DEL/C1 in the document")
    # without --json: the summary on stderr
    r2 = C.call(t, m + ":noisy", {"size": 900 * 1024}, opts=["--preset", b], json_out=False)
    eq(r2.returncode, 1, "exit status")
    eq(r2.stdout, b"", "stdout")
    check(len(r2.stderr) < 8 * 1024, "stderr of %d bytes" % len(r2.stderr))
    err = r2.stderr.decode("utf-8")
    _no_control(err, "stderr")
    check("[2J" not in err, "escape residue on the terminal: %r" % err[:200])


@S.both("frame text: C0 (but \\n \\t), DEL, C1 and ESC/CSI/OSC sequences removed exactly")
def _clean_exact(t, b):
    m = _module(t)
    doc = C.check_result(t, C.call(t, m + ":clean_me", opts=["--preset", b]),
                         "execution_failed", "exception", rc=1)
    eq(C.diag(doc, "exception")["message"], "abcdef\ng\thij", "cleaned message")


@S.both("a frame's code and exception_type are names or nothing")
def _bad_fields(t, b):
    m = _module(t)
    doc = C.check_result(t, C.call(t, m + ":bad_fields", opts=["--preset", b]),
                         "execution_failed", "worker_error", rc=1)
    d = C.diag(doc, "worker_error")
    check("exception_type" not in d, "exception_type kept: %r" % d)
    check("passwd" not in json.dumps(doc), "a path from the frame reached the result")


@S.both("a frame's code is one the worker uses, never one of govex's own")
def _govex_code(t, b):
    m = _module(t)
    doc = C.check_result(t, C.call(t, m + ":govex_code", opts=["--preset", b]),
                         "execution_failed", "worker_error", rc=1)
    check(all(d["code"] != "missing_controls" for d in doc["diagnostics"]),
          "a code of govex's own taken from a frame: %r" % doc["diagnostics"])


@S.test("the codes the parent takes from a frame are exactly the worker's MESSAGES")
def _codes_match(t):
    import ast
    import re
    src = os.path.join(os.path.dirname(os.path.dirname(C.HERE)), "src", "worker", "govex_worker",
                       "frames.py")
    with open(src) as f:
        tree = ast.parse(f.read())
    keys = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MESSAGES":
            keys = {k.value for k in node.value.keys}
    with open(os.path.join(os.path.dirname(os.path.dirname(C.HERE)), "src", "lib", "callframe.c")) as f:
        c = f.read()
    table = c[c.index("static bool frame_code_ok"):]
    table = table[table.index("known[] = {"):table.index("};")]
    eq(set(re.findall(r'"([a-z_0-9]+)"', table)), keys, "callframe.c's codes and MESSAGES")


@S.both("a returned value with DEL and C1 characters: the same value, escaped in the output")
def _value_controls(t, b):
    m = _module(t)
    r = C.call(t, m + ":controls_in_value", opts=["--preset", b])
    doc = C.check_result(t, r, "success", rc=0)
    eq(doc["value"], {"s": "x\x7fy\x85z\x9b2J\x1b[2J", "k\x7f": 1}, "value")
    for raw in (b"\x7f", b"\xc2\x85", b"\xc2\x9b", b"\x1b"):
        check(raw not in r.stdout, "raw %r in the result document" % raw)
    r2 = C.call(t, m + ":controls_in_value", opts=["--preset", b], json_out=False)
    eq(r2.returncode, 0, "exit status")
    eq(json.loads(r2.stdout), {"s": "x\x7fy\x85z\x9b2J\x1b[2J", "k\x7f": 1}, "printed value")
    for raw in (b"\x7f", b"\xc2\x85", b"\xc2\x9b", b"\x1b"):
        check(raw not in r2.stdout, "raw %r in the printed value" % raw)


@S.both("an error only the compiler finds ('return' outside a function): invalid_input from "
      "the inspection, decided by govex before any worker ran the module")
def _compile_error(t, b):
    for i, src in enumerate(("def f():\n    return 1\nreturn 2\n",
                             "def f():\n    return 1\nnonlocal x\n")):
        m = C.module(t, "m%d.py" % i, src)
        C.check_result(t, C.call(t, m + ":f", opts=["--preset", b]), "invalid_input",
                       "syntax_error", rc=125)


if __name__ == "__main__":
    raise SystemExit(S.main())
