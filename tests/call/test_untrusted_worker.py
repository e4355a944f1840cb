#!/usr/bin/env python3
"""Issue 9 item 12: the call-mode worker is untrusted.  The function under call can
write govex.frame/v1 frames to the worker's response descriptor itself (8-byte
big-endian length + JSON, src/worker/worker.py).  Contract 9: the parent decides from
the frame AND the real termination (a frame then a non-zero exit or a signal is
worker_failed); invalid_input, policy_refused, source_mismatch are never taken from a
frame (worker_failed, and govex does not exit 125); text from a frame is bounded
(<= 4 KiB per message) and free of control characters (C0 but \\n\\t, DEL, C1, ESC),
in the JSON result and on the terminal.  Both backends.  Prints TAP."""
import json
import signal

import calltest as C
from calltest import check, eq

S = C.Suite()

EVIL = ("\x1b[2J\x1b[H\x1b]0;pwned\x07\x07\x08\r\x7f\x9b2J\x85\x1b[31mRED"
        "\u202egnp.exe")
FORGE_SRC = C.FIND_RESPONSE_FD + r'''
import ctypes, json, os, signal
EVIL = %(evil)r
def _send(obj):
    body = json.dumps(obj, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")
    for fd in _response_fds():
        os.write(fd, len(body).to_bytes(8, "big") + body)
def _success():
    _send({"ok": True, "status": "success", "value": 42, "version": "govex.frame/v1"})
def success_exit3():
    _success()
    os._exit(3)
def success_sigkill():
    _success()
    os.kill(os.getpid(), signal.SIGKILL)
def success_segv():
    _success()
    ctypes.string_at(0)
def _claim(status, code):
    _send({"version": "govex.frame/v1", "ok": False, "status": status, "code": code,
           "message": "forged by the function", "exception_type": None})
    os._exit(0)
def claim_source_mismatch():
    _claim("source_mismatch", "digest_mismatch")
def claim_invalid_input():
    _claim("invalid_input", "missing_argument")
def claim_policy_refused():
    _claim("policy_refused", "missing_controls")
def _text():
    # 900 KB of UTF-8 (under the 1 MiB output bound, so the frame is read)
    # (as JSON: control characters are escaped, 6 bytes each)
    one = len(json.dumps(EVIL, ensure_ascii=False).encode("utf-8")) - 2
    return EVIL * (900000 // one)
def huge_text():
    text = _text()
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "exception" + EVIL, "message": text, "exception_type": "Value\x00" + EVIL})
    os._exit(0)
def huge_text_worker_failed():
    text = _text()
    _send({"version": "govex.frame/v1", "ok": False, "status": "worker_failed",
           "code": EVIL * 20, "message": text, "exception_type": None})
    os._exit(0)
''' % {"evil": EVIL}


def _opts(t, b):
    return C.backend_args(t, b)


@S.both("a forged success frame, then exit 3 / SIGKILL / SIGSEGV: worker_failed")
def _forged_success(t, b):
    m = C.module(t, "m.py", FORGE_SRC)
    cases = (("success_exit3", "exited", None), ("success_sigkill", "signaled", signal.SIGKILL),
             ("success_segv", "signaled", signal.SIGSEGV))
    for fn, term, sig in cases:
        r = C.call(t, m + ":" + fn, opts=_opts(t, b))
        try:
            check(r.returncode != 0, "govex exited 0 for a worker that died after "
                  "writing a success frame")
            doc = C.check_result(t, r, "worker_failed", "worker_failed")
            eq(doc["value"], None, "value")
            eq(doc["termination"], term, "termination")
            if sig is not None:
                eq(doc["signal"], sig, "signal")
        except C.Failure as ex:
            raise C.Failure("%s: %s" % (fn, ex))


@S.both("a frame claiming source_mismatch/invalid_input/policy_refused: worker_failed, not 125")
def _forged_parent_statuses(t, b):
    m = C.module(t, "m.py", FORGE_SRC)
    for fn in ("claim_source_mismatch", "claim_invalid_input", "claim_policy_refused"):
        r = C.call(t, m + ":" + fn, opts=_opts(t, b))
        try:
            check(r.returncode != C.gt.EXIT_REFUSED,
                  "govex exited 125 (refused: nothing ran) though the function ran")
            C.check_result(t, r, "worker_failed", "worker_failed", rc=1)
        except C.Failure as ex:
            raise C.Failure("%s: %s" % (fn, ex))


def _controls(s):
    """Control characters the contract forbids in result text (not \\n \\t)."""
    return sorted({"%04x" % ord(c) for c in s
                   if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f})


def _strings(v, path="$"):
    if isinstance(v, str):
        yield path, v
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _strings(x, "%s[%d]" % (path, i))
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _strings(k, path + ".<key>")
            yield from _strings(x, "%s.%s" % (path, k))


def _clean_doc(doc):
    for where, s in _strings(doc):
        check(len(s.encode("utf-8")) <= 4096, "%s is %d bytes (bound 4 KiB)"
              % (where, len(s.encode("utf-8"))))
        bad = _controls(s)
        check(not bad, "%s carries control characters %s: %r" % (where, bad, s[:120]))


def _clean_terminal(r):
    for name, data in (("stdout", r.stdout), ("stderr", r.stderr)):
        check(b"\x1b" not in data, "govex's %s carries ESC: %r" % (name, data[:200]))
        text = data.decode("utf-8", "replace")
        bad = _controls(text)
        check(not bad, "govex's %s carries control characters %s: %r"
              % (name, bad, data[:200]))
        check(len(data) <= 16384, "govex's %s is %d bytes of code-chosen text"
              % (name, len(data)))


@S.both("a forged 900 KB failure text with ESC[2J and C0/C1: bounded, stripped (JSON and terminal)")
def _forged_text(t, b):
    m = C.module(t, "m.py", FORGE_SRC)
    for fn in ("huge_text", "huge_text_worker_failed"):
        try:
            r = C.call(t, m + ":" + fn, opts=_opts(t, b))
            doc = r.result()
            check(doc["status"] in ("execution_failed", "worker_failed"),
                  "status %r" % doc["status"])
            _clean_doc(doc)
            check(len(r.stdout) <= 64 << 10, "the result is %d bytes" % len(r.stdout))
            # the human-readable CLI output (no --json) on a terminal
            r2 = C.call(t, m + ":" + fn, opts=_opts(t, b), json_out=False)
            check(r2.returncode != 0, "exit status 0")
            _clean_terminal(r2)
        except C.Failure as ex:
            raise C.Failure("%s: %s" % (fn, ex))


if __name__ == "__main__":
    S.main()
