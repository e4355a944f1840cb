# SPDX-License-Identifier: MIT
# govex worker, inspection part: walking the code of one unit (effects.py) for its direct
# effects and the units it calls or lets escape.
from govex_worker.inspection.effects_table import ALL_UNKNOWN, PURE, _join
from govex_worker.inspection.names import _Scope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Set
    from govex_worker.inspection.vocabulary import AstModule, Node, Vec
    from govex_worker.inspection.effects import Effects


class _Walker:
    """Collects the direct effects and the edges of one unit's own code; nested functions,
    lambdas and methods of nested classes are units of their own, analysed here."""

    def __init__(self, an: "Effects", scope: _Scope, uid: int,
                 module_level: bool = False) -> None:
        self.an = an
        self.ast = an.ast
        self.scope = scope
        self.uid = uid
        self.rec = an.units[uid]
        self.eff = PURE
        self.module_level = module_level
        self.call_args = 0

    def add(self, e: "Vec") -> None:
        self.eff = _join(self.eff, e)

    def refs(self) -> "Set[int]":
        """Where a referenced unit goes: an argument of a call may be called by it."""
        refs = self.rec[1] if self.call_args else self.rec[2]  # type: Set[int]
        return refs

    def function_body(self, node: "Node") -> None:
        ast = self.ast
        if isinstance(node, ast.Lambda):
            self.expr(node.body)
        else:
            for st in node.body:
                self.stmt(st)

    def nested(self, node: "Node", scope: _Scope) -> int:
        """Analyses a nested function or lambda (its own unit) defined in scope."""
        uid = self.an.unit_of_node[node]
        try:
            self.an._analyse_unit(node, uid, scope)
        except (RecursionError, MemoryError):
            self.an.units[uid][0] = ALL_UNKNOWN
        return uid

    def decorator(self, d: "Node", scope: _Scope, refs: "Set[int]") -> None:
        """Applying decorator d (evaluated in scope); unit edges go into refs."""
        saved = self.scope
        self.scope = scope
        try:
            ast = self.ast
            f = d.func if isinstance(d, ast.Call) else d
            if isinstance(d, ast.Call):
                self.expr(d)  # the factory's call
            vals = self.an.value_of(f, scope) if isinstance(f, (ast.Name, ast.Attribute)) \
                else None
            if vals is None:
                self.expr(f)
                self.add(ALL_UNKNOWN)
            else:
                self.add(self.an.value_effect(vals, d if isinstance(d, ast.Call) else
                                              ast.Call(func=f, args=[], keywords=[]), refs))
        finally:
            self.scope = saved

    # statements

    def stmt(self, s: "Node") -> None:
        ast = self.ast
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._def(s)
            return
        if isinstance(s, ast.ClassDef):
            self._class(s)
            return
        if self.module_level and isinstance(s, ast.If) and _is_main_guard(ast, s.test):
            for x in s.orelse:
                self.stmt(x)
            return
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Pass,
                          ast.Break, ast.Continue)):
            return
        if isinstance(s, ast.AnnAssign):
            # annotations are not walked (names in them are not calls; in a function they
            # are never evaluated)
            if not isinstance(s.target, ast.Name):
                self.expr(s.target)
            if s.value is not None:
                self.expr(s.value)
            return
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _other(self, n: "Node") -> None:
        ast = self.ast
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _def(self, s: "Node", scope: "Optional[_Scope]" = None) -> None:
        """A def statement: defaults and decorators run now (decorators are called with the
        function); the body is a unit of its own, analysed in the enclosing function's
        scope unless it is a top-level function or method (analysed on their own)."""
        a = s.args
        for d in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
            self.expr(d)
        for d in s.decorator_list:
            self.decorator(d, self.scope, self.rec[1])
        if s in self.an.method_class or s in self.an.top_defs:
            return
        self.nested(s, scope or self.scope)

    def _class(self, s: "Node") -> None:
        ast = self.ast
        for b in s.bases:
            self.expr(b)
        for k in s.keywords:
            self.expr(k.value)
        for d in s.decorator_list:
            self.decorator(d, self.scope, self.rec[1])
        cscope = _Scope("class", s, self.scope)
        self.an._bind_scope(cscope, s.body)
        w = _Walker(self.an, cscope, self.uid, module_level=self.module_level)
        # the class body runs now; methods are defined, not run (their scope skips the
        # class's)
        fscope = self.scope
        for x in s.body:
            if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef)):
                w._def(x, fscope)
            else:
                w.stmt(x)
        self.add(w.eff)

    # expressions

    def expr(self, e: "Node") -> None:
        ast = self.ast
        if isinstance(e, ast.Call):
            self._call(e)
            return
        if isinstance(e, (ast.Name, ast.Attribute)):
            if isinstance(e.ctx, ast.Load) or isinstance(e, ast.Attribute):
                self._reference(e)
            return
        if isinstance(e, ast.Lambda):
            for d in list(e.args.defaults) + [d for d in e.args.kw_defaults if d is not None]:
                self.expr(d)
            self.refs().add(self.nested(e, self.scope))
            return
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self.expr(child)
            else:
                self._other(child)

    def _reference(self, e: "Node") -> None:
        """A name or attribute chain that is read (not called)."""
        vals = self.an.value_of(e, self.scope)
        if vals is None:  # attribute of an expression: the expression is evaluated
            self.expr(e.value)
            return
        self.add(self.an.value_effect(vals, None, self.refs()))

    def _call(self, c: "Node") -> None:
        ast = self.ast
        f = c.func
        vals = self.an.value_of(f, self.scope) if isinstance(f, (ast.Name, ast.Attribute)) \
            else None
        if vals is not None:
            self.add(self.an.value_effect(vals, c, self.rec[1]))
        elif isinstance(f, ast.Attribute):
            # a method of an expression's value
            self.expr(f.value)
            t = self.an.type_of(f.value, self.scope)
            self.add(self.an._method_effect(t, f.attr, c, self.rec[1]))
        elif isinstance(f, ast.Lambda):
            self.call_args += 1  # called right here
            try:
                self.expr(f)
            finally:
                self.call_args -= 1
        else:
            self.expr(f)
            self.add(ALL_UNKNOWN)
        self.call_args += 1
        try:
            for a in c.args:
                self.expr(a)
            for k in c.keywords:
                self.expr(k.value)
        finally:
            self.call_args -= 1


def _is_main_guard(ast: "AstModule", test: "Node") -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")
