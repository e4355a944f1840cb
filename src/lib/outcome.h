/* SPDX-License-Identifier: MIT */
/* The launch and the outcome, every job kind's (outcome.c). */
#ifndef GOVEX_OUTCOME_H
#define GOVEX_OUTCOME_H

#include "internal.h"

struct decision;

/* The status of a run that ended so. */
enum govex_status govex__status_of(const struct govex__outcome *o);

/* What a job's program is launched with (job.c fills it from struct govex__program). */
struct govex__launch_args {
	const char *run_id;
	const struct decision *d;
	const govex_plan *plan;
	char *const *argv;
	const char *stdin_data;
	size_t stdin_len;
	const govex_cancel_token *cancel;
	int extra_fd, frame_fd; /* taken (call mode; -1 otherwise) */
	uint64_t frame_max;
	char *const *extra_ro;
};
/*
 * Makes the workdir, runs a->argv on the decision's backend and removes a fresh workdir.
 * On failure before launch, *ret_result is a launch_failed result.
 */
int govex__launch_program(govex_runtime *rt, const struct govex__launch_args *a,
			  struct govex__outcome *ret_o, govex_result **ret_result,
			  struct govex_error *err);
/* Diagnostics for how a run ended (timeout, cancel, limits, launch failure). */
void govex__outcome_diagnostics(govex_result *res, const struct govex__outcome *o,
				const struct govex__limits *l);
/* The result of a finished run: status from the outcome, its output and usage (taken
 * from o, which is released), digests, the backend and its controls, diagnostics. */
govex_result *govex__run_result(govex_runtime *rt, const struct decision *d, const govex_plan *plan,
				struct govex__outcome *o);

/* The same, o's output taken but its frame (call mode, a REPL run's) left in o. */
govex_result *govex__run_result_keep(govex_runtime *rt, const struct decision *d,
				     const govex_plan *plan, struct govex__outcome *o);

#endif
