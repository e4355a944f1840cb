# SPDX-License-Identifier: MIT
# govex worker, inspection part: value types of expressions, which tell what a method
# called on a value may do.  _Types is one of Effects' bases (effects.py).
from govex_worker.inspection.effects_state import EffectsState
from govex_worker.inspection.effects_table import _PATH_PURE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import FrozenSet, List
    from govex_worker.inspection.vocabulary import Node, TypeSet
    from govex_worker.inspection.names import _Scope

# value types the analysis tracks (a type set is a frozenset of these, None = unknown):
#   deep     plain data all the way down (str, numbers, containers of those)
#   shallow  a builtin container whose elements are not known
#   file     an open file object        socket  a socket
#   path     a pathlib path             pattern a re pattern or match (or None)
#   cls:X    an instance of the module's own class X
DEEP = frozenset(["deep"])
SHALLOW = frozenset(["shallow"])

_RESULT_TYPES = {
    "pathlib.Path": "path", "pathlib.PurePath": "path", "pathlib.PosixPath": "path",
    "pathlib.PurePosixPath": "path", "pathlib.Path.cwd": "path", "pathlib.Path.home": "path",
    "socket.socket": "socket", "socket.create_connection": "socket",
    "re.compile": "pattern", "re.match": "pattern", "re.search": "pattern",
    "re.fullmatch": "pattern", "builtins.open": "file", "io.open": "file",
    "io.StringIO": "shallow", "io.BytesIO": "shallow",
}
_DEEP_RESULTS_PREFIX = ("json.loads", "json.dumps", "os.path.", "os.getenv", "os.listdir",
                        "os.getcwd", "math.", "re.sub", "re.findall", "re.split", "re.escape",
                        "string.", "textwrap.", "base64.", "binascii.", "hashlib.",
                        "urllib.parse.", "shlex.", "html.", "unicodedata.", "os.environ.get")
_BUILTIN_DEEP_RESULTS = {"str", "repr", "ascii", "format", "chr", "hex", "oct", "bin",
                         "input", "int", "float", "len", "abs", "round", "ord", "hash", "id",
                         "bool", "isinstance", "issubclass", "callable", "hasattr", "complex",
                         "bytes", "divmod", "pow", "range"}
_BUILTIN_CONTAINERS = {"list", "sorted", "dict", "set", "frozenset", "tuple", "reversed",
                       "bytearray"}

_PATH_PURE_ATTRS = {"parent": "path", "parents": None, "name": "deep", "suffix": "deep",
                    "suffixes": "deep", "stem": "deep", "anchor": "deep", "drive": "deep",
                    "root": "deep", "parts": "deep"}


class _Types(EffectsState):
    """The value types an expression may have (a frozenset; None = unknown)."""

    def type_of(self, e: "Node", scope: "_Scope") -> "TypeSet":
        ast = self.ast
        if isinstance(e, (ast.Constant, ast.JoinedStr, ast.FormattedValue)):
            return DEEP
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            ts = [self.type_of(x, scope) for x in e.elts]
            return DEEP if all(t == DEEP for t in ts) else SHALLOW
        if isinstance(e, ast.Dict):
            ts = [self.type_of(x, scope) for x in e.keys if x is not None]
            ts += [self.type_of(x, scope) for x in e.values]
            return DEEP if all(t == DEEP for t in ts) and None not in e.keys else SHALLOW
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return SHALLOW
        if isinstance(e, (ast.Compare,)):
            return DEEP
        if isinstance(e, ast.UnaryOp):
            return DEEP if self.type_of(e.operand, scope) == DEEP else None
        if isinstance(e, ast.BinOp):
            l, r = self.type_of(e.left, scope), self.type_of(e.right, scope)
            if l == DEEP and r == DEEP:
                return DEEP
            if isinstance(e.op, ast.Div) and l is not None and "path" in l:
                return frozenset(["path"])
            return None
        if isinstance(e, ast.BoolOp):
            out = frozenset()  # type: FrozenSet[str]
            for v in e.values:
                t = self.type_of(v, scope)
                if t is None:
                    return None
                out |= t
            return out
        if isinstance(e, ast.IfExp):
            a, b = self.type_of(e.body, scope), self.type_of(e.orelse, scope)
            return None if a is None or b is None else a | b
        if isinstance(e, ast.Subscript):
            t = self.type_of(e.value, scope)
            return DEEP if t == DEEP else None
        if isinstance(e, ast.Await):
            return None
        if isinstance(e, ast.NamedExpr):
            return self.type_of(e.value, scope)
        if isinstance(e, (ast.Name, ast.Attribute)):
            vals = self.value_of(e, scope)
            if vals is None:  # attribute of an expression
                base = self.type_of(e.value, scope)
                return self._attr_type(base, e.attr)
            out = frozenset()
            for v in vals:
                if v[0] == "var" and v[1] is not None:
                    out |= v[1]
                elif v[0] == "attr":
                    t = self._attr_type(v[1], v[2])
                    if t is None:
                        return None
                    out |= t
                elif v[0] == "qual" and self._is_constant_name(v[1]):
                    out |= DEEP
                else:
                    return None
            return out
        if isinstance(e, ast.Call):
            return self._call_type(e, scope)
        return None

    def _attr_type(self, base: "TypeSet", attr: str) -> "TypeSet":
        if base is None:
            return None
        out = frozenset()  # type: FrozenSet[str]
        for t in base:
            kind = _PATH_PURE_ATTRS.get(attr) if t == "path" else None
            if t == "deep":
                out |= DEEP
            elif kind:
                out |= frozenset([kind])
            else:
                return None
        return out

    def _call_type(self, e: "Node", scope: "_Scope") -> "TypeSet":
        ast = self.ast
        f = e.func
        vals = self.value_of(f, scope) if isinstance(f, (ast.Name, ast.Attribute)) else None
        if vals is None:
            if isinstance(f, ast.Attribute):
                base = self.type_of(f.value, scope)
                return self._method_type(base, f.attr)
            return None
        out = frozenset()  # type: FrozenSet[str]
        for v in vals:
            t = None
            if v[0] == "builtin" or (v[0] == "qual" and v[1].startswith("builtins.")
                                     and v[1].count(".") == 1):
                name = v[1] if v[0] == "builtin" else v[1][9:]
                if name in _BUILTIN_DEEP_RESULTS:
                    t = DEEP
                elif name in _BUILTIN_CONTAINERS:
                    args = [self.type_of(a, scope) for a in e.args]
                    t = DEEP if all(a == DEEP for a in args) else SHALLOW
                elif name == "open":
                    t = frozenset(["file"])
            elif v[0] == "qual":
                q = v[1]
                if q in _RESULT_TYPES:
                    t = frozenset([_RESULT_TYPES[q]])
                elif q.startswith(_DEEP_RESULTS_PREFIX):
                    t = DEEP
            elif v[0] == "class":
                t = frozenset(["cls:" + v[1]])
            elif v[0] == "attr":
                t = self._method_type(v[1], v[2])
            elif v[0] == "unit":
                node = self._unit_node(v[1])
                if node is not None and getattr(node, "returns", None) is not None:
                    t = self._annotation_types(node.returns)
            if t is None:
                return None
            out |= t
        return out

    def _method_type(self, base: "TypeSet", attr: str) -> "TypeSet":
        if base is None:
            return None
        out = frozenset()  # type: FrozenSet[str]
        for t in base:
            if t == "deep":
                out |= DEEP
            elif t == "pattern":
                out |= frozenset(["pattern", "deep"])
            elif t == "path" and attr in _PATH_PURE:
                out |= frozenset(["path"])
            elif t == "path" and attr == "open":
                out |= frozenset(["file"])
            elif t == "file" and attr in ("read", "readline", "readlines"):
                out |= DEEP
            elif t in ("file", "socket") and attr == "__enter__":
                out |= frozenset([t])
            else:
                return None
        return out

    def _unit_node(self, uid: int) -> "Node":
        return self.node_of_unit.get(uid)

    @staticmethod
    def _is_constant_name(q: str) -> bool:
        return q.rsplit(".", 1)[-1].isupper()
