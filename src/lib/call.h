/* SPDX-License-Identifier: MIT */
/*
 * Call mode, private: the module's source (callsource.c), its inspection and the
 * runtime's cache of inspections (inspect.c), the worker's frames and the parent's
 * decision on them (callframe.c), the arguments checked (callargs.c), and the call job
 * (call.c).
 */
#ifndef GOVEX_CALL_H
#define GOVEX_CALL_H

#include "internal.h"
#include "job.h"

#define REQUEST_FRAME_MAX    (64ULL << 20)
#define INSPECTION_FRAME_MAX (16ULL << 20)
/* room for the response envelope around a value of call_output_bytes, or for an
 * exception's bounded text (repl.h) */
#define ENVELOPE_SLACK (128ULL << 10)

/* A module's source as planned and sent to the worker. */
struct source {
	char *text; /* Python source (a notebook's transformed source) */
	size_t len;
	char digest[72];
	bool notebook;
	char notebook_digest[72];
	char *module;
	char *filename;
	const char *path;
};

/* Everything an inspection yields. */
struct inspection {
	json_t *doc; /* govex.inspection/v1 */
	char *canon; /* canonical bytes */
	size_t len;
	char digest[72];
};

/* ---- callsource.c */
bool govex__call_identifier(const char *s, size_t n);
/* An invalid_input refusal with one diagnostic. */
govex_result *govex__call_invalid(govex_runtime *rt, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads the module's source into s; a refusal when it is not usable. */
int govex__source_prepare(govex_runtime *rt, const struct govex_source *src, struct source *s,
			  govex_result **ret_refusal);
void govex__source_release(struct source *s);
/* The request a worker run stands for: the call's limits, metadata and cancellation. */
struct govex_request govex__worker_request(const struct govex_call *call);

/* ---- inspect.c */
void govex__inspection_release(struct inspection *in);
/* The module's inspection (the runtime's cache, or an inspection job run inside the
 * caller's job j, under its run id): on success in->doc is set; otherwise *ret_result
 * says why. */
int govex__inspect_nested(struct govex__job *parent, const struct govex_call *call,
			  const struct source *s, struct inspection *in, govex_result **ret_result,
			  struct govex_error *err);

/* ---- callframe.c */
/* 8-byte big-endian length + compact JSON. */
int govex__frame_encode(json_t *payload, char **ret, size_t *ret_len);
/* The worker's argv: a call's worker does not compile the inspection part.  -ENOMEM
 * when the inspection text could not be made. */
int govex__worker_argv(govex_runtime *rt, bool inspect, char *argv[8]);
/*
 * The result of a worker's run (its status from the outcome or the response frame,
 * decided by the parent); when the response said ok, *ret_response is its payload
 * (caller decrefs).  o is released.
 */
int govex__worker_result(struct govex__job *j, bool inspect, struct govex__outcome *o,
			 json_t **ret_response, govex_result **ret_result, struct govex_error *err);

/* ---- callargs.c */
/* Checks the arguments against the planned signature before any user code runs: NULL,
 * or the refusal; *ret_canon_len the length of their canonical bytes. */
govex_result *govex__call_check_args(govex_runtime *rt, json_t *fn, json_t *args,
				     uint64_t input_max, size_t *ret_canon_len);

#endif
