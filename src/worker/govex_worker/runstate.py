# SPDX-License-Identifier: MIT
# govex worker: the state of this process's one request that several modules share.
# Set once each, before the user's code runs; read through this module (runstate.X), never
# copied, so that every reader sees the value set.

# the response descriptor (set by dispatch.main; a call writes its "module starts" mark
# there)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Tuple

resp_fd = -1
# a snippet's code is running or ran: the process ends as that python program would
snippet_running = False
# INPUTS' read-only dict and list types (snippet.read_only_inputs): values like their
# bases (values.plain_value)
ro_types = (dict, list)  # type: Tuple[type, type]
