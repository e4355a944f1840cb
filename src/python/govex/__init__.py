# SPDX-License-Identifier: MIT
"""govex: run Python code under an enforced policy, from Python.

A binding of libgovex (govex.h, libgovex(3)); the C half is govex._govex, one file for
every CPython from 3.6 on::

    import govex

    with govex.Runtime("strict") as rt:
        r = rt.run("print(6 * 7)", limits={"wall_ms": 2000})
        print(r.status, r.stdout_text)        # Status.SUCCESS 42

A Runtime holds a policy (a preset name, a dict, a JSON text or None for "strict") and
serves many runs, from several threads.  run() runs a snippet, call() one function of a
module with JSON arguments, exec() an executable; plan() and execute() split planning
from running; each returns a Result, whose status says what happened.  A refusal (the
policy forbids it, invalid input) is a Result too; govex.Error is raised for misuse of
the API (a malformed policy, an unknown preset) and system errors.

While a run is in progress the GIL is released.  Called from the main thread, a run is
carried out on a helper thread while the main thread waits, so Python's signal handlers
run meanwhile: a handler may call Cancel.cancel(), and a KeyboardInterrupt (Ctrl-C)
cancels the run, waits for it to end, and is raised.
"""

import enum
import json as _json
import os
import threading
from typing import (Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple, Union)

from . import _govex

__all__ = [
    "BackendReport", "Cancel", "Diagnostic", "Error", "OutputCallbackError", "OutputFile",
    "Plan", "Result", "Runtime", "Status", "Usage", "LIMITS", "PRESETS", "NEED_NETWORK",
    "NEED_FILESYSTEM_WRITE", "NEED_SUBPROCESS", "version",
]

#: libgovex's version (the library loaded, not the headers it was built with)
__version__ = _govex.version()

#: the built-in policy presets
PRESETS = ("strict", "workspace", "trusted")

#: the names a limits mapping may use (struct govex_limits; 0 or absent: the policy's)
LIMITS = ("wall_ms", "cpu_ms", "memory_bytes", "processes", "open_files",
          "file_size_bytes", "stdout_bytes", "stderr_bytes")

#: declared needs of a run (enum govex_need); a need the policy forbids refuses the run
NEED_NETWORK = 1 << 0
NEED_FILESYSTEM_WRITE = 1 << 1
NEED_SUBPROCESS = 1 << 2


def version() -> str:
    """libgovex's version string, e.g. "0.3.0"."""
    return str(_govex.version())


# ---------------------------------------------------------------- errors

class Error(Exception):
    """An API error of libgovex: misuse, an invalid policy or plan, a system error.

    code is the library's code (1000 + N for govex's own, else an errno value), name
    its name ("GOVEX_EPOLICY", "ENOENT"), message the library's message naming the
    subject ("limits.wall_ms: must be between 1 and 3600000").
    """

    def __init__(self, code: int, name: str, message: str, sys_errno: int = 0) -> None:
        super().__init__("%s: %s" % (name, message))
        self.code = code
        self.name = name
        self.message = message
        self.errno = sys_errno


class InvalidArgumentError(Error, ValueError):
    """GOVEX_EINVAL"""


class PolicyError(Error, ValueError):
    """GOVEX_EPOLICY: the policy document is invalid (message names the field)"""


class JSONError(Error, ValueError):
    """GOVEX_EJSON: malformed JSON"""


class UTF8Error(Error, ValueError):
    """GOVEX_EUTF8: invalid UTF-8"""


class RangeError(Error, ValueError):
    """GOVEX_ERANGE: a value out of range"""


class PresetError(Error, ValueError):
    """GOVEX_EPRESET: no such preset"""


class PlanError(Error, ValueError):
    """GOVEX_EPLAN: an invalid plan"""


class InterpreterError(Error):
    """GOVEX_EINTERP: the interpreter probe failed"""


class BackendError(Error):
    """GOVEX_EBACKEND: no such backend"""


class TooBigError(Error, ValueError):
    """GOVEX_ETOOBIG: an input too large"""


class InternalError(Error):
    """GOVEX_EINTERNAL"""


class SystemError_(Error, OSError):  # noqa: N801 (not the builtin SystemError)
    """A system error (code and errno are the errno value)."""

    def __init__(self, code: int, name: str, message: str, sys_errno: int = 0) -> None:
        Error.__init__(self, code, name, message, sys_errno or code)
        self.errno = sys_errno or code
        self.strerror = message


class OutputCallbackError(Error):
    """on_output raised: the run went on to its end without further calls of on_output;
    result is its Result and __cause__ the callback's exception."""

    def __init__(self, result: "Result", exc: BaseException) -> None:
        Error.__init__(self, 0, "on_output", "the output callback raised %s: %s"
                       % (type(exc).__name__, exc))
        self.result = result


_ERRORS = {
    "GOVEX_EINVAL": InvalidArgumentError, "GOVEX_EPOLICY": PolicyError,
    "GOVEX_EJSON": JSONError, "GOVEX_EUTF8": UTF8Error, "GOVEX_ERANGE": RangeError,
    "GOVEX_EPRESET": PresetError, "GOVEX_EPLAN": PlanError,
    "GOVEX_EINTERP": InterpreterError, "GOVEX_EBACKEND": BackendError,
    "GOVEX_ETOOBIG": TooBigError, "GOVEX_EINTERNAL": InternalError,
}


def _make_error(code: int, name: str, message: str, sys_errno: int) -> Error:
    cls = _ERRORS.get(name)
    if cls is None:
        return SystemError_(code, name, message, sys_errno)
    return cls(code, name, message, sys_errno)


_govex.set_error_factory(_make_error)


# ---------------------------------------------------------------- results

class Status(str, enum.Enum):
    """A result's status (govex.result/v1); a str, so r.status == "success" holds."""

    SUCCESS = "success"
    EXECUTION_FAILED = "execution_failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    RESOURCE_LIMIT = "resource_limit"
    OUTPUT_LIMIT = "output_limit"
    INVALID_INPUT = "invalid_input"
    POLICY_REFUSED = "policy_refused"
    WORKER_FAILED = "worker_failed"
    BINDING_FAILED = "binding_failed"
    RESULT_INVALID = "result_invalid"
    SOURCE_MISMATCH = "source_mismatch"

    def __str__(self) -> str:
        return str(self.value)


Usage = NamedTuple("Usage", [("wall_ms", int), ("cpu_ms", int), ("max_rss_bytes", int)])
Usage.__doc__ = "What a run used: wall and CPU time, peak resident memory."

OutputFile = NamedTuple("OutputFile", [("name", str), ("mime", str), ("data", bytes)])
OutputFile.__doc__ = "A file the run left in $GOVEX_OUTPUT_DIR (outputs=True)."


class Diagnostic:
    """One diagnostic of a result: code ("timeout", "exception", ...), message, and the
    whole object as data (some carry more members: "limit", "type", "traceback")."""

    __slots__ = ("code", "message", "data")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.code = str(data.get("code", ""))       # type: str
        self.message = str(data.get("message", ""))  # type: str
        self.data = dict(data)                     # type: Dict[str, Any]

    def __repr__(self) -> str:
        return "Diagnostic(%r, %r)" % (self.code, self.message)


class Result:
    """The outcome of a run, call or exec (a govex.result/v1 document).

    status: a Status.  stdout and stderr: the bytes kept, exactly as written;
    stdout_text and stderr_text: the document's text (invalid UTF-8 replaced).
    exit_code: the program's exit code (None unless it exited).  value: a call's
    returned value (decoded JSON).  json: the document as the library made it;
    doc: the same, decoded.  exit_status: what the govex command would exit with.
    """

    __slots__ = ("status", "termination", "exit_code", "signal", "stdout", "stderr",
                 "stdout_text", "stderr_text", "stdout_bytes", "stderr_bytes",
                 "stdout_truncated", "stderr_truncated", "diagnostics", "files", "value",
                 "usage", "backend", "policy_digest", "plan_digest", "exit_status",
                 "json", "doc")

    def __init__(self, raw: Tuple[bytes, bytes, bytes, List[Tuple[str, str, bytes]], int]
                 ) -> None:
        text, out, err, files, exit_status = raw
        self.json = text.decode("utf-8")        # type: str
        doc = _json.loads(self.json)            # type: Dict[str, Any]
        self.doc = doc
        try:
            self.status = Status(doc["status"])  # type: Status
        except ValueError:                       # a status of a later library
            self.status = doc["status"]
        self.termination = doc.get("termination")       # type: Optional[str]
        self.exit_code = doc.get("exit_code")           # type: Optional[int]
        self.signal = doc.get("signal")                 # type: Optional[int]
        self.stdout = out                               # type: bytes
        self.stderr = err                               # type: bytes
        self.stdout_text = doc.get("stdout") or ""      # type: str
        self.stderr_text = doc.get("stderr") or ""      # type: str
        self.stdout_bytes = doc.get("stdout_bytes", 0)  # type: int
        self.stderr_bytes = doc.get("stderr_bytes", 0)  # type: int
        self.stdout_truncated = bool(doc.get("stdout_truncated"))  # type: bool
        self.stderr_truncated = bool(doc.get("stderr_truncated"))  # type: bool
        self.diagnostics = [Diagnostic(d) for d in doc.get("diagnostics") or []]
        self.files = [OutputFile(n, m, d) for n, m, d in files]  # type: List[OutputFile]
        self.value = doc.get("value")                   # type: Any
        u = doc.get("usage") or {}
        self.usage = Usage(u.get("wall_ms", 0), u.get("cpu_ms", 0),
                           u.get("max_rss_bytes", 0))   # type: Usage
        b = doc.get("backend")
        self.backend = b.get("name") if isinstance(b, dict) else b  # type: Optional[str]
        self.policy_digest = doc.get("policy_digest")   # type: Optional[str]
        self.plan_digest = doc.get("plan_digest")       # type: Optional[str]
        self.exit_status = exit_status                  # type: int

    @property
    def ok(self) -> bool:
        """The status is success."""
        return self.status == Status.SUCCESS

    @property
    def summary(self) -> str:
        """"status: first diagnostic message", as govex prints it."""
        if self.diagnostics:
            return "%s: %s" % (self.status, self.diagnostics[0].message)
        return str(self.status)

    def __repr__(self) -> str:
        return "<govex.Result %s exit_code=%r stdout=%r>" % (
            self.status, self.exit_code, self.stdout[:60])


class BackendReport:
    """A govex.backend/v1 report: name, available, the controls it enforces here and
    those it cannot, with the reason (unavailable: [(control, reason)])."""

    __slots__ = ("name", "available", "backend_version", "enforced", "unavailable", "doc")

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = dict(doc)                            # type: Dict[str, Any]
        self.name = str(doc.get("name"))                # type: str
        self.available = bool(doc.get("available"))     # type: bool
        self.backend_version = doc.get("backend_version")  # type: Optional[str]
        self.enforced = list(doc.get("enforced") or [])  # type: List[str]
        self.unavailable = [(u.get("control"), u.get("reason"))
                            for u in doc.get("unavailable") or []
                            ]  # type: List[Tuple[str, str]]

    def __repr__(self) -> str:
        return "<govex.BackendReport %s available=%r>" % (self.name, self.available)


# ---------------------------------------------------------------- cancellation

class Cancel:
    """A cancellation token; pass it as cancel= to any number of runs.

    cancel() cancels every run using it, now and later (a cancelled token stays
    cancelled).  It is one write(2): safe from another thread and from a signal
    handler (signal.signal(signal.SIGTERM, lambda *a: token.cancel())).
    """

    __slots__ = ("_cap", "_cancelled")

    def __init__(self) -> None:
        self._cap = _govex.cancel_new()
        self._cancelled = False

    def cancel(self) -> None:
        """Cancels the runs using this token; they end with status cancelled."""
        self._cancelled = True
        _govex.cancel(self._cap)

    @property
    def cancelled(self) -> bool:
        return self._cancelled


# ---------------------------------------------------------------- plans

class Plan:
    """A plan made by Runtime.plan(), plan_call() or plan_exec() and not run yet.

    json: the canonical plan (what a reviewer approves), digest its sha256.  A request
    the policy refuses makes no plan: then refusal is the Result and json is None.
    Runtime.execute(plan) runs exactly this plan.
    """

    __slots__ = ("kind", "json", "digest", "function", "source_path", "refusal",
                 "_cap", "_request")

    def __init__(self, kind: str, cap: Any, request: Dict[str, Any],
                 refusal: Optional[Result]) -> None:
        self.kind = kind                       # type: str
        self._cap = cap
        self._request = request
        self.refusal = refusal                 # type: Optional[Result]
        self.json = None                       # type: Optional[str]
        self.digest = None                     # type: Optional[str]
        self.function = None                   # type: Optional[str]
        self.source_path = None                # type: Optional[str]
        if cap is not None:
            canon, self.digest, self.function, self.source_path = _govex.plan_info(cap)
            self.json = canon.decode("utf-8")

    @property
    def ok(self) -> bool:
        """A plan was made (the request was not refused)."""
        return self._cap is not None

    @property
    def doc(self) -> Optional[Dict[str, Any]]:
        """The canonical plan, decoded."""
        return None if self.json is None else _json.loads(self.json)

    def __repr__(self) -> str:
        if self.refusal is not None:
            return "<govex.Plan %s refused: %s>" % (self.kind, self.refusal.summary)
        return "<govex.Plan %s %s>" % (self.kind, self.digest)


# ---------------------------------------------------------------- requests

OutputFn = Callable[[int, bytes], Any]
Files = Union[Mapping[str, Union[bytes, str]], Iterable[Tuple[str, Union[bytes, str]]]]
PolicyArg = Union[None, str, Mapping[str, Any], "os.PathLike[str]"]


def _b(v: Union[str, bytes], what: str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if hasattr(v, "__fspath__"):
        return os.fsencode(v)
    raise TypeError("%s: expected str or bytes, not %s" % (what, type(v).__name__))


def _cstr(v: Union[str, bytes], what: str) -> bytes:
    b = _b(v, what)
    if b"\0" in b:
        raise ValueError("%s: embedded NUL" % what)
    return b


def _limits(limits: Optional[Mapping[str, int]]) -> Optional[Tuple[int, ...]]:
    if not limits:
        return None
    unknown = sorted(set(limits) - set(LIMITS))
    if unknown:
        raise ValueError("limits: unknown %s (known: %s)" % (", ".join(unknown),
                                                           ", ".join(LIMITS)))
    out = []
    for name in LIMITS:
        v = limits.get(name) or 0
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError("limits.%s: expected a non-negative integer" % name)
        out.append(v)
    return tuple(out)


def _files(files: Optional[Files]) -> Optional[List[Tuple[bytes, bytes]]]:
    if not files:
        return None
    items = files.items() if isinstance(files, Mapping) else files
    return [(_cstr(n, "files name"), _b(d, "files data")) for n, d in items]


def _strv(v: Optional[Union[Sequence[str], Mapping[str, str]]], what: str
          ) -> Optional[List[bytes]]:
    if v is None:
        return None
    if isinstance(v, Mapping):
        v = ["%s=%s" % kv for kv in v.items()]
    if isinstance(v, (str, bytes)):
        raise TypeError("%s: expected a list of strings, not a string" % what)
    return [_cstr(s, what) for s in v]


class _Output:
    """on_output as the C side calls it: the user's function, whose first exception is
    kept (and stops further calls) rather than raised into the library."""

    __slots__ = ("fn", "exc")

    def __init__(self, fn: OutputFn) -> None:
        self.fn = fn
        self.exc = None  # type: Optional[BaseException]

    def __call__(self, stream: int, data: bytes) -> None:
        if self.exc is not None:
            return
        try:
            self.fn(stream, data)
        except BaseException as e:  # noqa: B902 (re-raised after the run)
            self.exc = e


def _common(req: Dict[str, Any], stdin: Optional[Union[str, bytes]], files: Optional[Files],
            limits: Optional[Mapping[str, int]], env: Any, needs: int, metadata: Any,
            outputs: bool) -> Dict[str, Any]:
    if stdin is not None:
        req["stdin"] = _b(stdin, "stdin")
    req["files"] = _files(files)
    req["limits"] = _limits(limits)
    req["env"] = _strv(env, "env")
    req["metadata"] = _strv(metadata, "metadata")
    req["needs"] = int(needs)
    req["outputs"] = bool(outputs)
    return req


def _policy_args(policy: PolicyArg) -> Tuple[Optional[str], Optional[bytes]]:
    if policy is None:
        return "strict", None
    if hasattr(policy, "__fspath__"):
        with open(policy, "rb") as f:
            return None, f.read()
    if isinstance(policy, Mapping):
        return None, _json.dumps(policy).encode("utf-8")
    if isinstance(policy, bytes):
        return None, policy
    if isinstance(policy, str):
        if policy.lstrip().startswith("{"):
            return None, policy.encode("utf-8")
        return policy, None
    raise TypeError("policy: expected None, a preset name, a dict, a JSON text or a path")


def _is_path(source: Any) -> bool:
    if hasattr(source, "__fspath__"):
        return True
    return (isinstance(source, str) and "\n" not in source
            and source.endswith((".py", ".ipynb")))


# ---------------------------------------------------------------- the runtime

class Runtime:
    """A policy and what govex prepared for it; serves many runs, from several threads.

    policy: None (the strict preset), a preset name ("strict", "workspace",
    "trusted"), a policy as a dict or a JSON text (govex-policy(5)), or a path
    (os.PathLike) of a policy file.  warm=True starts the warm-run templates now
    (long-lived hosts); should they fail, runs go on cold and warm_error says why.
    backend forces a backend ("restricted", "controlled"); probe_cache_dir caches the
    interpreter probe across processes.  A context manager: close() on exit.
    """

    def __init__(self, policy: PolicyArg = None, warm: bool = False, *,
                 backend: Optional[str] = None, probe_cache_dir: Optional[str] = None
                 ) -> None:
        preset, doc = _policy_args(policy)
        cap, self.warm_error = _govex.runtime_new(
            preset, doc, backend, probe_cache_dir, bool(warm)
        )  # type: Any, Optional[str]
        self._cap = cap
        self._lock = threading.Lock()
        self._busy = 0
        self._closing = False
        canon, self.policy_digest = _govex.runtime_policy(cap)  # type: bytes, str
        self.policy_json = canon.decode("utf-8")                # type: str

    # -- lifetime

    def close(self) -> None:
        """Frees the runtime (at once, or when the calls in progress on other threads
        end).  Later calls raise ValueError.  Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if self._busy:
                return
        _govex.runtime_close(self._cap)

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _enter(self) -> Any:
        with self._lock:
            if self._closing:
                raise ValueError("govex.Runtime is closed")
            self._busy += 1
        return self._cap

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1
            last = self._closing and not self._busy
        if last:
            _govex.runtime_close(self._cap)

    def _invoke(self, fn: Callable[..., Any], req: Dict[str, Any], *extra: Any) -> Any:
        """fn(runtime, req, *extra) with the GIL released; from the main thread, on a
        helper thread so that signal handlers run meanwhile (a KeyboardInterrupt or an
        exception a handler raises cancels the run, then is raised)."""
        cap = self._enter()
        if threading.current_thread() is not threading.main_thread():
            try:
                return fn(cap, req, *extra)
            finally:
                self._leave()
        if req.get("cancel") is None:  # a token of this run's own, to cancel it
            req = dict(req, cancel=_govex.cancel_new())
        token = req["cancel"]
        # box["owner"]: who leaves the runtime, the helper thread (once it has started:
        # the run's end leaves) or the caller (interrupted before the thread started: it
        # then runs nothing).  dict.setdefault decides, atomically.
        box = {}  # type: Dict[str, Any]
        # released when the run is over.  Not Thread.join(): interrupted by an exception,
        # some versions mark the thread stopped while it still runs (bpo-45274).  An
        # interrupted acquire() is retried until box["over"]: an exception may come
        # after the acquire() that ended the wait, and the lock is not released again.
        done = threading.Lock()
        done.acquire()

        def target() -> None:
            if box.setdefault("owner", "thread") != "thread":
                return
            try:
                box["r"] = fn(cap, req, *extra)
            except BaseException as e:  # noqa: B902 (raised on the caller's thread)
                box["e"] = e
            finally:
                self._leave()
                box["over"] = True
                done.release()

        pending = None  # type: Optional[BaseException]
        try:
            threading.Thread(target=target, name="govex-run", daemon=True).start()
            while "over" not in box:
                try:
                    done.acquire()
                except BaseException as e:  # noqa: B902 (a signal handler's exception)
                    _govex.cancel(token)
                    if pending is None:
                        pending = e
        except BaseException:  # noqa: B902 (between the waits: the run is cancelled)
            _govex.cancel(token)
            if box.setdefault("owner", "caller") == "caller":
                self._leave()
            raise
        if pending is not None:
            raise pending
        if "e" in box:
            raise box["e"]
        return box["r"]

    def _result(self, fn: Callable[..., Any], req: Dict[str, Any], *extra: Any) -> Result:
        out = req.get("on_output")
        res = Result(self._invoke(fn, req, *extra))
        if isinstance(out, _Output) and out.exc is not None:
            if not isinstance(out.exc, Exception):  # KeyboardInterrupt, SystemExit
                raise out.exc
            raise OutputCallbackError(res, out.exc) from out.exc
        return res

    # -- information

    def backends(self) -> List[BackendReport]:
        """The govex.backend/v1 reports of this host's backends."""
        cap = self._enter()
        try:
            return [BackendReport(d) for d in _json.loads(_govex.runtime_backends(cap))]
        finally:
            self._leave()

    def stats(self) -> Dict[str, Any]:
        """The runtime's counters (runs in flight, warm runs, runnable...)."""
        cap = self._enter()
        try:
            return _json.loads(_govex.runtime_stats(cap))  # type: ignore[no-any-return]
        finally:
            self._leave()

    # -- requests

    def _run_request(self, code: Union[str, bytes], stdin: Optional[Union[str, bytes]],
                     files: Optional[Files], limits: Optional[Mapping[str, int]],
                     on_output: Optional[OutputFn], cancel: Optional[Cancel], env: Any,
                     needs: int, metadata: Any, outputs: bool, repl: bool,
                     inputs: Optional[Mapping[str, Any]], source_path: Optional[str],
                     workdir: Optional[str]) -> Dict[str, Any]:
        req = {"code": _b(code, "code"), "repl": bool(repl)}  # type: Dict[str, Any]
        if inputs is not None:
            req["inputs"] = _json.dumps(inputs).encode("utf-8")
        if source_path is not None:
            req["source_path"] = _cstr(source_path, "source_path")
        if workdir is not None:
            req["workdir"] = _cstr(workdir, "workdir")
        _attach(req, on_output, cancel)
        return _common(req, stdin, files, limits, env, needs, metadata, outputs)

    def run(self, code: Union[str, bytes], *, stdin: Optional[Union[str, bytes]] = None,
            files: Optional[Files] = None, limits: Optional[Mapping[str, int]] = None,
            on_output: Optional[OutputFn] = None, cancel: Optional[Cancel] = None,
            env: Optional[Union[Sequence[str], Mapping[str, str]]] = None, needs: int = 0,
            metadata: Optional[Union[Sequence[str], Mapping[str, str]]] = None,
            outputs: bool = False, repl: bool = False,
            inputs: Optional[Mapping[str, Any]] = None, source_path: Optional[str] = None,
            workdir: Optional[str] = None) -> Result:
        """Runs Python code under the runtime's policy and returns its Result.

        stdin: the run's standard input.  files: {name: data} placed read-only in its
        workdir.  limits: {"wall_ms": 2000, ...} (LIMITS; at most the policy's).
        on_output(stream, data): called as output arrives (stream 1 stdout, 2 stderr),
        on a thread of govex's, before the run ends; it must not block for long.  Should
        it raise, it is not called again, the run goes on, and run() raises
        OutputCallbackError (KeyboardInterrupt and SystemExit as they are).
        cancel: a Cancel.  env: "NAME=VALUE" strings or a dict (names the policy
        allows).  needs: NEED_* bits.  outputs: collect $GOVEX_OUTPUT_DIR into files.
        repl: run in govex's worker; a final expression's value is Result.value, inputs
        is INPUTS.
        """
        req = self._run_request(code, stdin, files, limits, on_output, cancel, env, needs,
                                metadata, outputs, repl, inputs, source_path, workdir)
        return self._result(_govex.run, req)

    def _call_request(self, source: Union[str, bytes, "os.PathLike[str]"], function: str,
                      args: Optional[Sequence[Any]], kwargs: Optional[Mapping[str, Any]],
                      module: Optional[str], notebook: Optional[bool],
                      files: Optional[Files], limits: Optional[Mapping[str, int]],
                      on_output: Optional[OutputFn], cancel: Optional[Cancel],
                      metadata: Any, outputs: bool) -> Dict[str, Any]:
        req = {"function": _cstr(function, "function")}  # type: Dict[str, Any]
        if _is_path(source):
            path = os.fsdecode(os.path.abspath(os.fspath(source)))
            with open(path, "rb") as f:
                req["source"] = f.read()
            req["path"] = _cstr(path, "path")
            if notebook is None:
                notebook = path.endswith(".ipynb")
        else:
            req["source"] = _b(source, "source")  # type: ignore[arg-type]
        req["notebook"] = bool(notebook)
        if module is not None:
            req["module"] = _cstr(module, "module")
        named = dict(kwargs or {})  # type: Dict[str, Any]
        if args:
            names = self._parameters(req, function)
            if len(args) > len(names):
                raise TypeError("%s() takes %d positional arguments but %d were given"
                                % (function, len(names), len(args)))
            for name, value in zip(names, args):
                if name in named:
                    raise TypeError("%s() got multiple values for argument %r"
                                    % (function, name))
                named[name] = value
        req["args"] = _json.dumps(named, allow_nan=False).encode("utf-8")
        _attach(req, on_output, cancel)
        req["files"] = _files(files)
        req["limits"] = _limits(limits)
        req["metadata"] = _strv(metadata, "metadata")
        req["outputs"] = bool(outputs)
        return req

    def _parameters(self, req: Dict[str, Any], function: str) -> List[str]:
        """The names of function's positional parameters, from the module's inspection."""
        doc = self.inspect(req["source"], module=None, notebook=req["notebook"],
                           path=req.get("path"))
        for fn in doc.get("functions", []):
            if fn.get("name") == function:
                return [p["name"] for p in fn.get("parameters", [])
                        if p.get("kind") in ("positional_only", "positional_or_keyword")]
        raise TypeError("%s: no such top-level function in the module" % function)

    def inspect(self, source: Union[str, bytes], *, module: Optional[str] = None,
                notebook: bool = False, path: Optional[Union[str, bytes]] = None
                ) -> Dict[str, Any]:
        """The govex.inspection/v1 document of a module's source (static: the module is
        not imported).  Invalid source raises ValueError with the refusal's summary."""
        req = {"source": _b(source, "source"), "notebook": bool(notebook)
               }  # type: Dict[str, Any]
        if module is not None:
            req["module"] = _cstr(module, "module")
        if path is not None:
            req["path"] = _cstr(path, "path")
        doc, raw = self._invoke(_govex.inspect, req)
        if doc is None:
            raise ValueError("govex inspect: %s" % Result(raw).summary)
        return _json.loads(doc)  # type: ignore[no-any-return]

    def call(self, source: Union[str, bytes, "os.PathLike[str]"], function: str,
             args: Optional[Sequence[Any]] = None, kwargs: Optional[Mapping[str, Any]] = None,
             *, module: Optional[str] = None, notebook: Optional[bool] = None,
             files: Optional[Files] = None, limits: Optional[Mapping[str, int]] = None,
             on_output: Optional[OutputFn] = None, cancel: Optional[Cancel] = None,
             metadata: Any = None, outputs: bool = False) -> Result:
        """Calls one top-level function of a module in a fresh worker (Python >= 3.8 in
        the sandbox); Result.value is its JSON return value.

        source: a path (os.PathLike, or a str ending in .py/.ipynb) or the module's
        source text.  args: positional values (named from the module's inspection,
        one more worker run); kwargs: {parameter: value}.  Values are JSON.
        """
        req = self._call_request(source, function, args, kwargs, module, notebook, files,
                                 limits, on_output, cancel, metadata, outputs)
        return self._result(_govex.call, req)

    def _exec_request(self, argv: Optional[Sequence[str]], shell: Optional[str],
                      stdin: Optional[Union[str, bytes]], files: Optional[Files],
                      limits: Optional[Mapping[str, int]], on_output: Optional[OutputFn],
                      cancel: Optional[Cancel], env: Any, needs: int, metadata: Any,
                      outputs: bool) -> Dict[str, Any]:
        req = {}  # type: Dict[str, Any]
        if (argv is None) == (shell is None):
            raise TypeError("exec: give argv or shell=, not both")
        if argv is not None:
            if isinstance(argv, (str, bytes)):
                raise TypeError("exec: argv is a list (a command string is shell=)")
            if not argv:
                raise ValueError("exec: argv is empty")
            req["argv"] = _strv(argv, "argv")
        else:
            req["shell"] = _cstr(shell, "shell")  # type: ignore[arg-type]
        _attach(req, on_output, cancel)
        return _common(req, stdin, files, limits, env, needs, metadata, outputs)

    def exec(self, argv: Optional[Sequence[str]] = None, *, shell: Optional[str] = None,
             stdin: Optional[Union[str, bytes]] = None, files: Optional[Files] = None,
             limits: Optional[Mapping[str, int]] = None, on_output: Optional[OutputFn] = None,
             cancel: Optional[Cancel] = None,
             env: Optional[Union[Sequence[str], Mapping[str, str]]] = None, needs: int = 0,
             metadata: Any = None, outputs: bool = False) -> Result:
        """Runs an executable, argv first (argv[0] a path or a name on PATH), under the
        policy; or shell="command" as /bin/sh -c when the policy allows a shell."""
        req = self._exec_request(argv, shell, stdin, files, limits, on_output, cancel, env,
                                 needs, metadata, outputs)
        return self._result(_govex.exec, req)

    # -- plans

    def plan(self, code: Union[str, bytes], **kw: Any) -> Plan:
        """Plans a run (the arguments of run()) without running anything; execute()
        runs it.  A refused request gives a Plan whose refusal is the Result."""
        req = self._run_request(code, kw.pop("stdin", None), kw.pop("files", None),
                                kw.pop("limits", None), kw.pop("on_output", None),
                                kw.pop("cancel", None), kw.pop("env", None),
                                kw.pop("needs", 0), kw.pop("metadata", None),
                                kw.pop("outputs", False), kw.pop("repl", False),
                                kw.pop("inputs", None), kw.pop("source_path", None),
                                kw.pop("workdir", None))
        _no_more(kw, "plan")
        return self._plan("run", _govex.plan, req)

    def plan_call(self, source: Union[str, bytes, "os.PathLike[str]"], function: str,
                  args: Optional[Sequence[Any]] = None,
                  kwargs: Optional[Mapping[str, Any]] = None, **kw: Any) -> Plan:
        """Plans a call (the arguments of call()): inspects the module and binds the
        source, the function's signature and the policy; runs no user code."""
        req = self._call_request(source, function, args, kwargs, kw.pop("module", None),
                                 kw.pop("notebook", None), kw.pop("files", None),
                                 kw.pop("limits", None), kw.pop("on_output", None),
                                 kw.pop("cancel", None), kw.pop("metadata", None),
                                 kw.pop("outputs", False))
        _no_more(kw, "plan_call")
        return self._plan("call", _govex.plan_call, req)

    def plan_exec(self, argv: Optional[Sequence[str]] = None, **kw: Any) -> Plan:
        """Plans an exec (the arguments of exec())."""
        req = self._exec_request(argv, kw.pop("shell", None), kw.pop("stdin", None),
                                 kw.pop("files", None), kw.pop("limits", None),
                                 kw.pop("on_output", None), kw.pop("cancel", None),
                                 kw.pop("env", None), kw.pop("needs", 0),
                                 kw.pop("metadata", None), kw.pop("outputs", False))
        _no_more(kw, "plan_exec")
        return self._plan("exec", _govex.plan_exec, req)

    def _plan(self, kind: str, fn: Callable[..., Any], req: Dict[str, Any]) -> Plan:
        cap, raw = self._invoke(fn, req)
        return Plan(kind, cap, req, None if raw is None else Result(raw))

    def execute(self, plan: Plan, *, on_output: Optional[OutputFn] = None,
                cancel: Optional[Cancel] = None) -> Result:
        """Runs exactly plan with the request it was made from: the request is planned
        again and must give the same plan byte for byte (else source_mismatch or
        policy_refused, and nothing runs).  A refused plan returns its refusal.
        on_output and cancel, which are not part of a plan, may be given anew."""
        if plan.refusal is not None:
            return plan.refusal
        req = dict(plan._request)
        if on_output is not None or cancel is not None:
            _attach(req, on_output or _unwrap(req.get("on_output")), cancel)
        elif isinstance(req.get("on_output"), _Output):
            req["on_output"] = _Output(req["on_output"].fn)
        fn = {"run": _govex.run, "call": _govex.call, "exec": _govex.exec}[plan.kind]
        return self._result(fn, req, plan._cap)

    def __repr__(self) -> str:
        return "<govex.Runtime %s%s>" % (self.policy_digest,
                                        " closed" if self._closing else "")


def _attach(req: Dict[str, Any], on_output: Optional[OutputFn],
            cancel: Optional[Cancel]) -> None:
    if on_output is not None:
        if not callable(on_output):
            raise TypeError("on_output: expected a callable")
        req["on_output"] = _Output(on_output)
    if cancel is not None:
        if not isinstance(cancel, Cancel):
            raise TypeError("cancel: expected a govex.Cancel")
        req["cancel"] = cancel._cap


def _unwrap(out: Any) -> Optional[OutputFn]:
    return out.fn if isinstance(out, _Output) else None


def _no_more(kw: Dict[str, Any], what: str) -> None:
    if kw:
        raise TypeError("%s() got unexpected keyword arguments: %s"
                        % (what, ", ".join(sorted(kw))))
