# SPDX-License-Identifier: MIT
# govex worker, inspection: the state the effects analysis's classes share.  Effects
# (effects.py) sets it up; its bases, one concept each (names.py, annotations.py,
# valuetypes.py, value_effects.py), read it and call each other's methods.  This base
# declares both for type checkers; at run time it is an empty class.

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set

    from govex_worker.inspection.names import _Scope
    from govex_worker.inspection.vocabulary import (AstModule, Node, Site, TypeSet, Unit,
                                                    Value, Vec)


class EffectsState:
    if TYPE_CHECKING:
        ast = None  # type: AstModule
        tree = None  # type: Node
        table = None  # type: Dict[str, Vec]
        exceptions = None  # type: Set[str]
        builtin_names = None  # type: Set[str]
        units = None  # type: Dict[int, Unit]
        unit_of_node = None  # type: Dict[Node, int]
        node_of_unit = None  # type: Dict[int, Node]
        method_class = None  # type: Dict[Node, str]
        classes = None  # type: Dict[str, Optional[Dict[str, Any]]]
        module = None  # type: _Scope
        star = None  # type: bool
        global_assigned = None  # type: Set[str]

        # names.py
        def resolve(self, name: str, scope: _Scope) -> List[Value]: ...
        def value_of(self, expr: Node, scope: _Scope) -> Optional[List[Value]]: ...
        def _bind_scope(self, scope: _Scope, body: List[Node],
                        params: Optional[List[Site]] = None) -> None: ...
        # annotations.py
        def _annotation_types(self, ann: Node) -> TypeSet: ...
        # valuetypes.py
        def type_of(self, e: Node, scope: _Scope) -> TypeSet: ...
        def _attr_type(self, base: TypeSet, attr: str) -> TypeSet: ...
        def _unit_node(self, uid: int) -> Node: ...
        @staticmethod
        def _is_constant_name(q: str) -> bool: ...
        # value_effects.py
        def value_effect(self, vals: List[Value], call: Optional[Node],
                         refs: Set[int]) -> Vec: ...
        # effects.py
        def _analyse_unit(self, node: Node, uid: int,
                          parent: Optional[_Scope] = None) -> None: ...
