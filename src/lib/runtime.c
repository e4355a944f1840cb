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

#include "registry.h"
#include "runtime.h"

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
	rt->opts.probe_cache_dir = rt->probe_cache_dir;
	rt->opts.backend = rt->backend;
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
	for (size_t i = 0; i < govex__n_backends; i++)
		if (rt->prepared[i] && govex__backends[i]->release)
			govex__backends[i]->release(rt->states[i]);
	for (size_t i = 0; i < ARRAY_SIZE(rt->inspections); i++) {
		free(rt->inspections[i].key);
		free(rt->inspections[i].canon);
	}
	govex__interp_free(&rt->interp);
	govex_policy_free(rt->policy);
	free(rt->probe_cache_dir);
	free(rt->backend);
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->audit_lock);
	free(rt);
	return NULL;
}

GOVEX_API int govex_runtime_warm(govex_runtime *rt, struct govex_error *err)
{
	if (!rt)
		return govex__err(err, EINVAL, EINVAL, "govex_runtime_warm: no runtime");
	return govex__err(err, EOPNOTSUPP, EOPNOTSUPP, "warm runs are not available in this build");
}

GOVEX_API int govex_runtime_stats_json(govex_runtime *rt, char **ret_json)
{
	char *s = NULL;
	if (!rt || !ret_json)
		return -EINVAL;
	*ret_json = NULL;
	if (asprintf(&s,
		     "{\"runs_in_flight\":%lu,\"runs_started\":%lu,\"warm\":{\"enabled\":false,"
		     "\"ready\":false,\"templates\":0,\"warm_runs\":0,\"cold_runs\":%lu}}",
		     __atomic_load_n(&rt->runs_in_flight, __ATOMIC_RELAXED),
		     __atomic_load_n(&rt->runs_started, __ATOMIC_RELAXED),
		     __atomic_load_n(&rt->runs_started, __ATOMIC_RELAXED)) < 0)
		return -ENOMEM;
	*ret_json = s;
	return 0;
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

govex_result *govex__refusal(govex_runtime *rt, enum govex_status status)
{
	govex_result *r = govex__result_new(status, GOVEX_TERM_REFUSED);
	if (r)
		govex__result_set_digests(r, rt->policy->digest, NULL);
	return r;
}
