#!/usr/bin/env python3
"""Packages in the sandbox: Debian's numpy, pandas and matplotlib under python.site, a
venv's own packages, the libraries their extension modules load, the environment's
digest in the plan, protected environments, and python.preload.

Uses the real packages (python3-numpy, python3-pandas, python3-matplotlib and
python3-venv, which .ci/run installs): without them the cases skip with
"feature:debian-packages"."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

PY = "/usr/bin/python3.11"
SITE = "/usr/lib/python3/dist-packages"

DATA = """import numpy as np, pandas as pd, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt, os
df = pd.DataFrame({"k": [1, 2, 1, 2], "v": [1.5, 2.0, 3.5, 4.0]})
print(df.groupby("k").v.sum().to_dict())
print(float(np.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]])).sum()))
fig = plt.figure(); plt.plot([1, 3, 2]); fig.savefig(os.environ["GOVEX_OUTPUT_DIR"] + "/f.png")
"""
DATA_OUT = "{1: 5.0, 2: 6.0}\n0.75\n"


def need_packages():
    if os.geteuid() != 0 and not os.access(PY, os.X_OK):
        raise g.Skip("feature:debian-packages: no %s" % PY)
    for m in ("numpy", "pandas", "matplotlib"):
        if not os.path.isdir(os.path.join(SITE, m)):
            raise g.Skip("feature:debian-packages: python3-%s is not installed" % m)
    if not g.backend_available("restricted"):
        raise g.Skip("feature:userns: the restricted backend is unavailable here")


def site_policy(t, name="p.json", **python):
    pol = g.preset("strict")
    pol["python"] = dict({"interpreter": PY, "site": True}, **python)
    # pandas' import alone takes ~0.3-3 s on a loaded machine
    pol["limits"].update(wall_ms=180000, cpu_ms=180000, memory_bytes=1 << 30)
    return t.write_json(name, pol)


def run_json(t, args, **kw):
    # (a first import of numpy, pandas and matplotlib from a cold page cache takes a
    # minute and more under the VM's TCG on a loaded machine)
    kw.setdefault("timeout", 240)
    r = t.run(args + ["--json"], **kw)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        raise g.Failure("no JSON result: rc %r, stderr %r" % (r.returncode, r.stderr[-600:]))


def make_venv(t, name, system_site=False):
    """A venv under the test's directory (not /tmp: a warm run's /tmp is its own), made
    without pip (no network here), with a hand-made distribution `gxpkg` whose
    extension module links a library in a directory outside every site directory."""
    if subprocess.run([PY, "-c", "import venv, ensurepip"], capture_output=True).returncode:
        raise g.Skip("feature:debian-packages: python3-venv is not installed")
    if not shutil.which("cc"):
        raise g.Skip("feature:cc: no C compiler for the venv's extension module")
    v = t.path(name)
    args = [PY, "-m", "venv", "--without-pip"] + (["--system-site-packages"] if system_site
                                                  else []) + [v]
    subprocess.run(args, check=True, capture_output=True)
    sp = os.path.join(v, "lib", "python3.11", "site-packages")
    pkg = os.path.join(sp, "gxpkg")
    os.mkdir(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("from gxpkg._gx import answer\nVALUE = 42\n")
    info = os.path.join(sp, "gxpkg-1.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: gxpkg\nVersion: 1.0\n")
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("gxpkg/__init__.py,,\n")
    # libgxlib.so in <v>/../<name>-libs: reached only through the module's DT_RUNPATH
    libs = t.path(name + "-libs")
    os.mkdir(libs)
    with open(t.path(name + "-lib.c"), "w") as f:
        f.write("int gx_answer(void) { return 6 * 7; }\n")
    with open(t.path(name + "-mod.c"), "w") as f:
        f.write('#include <Python.h>\nint gx_answer(void);\n'
                'static PyObject *answer(PyObject *s, PyObject *a)\n'
                '{ return PyLong_FromLong(gx_answer()); }\n'
                'static PyMethodDef m[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
                'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_gx", 0, -1, m};\n'
                'PyMODINIT_FUNC PyInit__gx(void) { return PyModule_Create(&d); }\n')
    inc = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                         capture_output=True, text=True).stdout.strip()
    if not os.path.isfile(os.path.join(inc, "Python.h")):
        raise g.Skip("feature:debian-packages: python3-dev (Python.h) is not installed")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(libs, "libgxlib.so"),
                    t.path(name + "-lib.c")], check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-I", inc, "-o",
                    os.path.join(pkg, "_gx.cpython-311-x86_64-linux-gnu.so"),
                    t.path(name + "-mod.c"), "-L", libs, "-lgxlib",
                    "-Wl,--enable-new-dtags,-rpath," + libs], check=True)
    for root, dirs, files in os.walk(t.tmp):
        os.chmod(root, 0o755)
        for f in files:
            if not os.path.islink(os.path.join(root, f)):  # (bin/python: the base's)
                os.chmod(os.path.join(root, f), 0o755)
    return v


def venv_policy(t, v, name="v.json", **python):
    pol = g.preset("strict")
    pol["python"] = dict({"interpreter": os.path.join(v, "bin", "python")}, **python)
    pol["limits"].update(wall_ms=180000, cpu_ms=180000, memory_bytes=1 << 30)
    return t.write_json(name, pol)


def test_debian_site(t):
    """strict with python.site on Debian's interpreter: numpy, pandas and matplotlib
    import and work with no read root of the user's (the libraries behind
    /etc/alternatives, matplotlibrc and mpl-data found at planning)."""
    need_packages()
    pol = site_policy(t)
    out = t.path("out")
    os.mkdir(out)
    r, doc = run_json(t, ["run", "--policy", pol, "--output-dir", out, "-c", DATA])
    g.eq(doc["status"], "success", "status (stderr %r)" % doc.get("stderr", "")[-800:])
    g.eq(doc["stdout"], DATA_OUT, "stdout")
    with open(os.path.join(out, "f.png"), "rb") as f:
        g.eq(f.read(8), b"\x89PNG\r\n\x1a\n", "the figure")
    # scipy and scikit-learn too, where installed
    for mod, code, want in (
            ("scipy", "import scipy.stats; print(round(float(scipy.stats.norm.cdf(1.0)), 4))",
             "0.8413\n"),
            ("sklearn", "from sklearn.linear_model import LinearRegression as L\n"
             "print(round(float(L().fit([[0], [1], [2]], [1, 3, 5]).coef_[0]), 3))", "2.0\n")):
        if os.path.isdir(os.path.join(SITE, mod)):
            r, doc = run_json(t, ["run", "--policy", pol, "-c", code])
            g.eq((doc["status"], doc["stdout"]), ("success", want),
                 "%s (stderr %r)" % (mod, doc.get("stderr", "")[-500:]))


def test_plan_shows_packages(t):
    """The plan lists the site directories, the libraries (libblas through
    /etc/alternatives), the data and the environment's digest."""
    need_packages()
    r = t.run(["plan", "--policy", site_policy(t), "-c", "print(1)"])
    r.expect_rc(0)
    pk = r.json()["packages"]
    g.check(SITE in pk["site"], "site: %r" % pk["site"])
    g.check(any(os.path.basename(p).startswith("libblas.so") for p in pk["libraries"]),
            "libblas among the libraries: %r" % pk["libraries"][:20])
    g.check("/etc/matplotlibrc" in pk["data"], "matplotlibrc: %r" % pk["data"][:20])
    g.check(pk["digest"].startswith("sha256:"), "digest: %r" % pk["digest"])
    g.check(any(d.startswith("numpy==") for d in pk["distributions"]),
            "numpy among the distributions: %r" % pk["distributions"][:20])
    g.eq(pk["preload"], [], "preload")
    # the same environment, the same plan
    r2 = t.run(["plan", "--policy", site_policy(t), "-c", "print(1)"])
    g.eq(r2.json()["packages"], pk, "a second plan")


def test_no_site_no_packages(t):
    """Without python.site, Debian's packages stay out: import numpy fails as before."""
    need_packages()
    pol = g.preset("strict")
    pol["python"] = {"interpreter": PY, "site": False}
    r, doc = run_json(t, ["run", "--policy", t.write_json("p.json", pol), "-c",
                          "import numpy"])
    g.check("ModuleNotFoundError" in doc["stderr"], "stderr: %r" % doc["stderr"][-300:])
    r = t.run(["plan", "--policy", t.path("p.json"), "-c", "print(1)"])
    g.check("packages" not in r.json(), "no packages member without site")


def test_venv(t):
    """A venv's python is the venv: its own distribution (an extension module linking a
    library reached through DT_RUNPATH, outside every site directory) imports; the
    system's packages do not (no --system-site-packages); sys.prefix is the venv.
    Cold and warm."""
    need_packages()
    v = make_venv(t, "venv")
    pol = venv_policy(t, v)
    code = ("import sys, gxpkg\nprint(gxpkg.VALUE, gxpkg.answer(), sys.prefix == %r)\n"
            "try:\n    import numpy\nexcept ImportError:\n    print('no numpy')\n" % v)
    for warm in ("0", "1"):
        r, doc = run_json(t, ["run", "--policy", pol, "-c", code],
                          extra_env={"GOVEX_WARM": warm})
        g.eq(doc["status"], "success", "warm=%s: %r" % (warm, doc.get("stderr", "")[-600:]))
        g.eq(doc["stdout"], "42 42 True\nno numpy\n", "warm=%s stdout" % warm)
    r = t.run(["plan", "--policy", pol, "-c", "print(1)"])
    plan = r.json()
    g.eq(plan["interpreter"]["executable"], os.path.join(v, "bin", "python"), "executable")
    g.eq(plan["interpreter"]["args"], ["-I"], "site on for a venv")
    g.check(any(p.endswith("/libgxlib.so") for p in plan["packages"]["libraries"]),
            "libgxlib resolved: %r" % plan["packages"]["libraries"])


def test_venv_system_site(t):
    """A venv made with --system-site-packages sees its own and Debian's packages."""
    need_packages()
    v = make_venv(t, "venv2", system_site=True)
    r, doc = run_json(t, ["run", "--policy", venv_policy(t, v), "-c",
                          "import gxpkg, numpy\nprint(gxpkg.VALUE, int(numpy.arange(4).sum()))"])
    g.eq(doc["status"], "success", "status: %r" % doc.get("stderr", "")[-600:])
    g.eq(doc["stdout"], "42 6\n", "stdout")


def test_environment_changed(t):
    """A distribution installed after planning changes the environment's digest: the
    plan given with --plan is refused, naming the environment."""
    need_packages()
    v = make_venv(t, "venv3")
    pol = venv_policy(t, v)
    r = t.run(["plan", "--policy", pol, "-c", "print(1)"])
    r.expect_rc(0)
    plan = t.write("plan.json", r.stdout)
    r = t.run(["run", "--policy", pol, "--plan", plan, "-c", "print(1)"])
    r.expect_rc(0)
    info = os.path.join(v, "lib", "python3.11", "site-packages", "other-2.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("other/__init__.py,,\n")
    r, doc = run_json(t, ["run", "--policy", pol, "--plan", plan, "-c", "print(1)"])
    g.eq(doc["status"], "policy_refused", "status")
    g.check(g.diag(doc, "environment_changed"), "diagnostics: %r" % doc["diagnostics"])
    # a RECORD rewritten in place (an upgrade keeping the name) is a change too
    r = t.run(["plan", "--policy", pol, "-c", "print(1)"])
    plan = t.write("plan2.json", r.stdout)
    with open(os.path.join(info, "RECORD"), "a") as f:
        f.write("other/extra.py,,\n")
    r, doc = run_json(t, ["run", "--policy", pol, "--plan", plan, "-c", "print(1)"])
    g.check(g.diag(doc, "environment_changed"), "RECORD changed: %r" % doc["diagnostics"])


def test_write_root_over_environment(t):
    """A write root over the venv or a site directory is refused (protected_path)."""
    need_packages()
    v = make_venv(t, "venv4")
    pol = g.preset("strict")
    pol["python"] = {"interpreter": os.path.join(v, "bin", "python")}
    for root in (v, os.path.join(v, "lib", "python3.11", "site-packages", "gxpkg")):
        pol["filesystem"]["write"] = [root]
        r, doc = run_json(t, ["run", "--policy", t.write_json("w.json", pol), "-c", "1"])
        g.eq(doc["status"], "policy_refused", "write root %s" % root)
        g.check(g.diag(doc, "protected_path"), "diagnostics: %r" % doc["diagnostics"])


def test_preload_not_found(t):
    """python.preload names modules of the environment only."""
    need_packages()
    for bad in ("no_such_module", "gxpkg_not_here.sub"):
        r, doc = run_json(t, ["run", "--policy", site_policy(t, preload=[bad]), "-c", "1"])
        g.eq(doc["status"], "policy_refused", "preload %s" % bad)
        g.check(g.diag(doc, "preload_not_found"), "diagnostics: %r" % doc["diagnostics"])
    pol = g.preset("strict")
    pol["python"] = {"preload": ["not a module"]}
    r = t.run(["policy", "check", t.write_json("bad.json", pol)])
    g.eq(r.returncode, 2, "an invalid module name: %r" % r.stderr)
    g.check(b"python.preload[0]" in r.stderr, "names the field: %r" % r.stderr)


class Mcp:
    def __init__(self, policy):
        self.p = subprocess.Popen([g.GOVEX, "mcp", "--policy", policy], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def test_preload_warm(t):
    """python.preload: through govex mcp (warm templates), a snippet finds pandas
    imported (its import costs nothing); what one run changes in the module never
    reaches the next; without preload the import is paid in the run."""
    need_packages()
    code = ("import sys, time\nt = time.perf_counter()\nimport pandas\n"
            "dt = time.perf_counter() - t\n"
            "print(getattr(pandas, 'govex_mark', None), pandas.get_option('display.max_rows'))\n"
            "pandas.govex_mark = 'run'\npandas.set_option('display.max_rows', 3)\n"
            "round(dt * 1000, 1)\n")
    s = Mcp(site_policy(t, preload=["pandas"]))
    t.defer(s.close)
    times = []
    for i in range(3):
        doc = s.snippet(code)
        g.eq(doc["status"], "success", "run %d: %r" % (i, doc.get("stderr", "")[-500:]))
        g.eq(doc["stdout"], "None 60\n", "run %d starts from the template's pandas" % i)
        times.append(doc["value"])
    g.check(max(times) < 5.0, "a preloaded import costs nothing (ms): %r" % times)
    s.close()
    cold = Mcp(site_policy(t, "q.json"))
    t.defer(cold.close)
    doc = cold.snippet(code)
    g.eq(doc["status"], "success", "without preload: %r" % doc.get("stderr", "")[-500:])
    g.check(doc["value"] > 20.0, "without preload the import is the run's (ms): %r"
            % doc["value"])


def test_as_user(t):
    """As an unprivileged user (nobody), the same data snippet works."""
    need_packages()
    if os.geteuid() != 0:
        raise g.Skip("needs root to become nobody")
    os.chmod(t.tmp, 0o755)
    pol = g.preset("strict")
    pol["python"] = {"interpreter": PY, "site": True}
    # (this host may delegate no cgroup to other users: the per-run limits only)
    pol["limits"].update(wall_ms=180000, memory_bytes=None, cpu_ms=None, processes=None)
    pol = t.write_json("u.json", pol)
    os.chmod(pol, 0o644)
    out = t.path("out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    binary = t.path("bin", "govex")
    os.mkdir(t.path("bin"), 0o755)
    shutil.copy2(g.GOVEX, binary)
    os.chmod(binary, 0o755)

    def nobody():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    p = subprocess.run([binary, "run", "--policy", pol, "--backend", "restricted", "--json",
                        "--output-dir", out, "-c", DATA], cwd=t.tmp,
                       env=dict(os.environ, HOME=t.tmp, XDG_CACHE_HOME=t.path("cache")),
                       preexec_fn=nobody, capture_output=True, timeout=120)
    doc = json.loads(p.stdout)
    if any(d["code"] == "missing_controls" for d in doc["diagnostics"]):
        raise g.Skip("feature:userns: no unprivileged sandbox here: %r" % doc["diagnostics"])
    g.eq(doc["status"], "success", "status: %r" % doc.get("stderr", "")[-600:])
    g.eq(doc["stdout"], DATA_OUT, "stdout as nobody")


if __name__ == "__main__":
    sys.exit(g.main([
        ("debian's numpy, pandas, matplotlib under python.site", test_debian_site),
        ("the plan lists the packages and the environment's digest", test_plan_shows_packages),
        ("without python.site the system's packages stay out", test_no_site_no_packages),
        ("a venv's python is the venv, its libraries found", test_venv),
        ("a venv with the system's site packages", test_venv_system_site),
        ("a changed environment refuses a given plan", test_environment_changed),
        ("a write root over the environment is refused", test_write_root_over_environment),
        ("python.preload names the environment's modules only", test_preload_not_found),
        ("python.preload: imported once, fresh state per run", test_preload_warm),
        ("as an unprivileged user", test_as_user),
    ]))
