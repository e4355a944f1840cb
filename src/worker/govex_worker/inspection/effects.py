# SPDX-License-Identifier: MIT
# govex worker, inspection part: the effects analysis (its vocabulary and what it knows
# of standard names: effects_table.py).
#
# Each effect is absent (0) < unknown (1) < present (2); vectors join element-wise with
# max.  The analysis is flow-insensitive and conservative: a call it cannot resolve to a
# builtin known to be pure, a module function in the table (effects_table.py), a
# module-local function or a method of a value whose type it knows makes every effect
# unknown.  Module-local functions are followed transitively (a fixpoint over the call
# graph, cycles included); the module's own top-level code (what loading it runs) is part
# of every function's effects.  Implicit dunder dispatch (operators, str() of objects,
# properties) is not modelled.
#
# Every function, lambda and the module's own code is a unit: its direct effects, the
# units it calls, those it lets escape and those whose every effect it takes on.  A
# _Walker (walker.py) fills one unit in; the fixpoint joins them.  Effects' methods are
# spread over its bases, one concept each, all over the state set up here: names.py
# (binding sites, name resolution), annotations.py, valuetypes.py (value types),
# value_effects.py (what calling or referencing a value does).
from govex_worker.inspection.annotations import _Annotations
from govex_worker.inspection.effects_table import (ALL_UNKNOWN, EFFECT_NAMES, PURE,
                                                   _DYNAMIC_BUILTINS, _PURE_BUILTINS, _WORDS,
                                                   _join, _parse_table)
from govex_worker.inspection.names import _Names, _Scope
from govex_worker.inspection.scopes import _own_nodes
from govex_worker.inspection.value_effects import _ValueEffects
from govex_worker.inspection.valuetypes import _Types
from govex_worker.inspection.walker import _Walker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set, Tuple
    from govex_worker.inspection.vocabulary import AstModule, Node, Site, Unit, Vec


class Effects(_Names, _Annotations, _Types, _ValueEffects):
    """Per-function effects of a parsed module."""

    def __init__(self, ast: "AstModule", tree: "Node") -> None:
        self.ast = ast
        self.tree = tree
        self.table = _parse_table()
        import builtins
        self.exceptions = set(n for n in dir(builtins)
                              if isinstance(getattr(builtins, n), type)
                              and issubclass(getattr(builtins, n), BaseException))
        self.builtin_names = _PURE_BUILTINS | set(_DYNAMIC_BUILTINS) | self.exceptions
        self.units = {}           # id -> [direct, calls, escapes, full] (see _new_unit)
        self.unit_of_node = {}    # def/lambda node -> unit id
        self.node_of_unit = {}
        self.method_class = {}    # method node of a top-level class -> class name
        self.classes = {}         # class name -> info dict (top-level classes)
        self.module = _Scope("module", tree, None)
        self.star = False
        self.global_assigned = set()

    # -- results --------------------------------------------------------------------

    def function_effects(self) -> "Dict[Node, Dict[str, str]]":
        ast = self.ast
        self._bind_scope(self.module, self.tree.body)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for sub in _own_nodes(ast, node):
                    if isinstance(sub, ast.Global):
                        self.global_assigned.update(sub.names)
        # a unit for every function and lambda (nested ones too: a name may be resolved
        # before the walker reaches its def), methods of top-level classes listed by class
        tops = []
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self._new_unit(node)
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                tops.append(node)
            elif isinstance(node, ast.ClassDef):
                info = {"node": node, "methods": {}, "bases": node.bases,
                        "keywords": node.keywords}
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        info["methods"][sub.name] = self.unit_of_node[sub]
                        self.method_class[sub] = node.name
                if node.name not in self.classes:
                    self.classes[node.name] = info
                else:
                    self.classes[node.name] = None  # redefined: unknown
        self.top_defs = set(tops)
        self.module_unit = self._new_unit(self.tree)
        # the module's code, every top-level function and method; the walkers analyse
        # nested functions and lambdas where they meet them (they know their scopes)
        todo = [self.tree] + tops
        for cinfo in self.classes.values():
            if cinfo is not None:
                for sub in cinfo["node"].body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        todo.append(sub)
        for node in todo:
            uid = self.unit_of_node[node]
            try:
                self._analyse_unit(node, uid)
            except (RecursionError, MemoryError):
                self.units[uid][0] = ALL_UNKNOWN
        full, shallow = self._fixpoint()
        mod = shallow[self.module_unit]
        out = {}
        for node in tops:
            e = _join(shallow[self.unit_of_node[node]], mod)
            if e[5]:
                e = tuple(x if x else 1 for x in e)
            out[node] = {k: _WORDS[v] for k, v in zip(EFFECT_NAMES, e)}
        return out

    def _new_unit(self, node: "Node") -> int:
        uid = len(self.units)
        # direct effects; units it calls; units it lets escape (returns, stores: they may
        # run later, not now); units whose every effect it takes on (its decorators)
        self.units[uid] = [PURE, set(), set(), set()]
        self.unit_of_node[node] = uid
        self.node_of_unit[uid] = node
        return uid

    def _fixpoint(self) -> "Tuple[Dict[int, Vec], Dict[int, Vec]]":
        """full: what running a unit and anything it lets escape may do; shallow: what
        running it does (its calls' shallow effects, its decorators' full ones)."""
        def solve(step: "Callable[[int, Unit, Dict[int, Vec]], Vec]") -> "Dict[int, Vec]":
            totals = {u: v[0] for u, v in self.units.items()}
            changed = True
            while changed:
                changed = False
                for u, rec in self.units.items():
                    e = step(u, rec, totals)
                    if e != totals[u]:
                        totals[u] = e
                        changed = True
            return totals

        def full_step(u: int, rec: "Unit", totals: "Dict[int, Vec]") -> "Vec":
            e = totals[u]
            for group in rec[1:]:
                for r in group:
                    e = _join(e, totals[r])
            return e

        full = solve(full_step)

        def shallow_step(u: int, rec: "Unit", totals: "Dict[int, Vec]") -> "Vec":
            e = totals[u]
            for r in rec[1]:
                e = _join(e, totals[r])
            for r in rec[3]:
                e = _join(e, full[r])
            return e

        return full, solve(shallow_step)


    # -- walking code ---------------------------------------------------------------

    def _analyse_unit(self, node: "Node", uid: int, parent: "Optional[_Scope]" = None) -> None:
        ast = self.ast
        if node is self.tree:
            w = _Walker(self, self.module, uid, module_level=True)
            for st in node.body:
                w.stmt(st)
            self.units[uid][0] = w.eff
            return
        parent = parent or self.module
        scope = self._function_scope(node, parent, self.method_class.get(node))
        w = _Walker(self, scope, uid)
        w.function_body(node)
        # a decorated function is called through what its decorators made of it
        if not isinstance(node, ast.Lambda):
            for d in node.decorator_list:
                w.decorator(d, parent, w.rec[3])
        self.units[uid][0] = w.eff

    def _function_scope(self, node: "Node", parent: _Scope,
                        cls: "Optional[str]" = None) -> _Scope:
        ast = self.ast
        scope = _Scope("function", node, parent)
        a = node.args
        params = []  # type: List[Site]
        positional = list(a.posonlyargs) + list(a.args)
        is_method = cls is not None and not any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in getattr(node, "decorator_list", ()))
        for i, p in enumerate(positional):
            params.append((p.arg, p.annotation, "self" if is_method and i == 0 else "p"))
        for p in a.kwonlyargs:
            params.append((p.arg, p.annotation, "p"))
        if a.vararg is not None:
            params.append((a.vararg.arg, None, "star"))
        if a.kwarg is not None:
            params.append((a.kwarg.arg, None, "star"))
        scope.cls = cls if is_method else None
        # (a lambda's walrus and comprehension targets come from its own nodes)
        self._bind_scope(scope, [] if isinstance(node, ast.Lambda) else node.body, params)
        for p, ann, kind in params:
            if kind == "star":
                scope.sites[p] = [("param", None, "p")]
        return scope
