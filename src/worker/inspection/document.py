# SPDX-License-Identifier: MIT
# govex call-mode worker, inspection part (src/worker/inspection/): the static reading of a
# module with ast (it is never imported) and the effects analysis.  Only an inspection
# needs it, so the C side puts it before src/worker/worker.py for `inspect` requests and a
# call's worker does not compile it (about 10 ms of a worker's start).
#
# The part is several files, concatenated in the order src/worker/inspection/parts gives
# (tools/embed.py) into one text: one `python -I -S -c` process, one compile, one
# namespace.  So the files do not import each other; each defines functions, classes and
# tables only, and what it uses of another (or of worker.py: Failure, _trace,
# INSPECTION_VERSION) is looked up when it runs.  Only a class's bases must come before
# it: Effects' bases are mixins, one concept each, over the state effects.py sets up.
#
#   document.py       the answer to `inspect`: the source parsed and compiled, and the
#                     govex.inspection/v1 document
#   scopes.py         a scope's own nodes; the names a statement binds
#   schema.py         an annotation's JSON Schema (govex's one annotation interpreter)
#   signature.py      one function's entry: parameters, annotations as source text and
#                     schemas, docstring, eligibility
#   effects_table.py  the effect vocabulary; what standard names and builtins do
#   names.py          binding sites and name resolution             a base of Effects
#   annotations.py    the value types an annotation promises        a base of Effects
#   valuetypes.py     value types of expressions                    a base of Effects
#   value_effects.py  what calling or referencing a value does      a base of Effects
#   effects.py        Effects: units, the fixpoint over the call graph, the result
#   walker.py         _Walker: one unit's own code


def inspect_source(source, digest, module, filename):
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
