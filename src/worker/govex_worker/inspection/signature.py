# SPDX-License-Identifier: MIT
# govex worker, inspection part: one top-level function's entry in the document.  Its
# parameters (kind, default, annotation as its source text and as a JSON Schema), return
# annotation, the arguments' and the value's schemas (schema.py), docstring, whether call
# mode may call it (and why not) and its effects.
from govex_worker.inspection.effects_table import EFFECT_NAMES
from govex_worker.inspection.schema import annotation_schema, input_schema
from govex_worker.inspection.scopes import _own_nodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple
    from govex_worker.inspection.vocabulary import AstModule, Json, Node


class _Segments:
    """ast.get_source_segment without re-splitting the source for every node."""

    def __init__(self, source: str) -> None:
        import re
        parts = re.split(r"(\r\n|\r|\n)", source)
        self.lines = [(parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")).encode("utf-8")
                      for i in range(0, len(parts), 2)]  # type: List[bytes]

    def get(self, node: "Node") -> "Optional[str]":
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1
            c0, c1 = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if None in (l0, l1, c0, c1) or l0 < 0 or l1 >= len(self.lines) or l1 < l0:
            return None
        if l0 == l1:
            b = self.lines[l0][c0:c1]
        else:
            b = self.lines[l0][c0:] + b"".join(self.lines[l0 + 1:l1]) + self.lines[l1][:c1]
        text = b.decode("utf-8", "replace")  # type: str
        return text


def _describe(ast: "AstModule", node: "Node", seg: _Segments,
              effects: "Optional[Dict[Node, Dict[str, str]]]",
              module_sites: "Tuple[Dict[str, int], bool]") -> "Json":
    a = node.args
    params = []
    positional = list(a.posonlyargs) + list(a.args)
    first_default = len(positional) - len(a.defaults)

    def ann(x: "Node") -> "Optional[str]":
        return seg.get(x) if x is not None else None

    for i, p in enumerate(positional):
        params.append({"name": p.arg,
                       "kind": "positional_only" if i < len(a.posonlyargs)
                       else "positional_or_keyword",
                       "has_default": i >= first_default, "annotation": ann(p.annotation),
                       "schema": annotation_schema(ast, p.annotation)})
    if a.vararg is not None:
        params.append({"name": a.vararg.arg, "kind": "var_positional", "has_default": False,
                       "annotation": ann(a.vararg.annotation),
                       "schema": annotation_schema(ast, a.vararg.annotation)})
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": p.arg, "kind": "keyword_only", "has_default": d is not None,
                       "annotation": ann(p.annotation),
                       "schema": annotation_schema(ast, p.annotation)})
    if a.kwarg is not None:
        params.append({"name": a.kwarg.arg, "kind": "var_keyword", "has_default": False,
                       "annotation": ann(a.kwarg.annotation),
                       "schema": annotation_schema(ast, a.kwarg.annotation)})
    is_async = isinstance(node, ast.AsyncFunctionDef)
    reason = None
    if _yields(ast, node):
        reason = "async_generator" if is_async else "generator"
    elif a.vararg is not None:
        reason = "var_positional"
    elif a.kwarg is not None:
        reason = "var_keyword"
    else:
        counts, star = module_sites
        if counts.get(node.name, 0) != 1 or star:
            reason = "redefined"
    doc = None
    try:
        doc = ast.get_docstring(node, clean=True)
    except Exception:
        doc = None
    if doc is not None and type(doc) is not str:
        doc = None
    if effects is None or node not in effects:
        eff = {k: "unknown" for k in EFFECT_NAMES}
    else:
        eff = effects[node]
    return {"name": node.name, "async": is_async, "lineno": node.lineno,
            "parameters": params, "returns": ann(node.returns), "docstring": doc,
            "input_schema": input_schema(params),
            "output_schema": annotation_schema(ast, node.returns),
            "eligible": reason is None, "reason": reason, "effects": eff}


def _yields(ast: "AstModule", node: "Node") -> bool:
    for n in _own_nodes(ast, node):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
    return False
