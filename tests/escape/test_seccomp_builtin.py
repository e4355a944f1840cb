#!/usr/bin/env python3
"""The seccomp programs come from govex's own binary (issue 12, one-shot runs): compiled
at build time (unit/filters checks they equal a fresh compile), never read back from a
file.  A cache directory that a caller's other programs (a `controlled` run, trusted code
with the caller's rights) could write decides no control: nothing about seccomp is
written there, and allow-all programs planted there are never loaded.

Every test uses its own cache dir (XDG_CACHE_HOME in its temp dir), never the caller's.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

RET_ALLOW = struct.pack("<HBBI", 0x06, 0, 0, 0x7fff0000).hex()


def _ops():
    return [["tcp", "127.0.0.1", 9, {"as": "tcp"}], ["fork", {"as": "fork"}]]


def _denials_hold(t, env):
    _, doc, res = e.run_proven(t, _ops(), env=env)
    e.denied(res, "tcp", "EAFNOSUPPORT")
    e.denied(res, "fork", "EPERM")


def test_nothing_written_planted_not_read(t):
    e.need_restricted("network_deny", "syscall_filter", "subprocess_deny")
    xdg = t.path("xdg")
    os.mkdir(xdg, 0o700)
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    cache = os.path.join(xdg, "govex")
    _denials_hold(t, env)
    names = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
    g.eq([n for n in names if "seccomp" in n or n.endswith(".bpf")], [],
         "seccomp files written to the cache directory")
    # allow-all programs under the names a file cache would use, owned and 0600 as a
    # trusted cache file would be
    os.makedirs(cache, mode=0o700, exist_ok=True)
    body = "F %s\nG %s\n" % (RET_ALLOW, RET_ALLOW)
    for n in ["seccomp-v1-0000000000000000.bpf", "seccomp.bpf", "filters.bpf"]:
        with open(os.path.join(cache, n), "w") as f:
            f.write("govex key\nsha256:%s\n%s" % ("0" * 64, body))
        os.chmod(os.path.join(cache, n), 0o600)
    _denials_hold(t, env)


if __name__ == "__main__":
    sys.exit(g.main([
        ("seccomp programs: none written to the cache, planted ones never read",
         test_nothing_written_planted_not_read),
    ]))
