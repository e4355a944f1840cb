/* SPDX-License-Identifier: MIT */
/*
 * The one pipeline every kind of job goes through (job.h): prepare, the "received"
 * event, resolve, plan, a given plan compared, check, approval, the program launched,
 * its outcome turned into the result by the kind, and the audit of how it ended; and the
 * one refusal tail.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "approval.h"
#include "job.h"
#include "run.h"
#include "runtime.h"

govex_result *govex__job_refuse(govex_runtime *rt, enum govex_status st, const char *code,
				const char *msg)
{
	govex_result *r = govex__refusal(rt, st);
	if (r)
		govex__result_diag(r, code, NULL, "%s", msg);
	return r;
}

/* Launches the job's program; *ret_result is set when it could not be started (a
 * launch_failed result) or was refused before (the program's own refusal). */
static int job_launch(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		      struct govex_error *err)
{
	struct govex__program prog;
	int p[2] = {-1, -1};
	int r;
	memset(&prog, 0, sizeof(prog));
	*ret_result = NULL;
	if ((r = j->ops->program(j, &prog, ret_result)) < 0)
		return govex__err(err, -r, -r, "%s: %s", govex__job_kind_name(j->ops->kind),
				  strerror(-r));
	if (*ret_result)
		return 0;
	if (prog.frame && (r = govex__pipe(p, 0)) < 0)
		return govex__err(err, -r, -r, "%s: pipe: %s", govex__job_kind_name(j->ops->kind),
				  strerror(-r));
	j->launched = true;
	__atomic_add_fetch(&j->rt->runs_started, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&j->rt->runs_in_flight, 1, __ATOMIC_RELAXED);
	struct govex__launch_args a = {
	    .run_id = j->run_id,
	    .d = &j->d,
	    .plan = j->plan,
	    .argv = prog.argvp ? prog.argvp : prog.argv,
	    .stdin_data = prog.stdin_data,
	    .stdin_len = prog.stdin_len,
	    .cancel = j->req.cancel,
	    .extra_fd = p[1],
	    .frame_fd = p[0],
	    .frame_max = prog.frame ? prog.frame_max : 0,
	    .extra_ro = prog.extra_ro,
	};
	r = govex__launch_program(j->rt, &a, o, ret_result, err);
	__atomic_sub_fetch(&j->rt->runs_in_flight, 1, __ATOMIC_RELAXED);
	return r;
}

/* Up to the launch: prepare, received, resolve, plan, compare, check, approve.  Returns
 * < 0 (err set), 0 to go on, or 1: stop, with *res the refusal (or NULL: done). */
static int job_before_launch(struct govex__job *j, govex_plan **ret_plan, govex_result **res,
			     struct govex_error *err)
{
	const struct govex__job_ops *ops = j->ops;
	govex_runtime *rt = j->rt;
	int r = ops->prepare ? ops->prepare(j, res) : 0;
	if (j->mode != GOVEX_JOB_NESTED) {
		size_t which = j->mode == GOVEX_JOB_PLAN_ONLY ? 2 : j->given ? 1 : 0;
		govex__audit_received(rt, j->run_id, ops->received[which], &j->req);
	}
	if (r < 0)
		return govex__err(err, -r, -r, "%s: %s", govex__job_kind_name(ops->kind),
				  strerror(-r));
	if (*res)
		return 1;
	if (ops->resolve && (r = ops->resolve(j, res)) != 0) {
		if (r > 0)
			return 1;
		/* a nested job's error keeps its own message */
		return err && err->message[0]
			   ? r
			   : govex__err(err, -r, -r, "%s: %s", govex__job_kind_name(ops->kind),
					strerror(-r));
	}
	if (*res)
		return 1;
	if ((r = govex__plan_internal(j, &j->plan, &j->d, res, err)) < 0)
		return r;
	if (*res)
		return 1;
	if (j->mode == GOVEX_JOB_PLAN_ONLY) {
		if (ret_plan)
			*ret_plan = TAKE_PTR(j->plan);
		return 1;
	}
	if (j->given && strcmp(j->given->digest, j->plan->digest) != 0) {
		*res = govex__plan_mismatch(rt, j->given, j->plan);
		return *res ? 1 : govex__err(err, ENOMEM, ENOMEM, "out of memory");
	}
	if ((r = ops->check ? ops->check(j, res) : 0) < 0)
		return govex__err(err, -r, -r, "%s: %s", govex__job_kind_name(ops->kind),
				  strerror(-r));
	/* > 0: done with nothing to launch (an inspection found in the cache directory) */
	if (*res || r > 0)
		return 1;
	if (ops->approve && (*res = govex__approve(rt, j->run_id, &j->d, j->plan)))
		return 1;
	return 0;
}

/* How the job ended, audited, and its result finished.  A job stopped before its
 * program was launched (a refusal, or a plan only) is audited as refused. */
static int job_tail(struct govex__job *j, govex_result *res, struct govex_error *err)
{
	govex_runtime *rt = j->rt;
	if (!res) {
		/* success with nothing to report (an inspection) */
		govex__audit(&rt->audit, j->run_id, "finish",
			     json_pack("{s:s, s:s}", "status", "success", "kind",
				       govex__job_kind_name(j->ops->kind)));
		return 0;
	}
	if (govex__result_finish(res) < 0)
		return govex__err(err, ENOMEM, ENOMEM, "%s: out of memory",
				  govex__job_kind_name(j->ops->kind));
	if (!j->launched || govex_result_view(res)->termination == GOVEX_TERM_REFUSED)
		govex__audit_refused(rt, j->run_id, res);
	govex__audit_finish(rt, j->run_id, res, j->launched ? j->plan : NULL);
	return 0;
}

int govex__job_execute(struct govex__job *j, govex_plan **ret_plan, govex_result **ret_result,
		       struct govex_error *err)
{
	govex_result *res = NULL;
	struct govex__outcome o;
	int r;

	*ret_result = NULL;
	if (ret_plan)
		*ret_plan = NULL;
	memset(&j->d, 0, sizeof(j->d));
	j->plan = NULL;
	j->launched = false;
	j->err = err;
	if (err)
		err->message[0] = '\0';
	if (j->mode != GOVEX_JOB_NESTED)
		govex__run_id_new(j->run_id);

	r = job_before_launch(j, ret_plan, &res, err);
	if (r == 0) {
		r = job_launch(j, &o, &res, err);
		if (r == 0 && !res && j->launched)
			r = j->ops->finish(j, &o, &res, err);
	}
	if (r >= 0 && j->mode != GOVEX_JOB_NESTED &&
	    !(j->mode == GOVEX_JOB_PLAN_ONLY && !res && ret_plan && *ret_plan))
		r = job_tail(j, res, err);
	if (r < 0) {
		govex_result_free(res);
		res = NULL;
	}
	*ret_result = res;
	govex__decision_release(&j->d);
	j->plan = govex_plan_free(j->plan);
	if (j->ops->release)
		j->ops->release(j);
	return r < 0 ? r : 0;
}
