#!/usr/bin/env python3
"""Root without capabilities, as a container's root is (its capabilities dropped, in a
user namespace of the runtime's): govex sandboxes as an unprivileged user would, a user
namespace per run, instead of failing at the first privileged step.  (CAP_SETFCAP stays:
mapping uid 0 into a new user namespace needs it, Linux >= 5.12.)  Root only; run with
setpriv(1) from util-linux."""
import os
import shutil
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import govextest as g  # noqa: E402

SETPRIV = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
           "--bounding-set=-all,+setfcap", "--"]
CONTROLS = {"network_deny", "fs_read_allowlist", "fs_write_allowlist", "subprocess_deny",
            "syscall_filter", "no_new_privileges", "process_tree_kill"}


def need_root():
    if os.geteuid() != 0:
        raise g.Skip("root drops its capabilities here (not root)")
    if not shutil.which("setpriv"):
        raise g.Skip("setpriv (util-linux) is missing")


def _run(t, args, env=None):
    import subprocess
    env = dict(env or os.environ)
    env["XDG_CACHE_HOME"] = t.path("cache")
    os.makedirs(env["XDG_CACHE_HOME"], mode=0o700, exist_ok=True)
    p = subprocess.run(SETPRIV + [g.GOVEX] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=60, cwd=t.tmp)
    return p


def test_sandbox_without_capabilities(t):
    need_root()
    pol = g.preset("strict")
    for k in ("memory_bytes", "processes", "cpu_ms"):
        pol["limits"].pop(k, None)
    p = t.write_json("p.json", pol)
    r = _run(t, ["run", "--json", "--policy", p, "-c",
                 "import os\nprint(os.getuid(), open('/proc/self/status').read().count('CapEff:\\t0000000000000000'))"])
    doc = __import__("json").loads(r.stdout)
    g.eq(doc["status"], "success", "status (%r, stderr %r)" % (doc.get("diagnostics"), r.stderr))
    g.eq(doc["backend"]["name"], "restricted", "backend")
    g.check(CONTROLS <= set(doc["backend"]["controls"]), "controls: %r" % doc["backend"])
    uid, no_caps = doc["stdout"].split()
    g.eq(uid, "0", "the run keeps the caller's uid in its user namespace")
    g.eq(no_caps, "1", "the run holds no capability")


def test_report_without_capabilities(t):
    need_root()
    r = _run(t, ["backends", "--json"])
    reps = __import__("json").loads(r.stdout)
    rr = [x for x in reps if x["name"] == "restricted"][0]
    g.check(rr["available"], "the sandbox is available to a root without capabilities: %r"
            % rr)
    g.check(CONTROLS <= set(rr["enforced"]), "enforced: %r" % rr["enforced"])


TESTS = [
    ("root without CAP_SYS_ADMIN: a run in a user namespace", test_sandbox_without_capabilities),
    ("root without CAP_SYS_ADMIN: the sandbox is reported available",
     test_report_without_capabilities),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
