# SPDX-License-Identifier: MIT
# govex worker, inspection part: scopes as the static reading sees them.  What belongs to
# a scope's own code (not to the functions, lambdas and classes nested in it), and which
# names a statement binds there.  Used for eligibility (a function's name bound twice at
# module level) and by the effects analysis.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Tuple
    from govex_worker.inspection.vocabulary import AstModule, Node


def _own_nodes(ast: "AstModule", scope: "Node") -> "List[Node]":
    """Every node of a scope's own code: not inside nested functions, lambdas or classes
    (their decorators, defaults and bases are the enclosing scope's)."""
    out = []
    if isinstance(scope, ast.Lambda):
        stack = [scope.body]
    elif isinstance(scope, ast.Module):
        stack = list(scope.body)
    else:
        stack = list(scope.body)
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(n.decorator_list)
            stack.extend(d for d in n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.ClassDef):
            stack.extend(n.decorator_list)
            stack.extend(n.bases)
            stack.extend(k.value for k in n.keywords)
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


class _Wrap:
    """A statement list as a scope node for _own_nodes."""

    def __init__(self, stmt: "Node") -> None:
        self.body = [stmt]


def _bind_stmt(ast: "AstModule", s: "Node", bind: "Callable[[str], None]",
               targets: "Callable[[Node], None]", star: "List[bool]",
               walk: "Callable[[List[Node]], None]") -> None:
    """Calls bind/targets for the names statement s binds in its own scope, and walk on
    the nested statement lists of the same scope."""
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        bind(s.name)
    elif isinstance(s, ast.Assign):
        for t in s.targets:
            targets(t)
    elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
        if not isinstance(s, ast.AnnAssign) or s.value is not None:
            targets(s.target)
    elif isinstance(s, (ast.For, ast.AsyncFor)):
        targets(s.target)
        walk(s.body)
        walk(s.orelse)
    elif isinstance(s, (ast.With, ast.AsyncWith)):
        for it in s.items:
            if it.optional_vars is not None:
                targets(it.optional_vars)
        walk(s.body)
    elif isinstance(s, (ast.Import, ast.ImportFrom)):
        for a in s.names:
            if a.name == "*":
                star[0] = True
            elif a.asname:
                bind(a.asname)
            else:
                bind(a.name.split(".")[0])
    elif isinstance(s, ast.Delete):
        for t in s.targets:
            targets(t)
    elif isinstance(s, (ast.If, ast.While)):
        walk(s.body)
        walk(s.orelse)
    elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
        walk(s.body)
        for h in s.handlers:
            if h.name:
                bind(h.name)
            walk(h.body)
        walk(s.orelse)
        walk(s.finalbody)
    elif type(s).__name__ == "Match":
        for c in s.cases:
            for sub in ast.walk(c.pattern):
                n = getattr(sub, "name", None) or getattr(sub, "rest", None)
                if isinstance(n, str):
                    bind(n)
            walk(c.body)
    elif type(s).__name__ == "TypeAlias":
        targets(s.name)


def _module_binding_counts(ast: "AstModule", tree: "Node") -> "Tuple[Dict[str, int], bool]":
    """How many binding sites each module-level name has (anything rebinding a def makes
    it ineligible: the inspected def may not be the object a call would find)."""
    counts = {}  # type: Dict[str, int]
    star = [False]

    def bind(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    def targets(t: "Node") -> None:
        if isinstance(t, ast.Name):
            bind(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def walk(stmts: "List[Node]") -> None:
        for s in stmts:
            _bind_stmt(ast, s, bind, targets, star, walk)

    walk(tree.body)
    # `global x` in any function that assigns x
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for sub in _own_nodes(ast, node):
                if isinstance(sub, ast.Global):
                    for n in sub.names:
                        bind(n)
    # walrus at module level (outside functions) binds module names
    for sub in _own_nodes(ast, tree):
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            bind(sub.target.id)
    return counts, star[0]
