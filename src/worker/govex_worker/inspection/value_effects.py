# SPDX-License-Identifier: MIT
# govex worker, inspection part: what calling (or referencing) a resolved value does: a
# standard name (effects_table.py), a builtin, an open-like call and its mode, one of the
# module's classes or functions, a method of a value of a known type.  One of Effects'
# bases (effects.py).
from govex_worker.inspection.effects_state import EffectsState
from govex_worker.inspection.effects_table import (ALL_UNKNOWN, PURE, _DATA_BUILTIN_TYPES,
                                                   _DYNAMIC_BUILTINS, _FILE_METHODS,
                                                   _FILE_PURE, _OPENERS, _PATH_METHODS,
                                                   _PATH_PURE, _PURE_BASES, _PURE_BUILTINS,
                                                   _ev, _join)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional, Set
    from govex_worker.inspection.vocabulary import Node, TypeSet, Value, Vec


class _ValueEffects(EffectsState):
    """Effects of values (names.py) called or referenced; the units they reach go into
    the refs set given."""

    def _qual_effect(self, q: str, called: bool) -> "Vec":
        parts = q.split(".")
        if parts[0] == "builtins" and len(parts) >= 2:
            if len(parts) == 2:
                return self._builtin_effect(parts[1], None)
            if parts[1] in _DATA_BUILTIN_TYPES:
                return PURE
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in self.table:
                return self.table[key]
        if not called and self._is_constant_name(q):
            return PURE
        return ALL_UNKNOWN

    def _builtin_effect(self, name: str, call: "Optional[Node]") -> "Vec":
        if name in _DYNAMIC_BUILTINS:
            if call is not None:
                if name == "open":
                    return self._open_effect(call, 1, "r")
                if name == "getattr":
                    ast = self.ast
                    if (len(call.args) >= 2 and isinstance(call.args[1], ast.Constant)
                            and isinstance(call.args[1].value, str)
                            and not any(isinstance(a, ast.Starred) for a in call.args)):
                        return PURE
                    return _ev("D")
            return _ev(_DYNAMIC_BUILTINS[name])
        if name in _PURE_BUILTINS or name in self.exceptions:
            return PURE
        return ALL_UNKNOWN

    def _open_effect(self, call: "Node", index: int, default: str) -> "Vec":
        ast = self.ast
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return _ev("rw")
        node = call.args[index] if len(call.args) > index else None
        for k in call.keywords:
            if k.arg == "mode":
                node = k.value
        if node is None:
            mode = default
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            mode = node.value
        else:
            return _ev("rw")
        write = any(c in mode for c in "wax+")
        read = "r" in mode or "+" in mode or not write
        return _ev(("R" if read else "") + ("W" if write else ""))

    def _class_effect(self, name: str, refs: "Set[int]",
                      seen: "Optional[Set[str]]" = None) -> "Vec":
        """Calling (or referencing) the module's class: every method it has may run."""
        ast = self.ast
        info = self.classes.get(name)
        if info is None:
            return ALL_UNKNOWN
        seen = seen or set()
        if name in seen:
            return PURE
        seen.add(name)
        eff = PURE
        if info["keywords"]:
            return ALL_UNKNOWN
        for b in info["bases"]:
            if isinstance(b, ast.Subscript):
                b = b.value
            vals = self.value_of(b, self.module)
            if vals is None:
                return ALL_UNKNOWN
            for v in vals:
                if v[0] == "class":
                    eff = _join(eff, self._class_effect(v[1], refs, seen))
                elif v[0] == "builtin" and (v[1] in _DATA_BUILTIN_TYPES
                                            or v[1] in self.exceptions):
                    pass
                elif v[0] == "qual" and v[1] in _PURE_BASES:
                    pass
                else:
                    return ALL_UNKNOWN
        refs.update(info["methods"].values())
        return eff

    def _method_effect(self, types: "TypeSet", attr: str, call: "Optional[Node]",
                       refs: "Set[int]") -> "Vec":
        """Calling attr on a value of the given types."""
        if types is None:
            return ALL_UNKNOWN
        eff = PURE
        for t in types:
            if t in ("deep", "shallow", "pattern"):
                continue
            if t == "file":
                if attr in _FILE_METHODS:
                    eff = _join(eff, _ev(_FILE_METHODS[attr]))
                elif attr not in _FILE_PURE:
                    return ALL_UNKNOWN
            elif t == "socket":
                eff = _join(eff, _ev("N"))
            elif t == "path":
                if attr == "open" and call is not None:
                    eff = _join(eff, self._open_effect(call, 0, "r"))
                elif attr in _PATH_METHODS:
                    eff = _join(eff, _ev(_PATH_METHODS[attr]))
                elif attr not in _PATH_PURE:
                    return ALL_UNKNOWN
            elif t.startswith("cls:"):
                uid = self._find_method(t[4:], attr, set())
                if uid is None:
                    return ALL_UNKNOWN
                refs.add(uid)
            else:
                return ALL_UNKNOWN
        return eff

    def _find_method(self, cname: str, attr: str, seen: "Set[str]") -> "Optional[int]":
        ast = self.ast
        info = self.classes.get(cname)
        if info is None or cname in seen:
            return None
        seen.add(cname)
        if attr in info["methods"]:
            found = info["methods"][attr]  # type: int
            return found
        for b in info["bases"]:
            vals = self.value_of(b, self.module) if isinstance(b, ast.Name) else None
            for v in vals or ():
                if v[0] == "class":
                    uid = self._find_method(v[1], attr, seen)
                    if uid is not None:
                        return uid
        return None

    def value_effect(self, vals: "List[Value]", call: "Optional[Node]",
                     refs: "Set[int]") -> "Vec":
        """Effects of calling (call is the Call node) or referencing (call None) values."""
        eff = PURE
        for v in vals:
            k = v[0]
            if k == "qual":
                q = v[1]
                if call is not None and q in _OPENERS:
                    e = self._open_effect(call, *_OPENERS[q])
                elif call is not None and q == "builtins.getattr":
                    e = self._builtin_effect("getattr", call)
                else:
                    e = self._qual_effect(q, call is not None)
            elif k == "builtin":
                e = self._builtin_effect(v[1], call)
            elif k == "unit":
                refs.add(v[1])
                e = PURE
            elif k == "class":
                e = self._class_effect(v[1], refs)
            elif k == "var":
                e = ALL_UNKNOWN if call is not None else PURE
            elif k == "attr":
                if call is not None:
                    e = self._method_effect(v[1], v[2], call, refs)
                else:
                    e = PURE
            elif k == "classattr":
                uid = self._find_method(v[1], v[2], set())
                if uid is not None:
                    refs.add(uid)
                    e = PURE
                else:
                    e = ALL_UNKNOWN if call is not None else PURE
            else:
                e = ALL_UNKNOWN
            eff = _join(eff, e)
        return eff
