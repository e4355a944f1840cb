# SPDX-License-Identifier: MIT
# govex worker, inspection: the names of the analysis's types, for type checkers only
# (nothing here exists at run time: the package runs on 3.6's library, typing unimported).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, FrozenSet, List, Optional, Tuple

    # An ast node.  The analysis reads nodes by isinstance on the ast module it is given
    # (imported when an inspection runs), so a node's class is known only at run time.
    Node = Any
    # the ast module itself, as the analysis is given it
    AstModule = Any
    # an effect vector: one of absent (0), unknown (1), present (2) per EFFECT_NAMES
    Vec = Tuple[int, ...]
    # the value types an expression may have (valuetypes.py); None: not known
    TypeSet = Optional[FrozenSet[str]]
    # a JSON Schema, a document's object
    Json = Dict[str, Any]
    # a unit of the effects analysis: [direct, calls, escapes, full] (effects.py)
    Unit = List[Any]
    # what a name may be bound to (names.py): ("qual", "os.path"), ("unit", uid),
    # ("var", TypeSet), ("class", name), ("builtin", name), ("unknown",), ...
    Value = Tuple[Any, ...]
    # a binding site of a name (names.py): ("def", node), ("assign", value node), ...
    Site = Tuple[Any, ...]
