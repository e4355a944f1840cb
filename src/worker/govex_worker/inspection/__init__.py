# SPDX-License-Identifier: MIT
"""govex worker, op "inspect": the static reading of a module with ast (it is never
imported) and the effects analysis.  Only an inspection needs it, so it is a text of its
own (tools/embed.py) that the C side puts before the worker's for `inspect` requests; a
call's worker does not compile it (about 10 ms of a worker's start).

  document       the answer to `inspect`: the source parsed and compiled, and the
                 govex.inspection/v1 document
  scopes         a scope's own nodes; the names a statement binds
  schema         an annotation's JSON Schema (govex's one annotation interpreter)
  signature      one function's entry: parameters, annotations as source text and
                 schemas, docstring, eligibility
  effects_table  the effect vocabulary; what standard names and builtins do
  names          binding sites and name resolution             a base of Effects
  annotations    the value types an annotation promises        a base of Effects
  valuetypes     value types of expressions                    a base of Effects
  value_effects  what calling or referencing a value does      a base of Effects
  effects        Effects: units, the fixpoint over the call graph, the result
  walker         _Walker: one unit's own code

Effects' bases are mixins, one concept each, over the state Effects sets up.
"""
