# SPDX-License-Identifier: MIT
"""govex's worker (src/worker/worker.py is its entry: the protocol), standard library only.

  frames         the protocol's vocabulary: bounds, codes and messages, Failure, strict
                 JSON, govex.frame/v1, the descriptors
  runstate       the state of this process's one request that modules share
  errors         a failure for an exception of the user's code, its traceback
  values         the values that leave the process: finite JSON only
  figures        matplotlib: a backend without a display, a snippet's figures as PNGs
  call           op "call", phase by phase
  snippet        op "snippet" (a REPL run)
  dispatch       one request in, one frame out: handle, main
  prewarm        the paths above, walked ahead of a request (a warm template's spares)
  inspection/    op "inspect": the static reading of a module (an inspection's text only)

The modules import each other and never form a circle (tools/embed.py refuses one): each
is read, checked and measured as an ordinary package (mypy --strict: .ci/lint).  The
library embeds them at build time (tools/embed.py, meson.build) so that no file is opened
for them at run time.
"""
