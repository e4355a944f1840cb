/* SPDX-License-Identifier: MIT */
/*
 * The runtime object: a parsed copy of the policy, its options, the backends' reports
 * (probed when it is made), the probed interpreter and per-backend states; run ids and
 * refusal results.  What it does with a request lives in request.c (validation), plan.c
 * (planning), approval.c, run.c (launch and result) and audit.c (events).
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/random.h>

#include "job.h"
#include "protect.h"
#include "registry.h"
#include "request.h"
#include "runtime.h"
#include "values.h"

/* ---- runtime lifecycle ---------------------------------------------------------------- */

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

GOVEX_API int govex_runtime_new(const govex_policy *policy,
				const struct govex_runtime_options *opts,
				govex_runtime **ret_runtime, struct govex_error *ret_err)
{
	if (!policy || !ret_runtime)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "runtime: missing argument");
	govex_runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	int r = govex_policy_parse(policy->canon, policy->canon_len, &rt->policy, ret_err);
	if (r < 0) {
		free(rt);
		return r;
	}
	if (opts)
		rt->opts = *opts;
	/* 0 (a zeroed options struct) and any negative value: no audit fd */
	if (rt->opts.audit_fd <= 0)
		rt->opts.audit_fd = -1;
	rt->probe_cache_dir = dup_opt(rt->opts.probe_cache_dir);
	rt->backend = dup_opt(rt->opts.backend);
	rt->cgroup = dup_opt(rt->opts.cgroup);
	rt->opts.probe_cache_dir = rt->probe_cache_dir;
	rt->opts.backend = rt->backend;
	rt->opts.cgroup = rt->cgroup;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->audit_lock, NULL);
	rt->audit = (struct govex__audit){rt->opts.audit, rt->opts.audit_userdata,
					  rt->opts.audit_fd, &rt->audit_lock};
	const char *want = rt->backend ? rt->backend : rt->policy->backend;
	bool found = !want;
	govex__probe_backends(rt);
	for (size_t i = 0; i < govex__n_backends; i++)
		if (want && strcmp(want, govex__backends[i]->name) == 0)
			found = true;
	if (!found) {
		/* want points into rt: format before freeing */
		r = govex__err(ret_err, GOVEX_EBACKEND, 0,
			       "backend '%.60s': not built into this govex", want);
		govex_runtime_free(rt);
		return r;
	}
	*ret_runtime = rt;
	return 0;
}

GOVEX_API govex_runtime *govex_runtime_free(govex_runtime *rt)
{
	if (!rt)
		return NULL;
	govex__reap_pending(true); /* no shim of ours outlives the runtime unreaped */
	for (size_t i = 0; i < govex__n_backends; i++)
		if (rt->prepared[i] && govex__backends[i]->release)
			govex__backends[i]->release(rt->states[i]);
	for (size_t i = 0; i < ARRAY_SIZE(rt->inspections); i++) {
		free(rt->inspections[i].key);
		free(rt->inspections[i].canon);
	}
	govex__interp_free(&rt->interp);
	govex__packages_free(&rt->pkgs);
	govex_policy_free(rt->policy);
	free(rt->probe_cache_dir);
	free(rt->cgroup);
	free(rt->backend);
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->audit_lock);
	free(rt);
	return NULL;
}

/* The restricted backend's index, or govex__n_backends. */
static size_t restricted_index(void)
{
	size_t i = 0;
	while (i < govex__n_backends && strcmp(govex__backends[i]->name, "restricted") != 0)
		i++;
	return i;
}

/* Templates for runs shaped like an ordinary run of this runtime: the policy's
 * interpreter and flags, the environment a request without env gets, the backend's own
 * workdir.  (A run whose locale differs from it goes cold: stats' cold_reasons.) */
static int warm_start(govex_runtime *rt, size_t i, void *state, struct govex_error *err)
{
	const struct govex__backend_ops *b = govex__backends[i];
	struct govex_request req0;
	memset(&req0, 0, sizeof(req0));
	char **env = NULL, **penv = NULL;
	govex_result *refusal = NULL;
	int r = govex__build_env(rt->policy, &req0, &env, &refusal, rt);
	if (r >= 0 && refusal)
		r = govex__err(err, EINVAL, EINVAL, "warm runs: the policy's environment: refused");
	const char *wd = b->private_workdir ? b->private_workdir(state) : NULL;
	if (r >= 0 && !wd)
		r = govex__err(
		    err, EOPNOTSUPP, EOPNOTSUPP,
		    "warm runs: the policy binds the host's / (runs need a host workdir)");
	if (r >= 0 && (r = govex__env_platform(env, wd, &penv)) < 0)
		govex__err(err, -r, -r, "warm runs: %s", strerror(-r));
	if (r >= 0) {
		char *argv[8];
		govex__interp_argv(rt, "pass", argv);
		struct govex__limits lim;
		memset(&lim, 0, sizeof(lim));
		const struct govex__launch proto = {
		    .policy = rt->policy,
		    .interp = &rt->interp,
		    .opts = &rt->opts,
		    .limits = &lim,
		    .argv = argv,
		    .envp = penv,
		    .workdir = wd,
		    .workdir_fresh = true,
		    .cancel_fd = -1,
		    .extra_fd = -1,
		    .frame_fd = -1,
		    .out_fd = -1,
		};
		r = b->warm(state, &proto, err);
	}
	govex_result_free(refusal);
	govex__strv_free(env);
	govex__strv_free(penv);
	return r;
}

/* start: the templates now (govex_runtime_warm), or at their first runs (the CLI's
 * one-shot runs: govex__runtime_warm_lazy) */
static int runtime_warm(govex_runtime *rt, bool start, struct govex_error *err)
{
	if (!rt)
		return govex__err(err, EINVAL, EINVAL, "govex_runtime_warm: no runtime");
	size_t i = restricted_index();
	const char *want = rt->backend ? rt->backend : rt->policy->backend;
	if (i == govex__n_backends || !govex__backends[i]->warm)
		return govex__err(err, EOPNOTSUPP, EOPNOTSUPP,
				  "warm runs are not available in this build");
	if (want && strcmp(want, "restricted") != 0)
		return govex__err(err, EOPNOTSUPP, EOPNOTSUPP,
				  "warm runs need the restricted backend (this runtime's: '%.40s')",
				  want);
	if (!rt->reports[i].available)
		return govex__err(err, EOPNOTSUPP, EOPNOTSUPP, "warm runs: no sandbox here: %s",
				  rt->reports[i].unavailable_reason);
	int r = govex__probe_interp(rt, err);
	if (r < 0)
		return r;
	/* a filesystem.deny planning refuses (deny.c): no template; say why */
	if (rt->deny_fault.code)
		return govex__err(err, GOVEX_EPOLICY, 0,
				  "warm runs: %s: %.900s: the policy's runs are refused",
				  rt->deny_fault.code, rt->deny_fault.message);
	/* a policy planning refuses (protected_path: a write root over the cache, govex
	 * or the interpreter's files, known once probed; as planning.c checks it) gets no
	 * template either */
	bool sandboxed_writes = govex__policy_required(rt->policy) & CTL(FS_WRITE_ALLOWLIST);
	for (size_t k = 0;
	     sandboxed_writes && rt->policy->write_roots && rt->policy->write_roots[k]; k++) {
		char *what = NULL;
		const char *prot = govex__protected_overlap(rt, rt->policy->write_roots[k], &what);
		free(what);
		if (prot)
			return govex__err(err, EPERM, EPERM,
					  "warm runs: filesystem.write root '%.200s' overlaps %s "
					  "files: the policy's runs are refused",
					  rt->policy->write_roots[k], prot);
	}
	void *state = NULL;
	if (r >= 0)
		r = govex__backend_state(rt, i, &state, err);
	if (r >= 0)
		r = start ? warm_start(rt, i, state, err)
			  : govex__backends[i]->warm(state, NULL, err);
	return r < 0 ? r : 0;
}

GOVEX_API int govex_runtime_warm(govex_runtime *rt, struct govex_error *err)
{
	return runtime_warm(rt, true, err);
}

int govex__runtime_warm_lazy(govex_runtime *rt, struct govex_error *err)
{
	return runtime_warm(rt, false, err);
}

GOVEX_API int govex_runtime_stats_json(govex_runtime *rt, char **ret_json)
{
	if (!rt || !ret_json)
		return -EINVAL;
	*ret_json = NULL;
	unsigned long started = __atomic_load_n(&rt->runs_started, __ATOMIC_RELAXED);
	json_t *warm = json_pack("{s:b, s:b, s:i, s:i, s:{}}", "enabled", 0, "ready", 0,
				 "templates", 0, "warm_runs", 0, "cold_reasons");
	json_t *o = json_pack("{s:I, s:I, s:o}", "runs_in_flight",
			      (json_int_t)__atomic_load_n(&rt->runs_in_flight, __ATOMIC_RELAXED),
			      "runs_started", (json_int_t)started, "warm", warm);
	if (!o)
		return -ENOMEM;
	size_t i = restricted_index();
	void *state = NULL;
	pthread_mutex_lock(&rt->lock);
	if (i < govex__n_backends && rt->prepared[i])
		state = rt->states[i];
	pthread_mutex_unlock(&rt->lock);
	if (state && govex__backends[i]->warm_stats)
		govex__backends[i]->warm_stats(state, warm);
	/* whether this runtime's policy can run on this host at all: a backend enforces
	 * every control it requires (a server is not ready while it would refuse every
	 * call; the missing controls of the backend closest to it otherwise) */
	govex__ctlset need = govex__policy_required(rt->policy), fewest = ~(govex__ctlset)0;
	const char *want = rt->backend ? rt->backend : rt->policy->backend;
	for (size_t k = 0; k < govex__n_backends; k++) {
		const struct govex__report *rep = &rt->reports[k];
		if (want && strcmp(want, govex__backends[k]->name) != 0)
			continue;
		govex__ctlset miss = need & ~(rep->available ? rep->enforced : 0);
		if (__builtin_popcountll(miss) < __builtin_popcountll(fewest))
			fewest = miss;
	}
	json_object_set_new(o, "runnable", json_boolean(fewest == 0));
	json_object_set_new(o, "missing_controls", govex__ctlset_json(fewest));
	json_int_t nwarm = json_integer_value(json_object_get(warm, "warm_runs"));
	json_object_set_new(
	    warm, "cold_runs",
	    json_integer((json_int_t)started > nwarm ? (json_int_t)started - nwarm : 0));
	*ret_json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return *ret_json ? 0 : -ENOMEM;
}

GOVEX_API const govex_policy *govex_runtime_policy(const govex_runtime *rt)
{
	return rt ? rt->policy : NULL;
}

/* ---- run ids and refusals ----------------------------------------------------------------- */

void govex__run_id_new(char out[33])
{
	unsigned char b[16];
	static const char hex[] = "0123456789abcdef";
	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		uint64_t t = govex__now_ns() ^ (uint64_t)getpid() << 32;
		memcpy(b, &t, 8);
		memcpy(b + 8, &t, 8);
	}
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[32] = '\0';
}
