# SPDX-License-Identifier: MIT
# govex worker, inspection (govex_worker.inspection): the answer to `inspect`, the source
# parsed and compiled, and the govex.inspection/v1 document.
from govex_worker.frames import Failure, INSPECTION_VERSION, trace as _trace
from govex_worker.inspection.effects import Effects
from govex_worker.inspection.scopes import _module_binding_counts
from govex_worker.inspection.signature import _Segments, _describe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from govex_worker.inspection.vocabulary import Json


def inspect_source(source: str, digest: str, module: str, filename: str) -> "Json":
    import ast
    try:
        tree = ast.parse(source, filename, "exec")
    except SyntaxError as e:
        line = e.lineno if type(e.lineno) is int else None
        raise Failure("invalid_input", "syntax_error", e,
                      message="the source is not valid python (line %d)" % line
                      if line else None)
    except ValueError as e:  # NUL bytes before 3.12
        raise Failure("invalid_input", "syntax_error", e)
    except (RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "source_too_complex", e)
    # compiled too, as the call's worker will (nothing runs): errors only the compiler
    # finds ('return' outside a function, a misplaced nonlocal) are found here, by govex,
    # not by the call's worker, whose invalid_input the parent does not take from a frame
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        line = e.lineno if type(e.lineno) is int else None
        raise Failure("invalid_input", "syntax_error", e,
                      message="the source is not valid python (line %d)" % line
                      if line else None)
    except (ValueError, TypeError) as e:
        raise Failure("invalid_input", "syntax_error", e)
    except (RecursionError, MemoryError) as e:
        raise Failure("invalid_input", "source_too_complex", e)
    seg = _Segments(source)
    try:
        effects = Effects(ast, tree).function_effects()
    except Exception as e:  # too deep, or a gap in the analysis: every effect unknown
        _trace(e)
        effects = None
    module_sites = _module_binding_counts(ast, tree)
    functions = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(_describe(ast, node, seg, effects, module_sites))
    return {"version": INSPECTION_VERSION, "module": module, "source_digest": digest,
            "functions": functions}
