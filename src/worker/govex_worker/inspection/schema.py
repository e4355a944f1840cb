# SPDX-License-Identifier: MIT
# govex worker, inspection part: the JSON Schema of an annotation, read from the ast (never
# evaluated).  govex's one interpreter of annotations (contract 2): the inspection gives
# each parameter its "schema" and each function its "input_schema" / "output_schema",
# and the C side (src/lib/schema.c) and the tool provider use those.
#
#   int -> integer, float -> number, bool -> boolean, str -> string, None -> null,
#   list[T] / List[T] / Sequence[T] -> array of T, tuple[A, B] -> array of A then B,
#   tuple[T, ...] -> array of T, dict[str, T] / Dict / Mapping -> object of T,
#   Optional[T] / T | None / Union[...] -> anyOf, Literal[...] -> enum,
#   Annotated[T, ...] -> T, a string annotation -> what it says,
#   Any / object / absent / anything else -> {} (any value).

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple
    from govex_worker.inspection.vocabulary import AstModule, Json, Node

_SCHEMA_SCALARS = {"int": "integer", "float": "number", "bool": "boolean", "str": "string",
                   "None": "null", "NoneType": "null"}
_SCHEMA_ARRAYS = {"list", "List", "Sequence", "MutableSequence"}
_SCHEMA_TUPLES = {"tuple", "Tuple"}
_SCHEMA_OBJECTS = {"dict", "Dict", "Mapping", "MutableMapping"}
_SCHEMA_DEPTH_MAX = 50


def annotation_schema(ast: "AstModule", ann: "Node") -> "Json":
    """The JSON Schema (a dict) of annotation node ANN (None: no annotation)."""
    try:
        return _schema(ast, ann, 0)
    except (RecursionError, MemoryError):
        return {}


def _schema_name(ast: "AstModule", node: "Node") -> "Optional[str]":
    """typing.X, t.X, X -> "X"; None for anything else."""
    name = None  # type: Optional[str]
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        name = node.attr
    return name


def _schema(ast: "AstModule", a: "Node", depth: int) -> "Json":
    if a is None or depth > _SCHEMA_DEPTH_MAX:
        return {}
    if isinstance(a, ast.Constant):
        if a.value is None:
            return {"type": "null"}
        if isinstance(a.value, str):  # a forward reference: its text, parsed
            try:
                inner = ast.parse(a.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return {}
            return _schema(ast, inner, depth + 1)
        return {}
    name = _schema_name(ast, a)
    if name is not None:
        if name in _SCHEMA_SCALARS:
            return {"type": _SCHEMA_SCALARS[name]}
        if name in _SCHEMA_ARRAYS or name in _SCHEMA_TUPLES:
            return {"type": "array"}
        if name in _SCHEMA_OBJECTS:
            return {"type": "object"}
        return {}
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
        return _any_of([_schema(ast, a.left, depth + 1), _schema(ast, a.right, depth + 1)])
    if not isinstance(a, ast.Subscript):
        return {}
    base = _schema_name(ast, a.value)
    inner = a.slice
    if type(inner).__name__ == "Index":  # 3.8
        inner = inner.value
    items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    if base == "Optional" and len(items) == 1:
        return _any_of([_schema(ast, items[0], depth + 1), {"type": "null"}])
    if base == "Union":
        return _any_of([_schema(ast, i, depth + 1) for i in items])
    if base == "Annotated" and items:
        return _schema(ast, items[0], depth + 1)
    if base == "Literal":
        values = []  # type: List[Any]
        for i in items:
            ok, v = _literal(ast, i)
            if not ok:
                return {}
            if v not in values or any(type(v) is not type(x) for x in values if x == v):
                values.append(v)
        return {"enum": values}
    if base in _SCHEMA_ARRAYS and len(items) == 1:
        return {"type": "array", "items": _schema(ast, items[0], depth + 1)}
    if base in _SCHEMA_TUPLES:
        if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis:
            return {"type": "array", "items": _schema(ast, items[0], depth + 1)}
        if len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
            return {"type": "array", "maxItems": 0}  # tuple[()]
        return {"type": "array", "prefixItems": [_schema(ast, i, depth + 1) for i in items],
                "minItems": len(items), "maxItems": len(items)}
    if base in _SCHEMA_OBJECTS:
        if len(items) == 2 and _schema_name(ast, items[0]) == "str":
            return {"type": "object", "additionalProperties": _schema(ast, items[1], depth + 1)}
        return {"type": "object"}
    return {}


def _literal(ast: "AstModule", node: "Node") -> "Tuple[bool, Any]":
    """(True, value) for a Literal's member JSON can carry; (False, None) otherwise."""
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None or type(v) in (bool, int, str):
            return True, v
        if type(v) is float and v == v and v not in (float("inf"), float("-inf")):
            return True, v
        return False, None
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) in (int, float)):
        return _literal(ast, ast.Constant(-node.operand.value))
    return False, None


def _any_of(schemas: "List[Json]") -> "Json":
    """anyOf of SCHEMAS, flattened; {} (any) when one of them admits anything."""
    out = []  # type: List[Json]
    for s in schemas:
        if s == {}:
            return {}
        for x in (s["anyOf"] if list(s) == ["anyOf"] else [s]):
            if x not in out:
                out.append(x)
    return out[0] if len(out) == 1 else {"anyOf": out}


def input_schema(params: "List[Dict[str, Any]]") -> "Json":
    """The object schema of a function's arguments (params: the inspection's parameter
    entries, each with its "schema")."""
    props = {}
    required = []
    for p in params:
        if p["kind"] in ("var_positional", "var_keyword"):
            continue
        props[p["name"]] = p["schema"]
        if not p["has_default"]:
            required.append(p["name"])
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}
