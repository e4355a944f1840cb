#!/usr/bin/env python3
"""docs/deploy.md's host requirements, shown in a real OCI container (runc, Debian's):
govex run inside a container set up as deploy/kubernetes/deployment.yaml sets up its pod
(a user namespace of the container's own, uid 10001, no capabilities, no_new_privs, a
read-only root, the cgroup file system read-only as Kubernetes mounts it) works with the
sandbox's namespaces, Landlock and seccomp; and each relaxation the Deployment makes is
needed: with the runtime's masked /proc (procMount: Default) or a seccomp profile that
refuses user namespaces (what RuntimeDefault does without CAP_SYS_ADMIN) the restricted
backend is unavailable, and says why.  With the cgroup file system read-only the
aggregate limits are missing and a policy that sets them is refused by name, never run
best-effort (docs/deploy.md, "Cgroups: where a container gets them").

Only what runc and this kernel allow; no network (the container has a network namespace
of its own with nothing in it).  Without runc the suite skips (feature:runc: CI installs
it and requires it).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOVEX = os.path.abspath(os.environ.get("GOVEX") or os.path.join(REPO, "build", "govex"))
UID = 10001
HOST_BASE = 3000000        # the container's ids 0..65535 are these on the host


class Skip(Exception):
    pass


class Failure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def need_runc():
    runc = shutil.which("runc")
    if not runc:
        raise Skip("feature:runc runc is not installed (apt-get install runc)")
    if os.geteuid() != 0:
        raise Skip("runc containers need root here")
    check(os.path.isfile(GOVEX) and os.access(GOVEX, os.X_OK),
          "govex binary not found: %s (set GOVEX or build it)" % GOVEX)
    return runc


def base_config(tmp):
    """runc's default spec, bound to a rootfs of the host's /usr and /etc (read-only) and
    govex's build directory, shaped like the Deployment's pod."""
    rootfs = os.path.join(tmp, "rootfs")
    for d in ("usr", "etc", "proc", "sys", "dev", "tmp", "var/cache/govex", "work"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"),
                         ("sbin", "usr/sbin")):
        if os.path.isdir(os.path.join("/", target)):
            os.symlink(target, os.path.join(rootfs, link))
    # writable places, as the pod's emptyDir volumes: host directories anyone may write
    for d in ("tmp", "cache"):
        os.makedirs(os.path.join(tmp, d))
        os.chmod(os.path.join(tmp, d), 0o1777)
    r = subprocess.run(["runc", "spec", "--bundle", tmp], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    check(r.returncode == 0, "runc spec: %s" % r.stdout.decode())
    with open(os.path.join(tmp, "config.json")) as f:
        c = json.load(f)
    c["root"] = {"path": rootfs, "readonly": True}
    binds = ["/usr", "/etc", os.path.dirname(GOVEX)]
    if os.environ.get("GOVEX_BUILD"):
        binds.append(os.path.abspath(os.environ["GOVEX_BUILD"]))
    # /tmp first: a build tree under /tmp (CI clones into mktemp -d) is bound over it
    # afterwards, its mount point made in the bound directory
    c["mounts"].append({"destination": "/tmp", "type": "bind",
                        "source": os.path.join(tmp, "tmp"), "options": ["rbind", "rw"]})
    for src in dict.fromkeys(binds):
        if src == "/tmp" or src.startswith("/tmp/"):
            os.makedirs(os.path.join(tmp, "tmp") + src[len("/tmp"):], exist_ok=True)
        else:
            os.makedirs(rootfs + src, exist_ok=True)
        c["mounts"].append({"destination": src, "type": "bind", "source": src,
                            "options": ["rbind", "ro"]})
    c["mounts"].append({"destination": "/var/cache/govex", "type": "bind",
                        "source": os.path.join(tmp, "cache"), "options": ["rbind", "rw"]})
    p = c["process"]
    p["terminal"] = False
    p["user"] = {"uid": UID, "gid": UID}
    p["env"] = ["PATH=/usr/bin:/bin", "XDG_CACHE_HOME=/var/cache/govex", "LANG=C.UTF-8"]
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if os.environ.get(k):
            p["env"].append("%s=%s" % (k, os.environ[k]))
    p["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted",
                                         "ambient")}
    p["noNewPrivileges"] = True
    p["cwd"] = "/tmp"
    lx = c["linux"]
    # hostUsers: false
    lx["namespaces"] += [{"type": "user"}, {"type": "cgroup"}]
    lx["uidMappings"] = [{"containerID": 0, "hostID": HOST_BASE, "size": 65536}]
    lx["gidMappings"] = [{"containerID": 0, "hostID": HOST_BASE, "size": 65536}]
    lx.pop("seccomp", None)          # seccompProfile: Unconfined
    return c


def unmask(c):
    """procMount: Unmasked."""
    c["linux"].pop("maskedPaths", None)
    c["linux"].pop("readonlyPaths", None)


def run(tmp, c, argv, name, timeout=120):
    """Runs ARGV in a container of config C: (exit code, output)."""
    c = json.loads(json.dumps(c))
    c["process"]["args"] = argv
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(c, f)
    cid = "govex-test-%d-%s" % (os.getpid(), name)
    try:
        r = subprocess.run(["runc", "run", "--bundle", tmp, cid], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           start_new_session=True)
        return r.returncode, r.stdout.decode("utf-8", "replace")
    finally:
        subprocess.run(["runc", "delete", "--force", cid], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)


def first_json(text):
    """The first JSON value in TEXT (runc merges the container's stdout and stderr)."""
    for i, ch in enumerate(text):
        if ch in "[{":
            try:
                return json.JSONDecoder().raw_decode(text[i:])[0]
            except ValueError:
                continue
    return None


def restricted(tmp, c, name):
    rc, out = run(tmp, c, [GOVEX, "backends", "--json"], name)
    check(rc == 0, "govex backends in the container: exit %d\n%s" % (rc, out[-2000:]))
    doc = first_json(out)
    check(doc is not None, "govex backends --json printed no JSON:\n%s" % out[-2000:])
    backs = doc.get("backends", doc) if isinstance(doc, dict) else doc
    for b in backs if isinstance(backs, list) else []:
        if b.get("name") == "restricted":
            return b, out
    raise Failure("no restricted backend in:\n%s" % out[-2000:])


def no_aggregates_policy(tmp):
    """The strict preset without its aggregate limits (memory, tasks, CPU time)."""
    r = subprocess.run([GOVEX, "policy", "show", "strict"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    check(r.returncode == 0, "govex policy show strict: %s" % r.stdout.decode())
    p = json.loads(r.stdout)
    for k in ("memory_bytes", "processes", "cpu_ms"):
        p["limits"][k] = None
    path = os.path.join(tmp, "tmp", "policy.json")
    with open(path, "w") as f:
        json.dump(p, f)
    os.chmod(path, 0o644)
    return "/tmp/policy.json"


AGGREGATES = {"memory_aggregate", "pids_aggregate", "cpu_time_aggregate"}


def test_pod_posture(tmp):
    """The Deployment's pod: the sandbox works; strict's aggregate limits are refused
    by name (a read-only cgroup file system), or, once govex can have them, enforced."""
    need_runc()
    c = base_config(tmp)
    unmask(c)
    b, out = restricted(tmp, c, "pod")
    check(b.get("available") is True,
          "restricted is unavailable in the pod's posture:\n%s" % out[-2500:])
    pol = no_aggregates_policy(tmp)
    rc, out = run(tmp, c, [GOVEX, "run", "--json", "--policy", pol, "-c",
                           "import os; print(6*7, os.getuid())"], "pod-run")
    check(rc == 0, "a run in the pod: exit %d\n%s" % (rc, out[-2500:]))
    res = first_json(out) or {}
    check(res.get("status") == "success" and res.get("stdout") == "42 %d\n" % UID,
          "the run in the pod: %r" % {k: res.get(k) for k in ("status", "stdout", "stderr")})
    ctrls = set(res.get("backend", {}).get("controls", []))
    for want in ("network_deny", "fs_read_allowlist", "subprocess_deny", "syscall_filter"):
        check(want in ctrls, "the run in the pod lacks %s: %r" % (want, sorted(ctrls)))
    rc, out = run(tmp, c, [GOVEX, "run", "--json", "-c", "print(1)"], "pod-strict")
    if rc == 0:
        res = first_json(out) or {}
        ctrls = set(res.get("backend", {}).get("controls", []))
        check(AGGREGATES <= ctrls, "strict ran without its aggregate controls: %r"
              % sorted(ctrls))
        print("# strict runs in the pod with its aggregate limits")
    else:
        check(rc == 125 and "policy_refused" in out and
              all(a in out for a in AGGREGATES),
              "strict in the pod: exit %d, not a refusal naming the aggregate controls:\n%s"
              % (rc, out[-2000:]))
        print("# strict in the pod: refused, naming %s (read-only cgroup file system)"
              % ", ".join(sorted(AGGREGATES)))


def test_masked_proc(tmp):
    """procMount: Default (the runtime's masked /proc): no sandbox, and it says why."""
    need_runc()
    c = base_config(tmp)
    check(c["linux"].get("maskedPaths"), "runc's spec masks nothing: the test shows nothing")
    b, out = restricted(tmp, c, "masked")
    check(b.get("available") is False, "restricted is available under a masked /proc")
    check("proc" in out, "the reason does not name proc:\n%s" % out[-2000:])


def test_seccomp_userns(tmp):
    """A seccomp profile refusing user namespaces (as RuntimeDefault does to a container
    without CAP_SYS_ADMIN): no sandbox."""
    need_runc()
    c = base_config(tmp)
    unmask(c)
    newuser = 0x10000000
    c["linux"]["seccomp"] = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": ["unshare", "clone"], "action": "SCMP_ACT_ERRNO",
             "args": [{"index": 0, "value": newuser, "valueTwo": newuser,
                       "op": "SCMP_CMP_MASKED_EQ"}]},
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
        ]}
    b, out = restricted(tmp, c, "seccomp")
    check(b.get("available") is False,
          "restricted is available when user namespaces are refused:\n%s" % out[-2000:])


PROFILE = os.path.join(REPO, "deploy", "seccomp", "govex.json")

# syscall probes, run directly in the container (not in govex's sandbox): x86_64 numbers
PROBE = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
print(json.dumps({
    "keyctl": call(250, 0, -3, 0),            # KEYCTL_GET_KEYRING_ID, session
    "kcmp": call(312, os.getpid(), os.getpid(), 0, 0, 0),
    "io_uring_setup": call(425, 1, 0),
    "bpf": call(321, 0, 0, 0),
}))
"""


def probe(tmp, c, name):
    rc, out = run(tmp, c, ["/usr/bin/python3", "-c", PROBE], name)
    doc = first_json(out)
    check(rc == 0 and isinstance(doc, dict), "the syscall probe: exit %d\n%s" % (rc, out[-1500:]))
    return doc


def test_seccomp_localhost(tmp):
    """deploy/seccomp/govex.json, the Deployment's Localhost profile: the sandbox works
    under it, and what it denies is denied (EPERM) where the same container without it
    answers otherwise."""
    need_runc()
    if os.uname().machine != "x86_64":
        raise Skip("the syscall probe's numbers are x86_64's")
    c = base_config(tmp)
    unmask(c)
    with open(PROFILE) as f:
        c["linux"]["seccomp"] = json.load(f)
    # an ASan build's leak checker stops the world with ptrace, which the profile denies
    # (the image's govex has no sanitizer)
    c["process"]["env"] = [e for e in c["process"]["env"] if not e.startswith("ASAN_OPTIONS=")]
    c["process"]["env"].append("ASAN_OPTIONS=%s%sdetect_leaks=0" % (
        os.environ.get("ASAN_OPTIONS", ""), ":" if os.environ.get("ASAN_OPTIONS") else ""))
    b, out = restricted(tmp, c, "localhost")
    check(b.get("available") is True,
          "restricted is unavailable under deploy/seccomp/govex.json:\n%s" % out[-2500:])
    pol = no_aggregates_policy(tmp)
    rc, out = run(tmp, c, [GOVEX, "run", "--json", "--policy", pol, "-c",
                           "import json, subprocess, socket; print(6*7)"], "localhost-run")
    res = first_json(out) or {}
    check(rc == 0 and res.get("stdout") == "42\n",
          "a run under the profile: exit %d\n%s" % (rc, out[-2500:]))
    denied = probe(tmp, c, "localhost-probe")
    check(all(v == 1 for v in denied.values()),
          "the profile lets through (errno, 1 = EPERM): %r" % denied)
    tmp2 = os.path.join(tmp, "unconfined")
    os.makedirs(tmp2)
    c2 = base_config(tmp2)
    unmask(c2)
    free = probe(tmp2, c2, "unconfined-probe")
    for name in ("keyctl", "kcmp"):
        check(free[name] != 1, "without the profile %s is EPERM too (%r): the probe shows "
              "nothing" % (name, free))
    print("# errno with the profile %r, without %r" % (denied, free))


SERVE = r"""
import json, os, re, signal, subprocess, sys, time, urllib.request
tok = sys.argv[2]
p = subprocess.Popen([sys.argv[1], "mcp", "--http", "127.0.0.1:0", "--token-file", tok,
                      "--drain-timeout", "5", "--policy", sys.argv[3]], stderr=subprocess.PIPE)
line, m = "", None
for _ in range(20):                 # "runs start cold: ..." and the like come first
    got = p.stderr.readline().decode()
    line += got
    m = re.search(r"listening on (http://[^ ]+)/mcp", got)
    if m or not got:
        break
if not m:
    p.wait(10)
    print(json.dumps({"started": False, "exit": p.returncode,
                      "stderr": line + p.stderr.read().decode()[-800:]}))
    sys.exit(0)
base = m.group(1)
for _ in range(100):
    try:
        if urllib.request.urlopen(base + "/readyz", timeout=2).status == 200:
            break
    except OSError:
        time.sleep(0.1)
token = open(tok).readline().strip()
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "run_python_snippet", "arguments": {"code": "print(6*7)"},
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {},
              "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}).encode()
req = urllib.request.Request(base + "/mcp", data=body, method="POST", headers={
    "Authorization": "Bearer " + token, "Content-Type": "application/json",
    "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28"})
try:
    resp = json.loads(urllib.request.urlopen(req, timeout=60).read())
except Exception as e:
    resp = {"error": repr(e)}
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(30)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "timeout"
print(json.dumps({"started": True, "exit": rc, "response": resp,
                  "stderr": p.stderr.read().decode()[-800:]}))
"""


def need_http():
    r = subprocess.run([GOVEX, "mcp", "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if "--http" not in r.stdout.decode("utf-8", "replace"):
        raise Skip("this govex has no HTTP transport (`govex mcp --help` names no --http; "
                   "issue 13's server is not in this tree)")


def test_pod_serves(tmp):
    """The Deployment's server in the pod's posture, under deploy/seccomp/govex.json: govex
    mcp --http with the token as the kubelet gives it (a file root:10001, mode 0440, by
    subPath) answers a stateless tools/call (under a policy without aggregate limits: the
    read-only cgroup file system) and exits 0 on SIGTERM; the token as a Secret volume's key (a symlink into
    ..data/, no subPath) is refused (exit 125)."""
    need_runc()
    need_http()
    c = base_config(tmp)
    unmask(c)
    with open(PROFILE) as f:
        c["linux"]["seccomp"] = json.load(f)
    # the host's network namespace: a fresh one's loopback is down under runc, where a
    # pod's is up; the server binds 127.0.0.1 only
    c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]
    # (and no sysfs: mounting one takes a network namespace of one's own)
    c["mounts"] = [m for m in c["mounts"] if m["destination"] != "/sys"]
    os.makedirs(os.path.join(tmp, "rootfs", "sys", "fs", "cgroup"), exist_ok=True)
    c["process"]["env"] = [e for e in c["process"]["env"] if not e.startswith("ASAN_OPTIONS=")]
    c["process"]["env"].append("ASAN_OPTIONS=%s%sdetect_leaks=0" % (
        os.environ.get("ASAN_OPTIONS", ""), ":" if os.environ.get("ASAN_OPTIONS") else ""))
    secret = os.path.join(tmp, "secret")
    data = os.path.join(secret, "..2026_01_01_00_00_00.000000000")
    os.makedirs(data)
    tok = os.path.join(data, "token")
    with open(tok, "w") as f:
        f.write("t0ken-" + os.urandom(16).hex() + "\n")
    os.symlink(os.path.basename(data), os.path.join(secret, "..data"))
    os.symlink("..data/token", os.path.join(secret, "token"))
    for path in (secret, data):
        os.chown(path, HOST_BASE, HOST_BASE + UID)
        os.chmod(path, 0o2755)
    os.chown(tok, HOST_BASE, HOST_BASE + UID)      # root:10001 in the pod
    os.chmod(tok, 0o440)                            # defaultMode 0400 + fsGroup's read
    os.makedirs(os.path.join(tmp, "rootfs", "var", "run", "govex", "secret"), exist_ok=True)
    with open(os.path.join(tmp, "rootfs", "var", "run", "govex", "token"), "w"):
        pass
    c["mounts"].append({"destination": "/var/run/govex/token", "type": "bind",
                        "source": tok, "options": ["bind", "ro"]})       # subPath: token
    c["mounts"].append({"destination": "/var/run/govex/secret", "type": "bind",
                        "source": secret, "options": ["rbind", "ro"]})   # no subPath
    # strict's aggregate limits are refused in a pod (a read-only cgroup file system): the policy without them
    pol = no_aggregates_policy(tmp)
    for name, path in (("subpath", "/var/run/govex/token"),
                       ("symlink", "/var/run/govex/secret/token")):
        rc, out = run(tmp, c, ["/usr/bin/python3", "-c", SERVE, GOVEX, path, pol],
                      "serve-" + name)
        doc = first_json(out)
        check(rc == 0 and isinstance(doc, dict), "%s: exit %d\n%s" % (name, rc, out[-2000:]))
        if name == "subpath":
            check(doc["started"], "the server did not start: %r" % doc)
            r = doc.get("response", {}).get("result", {})
            sc = r.get("structuredContent") or {}
            check(sc.get("status") == "success" and sc.get("stdout") == "42\n",
                  "tools/call in the pod: %r" % doc)
            check(doc["exit"] == 0, "SIGTERM: exit %r\n%s" % (doc["exit"], doc["stderr"]))
        else:
            check(not doc["started"] and doc["exit"] == 125 and "symbolic link" in doc["stderr"],
                  "a symlinked token was not refused: %r" % doc)


TESTS = [
    ("the Deployment's pod posture: the sandbox works, aggregates refused by name or "
     "enforced", test_pod_posture),
    ("a masked /proc (procMount: Default) leaves no sandbox", test_masked_proc),
    ("a seccomp profile refusing user namespaces leaves no sandbox", test_seccomp_userns),
    ("deploy/seccomp/govex.json: the sandbox works under it, what it denies is denied",
     test_seccomp_localhost),
    ("the pod serves stateless MCP over HTTP with the token as the kubelet mounts it",
     test_pod_serves),
]


def main():
    print("TAP version 13")
    print("1..%d" % len(TESTS))
    sys.stdout.flush()
    for i, (name, fn) in enumerate(TESTS, 1):
        tmp = tempfile.mkdtemp(prefix="govex-ctr-")
        os.chmod(tmp, 0o755)
        try:
            fn(tmp)
            print("ok %d - %s" % (i, name))
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e))
        except Failure as e:
            print("not ok %d - %s" % (i, name))
            for line in str(e).splitlines():
                print("# " + line)
        except Exception as e:
            print("not ok %d - %s" % (i, name))
            for line in ("crashed: %r\n%s" % (e, traceback.format_exc())).splitlines():
                print("# " + line)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
