"""Shared helpers for the govex integration tests.

Stdlib only.  Every test script imports this module, lists its tests as
(name, function) pairs and calls main(); main() prints TAP version 13 on
stdout, gives every test its own temporary directory and always exits 0
(the runner reads the TAP lines, not the exit status).

Every govex process is started in a session of its own with a hard timeout;
on timeout, and after every run, its whole process group is killed, so a test
never leaves a process behind even when govex misbehaves.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOVEX = os.environ.get("GOVEX") or os.path.join(REPO, "build", "govex")

HARD_TIMEOUT = 30.0             # seconds any single govex invocation may take
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")

EXIT_TIMEOUT = 124
EXIT_REFUSED = 125

RESULT_KEYS = (
    "version", "status", "termination", "exit_code", "signal", "stdout", "stderr",
    "stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated", "value",
    "diagnostics", "usage", "backend", "policy_digest", "plan_digest",
)


class Skip(Exception):
    """Raised by a test that cannot run here; the message says why."""


class Failure(AssertionError):
    """Raised by a failed check; the message says what differed."""


# ---------------------------------------------------------------- checks

def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Failure("%s: expected %r, got %r" % (what, expected, _short(actual)))


def _short(v, limit=600):
    r = v
    if isinstance(v, (bytes, str)) and len(v) > limit:
        r = v[:limit] + (b"..." if isinstance(v, bytes) else "...")
    return r


# ---------------------------------------------------------------- running govex

class Proc:
    """One finished govex process."""

    def __init__(self, args):
        self.args = args
        self.pid = None
        self.returncode = None      # exit status, or -N when killed by signal N
        self.stdout = b""
        self.stderr = b""
        self.wall = None            # seconds from spawn to reap, measured here
        self.rusage = None          # os.wait4 rusage of govex (and what it reaped)
        self.hard_timeout = False   # this harness had to kill it
        self.pipes_held_open = False
        self._doc = None

    @property
    def out(self):
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self):
        return self.stderr.decode("utf-8", "replace")

    def describe(self):
        return ("govex %s -> rc=%r wall=%.3fs%s\n  stdout: %r\n  stderr: %r" % (
            " ".join(self.args), self.returncode, self.wall or 0.0,
            " (KILLED BY HARNESS TIMEOUT)" if self.hard_timeout else "",
            _short(self.stdout, 400), _short(self.stderr, 400)))

    def json(self):
        """The one JSON document that --json promises on stdout."""
        if self._doc is None:
            try:
                self._doc = json.loads(self.stdout.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise Failure("stdout is not exactly one JSON document (%s)\n%s"
                              % (e, self.describe()))
        return self._doc

    def result(self):
        """The govex.result/v1 document, with its shape checked."""
        doc = self.json()
        check(isinstance(doc, dict), "result is not an object: %r" % (doc,))
        missing = [k for k in RESULT_KEYS if k not in doc]
        check(not missing, "result lacks fields %s\n%s" % (missing, self.describe()))
        eq(doc["version"], "govex.result/v1", "result.version")
        return doc

    def expect_rc(self, rc):
        if self.hard_timeout:
            raise Failure("govex did not finish within the harness timeout\n" + self.describe())
        if self.returncode != rc:
            raise Failure("exit status: expected %r, got %r\n%s" % (rc, self.returncode,
                                                                    self.describe()))


def _killpg(pgid, sig=signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(args, *, cwd=None, input=None, env=None, timeout=HARD_TIMEOUT, during=None,
        extra_env=None):
    """Run govex ARGS and return a Proc.

    input: bytes for govex's stdin (else /dev/null).  env: the complete
    environment (default: this process's).  during(popen): called after
    the spawn, before the wait (to signal govex, for instance).
    """
    if env is None:
        env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    res = Proc(list(args))
    t0 = time.monotonic()
    p = subprocess.Popen([GOVEX] + list(args), cwd=cwd, env=env,
                         stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, close_fds=True)
    res.pid = pgid = p.pid
    out, err = [], []

    def reader(f, sink):
        while True:
            b = f.read1(1 << 16)
            if not b:
                return
            sink.append(b)

    def writer(f, data):
        try:
            f.write(data)
        except (BrokenPipeError, OSError):
            pass
        try:
            f.close()
        except (BrokenPipeError, OSError):
            pass

    threads = [threading.Thread(target=reader, args=(p.stdout, out), daemon=True),
               threading.Thread(target=reader, args=(p.stderr, err), daemon=True)]
    if input is not None:
        threads.append(threading.Thread(target=writer, args=(p.stdin, input), daemon=True))
    for t in threads:
        t.start()

    # On the hard timeout govex first gets SIGTERM (its own cancel path, so it
    # can still remove what it started), then its whole group SIGKILL.
    def on_timeout():
        res.hard_timeout = True
        _killpg(pgid, signal.SIGTERM)
        kill_timer.start()

    kill_timer = threading.Timer(2.0, _killpg, args=(pgid,))
    kill_timer.daemon = True
    timer = threading.Timer(timeout, on_timeout)
    timer.daemon = True
    timer.start()
    reaped = False
    try:
        if during is not None:
            during(p)
        _, status, ru = os.wait4(p.pid, 0)
        reaped = True
        res.wall = time.monotonic() - t0
        res.rusage = ru
        res.returncode = os.waitstatus_to_exitcode(status)
        p.returncode = res.returncode       # already reaped: keep Popen from waiting
    finally:
        timer.cancel()
        kill_timer.cancel()
        if not reaped:
            _killpg(pgid)
            _, status, _ = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        _killpg(pgid)                       # anything govex left in its group
        for t in threads[:2]:
            t.join(5.0)
            if t.is_alive():
                res.pipes_held_open = True
        for f in (p.stdout, p.stderr):
            try:
                f.close()
            except OSError:
                pass
    res.stdout = b"".join(out)
    res.stderr = b"".join(err)
    return res


# ---------------------------------------------------------------- per-test context

class T:
    """What a test function receives: a private temp dir and deferred cleanups."""

    def __init__(self, tmp):
        self.tmp = tmp
        self._cleanups = []

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def defer(self, fn, *args):
        self._cleanups.append((fn, args))

    def write(self, name, data):
        p = self.path(name)
        with open(p, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return p

    def write_json(self, name, obj, **kw):
        return self.write(name, json.dumps(obj, **kw))

    def run(self, args, **kw):
        kw.setdefault("cwd", self.tmp)
        return run(args, **kw)

    def policy(self, name="p.json", base="trusted", **changes):
        """Write preset BASE with top-level CHANGES (dicts are merged) to a file."""
        pol = preset(base)
        for k, v in changes.items():
            if isinstance(v, dict) and isinstance(pol.get(k), dict):
                pol[k] = dict(pol[k], **v)
            else:
                pol[k] = v
        return self.write_json(name, pol)

    def kill_later(self, pid):
        """Make sure PID (an escaped process, say) is gone when the test ends."""
        self.defer(_kill_pid, pid)

    def cleanup(self):
        for fn, args in reversed(self._cleanups):
            try:
                fn(*args)
            except Exception:
                pass


def _kill_pid(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------- govex facts

_preset_cache = {}


def preset(name):
    """`govex policy show NAME`, parsed (a fresh copy each time)."""
    if name not in _preset_cache:
        r = run(["policy", "show", name])
        r.expect_rc(0)
        _preset_cache[name] = r.stdout
    return json.loads(_preset_cache[name].decode("utf-8"))


def backends():
    r = run(["backends", "--json"])
    r.expect_rc(0)
    doc = r.json()
    check(isinstance(doc, list), "backends --json is not an array: %r" % (doc,))
    return doc


def backend_available(name):
    return any(isinstance(b, dict) and b.get("name") == name and b.get("available") is True
               for b in backends())


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_bytes(obj):
    """The DESIGN's canonical form: sorted keys, no whitespace, UTF-8, one '\\n'."""
    return (json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            + "\n").encode("utf-8")


def diag(doc, code):
    """The first diagnostic with CODE, or a Failure naming the ones present."""
    ds = doc.get("diagnostics") or []
    for d in ds:
        if isinstance(d, dict) and d.get("code") == code:
            return d
    raise Failure("no diagnostic with code %r; diagnostics: %r" % (code, ds))


def need_python():
    if not (shutil.which("python3") or os.path.exists("/usr/bin/python3")):
        raise Skip("no python3 on this host for interpreter \"auto\"")


# ---------------------------------------------------------------- processes and files

def proc_state(pid):
    """Kernel state letter of PID, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rindex(b")") + 2:][:1].decode()


def pid_alive(pid):
    """True while PID runs; a zombie (dead, waiting to be reaped) is not alive."""
    return proc_state(pid) not in (None, "Z", "X")


def wait_dead(pid, grace=0.5):
    deadline = time.monotonic() + grace
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def exited(popen):
    """True once POPEN's process has ended (it stays unreaped for run())."""
    try:
        info = os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def wait_for_file(path, timeout=10.0, nonempty=True, popen=None):
    """Wait until PATH exists (and has content); return its text or None.

    With POPEN, give up early (None) when that process has ended.
    """
    deadline = time.monotonic() + timeout
    while True:
        if popen is not None and exited(popen) and not os.path.exists(path):
            return None
        try:
            with open(path) as f:
                s = f.read()
            if s or not nonempty:
                return s
        except FileNotFoundError:
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def read_pid(path):
    s = wait_for_file(path, 2.0)
    check(s is not None and s.strip().isdigit(), "no pid written to %s" % path)
    return int(s.strip())


# ---------------------------------------------------------------- TAP driver

def _cleanup_dir(path):
    def onerror(fn, p, exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            fn(p)
        except OSError:
            pass
    shutil.rmtree(path, onerror=onerror)


def test_base():
    """The directory every test's own temporary directory is made in.

    Not under /tmp: a sandbox refuses a read root beneath /tmp (its private /tmp cannot
    keep a bind there read-only), and tests bind their directories.  One per user,
    0711 so that a test's 0711 directory can be reached by another uid (nobody).
    $GOVEX_TEST_BASE overrides it.
    """
    base = os.environ.get("GOVEX_TEST_BASE") or "/var/tmp/govex-tests-%d" % os.geteuid()
    try:
        os.mkdir(base, 0o711)
    except FileExistsError:
        pass
    st = os.lstat(base)
    import stat as _stat
    if not _stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise RuntimeError("test base %s is not a directory of ours" % base)
    os.chmod(base, 0o711)
    return base


def _diag_lines(text):
    for line in str(text).rstrip("\n").split("\n"):
        print("# " + line)


def main(tests):
    """Run TESTS, a list of (name, fn(T)), printing TAP; returns exit status 0."""
    print("TAP version 13")
    print("1..%d" % len(tests))
    sys.stdout.flush()
    have_binary = os.path.isfile(GOVEX) and os.access(GOVEX, os.X_OK)
    for i, (name, fn) in enumerate(tests, 1):
        tmp = tempfile.mkdtemp(prefix="govex-it-", dir=test_base())
        t = T(tmp)
        try:
            if not have_binary:
                raise Failure("govex binary not found or not executable: %s "
                              "(set GOVEX or build it)" % GOVEX)
            fn(t)
            print("ok %d - %s" % (i, name))
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e))
        except Failure as e:
            print("not ok %d - %s" % (i, name))
            _diag_lines(e)
        except BaseException as e:      # a crash of the test itself is a failure too
            print("not ok %d - %s" % (i, name))
            _diag_lines("test crashed: %r" % (e,))
            _diag_lines(traceback.format_exc())
            if isinstance(e, KeyboardInterrupt):
                raise
        finally:
            t.cleanup()
            _cleanup_dir(tmp)
            sys.stdout.flush()
    return 0
