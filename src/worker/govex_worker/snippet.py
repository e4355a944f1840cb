# SPDX-License-Identifier: MIT
# govex worker: op "snippet", a REPL run (src/lib/repl.c): the code compiled as
# "<snippet>" (top-level await where the interpreter has it), run in a fresh __main__ with
# the read-only INPUTS, and the trailing expression's value answered.  The frame is
# written, then the interpreter ends as a python program would (dispatch.main).
import sys
import types

from govex_worker import runstate
from govex_worker.errors import exception_failure
from govex_worker.figures import figures_end, figures_start, mpl_backend
from govex_worker.frames import (FRAME_VERSION, SNIPPET_DEPTH_MAX, Failure, bad_request, deep,
                                 field, parse_json_text, sha256_text, type_name)
from govex_worker.values import VALUE_FIXES, encode_value, plain_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, NoReturn, Optional, Tuple, Union

SNIPPET_FILENAME = "<snippet>"


class UserExit(BaseException):
    """The user's code raised SystemExit: the worker ends with it (its frame has no
    value)."""

    def __init__(self, exc: SystemExit) -> None:
        BaseException.__init__(self)
        self.exc = exc


def read_only_inputs(value: "Dict[str, Any]") -> "Dict[str, Any]":
    def ro(self: object, *a: object, **k: object) -> "NoReturn":
        raise TypeError("INPUTS is read-only (copy it: dict(INPUTS), list(...))")

    class ReadOnlyDict(dict):  # type: ignore[type-arg]
        __slots__ = ()
        __setitem__ = __delitem__ = __ior__ = ro
        clear = pop = popitem = setdefault = update = ro

    class ReadOnlyList(list):  # type: ignore[type-arg]
        __slots__ = ()
        __setitem__ = __delitem__ = __iadd__ = __imul__ = ro
        append = extend = insert = pop = remove = clear = sort = reverse = ro

    runstate.ro_types = (ReadOnlyDict, ReadOnlyList)

    def freeze(v: object) -> object:
        if type(v) is dict:
            return ReadOnlyDict((k, freeze(x)) for k, x in v.items())
        if type(v) is list:
            return ReadOnlyList(freeze(x) for x in v)
        return v
    frozen = deep(freeze, value)  # type: Dict[str, Any]
    return frozen


def snippet_compile(src: str) -> "Tuple[types.CodeType, Optional[types.CodeType]]":
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


def snippet_run(code: types.CodeType, expr: "Optional[types.CodeType]",
                g: "Dict[str, Any]") -> object:
    CO_COROUTINE = 0x80
    if not (code.co_flags & CO_COROUTINE or (expr is not None and expr.co_flags & CO_COROUTINE)):
        exec(code, g)
        return None if expr is None else eval(expr, g)
    import asyncio

    async def _toplevel() -> object:
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


def do_snippet(req: "Dict[str, Any]") -> "Union[Dict[str, Any], bytes]":
    src = field(req, "code", (str,))
    digest = field(req, "code_digest", (str,))
    inputs_text = req.get("inputs")
    value_max = req.get("value_max")
    if inputs_text is not None and type(inputs_text) is not str:
        raise bad_request("field missing or mistyped: inputs")
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
            raise bad_request("inputs is not valid json")
        if type(inputs) is not dict:
            raise bad_request("inputs is not an object")
        inputs = read_only_inputs(inputs)
    import types
    import builtins
    try:
        import linecache
        linecache.cache[SNIPPET_FILENAME] = (len(src), None, src.splitlines(True),
                                             SNIPPET_FILENAME)
    except BaseException:
        pass
    # from here on a failure is the user's program's: exit 1, as python's would be
    runstate.snippet_running = True
    mod = types.ModuleType("__main__")
    g = mod.__dict__
    g["__builtins__"] = builtins
    if inputs is not None:
        g["INPUTS"] = inputs
    try:
        code, expr = snippet_compile(src)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        raise exception_failure(e, SNIPPET_FILENAME)
    sys.modules["__main__"] = mod
    mpl_backend()
    figures = figures_start()
    try:
        value = snippet_run(code, expr, g)
    except SystemExit as e:
        raise UserExit(e)
    except BaseException as e:
        failure = exception_failure(e, SNIPPET_FILENAME)
        figures_end(figures)
        raise failure
    figures_end(figures)
    frame = {"version": FRAME_VERSION, "ok": True, "status": "success"}
    if value is None:
        return frame
    tname = type_name(value) or "object"
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
