# SPDX-License-Identifier: MIT
# govex call-mode worker.  Started by the C side as
#     python -I [-S] -c <this text>
# with fd 0 = one request frame then EOF (a snippet: then the program's stdin), fd 1/2 =
# the run's output pipes, fd 3 = the response descriptor.  govex.frame/v1: an 8-byte
# unsigned big-endian length, then that many bytes of UTF-8 JSON.  One request in, exactly
# one response frame out on the response descriptor, exit status 0 (a snippet: see below).
# Standard library only; Python 3.8 to 3.13 (op "snippet": 3.6 to 3.13, so this file
# keeps to 3.6's syntax).
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
#   snippet  a REPL run (src/lib/repl.c): compile the code as "<snippet>" (top-level
#            await where the interpreter has it), run it in a fresh __main__ with the
#            read-only INPUTS, and answer the trailing expression's value.  The frame is
#            written, then the interpreter ends as a python program would: exit 0, or 1
#            after an exception (its traceback on stderr, the exception in the frame), or
#            the status of a SystemExit (no frame).
#
# The user's stdout and stderr are the run's (line buffered, write-through).  Failure
# frames carry a status, a short code, a fixed message and an exception's type name;
# only an exception of the user's code adds "exception": its type, message and the
# traceback of the user's own frames (bounded), which the parent bounds again.
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
# values (a call's return value, a snippet's REPL value): nodes visited with sharing
# expanded, so `a = [a, a]` sixty times is refused after a million steps, not 2**60
VALUE_NODES_MAX = 1000000
SNIPPET_DEPTH_MAX = 200
TRACEBACK_MAX = 8192
EXCEPTION_MESSAGE_MAX = 2048

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
        self.exception = None
        self.fix = None  # a result_invalid's fix, by name (VALUE_FIXES)

    def frame(self):
        f = {"version": FRAME_VERSION, "ok": False, "status": self.status,
             "code": self.code, "message": self.message or MESSAGES.get(self.code, "failed"),
             "exception_type": self.exc_type}
        if self.exception is not None:
            f["exception"] = self.exception
        if self.fix is not None:
            f["fix"] = self.fix
        return f


def _type_name(exc):
    try:
        name = type(exc).__name__
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


def _trace(exc):
    # the worker's own failures: tracebacks go to stderr only
    try:
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    except BaseException:
        pass


def user_traceback(exc, filename):
    """The traceback python would print for an exception of the user's code, without
    govex's frames: the worker's own (wherever they are: INPUTS' methods too), and the
    outermost frames before the first one in FILENAME (asyncio's runner).  Text; "" when
    it cannot be formatted."""
    try:
        import traceback
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        mine = globals()
        frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
        stack = te.stack
        if len(frames) == len(stack):
            keep = [s for f, s in zip(frames, stack) if f.f_globals is not mine]
        else:  # cannot happen: keep what is not the worker's by name
            keep = [s for s in stack if s.filename != "<string>"]
        for i, s in enumerate(keep):
            if s.filename == filename:
                keep = keep[i:]
                break
        stack[:] = keep
        if not keep and hasattr(te, "exc_traceback"):  # 3.6 prints the header by it
            te.exc_traceback = None
        return "".join(te.format())
    except BaseException:
        return ""


def exception_failure(exc, filename, status="execution_failed"):
    """A Failure for an exception of the user's code: its traceback printed to stderr (as
    python would), and the frame's "exception" (type, message, bounded traceback)."""
    text = user_traceback(exc, filename)
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        message = str(exc)
    except BaseException:
        message = ""
    if type(message) is not str:
        message = ""
    if len(message) > EXCEPTION_MESSAGE_MAX:
        message = message[:EXCEPTION_MESSAGE_MAX] + " [truncated]"
    tb = text.encode("utf-8", "replace")
    if len(tb) > TRACEBACK_MAX:
        tb = tb[-TRACEBACK_MAX:]
        text = "[...]\n" + tb.decode("utf-8", "ignore")
    f = Failure(status, "exception", exc)
    f.exception = {"type": f.exc_type or "Exception", "message": message, "traceback": text}
    return f


# ---------------------------------------------------------------------------------------
# descriptors and frames


def take_descriptors():
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


def _line_buffered(name):
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
    req = _payload(payload)
    # a snippet's frame is followed by the program's stdin (read by the user's code)
    if req.get("op") != "snippet" and os.read(fd, 1):
        raise Failure("worker_failed", "bad_request", message="bytes follow the frame")
    return req


def write_all(fd, data):
    view = memoryview(data)
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def sha256_text(text):
    # the interpreter's own SHA-256 module where it has one (3.6-3.11: _sha256, 3.12 and
    # later: _sha2): builtin, so a run does not load OpenSSL (hashlib) for one digest
    try:
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return "sha256:" + sha256(text.encode("utf-8")).hexdigest()


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
    if op == "snippet":
        return do_snippet(req)
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
    exit_status = 0
    user_exit = None
    try:
        try:
            resp = handle(read_request(0))
        except _UserExit as u:
            # SystemExit (sys.exit(), exit()): an answer without a value, so that the
            # parent tells this from a process that ended without one (os._exit, the
            # response descriptor closed); the exit status is the code's
            user_exit = u.exc
            resp = {"version": FRAME_VERSION, "ok": True, "status": "success"}
        except Failure as f:
            resp = f.frame()
            if f.status == "execution_failed" and _snippet_running:
                exit_status = 1
        try:
            if resp is None:
                frame = b""
            elif type(resp) is bytes:
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
    if _snippet_running:
        # a snippet ends as a python program does: its atexit handlers and threads
        try:
            os.close(resp_fd)
        except OSError:
            pass
        if user_exit is not None:
            raise user_exit  # python's own handling: its status, a message printed
        sys.exit(exit_status)
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
    try:  # tracebacks show the module's lines (its file is not in the workdir)
        import linecache
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    except BaseException:
        pass
    _mpl_backend()
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
            f = exception_failure(e, filename)
            f.code = "module_error"
            raise f

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
            raise exception_failure(e, filename)
    finally:
        if not shadowing:
            sys.modules.pop(module, None)

    # 7. the result: finite JSON only, within the output bound
    value = check_result(value, out_max)
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


def plain_value(value, depth_max, nodes_max=VALUE_NODES_MAX):
    """(why, plain, bad): why VALUE is not finite JSON data (None when it is) and, when it
    is, PLAIN, a copy of it made of exact builtin types; when it is not, BAD, the refused
    item's (type name, fix name or None) where one was found (VALUE_FIXES).  Finite JSON
    data: None, bool, int in 64 bits, finite float, str, list, dict with str keys (exact
    types, or INPUTS' read-only list and dict) and, when the code imported numpy, numpy's
    bool, integer, float (at most 64 bits) and str scalars and plain ndarrays of those
    dtypes, converted exactly (_from_numpy: numpy is never imported here, and only its
    own methods are called, on its exact types); at most DEPTH_MAX deep and NODES_MAX
    nodes counted with sharing expanded (a string counts its length / 64 too).
    Containers are read through the base types' own methods (list.__iter__, dict.items),
    never a method the code could have replaced on a subclass, and each is charged to the
    budget before its elements are, so a lying container costs nothing.  The copy is
    what is encoded: exactly what was checked.  The one check of call values and snippet
    values; why is "too_large", "too_deep", "int_out_of_range" or "not_json"."""
    inf = float("inf")
    root = [None]
    stack = [(value, 0, root, 0)]  # (value, depth, container of its copy, key)
    budget = nodes_max
    lists = (list, _ro_types[1])
    dicts = (dict, _ro_types[0])
    numpy = None  # (numpy, its scalar types), once a value needs it
    while stack:
        v, d, into, key = stack.pop()
        budget -= 1
        if budget < 0:
            return "too_large", None, None
        if d > depth_max:
            return "too_deep", None, None
        t = type(v)
        if v is None or t is bool or t is float and v == v and v != inf and v != -inf:
            into[key] = v
            continue
        if t is int:
            # JSON has no integer bound, but the parent (and most JSON readers) keep
            # integers in 64 bits: a larger one could not be carried exactly
            if v < -(1 << 63) or v > (1 << 63) - 1:
                return "int_out_of_range", None, _bad(v, "int_range")
            into[key] = v
            continue
        if t is str:
            budget -= len(v) >> 6
            try:
                v.encode("utf-8")
            except UnicodeError:
                return "not_json", None, _bad(v, None)
            into[key] = v
            continue
        if t in lists:
            n = list.__len__(v)
            budget -= n
            if budget < 0:
                return "too_large", None, None
            copy = [None] * n
            into[key] = copy
            for i, x in enumerate(list.__iter__(v)):
                if i >= n:
                    break
                stack.append((x, d + 1, copy, i))
            continue
        if t in dicts:
            n = dict.__len__(v)
            budget -= n
            if budget < 0:
                return "too_large", None, None
            copy = {}
            into[key] = copy
            for k, x in dict.items(v):
                if type(k) is not str:
                    return "not_json", None, _bad(v, "keys")
                budget -= len(k) >> 6
                try:
                    k.encode("utf-8")
                except UnicodeError:
                    return "not_json", None, _bad(v, "keys")
                copy[k] = None  # the key's place, in the value's order
                stack.append((x, d + 1, copy, k))
            continue
        if t is float:
            return "not_json", None, _bad(v, "finite")  # NaN or an infinity
        # numpy's values, when the code imported numpy (never imported here): a scalar
        # or a plain array converted exactly, in place of the value
        if numpy is None:
            numpy = _numpy_kinds()
        x = _from_numpy(numpy, v, t, budget, depth_max - d)
        if x is None:
            return "not_json", None, _bad(v, _fix_of(v, t))
        if type(x) is str:  # why not: an exact conversion does not exist
            return ("too_large" if x == "too_large" else "not_json"), None, _bad(v, x)
        budget += 1  # the converted value takes the value's place and its count
        stack.append((x[0], d, into, key))
    return None, root[0], None


def _bad(v, fix):
    """The detail of a refused value: (its type's name, the fix's name or None)."""
    return (_type_name(v) or "object", fix)


def _numpy_kinds():
    """(numpy, {scalar type: "b", "i", "f" or "s"}) when the code imported numpy, else
    (None, {}).  Exact types only, numpy's own: a subclass the code defined is not one."""
    np = sys.modules.get("numpy")
    kinds = {}
    if np is None:
        return None, kinds
    try:
        for st in set(np.sctypeDict.values()):
            if not (isinstance(st, type) and issubclass(st, np.generic)):
                continue
            if issubclass(st, np.bool_):
                kinds[st] = "b"
            elif issubclass(st, np.integer):
                kinds[st] = "i"
            elif issubclass(st, np.floating) and np.dtype(st).itemsize <= 8:
                kinds[st] = "f"  # a long double has no exact double: refused
            elif issubclass(st, np.str_):
                kinds[st] = "s"
        return np, kinds
    except BaseException:
        return None, {}


def _from_numpy(numpy, v, t, budget, depth_left):
    """A numpy value as exact builtins: (value,) for a bool, integer, float (at most 64
    bits) or str scalar, and for an ndarray (exactly that type) of those dtypes, its
    nested lists; a fix's name when it has none (a NaN, too large, another dtype); None
    when V is not numpy's."""
    np, kinds = numpy
    if np is None:
        return None
    k = kinds.get(t)
    try:
        if k == "b":
            return (bool(v),)
        if k == "i":
            x = int(v)
            return (x,) if -(1 << 63) <= x < (1 << 63) else "int_range"
        if k == "f":
            x = float(v)
            return (x,) if x - x == 0.0 else "finite"
        if k == "s":
            return (str.__str__(v),)
        if t is not np.ndarray:
            return None
        dt = v.dtype
        if dt.kind == "c":
            return "complex"
        if dt.kind not in "biufU" or dt.kind == "f" and dt.itemsize > 8:
            return "tolist"
        if v.size > budget:
            return "too_large"
        if v.ndim > depth_left:
            return "tolist"
        if dt.kind == "f" and not np.isfinite(v).all():
            return "finite"
        return (v.tolist(),)
    except (ValueError, TypeError, OverflowError, MemoryError):
        return "tolist"


def _fix_of(v, t):
    """The name of the fix for a value that is not JSON (repl.c and check_result word
    them), or None."""
    if t is tuple or t in (set, frozenset):
        return "list"
    if t is complex:
        return "complex"
    try:
        mod = type.__getattribute__(t, "__module__")
        name = type.__getattribute__(t, "__name__")
    except BaseException:
        return None
    if type(mod) is not str or type(name) is not str:
        return None
    top = mod.split(".", 1)[0]
    if top == "numpy":
        if name in ("datetime64", "timedelta64"):
            return "str"
        if "complex" in name:
            return "complex"
        return "tolist" if name in ("ndarray", "matrix", "MaskedArray") else "float"
    if top == "pandas":
        if name == "DataFrame":
            return "to_dict"
        if name == "Series":
            return "series"
        if name in ("NaTType", "NAType"):
            return "none"
        if name in ("Timestamp", "Timedelta", "Period", "Interval"):
            return "str"
        return "tolist"
    if top == "datetime" or top == "decimal" or top == "uuid" or top == "pathlib":
        return "str"
    return None


# The fixes for a value that is not JSON, by name: the frame carries the name (a
# snippet's value_omitted, a call's result_invalid), the C side words it (repl.c,
# govex__value_fix), so that no text of this process reaches the result for it
VALUE_FIXES = frozenset(("finite", "float", "tolist", "to_dict", "series", "str", "list",
                         "complex", "keys", "int_range", "none"))


def value_problem(value, depth_max, nodes_max=VALUE_NODES_MAX):
    """Why VALUE is not finite JSON data, or None when it is (plain_value)."""
    return plain_value(value, depth_max, nodes_max)[0]


def encode_value(value):
    """A checked value's JSON text: compact, UTF-8, keys in the value's order (a frame's
    own keys are sorted), floats in python's shortest round-trip form."""
    return _deep(_json_dumps, value, allow_nan=False, separators=(",", ":"),
                 ensure_ascii=False)


def check_result(value, out_max):
    """A call's return value: finite JSON (plain_value) within the output bound; returns
    its plain copy."""
    why, plain, bad = plain_value(value, RESULT_DEPTH_MAX)
    if why == "too_large":
        raise Failure("output_limit", "output_too_large")
    if why is None:
        return plain
    tname = _type_name(value) or "object"
    msg = MESSAGES.get(why, why)
    if why == "not_json":
        msg = "the result is not finite json data (a %s)" % tname.lower()
    f = Failure("result_invalid", why)
    if bad is not None:
        if bad[0] != tname:
            msg += ": it holds an item of type %s" % bad[0].lower()
        if bad[1] in VALUE_FIXES:
            f.fix = bad[1]
    f.message = msg
    raise f


# ---------------------------------------------------------------------------------------
# snippet

SNIPPET_FILENAME = "<snippet>"
_snippet_running = False
# INPUTS' read-only dict and list types: values like their bases
_ro_types = (dict, list)


class _UserExit(BaseException):
    """The user's code raised SystemExit: the worker ends with it (its frame has no
    value)."""

    def __init__(self, exc):
        BaseException.__init__(self)
        self.exc = exc


def _read_only_inputs(value):
    def ro(self, *a, **k):
        raise TypeError("INPUTS is read-only (copy it: dict(INPUTS), list(...))")

    class ReadOnlyDict(dict):
        __slots__ = ()
        __setitem__ = __delitem__ = __ior__ = ro
        clear = pop = popitem = setdefault = update = ro

    class ReadOnlyList(list):
        __slots__ = ()
        __setitem__ = __delitem__ = __iadd__ = __imul__ = ro
        append = extend = insert = pop = remove = clear = sort = reverse = ro

    global _ro_types
    _ro_types = (ReadOnlyDict, ReadOnlyList)

    def freeze(v):
        if type(v) is dict:
            return ReadOnlyDict((k, freeze(x)) for k, x in v.items())
        if type(v) is list:
            return ReadOnlyList(freeze(x) for x in v)
        return v
    return _deep(freeze, value)


def _snippet_compile(src):
    """(module code, trailing expression code or None); SyntaxError and the like raise."""
    import ast
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    tree = compile(src, SNIPPET_FILENAME, "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    code = compile(tree, SNIPPET_FILENAME, "exec", flags, dont_inherit=True)
    expr = None
    if last is not None:
        expr = compile(ast.Expression(last.value), SNIPPET_FILENAME, "eval", flags,
                       dont_inherit=True)
    return code, expr


def _snippet_run(code, expr, g):
    CO_COROUTINE = 0x80
    if not (code.co_flags & CO_COROUTINE or (expr is not None and expr.co_flags & CO_COROUTINE)):
        exec(code, g)
        return None if expr is None else eval(expr, g)
    import asyncio

    async def _toplevel():
        r = eval(code, g)
        if code.co_flags & CO_COROUTINE:
            await r
        if expr is None:
            return None
        v = eval(expr, g)
        if expr.co_flags & CO_COROUTINE:
            v = await v
        return v
    return asyncio.run(_toplevel())


def do_snippet(req):
    global _snippet_running
    src = _field(req, "code", (str,))
    digest = _field(req, "code_digest", (str,))
    inputs_text = req.get("inputs")
    value_max = req.get("value_max")
    if inputs_text is not None and type(inputs_text) is not str:
        raise Failure("worker_failed", "bad_request", message="field missing or mistyped: inputs")
    if type(value_max) is not int or value_max < 0:
        raise Failure("worker_failed", "bad_request",
                      message="field missing or mistyped: value_max")
    if sha256_text(src) != digest:
        raise Failure("source_mismatch", "digest_mismatch")
    inputs = None
    if inputs_text is not None:
        try:
            inputs = parse_json_text(inputs_text)
        except (ValueError, UnicodeError, RecursionError, MemoryError):
            raise Failure("worker_failed", "bad_request", message="inputs is not valid json")
        if type(inputs) is not dict:
            raise Failure("worker_failed", "bad_request", message="inputs is not an object")
        inputs = _read_only_inputs(inputs)
    import types
    import builtins
    try:
        import linecache
        linecache.cache[SNIPPET_FILENAME] = (len(src), None, src.splitlines(True),
                                             SNIPPET_FILENAME)
    except BaseException:
        pass
    # from here on a failure is the user's program's: exit 1, as python's would be
    _snippet_running = True
    mod = types.ModuleType("__main__")
    g = mod.__dict__
    g["__builtins__"] = builtins
    if inputs is not None:
        g["INPUTS"] = inputs
    try:
        code, expr = _snippet_compile(src)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        raise exception_failure(e, SNIPPET_FILENAME)
    sys.modules["__main__"] = mod
    _mpl_backend()
    figures = _figures_start()
    try:
        value = _snippet_run(code, expr, g)
    except SystemExit as e:
        raise _UserExit(e)
    except BaseException as e:
        failure = exception_failure(e, SNIPPET_FILENAME)
        _figures_end(figures)
        raise failure
    _figures_end(figures)
    frame = {"version": FRAME_VERSION, "ok": True, "status": "success"}
    if value is None:
        return frame
    tname = _type_name(value) or "object"
    why, plain, bad = plain_value(value, SNIPPET_DEPTH_MAX)
    if why is None:
        try:
            data = encode_value(plain)
        except (ValueError, TypeError, UnicodeError, RecursionError):
            why = "not_json"
    if why is not None:
        om = {"reason": "too_large" if why == "too_large" else "not_json", "type": tname}
        # what repl.c words: the refused item's type and the fix, by name
        if bad is not None:
            om["item_type"] = bad[0]
            if bad[1] in VALUE_FIXES:
                om["fix"] = bad[1]
        frame["value_omitted"] = om
        return frame
    n = len(data.encode("utf-8"))
    if n > value_max:
        frame["value_omitted"] = {"reason": "too_large", "type": tname, "bytes": n}
        return frame
    # the success frame, canonical like the others (keys in sorted order), the value's
    # text as encoded
    return (b'{"ok":true,"status":"success","value":' + data.encode("utf-8")
            + b',"version":"' + FRAME_VERSION.encode("ascii") + b'"}')


# ---------------------------------------------------------------------------------------
# matplotlib: a backend without a display, and a snippet's figures as PNG outputs
#
# Never imported here: a snippet that imports matplotlib.pyplot has its show() replaced
# (by _Figures, a meta path finder that only watches that one import and leaves
# sys.meta_path at once) with one that writes each open figure to GOVEX_OUTPUT_DIR as
# figure-N.png and closes it, as a notebook's inline backend does; the figures still
# open when the snippet ends are written the same way.  Those files come back as the
# run's other outputs do (the MCP server sends them as image content).

MPL_BACKEND = "Agg"


def _mpl_backend():
    """MPLBACKEND=Agg unless the run's environment names a backend: matplotlib then never
    looks for a display or a GUI toolkit (Debian's /etc/matplotlibrc names TkAgg), in
    this process and in the programs it starts."""
    try:
        if not os.environ.get("MPLBACKEND"):
            os.environ["MPLBACKEND"] = MPL_BACKEND
    except BaseException:
        pass


class _Figures(object):
    """A snippet's figures: where they go (the output directory named when the snippet
    started) and how many were written."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.n = 0
        self.watching = False

    # the meta path finder: answers no import; matplotlib.pyplot's own finder's loader
    # gets an exec_module that patches the module once its code has run
    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        self.unwatch()
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        real = getattr(loader, "exec_module", None)
        if real is None:
            return spec
        figures = self

        def exec_module(module):
            if getattr(module, "__name__", None) != name:
                return real(module)
            try:
                del loader.exec_module
            except BaseException:
                pass
            real(module)
            figures.patch(module)
        try:
            loader.exec_module = exec_module
        except BaseException:
            pass
        return spec

    def watch(self):
        sys.meta_path.insert(0, self)
        self.watching = True

    def unwatch(self):
        if self.watching:
            self.watching = False
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass

    def patch(self, plt):
        """plt.show: the open figures written and closed (no window to show them in)."""
        real = getattr(plt, "show", None)
        if not callable(real) or getattr(real, "_govex_figures", False):
            return
        figures = self

        def show(*args, **kwargs):
            figures.save(plt)
        show.__name__ = "show"
        show.__qualname__ = "show"
        show.__doc__ = getattr(real, "__doc__", None)
        show.__wrapped__ = real
        show._govex_figures = True
        plt.show = show

    def save(self, plt):
        """Writes each open figure as figure-N.png (a name no file has: N counts on past
        one there), then closes them all; a figure that cannot be written is said on
        stderr and the run goes on."""
        try:
            nums = list(plt.get_fignums())
        except BaseException:
            return
        for num in nums:
            try:
                fig = plt.figure(num)
                while True:
                    self.n += 1
                    path = os.path.join(self.outdir, "figure-%d.png" % self.n)
                    try:
                        f = open(path, "xb")
                        break
                    except FileExistsError:
                        continue
                with f:
                    fig.savefig(f, format="png")
            except BaseException as e:
                try:
                    sys.stderr.write("govex: figure %r was not written: %s: %s\n"
                                     % (num, _type_name(e) or "Exception", e))
                except BaseException:
                    pass
        try:
            plt.close("all")
        except BaseException:
            pass


def _figures_start():
    """The snippet's _Figures when it has an output directory (None without one):
    pyplot patched now when it is imported already (a warm template's preload), else
    watched for."""
    outdir = os.environ.get("GOVEX_OUTPUT_DIR")
    if not outdir:
        return None
    figures = _Figures(outdir)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        figures.patch(plt)
    else:
        figures.watch()
    return figures


def _figures_end(figures):
    """At the snippet's end: the figures it left open are written too."""
    if figures is None:
        return
    figures.unwatch()
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        figures.save(plt)


# Called by govex's warm template in a spare run process before its request comes
# (zygote.py, _zyg_prewarm), each while no request is there: the paths of a snippet's and
# of a call's request, on govex's constant inputs, so that their first writes to the
# template's pages (each a copy-on-write fault) are made ahead of the request and not on
# its path (measured: ~120 of a warm snippet's faults, ~100 of a call's).  No user code,
# no descriptor, nothing registered in sys.modules or linecache: they leave no global,
# module or interpreter state a run can tell apart.

def _prewarm_snippet():
    import builtins
    import types
    src = "x = [i * 2 for i in range(3)]\nx\n"
    req = decode_frame(encode_frame({"version": FRAME_VERSION, "op": "snippet", "code": src,
                                     "code_digest": sha256_text(src), "value_max": 64}))
    types.ModuleType("__main__")
    code, expr = _snippet_compile(_field(req, "code", (str,)))
    value = _snippet_run(code, expr, {"__builtins__": builtins})
    why, plain, bad = plain_value(value, SNIPPET_DEPTH_MAX)
    (_type_name(value) or "object").lower()
    b'{"value":' + encode_value(plain).encode("utf-8")
    encode_frame(Failure("worker_failed", "bad_request", message="-").frame())


def _prewarm_call():
    # its documents parsed and digested, a module compiled and run (not registered), its
    # function bound and called, the value checked and encoded
    import inspect as _inspect
    import types
    src = "def f(a: int, b: int = 2) -> int:\n    return a + b\n"
    parse_json_text(canonical({"kind": "call", "source": {"digest": sha256_text(src)},
                               "function": {"name": "f", "eligible": True, "parameters": [
                                   {"name": "a", "kind": "positional_or_keyword",
                                    "has_default": False, "annotation": "int"}]}}))
    annotation_rejects_null("int")
    mod = types.ModuleType("__govex_prewarm__")
    exec(compile(src, "<prewarm>", "exec", dont_inherit=True), mod.__dict__)
    try:
        sig = _inspect.signature(mod.f)
        [(q.name, q.kind, q.default is not q.empty) for q in sig.parameters.values()]
        canonical(check_result(mod.f(*[], **{"a": 40}), 64)).encode("utf-8")
    finally:
        # (the function and its module's dict refer to each other: a cycle a run could
        # find with gc.get_objects() until a collection)
        mod.__dict__.clear()


_GOVEX_PREWARM = (_prewarm_snippet, _prewarm_call)


if __name__ == "__main__":
    main()
