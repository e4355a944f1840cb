#!/usr/bin/env python3
"""The compiled seccomp programs cached in the cache directory (issue 12, one-shot runs):
read back only from a trusted file (cache.c's rules: a regular 0600 file of the caller's
in a 0700 directory of the caller's), only when its key (this build, kernel, libseccomp,
the policy's inputs) and its digest match; anything else is rebuilt, and the run's
denials are the same either way.

Every test uses its own cache dir (XDG_CACHE_HOME in its temp dir), never the caller's.
"""
import hashlib
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

PREFIX = "seccomp-v1-"
# BPF_RET | BPF_K: one instruction answering every syscall
RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7fff0000
SECCOMP_RET_ERRNO_EPERM = 0x00050000 | 1


def _files(cache):
    try:
        return sorted(os.path.join(cache, n) for n in os.listdir(cache)
                      if n.startswith(PREFIX) and n.endswith(".bpf"))
    except OSError:
        return []


def _prog_hex(k):
    return struct.pack("<HBBI", RET_K, 0, 0, k).hex()


def _rewrite(path, k, digest_ok=True, mode=0o600):
    """Keeps the key line; both programs become a single `return k`."""
    with open(path) as f:
        key = f.readline().rstrip("\n")
    body = "F %s\nG %s\n" % (_prog_hex(k), _prog_hex(k))
    dg = hashlib.sha256(body.encode()).hexdigest()
    if not digest_ok:
        dg = "0" * 64
    tmp = path + ".t"
    with open(tmp, "w") as f:
        f.write("%s\nsha256:%s\n%s" % (key, dg, body))
    os.chmod(tmp, mode)
    os.rename(tmp, path)


def _ops():
    return [["tcp", "127.0.0.1", 9, {"as": "tcp"}], ["fork", {"as": "fork"}],
            ["netdev", {"as": "netdev"}]]


def _denials_hold(t, env, what):
    """A proven sandbox whose socket() and fork() are still refused."""
    _, doc, res = e.run_proven(t, _ops(), env=env)
    e.denied(res, "tcp", "EAFNOSUPPORT")
    e.denied(res, "fork", "EPERM")
    return doc


def _warm(t, v):
    xdg = t.path("xdg-" + v)
    os.mkdir(xdg, 0o700)
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    cache = os.path.join(xdg, "govex")
    _denials_hold(t, env, "first run")
    files = _files(cache)
    g.check(len(files) == 1, "%s: one seccomp cache file expected: %r"
            % (v, os.listdir(cache)))
    st = os.stat(files[0])
    g.eq(oct(st.st_mode & 0o777), oct(0o600), "mode of the seccomp cache file")
    return env, cache, files[0]


def test_cached_programs_are_used(t):
    """The cache is really read: a trusted file whose programs refuse everything makes
    the run fail (nothing starts), and the same denials hold when it is valid."""
    e.need_restricted("network_deny", "syscall_filter", "subprocess_deny")
    env, cache, f = _warm(t, "used")
    doc = _denials_hold(t, env, "second run (from the cache)")
    with open(f) as fh:
        before = fh.read()
    _rewrite(f, SECCOMP_RET_ERRNO_EPERM)
    r = t.run(["run", "--policy", e.policy(t), "--json", "-c", "print('ran')"], env=env)
    doc = r.result()
    g.check(doc["status"] != "success" and "ran" not in (doc.get("stdout") or ""),
            "a cached deny-all program was not used: %s" % r.describe())
    # a valid entry again (as written by govex): the run works
    with open(f + ".t", "w") as fh:
        fh.write(before)
    os.chmod(f + ".t", 0o600)
    os.rename(f + ".t", f)
    _denials_hold(t, env, "restored cache")


def test_untrusted_or_corrupt_cache_not_read(t):
    """An allow-all program in a cache file that is a symlink, group/other writable,
    another user's, or whose digest does not match, is never loaded: socket() and
    fork() stay refused."""
    e.need_restricted("network_deny", "syscall_filter", "subprocess_deny")
    variants = ["symlink", "group_writable", "other_writable", "bad_digest"]
    if os.geteuid() == 0:
        variants.append("other_owner")
    for v in variants:
        env, cache, f = _warm(t, v)
        _rewrite(f, SECCOMP_RET_ALLOW, digest_ok=(v != "bad_digest"))
        if v == "symlink":
            target = t.path("poison-" + v)
            os.rename(f, target)
            os.symlink(target, f)
        elif v == "group_writable":
            os.chmod(f, 0o660)
        elif v == "other_writable":
            os.chmod(f, 0o606)
        elif v == "other_owner":
            os.chown(f, e.NOBODY, e.NOBODY)
        _denials_hold(t, env, "cache file " + v)


def test_cache_dir_unsafe_not_used(t):
    """A cache dir that is group-writable gets no seccomp file, and a planted allow-all
    one in it is not read."""
    e.need_restricted("network_deny", "syscall_filter", "subprocess_deny")
    env, cache, f = _warm(t, "dir")
    _rewrite(f, SECCOMP_RET_ALLOW)
    os.chmod(cache, 0o770)
    _denials_hold(t, env, "group-writable cache dir")
    os.chmod(cache, 0o700)
    os.unlink(f)
    os.chmod(cache, 0o770)
    _denials_hold(t, env, "group-writable cache dir, no file")
    g.eq(_files(cache), [], "a seccomp file written into an unsafe cache dir")


if __name__ == "__main__":
    sys.exit(g.main([
        ("cached programs are read back and used", test_cached_programs_are_used),
        ("untrusted or corrupt cached programs are never loaded",
         test_untrusted_or_corrupt_cache_not_read),
        ("an unsafe cache dir is neither read nor written", test_cache_dir_unsafe_not_used),
    ]))
