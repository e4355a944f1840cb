#!/usr/bin/env python3
"""Trust boundaries (issue 9 items 1, 2, 8): nothing a run could have written decides
anything; the host never runs what the policy names without a sandbox; cleanup of what
a run left terminates and never follows it out.

Every test uses its own cache dir (XDG_CACHE_HOME in its temp dir), never the caller's.
The contract is /work/notes/contract.md, decisions 1, 2, 3 and 10.
"""
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

SYS_PY = "/usr/bin/python3"          # an ELF interpreter, so its probe is cached


def _sys_python():
    if not os.path.exists(SYS_PY):
        e.skip("python3", "no %s (an ELF interpreter the probe cache applies to)" % SYS_PY)
    real = os.path.realpath(SYS_PY)
    with open(real, "rb") as f:
        if f.read(4) != b"\x7fELF":
            e.skip("python3", "%s is not an ELF executable" % real)
    return real


def _sys_paths():
    """The system interpreter's own paths, asked on the host (the test's own act)."""
    import subprocess
    out = subprocess.run([SYS_PY, "-I", "-S", "-c",
                          "import sys, sysconfig, json; p = sysconfig.get_paths();"
                          "print(json.dumps([sys.prefix, p['stdlib'], p['platstdlib'],"
                          " [d for d in sys.path if d.endswith('lib-dynload')]]))"],
                         capture_output=True, timeout=20, check=True).stdout
    return json.loads(out)


def _plan_or_run(t, pol, env, command="plan"):
    return t.run([command, "--policy", pol, "--json", "-c", "print('hi')"], env=env)


def _refused_protected(r, root):
    doc = r.json()
    if doc.get("status") != "policy_refused":
        raise g.Failure("a write root over a protected path was accepted (%s): %s"
                        % (root, r.describe()))
    r.expect_rc(g.EXIT_REFUSED)
    d = g.diag(doc, "protected_path")
    g.check(root in json.dumps(d), "protected_path does not name %r: %r" % (root, d))


def _warm_cache(t, env, interpreter=None):
    """One successful run that fills the cache dir (backend report, probe)."""
    kw = {"python": {"interpreter": interpreter, "site": False}} if interpreter else {}
    r = t.run(["run", "--policy", e.policy(t, name="warm.json", **kw), "--json", "-c",
               "print('warm')"], env=env)
    doc = r.result()
    g.eq(doc["status"], "success", "warm-up run\n" + r.describe())
    return doc


# ------------------------------------------------------------------ item 1: cache dir

def test_write_root_over_cache_refused(t):
    """Contract 2: write roots that are an ancestor of, equal to or beneath the cache dir
    (and a named workdir equal to it) are refused with protected_path."""
    e.need_restricted("fs_write_allowlist")
    env, cache = e.cache_env(t)
    _warm_cache(t, env)
    g.check(os.path.isdir(cache), "the warm-up run made no cache dir %s" % cache)
    sub = os.path.join(cache, "sub")
    os.mkdir(sub, 0o700)
    xdg = os.path.dirname(cache)
    for i, root in enumerate([xdg, cache, sub]):
        pol = e.policy(t, name="w%d.json" % i, filesystem={"write": [root]})
        _refused_protected(_plan_or_run(t, pol, env, "plan"), root)
        _refused_protected(_plan_or_run(t, pol, env, "run"), root)
    pol = e.policy(t, name="wd.json", filesystem={"write": [xdg]}, workdir=cache)
    _refused_protected(_plan_or_run(t, pol, env, "run"), xdg)


def test_home_write_root_over_default_cache_refused(t):
    """Issue 9.1's dev container: HOME=/workspace and a policy writing HOME, the default
    cache dir (~/.cache/govex) beneath it."""
    e.need_restricted("fs_write_allowlist")
    home = t.path("home")
    os.mkdir(home, 0o700)
    env = dict(os.environ, HOME=home)
    env.pop("XDG_CACHE_HOME", None)
    _warm_cache(t, env)
    g.check(os.path.isdir(os.path.join(home, ".cache", "govex")),
            "no cache dir under HOME after a run")
    pol = e.policy(t, name="h.json", filesystem={"write": [home]})
    _refused_protected(_plan_or_run(t, pol, env, "run"), home)


def test_write_root_over_cache_refused_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    xdg = os.path.join(home, "xdg")
    os.mkdir(xdg, 0o700)
    os.chown(xdg, e.NOBODY, e.NOBODY)
    env = dict(env, XDG_CACHE_HOME=xdg)
    pol = e.policy(t, name="warm.json")
    e.without_aggregate(pol)
    os.chmod(pol, 0o644)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", "print(1)"],
                              cwd=home, env=env, preexec=e.nobody_preexec(), binary=binary)
    g.eq(e.result_of(out)["status"], "success", "warm-up run as nobody")
    for i, root in enumerate([xdg, os.path.join(xdg, "govex")]):
        pol = e.policy(t, name="n%d.json" % i, filesystem={"write": [root]})
        e.without_aggregate(pol)
        os.chmod(pol, 0o644)
        rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", "print(1)"],
                                  cwd=home, env=env, preexec=e.nobody_preexec(),
                                  binary=binary)
        doc = e.result_of(out)
        g.eq(doc["status"], "policy_refused", "status for write root %s as nobody" % root)
        g.eq(rc, g.EXIT_REFUSED, "exit status")
        d = g.diag(doc, "protected_path")
        g.check(root in json.dumps(d), "protected_path does not name %r: %r" % (root, d))


ALL_CONTROLS = ["wall_time", "output_bounds", "env_allowlist", "fresh_workdir",
                "process_tree_kill", "fd_hygiene", "network_deny", "fs_read_allowlist",
                "fs_write_allowlist", "subprocess_deny", "memory_aggregate",
                "memory_per_process", "cpu_time_aggregate", "cpu_time_per_process",
                "pids_aggregate", "open_files_per_process", "file_size_per_process",
                "syscall_filter", "no_new_privileges", "landlock"]


def _poison_backends(path):
    """Rewrites a backend cache file: controlled claims every control, restricted is
    'unavailable' - issue 9.1's rewrite that sent strict runs to a host process."""
    key, doc = e.split_cache_file(path)
    reports = doc if isinstance(doc, list) else doc.get("backends", doc)
    for rep in reports if isinstance(reports, list) else []:
        if rep.get("name") == "controlled":
            rep["enforced"] = list(ALL_CONTROLS)
            rep["unavailable"] = []
            rep["available"] = True
        elif rep.get("name") == "restricted":
            rep["available"] = False
            rep["reason"] = "poisoned"
            rep["enforced"] = []
            rep["unavailable"] = []
    e.write_cache_file(path, key, doc)


def _compiled_controlled(t):
    env, _ = e.cache_env(t, t.path("xdg-clean"))
    r = t.run(["backends", "--json"], env=env)
    r.expect_rc(0)
    return [b for b in r.json() if b.get("name") == "controlled"][0]


def _expect_not_controlled(t, env, what):
    """A strict run (backend not pinned) never lands on controlled: it is sandboxed
    (proven) or refused."""
    pol = t.write_json("strict-auto.json", g.preset("strict"))
    secret = t.write("private-key", "govex-escape-private-key")
    ops = [["read", secret, {"as": "secret"}], ["status", {"as": "st"}]]
    r = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code(ops)], env=env)
    doc = r.result()
    name = (doc.get("backend") or {}).get("name")
    if name == "controlled" or "govex-escape-private-key" in (doc.get("stdout") or ""):
        raise g.Failure("%s: a strict run went to controlled (read the host's private "
                        "key: %r); claimed controls %r"
                        % (what, "govex-escape-private-key" in doc.get("stdout", ""),
                           (doc.get("backend") or {}).get("controls")))
    if doc["status"] == "policy_refused":
        r.expect_rc(g.EXIT_REFUSED)
        return doc
    g.eq(name, "restricted", "%s: backend" % what)
    res = e.probe_lines(doc["stdout"])
    g.check(res is not None, "%s: no probe output: %s" % (what, r.describe()))
    e.proven(res)
    e.denied(res, "secret", "ENOENT")
    return doc


def test_poisoned_backend_cache(t):
    """Contract 1: controlled's report is compiled in, never read back; a cached
    restricted report can only remove controls."""
    e.need_restricted("network_deny", "syscall_filter")
    env, cache = e.cache_env(t)
    _warm_cache(t, env)
    files = e.cache_files(cache, "backends-v")
    g.check(files, "no backend cache file in %s: %r" % (cache, os.listdir(cache)))
    compiled = _compiled_controlled(t)
    for f in files:
        _poison_backends(f)
    _expect_not_controlled(t, env, "poisoned backend cache")
    r = t.run(["backends", "--json"], env=env)
    r.expect_rc(0)
    ctl = [b for b in r.json() if b.get("name") == "controlled"][0]
    g.eq(sorted(ctl.get("enforced", [])), sorted(compiled.get("enforced", [])),
         "controlled's enforced controls after the cache was poisoned")


def test_pessimistic_cache_expires(t):
    """A cached report that says the sandbox is unavailable (a probe that failed for a
    passing reason) refuses strict runs for a minute at most, then is probed again."""
    e.need_restricted("network_deny", "syscall_filter")
    env, cache = e.cache_env(t)
    _warm_cache(t, env)
    files = e.cache_files(cache, "backends-v")
    g.check(files, "no backend cache file in %s: %r" % (cache, os.listdir(cache)))
    for f in files:
        key, doc = e.split_cache_file(f)
        for b in doc:
            if b.get("name") == "restricted":
                b["available"] = False
                b["reason"] = "namespaces unusable: a passing failure"
                b["enforced"] = []
        e.write_cache_file(f, key, doc)
    pol = t.write_json("strict-auto.json", g.preset("strict"))
    r = t.run(["run", "--policy", pol, "--json", "-c", "print(1)"], env=env)
    g.eq(r.result()["status"], "policy_refused", "status while the report is fresh")
    old = time.time() - 120
    for f in files:
        os.utime(f, (old, old))
    r = t.run(["run", "--policy", pol, "--json", "-c", "print(1)"], env=env)
    doc = r.result()
    g.eq(doc["status"], "success", "status once the report is two minutes old\n" +
         r.describe())
    g.eq(doc["backend"]["name"], "restricted", "backend")


def _poison_probe(path, how, sys_paths, other_exe=None):
    key, doc = e.split_cache_file(path)
    prefix, stdlib, plat, dyn = sys_paths
    if how == "dynload_etc":
        doc["dynload"] = list(doc.get("dynload", [])) + ["/etc"]
    elif how == "libs_etc":
        doc["libs"] = list(doc.get("libs", [])) + ["/etc/passwd", "/etc/shadow"]
    elif how == "stdlib_root":
        doc["stdlib"] = "/"
        doc["platstdlib"] = "/"
    elif how == "dotdot":
        doc["dynload"] = list(doc.get("dynload", [])) + [stdlib + "/../../../etc"]
    elif how == "proc":
        doc["dynload"] = list(doc.get("dynload", [])) + ["/proc/1/root/etc"]
    elif how == "prefix_etc":
        # passes every rule the contract lists (absolute, normalized, stdlib under
        # prefix, not /proc /sys /dev, not "/"), yet binds /etc
        doc["prefix"] = doc["base_prefix"] = "/etc"
        doc["stdlib"] = doc["platstdlib"] = "/etc"
        doc["dynload"] = ["/etc"]
    elif how == "executable":
        doc["executable"] = "/etc/passwd"
    elif how == "executable_other":
        # an ELF the cache names as sys.executable: libc.so.6, which prints a banner
        doc["executable"] = other_exe
    e.write_cache_file(path, key, doc)


PROBE_POISONS = ["dynload_etc", "libs_etc", "stdlib_root", "dotdot", "proc", "executable",
                 "executable_other", "prefix_etc"]


def _libc_copy(t):
    libc = None
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split(None, 5)[-1].strip()
            if p.endswith("/libc.so.6"):
                libc = os.path.realpath(p)
    if libc is None:
        return "/usr/lib/x86_64-linux-gnu/libc.so.6"
    d = t.path("evil")
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, "python3")
    shutil.copy2(libc, dst)
    os.chmod(dst, 0o755)
    return dst


def test_poisoned_probe_cache(t):
    """Contract 1: a cached probe answer is validated before use; a pre-planted one
    never binds extra host paths (all of /etc as root, issue 9.1)."""
    e.need_restricted("fs_read_allowlist")
    _sys_python()
    sys_paths = _sys_paths()
    bad = []
    for how in PROBE_POISONS:
        env, cache = e.cache_env(t, t.path("xdg-" + how))
        _warm_cache(t, env, interpreter=SYS_PY)
        files = e.cache_files(cache, "probe-v1-")
        g.check(files, "no probe cache file for %s: %r" % (SYS_PY, os.listdir(cache)))
        for f in files:
            _poison_probe(f, how, sys_paths, other_exe=_libc_copy(t))
        pol = e.policy(t, name="p-%s.json" % how,
                       python={"interpreter": SYS_PY, "site": False})
        ops = [["read", "/etc/passwd", {"as": "passwd"}], ["listdir", "/", {"as": "root"}]]
        r = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code(ops)], env=env)
        doc = r.result()
        if "GNU C Library" in (doc.get("stdout") or ""):
            bad.append("%s: govex executed the cached 'executable' %s"
                       % (how, _libc_copy(t)))
            continue
        res = e.probe_lines(doc.get("stdout"))
        if res is None:
            # a refusal to use the poisoned answer is acceptable only with a re-probe
            bad.append("%s: the run did not complete (%s %r)" % (how, doc["status"],
                                                                 doc.get("diagnostics")))
            continue
        canary = (res.get("canary") or {}).get("value") or {}
        # the sandbox's own /etc/passwd (root, govex, nobody) is fine; the host's is not
        try:
            e.own_passwd(res, "passwd")
            host_etc = False
        except g.Failure:
            host_etc = True
        if host_etc or canary.get("etc_passwd"):
            bad.append("%s: /etc is bound into the sandbox (%r)" % (how, res["passwd"]))
            continue
        e.proven(res)
    g.check(not bad, "poisoned probe answers used:\n  " + "\n  ".join(bad))


def _poisoned_cache_copy(t, dest_dir):
    """A backend cache file with controlled claiming everything, placed in DEST_DIR
    under the name this build and euid use."""
    env, cache = e.cache_env(t, t.path("xdg-src"))
    _warm_cache(t, env)
    files = e.cache_files(cache, "backends-v")
    g.check(files, "no backend cache file made")
    for f in files:
        _poison_backends(f)
        shutil.copy2(f, os.path.join(dest_dir, os.path.basename(f)))
        os.chmod(os.path.join(dest_dir, os.path.basename(f)), 0o600)
    return [os.path.basename(f) for f in files]


def test_cache_dir_symlink_not_used(t):
    """Contract 1: a cache dir whose last component is a symlink is not used: nothing
    read through it, nothing written through it; runs still work."""
    e.need_restricted("network_deny")
    elsewhere = t.path("elsewhere")
    os.mkdir(elsewhere, 0o700)
    names = _poisoned_cache_copy(t, elsewhere)
    xdg = t.path("xdg")
    os.mkdir(xdg, 0o700)
    os.symlink(elsewhere, os.path.join(xdg, "govex"))
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    _expect_not_controlled(t, env, "cache dir is a symlink")
    g.eq(sorted(os.listdir(elsewhere)), sorted(names),
         "files written through the symlinked cache dir")


def test_cache_dir_symlink_race(t):
    """Contract 1 (opened O_NOFOLLOW|O_DIRECTORY, files relative to that fd): the cache
    dir swapped for a symlink to a poisoned directory, over and over, while runs go:
    no run is sent to controlled, nothing is written into the symlink's target."""
    e.need_restricted("network_deny")
    import threading
    elsewhere = t.path("elsewhere")
    os.mkdir(elsewhere, 0o700)
    names = _poisoned_cache_copy(t, elsewhere)
    xdg = t.path("xdg")
    os.mkdir(xdg, 0o700)
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    cache = os.path.join(xdg, "govex")
    _warm_cache(t, env)
    real = cache + ".real"
    stop = []

    def swap():
        while not stop:
            try:
                os.rename(cache, real)
                os.symlink(elsewhere, cache)
                time.sleep(0.0005)
                os.unlink(cache)
                os.rename(real, cache)
            except OSError:
                pass
            time.sleep(0.0005)
    th = threading.Thread(target=swap, daemon=True)
    th.start()
    try:
        for i in range(8):
            _expect_not_controlled(t, env, "racing symlink, run %d" % i)
    finally:
        stop.append(1)
        th.join(5)
    g.eq(sorted(os.listdir(elsewhere)), sorted(names),
         "files written through the racing symlink")


def _bad_cache_dir(t, mode, owner=None):
    e.need_restricted("network_deny")
    xdg = t.path("xdg")
    os.mkdir(xdg, 0o755)
    cache = os.path.join(xdg, "govex")
    os.mkdir(cache, 0o700)
    names = _poisoned_cache_copy(t, cache)
    if owner is not None:
        for n in names:
            os.chown(os.path.join(cache, n), owner, owner)
        os.chown(cache, owner, owner)
    os.chmod(cache, mode)
    env = dict(os.environ, XDG_CACHE_HOME=xdg)
    _expect_not_controlled(t, env, "cache dir mode %o owner %r" % (mode, owner))
    g.eq(sorted(os.listdir(cache)), sorted(names), "files written into the unsafe cache dir")
    g.eq(stat.S_IMODE(os.stat(cache).st_mode), mode, "mode of the unsafe cache dir")


def test_cache_dir_group_writable_not_used(t):
    _bad_cache_dir(t, 0o770)


def test_cache_dir_other_writable_not_used(t):
    _bad_cache_dir(t, 0o1777)


def test_cache_dir_other_owner_not_used(t):
    if os.geteuid() != 0:
        e.skip("root", "giving a directory to another user needs root")
    _bad_cache_dir(t, 0o700, owner=e.NOBODY)


def test_cache_file_unsafe_not_read(t):
    """Contract 1: a cache file that is a symlink, group/other writable or owned by
    another user is not read (each checked separately, the dir itself being fine)."""
    e.need_restricted("network_deny")
    variants = ["symlink", "group_writable", "other_writable"]
    if os.geteuid() == 0:
        variants.append("other_owner")
    for v in variants:
        xdg = t.path("xdg-" + v)
        os.mkdir(xdg, 0o700)
        env = dict(os.environ, XDG_CACHE_HOME=xdg)
        cache = os.path.join(xdg, "govex")
        _warm_cache(t, env)
        for f in e.cache_files(cache, "backends-v"):
            _poison_backends(f)
            if v == "symlink":
                target = t.path("poison-%s-%s" % (v, os.path.basename(f)))
                os.rename(f, target)
                os.symlink(target, f)
            elif v == "group_writable":
                os.chmod(f, 0o660)
            elif v == "other_writable":
                os.chmod(f, 0o606)
            else:
                os.chown(f, e.NOBODY, e.NOBODY)
        _expect_not_controlled(t, env, "cache file " + v)


# ------------------------------------------------------------------ item 2: interpreter

WRAPPER = """#!/bin/sh
# A "python3" a policy names: when run unsandboxed it leaves a marker on the host.
exec %(py)s -I -S %(check)s "$@"
"""

WRAPPER_CHECK = r'''
import os, sys
marker = %(marker)r
info = "pidns=%%s uid=%%d" %% (os.readlink("/proc/self/ns/pid"), os.getuid())
try:
    nnp = [l for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0].split()[1]
except Exception:
    nnp = "?"
try:
    with open(marker, "a") as f:
        f.write(info + " nnp=" + nnp + "\n")
except OSError:
    pass
if os.readlink("/proc/self/ns/pid") == %(host_ns)r or nnp != "1":
    sys.exit(7)
os.execv(%(py)r, [%(py)r] + sys.argv[1:])
'''


def _outside_tmp(t):
    """The wrapper lives outside /tmp (a probe sandbox may have a private /tmp)."""
    d = tempfile.mkdtemp(prefix="govex-rt-", dir="/var/tmp")
    os.chmod(d, 0o755)
    t.defer(shutil.rmtree, d, True)
    return d


def _wrapper(t, where, marker):
    _sys_python()
    d = os.path.join(where, "fakepy", "bin")
    os.makedirs(d)
    for p in (os.path.join(where, "fakepy"), d):
        os.chmod(p, 0o755)
    w = os.path.join(d, "python3")
    check = os.path.join(d, "check.py")
    py = os.path.realpath(SYS_PY)
    with open(check, "w") as f:
        f.write(WRAPPER_CHECK % {"py": py, "marker": marker, "host_ns": e.HOST_PIDNS})
    with open(w, "w") as f:
        f.write(WRAPPER % {"py": py, "check": check})
    os.chmod(w, 0o755)
    os.chmod(check, 0o644)
    return w


def test_wrapper_interpreter_never_runs_on_host(t):
    """Contract 3: probing the interpreter a policy names runs it in the sandbox (own
    PID namespace, no_new_privs, no writes): the wrapper's host marker never appears,
    and plan and run still work (the wrapper exits 7 when it finds itself on the host)."""
    e.need_restricted("fs_read_allowlist", "no_new_privileges")
    where = _outside_tmp(t)
    marker = os.path.join(where, "MARKER-%s" % uuid.uuid4().hex)
    w = _wrapper(t, where, marker)
    env, cache = e.cache_env(t)
    pol = e.policy(t, python={"interpreter": w, "site": False})
    rp = t.run(["plan", "--policy", pol, "--json", "-c", "print('hi')"], env=env)
    seen_after_plan = os.path.exists(marker)
    rr = t.run(["run", "--policy", pol, "--json", "-c", "print('hi')"], env=env)
    if os.path.exists(marker) or seen_after_plan:
        with open(marker) as f:
            raise g.Failure("the policy's interpreter ran on the host (after plan: %r): %r"
                            % (seen_after_plan, f.read()))
    rp.expect_rc(0)
    doc = rr.result()
    g.eq(doc["status"], "success", "status of a run with a wrapper interpreter\n" +
         rr.describe())
    g.eq(doc["stdout"], "hi\n", "stdout")


def test_wrapper_interpreter_never_runs_on_host_as_nobody(t):
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    where = _outside_tmp(t)
    os.chmod(where, 0o777)     # so that nobody's wrapper could leave its marker
    marker = os.path.join(where, "MARKER-%s" % uuid.uuid4().hex)
    w = _wrapper(t, where, marker)
    pol = e.policy(t, python={"interpreter": w, "site": False})
    e.without_aggregate(pol)
    os.chmod(pol, 0o644)
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", "print('hi')"],
                              cwd=home, env=env, preexec=e.nobody_preexec(), binary=binary)
    if os.path.exists(marker):
        with open(marker) as f:
            raise g.Failure("the policy's interpreter ran on the host as nobody: %r"
                            % f.read())
    doc = e.result_of(out)
    g.eq(doc["status"], "success", "status as nobody (%r)" % (doc.get("diagnostics"),))
    g.eq(doc["stdout"], "hi\n", "stdout")


def test_write_root_over_interpreter_refused(t):
    """Contract 2: a sandboxed policy writing the interpreter's executable, its paths,
    its libs, an ancestor of them, or govex's own executable is refused at planning."""
    e.need_restricted("fs_write_allowlist")
    real = _sys_python()
    prefix, stdlib, plat, dyn = _sys_paths()
    libc = None
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split(None, 5)[-1].strip()
            if "/libc.so" in p or "/libc-" in p:
                libc = os.path.realpath(p)
    roots = [stdlib, os.path.join(stdlib, "json"), os.path.dirname(real), real]
    roots += [d for d in dyn if os.path.isdir(d)][:1]
    if libc:
        roots += [os.path.dirname(libc), libc]
    roots.append(os.path.dirname(os.path.realpath(g.GOVEX)))
    roots.append(os.path.realpath(g.GOVEX))
    if os.path.isdir(prefix):
        roots.append(prefix)
    env, _ = e.cache_env(t)
    for i, root in enumerate(roots):
        pol = e.policy(t, name="i%d.json" % i, filesystem={"write": [root]},
                       python={"interpreter": SYS_PY, "site": False})
        # plan only: nothing runs even if govex wrongly accepts the policy
        _refused_protected(_plan_or_run(t, pol, env, "plan"), root)


# ------------------------------------------------------------------ item 8: cleanup

def remove_tree(path):
    """Removes a (very deep) tree without recursion, never following symlinks."""
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return
    fl = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(path, fl)
    depth = 0
    while True:
        down = None
        for ent in os.scandir(fd):
            if ent.is_dir(follow_symlinks=False):
                down = ent.name
                break
            os.unlink(ent.name, dir_fd=fd)
        if down is not None:
            try:
                os.chmod(down, 0o700, dir_fd=fd, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
            nfd = os.open(down, fl, dir_fd=fd)
            os.close(fd)
            fd = nfd
            depth += 1
            continue
        if depth == 0:
            os.close(fd)
            os.rmdir(path)
            return
        ino = os.fstat(fd).st_ino
        pfd = os.open("..", fl, dir_fd=fd)
        os.close(fd)
        fd = pfd
        depth -= 1
        for ent in os.scandir(fd):
            if ent.inode() == ino:
                os.rmdir(ent.name, dir_fd=fd)
                break


def _tmpdir(t):
    d = t.path("tmpdir")
    os.mkdir(d)
    os.chmod(d, 0o777)
    t.defer(lambda: [remove_tree(os.path.join(d, n)) for n in os.listdir(d)])
    return d


DEEP = r'''
import os
victim = %(victim)r
start = os.open(".", os.O_RDONLY)
os.symlink(victim, "link-to-victim")
for i in range(%(depth)d):
    os.mkdir("d")
    os.chdir("d")
os.symlink(victim, "deep-link-to-victim")
open("bottom", "w").write("x")
os.fchdir(start)
print("deep", %(depth)d)
'''


def _check_deep_run(t, r, tmpdir, victim):
    g.check(not r.hard_timeout, "govex did not return after a 5,000-deep tree\n" +
            r.describe())
    doc = r.result()
    g.eq(doc["stdout"], "deep 5000\n", "stdout\n" + r.describe())
    g.eq(doc["status"], "success", "status")
    left = os.listdir(tmpdir)
    if left:
        # allowed only with the diagnostic, per contract 10
        g.diag(doc, "workdir_cleanup_failed")
    g.eq(sorted(os.listdir(victim)), ["keep"], "the symlinked victim dir after cleanup")
    g.eq(left, [], "workdir left in TMPDIR")
    g.check(r.wall < 20, "cleanup took %.1f s" % r.wall)


def test_deep_tree_controlled(t):
    """Contract 10 (item 8): controlled's host workdir with a 5,000-deep tree and
    symlinks out is removed, iteratively, without following them."""
    if not g.backend_available("controlled"):
        e.skip("controlled", "no controlled backend")
    tmpdir = _tmpdir(t)
    victim = t.path("victim")
    os.mkdir(victim)
    t.write("victim/keep", "keep")
    pol = t.policy(base="trusted", backend="controlled")
    r = t.run(["run", "--policy", pol, "--json", "-c",
               DEEP % {"victim": victim, "depth": 5000}],
              extra_env={"TMPDIR": tmpdir}, timeout=25)
    _check_deep_run(t, r, tmpdir, victim)


def test_deep_tree_restricted(t):
    """The same tree in a restricted run's fresh workdir (contract 6: a tmpfs, nothing
    on the host)."""
    e.need_restricted("fresh_workdir")
    tmpdir = _tmpdir(t)
    victim = t.path("victim")
    os.mkdir(victim)
    t.write("victim/keep", "keep")
    pol = e.policy(t, limits={"wall_ms": 15000})
    r = t.run(["run", "--policy", pol, "--json", "-c",
               DEEP % {"victim": victim, "depth": 5000}],
              extra_env={"TMPDIR": tmpdir}, timeout=25)
    _check_deep_run(t, r, tmpdir, victim)


def test_deep_tree_controlled_as_nobody(t):
    """As nobody, with a directory made unreadable and unwritable at the bottom:
    removed, or reported (workdir_cleanup_failed); either way govex returns."""
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    tmpdir = os.path.join(home, "tmpdir")
    os.mkdir(tmpdir)
    os.chmod(tmpdir, 0o777)
    t.defer(lambda: [remove_tree(os.path.join(tmpdir, n)) for n in os.listdir(tmpdir)])
    pol = t.policy(base="trusted", backend="controlled")
    os.chmod(pol, 0o644)
    code = (DEEP % {"victim": "/nonexistent", "depth": 5000} +
            "os.mkdir('locked'); open('locked/f', 'w').write('x'); os.chmod('locked', 0)\n")
    t0 = time.monotonic()
    rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", code], cwd=home,
                              env=dict(env, TMPDIR=tmpdir), preexec=e.nobody_preexec(),
                              binary=binary, timeout=25)
    took = time.monotonic() - t0
    g.check(took < 20, "govex took %.1f s (did cleanup loop?)" % took)
    doc = e.result_of(out)
    g.eq(doc["status"], "success", "status")
    if os.listdir(tmpdir):
        g.diag(doc, "workdir_cleanup_failed")


if __name__ == "__main__":
    sys.exit(g.main([
        ("1: write roots over the cache dir are refused (protected_path)",
         test_write_root_over_cache_refused),
        ("1: a write root HOME over ~/.cache/govex is refused",
         test_home_write_root_over_default_cache_refused),
        ("1: write roots over the cache dir are refused as nobody",
         test_write_root_over_cache_refused_as_nobody),
        ("1: a poisoned backend cache never sends strict to controlled",
         test_poisoned_backend_cache),
        ("1: a pessimistic cached report expires after a minute",
         test_pessimistic_cache_expires),
        ("1: a poisoned probe cache never binds extra host paths",
         test_poisoned_probe_cache),
        ("1: a symlinked cache dir is not used", test_cache_dir_symlink_not_used),
        ("1: a cache dir swapped for a symlink while runs go is not followed",
         test_cache_dir_symlink_race),
        ("1: a group-writable cache dir is not used", test_cache_dir_group_writable_not_used),
        ("1: an other-writable cache dir is not used", test_cache_dir_other_writable_not_used),
        ("1: a cache dir owned by another user is not used",
         test_cache_dir_other_owner_not_used),
        ("1: unsafe cache files (symlink, writable, foreign) are not read",
         test_cache_file_unsafe_not_read),
        ("2: a wrapper interpreter never runs on the host",
         test_wrapper_interpreter_never_runs_on_host),
        ("2: a wrapper interpreter never runs on the host as nobody",
         test_wrapper_interpreter_never_runs_on_host_as_nobody),
        ("2: write roots over the interpreter or govex are refused",
         test_write_root_over_interpreter_refused),
        ("8: a 5,000-deep tree in controlled's workdir is cleaned up",
         test_deep_tree_controlled),
        ("8: a 5,000-deep tree in a restricted workdir leaves nothing",
         test_deep_tree_restricted),
        ("8: a deep tree with a locked dir as nobody: govex returns",
         test_deep_tree_controlled_as_nobody),
    ]))
