# SPDX-License-Identifier: MIT
# govex worker: the protocol's vocabulary and govex.frame/v1 (an 8-byte unsigned
# big-endian length, then that many bytes of UTF-8 JSON): the bounds, the failure codes
# and their messages, Failure, strict JSON, the descriptors.  No user code runs here.
import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

# bound before any user code runs (a module may rebind json's attributes)
json_dumps = json.dumps
json_loads = json.loads

FRAME_VERSION = "govex.frame/v1"
INSPECTION_VERSION = "govex.inspection/v1"
REQUEST_MAX = 64 << 20
RESULT_DEPTH_MAX = 1000
# values (a call's return value, a snippet's REPL value): nodes visited with sharing
# expanded, so `a = [a, a]` sixty times is refused after a million steps, not 2**60
VALUE_NODES_MAX = 1000000
SNIPPET_DEPTH_MAX = 200
TRACEBACK_MAX = 8192
EXCEPTION_MESSAGE_MAX = 2048

# The codes a failure frame carries; the parent takes exactly these from a frame
# (src/lib/callframe.c, frame_code_ok)
MESSAGES = {
    "bad_request": "the request frame is not valid",
    "internal_error": "the worker failed",
    "digest_mismatch": "the source, plan or inspection does not match its digest",
    "syntax_error": "the source is not valid python",
    "source_too_complex": "the source is too deeply nested to analyse",
    "input_too_large": "the arguments exceed the input limit",
    "args_not_object": "the arguments are not a json object",
    "unknown_argument": "an argument names no parameter",
    "missing_argument": "a required argument is missing",
    "null_not_allowed": "null is not allowed by a parameter's annotation",
    "function_missing": "the module defines no such function",
    "not_a_function": "the name is not bound to a plain function",
    "async_mismatch": "the function is not sync or async as planned",
    "generator_function": "the function is a generator",
    "signature_mismatch": "the function's signature differs from the plan",
    "not_eligible": "the planned function is not eligible for a call",
    "module_error": "the module raised an exception while loading",
    "exception": "the function raised an exception",
    "not_json": "the result is not finite json data",
    "too_deep": "the result is nested too deeply",
    "int_out_of_range": "the result has an integer outside the 64-bit range",
    "output_too_large": "the result exceeds the output limit",
}


class Failure(Exception):
    def __init__(self, status: str, code: str, exc: "Optional[BaseException]" = None,
                 message: "Optional[str]" = None) -> None:
        Exception.__init__(self, code)
        self.status = status
        self.code = code
        self.exc_type = type_name(exc) if exc is not None else None
        self.message = message
        self.exception = None  # type: Optional[Dict[str, str]]
        self.fix = None  # type: Optional[str]  # a result_invalid's fix, by name (VALUE_FIXES)

    def frame(self) -> "Dict[str, Any]":
        f = {"version": FRAME_VERSION, "ok": False, "status": self.status,
             "code": self.code, "message": self.message or MESSAGES.get(self.code, "failed"),
             "exception_type": self.exc_type}  # type: Dict[str, Any]
        if self.exception is not None:
            f["exception"] = self.exception
        if self.fix is not None:
            f["fix"] = self.fix
        return f


def type_name(exc: object) -> "Optional[str]":
    try:
        # (a metaclass may make it anything)
        name = type(exc).__name__  # type: object
        if not isinstance(name, str):
            return None
        # a type name is chosen by the code under test: keep it an identifier, so it
        # cannot smuggle a path or a message into the result
        name = name[:128]
        if not name.isidentifier() or any(ord(c) > 127 for c in name):
            return None
        return name
    except BaseException:
        return None


def trace(exc: BaseException) -> None:
    # the worker's own failures: tracebacks go to stderr only
    try:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    except BaseException:
        pass


def bad_request(message: str) -> Failure:
    return Failure("worker_failed", "bad_request", message=message)


# ---------------------------------------------------------------------------------------
# descriptors


def take_descriptors() -> int:
    """Takes fd 3 for the response (non-inheritable); stdout and stderr stay the run's,
    made line buffered and write-through."""
    try:
        fd = os.dup(3)
    except OSError:
        try:
            os.write(2, b"govex worker: no response descriptor on fd 3\n")
        except OSError:
            pass
        os._exit(2)
    os.set_inheritable(fd, False)
    os.close(3)
    for name in ("stdout", "stderr"):
        _line_buffered(name)
    return fd


def _line_buffered(name: str) -> None:
    s = getattr(sys, name)
    try:
        s.reconfigure(line_buffering=True, write_through=True)  # 3.7+
        return
    except AttributeError:
        pass
    except BaseException:
        return
    try:  # 3.6: a new wrapper over the same buffer (sys.__stdout__ keeps the old alive)
        import io
        setattr(sys, name, io.TextIOWrapper(s.buffer, encoding=s.encoding, errors=s.errors,
                                            line_buffering=True, write_through=True))
    except BaseException:
        pass


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            break
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------
# strict JSON and frames


def deep(fn: "Callable[..., Any]", *args: "Any", **kw: "Any") -> "Any":
    """Runs the worker's own JSON work with room for RESULT_DEPTH_MAX nested containers
    (the C encoder and decoder count recursion; user code keeps the default limit)."""
    old = sys.getrecursionlimit()
    if old < 4 * RESULT_DEPTH_MAX:
        sys.setrecursionlimit(4 * RESULT_DEPTH_MAX)
    try:
        return fn(*args, **kw)
    finally:
        sys.setrecursionlimit(old)


def canonical(value: object) -> str:
    """Canonical JSON text: sorted keys, compact, UTF-8, no NaN/inf."""
    text = deep(json_dumps, value, sort_keys=True, separators=(",", ":"),
                ensure_ascii=False, allow_nan=False)  # type: str
    return text


def encode_frame(obj: object) -> bytes:
    data = canonical(obj).encode("utf-8")
    return len(data).to_bytes(8, "big") + data


def _reject_constant(name: str) -> None:
    raise ValueError("non-finite number")


def _no_duplicates(pairs: "List[Tuple[str, Any]]") -> "Dict[str, Any]":
    d = {}  # type: Dict[str, Any]
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key")
        d[k] = v
    return d


def parse_json_bytes(data: bytes) -> "Any":
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity, no lone surrogates."""
    return parse_json_text(data.decode("utf-8"))


def parse_json_text(text: str) -> "Any":
    value = deep(json_loads, text, object_pairs_hook=_no_duplicates,
                 parse_constant=_reject_constant)
    _reject_surrogates(value)
    return value


def _reject_surrogates(value: "Any") -> None:
    stack = [value]  # type: List[Any]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is str:
            v.encode("utf-8")
        elif t is list:
            stack.extend(v)
        elif t is dict:
            for k, x in v.items():
                k.encode("utf-8")
                stack.append(x)


def decode_frame(data: bytes) -> "Dict[str, Any]":
    """One frame's payload from bytes holding exactly one frame; Failure otherwise."""
    if len(data) < 8:
        raise bad_request("short frame header")
    n = int.from_bytes(data[:8], "big")
    if n > REQUEST_MAX:
        raise bad_request("frame length exceeds 64 mib")
    if len(data) - 8 < n:
        raise bad_request("truncated frame")
    if len(data) - 8 > n:
        raise bad_request("bytes follow the frame")
    return _payload(data[8:])


def _payload(payload: bytes) -> "Dict[str, Any]":
    try:
        obj = parse_json_bytes(payload)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        raise bad_request("the frame is not valid json")
    if type(obj) is not dict:
        raise bad_request("the request is not an object")
    return obj


def read_request(fd: int) -> "Dict[str, Any]":
    header = _read_exact(fd, 8)
    if len(header) < 8:
        raise bad_request("short frame header")
    n = int.from_bytes(header, "big")
    if n > REQUEST_MAX:
        raise bad_request("frame length exceeds 64 mib")
    payload = _read_exact(fd, n)
    if len(payload) < n:
        raise bad_request("truncated frame")
    req = _payload(payload)
    # a snippet's frame is followed by the program's stdin (read by the user's code)
    if req.get("op") != "snippet" and os.read(fd, 1):
        raise bad_request("bytes follow the frame")
    return req


def sha256_text(text: str) -> str:
    # the interpreter's own SHA-256 module where it has one (3.6-3.11: _sha256, 3.12 and
    # later: _sha2): builtin, so a run does not load OpenSSL (hashlib) for one digest
    try:
        from _sha256 import sha256  # type: ignore[import]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import]
        except ImportError:
            from hashlib import sha256
    hexdigest = sha256(text.encode("utf-8")).hexdigest()  # type: str
    return "sha256:" + hexdigest


def field(req: "Dict[str, Any]", name: str, types: "Tuple[type, ...]") -> "Any":
    v = req.get(name)
    if type(v) not in types:
        raise bad_request("field missing or mistyped: " + name)
    return v
