/* SPDX-License-Identifier: MIT */
/*
 * REPL runs (repl.c): a snippet run in govex's worker (op "snippet"), its value coming
 * back in the response frame on fd 3.  The run job (run.c) calls these two for a
 * request with repl set; everything else (planning, approval, launch, audit) is the
 * pipeline's (job.c).
 */
#ifndef GOVEX_REPL_H
#define GOVEX_REPL_H

#include "internal.h"

/*
 * The program of a repl run: *ret_argv the worker's argv (`python -I [-S] -c WORKER`,
 * a NULL-terminated vector the caller frees with govex__strv_free), *ret_stdin the bytes
 * of its stdin (the request frame, then req's stdin bytes; malloc'd, the caller frees)
 * of *ret_len bytes.  limits are the run's (the plan's): value_max comes from
 * limits->call_output_bytes; the pipeline reads the response frame up to
 * call_output_bytes + 64 KiB.  0 or -errno (-EOPNOTSUPP: repl runs are not built in).
 */
int govex__repl_program(govex_runtime *rt, const struct govex_request *req,
			const struct govex__limits *limits, char ***ret_argv, char **ret_stdin,
			size_t *ret_len);
/*
 * Turns a finished repl run into its result: res is the run's result (status from the
 * termination, output, usage, digests, diagnostics) and o the outcome, its response frame
 * in o->frame / o->frame_state (o's output already taken by res).  Sets the value, or
 * the exception diagnostic, or worker_failed.  0 or -ENOMEM.
 */
int govex__repl_finish(govex_runtime *rt, const struct govex__outcome *o, govex_result *res);

#endif
