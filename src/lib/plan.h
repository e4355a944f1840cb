/* SPDX-License-Identifier: MIT */
/* Plans and planning (plan.c). */
#ifndef GOVEX_PLAN_H
#define GOVEX_PLAN_H

#include "internal.h"

/* A plan: its canonical bytes, their digest, and the document they encode. */
struct govex_plan {
	char *canon;
	size_t len;
	char digest[72];
	char *source_path;
	json_t *doc;
};

/* What planning decided, beyond the plan document. */
struct decision {
	struct govex__limits limits;
	govex__ctlset required;
	size_t backend;
	char **env;	  /* NAME=VALUE, final */
	char *workdir;	  /* NULL = fresh */
	unsigned approve; /* permissions needing approval */
	/* borrowed from the request: files in, outputs, live output (files.c, supervise.c) */
	const struct govex_file *files;
	size_t n_files;
	bool outputs;
	govex_output_fn on_output;
	void *output_userdata;
};

void govex__decision_release(struct decision *d);
govex_plan *govex__plan_from_doc(json_t *doc); /* takes doc */
/*
 * Validates req against the policy, chooses the backend and builds the plan.  job is NULL
 * for a run; for call mode it is an object whose members replace the run-specific
 * parts of the plan ("code", "stdin", "request_digest"), and req->code is then the
 * worker's own source, not checked as user code.  Borrows job.
 */
int govex__plan_internal(govex_runtime *rt, const struct govex_request *req, const char *run_id,
			 json_t *job, govex_plan **ret_plan, struct decision *ret_d,
			 govex_result **ret_result, struct govex_error *err);
/* Why two plans differ, as a refusal. */
govex_result *govex__plan_mismatch(govex_runtime *rt, const govex_plan *given,
				   const govex_plan *fresh);

#endif
