#!/usr/bin/env python3
"""The sandbox's file system: nothing of the host but what the policy names."""
import os
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402


def test_host_secrets_invisible(t):
    e.need_restricted("fs_read_allowlist")
    home = os.path.expanduser("~")
    homefile = None
    for n in sorted(os.listdir(home)) if os.path.isdir(home) else []:
        p = os.path.join(home, n)
        if os.path.isfile(p) and not os.path.islink(p):
            homefile = p
            break
    if homefile is None:
        homefile = t.write("home-secret", "s3cret")
    ops = [["read", "/etc/shadow", {"as": "shadow"}],
           ["read", "/etc/passwd", {"as": "passwd"}],
           ["read", homefile, {"as": "home"}],
           ["listdir", "/home", {"as": "homes"}],
           ["read", t.write("mine", "x"), {"as": "caller_tmp"}],
           ["listdir", "/", {"as": "root"}],
           ["listdir", "/etc", {"as": "etc"}]]
    _, doc, res = e.run_probe(t, ops)
    e.denied(res, "shadow", "ENOENT")
    e.own_passwd(res, "passwd")  # the sandbox's own (contract section 5)
    e.denied(res, "home", "ENOENT")
    e.denied(res, "homes", "ENOENT")
    e.denied(res, "caller_tmp", "ENOENT")
    top = set(e.allowed(res, "root"))
    # /govex: where the fresh workdir (a tmpfs) is mounted
    g.check(top <= {"dev", "proc", "tmp", "usr", "lib", "lib64", "root", "opt", "bin", "home",
                    "govex", "etc"},
            "unexpected top-level entries in the sandbox root: %r" % sorted(top))
    # /etc holds only the sandbox's own identity files
    g.eq(sorted(e.allowed(res, "etc")), ["group", "passwd"], "/etc in the sandbox")


def test_writes_outside_denied(t):
    e.need_restricted("fs_write_allowlist")
    ro = t.path("ro")
    os.mkdir(ro)
    t.write("ro/existing", "keep")
    name = "govex-escape-%s" % uuid.uuid4().hex
    cwd = t.path("cwd")
    os.mkdir(cwd)
    pol = e.policy(t, filesystem={"read": [ro]})
    ops = [["write", "/tmp/" + name, {"as": "host_tmp"}],
           ["write", os.path.join(cwd, "cwd-file"), {"as": "cwd"}],
           ["write", os.path.join(ro, "new"), {"as": "ro_new"}],
           ["write", os.path.join(ro, "existing"), {"as": "ro_existing"}],
           ["read", os.path.join(ro, "existing"), {"as": "ro_read"}],
           ["write", "/usr/lib/" + name, {"as": "usr"}],
           ["write", "/" + name, {"as": "root"}],
           ["write", "/dev/" + name, {"as": "dev"}],
           ["write", "/dev/null", {"as": "devnull"}]]
    _, doc, res = e.run_probe(t, ops, pol=pol, cwd=cwd)
    # the sandbox's /tmp is private: writing there works and never reaches the host's
    e.allowed(res, "host_tmp")
    g.check(not os.path.exists("/tmp/" + name), "a write to /tmp reached the host's /tmp")
    e.denied(res, "cwd", "ENOENT")
    g.check(not os.path.exists(os.path.join(cwd, "cwd-file")), "wrote to the caller's cwd")
    e.denied(res, "ro_new", "EROFS")
    e.denied(res, "ro_existing", "EROFS")
    eq_val = e.allowed(res, "ro_read")
    g.eq(eq_val, "keep", "read root content")
    e.denied(res, "usr", "EROFS")
    e.denied(res, "root", "EROFS")
    e.denied(res, "dev", "EROFS")
    e.allowed(res, "devnull")
    with open(os.path.join(ro, "existing")) as f:
        g.eq(f.read(), "keep", "read root file after the run")


def test_symlinks_out_of_workdir(t):
    e.need_restricted("fs_read_allowlist")
    secret = t.write("secret", "s3cret")
    ro = t.path("ro")
    os.mkdir(ro)
    os.symlink("/etc/passwd", os.path.join(ro, "to-passwd"))
    os.symlink(secret, os.path.join(ro, "to-secret"))
    os.symlink("../secret", os.path.join(ro, "up-secret"))
    pol = e.policy(t, filesystem={"read": [ro]})
    ops = [["symlink_read", "/etc/shadow", "l1", {"as": "wd_shadow"}],
           ["symlink_read", secret, "l2", {"as": "wd_secret"}],
           ["symlink_read", "../../../../../../etc/passwd", "l3", {"as": "wd_dotdot"}],
           ["read", os.path.join(ro, "to-passwd"), {"as": "ro_passwd"}],
           ["read", os.path.join(ro, "to-secret"), {"as": "ro_secret"}],
           ["read", os.path.join(ro, "up-secret"), {"as": "ro_up"}]]
    _, doc, res = e.run_probe(t, ops, pol=pol)
    for label in ("wd_shadow", "wd_secret", "ro_secret", "ro_up"):
        e.denied(res, label, "ENOENT")
    # /etc/passwd inside is the sandbox's own (contract section 5): a link to it reads
    # that one, never the host's
    for label in ("wd_dotdot", "ro_passwd"):
        e.own_passwd(res, label)


def test_write_root_ownership(t):
    e.need_restricted("fs_write_allowlist")
    rw = t.path("rw")
    os.mkdir(rw)
    os.chmod(rw, 0o777)   # as root the code runs as the run's uid: host permissions apply
    pol = e.policy(t, filesystem={"write": [rw]})
    ops = [["write", os.path.join(rw, "made-inside"), {"as": "w"}], ["ids", {"as": "ids"}]]
    _, doc, res = e.run_probe(t, ops, pol=pol)
    e.allowed(res, "w")
    st = os.stat(os.path.join(rw, "made-inside"))
    g.check(st.st_uid != 0, "a file made inside belongs to host root")
    if os.geteuid() == 0:
        # as root each run has its own uid from the range (never a shared nobody)
        g.check(e.is_run_id(st.st_uid), "owner %d of a file made inside is not a run uid"
                % st.st_uid)
    else:
        g.eq(st.st_uid, os.geteuid(), "owner of a file made inside")
    ids = e.allowed(res, "ids")
    g.check(ids[0] != 0 and ids[1] != 0, "code runs as uid 0: %r" % ids)


def test_fill_tmp_and_workdir(t):
    e.need_restricted("fs_write_allowlist", "file_size_per_process")
    pol = e.policy(t, limits={"file_size_bytes": 4 << 20})
    ops = [["fill", "/tmp/big", 1 << 30, {"as": "tmp"}],
           ["fill", "big", 64 << 20, {"as": "workdir"}]]
    tmpdir = t.path("tmpdir")
    os.mkdir(tmpdir)
    os.chmod(tmpdir, 0o777)
    r, doc, res = e.run_probe(t, ops, pol=pol, extra_env={"TMPDIR": tmpdir})
    # /tmp: a bounded tmpfs, full long before 1 GiB; the file-size limit may bite first
    g.check(res["tmp"]["errno"] in ("ENOSPC", "EFBIG"), "tmp fill: %r" % res["tmp"])
    e.denied(res, "workdir", "EFBIG")
    g.eq(os.listdir(tmpdir), [], "temp dirs left in TMPDIR")


def test_proc_and_dev(t):
    e.need_restricted("fs_read_allowlist")
    ops = [["listdir", "/dev", {"as": "dev"}], ["pids", {"as": "pids"}],
           ["read", "/proc/1/environ", {"as": "init_environ"}],
           ["hostname", {"as": "host"}]]
    _, doc, res = e.run_probe(t, ops)
    g.eq(set(e.allowed(res, "dev")),
         {"null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr"},
         "/dev entries")
    pids = e.allowed(res, "pids")
    # PID 1 (the shim) is not the run's to read: proc's hidepid leaves it out
    g.check(len(pids) <= 2 and 1 not in pids, "processes visible in /proc: %r" % pids)
    g.check(os.getpid() not in pids or os.getpid() <= 3, "host pids visible: %r" % pids)
    e.denied(res, "init_environ", "ENOENT")
    g.eq(e.allowed(res, "host"), "govex", "hostname")


def test_concurrent_runs_own_ids(t):
    """Two runs at once have distinct ids (as root: from the run range, never a shared
    nobody) and see only "/" as their cgroups."""
    e.need_restricted("fs_write_allowlist")
    code = ("import os, time\n"
            "print(os.getuid(), os.getgid())\n"
            "print(sorted(set(l.split(':', 2)[2] for l in "
            "open('/proc/self/cgroup').read().splitlines())))\n"
            "time.sleep(1.5)\n")
    pol = e.policy(t)
    docs = [None, None]

    def one(i):
        docs[i] = t.run(["run", "--policy", pol, "--json", "-c", code]).result()

    th = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    ids = []
    for d in docs:
        g.eq(d["status"], "success", "status: %r" % d)
        lines = d["stdout"].splitlines()
        uid, gid = (int(x) for x in lines[0].split())
        ids.append(uid)
        g.eq(lines[1], "['/']", "cgroup paths inside")
        if os.geteuid() == 0:
            g.check(e.is_run_id(uid) and e.is_run_id(gid), "ids %d/%d not from the run "
                    "range" % (uid, gid))
    if os.geteuid() == 0:
        g.check(ids[0] != ids[1], "two concurrent runs share uid %d" % ids[0])


if __name__ == "__main__":
    sys.exit(g.main([
        ("host secrets (/etc/shadow, home) are invisible", test_host_secrets_invisible),
        ("writes outside write roots are denied", test_writes_outside_denied),
        ("symlinks cannot lead out of the sandbox", test_symlinks_out_of_workdir),
        ("files made in a write root are not root's", test_write_root_ownership),
        ("filling /tmp and the workdir is bounded", test_fill_tmp_and_workdir),
        ("/proc and /dev are the sandbox's own", test_proc_and_dev),
        ("concurrent runs have their own ids and cgroup view", test_concurrent_runs_own_ids),
    ]))
