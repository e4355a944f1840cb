# SPDX-License-Identifier: MIT
# govex worker: its paths, walked ahead of a request.  Called by govex's warm template in a spare run process before its request comes
# (zygote.py, _zyg_prewarm), each while no request is there: the paths of a snippet's and
# of a call's request, on govex's constant inputs, so that their first writes to the
# template's pages (each a copy-on-write fault) are made ahead of the request and not on
# its path (measured: ~120 of a warm snippet's faults, ~100 of a call's).  No user code,
# no descriptor, nothing registered in sys.modules or linecache: they leave no global,
# module or interpreter state a run can tell apart.
from govex_worker.call import annotation_rejects_null
from govex_worker.frames import (FRAME_VERSION, SNIPPET_DEPTH_MAX, Failure, canonical,
                                 decode_frame, encode_frame, field, parse_json_text,
                                 sha256_text, type_name)
from govex_worker.snippet import snippet_compile, snippet_run
from govex_worker.values import check_result, encode_value, plain_value


def _prewarm_snippet() -> None:
    import builtins
    import types
    src = "x = [i * 2 for i in range(3)]\nx\n"
    req = decode_frame(encode_frame({"version": FRAME_VERSION, "op": "snippet", "code": src,
                                     "code_digest": sha256_text(src), "value_max": 64}))
    types.ModuleType("__main__")
    code, expr = snippet_compile(field(req, "code", (str,)))
    value = snippet_run(code, expr, {"__builtins__": builtins})
    why, plain, bad = plain_value(value, SNIPPET_DEPTH_MAX)
    (type_name(value) or "object").lower()
    b'{"value":' + encode_value(plain).encode("utf-8")
    encode_frame(Failure("worker_failed", "bad_request", message="-").frame())


def _prewarm_call() -> None:
    # its documents parsed and digested, a module compiled and run (not registered), its
    # function bound and called, the value checked and encoded
    import inspect as _inspect
    import types
    src = "def f(a: int, b: int = 2) -> int:\n    return a + b\n"
    parse_json_text(canonical({"kind": "call", "source": {"digest": sha256_text(src)},
                               "function": {"name": "f", "eligible": True, "parameters": [
                                   {"name": "a", "kind": "positional_or_keyword",
                                    "has_default": False, "annotation": "int"}]}}))
    annotation_rejects_null("int")
    mod = types.ModuleType("__govex_prewarm__")
    exec(compile(src, "<prewarm>", "exec", dont_inherit=True), mod.__dict__)
    try:
        sig = _inspect.signature(mod.f)
        [(q.name, q.kind, q.default is not q.empty) for q in sig.parameters.values()]
        canonical(check_result(mod.f(*[], **{"a": 40}), 64)).encode("utf-8")
    finally:
        # (the function and its module's dict refer to each other: a cycle a run could
        # find with gc.get_objects() until a collection)
        mod.__dict__.clear()


STEPS = (_prewarm_snippet, _prewarm_call)
