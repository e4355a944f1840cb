/* SPDX-License-Identifier: MIT */
/*
 * Jobs (job.c): run, repl-run, call, exec and inspect are kinds of job behind one small
 * ops table, and one pipeline executes every kind:
 *
 *   prepare -> received -> resolve -> plan -> (plan only: done) -> given plan? compare
 *   -> check -> approve -> program -> launch -> finish -> audit
 *
 * with one refusal tail.  A kind fills the members of the plan that are its own
 * (govex__plan_fields), says what program runs (argv, stdin bytes, whether a response
 * frame comes back on fd 3) and turns the outcome into the result.
 */
#ifndef GOVEX_JOB_H
#define GOVEX_JOB_H

#include "internal.h"
#include "plan.h"

struct govex__job;

/* What a job runs: the program, its stdin, and its response frame (call mode). */
struct govex__program {
	char *argv[8];	    /* an interpreter's argv; or NULL and argvp */
	char *const *argvp; /* the argv when it is not in argv[] (exec) */
	const char *stdin_data;
	size_t stdin_len;
	bool frame;	       /* a response frame comes back on fd 3 */
	uint64_t frame_max;    /* its bound */
	char *const *extra_ro; /* read-only files a sandbox shows (exec) */
};

struct govex__job_ops {
	enum govex__job_kind kind;
	/* the "received" event's kind: a request, one with a given plan, a plan only */
	const char *received[3];
	bool approve; /* asks the approver (an inspection does not) */
	/* before anything is audited: read and check what the request names (a call's
	 * source, an exec's executable) and set j->req for planning.  May be NULL. */
	int (*prepare)(struct govex__job *j, govex_result **ret_refusal);
	/* after the "received" event, before planning (a call's inspection and function
	 * checks, a given plan's source or executable digest).  May be NULL. */
	int (*resolve)(struct govex__job *j, govex_result **ret_refusal);
	/* the kind's own plan members.  May be NULL. */
	int (*fill)(const struct govex__job *j, struct govex__plan_fields *f);
	/* after planning and a given plan's comparison, before approval (a call's
	 * arguments, an inspection's interpreter version).  Returns 1 when the job is done
	 * with nothing to launch (an inspection found in the cache directory, which needs
	 * the interpreter planning probed).  May be NULL. */
	int (*check)(struct govex__job *j, govex_result **ret_refusal);
	/* the program to launch */
	int (*program)(struct govex__job *j, struct govex__program *prog,
		       govex_result **ret_refusal);
	/* the result of the outcome (o is released); *ret_result NULL: success with nothing
	 * to report (an inspection, whose document the job keeps) */
	int (*finish)(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		      struct govex_error *err);
	void (*release)(struct govex__job *j);
};

extern const struct govex__job_ops govex__job_run, govex__job_exec, govex__job_call,
    govex__job_inspect;

enum govex__job_mode {
	GOVEX_JOB_EXECUTE,   /* run it */
	GOVEX_JOB_PLAN_ONLY, /* stop with the plan */
	GOVEX_JOB_NESTED,    /* run it inside another job (a call's inspection): no
			      * received/finish events of its own, the result not finished */
};

struct govex__job {
	const struct govex__job_ops *ops;
	govex_runtime *rt;
	char run_id[33];
	enum govex__job_mode mode;
	const govex_plan *given; /* a plan made earlier, or NULL */
	/* what is planned: the run's request, or the one a call, exec or inspection stands
	 * for (its limits, environment, needs, metadata, cancellation) */
	struct govex_request req;
	govex_plan *plan;
	struct decision d;
	bool launched;
	struct govex_error *err; /* the caller's, for a step's own message (may be NULL) */
	void *state;		 /* the kind's own (struct call_job, struct exec_job, ...) */
};

/*
 * The pipeline.  Executes j (j->ops, j->rt, j->mode, j->given, j->state set by the
 * caller); *ret_plan gets the plan in GOVEX_JOB_PLAN_ONLY mode; *ret_result the result
 * (NULL only for a successful job whose finish reported nothing).  Releases the job's
 * own state (ops->release).  < 0 only for out of memory and such (err set).
 */
int govex__job_execute(struct govex__job *j, govex_plan **ret_plan, govex_result **ret_result,
		       struct govex_error *err);

/* A refusal of status st with one diagnostic. */
govex_result *govex__job_refuse(govex_runtime *rt, enum govex_status st, const char *code,
				const char *msg);

#endif
