#!/usr/bin/env python3
"""The fresh workdir is private (0700), is the cwd, and is removed on every path."""
import json
import os
import signal
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

# Record the cwd (and its mode) in a test-owned file, fill the workdir with a
# small tree and a symlink to a test-owned directory (whose content must
# survive the workdir's removal), then do TAIL.
CODE = r'''
import os, sys, time
cwd = os.getcwd()
mode = oct(os.stat(cwd).st_mode & 0o7777)
os.makedirs("a/b/c")
with open("a/b/c/f.txt", "w") as f:
    f.write("x")
os.symlink(%(canary_dir)r, "link")
with open(%(info)r + ".tmp", "w") as f:
    f.write(cwd + "\n" + mode + "\n")
os.rename(%(info)r + ".tmp", %(info)r)
print(cwd, flush=True)
%(tail)s
'''


def _info(t, r):
    s = g.wait_for_file(t.path("cwd.txt"), 0.0)
    g.check(s is not None, "the snippet never recorded its cwd\n" + r.describe())
    cwd, mode = s.split("\n")[:2]
    return cwd, mode


def _code(t, tail):
    canary_dir = t.path("canary")
    os.mkdir(canary_dir)
    t.write("canary/keep.txt", "keep")
    return CODE % {"info": t.path("cwd.txt"), "canary_dir": canary_dir, "tail": tail}


def _check_dir(t, cwd, mode):
    g.check(os.path.isabs(cwd), "cwd is not absolute: %r" % cwd)
    g.check(os.path.realpath(cwd) != os.path.realpath(t.tmp),
            "the snippet ran in govex's cwd, not a fresh workdir")
    g.eq(mode, "0o700", "workdir mode")
    g.check(not os.path.lexists(cwd), "workdir %s still exists after the run" % cwd)
    g.check(os.path.exists(t.path("canary", "keep.txt")),
            "removing the workdir followed a symlink out of it")


def test_removed_after_exit(t):
    g.need_python()
    code = _code(t, "sys.exit(0)")
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(0)
    doc = r.result()
    cwd, mode = _info(t, r)
    g.eq(doc["stdout"], cwd + "\n", "stdout (the cwd)")
    _check_dir(t, cwd, mode)


def test_removed_after_failure(t):
    g.need_python()
    code = _code(t, "raise SystemExit(3)")
    r = t.run(["run", "--preset", "trusted", "--json", "-c", code])
    r.expect_rc(3)
    _check_dir(t, *_info(t, r))


def test_removed_after_timeout(t):
    g.need_python()
    code = _code(t, "time.sleep(30)")
    r = t.run(["run", "--preset", "trusted", "--json", "--timeout-ms", "1000", "-c", code])
    r.expect_rc(g.EXIT_TIMEOUT)
    g.eq(r.result()["status"], "timeout", "status")
    _check_dir(t, *_info(t, r))


def test_removed_after_cancel(t):
    g.need_python()
    info = t.path("cwd.txt")
    code = _code(t, "time.sleep(30)")

    def cancel(p):
        if g.wait_for_file(info, 10.0, popen=p) is not None:
            os.kill(p.pid, signal.SIGTERM)

    pol = t.policy(limits={"wall_ms": 20000})
    r = t.run(["run", "--policy", pol, "--json", "-c", code], during=cancel)
    g.check(os.path.exists(info), "the snippet never started\n" + r.describe())
    r.expect_rc(128 + signal.SIGTERM)
    g.eq(r.result()["status"], "cancelled", "status")
    _check_dir(t, *_info(t, r))


def test_restricted_workdir_is_its_own_tmpfs(t):
    """restricted: a fresh workdir is a tmpfs at /govex/work, not a host directory."""
    g.need_python()
    if not g.backend_available("restricted"):
        raise g.Skip("the restricted backend is not available here")
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    code = r'''
import os, json
st = os.stat(".")
with open("f", "w") as f:
    f.write("x")
mounts = [l.split() for l in open("/proc/self/mountinfo")]
wd = [m for m in mounts if m[4] == "/govex/work"]
print(json.dumps({"cwd": os.getcwd(), "mode": oct(st.st_mode & 0o7777),
                  "uid": st.st_uid, "me": os.getuid(),
                  "fstype": wd[0][wd[0].index("-") + 1] if wd else None,
                  "opts": wd[0][5] if wd else None,
                  "listing": os.listdir(%(tmpdir)r) if os.path.isdir(%(tmpdir)r) else None,
                  "mountinfo": open("/proc/self/mountinfo").read()}))
''' % {"tmpdir": tmpdir}
    pol = t.policy(base="strict", backend="restricted")
    r = t.run(["run", "--policy", pol, "--json", "-c", code],
              extra_env={"TMPDIR": tmpdir})
    r.expect_rc(0)
    doc = r.result()
    info = json.loads(doc["stdout"])
    g.eq(info["cwd"], "/govex/work", "cwd")
    g.eq(info["mode"], "0o700", "workdir mode")
    g.eq(info["uid"], info["me"], "workdir owner (the run's uid)")
    g.eq(info["fstype"], "tmpfs", "workdir file system")
    g.check("noexec" in info["opts"] and "nosuid" in info["opts"] and "nodev" in info["opts"],
            "workdir mount options: %r" % info["opts"])
    g.check(t.tmp not in info["mountinfo"] and tmpdir not in info["mountinfo"],
            "a host path shows in mountinfo:\n" + info["mountinfo"])
    g.eq(os.listdir(tmpdir), [], "what the run left in TMPDIR on the host")


def test_deep_tree_removed(t):
    """A 5,000-deep tree in a host workdir is removed, and govex returns."""
    g.need_python()
    code = r'''
import os
print(os.getcwd(), flush=True)
for i in range(5000):
    os.mkdir("d")
    os.chdir("d")
'''
    pol = t.policy(limits={"wall_ms": 20000})
    r = t.run(["run", "--policy", pol, "--json", "-c", code])
    r.expect_rc(0)
    doc = r.result()
    cwd = doc["stdout"].strip()
    g.check(os.path.isabs(cwd) and "/govex-" in cwd, "cwd: %r" % cwd)
    g.check(not os.path.lexists(cwd), "workdir %s still exists after the run" % cwd)
    g.check(not any(d.get("code") == "workdir_cleanup_failed"
                    for d in doc.get("diagnostics") or []),
            "diagnostics: %r" % doc.get("diagnostics"))


def test_leftover_of_killed_run_swept(t):
    """A host workdir left by a SIGKILLed govex is removed by a later run."""
    g.need_python()
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    marker = t.path("started")
    code = "open(%r, 'w').write('x'); import time; time.sleep(30)" % marker

    def kill(p):
        if g.wait_for_file(marker, 10.0, popen=p, nonempty=False) is not None:
            os.kill(p.pid, signal.SIGKILL)

    r = t.run(["run", "--preset", "trusted", "-c", code], during=kill,
              extra_env={"TMPDIR": tmpdir})
    g.check(os.path.exists(marker), "the snippet never started\n" + r.describe())
    left = [n for n in os.listdir(tmpdir) if n.startswith("govex-")]
    g.eq(len(left), 1, "workdirs left by the killed govex: %r" % left)
    old = time.time() - 7200
    os.utime(os.path.join(tmpdir, left[0]), (old, old))
    r = t.run(["run", "--preset", "trusted", "-c", "pass"], extra_env={"TMPDIR": tmpdir})
    r.expect_rc(0)
    g.eq([n for n in os.listdir(tmpdir) if n.startswith("govex-")], [],
         "leftovers after the next run")


TESTS = [
    ("fresh workdir is cwd, mode 0700, removed after a normal exit", test_removed_after_exit),
    ("fresh workdir removed after a nonzero exit", test_removed_after_failure),
    ("fresh workdir removed after a timeout", test_removed_after_timeout),
    ("fresh workdir removed after SIGTERM cancel", test_removed_after_cancel),
    ("restricted: the fresh workdir is a tmpfs at /govex/work", test_restricted_workdir_is_its_own_tmpfs),
    ("a 5,000-deep tree in the workdir is removed", test_deep_tree_removed),
    ("the workdir of a SIGKILLed govex is swept later", test_leftover_of_killed_run_swept),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
