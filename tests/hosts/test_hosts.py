#!/usr/bin/env python3
"""The host contract on pure cgroup v2 under systemd (DESIGN.md "Hosts"): govex obtains a
delegated cgroup the ecosystem's way and says which it used; the default policy runs as
root and as a user with a login session, in a unit with Delegate=yes and without; a
cgroup the host hands over is used and never moved into; a cgroup not delegated to govex
is never written; where none can be had, the refusal says what to change, and a server
is not ready.  Each run's limits are then the kernel's, per run (memory of a memfd,
threads), and no cgroup is left behind."""
import json
import os
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mcp"))
import hoststest as h  # noqa: E402
import govextest as g  # noqa: E402

AGGREGATE = {"memory_aggregate", "pids_aggregate", "cpu_time_aggregate"}
GOVEX = g.GOVEX


def test_login_shell_default_policy(t):
    """The README's first command's last step, in a login shell: strict, no extra step."""
    h.need_systemd_v2()
    before = h.own_cgroup()
    r = t.run(["run", "-c", "print(6*7)"])
    r.expect_rc(0)
    g.eq(r.stdout, b"42\n", "stdout of the default policy's run")
    rep = h.report()
    g.eq(rep["cgroups"]["source"], "systemd", "where the cgroups came from (%r)" % rep["cgroups"])
    g.check(AGGREGATE <= set(rep["enforced"]), "aggregate controls enforced: %r" % rep)
    g.check(".scope" in rep["cgroups"]["detail"], "the scope is named: %r" % rep["cgroups"])
    # the test's own process was not moved (only govex's was)
    g.eq(h.own_cgroup(), before, "the caller's cgroup")


def test_result_claims_aggregate(t):
    h.need_systemd_v2()
    r = t.run(["run", "--json", "-c", "print(1)"])
    r.expect_rc(0)
    ctl = set(r.result()["backend"]["controls"])
    g.check({"memory_aggregate", "pids_aggregate"} <= ctl, "result controls: %r" % sorted(ctl))


def test_memory_is_per_run(t):
    """Files in the run's tmpfs are in no address space (RLIMIT_AS cannot see them): only
    the run's cgroup stops them."""
    h.need_systemd_v2()
    pol = g.preset("strict")
    pol["limits"]["memory_bytes"] = 48 << 20
    pol["limits"]["wall_ms"] = 60000      # a VM under TCG writes slowly
    p = t.write_json("p.json", pol)
    code = ("chunk = b'x' * (1 << 20)\n"
            "for i in range(60):\n"
            "    with open('/tmp/f%d' % i, 'wb') as f:\n        f.write(chunk)\n"
            "print('wrote 60 MiB')\n")
    r = t.run(["run", "--json", "--policy", p, "-c", code])
    doc = r.result()
    g.eq(doc["status"], "resource_limit", "status (%r)" % doc.get("stderr"))
    g.eq(doc["termination"], "memory_limit", "termination")


def test_threads_are_per_run(t):
    h.need_systemd_v2()
    pol = g.preset("strict")
    pol["limits"]["processes"] = 8
    p = t.write_json("p.json", pol)
    code = ("import threading, time\nev = threading.Event()\nn = 0\n"
            "for i in range(40):\n"
            "    try:\n        threading.Thread(target=ev.wait, daemon=True).start(); n += 1\n"
            "    except RuntimeError:\n        break\n"
            "print(n)\nev.set()\n")
    r = t.run(["run", "--json", "--policy", p, "-c", code])
    doc = r.result()
    g.eq(doc["status"], "success", "status (%r)" % doc)
    n = int(doc["stdout"])
    g.check(n < 8, "threads started under processes=8: %d" % n)


def _unit_cgroup_check(out):
    """The lines 'RUN ...', 'CG ...' and 'SRC ...' UNIT_SCRIPT prints, by their word."""
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


UNIT_SCRIPT = """
set -u
out=$("$GOVEX" run -c 'print(6*7)'; echo "rc=$?")
echo "RUN $out" | tr '\\n' ' '; echo
echo "CG $(cut -d: -f3 /proc/self/cgroup | tail -n 1)"
echo "SRC $("$GOVEX" backends --json | python3 -c 'import json,sys; print([r for r in json.load(sys.stdin) if r["name"]=="restricted"][0]["cgroups"]["source"])')"
"""


def test_unit_with_delegate(t):
    """A service with Delegate=yes: govex moves the unit's processes into the leaf
    'supervisor' and enables memory and pids for its siblings, the runs."""
    h.need_systemd_v2()
    env = h.unit_env()
    env["GOVEX"] = GOVEX
    st, out, err = h.systemd_run(["sh", "-c", UNIT_SCRIPT], props=["Delegate=yes"], env=env)
    g.eq(st, 0, "unit status (stderr %r)" % err[-2000:])
    lines = _unit_cgroup_check(out)
    g.check(lines.get("RUN", "").startswith("42 rc=0"), "the run in the unit: %r" % out)
    g.check(lines.get("CG", "").endswith("/supervisor"), "the unit's shell is in the leaf: %r"
            % out)
    g.eq(lines.get("SRC", "").strip(), "delegated", "source in a Delegate=yes unit")


def test_unit_without_delegate(t):
    """A service without Delegate: its cgroup is systemd's, so govex asks for a scope of its
    own in the same slice; the service's shell stays where it was."""
    h.need_systemd_v2()
    env = h.unit_env()
    env["GOVEX"] = GOVEX
    st, out, err = h.systemd_run(["sh", "-c", UNIT_SCRIPT], env=env)
    g.eq(st, 0, "unit status (stderr %r)" % err[-2000:])
    lines = _unit_cgroup_check(out)
    g.check(lines.get("RUN", "").startswith("42 rc=0"), "the run in the unit: %r" % out)
    g.check(lines.get("CG", "").endswith(".service"), "the shell stays in its service: %r"
            % out)
    g.eq(lines.get("SRC", "").strip(), "systemd", "source in a unit without Delegate")


def test_scope_with_delegate_many(t):
    """Several govex at once in one delegated scope, with another process there: every run
    works, and the other process is moved into the leaf with them."""
    h.need_systemd_v2()
    script = ("sleep 60 & s=$!; for i in 1 2 3 4; do \"$GOVEX\" run -c 'print(6*7)' > "
              "\"$OUT.$i\" 2>&1 & done; wait %2 %3 %4 %5; "
              "cut -d: -f3 /proc/$s/cgroup > \"$OUT.sleep\"; kill $s")
    out = t.path("o")
    env = h.unit_env()
    env.update(GOVEX=GOVEX, OUT=out)
    st, so, se = h.systemd_run(["sh", "-c", script], props=["Delegate=yes"], scope=True,
                               env=env)
    g.eq(st, 0, "scope status (%r)" % se[-2000:])
    for i in range(1, 5):
        g.eq(h.read("%s.%d" % (out, i)), "42\n", "run %d" % i)
    g.check(h.read(out + ".sleep").strip().endswith("/supervisor"),
            "the scope's other process is in the leaf: %r" % h.read(out + ".sleep"))


def test_refusal_says_what_to_do(t):
    h.need_systemd_v2()
    r = t.run(["run", "-c", "print(1)"], env=h.env_with(GOVEX_CGROUP="none"))
    r.expect_rc(g.EXIT_REFUSED)
    err = r.stderr.decode()
    for word in ("memory_aggregate", "pids_aggregate", "Delegate=yes", "writable cgroup",
                 "GOVEX_CGROUP"):
        g.check(word in err, "the refusal names %r: %r" % (word, err))


def test_own_mode_never_writes_undelegated(t):
    """Not delegated (a login session's scope belongs to systemd) and told not to ask:
    refused, and the session's cgroup is exactly as it was."""
    h.need_systemd_v2()
    rel = h.own_cgroup()
    d = h.CG + rel
    sub = h.read(d + "/cgroup.subtree_control")
    kids = h.children(rel)
    r = t.run(["run", "-c", "print(1)"], env=h.env_with(GOVEX_CGROUP="own"))
    r.expect_rc(g.EXIT_REFUSED)
    g.check(b"not delegated" in r.stderr or b"memory_aggregate" in r.stderr,
            "refusal: %r" % r.stderr)
    g.eq(h.read(d + "/cgroup.subtree_control"), sub, "the session's subtree_control")
    g.eq(h.children(rel), kids, "the session cgroup's children")


def test_handed_cgroup(t):
    """A cgroup the host hands over: runs' cgroups are made below it, govex is not moved
    into it, and nothing is left there afterwards."""
    h.need_systemd_v2()
    if not h.ROOT:
        handed = h.CG + "/govex-handed-not-ours"
        r = t.run(["run", "-c", "print(1)"], env=h.env_with(GOVEX_CGROUP=handed))
        r.expect_rc(g.EXIT_REFUSED)
        rep = json.loads(t.run(["backends", "--json"],
                               env=h.env_with(GOVEX_CGROUP=handed)).stdout)
        rr = [x for x in rep if x["name"] == "restricted"][0]
        g.eq(rr["cgroups"]["source"], "none", "a cgroup that is not ours: %r" % rr["cgroups"])
        return
    handed = h.CG + "/" + h.unique("govex-handed")
    os.mkdir(handed)
    t.defer(os.rmdir, handed)
    env = h.env_with(GOVEX_CGROUP=handed)
    code = "import time; time.sleep(1.5); print(6*7)"
    p = subprocess.Popen([GOVEX, "run", "-c", code], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    t.defer(g._kill_pid, p.pid)
    seen = h.wait_until(lambda: [c for c in os.listdir(handed) if c.startswith("govex.slot")],
                        20, "a run's cgroup below the handed cgroup")
    g.check(not h.own_cgroup(p.pid).startswith(handed[len(h.CG):]),
            "govex itself moved into the handed cgroup: %r" % h.own_cgroup(p.pid))
    out, err = p.communicate(timeout=60)
    g.eq(out, b"42\n", "stdout (stderr %r, cgroups seen %r)" % (err, seen))
    g.eq([c for c in os.listdir(handed) if os.path.isdir(os.path.join(handed, c))], [],
         "cgroups left below the handed cgroup")
    rep = json.loads(t.run(["backends", "--json"], env=env).stdout)
    rr = [x for x in rep if x["name"] == "restricted"][0]
    g.eq(rr["cgroups"]["source"], "host", "source: %r" % rr["cgroups"])


def test_handed_cgroup_with_a_process(t):
    """A handed cgroup that holds a process cannot give its children controllers: said,
    not worked around (govex moves nothing out of a cgroup it was handed)."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("root makes the handed cgroup (a user's is test_handed_cgroup's)")
    handed = h.CG + "/" + h.unique("govex-handed")
    os.mkdir(handed)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(handed + "/cgroup.procs", "w") as f:
            f.write(str(sleeper.pid))
        r = t.run(["run", "-c", "print(1)"], env=h.env_with(GOVEX_CGROUP=handed))
        r.expect_rc(g.EXIT_REFUSED)
        rep = json.loads(t.run(["backends", "--json"],
                               env=h.env_with(GOVEX_CGROUP=handed)).stdout)
        rr = [x for x in rep if x["name"] == "restricted"][0]
        g.check("holds processes" in rr["cgroups"]["detail"], "detail: %r" % rr["cgroups"])
        g.eq(h.read(handed + "/cgroup.procs").split(), [str(sleeper.pid)],
             "the handed cgroup's processes")
        g.eq(h.read(handed + "/cgroup.subtree_control").strip(), "", "its subtree_control")
    finally:
        sleeper.kill()
        sleeper.wait()
        h.wait_until(lambda: not h.read(handed + "/cgroup.procs").strip(), 10, "empty")
        os.rmdir(handed)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _http(port, method, path, body=None, timeout=60):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = {"Host": "127.0.0.1:%d" % port, "Accept": "application/json"}
    if body is not None:
        body = json.dumps(body)
        hdrs["Content-Type"] = "application/json"
    c.request(method, path, body=body, headers=hdrs)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def _mcp_unit(t, props, extra_env=None):
    port = _free_port()
    unit = h.unique("govex-mcp-test") + ".service"
    env = h.unit_env()
    env.update(extra_env or {})
    cmd = ["systemd-run", "--quiet", "--unit", unit, "--collect"]
    if not h.ROOT:
        cmd.insert(1, "--user")
    for k, v in env.items():
        cmd += ["-E", "%s=%s" % (k, v)]
    for p in props:
        cmd += ["-p", p]
    subprocess.run(cmd + ["--", GOVEX, "mcp", "--http", "127.0.0.1:%d" % port], check=True,
                   timeout=60)
    t.defer(h.stop_unit, unit)

    def up():
        try:
            return _http(port, "GET", "/healthz", timeout=5)[0] == 200
        except OSError:
            return False
    h.wait_until(up, 60, "the server in %s" % unit)
    return port


def _call(port, code):
    import mcptest as m
    st, data = _http(port, "POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "run_python_snippet", "arguments": {"code": code},
                   "_meta": m.meta()}}, timeout=120)
    return st, json.loads(data)


def test_mcp_http_unit_with_delegate(t):
    """govex mcp --http as a service with Delegate=yes serves the default policy, and is
    ready."""
    h.need_systemd_v2()
    port = _mcp_unit(t, ["Delegate=yes"])
    st, _ = _http(port, "GET", "/readyz")
    g.eq(st, 200, "/readyz")
    st, doc = _call(port, "print(6*7)")
    g.eq(st, 200, "tools/call (%r)" % doc)
    res = doc["result"]
    g.check(not res.get("isError"), "tool error: %r" % res)
    g.eq(res["structuredContent"]["stdout"], "42\n", "stdout")


def test_mcp_not_ready_when_refused(t):
    """Where the default policy cannot run, /readyz says not ready (503) while /healthz is
    up, and the call is refused naming the controls."""
    h.need_systemd_v2()
    port = _mcp_unit(t, ["Delegate=yes"], {"GOVEX_CGROUP": "none"})
    st, body = _http(port, "GET", "/readyz")
    g.eq(st, 503, "/readyz (%r)" % body)
    g.eq(_http(port, "GET", "/healthz")[0], 200, "/healthz")
    st, doc = _call(port, "print(6*7)")
    res = doc.get("result", {})
    g.check(res.get("isError") and "memory_aggregate" in json.dumps(res),
            "refused naming the control: %r" % doc)


def test_stock_kernel_controls(t):
    """What the kernel lacks is reported missing with the reason, never claimed: on a
    kernel whose Landlock ABI is below 6 (Debian 12's 6.1 has 2), landlock is missing and
    the sandbox still runs the default policy."""
    h.need_systemd_v2()
    rep = h.report()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(444, None, 0, 1)     # landlock_create_ruleset, VERSION
    except OSError:
        abi = -1
    missing = {u["control"]: u["reason"] for u in rep["unavailable"]}
    if abi < 6:
        g.check("landlock" in missing and "landlock" not in rep["enforced"],
                "ABI %d: landlock must be missing: %r" % (abi, rep))
        g.check(("ABI %d" % abi) in missing["landlock"] or abi < 1,
                "the reason names the ABI: %r" % missing["landlock"])
    else:
        g.check("landlock" in rep["enforced"], "ABI %d: landlock: %r" % (abi, rep))
    g.check(rep["available"], "the sandbox is available: %r" % rep)


def test_shipped_unit(t):
    """deploy/systemd/govex-mcp.service.in as shipped (its hardening included), with only its
    binary and port changed: ready, serving the default policy, its cgroup delegated."""
    h.need_systemd_v2()
    if not h.ROOT:
        raise g.Skip("a system service: installed by root")
    real = os.path.realpath(GOVEX)
    if real.startswith(("/tmp/", "/var/tmp/")):
        # (seen with a checkout in /var/tmp: the service did not start)
        raise g.Skip("this build (%s) is under /tmp or /var/tmp, which the shipped "
                     "unit's PrivateTmp=yes replaces: its service could not run it" % real)
    port = _free_port()
    name = h.unique("govex-mcp-shipped")
    unit = "/run/systemd/system/%s.service" % name
    src = h.read(os.path.join(g.REPO, "deploy", "systemd", "govex-mcp.service.in"))
    src = src.replace("@envfile@", "/run/%s.env" % name)     # none there
    g.check("\nDelegate=yes\n" in src, "the shipped unit delegates its cgroup")
    lines = []
    for line in src.splitlines():
        if line.startswith("ExecStart="):
            line = "ExecStart=%s mcp --http 127.0.0.1:%d" % (GOVEX, port)
        lines.append(line)
        if line == "[Service]":
            lines += ["Environment=%s=%s" % kv for kv in h.unit_env().items()
                      if kv[0] != "PATH"]
    with open(unit, "w") as f:
        f.write("\n".join(lines) + "\n")

    def cleanup():
        subprocess.run(["systemctl", "stop", name], timeout=90)
        os.unlink(unit)
        subprocess.run(["systemctl", "daemon-reload"], timeout=60)
    t.defer(cleanup)
    subprocess.run(["systemctl", "daemon-reload"], check=True, timeout=60)
    subprocess.run(["systemctl", "start", name], check=True, timeout=90)

    def ready():
        try:
            return _http(port, "GET", "/readyz", timeout=5)[0] == 200
        except OSError:
            return False
    h.wait_until(ready, 90, "/readyz of the shipped unit")
    st, doc = _call(port, "print(6*7)")
    g.eq(st, 200, "tools/call (%r)" % doc)
    g.eq(doc["result"]["structuredContent"]["stdout"], "42\n", "stdout (%r)" % doc)
    main_pid = subprocess.run(["systemctl", "show", "-P", "MainPID", name],
                              stdout=subprocess.PIPE, timeout=30).stdout.decode().strip()
    g.check(h.own_cgroup(main_pid).endswith("/%s.service/supervisor" % name),
            "the server is in its unit's leaf: %r" % h.own_cgroup(main_pid))


TESTS = [
    ("login shell: the default policy runs, cgroups from a systemd scope",
     test_login_shell_default_policy),
    ("the result claims the aggregate controls", test_result_claims_aggregate),
    ("memory is per run: tmpfs pages past the limit are killed", test_memory_is_per_run),
    ("tasks are per run: threads past the limit fail", test_threads_are_per_run),
    ("a unit with Delegate=yes: leaf move, delegated", test_unit_with_delegate),
    ("a unit without Delegate: a scope of govex's own", test_unit_without_delegate),
    ("four govex at once in one delegated scope", test_scope_with_delegate_many),
    ("no cgroup: the refusal says what to change", test_refusal_says_what_to_do),
    ("a cgroup not delegated is never written", test_own_mode_never_writes_undelegated),
    ("a handed cgroup: used below, never moved into", test_handed_cgroup),
    ("a handed cgroup with a process: refused, untouched", test_handed_cgroup_with_a_process),
    ("govex mcp --http in a Delegate=yes unit serves strict", test_mcp_http_unit_with_delegate),
    ("/readyz is 503 while the policy cannot run", test_mcp_not_ready_when_refused),
    ("stock kernel: missing Landlock reported, not claimed", test_stock_kernel_controls),
    ("deploy/systemd/govex-mcp.service.in as shipped serves strict", test_shipped_unit),
]

if __name__ == "__main__":
    sys.exit(g.main(TESTS))
