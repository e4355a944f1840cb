"""Shared helpers for the govex call-mode tests (tests/call/test_*.py).

Stdlib only.  Builds on tests/integration/govextest.py (process handling, TAP driver,
per-test temporary directories); adds what calls need: writing modules, running
`govex call`/`plan`/`inspect`, checking a govex.result/v1 document of a call against the
contract (status vocabulary, exit status, value null unless success, stdout/stderr
the function's, sanitized diagnostics), policies per interpreter, a directory the sandboxed
worker can write to (as root, the restricted backend runs code as a per-run uid), and a hard
per-test timeout.
"""

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import govextest as gt  # noqa: E402
from govextest import Failure, Skip, check, diag, eq  # noqa: E402,F401

STATUSES = ("success", "execution_failed", "timeout", "cancelled", "resource_limit",
            "output_limit", "invalid_input", "policy_refused", "worker_failed",
            "binding_failed", "result_invalid", "source_mismatch")
TERMINATIONS = ("exited", "signaled", "timeout", "cancelled", "memory_limit", "cpu_limit",
                "output_limit", "refused", "launch_failed")
BACKENDS = ("strict", "trusted")   # presets: restricted sandbox, plain controlled backend

TEST_TIMEOUT = 60                  # seconds any one test may take, all its processes
CALL_TIMEOUT = 25.0                # seconds any one govex invocation may take

# Words that must never appear in a call's result outside the function's own output and
# the exception diagnostic's traceback of the user's code (contract 2): a traceback of
# the worker or govex.
LEAK_WORDS = ("Traceback (most recent call last)", 'File "', "worker.py")
# ... and never anywhere: the worker's own frames (python -c TEXT)
WORKER_FRAME_WORDS = ('File "<string>"', "worker.py")
# A sanitized build (tests/run-all) reports memory errors, leaks and UB on stderr.
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")


# ---------------------------------------------------------------- test registration

def with_timeout(fn, seconds=TEST_TIMEOUT):
    """FN(t) run under a SIGALRM hard timeout: an overrun fails the test (the govex
    process running at that moment has its group killed by govextest.run)."""
    def wrapped(t):
        def on_alarm(signum, frame):
            raise Failure("test exceeded its hard timeout of %d s" % seconds)
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(seconds)
        try:
            fn(t)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return wrapped


# ---------------------------------------------------------------- Hypothesis

SYSTEM_PYTHON = "/usr/bin/python3"   # Debian's python3-hypothesis is importable by it only


def have_hypothesis():
    # Hypothesis keeps a cache directory (even with database=None): never in the tree
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                          os.path.join(tempfile.gettempdir(), "govex-call-hypothesis"))
    try:
        import hypothesis  # noqa: F401
        return True
    except ImportError:
        return False


def hypothesis_or_reexec(script):
    """When this interpreter lacks Hypothesis and SYSTEM_PYTHON has it, run SCRIPT (a
    property suite's __file__) again under SYSTEM_PYTHON, once (GOVEX_CALL_HYPOTHESIS_REEXEC);
    otherwise return, and the suite's tests skip saying why (need_hypothesis)."""
    flag = "GOVEX_CALL_HYPOTHESIS_REEXEC"
    if have_hypothesis() or os.environ.get(flag):
        return
    if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
            and os.access(SYSTEM_PYTHON, os.X_OK)
            and subprocess.call([SYSTEM_PYTHON, "-c", "import hypothesis"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0):
        sys.stdout.flush()
        env = dict(os.environ)
        env[flag] = "1"
        os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(script)] + sys.argv[1:],
                  env)


def need_hypothesis():
    """Skips the test when Hypothesis is not importable here."""
    if not have_hypothesis():
        raise Skip("hypothesis is not importable by %s nor by %s (apt-get install "
                   "python3-hypothesis)" % (sys.executable, SYSTEM_PYTHON))


class Suite:
    """Collects (name, fn) pairs; main() runs them with the TAP driver."""

    def __init__(self):
        self.tests = []

    def test(self, name=None, seconds=TEST_TIMEOUT):
        def deco(fn):
            self.tests.append((name or fn.__name__.replace("_", " "),
                               with_timeout(fn, seconds)))
            return fn
        return deco

    def add(self, name, fn, seconds=TEST_TIMEOUT):
        self.tests.append((name, with_timeout(fn, seconds)))

    def both(self, name):
        """A test fn(t, preset) added once for each of BACKENDS, as "NAME [preset]"."""
        def deco(fn):
            for b in BACKENDS:
                self.add("%s [%s]" % (name, b), (lambda b: lambda t: fn(t, b))(b))
            return fn
        return deco

    def main(self):
        return gt.main(self.tests)


# ---------------------------------------------------------------- files

def module(t, name, src):
    """Writes dedented Python source SRC to t.tmp/NAME; returns its path."""
    return t.write(name, textwrap.dedent(src).lstrip("\n"))


def notebook(t, name, cells):
    """Writes an nbformat-4 notebook; CELLS is a list of (cell_type, source text)."""
    out = []
    for kind, src in cells:
        c = {"cell_type": kind, "metadata": {},
             "source": textwrap.dedent(src).lstrip("\n").splitlines(True)}
        if kind == "code":
            c["outputs"] = []
            c["execution_count"] = None
        out.append(c)
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                      "display_name": "Python 3"}},
          "cells": out}
    return t.write_json(name, nb, indent=1)


def shared_dir(t, name="shared"):
    """A directory under t.tmp that code in either backend can write (as root the
    restricted backend runs code as a per-run uid, so the directory is world-writable and
    t.tmp searchable)."""
    os.chmod(t.tmp, 0o711)
    d = t.path(name)
    os.mkdir(d)
    os.chmod(d, 0o777)
    return d


def policy(t, base="strict", name=None, writable=None, **changes):
    """Preset BASE with CHANGES merged one level deep (limits={...}, python={...}, ...),
    plus WRITABLE (a directory) as a filesystem write root; returns the file's path."""
    pol = gt.preset(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(pol.get(k), dict):
            pol[k] = dict(pol[k], **v)
        else:
            pol[k] = v
    if writable is not None:
        fs = dict(pol["filesystem"])
        fs["write"] = sorted(set(fs.get("write") or []) | {writable})
        pol["filesystem"] = fs
    name = name or "policy-%s-%d.json" % (base, len(os.listdir(t.tmp)))
    return t.write_json(name, pol)


def backend_args(t, preset, writable=None, **changes):
    """govex arguments selecting PRESET ("strict": restricted sandbox, "trusted": plain
    controlled backend), optionally with a write root or other policy changes."""
    if writable is None and not changes:
        return ["--preset", preset]
    return ["--policy", policy(t, base=preset, writable=writable, **changes)]


# ---------------------------------------------------------------- running govex

def call(t, target, args=None, *, opts=(), json_out=True, timeout_ms=None, plan=None,
         hard=CALL_TIMEOUT, **kw):
    """`govex call [OPTS] [--json] [--timeout-ms N] [--plan PLAN] TARGET --args ARGS`.

    ARGS: a str is passed verbatim, anything else as json.dumps(ARGS); None = no --args.
    """
    argv = ["call"] + list(opts)
    if json_out:
        argv.append("--json")
    if timeout_ms is not None:
        argv += ["--timeout-ms", str(timeout_ms)]
    if plan is not None:
        argv += ["--plan", plan]
    if target is not None:
        argv.append(target)
    if args is not None:
        argv += ["--args", args if isinstance(args, str) else json.dumps(args)]
    return t.run(argv, timeout=hard, **kw)


def plan(t, target, opts=(), out=None):
    """`govex plan OPTS TARGET`; returns (Proc, path of the plan file or None)."""
    r = t.run(["plan"] + list(opts) + [target], timeout=CALL_TIMEOUT)
    if r.returncode != 0:
        return r, None
    p = out or t.path("plan-%d.json" % len(os.listdir(t.tmp)))
    with open(p, "wb") as f:
        f.write(r.stdout)
    return r, p


def inspect(t, target, opts=()):
    """`govex inspect --json OPTS TARGET`, expected to succeed; the parsed document."""
    r = t.run(["inspect"] + list(opts) + ["--json", target], timeout=CALL_TIMEOUT)
    r.expect_rc(0)
    doc = r.json()
    eq(doc.get("version"), "govex.inspection/v1", "inspection version")
    return doc, r


def function_entry(doc, name):
    for f in doc.get("functions") or []:
        if f.get("name") == name:
            return f
    raise Failure("inspection has no function %r: %r"
                  % (name, [f.get("name") for f in doc.get("functions") or []]))


def expected_rc(doc):
    """The exit status `govex call` documents for a result."""
    st, term = doc["status"], doc["termination"]
    if st == "success":
        return 0
    if st == "timeout":
        return gt.EXIT_TIMEOUT
    if st in ("invalid_input", "policy_refused", "binding_failed", "source_mismatch"):
        return gt.EXIT_REFUSED
    if st == "cancelled":
        return 128 + signal.SIGTERM     # the tests cancel with SIGTERM only
    if term in ("signaled", "cpu_limit", "memory_limit") and isinstance(doc["signal"], int):
        return 128 + doc["signal"]
    if term == "launch_failed":
        return gt.EXIT_REFUSED
    return 1


def check_result(t, r, status, code=None, rc=None, path_ok=False):
    """Checks Proc R holds one call result with STATUS (and a diagnostic CODE), the
    contract every call result keeps, and the documented exit status.  Returns the doc.
    PATH_OK: the test's directory may appear (a CLI refusal naming a file the caller
    gave it on the command line)."""
    if r.hard_timeout:
        raise Failure("govex did not finish within the harness timeout\n" + r.describe())
    doc = r.result()
    if doc["status"] != status:
        raise Failure("status: expected %r, got %r (diagnostics %r)\n%s"
                      % (status, doc["status"], doc.get("diagnostics"), r.describe()))
    check(doc["termination"] in TERMINATIONS, "unknown termination %r" % doc["termination"])
    # a call's output is its result's (contract 2: it was kept out before)
    check(isinstance(doc["stdout"], str) and isinstance(doc["stderr"], str),
          "stdout/stderr are text: %r" % (doc,))
    check(isinstance(doc["stdout_bytes"], int) and isinstance(doc["stderr_bytes"], int),
          "stdout_bytes/stderr_bytes are integers: %r" % (doc,))
    if status != "success":
        eq(doc["value"], None, "value of a %s result" % status)
    ds = doc["diagnostics"]
    check(isinstance(ds, list), "diagnostics is a list")
    for d in ds:
        check(isinstance(d, dict) and isinstance(d.get("code"), str)
              and isinstance(d.get("message"), str),
              "diagnostic without code/message: %r" % (d,))
        if "exception_type" in d:
            et = d["exception_type"]
            check(et is None or (isinstance(et, str) and len(et) <= 128 and "\n" not in et),
                  "exception_type is a bare type name: %r" % (et,))
    if status != "success":
        check(ds, "a %s result carries a diagnostic" % status)
    if code is not None:
        diag(doc, code)
    for w in SANITIZER_WORDS:
        check(w not in r.err, "govex's stderr has a sanitizer report:\n%s" % r.err[-3000:])
    text = r.out
    for w in WORKER_FRAME_WORDS:
        check(w not in text, "result shows the worker's frames %r:\n%s" % (w, text[:2000]))
    bare = json.loads(json.dumps(doc))
    bare["stdout"] = bare["stderr"] = ""
    for d in bare["diagnostics"]:
        if isinstance(d.get("exception"), dict):
            d["exception"]["traceback"] = ""
    bare_text = json.dumps(bare)
    for w in LEAK_WORDS:
        check(w not in bare_text, "result leaks %r:\n%s" % (w, bare_text[:2000]))
    check(path_ok or t.tmp not in text, "result leaks the host path %r:\n%s" % (t.tmp, text[:2000]))
    want = rc if rc is not None else expected_rc(doc)
    r.expect_rc(want)
    return doc


def value_of(t, r):
    """The value of a successful --json call."""
    return check_result(t, r, "success")["value"]


def exact(a, b):
    """JSON equality that also tells bool, int and float apart (and -0.0 from 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and (str(a) == str(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(exact(a[k], b[k]) for k in a)
    return a == b


# ---------------------------------------------------------------- the worker's response fd

# Finds the response descriptor from inside the worker: not 0/1/2, a pipe, write-only
# (the worker moves it away from fd 3 and keeps it open).
FIND_RESPONSE_FD = '''
def _response_fds():
    import os, stat, fcntl
    out = []
    for x in os.listdir("/proc/self/fd"):
        fd = int(x)
        if fd <= 2:
            continue
        try:
            st = os.fstat(fd)
            fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if stat.S_ISFIFO(st.st_mode) and fl & os.O_ACCMODE == os.O_WRONLY:
            out.append(fd)
    return out
'''


# ---------------------------------------------------------------- interpreters

PYENV = "/root/.pyenv/versions"


def interpreters(minors=(8, 9, 10, 11, 12, 13)):
    """[(label, path or None)] for python3.X under pyenv, X in MINORS."""
    out = []
    for m in minors:
        found = None
        try:
            versions = sorted(os.listdir(PYENV))
        except OSError:
            versions = []
        for v in versions:
            if v.startswith("3.%d." % m):
                p = os.path.join(PYENV, v, "bin", "python3.%d" % m)
                if os.path.isfile(p) and os.access(p, os.X_OK):
                    found = p
        out.append(("python3.%d" % m, found))
    return out


def is_executable(p):
    try:
        return stat.S_ISREG(os.stat(p).st_mode) and os.access(p, os.X_OK)
    except OSError:
        return False
