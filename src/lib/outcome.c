/* SPDX-License-Identifier: MIT */
/*
 * The launch and the outcome, every job kind's (job.c launches; run.c, call.c,
 * callframe.c and exec.c turn an outcome into their result): make a run's workdir and
 * files, run the program on the decision's backend, remove what was made, and turn the
 * outcome into a result (status, diagnostics, the backend's controls).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "files.h"
#include "job.h"
#include "outcome.h"
#include "plan.h"
#include "runtime.h"
#include "values.h"

enum govex_status govex__status_of(const struct govex__outcome *o)
{
	switch (o->term) {
	case GOVEX_TERM_EXITED:
		/* a run whose limits did not hold to its end is not a success (its
		 * result says which: controls_lost) */
		if (o->exit_code != 0 || o->controls_lost)
			return GOVEX_STATUS_EXECUTION_FAILED;
		return (o->out_truncated || o->err_truncated) ? GOVEX_STATUS_OUTPUT_LIMIT
							      : GOVEX_STATUS_SUCCESS;
	case GOVEX_TERM_TIMEOUT:
		return GOVEX_STATUS_TIMEOUT;
	case GOVEX_TERM_CANCELLED:
		return GOVEX_STATUS_CANCELLED;
	case GOVEX_TERM_MEMORY_LIMIT:
	case GOVEX_TERM_CPU_LIMIT:
		return GOVEX_STATUS_RESOURCE_LIMIT;
	case GOVEX_TERM_OUTPUT_LIMIT:
		return GOVEX_STATUS_OUTPUT_LIMIT;
	default:
		return GOVEX_STATUS_EXECUTION_FAILED;
	}
}

static govex_result *launch_failure(govex_runtime *rt, const govex_plan *plan, const char *step,
				    const char *what, const char *detail)
{
	govex_result *res =
	    govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
	if (!res)
		return NULL;
	govex__result_diag(res, "launch_failed", json_pack("{s:s}", "step", step), "%s: %s", what,
			   detail);
	govex__result_set_digests(res, rt->policy->digest, plan->digest);
	return res;
}

/* Files in and out around a launch (files.c): the outputs' memfd and the environment
 * naming the output directory; a host workdir gets the files and the directory now.
 * 0, or -1 with *ret_result a launch failure (NULL: out of memory). */
static int files_prepare(govex_runtime *rt, const govex_plan *plan, const struct decision *d,
			 const char *workdir, bool host_workdir, int *ret_fd, char ***ret_envp,
			 govex_result **ret_result)
{
	if (!d->outputs && !d->n_files)
		return 0;
	if (d->outputs) {
		*ret_fd = memfd_create("govex-outputs", MFD_CLOEXEC);
		if (*ret_fd < 0) {
			*ret_result = launch_failure(rt, plan, "files", "outputs: memfd_create",
						     strerror(errno));
			return -1;
		}
		if (!(*ret_envp = govex__files_launch_env(d->env, workdir)))
			return -1;
	}
	if (!host_workdir)
		return 0;
	_cleanup_close_ int wdfd = open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = wdfd < 0 ? -errno
			 : govex__files_place(wdfd, workdir, d->files, d->n_files, d->outputs,
					      (uid_t)-1, (gid_t)-1, false);
	if (r < 0) {
		*ret_result = launch_failure(
		    rt, plan, "files", "files: cannot place them in the workdir", strerror(-r));
		return -1;
	}
	return 0;
}

/* After the run: a host workdir's output directory is collected here (a private one
 * was, by the backend, inside the sandbox), then the records are parsed. */
static void files_collect(const struct decision *d, const char *workdir, bool host_workdir,
			  int out_fd, struct govex__outcome *o)
{
	o->outputs = true;
	if (out_fd < 0)
		return;
	if (host_workdir) {
		char *scratch = malloc(GOVEX__COLLECT_SCRATCH);
		_cleanup_close_ int wdfd =
		    open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (scratch && wdfd >= 0)
			govex__files_collect(wdfd, out_fd, d->limits.files_out_count,
					     d->limits.files_out_bytes, scratch);
		free(scratch);
	}
	o->outfiles = govex__files_parse(out_fd);
}

int govex__launch_program(govex_runtime *rt, const struct govex__launch_args *a,
			  struct govex__outcome *o, govex_result **ret_result,
			  struct govex_error *err)
{
	const char *run_id = a->run_id;
	const struct decision *d = a->d;
	const govex_plan *plan = a->plan;
	char *const *argv = a->argv, *const *extra_ro = a->extra_ro;
	int extra_fd = a->extra_fd, frame_fd = a->frame_fd;
	const struct govex__backend_ops *b = govex__backends[d->backend];
	void *state = NULL;
	_cleanup_free_ char *workdir = NULL;
	_cleanup_close_ int workdir_lock = -1;
	/* joined on every way out: the sweep of dead workdirs overlaps the run's start */
	_cleanup_(govex__sweep_join) struct govex__sweep sweeper = {.started = false};
	bool sweep = false;
	_cleanup_close_ int out_fd = -1;
	char **envp = NULL;
	bool host_workdir = false;
	char **env = NULL;
	int r;
	memset(o, 0, sizeof(*o));
	*ret_result = NULL;
	if ((r = govex__backend_state(rt, d->backend, &state, err)) < 0) {
		*ret_result = launch_failure(rt, plan, "prepare", "backend preparation failed",
					     err ? err->message : strerror(-r));
		goto fail;
	}
	/* A fresh workdir: the sandbox's own (restricted: a tmpfs at /govex/work, nothing on
	 * the host to remove or to leave behind), or a locked host directory. */
	const char *priv = !d->workdir && b->private_workdir ? b->private_workdir(state) : NULL;
	if (priv) {
		/* no host workdir is made here, so the leftovers of a killed govex's runs on
		 * another backend are swept once per runtime instead */
		pthread_mutex_lock(&rt->lock);
		sweep = !rt->swept;
		rt->swept = true;
		pthread_mutex_unlock(&rt->lock);
	}
	if (d->workdir) {
		workdir = strdup(d->workdir);
	} else if (priv) {
		workdir = strdup(priv);
	} else if ((r = govex__make_workdir(&workdir, &workdir_lock, err)) < 0) {
		*ret_result = launch_failure(
		    rt, plan, "workdir", "workdir: cannot create a fresh directory", strerror(-r));
		goto fail;
	}
	if (!workdir)
		goto fail;
	host_workdir = !d->workdir && !priv;
	if (files_prepare(rt, plan, d, workdir, host_workdir, &out_fd, &envp, ret_result) < 0) {
		if (host_workdir) /* made above for this run: nothing ran in it */
			govex__rm_rf(workdir);
		goto fail;
	}
	/* HOME and a locale as platform defaults, not in the plan (platform.c); out of
	 * memory for them, the run gets the planned environment alone */
	if (govex__env_platform(envp ? envp : d->env, workdir, &env) < 0)
		env = NULL;
	struct govex__launch l = {
	    .policy = rt->policy,
	    .interp = &rt->interp,
	    .opts = &rt->opts,
	    .limits = &d->limits,
	    .argv = argv,
	    .envp = envp ? envp : d->env,
	    .workdir = workdir,
	    .workdir_fresh = d->workdir == NULL,
	    .stdin_data = a->stdin_data,
	    .stdin_len = a->stdin_len,
	    .cancel_fd = govex__cancel_fd(a->cancel),
	    .extra_fd = extra_fd,
	    .frame_fd = frame_fd,
	    .frame_max = a->frame_max,
	    .aggregate = d->required &
			 (CTL(MEMORY_AGGREGATE) | CTL(CPU_TIME_AGGREGATE) | CTL(PIDS_AGGREGATE)),
	    .extra_ro = extra_ro,
	    /* a private workdir is made inside the sandbox: the backend places the files;
	     * in a fresh host workdir they are placed already (a sandbox may bind them) */
	    .files = d->files,
	    .n_files = d->n_files,
	    .outputs = d->outputs,
	    .out_fd = out_fd,
	    .on_output = d->on_output,
	    .output_userdata = d->output_userdata,
	    /* started once the shim exists: its thread's start then costs the run nothing */
	    .sweep = sweep ? &sweeper : NULL,
	};
	if (env)
		l.envp = env;
	govex__audit(&rt->audit, run_id, "launch",
		     json_pack("{s:s, s:s, s:s}", "backend", b->name, "backend_version", b->version,
			       "plan_digest", plan->digest));
	struct govex_error rerr = {0};
	if (b->run(state, &l, o, &rerr) < 0 && !o->failed_message[0])
		snprintf(o->failed_message, sizeof(o->failed_message), "%s", rerr.message);
	if (sweep && !sweeper.begun) /* no shim was made (a launch failure) */
		govex__sweep_start(&sweeper);
	govex__strv_free(envp);
	if (d->outputs)
		files_collect(d, workdir, host_workdir, out_fd, o);
	if (host_workdir) {
		r = govex__rm_rf(workdir);
		if (r < 0)
			o->workdir_cleanup_errno = -r;
	}
	govex__strv_free(env);
	return 0;
fail:
	govex__strv_free(envp);
	free(TAKE_PTR(workdir)); /* explicit: the analyzers do not follow the cleanup */
	if (extra_fd >= 0)
		close(extra_fd);
	if (frame_fd >= 0)
		close(frame_fd);
	return *ret_result ? 0 : govex__err(err, ENOMEM, ENOMEM, "launch: out of memory");
}

/* The result of a finished run, o's output taken, its frame left in o. */
govex_result *govex__run_result_keep(govex_runtime *rt, const struct decision *d,
				     const govex_plan *plan, struct govex__outcome *o)
{
	const struct govex__backend_ops *b = govex__backends[d->backend];
	govex_result *res = govex__result_new(govex__status_of(o), o->term);
	if (res) {
		govex__result_take_outcome(res, o);
		govex__result_set_digests(res, rt->policy->digest, plan->digest);
		govex__result_set_backend(
		    res, b->name, b->version,
		    govex__run_controls(&rt->reports[d->backend], rt->policy, d) &
			~o->controls_lost);
		govex__outcome_diagnostics(res, o, &d->limits);
	}
	return res;
}

govex_result *govex__run_result(govex_runtime *rt, const struct decision *d, const govex_plan *plan,
				struct govex__outcome *o)
{
	govex_result *res = govex__run_result_keep(rt, d, plan, o);
	govex__outcome_release(o);
	return res;
}

/* Diagnostics for how a run ended (shared by runs and calls). */
void govex__outcome_diagnostics(govex_result *res, const struct govex__outcome *o,
				const struct govex__limits *l)
{
	if (o->term == GOVEX_TERM_LAUNCH_FAILED)
		govex__result_diag(
		    res, "launch_failed",
		    json_pack("{s:s, s:i}", "step", o->failed_step, "errno", o->failed_errno),
		    "launch step '%s' failed: %s", o->failed_step,
		    o->failed_message[0] ? o->failed_message : strerror(o->failed_errno));
	else if (o->term == GOVEX_TERM_TIMEOUT)
		govex__result_diag(res, "timeout", NULL, "wall time limit of %llu ms reached",
				   (unsigned long long)l->wall_ms);
	else if (o->term == GOVEX_TERM_CANCELLED)
		govex__result_diag(res, "cancelled", NULL, "the run was cancelled");
	else if (o->term == GOVEX_TERM_CPU_LIMIT)
		govex__result_diag(res, "cpu_limit", NULL, "CPU time limit of %llu ms reached",
				   (unsigned long long)l->cpu_ms);
	else if (o->term == GOVEX_TERM_MEMORY_LIMIT)
		govex__result_diag(res, "memory_limit", NULL, "memory limit of %llu bytes reached",
				   (unsigned long long)l->memory_bytes);
	else if (o->term == GOVEX_TERM_OUTPUT_LIMIT)
		govex__result_diag(res, "output_limit", NULL,
				   "the run was ended: it wrote 16 MiB more than an output bound "
				   "(stdout %llu, stderr %llu bytes)",
				   (unsigned long long)l->stdout_bytes,
				   (unsigned long long)l->stderr_bytes);
	if (o->controls_lost) {
		json_t *extra =
		    json_pack("{s:o}", "controls", govex__ctlset_json(o->controls_lost));
		govex__result_diag(res, "controls_lost", extra,
				   "the run's cgroup limits did not hold to its end: a controller "
				   "was taken away from govex's cgroup (its cgroup.subtree_control "
				   "was written by another process) while the run was in it; the "
				   "result does not claim those controls");
	}
	if (o->workdir_cleanup_errno)
		govex__result_diag(res, "workdir_cleanup_failed",
				   json_pack("{s:i}", "errno", o->workdir_cleanup_errno),
				   "the run's workdir could not be removed entirely: %s",
				   strerror(o->workdir_cleanup_errno));
	if (o->cgroup_cleanup_errno)
		govex__result_diag(res, "cgroup_cleanup_failed",
				   json_pack("{s:i}", "errno", o->cgroup_cleanup_errno),
				   "the run's cgroup could not be removed: %s",
				   strerror(o->cgroup_cleanup_errno));
}
