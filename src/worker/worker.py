# SPDX-License-Identifier: MIT
# govex call-mode worker.  Started by the C side as
#     python -I [-S] -c <this text>
# with fd 0 = one request frame then EOF, fd 1/2 = output pipes, fd 3 = the response
# descriptor.  govex.frame/v1: an 8-byte unsigned big-endian length, then that many bytes
# of UTF-8 JSON.  One request in, exactly one response frame out on the response
# descriptor, exit status 0.  Standard library only; Python 3.8 to 3.13.
#
# A call's worker also writes one EMPTY frame (8 zero bytes) on the response descriptor
# just before the module's code runs: the "module starts" mark.  Nothing of the caller's
# code has run before it, so the parent knows that a response without the mark came from
# this file alone, and that one after it may have been written by the module (the parent
# then trusts only what the module could have caused anyway; see call.c).
#
# Operations:
#   inspect  parse the source with ast (never import it) and describe its top-level
#            functions: signature, docstring, eligibility and effects.  That code is in
#            src/worker/inspection/ (the files its `parts` lists, concatenated), which the
#            C side puts before this text for an inspection only.
#   call     verify the digest chain, compile the verified source, bind the planned
#            function, rebuild its arguments, run it, return its value as finite JSON.
#
# Failure frames carry a status, a short code, a fixed message and an exception's type
# name: never exception text, a traceback or a path.
import json
import os
import sys

# bound before any user code runs (a module may rebind json's attributes)
_json_dumps = json.dumps
_json_loads = json.loads

FRAME_VERSION = "govex.frame/v1"
INSPECTION_VERSION = "govex.inspection/v1"
REQUEST_MAX = 64 << 20
RESULT_DEPTH_MAX = 1000

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
    def __init__(self, status, code, exc=None, message=None):
        Exception.__init__(self, code)
        self.status = status
        self.code = code
        self.exc_type = _type_name(exc) if exc is not None else None
        self.message = message

    def frame(self):
        return {"version": FRAME_VERSION, "ok": False, "status": self.status,
                "code": self.code, "message": self.message or MESSAGES.get(self.code, "failed"),
                "exception_type": self.exc_type}


def _type_name(exc):
    try:
        name = type(exc).__name__
        if not isinstance(name, str):
            return None
        # a type name is chosen by the code under test: keep it an identifier, so it
        # cannot smuggle a path or a message into the result
        name = name[:128]
        if not name.isidentifier() or not name.isascii():
            return None
        return name
    except BaseException:
        return None


def _trace(exc):
    # tracebacks go to stderr only (the parent discards it for calls)
    try:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    except BaseException:
        pass


# ---------------------------------------------------------------------------------------
# descriptors and frames


def take_descriptors():
    """Takes fd 3 for the response (non-inheritable) and sends stdout to stderr."""
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
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    os.dup2(2, 1)
    import io
    try:
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
    except BaseException:
        sys.stdout = sys.stderr
    return fd


def _deep(fn, *args, **kw):
    """Runs the worker's own JSON work with room for RESULT_DEPTH_MAX nested containers
    (the C encoder and decoder count recursion; user code keeps the default limit)."""
    old = sys.getrecursionlimit()
    if old < 4 * RESULT_DEPTH_MAX:
        sys.setrecursionlimit(4 * RESULT_DEPTH_MAX)
    try:
        return fn(*args, **kw)
    finally:
        sys.setrecursionlimit(old)


def canonical(value):
    """Canonical JSON text: sorted keys, compact, UTF-8, no NaN/inf."""
    return _deep(_json_dumps, value, sort_keys=True, separators=(",", ":"),
                 ensure_ascii=False, allow_nan=False)


def encode_frame(obj):
    data = canonical(obj).encode("utf-8")
    return len(data).to_bytes(8, "big") + data


def _read_exact(fd, n):
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            break
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _reject_constant(name):
    raise ValueError("non-finite number")


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key")
        d[k] = v
    return d


def parse_json_bytes(data):
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity, no lone surrogates."""
    return parse_json_text(data.decode("utf-8"))


def parse_json_text(text):
    value = _deep(_json_loads, text, object_pairs_hook=_no_duplicates,
                  parse_constant=_reject_constant)
    _reject_surrogates(value)
    return value


def _reject_surrogates(value):
    stack = [value]
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


def decode_frame(data):
    """One frame's payload from bytes holding exactly one frame; Failure otherwise."""
    if len(data) < 8:
        raise Failure("worker_failed", "bad_request", message="short frame header")
    n = int.from_bytes(data[:8], "big")
    if n > REQUEST_MAX:
        raise Failure("worker_failed", "bad_request", message="frame length exceeds 64 mib")
    if len(data) - 8 < n:
        raise Failure("worker_failed", "bad_request", message="truncated frame")
    if len(data) - 8 > n:
        raise Failure("worker_failed", "bad_request", message="bytes follow the frame")
    return _payload(data[8:])


def _payload(payload):
    try:
        obj = parse_json_bytes(payload)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        raise Failure("worker_failed", "bad_request", message="the frame is not valid json")
    if type(obj) is not dict:
        raise Failure("worker_failed", "bad_request", message="the request is not an object")
    return obj


def read_request(fd):
    header = _read_exact(fd, 8)
    if len(header) < 8:
        raise Failure("worker_failed", "bad_request", message="short frame header")
    n = int.from_bytes(header, "big")
    if n > REQUEST_MAX:
        raise Failure("worker_failed", "bad_request", message="frame length exceeds 64 mib")
    payload = _read_exact(fd, n)
    if len(payload) < n:
        raise Failure("worker_failed", "bad_request", message="truncated frame")
    if os.read(fd, 1):
        raise Failure("worker_failed", "bad_request", message="bytes follow the frame")
    return _payload(payload)


def write_all(fd, data):
    view = memoryview(data)
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def sha256_text(text):
    import hashlib
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _field(req, name, types):
    v = req.get(name)
    if type(v) not in types:
        raise Failure("worker_failed", "bad_request", message="field missing or mistyped: " + name)
    return v


# ---------------------------------------------------------------------------------------
# request dispatch


def handle(req):
    if req.get("version") != FRAME_VERSION:
        raise Failure("worker_failed", "bad_request", message="unsupported frame version")
    op = req.get("op")
    source = _field(req, "source", (str,))
    digest = _field(req, "source_digest", (str,))
    module = _field(req, "module", (str,))
    filename = _field(req, "filename", (str,))
    if not module or "\0" in module or "\0" in filename:
        raise Failure("worker_failed", "bad_request", message="field missing or mistyped: module")
    if op == "inspect":
        if "inspect_source" not in globals():  # started without src/worker/inspection/
            raise Failure("worker_failed", "bad_request",
                          message="this worker has no inspection part")
        if sha256_text(source) != digest:
            raise Failure("source_mismatch", "digest_mismatch")
        return {"version": FRAME_VERSION, "ok": True, "status": "success",
                "inspection": inspect_source(source, digest, module, filename)}
    if op == "call":
        return do_call(req, source, digest, module, filename)
    raise Failure("worker_failed", "bad_request", message="unknown op")


# the response descriptor (set by main(); the call writes its "module starts" mark there)
_resp_fd = -1


def main():
    global _resp_fd
    resp_fd = take_descriptors()
    _resp_fd = resp_fd
    try:
        try:
            resp = handle(read_request(0))
        except Failure as f:
            resp = f.frame()
        try:
            if type(resp) is bytes:
                frame = len(resp).to_bytes(8, "big") + resp
            else:
                frame = encode_frame(resp)
        except BaseException as e:  # cannot happen for validated values; fail closed
            _trace(e)
            frame = encode_frame(Failure("worker_failed", "internal_error", e).frame())
    except BaseException as e:
        _trace(e)
        frame = encode_frame(Failure("worker_failed", "internal_error", e).frame())
    try:
        write_all(resp_fd, frame)
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    # no atexit handlers or lingering non-daemon threads of user code: the frame is out
    os._exit(0)


# ---------------------------------------------------------------------------------------
# call


def _entry_for(inspection, name):
    """The inspection's entry for a function name: the first of that name (a name defined
    twice is never eligible)."""
    functions = inspection.get("functions")
    for f in functions if type(functions) is list else ():
        if type(f) is dict and f.get("name") == name:
            return f
    return None


def do_call(req, source, digest, module, filename):
    plan_text = _field(req, "plan", (str,))
    plan_digest = _field(req, "plan_digest", (str,))
    inspection_text = _field(req, "inspection", (str,))
    fname = _field(req, "function", (str,))
    args = req.get("args")
    limits = _field(req, "limits", (dict,))
    in_max = limits.get("call_input_bytes")
    out_max = limits.get("call_output_bytes")
    if type(in_max) is not int or type(out_max) is not int or in_max < 0 or out_max < 0:
        raise Failure("worker_failed", "bad_request", message="field missing or mistyped: limits")

    # 1. the digest chain, before anything is compiled
    mismatch = Failure("source_mismatch", "digest_mismatch")
    if sha256_text(plan_text) != plan_digest:
        raise mismatch
    try:
        plan = parse_json_text(plan_text)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        raise Failure("worker_failed", "bad_request", message="the plan is not valid json")
    if type(plan) is not dict:
        raise Failure("worker_failed", "bad_request", message="the plan is not an object")
    if plan.get("kind") != "call":
        raise mismatch
    psrc = plan.get("source")
    if type(psrc) is not dict or psrc.get("digest") != digest or sha256_text(source) != digest:
        raise mismatch
    if sha256_text(inspection_text) != plan.get("inspection_digest"):
        raise mismatch
    try:
        inspection = parse_json_text(inspection_text)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        raise Failure("worker_failed", "bad_request", message="the inspection is not valid json")
    if type(inspection) is not dict:
        raise Failure("worker_failed", "bad_request", message="the inspection is not an object")
    if (inspection.get("version") != INSPECTION_VERSION
            or inspection.get("source_digest") != digest or inspection.get("module") != module):
        raise mismatch
    pfn = plan.get("function")
    entry = _entry_for(inspection, fname)
    if type(pfn) is not dict or entry is None or entry != pfn or pfn.get("name") != fname:
        raise mismatch
    params = pfn.get("parameters")
    if (pfn.get("eligible") is not True or type(params) is not list
            or any(type(p) is not dict for p in params)):
        raise Failure("binding_failed", "not_eligible")
    for p in params:
        if p.get("kind") in ("var_positional", "var_keyword"):
            raise Failure("binding_failed", "not_eligible")

    # 2. bounds and the arguments' shape (no user code has run yet)
    if type(args) is not dict:
        raise Failure("invalid_input", "args_not_object")
    if len((canonical(args) + "\n").encode("utf-8")) > in_max:
        raise Failure("invalid_input", "input_too_large")
    names = [p.get("name") for p in params]
    for k in args:
        if k not in names:
            raise Failure("invalid_input", "unknown_argument")
    for p in params:
        if p.get("has_default") is not True and p.get("name") not in args:
            raise Failure("invalid_input", "missing_argument")
    for p in params:
        if args.get(p.get("name"), 0) is None and annotation_rejects_null(p.get("annotation")):
            raise Failure("invalid_input", "null_not_allowed")

    want_async = pfn.get("async") is True
    if want_async:
        import asyncio  # before the module runs: its name may shadow a standard one
    import inspect as _inspect
    import types

    # 3. compile the verified text and run the module
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "syntax_error", e)
    # the "module starts" mark: from here on the module's code may write frames itself
    try:
        write_all(_resp_fd, bytes(8))
    except OSError:
        raise Failure("worker_failed", "internal_error")
    mod = types.ModuleType(module)
    previous = sys.modules.get(module)
    # registered under its name while it runs (dataclasses, pickle and typing look it
    # up), unless that name is a module already loaded (asyncio.py must not replace
    # the asyncio the worker itself uses)
    shadowing = previous is not None
    if not shadowing:
        sys.modules[module] = mod
    try:
        try:
            exec(code, mod.__dict__)
        except BaseException as e:
            _trace(e)
            raise Failure("execution_failed", "module_error", e)

        # 4. the binding, against the live object
        if fname not in mod.__dict__:
            raise Failure("binding_failed", "function_missing")
        fn = mod.__dict__[fname]
        if type(fn) is not types.FunctionType:
            raise Failure("binding_failed", "not_a_function")
        flags = fn.__code__.co_flags
        if flags & (0x20 | 0x200):  # CO_GENERATOR, CO_ASYNC_GENERATOR
            raise Failure("binding_failed", "generator_function")
        if bool(flags & 0x80) != want_async:  # CO_COROUTINE
            raise Failure("binding_failed", "async_mismatch")
        try:
            sig = _inspect.signature(fn)
        except BaseException as e:
            _trace(e)
            raise Failure("binding_failed", "signature_mismatch", e)
        kinds = {
            _inspect.Parameter.POSITIONAL_ONLY: "positional_only",
            _inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
            _inspect.Parameter.KEYWORD_ONLY: "keyword_only",
            _inspect.Parameter.VAR_POSITIONAL: "var_positional",
            _inspect.Parameter.VAR_KEYWORD: "var_keyword",
        }
        live = [(q.name, kinds[q.kind], q.default is not q.empty)
                for q in sig.parameters.values()]
        planned = [(p.get("name"), p.get("kind"), p.get("has_default")) for p in params]
        if live != planned:
            raise Failure("binding_failed", "signature_mismatch")

        # 5. arguments: positional-only by position, the rest by keyword
        pos = []
        kw = {}
        gap = []
        for q in sig.parameters.values():
            if q.kind is q.POSITIONAL_ONLY:
                if q.name in args:
                    pos.extend(gap)  # an omitted earlier one: its own default object
                    gap = []
                    pos.append(args[q.name])
                else:
                    gap.append(q.default)
            elif q.name in args:
                kw[q.name] = args[q.name]

        # 6. run
        try:
            if want_async:
                value = _run_async(asyncio, fn, pos, kw)
            else:
                value = fn(*pos, **kw)
        except BaseException as e:
            _trace(e)
            raise Failure("execution_failed", "exception", e)
    finally:
        if not shadowing:
            sys.modules.pop(module, None)

    # 7. the result: finite JSON only, within the output bound
    check_result(value, out_max)
    try:
        data = canonical(value).encode("utf-8")
    except (ValueError, TypeError, UnicodeError) as e:  # e.g. an int over the digit limit
        raise Failure("result_invalid", "not_json", e)
    except RecursionError as e:
        raise Failure("result_invalid", "too_deep", e)
    if len(data) + 1 > out_max:
        raise Failure("output_limit", "output_too_large")
    # the success frame, canonical like the others (keys in sorted order)
    return (b'{"ok":true,"status":"success","value":' + data
            + b',"version":"' + FRAME_VERSION.encode("ascii") + b'"}')


def _run_async(asyncio, fn, pos, kw):
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(fn(*pos, **kw))
    finally:
        try:
            asyncio.set_event_loop(None)
            loop.close()
        except BaseException:
            pass


def annotation_rejects_null(text):
    """Null is refused only for the plain annotations int, float, str, bool, list, dict and
    list[...], dict[...], List[...], Dict[...], typing.List[...], typing.Dict[...]
    (the same rule as the C side: whitespace removed; None, Optional or Any anywhere
    admit null)."""
    if type(text) is not str:
        return False
    t = "".join(c for c in text if c not in " \t\n\v\f\r")
    if "None" in t or "Optional" in t or "Any" in t:
        return False
    if t in ("int", "float", "str", "bool", "list", "dict"):
        return True
    for g in ("list[", "dict[", "List[", "Dict[", "typing.List[", "typing.Dict["):
        if t.startswith(g) and t.endswith("]"):
            return True
    return False


def check_result(value, out_max):
    """Finite JSON: None, bool, int, finite float, str, list, dict with str keys (exact
    types), at most RESULT_DEPTH_MAX deep.  Counts nodes so that a shared-reference bomb
    ends at the output bound rather than after exponential work."""
    inf = float("inf")
    stack = [(value, 0)]
    budget = out_max + 1
    while stack:
        v, d = stack.pop()
        budget -= 1
        if budget < 0:
            raise Failure("output_limit", "output_too_large")
        if d > RESULT_DEPTH_MAX:
            raise Failure("result_invalid", "too_deep")
        t = type(v)
        if v is None or t is bool:
            continue
        if t is int:
            # JSON has no integer bound, but the parent (and most JSON readers) keep
            # integers in 64 bits: a larger one could not be carried exactly
            if v < -(1 << 63) or v > (1 << 63) - 1:
                raise Failure("result_invalid", "int_out_of_range")
            continue
        if t is str:
            budget -= len(v)
            try:
                v.encode("utf-8")
            except UnicodeError:
                raise Failure("result_invalid", "not_json")
            continue
        if t is float:
            if v != v or v == inf or v == -inf:
                raise Failure("result_invalid", "not_json")
            continue
        if t is list:
            for x in v:
                stack.append((x, d + 1))
            continue
        if t is dict:
            for k, x in v.items():
                if type(k) is not str:
                    raise Failure("result_invalid", "not_json")
                budget -= len(k)
                try:
                    k.encode("utf-8")
                except UnicodeError:
                    raise Failure("result_invalid", "not_json")
                stack.append((x, d + 1))
            continue
        raise Failure("result_invalid", "not_json")


if __name__ == "__main__":
    main()
