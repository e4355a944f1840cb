# SPDX-License-Identifier: MIT
# govex worker: op "call".  Its phases, in order, each refusing before the next runs:
#   1. the digest chain (plan, source, inspection), before anything is compiled
#   2. bounds and the arguments' shape (no user code has run yet)
#   3. the verified text compiled and the module run (the "module starts" mark first)
#   4. the binding, against the live object
#   5. the arguments: positional-only by position, the rest by keyword
#   6. the call
#   7. the result: finite JSON only, within the output bound
import sys
import types

from govex_worker import runstate
from govex_worker.errors import exception_failure
from govex_worker.figures import mpl_backend
from govex_worker.frames import (FRAME_VERSION, INSPECTION_VERSION, Failure, bad_request,
                                 canonical, field, parse_json_text, sha256_text, trace,
                                 write_all)
from govex_worker.values import check_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

_CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR = 0x20, 0x80, 0x200


class _Call:
    """The request's fields a call needs, checked for type."""

    def __init__(self, req: "Dict[str, Any]") -> None:
        self.plan_text = field(req, "plan", (str,))  # type: str
        self.plan_digest = field(req, "plan_digest", (str,))  # type: str
        self.inspection_text = field(req, "inspection", (str,))  # type: str
        self.fname = field(req, "function", (str,))  # type: str
        self.args = req.get("args")  # type: Any
        limits = field(req, "limits", (dict,))  # type: Dict[str, Any]
        in_max = limits.get("call_input_bytes")
        out_max = limits.get("call_output_bytes")
        if type(in_max) is not int or type(out_max) is not int or in_max < 0 or out_max < 0:
            raise bad_request("field missing or mistyped: limits")
        self.in_max = in_max  # type: int
        self.out_max = out_max  # type: int


def do_call(req: "Dict[str, Any]", source: str, digest: str, module: str,
            filename: str) -> bytes:
    c = _Call(req)
    pfn = _verified_function(c, source, digest, module)
    params = pfn["parameters"]  # type: List[Dict[str, Any]]
    _check_arguments(c.args, params, c.in_max)
    # the standard modules the call uses, bound before the module runs (its name, or
    # its code through sys.modules, may shadow a standard one)
    asyncio = None  # type: Optional[types.ModuleType]
    if pfn.get("async") is True:
        import asyncio as asyncio_module
        asyncio = asyncio_module
    import inspect
    code = _compile(source, filename)
    value = _run(code, module, filename, c, params, inspect, asyncio)
    return _result_frame(value, c.out_max)


# ---------------------------------------------------------------------------------------
# 1. the digest chain


def _parsed(text: str, what: str) -> "Dict[str, Any]":
    try:
        doc = parse_json_text(text)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        raise bad_request("the %s is not valid json" % what)
    if type(doc) is not dict:
        raise bad_request("the %s is not an object" % what)
    return doc


def _entry_for(inspection: "Dict[str, Any]", name: str) -> "Optional[Dict[str, Any]]":
    """The inspection's entry for a function name: the first of that name (a name defined
    twice is never eligible)."""
    functions = inspection.get("functions")
    for f in functions if type(functions) is list else ():
        if type(f) is dict and f.get("name") == name:
            return f
    return None


def _verified_function(c: _Call, source: str, digest: str, module: str) -> "Dict[str, Any]":
    """The plan's function, once the plan, the source and the inspection are the ones
    their digests name and the plan's function is the inspection's entry; an eligible one
    with no variadic parameter, else Failure."""
    mismatch = Failure("source_mismatch", "digest_mismatch")
    if sha256_text(c.plan_text) != c.plan_digest:
        raise mismatch
    plan = _parsed(c.plan_text, "plan")
    if plan.get("kind") != "call":
        raise mismatch
    psrc = plan.get("source")
    if type(psrc) is not dict or psrc.get("digest") != digest or sha256_text(source) != digest:
        raise mismatch
    if sha256_text(c.inspection_text) != plan.get("inspection_digest"):
        raise mismatch
    inspection = _parsed(c.inspection_text, "inspection")
    if (inspection.get("version") != INSPECTION_VERSION
            or inspection.get("source_digest") != digest or inspection.get("module") != module):
        raise mismatch
    pfn = plan.get("function")
    entry = _entry_for(inspection, c.fname)
    if type(pfn) is not dict or entry is None or entry != pfn or pfn.get("name") != c.fname:
        raise mismatch
    params = pfn.get("parameters")
    if (pfn.get("eligible") is not True or type(params) is not list
            or any(type(p) is not dict for p in params)):
        raise Failure("binding_failed", "not_eligible")
    for p in params:
        if p.get("kind") in ("var_positional", "var_keyword"):
            raise Failure("binding_failed", "not_eligible")
    return pfn


# ---------------------------------------------------------------------------------------
# 2. bounds and the arguments' shape


def _check_arguments(args: object, params: "List[Dict[str, Any]]", in_max: int) -> None:
    if not isinstance(args, dict) or type(args) is not dict:
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


def annotation_rejects_null(text: object) -> bool:
    """Null is refused only for the plain annotations int, float, str, bool, list, dict and
    list[...], dict[...], List[...], Dict[...], typing.List[...], typing.Dict[...]
    (the same rule as the C side: whitespace removed; None, Optional or Any anywhere
    admit null)."""
    if not isinstance(text, str) or type(text) is not str:
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


# ---------------------------------------------------------------------------------------
# 3. the module


def _compile(source: str, filename: str) -> types.CodeType:
    """The verified text compiled, its lines kept for tracebacks."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)  # type: types.CodeType
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "syntax_error", e)
    try:  # tracebacks show the module's lines (its file is not in the workdir)
        import linecache
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    except BaseException:
        pass
    return code


def _run(code: types.CodeType, module: str, filename: str, c: _Call,
         params: "List[Dict[str, Any]]", inspect: types.ModuleType,
         asyncio: "Optional[types.ModuleType]") -> object:
    """Phases 3 to 6: the module run, its function bound and called; the value."""
    mpl_backend()
    # the "module starts" mark: from here on the module's code may write frames itself
    try:
        write_all(runstate.resp_fd, bytes(8))
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
        fn, sig = _bind(mod, c.fname, params, inspect, asyncio is not None)
        pos, kw = _arguments(sig, c.args)
        return _invoke(fn, pos, kw, asyncio, filename)
    finally:
        if not shadowing:
            sys.modules.pop(module, None)


# ---------------------------------------------------------------------------------------
# 4. the binding


def _bind(mod: types.ModuleType, fname: str, params: "List[Dict[str, Any]]",
          inspect: "Any", want_async: bool) -> "Tuple[types.FunctionType, Any]":
    """The module's function FNAME as planned: a plain function (not a generator), sync or
    async as planned, its live signature the plan's."""
    if fname not in mod.__dict__:
        raise Failure("binding_failed", "function_missing")
    fn = mod.__dict__[fname]
    if type(fn) is not types.FunctionType:
        raise Failure("binding_failed", "not_a_function")
    flags = fn.__code__.co_flags
    if flags & (_CO_GENERATOR | _CO_ASYNC_GENERATOR):
        raise Failure("binding_failed", "generator_function")
    if bool(flags & _CO_COROUTINE) != want_async:
        raise Failure("binding_failed", "async_mismatch")
    try:
        sig = inspect.signature(fn)
    except BaseException as e:
        trace(e)
        raise Failure("binding_failed", "signature_mismatch", e)
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional_only",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional_or_keyword",
        inspect.Parameter.KEYWORD_ONLY: "keyword_only",
        inspect.Parameter.VAR_POSITIONAL: "var_positional",
        inspect.Parameter.VAR_KEYWORD: "var_keyword",
    }
    live = [(q.name, kinds[q.kind], q.default is not q.empty)
            for q in sig.parameters.values()]
    planned = [(p.get("name"), p.get("kind"), p.get("has_default")) for p in params]
    if live != planned:
        raise Failure("binding_failed", "signature_mismatch")
    return fn, sig


# ---------------------------------------------------------------------------------------
# 5. the arguments


def _arguments(sig: "Any", args: "Dict[str, Any]") -> "Tuple[List[Any], Dict[str, Any]]":
    pos = []  # type: List[Any]
    kw = {}  # type: Dict[str, Any]
    gap = []  # type: List[Any]
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
    return pos, kw


# ---------------------------------------------------------------------------------------
# 6. the call


def _invoke(fn: types.FunctionType, pos: "List[Any]", kw: "Dict[str, Any]",
            asyncio: "Optional[types.ModuleType]", filename: str) -> object:
    try:
        if asyncio is not None:
            return _run_async(asyncio, fn, pos, kw)
        return fn(*pos, **kw)
    except BaseException as e:
        raise exception_failure(e, filename)


def _run_async(asyncio: "Any", fn: types.FunctionType, pos: "List[Any]",
               kw: "Dict[str, Any]") -> object:
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


# ---------------------------------------------------------------------------------------
# 7. the result


def _result_frame(value: object, out_max: int) -> bytes:
    """The success frame of a value: finite JSON only, within the output bound."""
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
