#!/usr/bin/env python3
"""Inspection documents stay byte-identical: every module (and the notebook) under
tests/worker/golden/ is inspected and compared with the document stored next to it, the
exact stdout of `govex inspect --json` of the build the files were made with.

  - through this build's govex (GOVEX, else build/govex): the bytes of stdout;
  - through the worker alone (src/worker as the C side embeds it), on every Python from
    3.8 to 3.13 found here plus /usr/bin/python3: the canonical text of the document.

and the inspection worker's text (src/worker/inspection/ and worker.py) still fits the one
argument of `python -c` it is passed as.

The *_py310.py modules use syntax of Python 3.10 and later; older ones skip them.
A deliberate change of the analysis regenerates the documents:
    for f in tests/worker/golden/*.py tests/worker/golden/*.ipynb; do
        build/govex inspect --json "$f" > "${f%.*}.json"; done
Prints TAP."""
import concurrent.futures
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workerlib as W  # noqa: E402
from workerlib import check  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
GOVEX = os.environ.get("GOVEX") or os.path.join(W.ROOT, "build", "govex")
NEWER_SYNTAX = {"py3.8", "py3.9"}  # versions that cannot parse *_py310.py


def fixtures():
    return sorted(glob.glob(os.path.join(GOLDEN, "*.py"))
                  + glob.glob(os.path.join(GOLDEN, "*.ipynb")))


def golden_of(path):
    with open(os.path.splitext(path)[0] + ".json", "rb") as f:
        return f.read()


def through_govex(path):
    p = subprocess.run([GOVEX, "inspect", "--json", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, "govex inspect exited %d: %r" % (p.returncode, p.stderr[-500:]))
    want = golden_of(path)
    check(p.stdout == want, "the document differs from %s.json:\n got %r\nwant %r"
          % (os.path.splitext(os.path.basename(path))[0], p.stdout[:3000], want[:3000]))


def through_worker(py, path):
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    resp = W.inspect(py, source, module=name[:-3], filename=name)
    check(resp.get("ok") is True, "inspection failed: %r" % (resp,))
    got = (W.canon(resp["inspection"]) + "\n").encode("utf-8")
    want = golden_of(path)
    check(got == want, "the document differs from %s.json:\n got %r\nwant %r"
          % (name[:-3], got[:3000], want[:3000]))


def inspection_worker_fits():
    """The inspection worker's text (the inspection part, a newline, worker.py) is one
    argv string of `python -c`: Linux refuses one over 128 KiB (MAX_ARG_STRLEN) and the
    runtime a request's code at 128 KiB - 1."""
    n = len(W.worker_text().encode("utf-8"))
    check(n < 128 * 1024 - 1, "the inspection worker is %d bytes" % n)
    for path in W.inspection_paths():
        with open(path, "rb") as f:
            data = f.read()
        check(data.endswith(b"\n") and b"\0" not in data,
              "%s: no final newline, or a NUL byte" % os.path.basename(path))


def main():
    tap = W.Tap()
    tap.result("the inspection worker's text fits one argument",
               W.run_case(inspection_worker_fits))
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) \
            as pool:
        for path in fixtures():
            name = "govex inspect --json %s" % os.path.basename(path)
            if not os.access(GOVEX, os.X_OK):
                jobs.append((name, None, "no govex at %s" % GOVEX))
            else:
                jobs.append((name, pool.submit(W.run_case, through_govex, path), None))
        for label, py, reason in W.find_pythons():
            for path in fixtures():
                base = os.path.basename(path)
                if not base.endswith(".py"):
                    continue  # a notebook's code cells are joined by the C side
                name = "%s: worker inspects %s" % (label, base)
                if py is None:
                    jobs.append((name, None, reason))
                elif base.endswith("_py310.py") and label in NEWER_SYNTAX:
                    jobs.append((name, None, "syntax of python 3.10"))
                else:
                    jobs.append((name, pool.submit(W.run_case, through_worker, py, path), None))
        for name, fut, reason in jobs:
            if fut is None:
                tap.result(name, skip=reason)
            else:
                tap.result(name, fut.result())
    tap.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
