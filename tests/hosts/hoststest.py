"""What the hosts suite needs beyond govextest: the facts of this host's cgroups and
systemd, and a way to run a command in a systemd unit (system manager as root, the user's
manager otherwise) and get its output and status back.

These suites test the host contract (DESIGN.md "Hosts: where the aggregate limits come
from") on the hosts users have: pure cgroup v2 under systemd.  tests/vm/test_vm.py runs
them in a Debian 12 VM, as root and as a user with a login session; on a host without
pure cgroup v2 under systemd (this project's CI machine has hybrid cgroups) they skip,
saying so.
"""
import json
import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import govextest as g  # noqa: E402

CG = "/sys/fs/cgroup"
ROOT = os.geteuid() == 0


def is_pure_v2():
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split(" - ")
                if len(fields) == 2 and fields[1].split()[0] == "cgroup":
                    return False
    except OSError:
        return False
    return os.path.exists(CG + "/cgroup.controllers")


def has_systemd():
    return os.path.isdir("/run/systemd/system")


def need_systemd_v2():
    if not is_pure_v2():
        raise g.Skip("needs pure cgroup v2 (this host mounts cgroup v1 hierarchies: "
                     "tests/vm/test_vm.py runs this suite on a Debian 12 VM)")
    if not has_systemd():
        raise g.Skip("needs systemd as the service manager (this host has none: "
                     "tests/vm/test_vm.py runs this suite on a Debian 12 VM)")
    if not ROOT and not os.path.exists(user_runtime() + "/systemd/private"):
        raise g.Skip("needs a user with a systemd login session (no user manager here)")


def user_runtime():
    return os.environ.get("XDG_RUNTIME_DIR") or "/run/user/%d" % os.geteuid()


def own_cgroup(pid="self"):
    with open("/proc/%s/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    raise g.Failure("no cgroup v2 line in /proc/%s/cgroup" % pid)


def read(path):
    with open(path) as f:
        return f.read()


def children(rel):
    d = CG + rel
    return sorted(e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e)))


def report():
    """The restricted backend's report (govex backends --json)."""
    for r in g.backends():
        if r["name"] == "restricted":
            return r
    raise g.Failure("no restricted backend report")


def env_with(**extra):
    env = dict(os.environ)
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def systemd_run(argv, props=(), scope=False, timeout=120, env=None, unit=None):
    """Runs ARGV in a transient unit (a service, or a scope with scope=True) of the system
    manager (root) or the user's, waits for it; returns (status, stdout, stderr)."""
    cmd = ["systemd-run", "--quiet"]
    if not ROOT:
        cmd.append("--user")
    if unit:
        cmd += ["--unit", unit]
    if scope:
        cmd.append("--scope")
    else:
        cmd += ["--wait", "--pipe", "--collect"]
        for k, v in (env or {}).items():
            cmd += ["-E", "%s=%s" % (k, v)]
    for p in props:
        cmd += ["-p", p]
    run_env = env_with(**(env or {})) if scope else None
    p = subprocess.run(cmd + ["--"] + list(argv), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=run_env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8",
                                                                          "replace")


def unit_env():
    """What a unit's govex needs of ours: which binary, and the sanitizers' settings."""
    keep = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "GOVEX_TEST_BASE", "PATH")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return env


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise g.Failure("timed out waiting for %s" % what)


def stop_unit(unit):
    cmd = ["systemctl"] + ([] if ROOT else ["--user"]) + ["stop", unit]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def result_json(stdout):
    return json.loads(stdout)
