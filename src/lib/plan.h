/* SPDX-License-Identifier: MIT */
/* Plans (plan.c: the plan object, its document made from struct govex__plan_fields,
 * parsed plan files, mismatches) and planning (planning.c). */
#ifndef GOVEX_PLAN_H
#define GOVEX_PLAN_H

#include "internal.h"
#include "packages.h"

struct govex__job;

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

/* The kinds of job (job.h); a plan document's "kind". */
enum govex__job_kind {
	GOVEX_JOB_RUN,
	GOVEX_JOB_CALL,
	GOVEX_JOB_EXEC,
	GOVEX_JOB_INSPECT,
};

/* A file handed to the run, as its plan names it. */
struct govex__plan_file {
	const char *name;
	uint64_t bytes;
	char digest[72];
};

/*
 * Every member of a plan document, typed.  govex__plan_json() makes the document from
 * it: the members of every kind, then those of the kind (a run's code, stdin, interpreter
 * and request digest; an inspection's interpreter and source; a call's those and its
 * function, inspection digest and effects; an exec's executable, argv, shell string and
 * binds), then the optional ones only when set (repl, files, outputs).  Strings are
 * borrowed for the time the document is made.
 */
struct govex__plan_fields {
	enum govex__job_kind kind;
	const char *backend_name;
	const char *backend_version;
	struct govex__limits limits;
	char *const *env;    /* NAME=VALUE: the plan names the names */
	const char *workdir; /* NULL: "fresh" */
	char *const *read;
	char *const *write;
	char *const *deny; /* filesystem.deny as masked (real paths), or NULL: omitted */
	bool platform_defaults;
	bool network;
	/* the policy whose "network" the plan states (its allowlist, when filtered) */
	const struct govex_policy *net_policy;
	bool subprocess;
	bool shell;
	unsigned needs;	   /* enum govex__perm bits */
	unsigned approval; /* enum govex__perm bits */
	govex__ctlset required;
	const char *policy_digest;

	/* run */
	struct {
		char digest[72];
		uint64_t bytes;
		const char *source_path;
	} code;
	struct {
		char digest[72];
		uint64_t bytes;
	} in; /* "stdin" */
	char request_digest[72];

	/* run, call, inspect */
	struct {
		const char *path;
		const char *version;
		bool site;	  /* args: ["-I"], or ["-I","-S"] without site */
		const char *exec; /* a venv's python ("executable"), or NULL */
	} interpreter;
	/* the environment's packages ("packages"), or NULL when not resolved */
	const struct govex__packages *packages;
	char *const *preload;

	/* call, inspect */
	struct {
		const char *digest;
		uint64_t bytes;
		const char *path;	     /* NULL: null */
		const char *notebook_digest; /* NULL: omitted */
		const char *module;
	} source;

	/* call */
	json_t *function; /* the inspection's entry (borrowed) */
	const char *inspection_digest;
	const char *interface_digest; /* call: the function's interface (call.c) */
	char *const *require_known;
	json_t *observed; /* the function's effects (borrowed) */

	/* exec */
	struct {
		const char *path;
		const char *digest;
		uint64_t bytes;
	} executable;
	char *const *argv;
	bool shell_string;
	char *const *binds;

	/* optional: emitted only when set */
	const char *repl_inputs_digest;	      /* a repl run: "repl":{"inputs_digest"} */
	const struct govex__plan_file *files; /* "files", sorted by name, when n_files */
	size_t n_files;
	bool outputs; /* "outputs":{"max_files","max_bytes"} */
	uint64_t outputs_max_files;
	uint64_t outputs_max_bytes;
};

/* The plan document of f (NULL when out of memory). */
json_t *govex__plan_json(const struct govex__plan_fields *f);
/* The document's name of a kind ("run", "call", "exec", "inspect"). */
const char *govex__job_kind_name(enum govex__job_kind k);

void govex__decision_release(struct decision *d);
govex_plan *govex__plan_from_doc(json_t *doc); /* takes doc */
/*
 * Validates the job's request (j->req) against the policy, chooses the backend and builds
 * the plan: the members every plan has from the request, the policy and the decision, the
 * kind's own from j->ops->fill.  A run's code and stdin are checked as the user's (an
 * exec's stdin too); a call's or an inspection's j->req stands for the worker run and is
 * not.  On a refusal *ret_result is set and 0 returned.
 */
int govex__plan_internal(struct govex__job *j, govex_plan **ret_plan, struct decision *ret_d,
			 govex_result **ret_result, struct govex_error *err);
/* Why two plans differ, as a refusal. */
govex_result *govex__plan_mismatch(govex_runtime *rt, const govex_plan *given,
				   const govex_plan *fresh);

#endif
