#!/usr/bin/env python3
"""The worker's embedding (tools/embed.py --package): the package's modules loaded from
the text alone, and the rules the build enforces on them.

  - a module comes after the modules it imports; a circle, a module of a listed directory
    that is not listed, and a package import inside a function are refused, naming them;
  - run as the C side runs it, the text opens no file of the package (strace), and the
    user's code finds none of its modules in sys.modules;
  - the call worker's text has no inspection part and says so, without looking for it.
Prints TAP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workerlib as W  # noqa: E402
from workerlib import check  # noqa: E402

EMBED = os.path.join(W.ROOT, "tools", "embed.py")


def make_package(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return sorted(os.path.join(root, rel) for rel in files)


def embed(root, paths, entry=None):
    out = os.path.join(root, "out.c")
    argv = [sys.executable, EMBED, "--package", root] + (["--entry", entry] if entry else [])
    return subprocess.run(argv + [out, "sym"] + paths, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


def refused(files, words):
    with tempfile.TemporaryDirectory(prefix="govex-embed-test-") as d:
        p = embed(d, make_package(d, files))
        check(p.returncode != 0, "embed.py accepted it")
        for w in words:
            check(w in p.stderr, "the refusal does not say %r: %r" % (w, p.stderr))


def t_circle():
    refused({"pkg/__init__.py": "\n", "pkg/a.py": "from pkg import b\n",
             "pkg/b.py": "from pkg.c import x\n", "pkg/c.py": "from . import a\nx = 1\n"},
            ["circle", "pkg.a -> pkg.b -> pkg.c -> pkg.a"])


def t_unlisted():
    with tempfile.TemporaryDirectory(prefix="govex-embed-test-") as d:
        paths = make_package(d, {"pkg/__init__.py": "\n", "pkg/a.py": "x = 1\n"})
        with open(os.path.join(d, "pkg", "stray.py"), "w") as f:
            f.write("y = 2\n")
        p = embed(d, paths)
        check(p.returncode != 0 and "stray.py is not given" in p.stderr,
              "exit %d: %r" % (p.returncode, p.stderr))


def t_function_import():
    refused({"pkg/__init__.py": "\n", "pkg/a.py": "x = 1\n",
             "pkg/b.py": "def f():\n    from pkg import a\n    return a.x\n"},
            ["pkg/b.py:2", "inside a function"])


def t_order():
    # the modules run in an order where each follows what it imports, whatever the order
    # they are given in; the entry sees them all, and sys.modules is as it was after
    with tempfile.TemporaryDirectory(prefix="govex-embed-test-") as d:
        paths = make_package(d, {
            "pkg/__init__.py": "ORDER = []\n",
            "pkg/z.py": "from pkg import ORDER\nORDER.append('z')\n",
            "pkg/a.py": "from pkg import ORDER\nfrom pkg.m import y\nORDER.append('a')\n",
            "pkg/m.py": "from pkg import ORDER, z\nORDER.append('m')\ny = 2\n",
            "entry.py": "import sys\nfrom pkg import ORDER, a\n"
                        "def main():\n    print(ORDER, 'pkg' in sys.modules)\n"})
        entry = os.path.join(d, "entry.py")
        p = embed(d, [x for x in reversed(paths) if x != entry], entry)
        check(p.returncode == 0, "embed.py: %r" % p.stderr)
        text = W.embed.package_text(d, entry, [x for x in paths if x != entry])
        r = subprocess.run([sys.executable, "-I", "-S", "-c", text], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd=d)
        check(r.stdout == b"['z', 'm', 'a'] False\n", "ran %r (stderr %r)"
              % (r.stdout, r.stderr[-500:]))


def t_no_file_opened(py):
    # every file the process looks at while the call worker's text answers an inspect
    # request it cannot (it has no inspection part, and an import of it fails at once):
    # none under src/worker, none named like the package
    if not shutil.which("strace"):
        raise SkipCase("strace not installed")
    with tempfile.TemporaryDirectory(prefix="govex-embed-test-") as d:
        log = os.path.join(d, "trace")
        wrapper = os.path.join(d, "python")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec strace -f -qq -e trace=%%file -o %s %s "$@"\n' % (log, py))
        os.chmod(wrapper, 0o755)
        run = W.run_worker(wrapper, W.frame(W.inspect_request("x = 1\n")),
                           text=W.worker_text(inspection=False))
        W.expect_failure(run, "worker_failed", "bad_request")
        check(run.resp["message"] == "this worker has no inspection part",
              "message %r" % run.resp["message"])
        with open(log) as f:
            # (execve's argv is the text itself, which names the package)
            looked = [l for l in f.read().splitlines() if "execve(" not in l]
        check(len(looked) > 0, "strace saw nothing")
        bad = [l for l in looked if W.WORKER_ROOT in l or "govex_worker" in l]
        check(not bad, "the worker looked at its files: %r" % bad[:5])


def t_snippet_sees_no_module(py):
    code = "import sys\nsorted(m for m in sys.modules if 'govex' in m)\n"
    run = W.run_snippet(py, code)
    resp = run.resp
    check(resp.get("ok") is True and json.loads(json.dumps(resp.get("value"))) == [],
          "the snippet saw %r (stderr %r)" % (resp, run.stderr[-500:]))


class SkipCase(Exception):
    pass


def main():
    tap = W.Tap()
    for name, fn in (("a circle of imports is refused, naming it", t_circle),
                     ("a module not listed is refused", t_unlisted),
                     ("a package import inside a function is refused", t_function_import),
                     ("modules load after what they import; sys.modules restored",
                      t_order)):
        tap.result(name, W.run_case(fn))
    for label, py, reason in W.find_pythons() + [("py3.6", _py36(), "python3.6 not installed")]:
        for name, fn in (("the call worker opens no file of the package", t_no_file_opened),
                         ("a snippet finds no module of the worker's", t_snippet_sees_no_module)):
            name = "%s: %s" % (label, name)
            if py is None:
                tap.result(name, skip=reason)
                continue
            try:
                fn(py)
                tap.result(name)
            except SkipCase as e:
                tap.result(name, skip=str(e))
            except W.Check as e:
                tap.result(name, str(e))
            except BaseException:
                tap.result(name, traceback.format_exc())
    tap.emit()
    return 0


def _py36():
    import glob
    found = sorted(glob.glob("/root/.pyenv/versions/3.6.*/bin/python3.6"))
    return found[-1] if found else None


if __name__ == "__main__":
    sys.exit(main())
