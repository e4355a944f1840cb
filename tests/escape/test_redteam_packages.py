#!/usr/bin/env python3
"""Red team for issue 22 (packages): venvs, python.site, the environment probe, its cache,
the environment's digest and python.preload.

What govex resolves for an environment (packages.c, src/worker/envprobe.py) is bound
read-only into every run and kept from every write root; the probe's answer is untrusted
(it runs the environment's .pth files), validated on the host, cached under the trust
rules and bound to the environment by a digest.  These tests attack each of those:

- a run writes into the environment (site directories, the venv, its bin, pyvenv.cfg,
  the libraries its extension modules load, Debian's dist-packages, data files), cold
  and warm: EROFS or EACCES, and the host's files are unchanged;
- a write root over an environment file, through a symlink alias, or over a symlink on
  the way to a bound library (an /etc/alternatives of the user's): protected_path;
- a venv's .pth file or symlink, the code a .pth runs in the probe, and a poisoned
  probe cache name host directories (a secret, /etc) as the environment's: what is
  bound is what the host can derive, never /etc; a stale cache entry is re-probed;
- python.preload naming what is not a module of the environment (the cwd, a read
  root, /tmp, the executable's directory), and a preload whose import leaves state
  (a global, open files, a thread): each run sees the template's state;
- a venv's bin/python retargeted after planning (a long-lived runtime, cold runs): only
  the planned interpreter executes;
- the environment changed under a long-lived runtime: environment_changed.

Every operation inside a sandbox runs behind the canary (run_proven).  A failing test is
a finding; its docstring says what it found and its message what was seen.  Trust that
is documented, not attacked: the venv's owner chooses its files (a .pth path line, a
symlink in site-packages naming the owner's own files is what the venv asks for; the
plan lists it)."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escapetest as e  # noqa: E402
from escapetest import g  # noqa: E402

PY = "/usr/bin/python3.11"
SITE = "/usr/lib/python3/dist-packages"
# (as a user without a delegated cgroup the whole-run limits would be refused)
LIMITS = dict({"wall_ms": 60000, "cpu_ms": 60000, "memory_bytes": 1 << 30},
              **(e.NO_AGGREGATE if os.geteuid() != 0 else {}))
RO = ("EROFS", "EACCES")


# ---------------------------------------------------------------- environments

def need_python():
    if not os.access(PY, os.X_OK):
        e.skip("debian-packages", "no %s" % PY)
    e.need_restricted("fs_read_allowlist", "fs_write_allowlist")
    if subprocess.run([PY, "-c", "import venv"], capture_output=True).returncode:
        e.skip("debian-packages", "python3-venv is not installed")


def need_debian_site():
    need_python()
    for m in ("numpy", "matplotlib"):
        if not os.path.isdir(os.path.join(SITE, m)):
            e.skip("debian-packages", "python3-%s is not installed" % m)


def opened(t):
    """The test's directory reachable by a run's uid (as root: a sandbox uid)."""
    os.chmod(t.tmp, 0o755)


def chmod_tree(top):
    for root, dirs, files in os.walk(top):
        os.chmod(root, 0o755)
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)


def venv(t, name="v"):
    """A venv without pip under the test's directory, with a distribution gxpkg."""
    opened(t)
    v = t.path(name)
    subprocess.run([PY, "-m", "venv", "--without-pip", v], check=True, capture_output=True)
    sp = site_of(v)
    os.mkdir(os.path.join(sp, "gxpkg"))
    with open(os.path.join(sp, "gxpkg", "__init__.py"), "w") as f:
        f.write("VALUE = 42\n")
    info = os.path.join(sp, "gxpkg-1.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: gxpkg\nVersion: 1.0\n")
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("gxpkg/__init__.py,,\n")
    chmod_tree(v)
    return v


def site_of(v):
    return os.path.join(v, "lib", "python3.11", "site-packages")


def cc_ext(t, v, libdir, libname="gxlib", rpath=None):
    """An extension module gxpkg._gx in venv V whose library lib<libname>.so lies in
    LIBDIR (outside every site directory), reached through DT_RUNPATH RPATH (LIBDIR)."""
    inc = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                         capture_output=True, text=True).stdout.strip()
    if not shutil.which("cc") or not os.path.isfile(os.path.join(inc, "Python.h")):
        e.skip("debian-packages", "no cc or python3-dev (Python.h)")
    src = t.path("gxlib.c")
    with open(src, "w") as f:
        f.write("int gx_answer(void) { return 6 * 7; }\n")
    real = os.path.join(libdir, "lib%s.so" % libname)
    if not os.path.isdir(libdir):
        os.makedirs(libdir)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", real, src], check=True)
    mod = t.path("gxmod.c")
    with open(mod, "w") as f:
        f.write('#include <Python.h>\nint gx_answer(void);\n'
                'static PyObject *answer(PyObject *s, PyObject *a)\n'
                '{ return PyLong_FromLong(gx_answer()); }\n'
                'static PyMethodDef m[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
                'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_gx", 0, -1, m};\n'
                'PyMODINIT_FUNC PyInit__gx(void) { return PyModule_Create(&d); }\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-I", inc, "-o",
                    os.path.join(site_of(v), "gxpkg", "_gx.cpython-311-x86_64-linux-gnu.so"),
                    mod, "-L", libdir, "-l" + libname,
                    "-Wl,--enable-new-dtags,-rpath," + (rpath or libdir)], check=True)
    return real


def vpol(t, v, name="v.json", **python):
    return e.policy(t, name=name, python=dict({"interpreter": os.path.join(v, "bin", "python")},
                                              **python), limits=LIMITS)


def spol(t, name="s.json", **python):
    return e.policy(t, name=name, python=dict({"interpreter": PY, "site": True}, **python),
                    limits=LIMITS)


def plan_of(t, pol, env=None, args=()):
    r = t.run(["plan", "--policy", pol, "--json"] + list(args) + ["-c", "print(1)"], env=env)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise g.Failure("no plan: rc %r stderr %r" % (r.returncode, r.stderr[-600:]))


def snapshot(*tops):
    """path -> (kind, bytes' digest or link target) for every file under TOPS."""
    out = {}
    for top in tops:
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                p = os.path.join(root, n)
                if os.path.islink(p):
                    out[p] = ("link", os.readlink(p))
                elif os.path.isfile(p):
                    with open(p, "rb") as f:
                        out[p] = ("file", hashlib.sha256(f.read()).hexdigest())
                else:
                    out[p] = ("dir", None)
    return out


def secret_dir(t, name="secret"):
    s = t.path(name)
    os.mkdir(s, 0o755)
    os.chmod(s, 0o755)
    token = "PK-SECRET-%s" % uuid.uuid4().hex
    with open(os.path.join(s, "key.txt"), "w") as f:
        f.write(token)
    os.chmod(os.path.join(s, "key.txt"), 0o644)
    return s, token


def refused_with(doc, code):
    g.check(doc.get("status") == "policy_refused" and g.diag(doc, code),
            "expected policy_refused/%s, got status %r diagnostics %r"
            % (code, doc.get("status"), doc.get("diagnostics")))


def result_of_run(t, pol, code, env=None, **kw):
    r = t.run(["run", "--policy", pol, "--json", "-c", code], env=env, **kw)
    return r.result()


# ---------------------------------------------------------------- writing into it

def _write_ops(v, lib):
    sp = site_of(v)
    return [
        ["open_flags", os.path.join(sp, "planted.py"), "O_WRONLY", "O_CREAT", "O_EXCL",
         {"as": "site_new"}],
        ["open_flags", os.path.join(sp, "gxpkg", "__init__.py"), "O_WRONLY", "O_APPEND",
         {"as": "pkg_file"}],
        ["open_flags", os.path.join(sp, "gxpkg-1.0.dist-info", "RECORD"), "O_WRONLY",
         "O_APPEND", {"as": "record"}],
        ["open_flags", os.path.join(v, "bin", "planted"), "O_WRONLY", "O_CREAT", "O_EXCL",
         {"as": "bin_new"}],
        ["open_flags", os.path.join(v, "pyvenv.cfg"), "O_WRONLY", "O_APPEND", {"as": "cfg"}],
        ["symlink_read", "/etc/hostname", os.path.join(sp, "gxpkg", "ln"), {"as": "symlink"}],
        ["open_flags", lib, "O_WRONLY", "O_APPEND", {"as": "lib"}],
        ["open_flags", os.path.join(os.path.dirname(lib), "libnew.so"), "O_WRONLY", "O_CREAT",
         "O_EXCL", {"as": "lib_dir"}],
    ]


def test_write_into_venv(t):
    """A run (cold, then warm) writes into the venv: a new module in site-packages, its
    package's file, a RECORD, bin/, pyvenv.cfg, a symlink in a package, the library
    its extension module loads and that library's directory.  Each is EROFS or EACCES;
    the host's venv and library are byte for byte unchanged."""
    need_python()
    v = venv(t)
    lib = cc_ext(t, v, t.path("v-libs"))
    linked = t.path("linked")
    os.mkdir(linked)
    with open(os.path.join(linked, "data.txt"), "w") as f:
        f.write("data\n")
    os.symlink(os.path.join(linked, "data.txt"), os.path.join(site_of(v), "gxpkg", "data.txt"))
    chmod_tree(t.tmp)
    pol = vpol(t, v)
    g.check(os.path.join(linked, "data.txt") in plan_of(t, pol)["packages"]["data"],
            "the link's target is the environment's")
    before = snapshot(v, t.path("v-libs"), linked)
    ops = _write_ops(v, lib) + [
        ["open_flags", os.path.join(site_of(v), "gxpkg", "data.txt"), "O_WRONLY", "O_APPEND",
         {"as": "link_target"}]]
    for warm in ("0", "1"):
        _, doc, res = e.run_proven(t, ops, pol=pol, extra_env={"GOVEX_WARM": warm})
        for label in ("site_new", "pkg_file", "record", "bin_new", "cfg", "symlink", "lib",
                      "lib_dir", "link_target"):
            e.denied_any(res, label, RO)
    g.eq(snapshot(v, t.path("v-libs"), linked), before,
         "the venv, its library and a link's target on the host")


def test_write_into_debian_site(t):
    """Under python.site (Debian's packages, cold then warm): a run appends to numpy's
    __init__.py, creates a file in dist-packages, appends to /etc/matplotlibrc and to
    the BLAS library bound through /etc/alternatives.  Each is EROFS or EACCES and the
    host's files keep their size and mtime."""
    need_debian_site()
    pl = plan_of(t, spol(t))
    pk = pl.get("packages") or {}
    blas = [p for p in pk.get("libraries", []) if os.path.basename(p).startswith("libblas.so")]
    files = [os.path.join(SITE, "numpy", "__init__.py")] + blas[:1]
    if "/etc/matplotlibrc" in pk.get("data", []):
        files.append("/etc/matplotlibrc")
    st = {p: (os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in files}
    planted = os.path.join(SITE, "gx-planted-%s.py" % uuid.uuid4().hex[:8])
    t.defer(lambda: os.path.exists(planted) and os.unlink(planted))
    ops = [["open_flags", planted, "O_WRONLY", "O_CREAT", "O_EXCL", {"as": "new"}]] + \
        [["open_flags", p, "O_WRONLY", "O_APPEND", {"as": p}] for p in files]
    for warm in ("0", "1"):
        _, doc, res = e.run_proven(t, ops, pol=spol(t), extra_env={"GOVEX_WARM": warm})
        e.denied_any(res, "new", RO)
        for p in files:
            e.denied_any(res, p, RO)
    g.check(not os.path.exists(planted), "a file was planted in %s" % SITE)
    g.eq({p: (os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in files}, st,
         "the host's package files")


# ---------------------------------------------------------------- write roots

def test_write_roots_over_environment(t):
    """A write root over the venv's bin, its site-packages, a package directory, the
    directory of a library an extension module loads, the library itself, a data file
    (/usr/share/zoneinfo under python.site with pandas) or a symlink alias of the
    site-packages is refused at planning (protected_path); nothing runs."""
    need_python()
    v = venv(t)
    lib = cc_ext(t, v, t.path("v-libs"))
    chmod_tree(t.tmp)
    linked = t.path("linked")
    os.mkdir(linked, 0o755)
    with open(os.path.join(linked, "data.txt"), "w") as f:
        f.write("data\n")
    os.symlink(os.path.join(linked, "data.txt"), os.path.join(site_of(v), "gxpkg", "data.txt"))
    chmod_tree(t.tmp)
    alias = t.path("alias")
    os.symlink(site_of(v), alias)
    roots = [os.path.join(v, "bin"), site_of(v), os.path.join(site_of(v), "gxpkg"),
             os.path.dirname(lib), lib, alias, os.path.join(v, "lib64"), linked]
    for i, root in enumerate(roots):
        pol = e.policy(t, name="w%d.json" % i, filesystem={"write": [root]},
                       python={"interpreter": os.path.join(v, "bin", "python")}, limits=LIMITS)
        doc = plan_of(t, pol)
        g.check(doc.get("status") == "policy_refused" and g.diag(doc, "protected_path"),
                "write root %s: %r %r" % (root, doc.get("status"), doc.get("diagnostics")))
    if os.path.isdir(os.path.join(SITE, "pandas")) and os.path.isdir("/usr/share/zoneinfo"):
        for i, root in enumerate(["/usr/share/zoneinfo", SITE]):
            pol = e.policy(t, name="d%d.json" % i, filesystem={"write": [root]},
                           python={"interpreter": PY, "site": True}, limits=LIMITS)
            doc = plan_of(t, pol)
            g.check(doc.get("status") == "policy_refused" and g.diag(doc, "protected_path"),
                    "write root %s: %r %r" % (root, doc.get("status"), doc.get("diagnostics")))


def test_write_root_over_library_symlink(t):
    """FINDING: a library an extension module loads may be reached through a symlink in
    another directory (the user's own /etc/alternatives: libs/libgxalt.so ->
    alt/libgxalt.so -> real/libgxalt.so).  The library's path and its real file are
    protected, the symlink between them was not: a write root over alt/ was accepted,
    and a run could retarget alt/libgxalt.so to a library it wrote, which every later
    run of the policy, and the venv's python on the host, then load.  Expected:
    protected_path."""
    need_python()
    v = venv(t)
    base = t.path("chain")
    os.makedirs(os.path.join(base, "libs"))
    os.makedirs(os.path.join(base, "alt"))
    real = cc_ext(t, v, os.path.join(base, "real"), libname="gxalt",
                  rpath=os.path.join(base, "libs"))
    os.symlink(os.path.join(base, "alt", "libgxalt.so"), os.path.join(base, "libs", "libgxalt.so"))
    os.symlink(real, os.path.join(base, "alt", "libgxalt.so"))
    chmod_tree(t.tmp)
    pol = vpol(t, v)
    pl = plan_of(t, pol)
    g.check(os.path.join(base, "libs", "libgxalt.so") in pl["packages"]["libraries"],
            "the library as the loader opens it: %r" % pl["packages"]["libraries"])
    doc = result_of_run(t, pol, "import gxpkg._gx as m; print(m.answer())")
    g.eq(doc.get("stdout"), "42\n", "the extension module loads (%r)"
         % doc.get("stderr", "")[-300:])
    pol = e.policy(t, name="w.json", filesystem={"write": [os.path.join(base, "alt")]},
                   python={"interpreter": os.path.join(v, "bin", "python")}, limits=LIMITS)
    doc = plan_of(t, pol)
    g.check(doc.get("status") == "policy_refused" and g.diag(doc, "protected_path"),
            "write root over the symlink alt/libgxalt.so: %r %r"
            % (doc.get("status"), doc.get("diagnostics")))


def test_write_root_bind_alias_of_site(t):
    """A write root that is a bind-mount alias of the venv's package directory, or of
    the directory of a library its extension module loads (made in a private mount
    namespace of the test's own), is refused (protected_path)."""
    need_python()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        e.skip("root", "a bind mount needs root and unshare(1)")
    v = venv(t)
    lib = cc_ext(t, v, t.path("v-libs"))
    chmod_tree(t.tmp)
    alias = t.path("alias")
    os.mkdir(alias, 0o755)
    env, _ = e.cache_env(t)
    for i, src in enumerate((os.path.join(site_of(v), "gxpkg"), os.path.dirname(lib))):
        pol = e.policy(t, name="b%d.json" % i, filesystem={"write": [alias]},
                       python={"interpreter": os.path.join(v, "bin", "python")}, limits=LIMITS)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount --bind "$1" "$2" && exec "$3" plan --policy "$4" --json '
                            '-c "print(1)"', "sh", src, alias, g.GOVEX, pol],
                           capture_output=True, timeout=60, env=env, cwd=t.tmp)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            raise g.Failure("plan in the private namespace: rc=%d out=%r err=%r"
                            % (p.returncode, p.stdout[-300:], p.stderr[-300:]))
        g.check(doc.get("status") == "policy_refused" and g.diag(doc, "protected_path"),
                "write root %s, a bind alias of %s: %r %r" % (alias, src, doc.get("status"),
                                                             doc.get("diagnostics")))


# ---------------------------------------------------------------- what the venv names

def test_pth_path_line_secret_is_listed(t):
    """Documented trust, not a finding: a .pth path line of the venv naming a directory
    of the owner's (an editable install does this) makes it a site directory: bound
    read-only and listed in the plan's packages.site, where the caller sees it."""
    need_python()
    v = venv(t)
    s, token = secret_dir(t)
    with open(os.path.join(site_of(v), "editable.pth"), "w") as f:
        f.write(s + "\n")
    chmod_tree(v)
    pl = plan_of(t, vpol(t, v))
    g.check(s in pl["packages"]["site"], "listed: %r" % pl["packages"]["site"])


def test_pth_path_line_etc(t):
    """FINDING: a venv's .pth path line "/etc" made the host's whole /etc a site
    directory: bound into every run (the sandbox's /etc holds only its own passwd and
    group, contract section 5), and every symlink under it walked as the environment's
    (hundreds of /etc/alternatives targets bound).  Expected: refused, or at least the
    run's /etc is its own."""
    need_python()
    v = venv(t)
    with open(os.path.join(site_of(v), "etc.pth"), "w") as f:
        f.write("/etc\n")
    chmod_tree(v)
    pol = vpol(t, v)
    r = t.run(["run", "--policy", pol, "--json", "-c", e.probe_code(
        [["read", "/etc/passwd", {"as": "passwd"}], ["listdir", "/etc", {"as": "etc"}]])])
    doc = r.result()
    if doc.get("status") == "policy_refused" or doc.get("status") == "execution_failed":
        g.check("/etc" in json.dumps(doc.get("diagnostics")), "names /etc: %r"
                % doc.get("diagnostics"))
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    e.own_passwd(res, "passwd")
    g.eq(sorted(e.allowed(res, "etc")), ["group", "passwd"], "/etc in the sandbox")


FORGE = ("import sys, os, json; exec(%r) if sys.flags.no_site and "
         "'LIMIT_LIBS' in open('/proc/self/cmdline').read() else None\n")
FORGE_BODY = r"""
a = {"site": %(site)r, "libs": %(libs)r, "links": [], "dists": [], "unresolved": []}
sys.stdout.write(json.dumps(a)); sys.stdout.flush(); os._exit(0)
"""


def forge_pth(v, site, libs=(), name="forge.pth"):
    """A .pth whose import line, in the environment probe only (python -S, the probe's
    code on its command line), prints an answer of its own."""
    body = FORGE_BODY % {"site": list(site), "libs": list(libs)}
    with open(os.path.join(site_of(v), name), "w") as f:
        f.write(FORGE % body)
    chmod_tree(v)


def test_pth_code_forges_site_dir(t):
    """FINDING: the code a venv's .pth import line runs in the environment probe can
    print any answer; a site directory was only checked to exist.  A forged answer
    naming a host directory that no .pth file names and that is on no sys.path bound
    it into every run.  Expected: the host derives the site directories (those of the
    interpreter's prefixes, and what the .pth files it reads itself name): refused
    (invalid environment probe answer) or not bound (ENOENT)."""
    need_python()
    v = venv(t)
    s, token = secret_dir(t)
    forge_pth(v, [site_of(v), s])
    pol = vpol(t, v)
    env, _ = e.cache_env(t)
    r = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code(
        [["read", os.path.join(s, "key.txt"), {"as": "key"}]])], env=env)
    doc = r.result()
    if doc.get("status") in ("policy_refused", "execution_failed") and \
            "environment probe" in json.dumps(doc.get("diagnostics")):
        return
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % {k: doc.get(k) for k in (
        "status", "stderr", "diagnostics")})
    e.proven(res)
    e.denied(res, "key", "ENOENT")


def test_pth_code_leaks_root_only_file(t):
    """FINDING (root; the interpreter probe's was fixed, test_redteam_probe.py): the
    environment probe runs the venv's .pth code as uid 0 (root's 0600 files readable
    by owner bits); the run is an unprivileged uid.  The .pth code reads a root-only
    file and encodes it in which of two ELF shared objects it names as a library (any
    ELF shared object on the host is accepted as one); the run, which cannot read the
    file (EACCES), learns it from which object it sees.  Expected: neither is
    visible."""
    need_python()
    if os.geteuid() != 0:
        e.skip("root", "the probe keeps uid 0 only when govex runs as root")
    v = venv(t)
    bits = t.path("bits")
    os.mkdir(bits, 0o755)
    libc = [p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
            if os.path.exists(p)]
    if not libc:
        e.skip("debian-packages", "no libc.so.6 to copy")
    for b in "01":
        shutil.copy(libc[0], os.path.join(bits, "libbit%s.so" % b))
        os.chmod(os.path.join(bits, "libbit%s.so" % b), 0o644)
    secret = t.path("root-only.txt")
    with open(secret, "w") as f:
        f.write("1\n")
    os.chmod(secret, 0o600)
    body = (FORGE_BODY % {"site": [site_of(v)], "libs": ["@"]}).replace(
        "['@']", "[%r + open(%r).read().strip() + '.so']" % (os.path.join(bits, "libbit"),
                                                              secret))
    with open(os.path.join(site_of(v), "leak.pth"), "w") as f:
        f.write(FORGE % body)
    chmod_tree(v)
    pol = e.policy(t, python={"interpreter": os.path.join(v, "bin", "python")},
                   filesystem={"read": [secret]}, limits=LIMITS)
    env, _ = e.cache_env(t)
    _, doc, res = e.run_proven(t, [["read", secret, {"as": "direct"}],
                                   ["stat", os.path.join(bits, "libbit0.so"), {"as": "bit0"}],
                                   ["stat", os.path.join(bits, "libbit1.so"), {"as": "bit1"}]],
                               pol=pol, env=env)
    e.denied(res, "direct", "EACCES")
    e.denied(res, "bit0", "ENOENT")
    e.denied(res, "bit1", "ENOENT")


def test_symlink_in_venv(t):
    """A venv's symlinks: one to a file of the owner's is followed and bound (documented
    trust; listed in packages.data); one to /etc (a directory) must not bring the
    host's /etc (FINDING: it did, as a link target); links into /proc and /dev are not
    bound (in the run they resolve in the sandbox's own /proc, /dev)."""
    need_python()
    v = venv(t)
    s, token = secret_dir(t)
    pkg = os.path.join(site_of(v), "gxpkg")
    os.symlink(os.path.join(s, "key.txt"), os.path.join(pkg, "key.txt"))
    os.symlink("/etc", os.path.join(pkg, "etc"))
    os.symlink("/proc/1/environ", os.path.join(pkg, "environ"))
    os.symlink("/dev/shm", os.path.join(pkg, "shm"))
    pol = vpol(t, v)
    pl = plan_of(t, pol)
    data = pl["packages"]["data"]
    g.check(os.path.join(s, "key.txt") in data, "the owner's file is listed: %r" % data)
    g.check(not any(p.startswith(("/proc", "/dev")) for p in data), "/proc or /dev: %r" % data)
    r = t.run(["run", "--policy", pol, "--json", "-c", e.probe_code(
        [["read", os.path.join(pkg, "key.txt"), {"as": "key"}],
         ["read", "/etc/passwd", {"as": "passwd"}],
         ["listdir", os.path.join(pkg, "etc"), {"as": "etc"}],
         ["readall", os.path.join(pkg, "environ"), {"as": "environ"}],
         ["listdir", os.path.join(pkg, "shm"), {"as": "shm"}]])])
    doc = r.result()
    res = e.probe_lines(doc.get("stdout"))
    g.check(res is not None, "no probe output: %r" % doc)
    g.eq(e.allowed(res, "key"), token, "the owner's file")
    e.own_passwd(res, "passwd")
    etc = res["etc"].get("value") if res["etc"].get("ok") else []
    g.check(set(etc) <= {"group", "passwd"}, "/etc through the venv's link: %r" % etc[:10])
    env = res["environ"]
    g.check(not env.get("ok") or "XDG_CACHE_HOME" not in env.get("value", ""),
            "the host's pid 1 environment: %r" % env)
    g.check(not res["shm"].get("ok") or res["shm"]["value"] == [], "host /dev/shm: %r"
            % res["shm"])


def test_venv_of_another_user_reaches_private_dir(t):
    """FINDING (root): a venv owned by another user (nobody here) whose site-packages holds
    a symlink to, and a .pth path line naming, a world-readable directory of root's
    under a 0700 directory of root's.  The probe (uid 0) resolves them; the run, an
    unprivileged uid that cannot reach them on the host (the 0700 parent), reads them:
    a bind recreates its parents searchable.  What the venv's owner chooses is the
    caller's to trust, but here it reaches files its owner itself cannot read.
    Expected: neither is readable by the run (EACCES or ENOENT), or the venv is
    refused."""
    need_python()
    if os.geteuid() != 0:
        e.skip("root", "needs root (a venv of another user, root's private directory)")
    v = venv(t)
    priv = t.path("private")
    os.makedirs(os.path.join(priv, "proj", "pkgdir"))
    with open(os.path.join(priv, "proj", "notes.txt"), "w") as f:
        f.write("ROOT-PRIVATE\n")
    with open(os.path.join(priv, "proj", "pkgdir", "notes.txt"), "w") as f:
        f.write("ROOT-PRIVATE-2\n")
    chmod_tree(priv)
    os.chmod(priv, 0o700)
    os.symlink(os.path.join(priv, "proj"), os.path.join(site_of(v), "proj"))
    with open(os.path.join(site_of(v), "dev.pth"), "w") as f:
        f.write(os.path.join(priv, "proj", "pkgdir") + "\n")
    for root, dirs, files in os.walk(v):
        os.lchown(root, e.NOBODY, e.NOBODY)
        for n in dirs + files:
            os.lchown(os.path.join(root, n), e.NOBODY, e.NOBODY)
    pol = vpol(t, v)
    env, _ = e.cache_env(t)
    r = t.run(["run", "--policy", pol, "--json", "-c", e.proven_code(
        [["read", os.path.join(site_of(v), "proj", "notes.txt"), {"as": "link"}],
         ["read", os.path.join(priv, "proj", "pkgdir", "notes.txt"), {"as": "pth"}]])], env=env)
    doc = r.result()
    res = e.probe_lines(doc.get("stdout"))
    if res is None:
        g.check(doc.get("status") in ("policy_refused", "execution_failed"),
                "neither ran nor refused: %r" % doc)
        return
    e.proven(res)
    e.denied_any(res, "link", ("EACCES", "ENOENT"))
    e.denied_any(res, "pth", ("EACCES", "ENOENT"))



def test_runpath_into_private_dir(t):
    """(root) Another user's venv whose extension module's DT_RUNPATH leads into a 0700
    directory of root's, holding a world-readable shared object of the needed name: the
    run, which could not reach it on the host, must not see it bound (the library is
    left unresolved; the module then fails to load, as it would for that uid)."""
    need_python()
    if os.geteuid() != 0:
        e.skip("root", "needs root (a venv of another user, root's private directory)")
    if not shutil.which("cc"):
        e.skip("debian-packages", "no C compiler to build the module")
    v = venv(t)
    priv = t.path("private")
    libdir = os.path.join(priv, "libs")
    os.makedirs(libdir)
    src = t.path("lib.c")
    with open(src, "w") as f:
        f.write("int gx_private(void) { return 7; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(libdir, "libgxpriv.so"), src],
                   check=True)
    mod = t.path("mod.c")
    with open(mod, "w") as f:
        f.write("int gx_private(void);\nint gx_use(void) { return gx_private(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(site_of(v), "gxuse.so"), mod,
                    "-L", libdir, "-lgxpriv", "-Wl,--enable-new-dtags,-rpath," + libdir],
                   check=True)
    chmod_tree(priv)
    os.chmod(priv, 0o700)
    for root, dirs, files in os.walk(v):
        os.lchown(root, e.NOBODY, e.NOBODY)
        for n in dirs + files:
            os.lchown(os.path.join(root, n), e.NOBODY, e.NOBODY)
    pol = vpol(t, v)
    pl = plan_of(t, pol)
    g.check(not any(p.startswith(priv) for p in pl["packages"]["libraries"]),
            "a library under the 0700 directory is bound: %r" % pl["packages"]["libraries"])
    _, doc, res = e.run_proven(t, [["stat", os.path.join(libdir, "libgxpriv.so"),
                                    {"as": "lib"}]], pol=pol)
    e.denied_any(res, "lib", ("EACCES", "ENOENT"))

# ---------------------------------------------------------------- the probe's cache

DIGEST_SUFFIXES = (".pth", ".dist-info", ".egg-info", ".egg-link")


def _feed_file(k, what, path):
    try:
        if os.path.islink(path) and what == "cfg":
            raise OSError
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not (st.st_mode & 0o170000 == 0o100000):
                raise OSError
            data = f.read(16 << 20)
    except OSError:
        k.append(("%s %s -\n" % (what, os.path.basename(path))).encode())
        return
    k.append(("%s %s %d\n" % (what, os.path.basename(path), st.st_size)).encode())
    k.append(data + b"\n")


def _old_cache_entry(t, v, pl, cache):
    """Where the environment probe of an earlier design kept its answer
    ("pkgs-v1-<digest of the key>.json", keyed by the interpreter's identity)."""
    real = pl["interpreter"]["path"]
    st = os.stat(real)
    key = "pkgs-v1|%s|%s|%d|%d|%d.%d" % (real, pl["interpreter"].get("executable") or "-",
                                         st.st_dev, st.st_ino, int(st.st_mtime),
                                         st.st_mtime_ns % 1000000000)
    name = "pkgs-v1-%s.json" % hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(cache, name), key


def test_poisoned_cache(t):
    """FINDING (fixed by design): a cache entry (the caller's own 0700 directory) naming a
    host directory as a site directory, a secret file as a library, /etc as a link's
    target, with the digest recomputed, was used as is.  The environment is now resolved
    on the host from what is installed, with no cache: nothing is written there, and a
    planted entry (of the earlier design's name and form) changes nothing."""
    need_python()
    v = venv(t)
    s, token = secret_dir(t)
    pol = vpol(t, v)
    env, cache = e.cache_env(t)
    pl = plan_of(t, pol, env=env)
    g.eq(e.cache_files(cache, "pkgs-v1-"), [], "nothing of the packages is cached")
    path, key = _old_cache_entry(t, v, pl, cache)
    pk = pl["packages"]
    ans = {"site": pk["site"] + [s, "/etc"], "libs": [os.path.join(s, "key.txt"), "/etc/shadow"],
           "links": [[os.path.join(site_of(v), "gxpkg"), s]], "data": [s, "/etc/shadow"],
           "dists": [["matplotlib", "9"]]}
    e.write_cache_file(path, key, {"digest": pk["digest"], "answer": json.dumps(ans)})
    pl2 = plan_of(t, pol, env=env)
    g.eq(pl2["packages"], pk, "the plan with a planted cache entry")
    _, doc, res = e.run_proven(t, [["read", os.path.join(s, "key.txt"), {"as": "key"}],
                                   ["listdir", s, {"as": "dir"}]], pol=pol, env=env)
    e.denied(res, "key", "ENOENT")
    e.denied(res, "dir", "ENOENT")


def test_preload_outside_environment(t):
    """python.preload names modules of the environment only: a module in govex's cwd,
    in a read root, in /tmp, given as a --file to the workdir, or a name that is only
    an entry of the executable's directory (/usr/bin/python3, a symlink; FINDING: it
    was accepted, as /usr/bin is among the interpreter's paths) is preload_not_found;
    a relative or dotted trick is an invalid policy."""
    need_python()
    v = venv(t)
    rr = t.path("rr")
    os.mkdir(rr, 0o755)
    for d, n in ((t.tmp, "gxcwd"), (rr, "gxread"), ("/tmp", "gxtmp%s" % uuid.uuid4().hex[:6])):
        with open(os.path.join(d, n + ".py"), "w") as f:
            f.write("raise SystemExit('imported %s')\n" % n)
        if d == "/tmp":
            t.defer(os.unlink, os.path.join(d, n + ".py"))
        pol = e.policy(t, name="p-%s.json" % n, filesystem={"read": [rr]},
                       python={"interpreter": os.path.join(v, "bin", "python"),
                               "preload": [n]}, limits=LIMITS)
        refused_with(plan_of(t, pol), "preload_not_found")
    with open(t.path("gxfile.py"), "w") as f:
        f.write("X = 1\n")
    pol = vpol(t, v, name="pf.json", preload=["gxfile"])
    refused_with(plan_of(t, pol, args=["--file", "gxfile.py=" + t.path("gxfile.py")]),
                 "preload_not_found")
    for n in ["python3"] + (["X11"] if os.path.lexists("/usr/bin/X11") else []):
        refused_with(plan_of(t, vpol(t, v, name="pb.json", preload=[n])), "preload_not_found")
    for bad in ("..", "../gxcwd", ".gxcwd", "gxcwd/..", "/tmp/x", "a..b", "os.", "x-y"):
        pol = e.policy(t, name="bad.json", python={"interpreter": os.path.join(v, "bin", "python"),
                                                   "preload": [bad]}, limits=LIMITS)
        r = t.run(["policy", "check", pol])
        g.check(r.returncode == 2 and b"python.preload[0]" in r.stderr,
                "preload %r: rc %r %r" % (bad, r.returncode, r.stderr[-200:]))


STATE_MOD = r'''
import os, threading, time
VALUE = "template"
ticks = []
r, w = os.pipe()
f = open(os.path.join(os.path.dirname(__file__), "gxstate.py"))
def _loop():
    while True:
        ticks.append(time.monotonic())
        del ticks[:-20]
        time.sleep(0.02)
threading.Thread(target=_loop, daemon=True).start()
time.sleep(0.1)
'''
STATE_RUN = r'''
import gxstate, os, sys, json
out = {"value": gxstate.VALUE, "ticks": gxstate.ticks[-1] if gxstate.ticks else None,
       "tasks": len(os.listdir("/proc/self/task"))}
for name, fd in (("w", gxstate.w), ("f", gxstate.f.fileno())):
    try:
        os.write(fd, b"run-data") if name == "w" else os.fstat(fd)
        out[name] = "open"
    except OSError as e:
        out[name] = e.errno
gxstate.VALUE = "changed by a run"
sys.modules["json"].GX_MARK = 1
print(json.dumps(out))
'''


def test_preload_state_fresh(t):
    """A preloaded module whose import sets a global, opens a pipe and a file, and starts
    a thread: through govex mcp (warm templates), each run sees the global as the
    template left it (not the previous run's), the module's fds closed (EBADF), one task
    of its own, and the thread's last tick the same in every run (no state accrues in
    the template between runs)."""
    need_python()
    v = venv(t)
    with open(os.path.join(site_of(v), "gxstate.py"), "w") as f:
        f.write(STATE_MOD)
    chmod_tree(v)
    pol = vpol(t, v, preload=["gxstate"])
    env, _ = e.cache_env(t)
    s = Mcp(pol, env)
    t.defer(s.close)
    seen = []
    for i in range(3):
        doc = s.snippet(STATE_RUN)
        g.eq(doc.get("status"), "success", "run %d: %r" % (i, doc.get("stderr", "")[-400:]))
        seen.append(json.loads(doc["stdout"]))
        time.sleep(0.3)
    for i, o in enumerate(seen):
        g.eq(o["value"], "template", "run %d's global" % i)
        g.eq((o["w"], o["f"]), (9, 9), "run %d: the template's fds (EBADF)" % i)
        g.eq(o["tasks"], 1, "run %d's tasks" % i)
    g.eq(len({o["ticks"] for o in seen}), 1, "the template's thread ran between runs: %r"
         % [o["ticks"] for o in seen])


class Mcp:
    def __init__(self, policy, env):
        self.p = subprocess.Popen([g.GOVEX, "mcp", "--policy", policy], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                  start_new_session=True)
        self.n = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "1"}})

    def rpc(self, method, params):
        self.n += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                        "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise g.Failure("govex mcp exited")
            m = json.loads(line)
            if m.get("id") == self.n:
                return m

    def snippet(self, code):
        m = self.rpc("tools/call", {"name": "run_python_snippet", "arguments": {"code": code}})
        return m["result"]["structuredContent"]

    def close(self):
        if self.p.poll() is not None:
            return
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


# ---------------------------------------------------------------- after planning

EVIL_SH = "#!/bin/sh\necho GX-NOT-PYTHON\n"


def test_venv_python_retargeted(t):
    """FINDING: in a long-lived runtime (govex mcp) with cold runs, the venv's bin/python
    retargeted after planning (by the venv's owner) to a shell script or another ELF
    (/usr/bin/id) was what the next run executed (under subprocess: deny: the run's one
    execve), not the planned interpreter.  Expected: the planned interpreter runs (its
    real file, the venv named by argv[0]) or the run is refused; never the new
    target."""
    need_python()
    v = venv(t)
    with open(os.path.join(v, "bin", "evil.sh"), "w") as f:
        f.write(EVIL_SH)
    os.chmod(os.path.join(v, "bin", "evil.sh"), 0o755)
    pol = vpol(t, v)
    env, _ = e.cache_env(t)
    link = os.path.join(v, "bin", "python")
    orig = os.readlink(link)
    for warm in ("0", "1"):
        for target in ("evil.sh", "/usr/bin/id"):
            s = Mcp(pol, dict(env, GOVEX_WARM=warm))
            t.defer(s.close)
            doc = s.snippet("import sys; print('PY', sys.prefix)")
            g.eq(doc.get("stdout"), "PY %s\n" % v, "warm=%s: the first run" % warm)
            os.unlink(link)
            os.symlink(target, link)
            try:
                doc = s.snippet("import sys; print('PY', sys.prefix)")
            finally:
                os.unlink(link)
                os.symlink(orig, link)
                s.close()
            out = (doc.get("stdout") or "") + (doc.get("stderr") or "")
            g.check("GX-NOT-PYTHON" not in out and "invalid option" not in out and
                    "Cannot fork" not in out and
                    (doc.get("stdout") == "PY %s\n" % v or doc.get("status") == "policy_refused"),
                    "warm=%s, bin/python -> %s: %r" % (warm, target, {
                        k: doc.get(k) for k in ("status", "stdout", "stderr", "diagnostics")}))


def test_environment_changed_live(t):
    """In a long-lived runtime (govex mcp), a distribution installed after the first run
    refuses the next (environment_changed, naming it); removing it again lets runs
    go on."""
    need_python()
    v = venv(t)
    pol = vpol(t, v)
    env, _ = e.cache_env(t)
    s = Mcp(pol, env)
    t.defer(s.close)
    doc = s.snippet("print(1)")
    g.eq(doc.get("status"), "success", "the first run: %r" % doc)
    info = os.path.join(site_of(v), "other-2.0.dist-info")
    os.mkdir(info, 0o755)
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("other/__init__.py,,\n")
    doc = s.snippet("print(2)")
    refused_with(doc, "environment_changed")
    shutil.rmtree(info)
    doc = s.snippet("print(3)")
    g.eq(doc.get("status"), "success", "back as planned: %r" % doc.get("diagnostics"))


# ---------------------------------------------------------------- as another user

def test_as_nobody(t):
    """As nobody (its own venv): writing into the venv is EROFS/EACCES; a .pth naming
    /etc does not bring the host's /etc; a forged probe answer binds nothing (the venv
    is refused, naming the environment probe, or the directory is not there)."""
    need_python()
    sb = e.need_unprivileged_sandbox(t)
    home, env, binary = sb
    env = dict(env, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    sb = (home, env, binary)
    s, token = secret_dir(t)
    for case in ("etc", "forge"):
        v = venv(t, "nobody/v-" + case)
        if case == "etc":
            with open(os.path.join(site_of(v), "etc.pth"), "w") as f:
                f.write("/etc\n")
        else:
            forge_pth(v, [site_of(v), s])
        for root, dirs, files in os.walk(v):
            os.chown(root, e.NOBODY, e.NOBODY)
            for n in files:
                os.lchown(os.path.join(root, n), e.NOBODY, e.NOBODY)
        pol = vpol(t, v, name="n-%s.json" % case)
        os.chmod(pol, 0o644)
        e.without_aggregate(pol)
        rc, out, err, _ = e.spawn(["run", "--policy", pol, "--json", "-c", e.proven_code([
            ["open_flags", os.path.join(site_of(v), "planted.py"), "O_WRONLY", "O_CREAT",
             "O_EXCL", {"as": "site_new"}],
            ["open_flags", os.path.join(v, "pyvenv.cfg"), "O_WRONLY", "O_APPEND", {"as": "cfg"}],
            ["read", os.path.join(s, "key.txt"), {"as": "key"}],
            ["listdir", "/etc", {"as": "etc"}]])], cwd=home, env=env,
            preexec=e.nobody_preexec(), binary=binary)
        doc = e.result_of(out)
        res = e.probe_lines(doc.get("stdout"))
        if res is None:
            g.check(doc.get("status") in ("execution_failed", "policy_refused") and
                    "environment probe" in json.dumps(doc.get("diagnostics")),
                    "%s: %r" % (case, {k: doc.get(k) for k in ("status", "stderr",
                                                               "diagnostics")}))
            continue
        e.proven(res)
        e.denied_any(res, "site_new", RO)
        e.denied_any(res, "cfg", RO)
        e.denied(res, "key", "ENOENT")
        etc = res["etc"].get("value") if res["etc"].get("ok") else []
        g.check(set(etc) <= {"group", "passwd"}, "%s: /etc as nobody: %r" % (case, etc[:10]))
        g.check(not os.path.exists(os.path.join(site_of(v), "planted.py")), "planted")


if __name__ == "__main__":
    sys.exit(g.main([
        ("write: into a venv, its bin, pyvenv.cfg, its library (cold, warm)",
         test_write_into_venv),
        ("write: into Debian's dist-packages, a data file, a library (cold, warm)",
         test_write_into_debian_site),
        ("protected_path: write roots over the environment, an alias",
         test_write_roots_over_environment),
        ("protected_path: a write root over a symlink on the way to a library",
         test_write_root_over_library_symlink),
        ("protected_path: a bind alias of a package or library directory",
         test_write_root_bind_alias_of_site),
        ("trust: a .pth path line of the owner's is a listed site directory",
         test_pth_path_line_secret_is_listed),
        ("a .pth path line /etc does not bring the host's /etc", test_pth_path_line_etc),
        ("a .pth's code cannot forge a site directory", test_pth_code_forges_site_dir),
        ("a .pth's code in the probe cannot leak a root-only file",
         test_pth_code_leaks_root_only_file),
        ("symlinks in a venv: the owner's file; not /etc, /proc, /dev", test_symlink_in_venv),
        ("another user's venv does not reach root's private directory",
         test_venv_of_another_user_reaches_private_dir),
        ("a DT_RUNPATH into root's 0700 directory binds nothing", test_runpath_into_private_dir),
        ("cache: nothing cached, a planted entry changes nothing", test_poisoned_cache),
        ("preload: nothing outside the environment", test_preload_outside_environment),
        ("preload: a module's state, fds, thread stay in the template",
         test_preload_state_fresh),
        ("toctou: a retargeted venv python never runs", test_venv_python_retargeted),
        ("environment_changed in a long-lived runtime", test_environment_changed_live),
        ("as nobody: writes, a .pth /etc, a forged answer", test_as_nobody),
    ]))
