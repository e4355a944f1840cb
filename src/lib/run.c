/* SPDX-License-Identifier: MIT */
/*
 * The run job (plain or REPL-style), and govex_runtime_plan, _run and _execute over the
 * pipeline (job.c).  The launch and the outcome's result are every kind's (outcome.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "job.h"
#include "plan.h"
#include "repl.h"
#include "run.h"
#include "runtime.h"

#include "values.h"

#include "files.h"

/* ---- the run job: Python code, plain or REPL-style ---------------------------------------- */

struct run_job {
	char *code;	/* NUL-terminated copy of the code (its -c argument) */
	char **argv;	/* a repl run's program (govex__repl_program: one allocation) */
	char *frame_in; /* a repl run's stdin: the request frame, then the run's stdin */
	size_t frame_in_len;
};

static int run_program(struct govex__job *j, struct govex__program *prog,
		       govex_result **ret_refusal)
{
	struct run_job *rj = j->state;
	(void)ret_refusal;
	if (!(rj->code = strndup(j->req.code, j->req.code_len)))
		return -ENOMEM;
	govex__interp_argv(j->rt, rj->code, prog->argv);
	prog->stdin_data = j->req.stdin_data;
	prog->stdin_len = j->req.stdin_len;
	return 0;
}

static int run_finish(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		      struct govex_error *err)
{
	if (!(*ret_result = govex__run_result(j->rt, &j->d, j->plan, o)))
		return govex__err(err, ENOMEM, ENOMEM, "run: out of memory");
	return 0;
}

static void run_release(struct govex__job *j)
{
	struct run_job *rj = j->state;
	free(rj->code);
	free(rj->argv);
	free(rj->frame_in);
	memset(rj, 0, sizeof(*rj));
}

const struct govex__job_ops govex__job_run = {
    .kind = GOVEX_JOB_RUN,
    .received = {"run", "execute", "plan"},
    .approve = true,
    .program = run_program,
    .finish = run_finish,
    .release = run_release,
};

/* a repl run: govex's worker runs the code (op "snippet", repl.c); the value comes back
 * in the response frame */
static int repl_program(struct govex__job *j, struct govex__program *prog,
			govex_result **ret_refusal)
{
	struct run_job *rj = j->state;
	(void)ret_refusal; /* the inputs were checked at planning (govex__repl_check) */
	int r = govex__repl_program(j->rt, &j->req, &rj->argv, &rj->frame_in, &rj->frame_in_len);
	if (r < 0)
		return r;
	prog->argvp = rj->argv;
	prog->stdin_data = rj->frame_in;
	prog->stdin_len = rj->frame_in_len;
	prog->frame = true;
	prog->frame_max = govex__repl_frame_max(j->rt);
	return 0;
}

static int repl_finish(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		       struct govex_error *err)
{
	govex_result *res = govex__run_result_keep(j->rt, &j->d, j->plan, o);
	int r = res ? govex__repl_finish(j->rt, o, res) : -ENOMEM;
	govex__outcome_release(o);
	if (r < 0) {
		govex_result_free(res);
		return govex__err(err, -r, -r, "run: %s", strerror(-r));
	}
	*ret_result = res;
	return 0;
}

/* the same kind of plan as a run's ("run", with "repl"); another program and result */
const struct govex__job_ops govex__job_repl = {
    .kind = GOVEX_JOB_RUN,
    .received = {"run", "execute", "plan"},
    .approve = true,
    .program = repl_program,
    .finish = repl_finish,
    .release = run_release,
};

static int run_job(govex_runtime *rt, const govex_plan *given, const struct govex_request *req,
		   enum govex__job_mode mode, govex_plan **ret_plan, govex_result **ret_result,
		   struct govex_error *err)
{
	struct run_job rj = {0};
	struct govex__job j = {
	    .ops = req->repl ? &govex__job_repl : &govex__job_run,
	    .rt = rt,
	    .mode = mode,
	    .given = given,
	    .req = *req,
	    .state = &rj,
	};
	return govex__job_execute(&j, ret_plan, ret_result, err);
}

GOVEX_API int govex_runtime_plan(govex_runtime *rt, const struct govex_request *req,
				 govex_plan **ret_plan, govex_result **ret_result,
				 struct govex_error *ret_err)
{
	if (!rt || !req || !ret_plan || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	return run_job(rt, NULL, req, GOVEX_JOB_PLAN_ONLY, ret_plan, ret_result, ret_err);
}

GOVEX_API int govex_runtime_execute(govex_runtime *rt, const govex_plan *plan,
				    const struct govex_request *req, govex_result **ret_result,
				    struct govex_error *ret_err)
{
	if (!rt || !plan || !req || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "execute: missing argument");
	return run_job(rt, plan, req, GOVEX_JOB_EXECUTE, NULL, ret_result, ret_err);
}

GOVEX_API int govex_runtime_run(govex_runtime *rt, const struct govex_request *req,
				govex_result **ret_result, struct govex_error *ret_err)
{
	if (!rt || !req || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "run: missing argument");
	return run_job(rt, NULL, req, GOVEX_JOB_EXECUTE, NULL, ret_result, ret_err);
}
