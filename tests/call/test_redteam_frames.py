#!/usr/bin/env python3
"""Second red team (issue 9), call-mode frames: text a function forges into its own
response frame and what reaches the caller's terminal.  The first round stripped C0,
DEL, C1 and ESC sequences; a terminal also acts on Unicode's bidirectional controls
(U+202A-U+202E, U+2066-U+2069, U+200E/U+200F): "Trojan source" reordering makes a
message read as something else.  Also guards: a forged output_limit claim, a frame sent
from a thread while the function goes on, a claimed status beyond the vocabulary.
Both backends.  Prints TAP."""
import calltest as C
from calltest import check

S = C.Suite()

BIDI = "\u202e\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d\u200e\u200f"
SRC = C.FIND_RESPONSE_FD + r'''
import json, os, threading, time
def _send(obj):
    body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    for fd in _response_fds():
        os.write(fd, len(body).to_bytes(8, "big") + body)
def bidi_message():
    _send({"version": "govex.frame/v1", "ok": False, "status": "execution_failed",
           "code": "exception", "message": "all tests passed \u202e)lanimret ruoy(\u202c ok"
           + %(bidi)r, "exception_type": "ValueError"})
    os._exit(0)
def claim_unknown():
    _send({"version": "govex.frame/v1", "ok": False, "status": "approved",
           "code": "exception", "message": "x", "exception_type": None})
    os._exit(0)
def success_from_thread_then_crash():
    def later():
        _send({"version": "govex.frame/v1", "ok": True, "status": "success", "value": 1})
    th = threading.Thread(target=later)
    th.start()
    th.join()
    os.abort()
''' % {"bidi": BIDI}


def _bidi_in(data):
    text = data.decode("utf-8", "replace")
    return sorted({"%04x" % ord(c) for c in text if c in BIDI})


@S.both("a forged message's Unicode bidi controls never reach the terminal or the result")
def _bidi(t, b):
    m = C.module(t, "m.py", SRC)
    r = C.call(t, m + ":bidi_message", opts=C.backend_args(t, b), json_out=False)
    found = _bidi_in(r.stdout) + _bidi_in(r.stderr)
    check(not found, "govex printed the function's bidirectional controls %s on the "
          "terminal: %r" % (found, r.stderr[:200]))
    rj = C.call(t, m + ":bidi_message", opts=C.backend_args(t, b))
    doc = rj.result()
    msgs = " ".join(d.get("message", "") for d in doc.get("diagnostics", []))
    bad = sorted({"%04x" % ord(c) for c in msgs if c in BIDI})
    check(not bad, "the result's diagnostic carries bidi controls %s: %r" % (bad, msgs))


@S.both("a status outside the vocabulary is worker_failed")
def _unknown(t, b):
    m = C.module(t, "m.py", SRC)
    r = C.call(t, m + ":claim_unknown", opts=C.backend_args(t, b))
    C.check_result(t, r, "worker_failed", "worker_failed", rc=1)


@S.both("a success frame from a thread, then abort(): worker_failed")
def _thread(t, b):
    m = C.module(t, "m.py", SRC)
    r = C.call(t, m + ":success_from_thread_then_crash", opts=C.backend_args(t, b))
    doc = C.check_result(t, r, "worker_failed", "worker_failed")
    check(doc["value"] is None, "value %r" % doc["value"])


if __name__ == "__main__":
    S.main()
