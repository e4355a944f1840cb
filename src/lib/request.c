/* SPDX-License-Identifier: MIT */
/*
 * Request validation and normalisation against the policy: the environment a run gets,
 * requested limits capped by the policy's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "runtime.h"
#include "request.h"

extern char **environ;

#define ENV_ITEMS_MAX 1024

/* Sets *ret_env to the final environment: inherited names, then the request's values,
 * then the policy's fixed values (which win). */
int govex__build_env(const govex_policy *p, const struct govex_request *req, char ***ret_env,
		     govex_result **ret_refusal, govex_runtime *rt)
{
	char **env = calloc(1, sizeof(char *));
	if (!env)
		return -ENOMEM;
	size_t n_req = 0;
	for (size_t i = 0; req->env && req->env[i]; i++, n_req++) {
		const char *kv = req->env[i];
		const char *eq = strchr(kv, '=');
		if (n_req >= ENV_ITEMS_MAX || !eq || !govex__identifier(kv, (size_t)(eq - kv), 255)) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
			govex__result_diag(r, "invalid_environment", NULL,
					   "env[%zu]: must be NAME=VALUE with a valid name", i);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		/* checked like every other string of a request; the value is never echoed */
		if (!govex__utf8_valid(eq + 1, strlen(eq + 1))) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
			govex__result_diag(r, "invalid_environment",
					   json_pack("{s:s}", "name", name),
					   "environment '%s': its value is not valid UTF-8", name);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
		if (!govex__strv_contains(p->env_allow, name)) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
			govex__result_diag(r, "environment_not_allowed",
					   json_pack("{s:s}", "name", name),
					   "environment '%s': not in environment.allow", name);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
	}
	if (p->env_inherit) {
		for (char **e = environ; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			if (!eq)
				continue;
			char name[256];
			if ((size_t)(eq - *e) >= sizeof(name))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			/* inherit with an empty allow list means full inheritance */
			if (p->env_allow[0] && !govex__strv_contains(p->env_allow, name))
				continue;
			if (govex__strv_push(&env, *e) < 0)
				goto oom;
		}
	}
	char **layers[] = {(char **)req->env, p->env_set};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; layers[l] && layers[l][i]; i++) {
			const char *kv = layers[l][i];
			size_t nl = (size_t)(strchr(kv, '=') - kv);
			/* replace an earlier value of the same name */
			size_t w = 0;
			for (size_t k = 0; env[k]; k++) {
				if (strncmp(env[k], kv, nl + 1) == 0)
					free(env[k]);
				else
					env[w++] = env[k];
			}
			env[w] = NULL;
			if (govex__strv_push(&env, kv) < 0)
				goto oom;
		}
	govex__strv_sort_uniq(env);
	*ret_env = env;
	return 0;
oom:
	govex__strv_free(env);
	return -ENOMEM;
}

json_t *govex__env_names_json(char *const *env)
{
	json_t *a = json_array();
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		json_array_append_new(a, json_stringn(env[i], (size_t)(eq - env[i])));
	}
	return a;
}

/* Requested limit against the policy's: 0 = the policy's value; above is refused. */
int govex__cap_limit(govex_runtime *rt, const char *name, uint64_t want, uint64_t max,
		     uint64_t *ret, govex_result **ret_refusal)
{
	if (want == 0) {
		*ret = max;
		return 0;
	}
	if (max != 0 && want > max) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		govex__result_diag(r, "limit_exceeds_policy", json_pack("{s:s}", "limit", name),
				   "limits.%s: requested %llu exceeds the policy's %llu", name,
				   (unsigned long long)want, (unsigned long long)max);
		*ret_refusal = r;
		return 1;
	}
	*ret = want;
	return 0;
}
