#!/usr/bin/env python3
"""CPython's own standard-library tests inside strict (with subprocesses allowed and
larger limits) and outside (contract section 5): every module that passes outside
passes inside, unless ALLOWED names it with the control of the policy that explains the
difference.  Also catches the sandbox growing stranger (a missing user, home, locale,
/dev entry).  Needs an interpreter with CPython's `test` package (pyenv's and python.org
builds ship it; Debian's needs libpython3.X-testsuite)."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import govextest as g  # noqa: E402

# Fast modules (each well under a few seconds on a loaded machine), chosen for what a
# sandbox can break: users and homes, temporary files, locales, paths, shutil, file
# comparison, site and sysconfig, resources, pseudo-terminals.
MODULES = [
    "test_textwrap", "test_string", "test_base64", "test_binascii", "test_bisect",
    "test_heapq", "test_fractions", "test_difflib", "test_csv", "test_functools",
    "test_re", "test_tempfile", "test_getpass", "test_pwd", "test_grp", "test_locale",
    "test_posixpath", "test_glob", "test_platform", "test_configparser", "test_typing",
    "test_collections", "test_genericpath", "test_filecmp", "test_netrc", "test_site",
    "test_sysconfig", "test_resource", "test_fileinput", "test_pathlib", "test_shutil",
]

# module -> the control of the policy that makes it differ, and how (seen on Debian 12,
# CPython 3.11).  Add an entry only with the reason.
ALLOWED = {
    "test_site": "python.site false: the interpreter runs with -S, and the module skips "
                 "itself when loaded under -S",
    "test_resource": "limits.file_size_bytes: RLIMIT_FSIZE is the policy's bound, not "
                     "infinity (test_fsize_ismax), and the hard limits cannot be raised",
    "test_pathlib": "network deny: socket(AF_UNIX) is refused too (test_is_socket_true)",
    "test_shutil": "writable places (the workdir, /tmp) are mounted noexec: a file made "
                   "there is never executable, so shutil.which finds none (TestWhich)",
}

RUNNER = r"""
import io, json, sys, unittest, warnings
warnings.simplefilter("ignore")
out = {}
for name in sys.argv[1:]:
    stream = io.StringIO()
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName("test." + name)
        res = unittest.TextTestRunner(stream=stream, verbosity=0).run(suite)
        out[name] = {"ok": res.wasSuccessful(), "run": res.testsRun,
                     "failed": [str(t) for t, _ in res.failures + res.errors][:20],
                     "first": ((res.failures + res.errors)[0][1][-1500:]
                               if res.failures or res.errors else "")}
    except BaseException as e:  # an import error, a SystemExit of a module
        out[name] = {"ok": False, "run": 0, "failed": ["load: %r" % (e,)], "first": ""}
print("@@RESULT@@" + json.dumps(out))
"""


def _interpreter():
    """An interpreter with CPython's test package, or None."""
    cands = [sys.executable, shutil.which("python3"), "/usr/bin/python3"]
    for c in cands:
        if not c or not os.path.exists(c):
            continue
        c = os.path.realpath(c)
        r = subprocess.run([c, "-I", "-c", "import test.support"], capture_output=True)
        if r.returncode == 0:
            return c
    return None


def _parse(text):
    for line in text.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@"):])
    raise g.Failure("no result line in the runner's output:\n%s" % text[-2000:])


def test_stdlib_inside_and_outside(t):
    if not g.backend_available("restricted"):
        raise g.Skip("no restricted backend here")
    py = _interpreter()
    if py is None:
        raise g.Skip("no interpreter with CPython's test package (libpython3-testsuite)")
    runner = t.write("runner.py", RUNNER)
    # outside: the same interpreter, isolated, in a scratch directory
    scratch = t.path("outside")
    os.mkdir(scratch)
    t0 = time.monotonic()
    r = subprocess.run([py, "-I", runner] + MODULES, cwd=scratch, capture_output=True,
                       timeout=300, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                                         "HOME": scratch})
    outside = _parse(r.stdout.decode("utf-8", "replace"))
    t_out = time.monotonic() - t0
    # inside: strict, with subprocesses (tests start the interpreter) and larger limits
    pol = t.policy(base="strict", subprocess="allow",
                   python={"interpreter": py, "site": False},
                   limits={"wall_ms": 240000, "cpu_ms": 240000, "memory_bytes": 2 << 30,
                           "processes": 256, "open_files": 1024,
                           "file_size_bytes": 256 << 20, "stdout_bytes": 4 << 20,
                           "stderr_bytes": 4 << 20, "code_bytes": 1 << 20})
    t0 = time.monotonic()
    code = "import sys; sys.argv = ['runner'] + %r\n" % (MODULES,) + RUNNER
    r = t.run(["run", "--policy", pol, "--json", "-c", code], timeout=300)
    doc = r.result()
    inside = _parse(doc.get("stdout") or "")
    t_in = time.monotonic() - t0
    print("# outside %.1f s, inside %.1f s" % (t_out, t_in))
    bad = []
    for m in MODULES:
        o, i = outside.get(m, {}), inside.get(m, {})
        print("# %-20s outside %s (%s run), inside %s (%s run)"
              % (m, "ok" if o.get("ok") else "FAIL", o.get("run"),
                 "ok" if i.get("ok") else "FAIL", i.get("run")))
        if o.get("ok") and not i.get("ok") and m not in ALLOWED:
            bad.append("%s: passes outside, fails inside: %r\n%s"
                       % (m, i.get("failed"), i.get("first")))
    passing = [m for m in MODULES if outside.get(m, {}).get("ok")]
    g.check(len(passing) >= len(MODULES) // 2,
            "fewer than half the modules pass even outside: %r" % outside)
    g.check(not bad, "\n".join(bad))


if __name__ == "__main__":
    sys.exit(g.main([
        ("CPython stdlib tests pass inside strict (subprocess allowed) as outside",
         test_stdlib_inside_and_outside),
    ]))
