# SPDX-License-Identifier: MIT
# govex worker, inspection part: what an annotation (the ast, not its text) promises
# about a parameter's or a return value's type.  One of Effects' bases (effects.py).
from govex_worker.inspection.effects_state import EffectsState
from govex_worker.inspection.valuetypes import DEEP, SHALLOW

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, FrozenSet
    from govex_worker.inspection.vocabulary import Node, TypeSet


class _Annotations(EffectsState):
    """Value types (valuetypes.py) an annotation promises; None when it promises none the
    analysis knows."""

    def _annotation_types(self, ann: "Node") -> "TypeSet":
        ast = self.ast
        if ann is None:
            return None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        return self._ann(ann)

    def _ann(self, a: "Node") -> "TypeSet":
        ast = self.ast
        scalars = {"int", "float", "str", "bool", "bytes", "complex", "None"}
        deep_containers = {"list", "dict", "set", "frozenset", "tuple", "List", "Dict", "Set",
                           "FrozenSet", "Tuple", "Sequence", "Mapping", "Iterable"}
        if isinstance(a, ast.Constant) and a.value is None:
            return DEEP
        name = None
        if isinstance(a, ast.Name):
            name = a.id
        elif isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name):
            name = a.attr
        if name is not None:
            if name in scalars:
                return DEEP
            if name in deep_containers:
                return SHALLOW
            if name in ("Path", "PurePath", "PosixPath"):
                return frozenset(["path"])
            return None
        if isinstance(a, ast.BinOp) and isinstance(a.op, ast.BitOr):
            l, r = self._ann(a.left), self._ann(a.right)
            return None if l is None or r is None else l | r
        if isinstance(a, ast.Subscript):
            base = a.value
            bname = base.id if isinstance(base, ast.Name) else (
                base.attr if isinstance(base, ast.Attribute) else None)
            inner = a.slice
            if type(inner).__name__ == "Index":  # 3.8
                inner = inner.value
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            if bname in ("Optional", "Union"):
                out = frozenset()  # type: FrozenSet[str]
                for i in items:
                    t = self._ann(i)
                    if t is None:
                        return None
                    out |= t
                return out
            if bname in deep_containers:
                for i in items:
                    if isinstance(i, ast.Constant) and i.value is Ellipsis:
                        continue
                    if self._ann(i) != DEEP:
                        return SHALLOW
                return DEEP
        return None
