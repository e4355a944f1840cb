/* SPDX-License-Identifier: MIT */
/*
 * Request validation and normalisation against the policy, planning's first steps: the
 * code and stdin, requested limits capped by the policy's, declared needs, the workdir,
 * metadata, the environment a run gets; and the request document's digest.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "approval.h"
#include "request.h"
#include "runtime.h"

extern char **environ;

/* A single argv string is limited by the kernel (MAX_ARG_STRLEN, 32 pages). */
#define CODE_ARG_MAX  (128 * 1024 - 1)
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
		if (n_req >= ENV_ITEMS_MAX || !eq ||
		    !govex__identifier(kv, (size_t)(eq - kv), 255)) {
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

/* ---- the request's own checks (planning's first steps) --------------------------------- */

/* A refusal of the request: *ret_refusal set and 1 returned, or -ENOMEM. */
#define REFUSE(status, code, extra, ...)                                                           \
	do {                                                                                       \
		*ret_refusal = govex__refusal(rt, status);                                         \
		if (!*ret_refusal)                                                                 \
			return -ENOMEM;                                                            \
		govex__result_diag(*ret_refusal, code, extra, __VA_ARGS__);                        \
		return 1;                                                                          \
	} while (0)

int govex__request_check_code(govex_runtime *rt, const struct govex_request *req,
			      govex_result **ret_refusal)
{
	const govex_policy *p = rt->policy;
	if (req->language && strcmp(req->language, "python") != 0)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "unsupported_language", NULL,
		       "language '%.40s': only python is supported", req->language);
	if (!req->code)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "missing_code", NULL, "code: missing");
	if (req->code_len > p->limits.code_bytes)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "code_too_large", NULL,
		       "code: %zu bytes exceeds limits.code_bytes (%llu)", req->code_len,
		       (unsigned long long)p->limits.code_bytes);
	if (req->code_len > CODE_ARG_MAX)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "code_too_large", NULL,
		       "code: %zu bytes exceeds %d, the largest single argument the kernel "
		       "passes",
		       req->code_len, CODE_ARG_MAX);
	if (memchr(req->code, '\0', req->code_len))
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_code", NULL,
		       "code: contains a NUL byte");
	if (!govex__utf8_valid(req->code, req->code_len))
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_code", NULL, "code: not valid UTF-8");
	if (req->source_path && !govex__path_normalized(req->source_path))
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_source_path", NULL,
		       "source_path: must be an absolute normalized path");
	return 0;
}

int govex__request_check_stdin(govex_runtime *rt, const struct govex_request *req,
			       govex_result **ret_refusal)
{
	const govex_policy *p = rt->policy;
	if (req->stdin_len > p->limits.stdin_bytes)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "stdin_too_large", NULL,
		       "stdin: %zu bytes exceeds limits.stdin_bytes (%llu)", req->stdin_len,
		       (unsigned long long)p->limits.stdin_bytes);
	if (req->stdin_len && !req->stdin_data)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_stdin", NULL, "stdin: missing data");
	return 0;
}

/* The limits a request may set (REQ in GOVEX__LIMITS): the members of struct govex_limits,
 * capped by the policy's */
#define CAP(n, nul, mn, mx, df, omit, req) CAP_##req(n)
#define CAP_REQ(n)			   {#n, req->limits.n, p->limits.n, &l->n},
#define CAP_NOREQ(n)
#define COPY(n, nul, mn, mx, df, omit, req) COPY_##req(n)
#define COPY_REQ(n)			    reqlim.n = req->limits.n;
#define COPY_NOREQ(n)

#define COUNT(n, nul, mn, mx, df, omit, req) +COUNT_##req
#define COUNT_REQ			     1
#define COUNT_NOREQ			     0
_Static_assert(sizeof(struct govex_limits) == (0 GOVEX__LIMITS(COUNT)) * sizeof(uint64_t),
	       "struct govex_limits has a member GOVEX__LIMITS does not mark REQ");
#undef COUNT

int govex__request_limits(govex_runtime *rt, const struct govex_request *req,
			  struct govex__limits *l, govex_result **ret_refusal)
{
	const govex_policy *p = rt->policy;
	const struct {
		const char *name;
		uint64_t want, max;
		uint64_t *out;
	} caps[] = {GOVEX__LIMITS(CAP)};
	for (size_t i = 0; i < ARRAY_SIZE(caps); i++)
		if (govex__cap_limit(rt, caps[i].name, caps[i].want, caps[i].max, caps[i].out,
				     ret_refusal) != 0)
			return *ret_refusal ? 1 : -ENOMEM;
	return 0;
}

int govex__request_needs(govex_runtime *rt, const struct govex_request *req,
			 govex_result **ret_refusal)
{
	const govex_policy *p = rt->policy;
	if ((req->needs & GOVEX_NEED_NETWORK) && !p->network && !p->net_allow)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "network"),
		       "need 'network': the policy denies network");
	if ((req->needs & GOVEX_NEED_SUBPROCESS) && !p->subprocess)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "subprocess"),
		       "need 'subprocess': the policy denies subprocesses");
	if ((req->needs & GOVEX_NEED_FILESYSTEM_WRITE) && !p->write_roots[0])
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "filesystem_write"),
		       "need 'filesystem_write': the policy has no filesystem.write root");
	if (req->shell && !p->shell)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "shell_not_allowed", NULL,
		       "shell: the policy denies shell");
	return 0;
}

int govex__request_workdir(govex_runtime *rt, const struct govex_request *req, char **ret_workdir,
			   govex_result **ret_refusal)
{
	const govex_policy *p = rt->policy;
	const char *wd = req->workdir ? req->workdir : p->workdir;
	if (!wd)
		return 0;
	bool under = false;
	if (!govex__path_normalized(wd))
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_workdir", NULL,
		       "workdir '%.100s': must be an absolute normalized path", wd);
	for (size_t i = 0; p->write_roots[i]; i++)
		if (govex__path_under(wd, p->write_roots[i]))
			under = true;
	if (!under)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "workdir_not_writable", NULL,
		       "workdir '%.100s': not under a filesystem.write root", wd);
	/* a named workdir is used as it is, never made: one that is not there fails now,
	 * not at launch */
	struct stat wst;
	int se = stat(wd, &wst) < 0 ? errno : S_ISDIR(wst.st_mode) ? 0 : ENOTDIR;
	if (se)
		REFUSE(GOVEX_STATUS_INVALID_INPUT, "workdir_missing",
		       json_pack("{s:s}", "path", wd), "workdir '%.100s': %s", wd, strerror(se));
	if (!(*ret_workdir = strdup(wd)))
		return -ENOMEM;
	return 0;
}

int govex__request_metadata(govex_runtime *rt, const struct govex_request *req, json_t **ret_meta,
			    govex_result **ret_refusal)
{
	json_t *meta = json_object();
	for (size_t i = 0; req->metadata && req->metadata[i]; i++) {
		const char *kv = req->metadata[i];
		const char *eq = strchr(kv, '=');
		if (i >= METADATA_MAX || !eq || eq == kv || strlen(kv) > METADATA_ITEM_MAX ||
		    !govex__utf8_valid(kv, strlen(kv))) {
			json_decref(meta);
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_metadata", NULL,
			       "metadata[%zu]: must be key=value, UTF-8, at most %d bytes, at most "
			       "%d items",
			       i, METADATA_ITEM_MAX, METADATA_MAX);
		}
		char key[METADATA_ITEM_MAX + 1];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		json_object_set_new(meta, key, json_string(eq + 1));
	}
	*ret_meta = meta;
	return 0;
}

#undef REFUSE

unsigned govex__request_needs_perms(const struct govex_request *req)
{
	return ((req->needs & GOVEX_NEED_NETWORK) ? GOVEX_PERM_NETWORK : 0) |
	       ((req->needs & GOVEX_NEED_FILESYSTEM_WRITE) ? GOVEX_PERM_FILESYSTEM_WRITE : 0) |
	       ((req->needs & GOVEX_NEED_SUBPROCESS) ? GOVEX_PERM_SUBPROCESS : 0);
}

int govex__request_digest(const struct govex_request *req, const char *code_digest,
			  const char *stdin_digest, unsigned needs_perm, json_t *meta, char ret[72])
{
	struct govex__limits reqlim = {0};
	GOVEX__LIMITS(COPY)
	json_t *rl = json_object();
	{
		/* requested limits: only those the request named */
		_cleanup_json_ json_t *all = govex__limits_json(&reqlim);
		const char *k;
		json_t *v;
		json_object_foreach(all, k, v) if (json_is_integer(v) && json_integer_value(v) > 0)
		    json_object_set(rl, k, v);
	}
	json_t *reqdoc =
	    json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:s?, s:o, s:o, s:o, s:b, s:o}", "version",
		      GOVEX_REQUEST_VERSION, "language", "python", "code_digest", code_digest,
		      "code_bytes", (json_int_t)req->code_len, "stdin_digest", stdin_digest,
		      "stdin_bytes", (json_int_t)req->stdin_len, "workdir", req->workdir, "limits",
		      rl, "environment", govex__env_names_json((char **)req->env), "needs",
		      govex__perms_json(needs_perm), "shell", req->shell != 0, "metadata", meta);
	char *rq = NULL;
	size_t rqlen;
	if (!reqdoc || govex__canon(reqdoc, &rq, &rqlen) < 0) {
		json_decref(reqdoc);
		return -ENOMEM;
	}
	govex__sha256_digest(rq, rqlen, ret);
	free(rq);
	json_decref(reqdoc);
	return 0;
}
