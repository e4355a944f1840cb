"""Helpers for the escape tests: run the probe inside the restricted backend.

Builds on the integration suite's govextest (TAP driver, per-test temp dirs, hard
timeouts, process-group kills).  A skip names the feature this host lacks as
"feature:<name>", so CI can turn skips of features the machine has into failures.
"""
import json
import os
import platform
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.dont_write_bytecode = True
import govextest as g  # noqa: E402,F401

with open(os.path.join(HERE, "probe.py")) as _f:
    PROBE_SRC = _f.read()

NOBODY = 65534
# As root each concurrent run has its own uid and gid: base + slot (libgovex defaults)
RUN_ID_BASE = 0x7f000000
RUN_ID_COUNT = 65536


def is_run_id(uid):
    return RUN_ID_BASE <= uid < RUN_ID_BASE + RUN_ID_COUNT
_backend_cache = {}


def skip(feature, why):
    raise g.Skip("feature:%s %s" % (feature, why))


def restricted_report():
    if "r" not in _backend_cache:
        rep = None
        for b in g.backends():
            if isinstance(b, dict) and b.get("name") == "restricted":
                rep = b
        _backend_cache["r"] = rep
    return _backend_cache["r"]


# The kernel feature a control of the restricted backend rests on, named as CI's
# GOVEX_REQUIRE_FEATURES names them (userns, landlock, seccomp, cgroup, pidfd).
FEATURE_OF = {
    "syscall_filter": "seccomp", "subprocess_deny": "seccomp",
    "no_new_privileges": "seccomp", "memory_aggregate": "cgroup",
    "pids_aggregate": "cgroup", "cpu_time_aggregate": "cgroup", "landlock": "landlock",
}


def need_restricted(*controls):
    rep = restricted_report()
    if not rep or rep.get("available") is not True:
        skip("userns", "the restricted backend is not available here: %r" % (rep,))
    missing = [c for c in controls if c not in rep.get("enforced", [])]
    if missing:
        skip(FEATURE_OF.get(missing[0], "userns"),
             "this host cannot enforce %s" % ", ".join(missing))


def need_x86_64():
    if platform.machine() != "x86_64":
        skip("x86_64", "the probe's raw syscall numbers are x86_64's")


def landlock_abi():
    """The kernel's Landlock ABI (0 when none), read through a tiny C-free probe."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        r = libc.syscall(ctypes.c_long(444), None, ctypes.c_long(0), ctypes.c_long(1))
        return max(int(r), 0)
    except Exception:
        return 0


def policy(t, name="p.json", base="strict", limits=None, **changes):
    """Preset BASE with CHANGES (filesystem/limits dicts merged) written to a file."""
    pol = g.preset(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(pol.get(k), dict):
            pol[k] = dict(pol[k], **v)
        else:
            pol[k] = v
    if limits:
        pol["limits"] = dict(pol["limits"], **limits)
    pol["backend"] = "restricted"
    return t.write_json(name, pol)


def probe_code(ops, prelude=""):
    return PROBE_SRC + "\n" + prelude + "\nprobe(%r)\n" % (ops,)


def parse_probe(r):
    doc = r.result()
    for line in (doc.get("stdout") or "").splitlines():
        if line.startswith("GOVEX-PROBE "):
            return doc, json.loads(line[len("GOVEX-PROBE "):])
    raise g.Failure("the probe printed no result: rc=%r status=%r stdout=%r stderr=%r "
                    "diagnostics=%r" % (r.returncode, doc.get("status"),
                                        (doc.get("stdout") or "")[-400:],
                                        (doc.get("stderr") or "")[-600:],
                                        doc.get("diagnostics")))


def run_probe(t, ops, pol=None, args=(), prelude="", **kw):
    """Runs the probe with OPS under policy file POL (default: strict pinned to the
    restricted backend); returns (result document, probe results)."""
    if pol is None:
        pol = policy(t)
    r = t.run(["run", "--policy", pol, "--json"] + list(args) +
              ["-c", probe_code(ops, prelude)], **kw)
    doc, res = parse_probe(r)
    eq(doc["backend"]["name"], "restricted", "backend")
    return r, doc, res


def eq(actual, expected, what):
    g.eq(actual, expected, what)


def denied(res, label, errno_name):
    got = res.get(label)
    if got is None:
        raise g.Failure("probe has no result %r: %r" % (label, res))
    if got.get("ok") or got.get("errno") != errno_name:
        raise g.Failure("%s: expected denial with %s, got %r" % (label, errno_name, got))


# The sandbox's own /etc/passwd (contract section 5): root, the run's identity, nobody.
OWN_PASSWD_NAMES = {"root", "govex", "nobody"}


def own_passwd(res, label):
    """LABEL read the sandbox's own /etc/passwd (its first 64 bytes: root, then govex),
    not the host's."""
    v = allowed(res, label)
    names = [ln.split(":", 1)[0] for ln in v.split("\n")[:-1]]
    if not v.startswith("root:x:0:0:root:/root:/bin/sh\ngovex:x:") or \
            not set(names) <= OWN_PASSWD_NAMES:
        raise g.Failure("%s: not the sandbox's own /etc/passwd: %r" % (label, v))


def allowed(res, label):
    got = res.get(label)
    if not got or not got.get("ok"):
        raise g.Failure("%s: expected success, got %r" % (label, got))
    return got.get("value")


# ---------------------------------------------------------------- spawning directly

def spawn(args, *, cwd, env=None, pass_fds=(), preexec=None, timeout=g.HARD_TIMEOUT,
          during=None, binary=None):
    """Like govextest.run but passing extra fds and an optional preexec (to change
    user).  Returns (returncode, stdout, stderr, pid)."""
    p = subprocess.Popen([binary or g.GOVEX] + list(args), cwd=cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True,
                         pass_fds=pass_fds, close_fds=True, preexec_fn=preexec)
    killer = threading.Timer(timeout, lambda: _killpg(p.pid))
    killer.daemon = True
    killer.start()
    try:
        if during:
            during(p)
        out, err = p.communicate()
    finally:
        killer.cancel()
        _killpg(p.pid)
    return p.returncode, out, err, p.pid


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def result_of(out):
    try:
        return json.loads(out.decode("utf-8"))
    except ValueError as e:
        raise g.Failure("stdout is not one JSON document (%s): %r" % (e, out[:400]))


# ---------------------------------------------------------------- host state

def cgroup_parents():
    """Our cgroup directories (v1 per controller, v2) where per-run cgroups appear."""
    dirs = []
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            a, _, b = line.partition(" - ")
            fs = b.split()
            if fs and fs[0] in ("cgroup", "cgroup2"):
                mounts[a.split()[4]] = (fs[0], fs[2].split(","), a.split()[3])
    with open("/proc/self/cgroup") as f:
        own = [l.rstrip("\n").split(":", 2) for l in f]
    for point, (fstype, opts, root) in mounts.items():
        for hid, ctrls, path in own:
            names = ctrls.split(",") if ctrls else []
            match = (fstype == "cgroup2" and hid == "0") or \
                    (fstype == "cgroup" and any(n in opts for n in names if n))
            if match:
                rel = path[len(root):] if root != "/" and path.startswith(root) else path
                d = point + (rel if rel != "/" else "")
                if os.path.isdir(d):
                    dirs.append(d)
    return sorted(set(dirs))


def run_cgroups():
    found = []
    for d in cgroup_parents():
        try:
            found += [os.path.join(d, n) for n in os.listdir(d)
                      if n.startswith("govex.") and not n.startswith("govex.probe")]
        except OSError:
            pass
    return found


def leftover_run_cgroups():
    """govex.slot-N cgroups that no run holds: a run's cgroups exist only while it holds
    its slot's lock (they are removed before the lock is released), so one that is still
    there while this test holds the free lock was left behind.  Other runs on the host
    (the suite's concurrent tests) hold their slots and are never counted."""
    import fcntl
    import re
    dirs = ["/run/govex/slots"]
    rt = os.environ.get("XDG_RUNTIME_DIR")
    if rt:
        dirs.append(os.path.join(rt, "govex", "slots"))
    out = []
    for c in run_cgroups():
        m = re.match(r"govex\.slot-(\d+)", os.path.basename(c))
        if not m:
            if not os.path.basename(c).startswith("govex.slot-"):
                out.append(c)  # another name: not a slot's, never expected
            continue
        for d in dirs:
            try:
                fd = os.open(os.path.join(d, "%s.lock" % m.group(1)),
                             os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                break  # held: a live run's
            try:
                if os.path.exists(c):
                    out.append(c)
            finally:
                os.close(fd)
            break
        else:
            out.append(c)  # no lock file anywhere: no run ever held this slot here
    return sorted(out)


def procs_with_comm(name):
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open("/proc/%s/comm" % n) as f:
                    if f.read().strip() == name:
                        out.append(int(n))
            except OSError:
                pass
    return out


# ---------------------------------------------------------------- another user

def nobody_preexec():
    def fn():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return fn


def need_unprivileged_sandbox(t):
    """A directory nobody can use and proof that govex works for nobody here."""
    if os.geteuid() != 0:
        skip("root", "switching to another user needs root")
    try:
        pwd.getpwuid(NOBODY)
    except KeyError:
        skip("nobody", "no user %d" % NOBODY)
    home = t.path("nobody")
    os.mkdir(home)
    os.chmod(home, 0o777)
    os.chmod(t.tmp, 0o711)
    # a copy nobody can execute, wherever the build tree is
    bindir = t.path("bin")
    os.mkdir(bindir, 0o755)
    binary = os.path.join(bindir, "govex")
    shutil.copy2(g.GOVEX, binary)
    os.chmod(binary, 0o755)
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": home, "LANG": "C.UTF-8"}
    rc, out, err, _ = spawn(["backends", "--json"], cwd=home, env=env,
                            preexec=nobody_preexec(), binary=binary)
    if rc != 0:
        raise g.Failure("govex backends failed for uid %d: %r" % (NOBODY, err[-400:]))
    rep = [b for b in json.loads(out) if b.get("name") == "restricted"]
    if not rep or rep[0].get("available") is not True:
        skip("userns", "no unprivileged sandbox here (user namespaces?): %r" % (rep,))
    if not shutil.which("python3", path=env["PATH"]):
        skip("python3", "no python3 on /usr/bin:/bin for uid %d" % NOBODY)
    return home, env, binary


def wait_until(fn, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    return fn()


# ---------------------------------------------------------------- proven sandboxes
# (added for test_trust.py and test_isolation.py; the helpers above are unchanged)

HOST_PIDNS = os.readlink("/proc/self/ns/pid")
SANDBOX_UID_BASE = 0x7f000000      # contract 5: default sandbox_uid
SANDBOX_UID_COUNT = 65536


def proven_code(ops, prelude=""):
    """The probe, running OPS only once its canary proved a sandbox from inside."""
    return PROBE_SRC + "\n" + prelude + "\nprobe_proven(%r, %r)\n" % (HOST_PIDNS, ops)


def proven(res):
    """Checks, from the probe's answers, that the code ran in a sandbox: its own PID
    namespace, no_new_privs set, seccomp filtering, no host /etc.  Every test that runs
    a dangerous payload calls this before looking at the payload's results (and the
    probe itself ran nothing dangerous unless its canary held)."""
    c = res.get("canary")
    if not c or not c.get("ok"):
        raise g.Failure("the canary did not run: %r" % (c,))
    v = c["value"]
    g.check(v.get("pidns") != HOST_PIDNS, "canary: the host's PID namespace: %r" % v)
    g.eq(v.get("NoNewPrivs"), "1", "canary: NoNewPrivs")
    g.eq(v.get("Seccomp"), "2", "canary: Seccomp")
    g.check(not v.get("etc_passwd") and not v.get("etc"), "canary: host /etc visible: %r" % v)
    g.check(v.get("proven") is True, "canary not proven: %r" % v)
    return True


def probe_lines(stdout):
    for line in (stdout or "").splitlines():
        if line.startswith("GOVEX-PROBE "):
            return json.loads(line[len("GOVEX-PROBE "):])
    return None


def run_proven(t, ops, pol=None, args=(), prelude="", expect_backend="restricted", **kw):
    """Runs OPS behind the canary; returns (proc, result doc, probe results) after
    proven(res)."""
    if pol is None:
        pol = policy(t)
    r = t.run(["run", "--policy", pol, "--json"] + list(args) +
              ["-c", proven_code(ops, prelude)], **kw)
    doc = r.result()
    if "GOVEX-EXECED" in (doc.get("stdout") or ""):
        raise g.Failure("an exec succeeded inside the sandbox: stdout=%r"
                        % doc["stdout"][-400:])
    res = probe_lines(doc.get("stdout"))
    if res is None:
        raise g.Failure("the probe printed no result: rc=%r status=%r stdout=%r stderr=%r "
                        "diagnostics=%r" % (r.returncode, doc.get("status"),
                                            (doc.get("stdout") or "")[-400:],
                                            (doc.get("stderr") or "")[-600:],
                                            doc.get("diagnostics")))
    if expect_backend:
        eq(doc["backend"]["name"], expect_backend, "backend")
    proven(res)
    return r, doc, res


NO_AGGREGATE = {"memory_bytes": None, "cpu_ms": None, "processes": None}


def without_aggregate(pol):
    """Rewrites policy file POL without the whole-run limits: an unprivileged caller
    with no delegated cgroup (this host's nobody) cannot have them, and such a policy
    is refused (missing_controls) rather than run on rlimits.  Returns POL."""
    with open(pol) as f:
        doc = json.load(f)
    doc["limits"] = dict(doc.get("limits") or {}, **NO_AGGREGATE)
    with open(pol, "w") as f:
        json.dump(doc, f)
    return pol


def run_proven_as_nobody(t, sb, ops, pol, args=(), **kw):
    home, env, binary = sb
    without_aggregate(pol)
    env = dict(env, **kw.pop("extra_env", {}))
    rc, out, err, _ = spawn(["run", "--policy", pol, "--json"] + list(args) +
                            ["-c", proven_code(ops)], cwd=home, env=env,
                            preexec=nobody_preexec(), binary=binary, **kw)
    doc = result_of(out)
    if "GOVEX-EXECED" in (doc.get("stdout") or ""):
        raise g.Failure("an exec succeeded inside the sandbox: %r" % doc["stdout"][-400:])
    res = probe_lines(doc.get("stdout"))
    if res is None:
        raise g.Failure("no probe output as nobody: rc=%r doc=%r err=%r"
                        % (rc, {k: doc.get(k) for k in ("status", "stdout", "stderr",
                                                        "diagnostics")}, err[-400:]))
    eq(doc["backend"]["name"], "restricted", "backend")
    proven(res)
    return rc, doc, res


def denied_any(res, label, errnos):
    """A denial whose errno is one of ERRNOS (only where the contract names a set)."""
    got = res.get(label)
    if got is None:
        raise g.Failure("probe has no result %r: %r" % (label, res))
    if got.get("ok") or got.get("errno") not in errnos:
        raise g.Failure("%s: expected denial with one of %s, got %r"
                        % (label, "/".join(errnos), got))


def refused(proc, code, *mentions):
    """govex refused at planning: exit 125, status policy_refused (invalid_input for an
    invalid policy), a diagnostic CODE whose message mentions each of MENTIONS."""
    doc = proc.result()
    g.eq(doc["status"], "invalid_input" if code == "invalid_policy" else "policy_refused",
         "status\n" + proc.describe())
    proc.expect_rc(g.EXIT_REFUSED)
    d = g.diag(doc, code)
    text = json.dumps(d)
    for m in mentions:
        g.check(m in text, "diagnostic %s does not mention %r: %r" % (code, m, d))
    return doc


# ---------------------------------------------------------------- the cache directory

def cache_env(t, xdg=None):
    """An environment whose cache dir is the test's own: XDG_CACHE_HOME=XDG."""
    xdg = xdg or t.path("xdg")
    if not os.path.isdir(xdg):
        os.mkdir(xdg, 0o700)
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = xdg
    return env, os.path.join(xdg, "govex")


def cache_files(cache, prefix):
    try:
        return sorted(os.path.join(cache, n) for n in os.listdir(cache)
                      if n.startswith(prefix) and n.endswith(".json"))
    except OSError:
        return []


def split_cache_file(path):
    """(key line or None, JSON document) of a cache file, whatever its framing."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8")
    try:
        return None, json.loads(data)
    except ValueError:
        key, _, body = data.rstrip("\n").rpartition("\n")
        return key, json.loads(body)


def write_cache_file(path, key, doc, mode=0o600):
    body = json.dumps(doc)
    tmp = path + ".rt"
    with open(tmp, "w") as f:
        f.write(body if key is None else key + "\n" + body)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


# ---------------------------------------------------------------- canary, bombs (issue 9)

def host_facts():
    """What the sandbox must not share with the host: its PID namespace and /etc."""
    s = os.stat("/etc")
    return os.readlink("/proc/self/ns/pid"), [s.st_dev, s.st_ino]


def proven_canary(res, label="canary"):
    """Fails unless the canary probe's result shows a sandbox: its own PID namespace (and
    a small pid), no_new_privs, seccomp filtering, and not the host's /etc."""
    c = allowed(res, label)
    host_pidns, host_etc = host_facts()
    why = []
    if c.get("pidns") == host_pidns or not (isinstance(c.get("pid"), int) and c["pid"] < 100):
        why.append("the host's PID namespace")
    if c.get("nnp") != "1":
        why.append("no no_new_privs")
    if c.get("seccomp") != "2":
        why.append("no seccomp filter")
    if c.get("etc") == host_etc or c.get("shadow"):
        why.append("the host's /etc")
    if why:
        raise g.Failure("canary: NOT a sandbox (%s): %r -- no dangerous payload sent"
                        % (", ".join(why), c))
    return c


def prove(t, pol):
    """Runs the canary under policy file POL and checks it (before any bomb)."""
    _, doc, res = run_probe(t, [["canary", {"as": "canary"}]], pol=pol)
    return proven_canary(res)


def bomb_code(ops):
    """The probe with a guard first: the snippet exits 97 before OPS unless it finds
    itself in a sandbox (a second wall behind the test's canary run)."""
    pidns, etc = host_facts()
    return probe_code(ops, prelude="guard(%r, %r)\n" % (pidns, etc))


def progress_of(doc):
    """{what: largest count} from the snippet's GOVEX-PROGRESS lines."""
    out = {}
    for line in (doc.get("stdout") or "").splitlines():
        if line.startswith("GOVEX-PROGRESS "):
            _, what, n = line.split()
            out[what] = max(out.get(what, 0), int(n))
    return out


def probe_of(doc):
    for line in (doc.get("stdout") or "").splitlines():
        if line.startswith("GOVEX-PROBE "):
            return json.loads(line[len("GOVEX-PROBE "):])
    return None


def run_bomb(t, pol, ops, timeout=g.HARD_TIMEOUT, **kw):
    """Proves the sandbox under POL with the canary, then runs the guarded OPS under
    the same policy.  Returns (Proc, result document, probe results or None when the
    run was killed, progress dict)."""
    prove(t, pol)
    r = t.run(["run", "--policy", pol, "--json", "-c", bomb_code(ops)], timeout=timeout,
              **kw)
    if r.hard_timeout:
        raise g.Failure("govex did not finish within %d s\n%s" % (timeout, r.describe()))
    doc = r.result()
    g.check("GOVEX-GUARD" not in (doc.get("stdout") or ""),
            "the guard refused (not a sandbox): %r" % doc.get("stdout"))
    eq(doc["backend"]["name"], "restricted", "backend")
    return r, doc, probe_of(doc), progress_of(doc)


# ---------------------------------------------------------------- second red team (rc_)
# One long-lived runtime (as a library user or `govex mcp` has) driven through ctypes:
# the plan is made once, then runs are started while the test changes the host.

def rc_libgovex():
    """libgovex from the plain (unsanitized) build: ctypes cannot load an ASan library
    into this Python.  Skips when there is none."""
    import ctypes
    plain = os.environ.get("GOVEX_PLAIN") or ""
    cands = [os.path.join(os.path.dirname(plain), "libgovex.so")] if plain else []
    cands.append(os.path.join(os.path.dirname(HERE), "..", "build", "libgovex.so"))
    for c in cands:
        if os.path.exists(c):
            lib = ctypes.CDLL(os.path.abspath(c))
            lib.govex_result_json.restype = ctypes.c_char_p
            return lib
    skip("libgovex", "no unsanitized libgovex.so (set GOVEX_PLAIN)")


class RcRuntime:
    """govex_runtime_new(policy) once; run(code) many times; JSON results."""

    def __init__(self, policy_doc):
        import ctypes
        self.ct = ctypes
        self.lib = rc_libgovex()
        err = ctypes.create_string_buffer(512)
        pol = ctypes.c_void_p()
        data = json.dumps(policy_doc).encode()
        if self.lib.govex_policy_parse(data, ctypes.c_size_t(len(data)), ctypes.byref(pol),
                                       err) < 0:
            raise g.Failure("govex_policy_parse: %r" % err.raw[8:240].split(b"\0")[0])
        self.pol = pol
        rt = ctypes.c_void_p()
        if self.lib.govex_runtime_new(pol, None, ctypes.byref(rt), err) < 0:
            raise g.Failure("govex_runtime_new: %r" % err.raw[8:240].split(b"\0")[0])
        self.rt = rt

    def run(self, code):
        ct = self.ct

        class Req(ct.Structure):
            _fields_ = [("language", ct.c_char_p), ("code", ct.c_char_p),
                        ("code_len", ct.c_size_t), ("source_path", ct.c_char_p),
                        ("stdin_data", ct.c_char_p), ("stdin_len", ct.c_size_t),
                        ("workdir", ct.c_char_p), ("limits", ct.c_uint64 * 8),
                        ("env", ct.c_void_p), ("needs", ct.c_uint), ("shell", ct.c_int),
                        ("metadata", ct.c_void_p), ("cancel", ct.c_void_p),
                        # appended by the round-2 contract (repl runs, files, outputs, live
                        # output): zero here; the library reads them
                        ("repl", ct.c_int), ("inputs_json", ct.c_char_p),
                        ("inputs_len", ct.c_size_t), ("files", ct.c_void_p),
                        ("n_files", ct.c_size_t), ("outputs", ct.c_int),
                        ("on_output", ct.c_void_p), ("output_userdata", ct.c_void_p)]
        src = code.encode()
        req = Req()
        req.code = src
        req.code_len = len(src)
        res = ct.c_void_p()
        err = ct.create_string_buffer(512)
        r = self.lib.govex_runtime_run(self.rt, ct.byref(req), ct.byref(res), err)
        if r < 0 or not res:
            return {"status": "error", "error": err.raw[8:240].split(b"\0")[0].decode()}
        self.lib.govex_result_json.argtypes = [ct.c_void_p, ct.c_void_p]
        doc = json.loads(self.lib.govex_result_json(res, None).decode())
        self.lib.govex_result_free(res)
        return doc

    def close(self):
        self.lib.govex_runtime_free(self.rt)
        self.lib.govex_policy_free(self.pol)
