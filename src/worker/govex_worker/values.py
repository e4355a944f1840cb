# SPDX-License-Identifier: MIT
# govex worker: values that leave the process (a call's return value, a snippet's REPL
# value): finite JSON data only, checked and copied (plain_value) before it is encoded;
# the fix for one that is not, by name (VALUE_FIXES).
import sys

from govex_worker import runstate
from govex_worker.frames import (MESSAGES, RESULT_DEPTH_MAX, VALUE_NODES_MAX, Failure,
                                 deep, json_dumps, type_name)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple, Union
    # (numpy, {its scalar type: "b", "i", "f" or "s"}), numpy None when not imported
    Numpy = Tuple[Any, Dict[type, str]]


def plain_value(value: object, depth_max: int, nodes_max: int = VALUE_NODES_MAX
                ) -> "Tuple[Optional[str], Any, Optional[Tuple[str, Optional[str]]]]":
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
    # the values are anything the code made: read by their exact types, typed Any here
    root = [None]  # type: List[Any]
    # (value, depth, container of its copy, key)
    stack = [(value, 0, root, 0)]  # type: List[Tuple[Any, int, Any, Any]]
    budget = nodes_max
    lists = (list, runstate.ro_types[1])
    dicts = (dict, runstate.ro_types[0])
    numpy = None  # type: Optional[Numpy]  # (numpy, its scalar types), once a value needs it
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
            obj = {}  # type: Dict[str, Any]
            into[key] = obj
            for k, x in dict.items(v):
                if type(k) is not str:
                    return "not_json", None, _bad(v, "keys")
                budget -= len(k) >> 6
                try:
                    k.encode("utf-8")
                except UnicodeError:
                    return "not_json", None, _bad(v, "keys")
                obj[k] = None  # the key's place, in the value's order
                stack.append((x, d + 1, obj, k))
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


def _bad(v: object, fix: "Optional[str]") -> "Tuple[str, Optional[str]]":
    """The detail of a refused value: (its type's name, the fix's name or None)."""
    return (type_name(v) or "object", fix)


def _numpy_kinds() -> "Numpy":
    """(numpy, {scalar type: "b", "i", "f" or "s"}) when the code imported numpy, else
    (None, {}).  Exact types only, numpy's own: a subclass the code defined is not one."""
    np = sys.modules.get("numpy")
    kinds = {}  # type: Dict[type, str]
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


def _from_numpy(numpy: "Numpy", v: "Any", t: type, budget: int,
                depth_left: int) -> "Union[None, str, Tuple[Any]]":
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
            f = float(v)
            return (f,) if f - f == 0.0 else "finite"
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


def _fix_of(v: object, t: type) -> "Optional[str]":
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


def value_problem(value: object, depth_max: int,
                  nodes_max: int = VALUE_NODES_MAX) -> "Optional[str]":
    """Why VALUE is not finite JSON data, or None when it is (plain_value)."""
    return plain_value(value, depth_max, nodes_max)[0]


def encode_value(value: object) -> str:
    """A checked value's JSON text: compact, UTF-8, keys in the value's order (a frame's
    own keys are sorted), floats in python's shortest round-trip form."""
    text = deep(json_dumps, value, allow_nan=False, separators=(",", ":"),
                ensure_ascii=False)  # type: str
    return text


def check_result(value: object, out_max: int) -> "Any":
    """A call's return value: finite JSON (plain_value) within the output bound; returns
    its plain copy."""
    why, plain, bad = plain_value(value, RESULT_DEPTH_MAX)
    if why == "too_large":
        raise Failure("output_limit", "output_too_large")
    if why is None:
        return plain
    tname = type_name(value) or "object"
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
