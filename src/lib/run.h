/* SPDX-License-Identifier: MIT */
/* Running a planned job and its result (run.c). */
#ifndef GOVEX_RUN_H
#define GOVEX_RUN_H

#include "internal.h"

struct decision;

/* The status of a run that ended so. */
enum govex_status govex__status_of(const struct govex__outcome *o);
/*
 * Makes the workdir, runs argv on the decision's backend and removes a fresh workdir.
 * extra_fd/frame_fd are taken (call mode; -1 otherwise).  On failure before launch,
 * *ret_result is a launch_failed result.
 */
int govex__launch(govex_runtime *rt, const char *run_id, const struct decision *d,
		  const govex_plan *plan, char *const *argv, const char *stdin_data,
		  size_t stdin_len, const govex_cancel_token *cancel, int extra_fd, int frame_fd,
		  uint64_t frame_max, char *const *extra_ro, struct govex__outcome *ret_o,
		  govex_result **ret_result, struct govex_error *err);
/* Diagnostics for how a run ended (timeout, cancel, limits, launch failure). */
void govex__outcome_diagnostics(govex_result *res, const struct govex__outcome *o,
				const struct govex__limits *l);
/* The result of a finished run: status from the outcome, its output and usage (taken
 * from o, which is released), digests, the backend and its controls, diagnostics. */
govex_result *govex__run_result(govex_runtime *rt, const struct decision *d, const govex_plan *plan,
				struct govex__outcome *o);

#endif
