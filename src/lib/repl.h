/* SPDX-License-Identifier: MIT */
/* REPL runs (repl.c) and what the call-mode worker and a REPL run share (callframe.c):
 * the worker's argv, govex.frame/v1 encoding, the `exception` diagnostic, value fixes. */
#ifndef GOVEX_REPL_H
#define GOVEX_REPL_H

#include "runtime.h"

/* Room in a response frame beyond a value of limits.call_output_bytes (the envelope, an
 * exception's bounded type, message and traceback, JSON escapes). */
#define GOVEX__FRAME_SLACK (128ULL << 10)

/* Bounds of an exception's text taken from a frame (the worker bounds them too). */
#define EXC_TYPE_MAX	  128
#define EXC_MESSAGE_MAX	  2048
#define EXC_TRACEBACK_MAX 8192

/* govex.frame/v1: an 8-byte big-endian length, then compact JSON with sorted keys. */
int govex__frame_encode(json_t *payload, char **ret, size_t *ret_len);

/* The worker's argv: `python -I [-S] -c TEXT`, TEXT the worker (with its inspection part
 * when inspect).  The strings are borrowed (the runtime's, static).  -ENOMEM when the
 * inspection text could not be made. */
int govex__worker_argv(govex_runtime *rt, bool inspect, char *argv[8]);

/* A repl request's own fields: inputs only with repl, a JSON object in valid UTF-8.
 * 0, 1 with *ret_refusal (invalid_input), or -ENOMEM. */
int govex__repl_check(govex_runtime *rt, const struct govex_request *req,
		      govex_result **ret_refusal);

/* The program of a repl run: *ret_argv (one allocation; free() it, its strings are
 * borrowed) and its stdin, the request frame followed by the request's stdin
 * (malloc'd).  The run needs a response descriptor (extra_fd/frame_fd, as call mode's)
 * read with govex__repl_frame_max.  0 or -errno (-EINVAL: inputs not valid, checked at
 * planning by govex__repl_check). */
int govex__repl_program(govex_runtime *rt, const struct govex_request *req, char ***ret_argv,
			char **ret_stdin, size_t *ret_stdin_len);
/* The largest response payload a repl run's frame may announce. */
uint64_t govex__repl_frame_max(const govex_runtime *rt);

/* The result of a repl run from its outcome (termination decides; o->frame is the
 * response) and res, the run's result made from that outcome: the value, a value_omitted
 * diagnostic, the exception diagnostic, or worker_failed.  0 or -ENOMEM. */
int govex__repl_finish(govex_runtime *rt, const struct govex__outcome *o, govex_result *res);

/* Adds a diagnostic CODE ("exception"; call mode's "module_error") for a frame's
 * "exception" object {type, message, traceback} (text bounded and cleaned: the code
 * under test chose it).  0 when added, 1 when exc is not such an object, -ENOMEM. */
int govex__exception_diag(govex_result *res, const char *code, json_t *exc);
/* The words of a fix for a value that is not JSON, by the name a worker frame gives
 * (worker.py's VALUE_FIXES: a snippet's value_omitted, a call's result_invalid), or NULL
 * for a name that is not one: only a name crosses the frame, never the worker's text. */
const char *govex__value_fix(const char *name);

#endif
