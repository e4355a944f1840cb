# SPDX-License-Identifier: MIT
# govex worker, inspection part: binding sites and name resolution for the effects
# analysis.  _Names is one of Effects' bases (effects.py): its methods use Effects' state
# (ast, tree, module, units, classes, ...).
from govex_worker.inspection.effects_state import EffectsState
from govex_worker.inspection.scopes import _Wrap, _bind_stmt, _own_nodes
from govex_worker.inspection.valuetypes import DEEP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set
    from govex_worker.inspection.vocabulary import Node, Site, TypeSet, Value


class _Scope:
    def __init__(self, kind: str, node: "Node", parent: "Optional[_Scope]",
                 cls: "Optional[str]" = None) -> None:
        self.kind = kind          # module, function, class
        self.node = node
        self.parent = parent      # enclosing scope for names (class scopes skipped)
        self.cls = cls            # for methods: the class info of `self`
        self.sites = {}  # type: Dict[str, List[Site]]  # name -> its binding sites
        self.globals = set()  # type: Set[str]
        self.nonlocals = set()  # type: Set[str]
        self.busy = set()  # type: Set[str]
        self.cache = {}  # type: Dict[str, List[Value]]


class _Names(EffectsState):
    """Binding sites of a scope and the values a name or attribute chain may have."""

    # -- binding sites --------------------------------------------------------------

    def _bind_scope(self, scope: _Scope, body: "List[Node]",
                    params: "Optional[List[Site]]" = None) -> None:
        ast = self.ast
        sites = scope.sites

        def add(name: str, site: "Site") -> None:
            sites.setdefault(name, []).append(site)

        if params is not None:
            for p, ann, kind in params:
                add(p, ("param", ann, kind))
        current = [None]  # type: List[Any]

        def bind(name: str) -> None:
            add(name, current[0])

        def targets(t: "Node", site: "Optional[Site]" = None) -> None:
            if isinstance(t, ast.Name):
                add(t.id, site or ("var",))
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in t.elts:
                    targets(e)
            elif isinstance(t, ast.Starred):
                targets(t.value)

        star = [False]

        def walk(stmts: "List[Node]") -> None:
            for s in stmts:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(s.name, ("def", s))
                elif isinstance(s, ast.ClassDef):
                    add(s.name, ("class", s))
                elif isinstance(s, ast.Assign):
                    for t in s.targets:
                        targets(t, ("assign", s.value) if isinstance(t, ast.Name) else None)
                elif isinstance(s, ast.AnnAssign):
                    if s.value is not None:
                        targets(s.target, ("assign", s.value)
                                if isinstance(s.target, ast.Name) else None)
                    elif isinstance(s.target, ast.Name):
                        sites.setdefault(s.target.id, [])
                elif isinstance(s, ast.AugAssign):
                    targets(s.target, ("aug", s.value))
                elif isinstance(s, (ast.For, ast.AsyncFor)):
                    targets(s.target, ("iter", s.iter))
                    walk(s.body)
                    walk(s.orelse)
                elif isinstance(s, (ast.With, ast.AsyncWith)):
                    for it in s.items:
                        if it.optional_vars is not None:
                            targets(it.optional_vars, ("with", it.context_expr))
                    walk(s.body)
                elif isinstance(s, ast.Import):
                    for a in s.names:
                        if a.asname:
                            add(a.asname, ("qual", a.name))
                        else:
                            top = a.name.split(".")[0]
                            add(top, ("qual", top))
                elif isinstance(s, ast.ImportFrom):
                    for a in s.names:
                        if a.name == "*":
                            star[0] = True
                        elif s.level or not s.module:
                            add(a.asname or a.name, ("opaque",))
                        else:
                            add(a.asname or a.name, ("qual", s.module + "." + a.name))
                elif isinstance(s, ast.Global):
                    scope.globals.update(s.names)
                elif isinstance(s, ast.Nonlocal):
                    scope.nonlocals.update(s.names)
                elif isinstance(s, ast.Delete):
                    for t in s.targets:
                        if isinstance(t, ast.Name):
                            sites.setdefault(t.id, [])
                else:
                    current[0] = ("var",)
                    _bind_stmt(ast, s, bind, lambda t: targets(t), star, walk)

        walk(body)
        own = _own_nodes(ast, scope.node) if scope.kind != "class" else None
        if own is None:
            own = []
            for s in body:
                own.extend(_own_nodes(ast, _Wrap(s)))
        for n in own:
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                add(n.target.id, ("assign", n.value))
            elif isinstance(n, ast.comprehension):
                targets(n.target, ("iter", n.iter))
            elif isinstance(n, ast.ExceptHandler) and n.name:
                add(n.name, ("var",))
        if star[0]:
            if scope.kind == "module":
                self.star = True
        for name in scope.globals:
            sites.pop(name, None)
        for name in scope.nonlocals:
            sites.pop(name, None)

    # -- name resolution ------------------------------------------------------------
    # A value is one of:
    #   ("qual", "a.b.c")  a module or module attribute      ("unit", id)  own function
    #   ("class", name)    the module's own class
    #   ("var", types)     a variable holding data             ("builtin", name)
    #   ("unknown",)       anything

    def resolve(self, name: str, scope: _Scope) -> "List[Value]":
        s = scope  # type: Optional[_Scope]
        while s is not None:
            if name in s.globals:
                s = self.module
                break
            if name in s.sites and s.kind != "module":
                return self._site_values(name, s)
            if s.kind == "module":
                break
            s = s.parent
        if s is None:
            s = self.module
        return self._module_values(name)

    def _module_values(self, name: str) -> "List[Value]":
        sites = self.module.sites.get(name)
        vals = []  # type: List[Value]
        if sites:
            vals = list(self._site_values(name, self.module))
        if self.star or name in self.global_assigned:
            vals.append(("unknown",))
        if not sites:
            if name in self.builtin_names and not self.star:
                vals.append(("builtin", name))
            elif not vals:
                vals.append(("unknown",))
        return vals

    def _site_values(self, name: str, scope: _Scope) -> "List[Value]":
        if name in scope.cache:
            return scope.cache[name]
        if name in scope.busy:
            return [("unknown",)]
        scope.busy.add(name)
        try:
            vals = []  # type: List[Value]
            for site in scope.sites.get(name, ()):
                vals.extend(self._site_value(site, scope))
            if not vals and scope.kind == "function":
                vals = [("var", None)]
        finally:
            scope.busy.discard(name)
        scope.cache[name] = vals
        return vals

    def _site_value(self, site: "Site", scope: _Scope) -> "List[Value]":
        ast = self.ast
        k = site[0]
        if k == "qual":
            return [("qual", site[1])]
        if k == "var":
            return [("var", None)]
        if k == "def":
            return [("unit", self.unit_of_node[site[1]])]
        if k == "class":
            if scope.kind == "module" and self.classes.get(site[1].name) is not None:
                return [("class", site[1].name)]
            return [("unknown",)]
        if k == "param":
            ann, kind = site[1], site[2]
            if kind == "self" and scope.cls is not None:
                return [("var", frozenset(["cls:" + scope.cls]))]
            return [("var", self._annotation_types(ann))]
        if k == "assign":
            v = site[1]
            if isinstance(v, ast.Lambda):
                return [("unit", self.unit_of_node[v])]
            if isinstance(v, (ast.Name, ast.Attribute)):
                vals = self.value_of(v, scope)
                if vals is not None:
                    return vals
            return [("var", self.type_of(v, scope))]
        if k == "aug":
            t = self.type_of(site[1], scope)
            return [("var", DEEP if t == DEEP else None)]
        if k == "iter":
            t = self.type_of(site[1], scope)
            if t is not None and t <= frozenset(["deep", "file"]):
                return [("var", DEEP)]
            return [("var", None)]
        if k == "with":
            t = self.type_of(site[1], scope)
            if t is not None and t <= frozenset(["file", "socket", "shallow"]):
                return [("var", t)]
            return [("var", None)]
        return [("unknown",)]

    def value_of(self, expr: "Node", scope: _Scope) -> "Optional[List[Value]]":
        """Values of a name or attribute chain rooted at a name; None otherwise."""
        ast = self.ast
        attrs = []
        e = expr
        while isinstance(e, ast.Attribute):
            attrs.append(e.attr)
            e = e.value
        if not isinstance(e, ast.Name):
            return None
        attrs.reverse()
        vals = self.resolve(e.id, scope)
        if not attrs:
            return vals
        out = []  # type: List[Value]
        for v in vals:
            if v[0] == "qual":
                out.append(("qual", ".".join([v[1]] + attrs)))
            elif v[0] == "builtin":
                out.append(("qual", ".".join(["builtins", v[1]] + attrs)))
            elif v[0] == "class" and len(attrs) == 1:
                out.append(("classattr", v[1], attrs[0]))
            elif v[0] in ("var", "class", "unit"):
                # an attribute of a value: reading it is data; calling it is a method of
                # the types known for the object it belongs to
                types = v[1] if v[0] == "var" else None
                for a in attrs[:-1]:
                    types = self._attr_type(types, a)
                out.append(("attr", types, attrs[-1]))
            else:
                out.append(("unknown",))
        return out
