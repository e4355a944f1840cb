#!/usr/bin/env python3
"""govex in a container on a pure cgroup v2 host, as podman (with crun) starts one: what
docs/deploy.md, "Containers: the aggregate limits", says to set, shown to work, and each
part of it shown to be needed.

The container is root of a user namespace of its own (--uidmap: unprivileged on the host)
with every capability dropped but CAP_SETFCAP, no_new_privs, a read-only root, govex's
seccomp profile (deploy/seccomp/govex.json), its own cgroup namespace and a writable
cgroup file system (--security-opt unmask=ALL: podman then mounts cgroup2 read-write, and
crun hands the container's cgroup to the container's root).  govex finds its cgroup
delegated at the cgroup namespace's root, moves itself into a leaf and runs `strict` with
its aggregate limits.  Then: the image's unprivileged uid (10001) cannot have them (the
runtime hands the cgroup to the container's root only) and is refused by name; without
CAP_SETFCAP no user namespace can map the container's root, so there is no sandbox; with
the cgroup file system read-only (podman's default masks) strict is refused by name.

No image is pulled or built: the container's root is an empty directory with the host's
/usr and /etc and govex's build bound read-only (the test's guest is Debian 12, like the
image).  tests/vm/test_vm.py runs this as root in its VM; elsewhere it skips, saying why.
"""
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hoststest as h  # noqa: E402
from hoststest import g  # noqa: E402

PROFILE = os.path.join(g.REPO, "deploy", "seccomp", "govex.json")
IDS = "300000"          # the container's ids 0..65535 on the host
AGGREGATES = {"memory_aggregate", "pids_aggregate", "cpu_time_aggregate"}
MIB = 1 << 20


def need_podman():
    if not shutil.which("podman"):
        raise g.Skip("podman is not installed (tests/vm/vm.sh's image has it)")
    if not h.ROOT:
        raise g.Skip("the containers here are rootful podman's (root)")
    if not h.is_pure_v2():
        raise g.Skip("needs pure cgroup v2 (this host mounts cgroup v1 hierarchies: "
                     "tests/vm/test_vm.py runs this suite on a Debian 12 VM)")


def rootfs(t):
    """An empty root owned by the container's root: mount points and the /usr links."""
    r = t.path("rootfs")
    os.chmod(t.tmp, 0o755)      # the container's root (uid 300000 here) walks to it
    for d in ("usr", "etc", "proc", "sys", "dev", "tmp", "run", "var/tmp"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    for link in ("bin", "lib", "lib64", "sbin"):
        if os.path.isdir("/usr/" + link):
            os.symlink("usr/" + link, os.path.join(r, link))
    subprocess.run(["chown", "-hR", "%s:%s" % (IDS, IDS), r], check=True, timeout=60)
    return r


def podman(t, argv, user="0", caps=("setfcap",), unmask="ALL", timeout=600):
    """Runs ARGV in a container shaped as docs/deploy.md says (changed by the arguments):
    (exit code, stdout, stderr)."""
    binds = dict.fromkeys(["/usr", "/etc", os.path.dirname(g.GOVEX), t.tmp] +
                          ([os.path.abspath(os.environ["GOVEX_BUILD"])]
                           if os.environ.get("GOVEX_BUILD") else []))
    cmd = ["podman", "run", "--rm", "--uidmap", "0:%s:65536" % IDS,
           "--gidmap", "0:%s:65536" % IDS, "--user", user, "--cap-drop=all"]
    cmd += ["--cap-add=" + c for c in caps]
    cmd += ["--read-only", "--security-opt", "seccomp=" + PROFILE,
            "--security-opt", "label=disable", "--network", "none", "--tmpfs", "/tmp",
            "-e", "XDG_CACHE_HOME=/tmp", "-e", "LANG=C.UTF-8",
            # an ASan build's leak checker stops the world with ptrace, which the
            # profile denies (the image's govex has no sanitizer)
            "-e", "ASAN_OPTIONS=detect_leaks=0"]
    if unmask:
        cmd += ["--security-opt", "unmask=" + unmask]
    for b in binds:
        cmd += ["-v", "%s:%s:ro" % (b, b)]
    cmd += ["--rootfs", t.path("rootfs") if os.path.isdir(t.path("rootfs")) else rootfs(t)]
    p = subprocess.run(cmd + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def restricted(t, **kw):
    rc, out, err = podman(t, [g.GOVEX, "backends", "--json"], **kw)
    g.check(rc == 0, "govex backends in the container: exit %d\n%s%s" % (rc, out[-1500:],
                                                                       err[-1500:]))
    return [b for b in json.loads(out) if b["name"] == "restricted"][0]


def test_strict_runs(t):
    need_podman()
    b = restricted(t)
    print("# cgroups in the container: %r" % b.get("cgroups"))
    g.eq(b["cgroups"]["source"], "delegated", "where the cgroups come from (%r)" % b)
    g.check(AGGREGATES <= set(b["enforced"]), "enforced: %r" % b["enforced"])
    rc, out, err = podman(t, [g.GOVEX, "run", "--json", "-c", "import os; print(6*7)"])
    res = h.result_json(out)
    g.check(rc == 0 and res.get("stdout") == "42\n",
            "strict in the container: exit %d\n%s%s" % (rc, out[-1500:], err[-1500:]))
    ctrls = set(res["backend"]["controls"])
    g.check(AGGREGATES <= ctrls, "strict's result lacks %r" % sorted(AGGREGATES - ctrls))


def test_memory_limit_holds(t):
    """/tmp of the run (tmpfs, charged to its cgroup) written past memory_bytes: killed."""
    need_podman()
    pol = g.preset("strict")
    pol["limits"]["memory_bytes"] = 32 * MIB
    pol["limits"]["wall_ms"] = 60000
    path = t.write_json("p.json", pol)
    os.chmod(path, 0o644)
    code = ("b = b'x' * (1 << 20)\nwith open('/tmp/fill', 'wb') as f:\n"
            "    for _ in range(48):\n        f.write(b)\nprint('wrote 48 MiB')")
    rc, out, err = podman(t, [g.GOVEX, "run", "--json", "--policy", path, "-c", code])
    res = h.result_json(out)
    print("# past memory_bytes in the container: exit %d, %s %s" % (
        rc, res.get("status"), res.get("termination")))
    g.eq(res.get("termination"), "memory_limit", "termination (%s%s)" % (out[-1500:],
                                                                        err[-800:]))


def test_image_user_refused(t):
    """The image's uid 10001: the runtime hands the container's cgroup to its root only."""
    need_podman()
    b = restricted(t, user="10001")
    g.eq(b["cgroups"]["source"], "none", "as uid 10001 (%r)" % b.get("cgroups"))
    rc, out, err = podman(t, [g.GOVEX, "run", "-c", "print(1)"], user="10001")
    g.check(rc == g.EXIT_REFUSED and "policy_refused" in err and
            all(a in err for a in ("memory_aggregate", "pids_aggregate")),
            "strict as uid 10001: exit %d, not a refusal naming the limits:\n%s" % (rc, err))


def test_setfcap_needed(t):
    """Without CAP_SETFCAP the container's root cannot be mapped in a user namespace of
    govex's (Linux >= 5.12): no sandbox, and the report says why."""
    need_podman()
    b = restricted(t, caps=())
    g.check(b["available"] is False and "uid_map" in json.dumps(b["unavailable"]),
            "without CAP_SETFCAP: %r" % {k: b.get(k) for k in ("available", "unavailable")})


def test_readonly_cgroupfs_refused(t):
    """podman's default masks (only /proc unmasked): cgroup2 is mounted read-only, strict
    is refused by name."""
    need_podman()
    b = restricted(t, unmask="/proc/*")
    g.eq(b["cgroups"]["source"], "none", "with cgroup2 read-only (%r)" % b.get("cgroups"))
    rc, out, err = podman(t, [g.GOVEX, "run", "-c", "print(1)"], unmask="/proc/*")
    g.check(rc == g.EXIT_REFUSED and "memory_aggregate" in err,
            "strict with cgroup2 read-only: exit %d:\n%s" % (rc, err))


if __name__ == "__main__":
    sys.exit(g.main([
        ("strict runs in a podman container as root of its own user namespace",
         test_strict_runs),
        ("a run past memory_bytes in the container ends memory_limit", test_memory_limit_holds),
        ("the image's uid 10001 cannot have the limits: refused by name",
         test_image_user_refused),
        ("without CAP_SETFCAP there is no sandbox, and the report says why",
         test_setfcap_needed),
        ("a read-only cgroup file system: strict refused by name",
         test_readonly_cgroupfs_refused),
    ]))
