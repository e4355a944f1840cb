# SPDX-License-Identifier: MIT
# govex worker: a failure for an exception of the user's code, with the traceback python
# would print for it, the worker's own frames left out.
import sys
import types

import govex_worker
from govex_worker.frames import EXCEPTION_MESSAGE_MAX, TRACEBACK_MAX, Failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Set


def _own_globals() -> "Set[int]":
    """The ids of the namespaces of this package's modules (the worker's frames): those
    the package holds, however it was loaded (files, or the embedded text's loader)."""
    out = set()
    stack = [govex_worker]  # type: List[types.ModuleType]
    while stack:
        m = stack.pop()
        g = vars(m)
        if id(g) in out:
            continue
        out.add(id(g))
        for v in list(g.values()):
            if type(v) is types.ModuleType and v.__name__.startswith(m.__name__ + "."):
                stack.append(v)
    return out


def user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback python would print for an exception of the user's code, without
    govex's frames: the worker's own (wherever they are: INPUTS' methods too), and the
    outermost frames before the first one in FILENAME (asyncio's runner).  Text; "" when
    it cannot be formatted."""
    try:
        import traceback
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        mine = _own_globals()
        frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
        stack = te.stack
        if len(frames) == len(stack):
            keep = [s for f, s in zip(frames, stack) if id(f.f_globals) not in mine]
        else:  # cannot happen: keep what is not the worker's by name
            keep = [s for s in stack if s.filename != "<string>"]
        for i, s in enumerate(keep):
            if s.filename == filename:
                keep = keep[i:]
                break
        stack[:] = keep
        if not keep and hasattr(te, "exc_traceback"):  # 3.6 prints the header by it
            te.exc_traceback = None
        return "".join(te.format())
    except BaseException:
        return ""


def exception_failure(exc: BaseException, filename: str,
                      status: str = "execution_failed") -> Failure:
    """A Failure for an exception of the user's code: its traceback printed to stderr (as
    python would), and the frame's "exception" (type, message, bounded traceback)."""
    text = user_traceback(exc, filename)
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        message = str(exc)
    except BaseException:
        message = ""
    if type(message) is not str:
        message = ""
    if len(message) > EXCEPTION_MESSAGE_MAX:
        message = message[:EXCEPTION_MESSAGE_MAX] + " [truncated]"
    tb = text.encode("utf-8", "replace")
    if len(tb) > TRACEBACK_MAX:
        tb = tb[-TRACEBACK_MAX:]
        text = "[...]\n" + tb.decode("utf-8", "ignore")
    f = Failure(status, "exception", exc)
    f.exception = {"type": f.exc_type or "Exception", "message": message, "traceback": text}
    return f
