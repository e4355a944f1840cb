#!/usr/bin/env python3
"""The Python binding (import govex, src/python) under every CPython of the host.

Run as a suite (no GOVEX_BINDING_CHILD in the environment), this file runs itself once
per interpreter, each importing the package the build made (GOVEX_BUILD/src/python/govex,
the one _govex.abi3.so for all), and prints their cases as one TAP stream, each named
after its interpreter: the pyenv versions (PYENV_ROOT or ~/.pyenv) and /usr/bin/python3.
An interpreter older than 3.6 is a skip, saying so.  In a sanitized build the child gets
the sanitizer runtimes preloaded (CPython itself is not instrumented).

The whole case list runs on the oldest and the newest pyenv version and on
/usr/bin/python3 (Debian's, what a package is for), one after another; the versions
between get the import and one run (the SMOKE cases), all at once: the C file is the
same abi3 build for all, and CI's time is short.  GOVEX_BINDING_FULL=1: the whole list
on every interpreter.

As a child it runs the cases below against the runtime: run (success, exception,
timeout, refusal), call, exec, plan and execute, backends, cancellation from another
thread and from a signal handler, live output, an exception in on_output, a signal's
exception at the edges of the wait for a run, and 200 runs (20 on the pyenv versions)
with fd count, the callback's references and RSS checked.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("GOVEX_BUILD") or os.path.join(REPO, "build")
PKG_DIR = os.path.join(BUILD, "src", "python")
CHILD = os.environ.get("GOVEX_BINDING_CHILD") == "1"
CHILD_TIMEOUT = 600


# ------------------------------------------------------------------ the driver

def interpreters():
    """[(label, path)]: the pyenv versions, oldest first, then /usr/bin/python3."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = []
    for d in glob.glob(os.path.join(root, "versions", "*")):
        exe = os.path.join(d, "bin", "python")
        if os.path.isfile(exe) and os.access(exe, os.X_OK):
            name = os.path.basename(d)
            key = tuple(int(x) for x in re.findall(r"\d+", name)[:3])
            found.append((key, "pyenv " + name, exe))
    out = [(label, exe) for _, label, exe in sorted(found)]
    if os.access("/usr/bin/python3", os.X_OK):
        out.append(("/usr/bin/python3", "/usr/bin/python3"))
    return out


def interp_version(exe):
    try:
        r = subprocess.run([exe, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    text = r.stdout.decode("utf-8", "replace").strip()
    if r.returncode != 0 or not re.match(r"^\d+\.\d+\.\d+$", text):
        return None, text
    return tuple(int(x) for x in text.split(".")), text


def sanitizer_preload(lib):
    """The sanitizer runtimes lib needs, to preload into an uninstrumented python."""
    try:
        out = subprocess.run(["ldd", lib], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs = []
    for name in ("libasan", "libubsan"):
        m = re.search(r"^\s*(%s\.so[.\d]*) => (\S+)" % name, out, re.M)
        if m:
            libs.append(m.group(2))
    return libs


def driver():
    ext = os.path.join(PKG_DIR, "govex", "_govex.abi3.so")
    if not os.path.exists(ext):
        print("1..0 # SKIP feature:python the Python binding is not built here (no %s: "
              "-Dpython, python3-dev)" % ext)
        return 0
    env = dict(os.environ, GOVEX_BINDING_CHILD="1", PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = PKG_DIR
    env.pop("PYTHONHOME", None)
    preload = sanitizer_preload(ext)
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
        # CPython frees little at exit; the library's leaks are the unit suites' to find
        env["ASAN_OPTIONS"] = ("detect_leaks=0:abort_on_error=0:verify_asan_link_order=0:"
                               "quarantine_size_mb=16")
    n = 0

    def emit(ok, desc, extra=()):
        nonlocal n
        n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, desc))
        for line in extra:
            print("#   " + line)
        sys.stdout.flush()

    interps = interpreters()
    if not interps:
        print("1..0 # SKIP no Python interpreter found")
        return 0
    # (label, exe, version) of those the binding supports; the others are skips
    runnable = []
    for label, exe in interps:
        ver, text = interp_version(exe)
        if ver is None:
            emit(False, "[%s] runs" % label, text.splitlines()[-5:])
            continue
        label = "%s %s" % (label, text) if label.startswith("/") else label
        if ver < (3, 6):
            n += 1
            print("ok %d - [%s] the binding # SKIP the binding needs CPython 3.6 or later"
                  % (n, label))
            continue
        runnable.append((label, exe, ver))
    # The whole case list on the oldest and the newest pyenv version and on Debian's
    # python3 (200 runs in the leak case there, 20 on the other two: descriptors and
    # references are exact at any count); on the others the import and one run (SMOKE),
    # all at once (GOVEX_BINDING_FULL=1: everything on all).
    pyenv = [r for r in runnable if r[0].startswith("pyenv ")]
    full = {r[1] for r in runnable if not r[0].startswith("pyenv ")}
    if pyenv:
        full |= {min(pyenv, key=lambda r: r[2])[1], max(pyenv, key=lambda r: r[2])[1]}
    if os.environ.get("GOVEX_BINDING_FULL") == "1":
        full = {r[1] for r in runnable}
    children = []
    for label, exe, _ in runnable:
        cenv = dict(env, GOVEX_BINDING_LEAK_RUNS="200" if exe == "/usr/bin/python3" else "20")
        if exe not in full:
            cenv["GOVEX_BINDING_SMOKE"] = "1"
        children.append((label, exe, cenv))

    def start(label, exe, cenv):
        return (label, time.monotonic(), subprocess.Popen(
            [exe, os.path.abspath(__file__)], env=cenv, cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True))

    def finish(label, t0, p):
        nonlocal n
        try:
            out, err = p.communicate(timeout=CHILD_TIMEOUT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            rc = "timeout"
        cases = 0
        for line in out.decode("utf-8", "replace").splitlines():
            m = re.match(r"^(not ok|ok)\s+\d+\s*-?\s*(.*)$", line)
            if m:
                cases += 1
                n += 1
                print("%s %d - [%s] %s" % (m.group(1), n, label, m.group(2)))
            elif line.startswith("#"):
                print(line)
        sys.stdout.flush()
        errtail = err.decode("utf-8", "replace").splitlines()[-20:]
        if rc != 0 or cases == 0:
            emit(False, "[%s] the child exited with %s after %d cases" % (label, rc, cases),
                 errtail)
        else:
            print("# [%s] %d cases in %.1f s" % (label, cases, time.monotonic() - t0))

    # the smoke runs together (they time nothing), then the whole lists one at a time
    # (they assert wall-clock bounds)
    for started in [start(*c) for c in children if "GOVEX_BINDING_SMOKE" in c[2]]:
        finish(*started)
    for c in children:
        if "GOVEX_BINDING_SMOKE" not in c[2]:
            finish(*start(*c))
    print("1..%d" % n)
    return 0


# ------------------------------------------------------------------ the cases

class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s: expected %r, got %r" % (what, expected, actual))


CASES = []
SMOKE = []  # the cases of an interpreter that gets the import and one run


def smoke(fn):
    SMOKE.append(fn)
    return fn


def case(fn):
    CASES.append(fn)
    return fn


class Ctx:
    govex = None
    rt = None            # a runtime of POLICY
    policy = "strict"
    restricted = False


C = Ctx()


def setup():
    import govex
    C.govex = govex
    strict = govex.Runtime("strict")
    C.restricted = any(b.name == "restricted" and b.available for b in strict.backends())
    if C.restricted:
        C.rt = strict
    else:
        strict.close()
        C.policy = "trusted"
        C.rt = govex.Runtime("trusted")
    print("# python %s, libgovex %s, policy %s" % (sys.version.split()[0], govex.__version__,
                                                    C.policy))


@smoke
@case
def test_import_from_build():
    """the package and its one abi3 extension come from the build directory"""
    g = C.govex
    ext = os.path.realpath(g._govex.__file__)
    eq(os.path.basename(ext), "_govex.abi3.so", "extension file")
    eq(os.path.dirname(ext), os.path.realpath(os.path.join(PKG_DIR, "govex")), "from")
    with open(os.path.join(REPO, "include", "govex.h")) as f:
        want = re.search(r'#define GOVEX_VERSION_STRING "(.*)"', f.read()).group(1)
    eq(g.__version__, want, "version")
    eq(g._govex.RESULT_VERSION, "govex.result/v1", "result contract")


@smoke
@case
def test_run_success():
    """run(): success, exit code 0, stdout as bytes and text, the JSON document"""
    g = C.govex
    r = C.rt.run("import sys\nprint(6 * 7)\nprint('é', file=sys.stderr)\n")
    eq(r.status, g.Status.SUCCESS, "status")
    check(r.status == "success" and r.ok, "status compares as a str")
    eq(r.exit_code, 0, "exit_code")
    eq(r.stdout, b"42\n", "stdout")
    eq(r.stdout_text, "42\n", "stdout_text")
    eq(r.stderr, "é\n".encode(), "stderr")
    doc = json.loads(r.json)
    eq(doc["version"], "govex.result/v1", "json version")
    eq(doc["status"], "success", "json status")
    eq(r.exit_status, 0, "exit_status")
    check(r.policy_digest == C.rt.policy_digest, "policy digest %r" % r.policy_digest)
    if C.restricted:
        eq(r.backend, "restricted", "backend")


@case
def test_run_exception():
    """run(): an exception is execution_failed with exit code 1 and the traceback"""
    r = C.rt.run("print('before')\n1/0\n")
    eq(r.status, C.govex.Status.EXECUTION_FAILED, "status")
    eq(r.exit_code, 1, "exit_code")
    eq(r.stdout, b"before\n", "stdout")
    check("ZeroDivisionError" in r.stderr_text, "traceback: %r" % r.stderr_text)


@case
def test_run_timeout():
    """run(): a loop past limits.wall_ms ends with status timeout, soon"""
    t0 = time.monotonic()
    r = C.rt.run("while True: pass", limits={"wall_ms": 300})
    took = time.monotonic() - t0
    eq(r.status, C.govex.Status.TIMEOUT, "status")
    check([d.code for d in r.diagnostics] == ["timeout"], "diagnostics %r" % r.diagnostics)
    eq(r.exit_status, 124, "exit_status")
    check(took < 5, "took %.2f s" % took)


@case
def test_refusals():
    """a need the policy denies is policy_refused; a limit above it invalid_input"""
    g = C.govex
    with g.Runtime("strict") as rt:
        r = rt.run("print(1)", needs=g.NEED_NETWORK)
        eq(r.status, g.Status.POLICY_REFUSED, "status")
        check("network" in r.summary, "summary %r" % r.summary)
        eq(r.termination, "refused", "termination")
        r = rt.run("print(1)", limits={"wall_ms": 10 ** 9})
        eq(r.status, g.Status.INVALID_INPUT, "status of a limit above the policy's")
        eq(r.diagnostics[0].code, "limit_exceeds_policy", "diagnostic")
        eq(r.diagnostics[0].data.get("limit"), "wall_ms", "diagnostic's limit")


@case
def test_errors():
    """API errors are govex.Error subclasses with the library's name and message"""
    g = C.govex
    try:
        g.Runtime("no-such-preset")
        raise AssertionError("an unknown preset made a runtime")
    except g.PresetError as e:
        eq(e.name, "GOVEX_EPRESET", "name")
        check(isinstance(e, g.Error) and isinstance(e, ValueError), "hierarchy")
        check("no-such-preset" in e.message, "message %r" % e.message)
    try:
        g.Runtime({"version": "govex.policy/v1", "limits": {"wall_ms": 0}})
        raise AssertionError("wall_ms 0 made a runtime")
    except g.PolicyError as e:
        eq(e.name, "GOVEX_EPOLICY", "name")
        check("limits.wall_ms" in e.message, "message %r" % e.message)
    try:
        g.Runtime("{not json")
        raise AssertionError("malformed JSON made a runtime")
    except g.Error as e:
        check(e.name in ("GOVEX_EJSON", "GOVEX_EPOLICY"), "name %r" % e.name)
    try:
        C.rt.run("x", limits={"wall_sec": 1})
        raise AssertionError("an unknown limit was accepted")
    except ValueError as e:
        check("wall_sec" in str(e), str(e))
    rt = g.Runtime("trusted")
    rt.close()
    rt.close()
    try:
        rt.run("print(1)")
        raise AssertionError("a closed runtime ran")
    except ValueError:
        pass


MODULE = ("def add(a: int, b: int) -> int:\n"
          "    return a + b\n\n\n"
          "def boom(n: int) -> int:\n"
          "    raise ValueError('no %d' % n)\n")


@case
def test_call():
    """call(): a function's JSON value; positional args named from the inspection"""
    g = C.govex
    r = C.rt.call(MODULE, "add", kwargs={"a": 2, "b": 3})
    eq((r.status, r.value), (g.Status.SUCCESS, 5), "add(a=2, b=3)")
    r = C.rt.call(MODULE, "add", [40], {"b": 2})
    eq((r.status, r.value), (g.Status.SUCCESS, 42), "add(40, b=2)")
    r = C.rt.call(MODULE, "boom", kwargs={"n": 7})
    eq(r.status, g.Status.EXECUTION_FAILED, "status of a raising function")
    exc = [d for d in r.diagnostics if d.code == "exception"]
    check(exc and "no 7" in exc[0].message, "diagnostics %r" % r.diagnostics)
    r = C.rt.call(MODULE, "add", kwargs={"a": "x", "b": 1})
    eq(r.status, g.Status.INVALID_INPUT, "status of a str for an int")
    try:
        C.rt.call(MODULE, "add", [1, 2, 3])
        raise AssertionError("three positional arguments for two parameters")
    except TypeError:
        pass


@case
def test_call_path():
    """call() of a file by path (examples/mod.py)"""
    r = C.rt.call(os.path.join(REPO, "examples", "mod.py"), "add", kwargs={"a": 1, "b": 2})
    eq((r.status, r.value), ("success", 3), "examples/mod.py add")


@case
def test_exec():
    """exec(): an executable, argv first, with stdin"""
    g = C.govex
    r = C.rt.exec(["/bin/echo", "hi"])
    eq((r.status, r.stdout), (g.Status.SUCCESS, b"hi\n"), "echo hi")
    r = C.rt.exec(["cat"], stdin=b"in\0put")
    eq(r.stdout, b"in\0put", "cat of stdin")
    for bad in ("echo hi", []):
        try:
            C.rt.exec(bad)
            raise AssertionError("exec(%r) accepted" % (bad,))
        except (TypeError, ValueError):
            pass


@case
def test_plan_execute():
    """plan() gives the canonical plan and its digest; execute() runs exactly it"""
    g = C.govex
    p = C.rt.plan("print('planned')", stdin="x")
    check(p.ok and p.refusal is None, "refused: %r" % p)
    check(re.match(r"^sha256:[0-9a-f]{64}$", p.digest), "digest %r" % p.digest)
    doc = json.loads(p.json)
    eq(doc.get("version"), "govex.plan/v1", "plan version")
    r = C.rt.execute(p)
    eq((r.status, r.stdout), (g.Status.SUCCESS, b"planned\n"), "execute")
    eq(r.plan_digest, p.digest, "the result's plan digest")
    r2 = C.rt.execute(p)
    eq(r2.stdout, b"planned\n", "a plan runs again")
    refused = C.rt.plan("print(1)", limits={"wall_ms": 10 ** 9})
    check(not refused.ok and refused.json is None, "a refused plan: %r" % refused)
    eq(C.rt.execute(refused).status, g.Status.INVALID_INPUT, "execute of a refused plan")
    pc = C.rt.plan_call(MODULE, "add", kwargs={"a": 1, "b": 1})
    eq(pc.function, "add", "the call plan's function")
    eq(C.rt.execute(pc).value, 2, "execute of a call plan")
    pe = C.rt.plan_exec(["/bin/echo", "x"])
    eq(C.rt.execute(pe).stdout, b"x\n", "execute of an exec plan")
    with g.Runtime("trusted") as other:
        r = other.execute(p)
        eq(r.status, g.Status.POLICY_REFUSED, "another policy's runtime executing the plan")


@case
def test_backends():
    """backends(): a report per backend, with its controls"""
    reports = C.rt.backends()
    names = [b.name for b in reports]
    check("controlled" in names and "restricted" in names, "names %r" % names)
    for b in reports:
        check(isinstance(b.available, bool) and isinstance(b.enforced, list), repr(b))
        check(b.doc.get("version") == "govex.backend/v1", "version %r" % b.doc)
    ctl = [b for b in reports if b.name == "controlled"][0]
    check(ctl.available and "wall_time" in ctl.enforced, "controlled: %r" % ctl.doc)
    check(any(c == "network_deny" for c, _ in ctl.unavailable), "controlled lacks netdeny")


@case
def test_cancel_thread():
    """Cancel.cancel() from another thread ends a busy loop fast, status cancelled"""
    g = C.govex
    c = g.Cancel()
    timer = threading.Timer(0.2, c.cancel)
    t0 = time.monotonic()
    timer.start()
    r = C.rt.run("while True: pass", cancel=c)
    took = time.monotonic() - t0
    timer.join()
    eq(r.status, g.Status.CANCELLED, "status")
    check(took < 2.0, "took %.2f s" % took)
    check(c.cancelled, "the token says it was cancelled")
    r = C.rt.run("print(1)", cancel=c)
    eq(r.status, g.Status.CANCELLED, "a cancelled token cancels later runs too")


@case
def test_cancel_signal():
    """Cancel.cancel() from a signal handler while the main thread waits in run()"""
    g = C.govex
    c = g.Cancel()
    old = signal.signal(signal.SIGALRM, lambda *a: c.cancel())
    try:
        t0 = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        r = C.rt.run("while True: pass", cancel=c)
        took = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    eq(r.status, g.Status.CANCELLED, "status")
    check(took < 2.0, "took %.2f s" % took)


@case
def test_keyboard_interrupt():
    """a KeyboardInterrupt during run() cancels the run and is raised"""
    def interrupt(*a):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    t0 = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        C.rt.run("while True: pass")
        raise AssertionError("run() returned")
    except KeyboardInterrupt:
        took = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    check(took < 2.0, "took %.2f s" % took)
    eq(C.rt.stats().get("runs_in_flight"), 0, "runs in flight afterwards")


class _Threading:
    """The threading module as govex sees it, with Lock or Thread replaced: a signal's
    exception made to land at a chosen point of Runtime._invoke."""

    def __init__(self, **over):
        self.__dict__.update(over)

    def __getattr__(self, name):
        return getattr(threading, name)


def with_threading(**over):
    g = C.govex
    saved = g.threading
    g.threading = _Threading(**over)
    return saved


@case
def test_interrupt_after_wait():
    """a KeyboardInterrupt just after the run's end was noticed: raised, no hang"""
    g = C.govex
    stuck = []

    class Lock:
        """threading.Lock whose second acquire() (the wait for the run's end) is
        followed by a KeyboardInterrupt, as from a signal; later acquires give up
        after 3 s, noting that the caller would have waited forever."""

        def __init__(self):
            self.lock, self.calls = threading.Lock(), 0

        def acquire(self):
            self.calls += 1
            if self.calls <= 2:
                self.lock.acquire()
                if self.calls == 2:
                    raise KeyboardInterrupt
                return True
            if not self.lock.acquire(timeout=3):
                stuck.append(self.calls)
            return True

        def release(self):
            self.lock.release()

    saved = with_threading(Lock=Lock)
    try:
        C.rt.run("print(1)")
        raise AssertionError("run() returned")
    except KeyboardInterrupt:
        pass
    finally:
        g.threading = saved
    eq(stuck, [], "acquires that would have waited forever")
    eq(C.rt.stats().get("runs_in_flight"), 0, "runs in flight afterwards")


@case
def test_interrupt_before_wait():
    """a KeyboardInterrupt as the helper thread starts: the run is cancelled, and the
    runtime closed meanwhile is freed only when the run ends"""
    g = C.govex

    class Thread(threading.Thread):
        def start(self):
            threading.Thread.start(self)
            time.sleep(0.3)  # the run is under way
            raise KeyboardInterrupt

    rt = g.Runtime(C.policy)
    rt.run("pass")  # the interpreter probed: the next run starts within 0.3 s
    saved = with_threading(Thread=Thread)
    try:
        rt.run("while True: pass", limits={"wall_ms": 4000})
        raise AssertionError("run() returned")
    except KeyboardInterrupt:
        pass
    finally:
        g.threading = saved
    t0 = time.monotonic()

    def going():
        st = rt.stats()
        return st.get("runs_started") != 2 or st.get("runs_in_flight") != 0
    while going() and time.monotonic() - t0 < 6:
        time.sleep(0.05)
    took = time.monotonic() - t0
    eq(rt.stats().get("runs_in_flight"), 0, "runs in flight afterwards")
    check(took < 2.0, "the run went on for %.2f s after the interrupt" % took)
    # once more, closing the runtime while the interrupted run is still going
    saved = with_threading(Thread=Thread)
    try:
        rt.run("while True: pass", limits={"wall_ms": 4000})
        raise AssertionError("run() returned")
    except KeyboardInterrupt:
        pass
    finally:
        g.threading = saved
    rt.close()
    time.sleep(1)


LIVE = ("import sys, time\n"
        "print('first', flush=True)\n"
        "time.sleep(1)\n"
        "print('second', flush=True)\n"
        "sys.stderr.write('err\\n')\n")


def live_run():
    chunks = []
    t0 = time.monotonic()

    def on_output(stream, data):
        chunks.append((time.monotonic() - t0, stream, data))

    r = C.rt.run(LIVE, on_output=on_output)
    end = time.monotonic() - t0
    eq(r.status, "success", "status")
    check(chunks, "no output callback")
    first_at = [at for at, s, d in chunks if b"first" in d]
    check(first_at and first_at[0] < end - 0.5,
          "'first' came at %r, the run ended at %.2f: %r" % (first_at, end, chunks))
    eq(b"".join(d for _, s, d in chunks if s == 1), r.stdout, "stdout chunks")
    eq(b"".join(d for _, s, d in chunks if s == 2), r.stderr, "stderr chunks")


@case
def test_on_output_live():
    """on_output receives output as it comes, before the run ends (main thread)"""
    live_run()


@case
def test_on_output_live_thread():
    """the same from a thread that is not the main one (no helper thread)"""
    err = []

    def body():
        try:
            live_run()
        except BaseException as e:  # noqa: B902
            err.append(e)
    t = threading.Thread(target=body)
    t.start()
    t.join()
    if err:
        raise err[0]


@case
def test_on_output_raises():
    """an exception in on_output: not called again, the run ends, OutputCallbackError"""
    g = C.govex
    calls = []

    def bad(stream, data):
        calls.append(data)
        raise KeyError("from the callback")
    code = "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.1)\n"
    try:
        C.rt.run(code, on_output=bad)
        raise AssertionError("run() did not raise")
    except g.OutputCallbackError as e:
        check(isinstance(e.__cause__, KeyError), "cause %r" % e.__cause__)
        eq(e.result.status, g.Status.SUCCESS, "the run's status")
        eq(e.result.stdout, b"0\n1\n2\n", "the run's output")
    eq(len(calls), 1, "calls after the exception")
    r = C.rt.run("print(1)", on_output=lambda s, d: None)
    eq(r.stdout, b"1\n", "the next run")


@case
def test_on_output_exits():
    """SystemExit and KeyboardInterrupt from on_output are raised as they are, after the run"""
    g = C.govex
    for exc in (SystemExit(3), KeyboardInterrupt()):
        def bad(stream, data, exc=exc):
            raise exc
        try:
            C.rt.run("print(1)", on_output=bad)
            raise AssertionError("run() did not raise %r" % exc)
        except (SystemExit, KeyboardInterrupt) as e:
            check(e is exc, "raised %r, not %r" % (e, exc))
    eq(C.rt.stats().get("runs_in_flight"), 0, "runs in flight afterwards")
    eq(C.rt.run("print(2)").stdout, b"2\n", "the next run")


@case
def test_gil_released():
    """two runs on two threads overlap (the GIL is released during a run)"""
    res = []

    def body():
        res.append(C.rt.run("import time; time.sleep(1)"))
    t0 = time.monotonic()
    ts = [threading.Thread(target=body) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.monotonic() - t0
    eq([r.status for r in res], ["success", "success"], "statuses")
    check(took < 1.8, "two 1 s runs took %.2f s" % took)


@case
def test_files_stdin():
    """files in, stdin, env"""
    r = C.rt.run("import sys\nprint(open('data.txt').read() + sys.stdin.read())",
                 files={"data.txt": "from a file, "}, stdin="from stdin")
    eq(r.stdout, b"from a file, from stdin\n", "stdout")


@case
def test_request_emptied_during_run():
    """a plan's request lists emptied while it runs: the run reads its own copy
    (on_output runs with the GIL, mid-run, as another thread could: the files and
    metadata planned are what the run gets, and nothing it reads is freed under it;
    the sanitized build would report a use after free)"""
    g = C.govex
    code = ("import os, sys\nprint('start', flush=True)\nsys.stdin.read()\n"
            "d = open('data.txt').read()\nprint(len(d), d[:3])")
    p = C.rt.plan(code, files={"data.txt": "x" * 70000}, metadata={"k": "v"}, stdin="s")
    check(p.ok, "refused: %r" % p)

    def churn(stream, data):
        for v in list(p._request.values()):
            if isinstance(v, list):
                del v[:]
        junk = [bytes([i % 251]) * 70000 for i in range(64)]
        del junk
    r = C.rt.execute(p, on_output=churn)
    eq(r.status, g.Status.SUCCESS, "status: %r" % (r,))
    eq(r.stdout, b"start\n70000 xxx\n", "stdout")


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fds():
    """(this process's descriptors but pidfds, pidfds): the restricted backend holds a
    pidfd of a run's process for a while after the run (its teardown), so those come
    and go; every other descriptor must be back where it was."""
    other, pidfds = [], 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:     # the listing's own descriptor
            continue
        if target == "anon_inode:[pidfd]":
            pidfds += 1
        else:
            other.append((int(name), target))
    return sorted(other), pidfds


def settled_fds(want):
    """fds(), waiting up to 3 s for the other descriptors to be want's."""
    end = time.monotonic() + 3
    cur = fds()
    while cur[0] != want and time.monotonic() < end:
        time.sleep(0.05)
        cur = fds()
    return cur


@case
def test_leaks():
    """N runs (with callbacks, tokens, plans): fd count, references and RSS stay put"""
    g = C.govex
    sink = []

    def cb(stream, data):
        sink.append(len(data))

    def batch(n):
        for i in range(n):
            kind = i % 4
            if kind == 0:
                r = C.rt.run("print(%d)" % i, on_output=cb)
            elif kind == 1:
                r = C.rt.run("print(%d)" % i, cancel=g.Cancel(), stdin=b"x" * 1000)
            elif kind == 2:
                r = C.rt.execute(C.rt.plan("print(%d)" % i))
            else:
                r = C.rt.run("1/0")
            check(r.status in ("success", "execution_failed"), "run %d: %r" % (i, r.summary))
    batch(20)
    import gc
    gc.collect()
    time.sleep(0.5)
    (fds0, pid0), rss0, refs0 = fds(), rss_kib(), sys.getrefcount(cb)
    runs = int(os.environ.get("GOVEX_BINDING_LEAK_RUNS") or 200)
    batch(runs)
    gc.collect()
    (fds1, pid1), rss1, refs1 = settled_fds(fds0), rss_kib(), sys.getrefcount(cb)
    new = [f for f in fds1 if f not in fds0]
    gone = [f for f in fds0 if f not in fds1]
    check(not new and not gone, "descriptors (but pidfds) after %d more runs: %d -> %d, "
          "new %r, gone %r" % (runs, len(fds0), len(fds1), new[:5], gone[:5]))
    check(pid1 <= pid0 + 2, "pidfds: %d before, %d after %d runs" % (pid0, pid1, runs))
    eq(refs1, refs0, "references to the callback")
    limit = 48 * 1024 if os.environ.get("GOVEX_BINDING_SANITIZED") else 8 * 1024
    check(rss1 - rss0 < limit, "RSS grew by %d KiB (from %d)" % (rss1 - rss0, rss0))
    print("# leaks over %d runs: fds %d -> %d (pidfds %d -> %d), RSS %d -> %d KiB"
          % (runs, len(fds0), len(fds1), pid0, pid1, rss0, rss1))


def child():
    n = 0
    # loaded already; the processes the library starts (the interpreter probe, the runs)
    # must not get the sanitizer runtimes
    if os.environ.pop("LD_PRELOAD", None):
        os.environ["GOVEX_BINDING_SANITIZED"] = "1"
    try:
        setup()
    except BaseException:
        print("not ok 1 - import govex and make a runtime")
        for line in traceback.format_exc().splitlines():
            print("#   " + line)
        print("1..1")
        return 0
    smoke = os.environ.get("GOVEX_BINDING_SMOKE") == "1"
    for fn in CASES:
        if smoke and fn not in SMOKE:
            continue
        n += 1
        desc = (fn.__doc__ or fn.__name__).strip().splitlines()[0]
        try:
            fn()
            print("ok %d - %s" % (n, desc))
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (n, desc, e))
        except BaseException:
            print("not ok %d - %s" % (n, desc))
            for line in traceback.format_exc().splitlines():
                print("#   " + line)
        sys.stdout.flush()
    C.rt.close()
    print("1..%d" % n)
    return 0


if __name__ == "__main__":
    sys.exit(child() if CHILD else driver())
