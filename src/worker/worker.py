# SPDX-License-Identifier: MIT
# govex call-mode worker.  Started by the C side as
#     python -I [-S] -c <this text>
# with fd 0 = one request frame then EOF (a snippet: then the program's stdin), fd 1/2 =
# the run's output pipes, fd 3 = the response descriptor.  govex.frame/v1: an 8-byte
# unsigned big-endian length, then that many bytes of UTF-8 JSON.  One request in, exactly
# one response frame out on the response descriptor, exit status 0 (a snippet: see below).
# Standard library only; Python 3.8 to 3.13 (op "snippet": 3.6 to 3.13, so the package
# keeps to 3.6's syntax: annotations that name typing's types are strings, typing is
# imported by type checkers only).
#
# A call's worker also writes one EMPTY frame (8 zero bytes) on the response descriptor
# just before the module's code runs: the "module starts" mark.  Nothing of the caller's
# code has run before it, so the parent knows that a response without the mark came from
# this file alone, and that one after it may have been written by the module (the parent
# then trusts only what the module could have caused anyway; see call.c).
#
# Operations:
#   inspect  parse the source with ast (never import it) and describe its top-level
#            functions: signature, docstring, eligibility and effects.  That code is the
#            package govex_worker.inspection, which the C side puts before this text for
#            an inspection only (tools/embed.py).
#   call     verify the digest chain, compile the verified source, bind the planned
#            function, rebuild its arguments, run it, return its value as finite JSON.
#   snippet  a REPL run (src/lib/repl.c): compile the code as "<snippet>" (top-level
#            await where the interpreter has it), run it in a fresh __main__ with the
#            read-only INPUTS, and answer the trailing expression's value.  The frame is
#            written, then the interpreter ends as a python program would: exit 0, or 1
#            after an exception (its traceback on stderr, the exception in the frame), or
#            the status of a SystemExit (no frame).
#
# The user's stdout and stderr are the run's (line buffered, write-through).  Failure
# frames carry a status, a short code, a fixed message and an exception's type name;
# only an exception of the user's code adds "exception": its type, message and the
# traceback of the user's own frames (bounded), which the parent bounds again.
#
# This file is the entry; the worker is the package govex_worker beside it (its modules:
# govex_worker/__init__.py).  Embedded, the package's modules come from the text itself
# (tools/embed.py: no file is opened for them) and are gone from sys.modules again before
# this file's main() runs; from the source tree, `python src/worker/worker.py` imports the
# same package from its files.
from govex_worker import dispatch, prewarm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from govex_worker.dispatch import Inspect

# The inspection part, when this text has it (the C side puts it first for an
# inspection only): a call's worker does not compile it
try:
    from govex_worker.inspection.document import inspect_source
    _inspect = inspect_source  # type: Inspect
except ImportError:
    _inspect = None


def main() -> None:
    dispatch.main(_inspect)


# Called by govex's warm template in a spare run process before its request comes
# (zygote.py, _zyg_prewarm): govex_worker/prewarm.py
_GOVEX_PREWARM = prewarm.STEPS


if __name__ == "__main__":
    main()
