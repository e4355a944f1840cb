# SPDX-License-Identifier: MIT
# govex worker: one request in, exactly one response frame out (worker.py's header says
# the protocol): the request read and dispatched by its op, the answer written, the
# process ended.
import os
import sys

from govex_worker import runstate
from govex_worker.call import do_call
from govex_worker.frames import (FRAME_VERSION, Failure, bad_request, encode_frame, field,
                                 read_request, sha256_text, take_descriptors, trace,
                                 write_all)
from govex_worker.snippet import UserExit, do_snippet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Union
    # inspection.document.inspect_source: (source, digest, module, filename) -> document
    Inspect = Optional[Callable[[str, str, str, str], Dict[str, Any]]]


def handle(req: "Dict[str, Any]", inspect: "Inspect") -> "Union[Dict[str, Any], bytes]":
    """The response to a request: a frame's object, or a success frame's bytes."""
    if req.get("version") != FRAME_VERSION:
        raise bad_request("unsupported frame version")
    op = req.get("op")
    if op == "snippet":
        return do_snippet(req)
    source = field(req, "source", (str,))  # type: str
    digest = field(req, "source_digest", (str,))  # type: str
    module = field(req, "module", (str,))  # type: str
    filename = field(req, "filename", (str,))  # type: str
    if not module or "\0" in module or "\0" in filename:
        raise bad_request("field missing or mistyped: module")
    if op == "inspect":
        if inspect is None:  # started without govex_worker.inspection
            raise bad_request("this worker has no inspection part")
        if sha256_text(source) != digest:
            raise Failure("source_mismatch", "digest_mismatch")
        return {"version": FRAME_VERSION, "ok": True, "status": "success",
                "inspection": inspect(source, digest, module, filename)}
    if op == "call":
        return do_call(req, source, digest, module, filename)
    raise bad_request("unknown op")


def main(inspect: "Inspect") -> None:
    """The worker's process: never returns (os._exit, or a snippet's sys.exit)."""
    resp_fd = take_descriptors()
    runstate.resp_fd = resp_fd
    exit_status = 0
    user_exit = None  # type: Optional[BaseException]
    try:
        try:
            resp = handle(read_request(0), inspect)  # type: Union[Dict[str, Any], bytes, None]
        except UserExit as u:
            # SystemExit (sys.exit(), exit()): an answer without a value, so that the
            # parent tells this from a process that ended without one (os._exit, the
            # response descriptor closed); the exit status is the code's
            user_exit = u.exc
            resp = {"version": FRAME_VERSION, "ok": True, "status": "success"}
        except Failure as f:
            resp = f.frame()
            if f.status == "execution_failed" and runstate.snippet_running:
                exit_status = 1
        try:
            if resp is None:
                frame = b""
            elif isinstance(resp, bytes):
                frame = len(resp).to_bytes(8, "big") + resp
            else:
                frame = encode_frame(resp)
        except BaseException as e:  # cannot happen for validated values; fail closed
            trace(e)
            frame = encode_frame(Failure("worker_failed", "internal_error", e).frame())
    except BaseException as e:
        trace(e)
        frame = encode_frame(Failure("worker_failed", "internal_error", e).frame())
    try:
        write_all(resp_fd, frame)
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    if runstate.snippet_running:
        # a snippet ends as a python program does: its atexit handlers and threads
        try:
            os.close(resp_fd)
        except OSError:
            pass
        if user_exit is not None:
            raise user_exit  # python's own handling: its status, a message printed
        sys.exit(exit_status)
    # no atexit handlers or lingering non-daemon threads of user code: the frame is out
    os._exit(0)
