"""Shared helpers of the worker suites: start the worker (src/worker) exactly as the C side
does (python -I -S -c TEXT, request frame on stdin, response frame on fd 3) and speak
govex.frame/v1 to it.  Standard library only."""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER_ROOT = os.path.join(ROOT, "src", "worker")
WORKER_PATH = os.path.join(WORKER_ROOT, "worker.py")
PACKAGE_DIR = os.path.join(WORKER_ROOT, "govex_worker")
COVERAGE_PYTHON = "/usr/bin/python3"
INSPECTION_DIR = os.path.join(PACKAGE_DIR, "inspection")
FRAME_VERSION = "govex.frame/v1"
WANTED = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]

sys.path.insert(0, os.path.join(ROOT, "tools"))
import embed  # noqa: E402  (tools/embed.py: the texts exactly as the build embeds them)


def _modules(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py"))


def worker_paths():
    """The worker package's modules (govex_worker/, its inspection part aside)."""
    return _modules(PACKAGE_DIR)


def inspection_paths():
    """The inspection part's modules (govex_worker/inspection/)."""
    return _modules(INSPECTION_DIR)


def inspection_text():
    """The inspection part as embedded (tools/embed.py --package)."""
    return embed.package_text(WORKER_ROOT, None, inspection_paths()).decode("utf-8")


def worker_text(inspection=True):
    """The worker as the C side starts it: for an inspection, the inspection part, a
    newline, then the worker's text (the package and its entry, worker.py); for a call,
    the worker's text alone."""
    core = embed.package_text(WORKER_ROOT, WORKER_PATH, worker_paths()).decode("utf-8")
    if not inspection:
        return core
    return inspection_text() + "\n" + core


def find_pythons():
    """[(label, path or None, skip reason)]: pyenv 3.8..3.13 and Debian's /usr/bin/python3."""
    out = []
    for v in WANTED:
        found = sorted(p for p in glob.glob("/root/.pyenv/versions/%s.*/bin/python%s" % (v, v))
                       if os.access(p, os.X_OK))
        if found:
            out.append(("py" + v, found[-1], None))
        else:
            out.append(("py" + v, None, "python%s not installed" % v))
    sysp = "/usr/bin/python3"
    if os.access(sysp, os.X_OK):
        out.append(("system", sysp, None))
    else:
        out.append(("system", None, "/usr/bin/python3 not installed"))
    return out


def sha(text):
    if isinstance(text, str):
        text = text.encode("utf-8")
    return "sha256:" + hashlib.sha256(text).hexdigest()


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def frame(obj):
    data = canon(obj).encode("utf-8") if not isinstance(obj, bytes) else obj
    return len(data).to_bytes(8, "big") + data


MODULE_STARTS = bytes(8)   # a call's empty "module starts" frame, before the response


def unframe(data):
    """The JSON object of a response: exactly one frame, nothing after it (after a
    call's empty "module starts" frame, when there is one)."""
    if data.startswith(MODULE_STARTS):
        data = data[8:]
    if len(data) < 8:
        raise AssertionError("no response frame (%d bytes)" % len(data))
    n = int.from_bytes(data[:8], "big")
    if len(data) != 8 + n:
        raise AssertionError("response frame length %d, have %d bytes" % (n, len(data) - 8))
    return json.loads(data[8:].decode("utf-8"))


class Run:
    def __init__(self, response, stdout, stderr, returncode):
        self.raw = response
        self.stdout = stdout
        self.stderr = stderr
        self.returncode = returncode

    @property
    def resp(self):
        return unframe(self.raw)


def _op_of(request_bytes):
    """The op of a well-formed request frame (the C side starts a call's worker without
    the inspection part), else None."""
    try:
        doc = json.loads(request_bytes[8:].decode("utf-8"))
        return doc.get("op") if isinstance(doc, dict) else None
    except (ValueError, UnicodeError):
        return None


def snippet_request(code, inputs=None, value_max=1 << 20, digest=None):
    """An op "snippet" request (src/lib/repl.c's): inputs is JSON text or None."""
    return {"version": FRAME_VERSION, "op": "snippet", "code": code,
            "code_digest": digest or sha(code), "inputs": inputs, "value_max": value_max}


def run_snippet(python, code, stdin=b"", **kw):
    """A snippet's worker as the C side starts it: worker.py alone, the request frame then
    the program's stdin on fd 0."""
    return run_worker(python, frame(snippet_request(code, **kw)) + stdin,
                      text=worker_text(inspection=False))


def run_worker(python, request_bytes, timeout=120, text=None, env=None, cwd=None):
    """Runs the worker like the C side: argv [python, -I, -S, -c, TEXT]; fd 3 = a pipe."""
    if text is None:
        text = worker_text(inspection=_op_of(request_bytes) != "call")
    r, w = os.pipe()
    os.set_inheritable(w, True)
    tmp = None
    if cwd is None:
        tmp = tempfile.TemporaryDirectory(prefix="govex-worker-test-")
        cwd = tmp.name
    try:
        # bash puts the pipe on fd 3 (multi-digit descriptors work in bash, not in dash)
        argv = ["bash", "-c", 'exec "$@" 3>&%d %d>&-' % (w, w), "bash",
                python, "-I", "-S", "-c", text]
        cov = os.environ.get("GOVEX_WORKER_COVERAGE")
        if cov and os.path.realpath(python) == os.path.realpath(COVERAGE_PYTHON):
            # .ci/coverage: the package's files themselves, under Debian's coverage (the
            # embedded text has no file for it to map lines to)
            argv[4:] = [python, "-m", "coverage", "run", "--branch", "--parallel-mode",
                        "--data-file", os.path.join(cov, ".coverage"),
                        "--source", PACKAGE_DIR, WORKER_PATH]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(w,), cwd=cwd,
                                env=env if env is not None else {"PATH": "/usr/bin:/bin"})
        os.close(w)
        w = -1
        chunks = []

        def reader():
            while True:
                b = os.read(r, 1 << 16)
                if not b:
                    break
                chunks.append(b)

        t = threading.Thread(target=reader)
        t.daemon = True
        t.start()
        try:
            out, err = proc.communicate(request_bytes, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError("worker timed out")
        t.join(timeout)
        return Run(b"".join(chunks), out, err, proc.returncode)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
        if tmp is not None:
            tmp.cleanup()


def inspect_request(source, module="mod", filename="mod.py", digest=None):
    return {"version": FRAME_VERSION, "op": "inspect", "source": source,
            "source_digest": digest or sha(source), "module": module, "filename": filename}


def inspect(python, source, module="mod", **kw):
    run = run_worker(python, frame(inspect_request(source, module, **kw)))
    return run.resp


def plan_for(source, inspection, function, module="mod", extra=None):
    """(plan text, inspection text): what the C side would bind for a call."""
    itext = canon(inspection) + "\n"
    entry = None
    for f in inspection["functions"]:
        if f["name"] == function:
            entry = f
    plan = {"kind": "call", "source": {"digest": sha(source), "module": module},
            "inspection_digest": sha(itext), "function": entry}
    if extra:
        plan.update(extra)
    return canon(plan) + "\n", itext


def call_request(source, function, args, inspection, module="mod", filename="mod.py",
                 in_max=1 << 20, out_max=1 << 20, plan_text=None, itext=None):
    if plan_text is None:
        plan_text, itext = plan_for(source, inspection, function, module)
    return {"version": FRAME_VERSION, "op": "call", "source": source,
            "source_digest": sha(source), "module": module, "filename": filename,
            "plan": plan_text, "plan_digest": sha(plan_text), "inspection": itext,
            "function": function, "args": args,
            "limits": {"call_input_bytes": in_max, "call_output_bytes": out_max}}


def call(python, source, function, args, module="mod", **kw):
    """Inspects, plans and calls; returns the Run."""
    ins = inspect(python, source, module)
    assert ins.get("ok") is True, "inspection failed: %r" % (ins,)
    req = call_request(source, function, args, ins["inspection"], module=module, **kw)
    return run_worker(python, frame(req))


def effects_of(python, source, name):
    ins = inspect(python, source)
    assert ins.get("ok") is True, "inspection failed: %r" % (ins,)
    for f in ins["inspection"]["functions"]:
        if f["name"] == name:
            return f["effects"]
    raise AssertionError("no function %s" % name)


class Check(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Check(msg)


def expect_failure(run, status, code, exc_type=None):
    resp = run.resp
    check(resp.get("ok") is False, "expected a failure, got %r" % (resp,))
    check(resp.get("status") == status, "status %r, expected %r (%r)"
          % (resp.get("status"), status, resp))
    check(resp.get("code") == code, "code %r, expected %r (%r)" % (resp.get("code"), code, resp))
    keys = {"version", "ok", "status", "code", "message", "exception_type"}
    # an exception of the user's code also carries it (contract 2): type, message and
    # the traceback of the user's own frames
    if code in ("exception", "module_error"):
        keys.add("exception")
        exc = resp.get("exception")
        check(isinstance(exc, dict) and set(exc) == {"type", "message", "traceback"}
              and all(isinstance(exc[k], str) for k in exc), "exception %r" % (exc,))
        check(exc["type"] == resp.get("exception_type") or resp.get("exception_type") is None,
              "exception.type %r" % (exc,))
        check('File "<string>"' not in exc["traceback"],
              "the worker's own frames in the traceback: %r" % exc["traceback"])
    # a result that is not JSON may name its fix (the C side words it)
    if status == "result_invalid" and "fix" in resp:
        keys.add("fix")
        check(isinstance(resp["fix"], str) and resp["fix"].isidentifier(),
              "fix %r" % (resp["fix"],))
    check(set(resp) == keys, "failure keys %r" % sorted(resp))
    check(isinstance(resp["message"], str) and resp["message"] == resp["message"].lower(),
          "message %r" % resp["message"])
    if exc_type is not None:
        check(resp.get("exception_type") == exc_type,
              "exception_type %r, expected %r" % (resp.get("exception_type"), exc_type))
    check(run.returncode == 0, "exit status %r" % run.returncode)
    return resp


def expect_value(run, value):
    resp = run.resp
    check(resp.get("ok") is True and resp.get("status") == "success",
          "expected success, got %r (stderr %r)" % (resp, run.stderr[-2000:]))
    check(resp.get("value") == value and type(resp.get("value")) is type(value),
          "value %r, expected %r" % (resp.get("value"), value))
    check(run.returncode == 0, "exit status %r" % run.returncode)
    return resp


class Tap:
    def __init__(self):
        self.lines = []
        self.failed = 0
        self.count = 0

    def result(self, name, err=None, skip=None):
        self.count += 1
        n = self.count
        if skip is not None:
            self.lines.append("ok %d - %s # SKIP %s" % (n, name, skip))
        elif err is None:
            self.lines.append("ok %d - %s" % (n, name))
        else:
            self.failed += 1
            self.lines.append("not ok %d - %s" % (n, name))
            for l in err.rstrip().splitlines():
                self.lines.append("# " + l)

    def emit(self):
        print("1..%d" % self.count)
        for l in self.lines:
            print(l)
        sys.stdout.flush()


def run_case(fn, *args):
    try:
        fn(*args)
        return None
    except Check as e:
        return str(e)
    except BaseException:
        return traceback.format_exc()
