/* SPDX-License-Identifier: MIT */
/*
 * govex.policy/v1: the policy object, its canonical bytes and digest, parsing (the
 * fields themselves: policyparse.c), presets, the controls a policy requires.
 *
 * The parsed document is decoded into struct govex_policy and the canonical form is then
 * re-encoded from the struct, so the canonical bytes can only say what the struct holds.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "files.h"
#include "internal.h"
#include "policy.h"

#define POLICY_FILE_MAX (1u << 20)

#define LIMIT_DESC(n, nul, mn, mx, df, omit, req)                                                  \
	{#n, offsetof(struct govex__limits, n), nul, mn, mx, df, omit},
const struct govex__limit_desc govex__limit_table[] = {GOVEX__LIMITS(LIMIT_DESC)};
#undef LIMIT_DESC

uint64_t *govex__limit_ptr(struct govex__limits *l, const struct govex__limit_desc *d)
{
	return (uint64_t *)((char *)l + d->off);
}

const char *const govex__perm_names[GOVEX__N_PERMS] = {"network", "filesystem_write", "shell",
						       "subprocess"};
const size_t govex__limit_count = ARRAY_SIZE(govex__limit_table);

GOVEX_API govex_policy *govex_policy_free(govex_policy *p)
{
	if (!p)
		return NULL;
	free(p->canon);
	free(p->interpreter);
	free(p->workdir);
	govex__strv_free(p->read_roots);
	govex__strv_free(p->write_roots);
	govex__strv_free(p->env_allow);
	govex__strv_free(p->env_set);
	govex__strv_free(p->require_known);
	govex__strv_free(p->preload);
	free(p->backend);
	free(p);
	return NULL;
}

/* ---- canonical form ------------------------------------------------------------------- */

json_t *govex__limits_json(const struct govex__limits *l)
{
	json_t *o = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(govex__limit_table); i++) {
		const struct govex__limit_desc *d = &govex__limit_table[i];
		uint64_t v = *govex__limit_ptr((struct govex__limits *)l, d);
		if (d->omit_default && v == d->def)
			continue;
		json_object_set_new(o, d->name,
				    (d->nullable && v == 0) ? json_null()
							    : json_integer((json_int_t)v));
	}
	return o;
}

static json_t *policy_json(const govex_policy *p)
{
	json_t *env_set = json_object();
	for (size_t i = 0; p->env_set && p->env_set[i]; i++) {
		const char *eq = strchr(p->env_set[i], '=');
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - p->env_set[i]), p->env_set[i]);
		json_object_set_new(env_set, name, json_string(eq + 1));
	}
	json_t *approval = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(govex__perm_names); i++)
		if (p->approval & (1u << i))
			json_array_append_new(approval, json_string(govex__perm_names[i]));
	/* govex__perm_names are not in sorted order; sort for the canonical array */
	char **ap = NULL;
	size_t idx;
	json_t *e;
	json_array_foreach(approval, idx, e) govex__strv_push(&ap, json_string_value(e));
	govex__strv_sort_uniq(ap);
	json_decref(approval);
	approval = govex__strv_json(ap);
	govex__strv_free(ap);

	json_t *doc = json_pack(
	    "{s:s, s:[s], s:{s:s, s:b}, s:s, s:o, s:{s:o, s:o, s:b}, s:s, s:s, s:s,"
	    " s:{s:b, s:o, s:o}, s:o, s:{s:o}, s:s?}",
	    "version", GOVEX_POLICY_VERSION, "languages", "python", "python", "interpreter",
	    p->interpreter ? p->interpreter : "auto", "site", p->site, "workdir",
	    p->workdir ? p->workdir : "fresh", "limits", govex__limits_json(&p->limits),
	    "filesystem", "read", govex__strv_json(p->read_roots), "write",
	    govex__strv_json(p->write_roots), "platform_defaults", p->platform_defaults, "network",
	    p->network ? "allow" : "deny", "subprocess", p->subprocess ? "allow" : "deny", "shell",
	    p->shell ? "allow" : "deny", "environment", "inherit", p->env_inherit, "allow",
	    govex__strv_json(p->env_allow), "set", env_set, "approval", approval, "effects",
	    "require_known", govex__strv_json(p->require_known), "backend", p->backend);
	/* left out at its default: the digests of policies without it do not change */
	if (doc && p->preload &&
	    json_object_set_new(json_object_get(doc, "python"), "preload",
				govex__strv_json(p->preload)) < 0) {
		json_decref(doc);
		return NULL;
	}
	if (doc && p->sanitized &&
	    json_object_set_new(doc, "results", json_pack("{s:s}", "disclosure", "sanitized")) <
		0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int govex__policy_finish(govex_policy *p, struct govex_error *err)
{
	_cleanup_json_ json_t *j = policy_json(p);
	if (!j)
		return govex__err(err, ENOMEM, ENOMEM, "policy: out of memory");
	int r = govex__canon(j, &p->canon, &p->canon_len);
	if (r < 0)
		return govex__err(err, -r, 0, "policy: cannot encode");
	/* the canonical form must itself be a loadable policy (runtimes re-parse it) */
	if (p->canon_len > POLICY_FILE_MAX)
		return govex__err(err, GOVEX_EPOLICY, 0,
				  "document: the canonical form (%zu bytes, defaults filled in) "
				  "exceeds %u bytes",
				  p->canon_len, POLICY_FILE_MAX);
	govex__sha256_digest(p->canon, p->canon_len, p->digest);
	return 0;
}

void govex__policy_set_defaults(govex_policy *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(govex__limit_table); i++)
		*govex__limit_ptr(&p->limits, &govex__limit_table[i]) = govex__limit_table[i].def;
	p->platform_defaults = true;
}

/* The JSON path of the first string (value or member name) holding mark, into path. */
static bool find_mark(const json_t *j, const char *mark, char *path, size_t cap)
{
	size_t n = strlen(path);
	const char *k;
	json_t *v;
	size_t i;
	switch (json_typeof(j)) {
	case JSON_STRING:
		return strstr(json_string_value(j), mark) != NULL;
	case JSON_OBJECT:
		json_object_foreach((json_t *)j, k, v)
		{
			snprintf(path + n, cap - n, "%s%s", n ? "." : "", k);
			if (strstr(k, mark) || find_mark(v, mark, path, cap))
				return true;
			path[n] = '\0';
		}
		return false;
	case JSON_ARRAY:
		json_array_foreach(j, i, v)
		{
			snprintf(path + n, cap - n, "[%zu]", i);
			if (find_mark(v, mark, path, cap))
				return true;
			path[n] = '\0';
		}
		return false;
	default:
		return false;
	}
}

/*
 * Invalid UTF-8 refused naming the field: the invalid bytes are replaced by a
 * noncharacter (U+10FFFF) that cannot otherwise stand in a policy's names and paths, the
 * copy is parsed, and the first string holding it is the field.
 */
static int utf8_error(const char *json, size_t len, struct govex_error *err)
{
	static const char mark[] = "\xf4\x8f\xbf\xbf";
	char path[200] = "";
	char *copy = malloc(len * 4 + 1);
	size_t o = 0;
	if (copy) {
		for (size_t i = 0; i < len;) {
			size_t k = 1;
			while (k <= 4 && i + k <= len && !govex__utf8_valid(json + i, k))
				k++;
			if (k <= 4 && i + k <= len) {
				memcpy(copy + o, json + i, k);
				o += k;
				i += k;
			} else {
				memcpy(copy + o, mark, 4);
				o += 4;
				i++;
			}
		}
		json_t *doc = json_loadb(copy, o, JSON_ALLOW_NUL, NULL);
		if (!doc || !find_mark(doc, mark, path, sizeof(path)))
			path[0] = '\0';
		json_decref(doc);
		free(copy);
	}
	/* the path may itself hold the mark (in a member name): show it as U+FFFD */
	for (char *p = strstr(path, mark); p; p = strstr(p, mark)) {
		memcpy(p, "\xef\xbf\xbd", 3);
		memmove(p + 3, p + 4, strlen(p + 4) + 1);
	}
	return govex__err(err, GOVEX_EPOLICY, 0, "%s: invalid UTF-8", path[0] ? path : "document");
}

GOVEX_API int govex_policy_parse(const char *json, size_t len, govex_policy **ret_policy,
				 struct govex_error *ret_err)
{
	if (!json || !ret_policy)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "policy: missing argument");
	if (len > POLICY_FILE_MAX)
		return govex__err(ret_err, GOVEX_ETOOBIG, 0, "policy: larger than %u bytes",
				  POLICY_FILE_MAX);
	_cleanup_json_ json_t *doc = NULL;
	if (!govex__utf8_valid(json, len))
		return utf8_error(json, len, ret_err);
	/* NUL is let through the parser so that get_string() refuses it naming the field */
	int r = govex__json_parse(json, len, JSON_ALLOW_NUL, &doc, ret_err);
	if (r < 0) {
		/* keep the parser's message, but report it as a policy error */
		if (ret_err)
			ret_err->code = GOVEX_EPOLICY;
		return -GOVEX_EPOLICY;
	}
	return govex__policy_from_json(doc, ret_policy, ret_err);
}

GOVEX_API int govex_policy_load(const char *path, govex_policy **ret_policy,
				struct govex_error *ret_err)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	if (!path)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "policy: missing path");
	int r = govex__read_file(path, POLICY_FILE_MAX, &data, &len, ret_err);
	if (r < 0)
		return r;
	return govex_policy_parse(data, len, ret_policy, ret_err);
}

GOVEX_API int govex_policy_preset(const char *name, govex_policy **ret_policy,
				  struct govex_error *ret_err)
{
	/* strict: a fresh workdir and nothing else.  Memory, CPU, processes, open files and
	 * file size are bounded. */
	static const char strict[] =
	    "{\"version\":\"govex.policy/v1\","
	    "\"limits\":{\"cpu_ms\":10000,\"memory_bytes\":536870912,\"processes\":64,"
	    "\"open_files\":256,\"file_size_bytes\":67108864},"
	    "\"environment\":{\"set\":{\"LANG\":\"C.UTF-8\",\"PATH\":\"/usr/bin:/bin\"}}}";
	static const char trusted[] =
	    "{\"version\":\"govex.policy/v1\","
	    "\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"]},"
	    "\"network\":\"allow\",\"subprocess\":\"allow\",\"shell\":\"allow\","
	    "\"environment\":{\"set\":{\"LANG\":\"C.UTF-8\","
	    "\"PATH\":\"/usr/local/bin:/usr/bin:/bin\"}}}";
	if (!name || !ret_policy)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "preset: missing argument");
	if (strcmp(name, "strict") == 0)
		return govex_policy_parse(strict, sizeof(strict) - 1, ret_policy, ret_err);
	if (strcmp(name, "trusted") == 0)
		return govex_policy_parse(trusted, sizeof(trusted) - 1, ret_policy, ret_err);
	if (strcmp(name, "workspace") == 0) {
		/* strict plus read of the current directory, resolved now */
		_cleanup_free_ char *cwd = getcwd(NULL, 0);
		if (!cwd)
			return govex__err(ret_err, errno, errno,
					  "preset 'workspace': cannot resolve the current "
					  "directory: %s",
					  strerror(errno));
		_cleanup_json_ json_t *doc = NULL;
		int r = govex__json_parse(strict, sizeof(strict) - 1, 0, &doc, ret_err);
		if (r < 0)
			return r;
		json_object_set_new(doc, "filesystem", json_pack("{s:[s]}", "read", cwd));
		r = govex__policy_from_json(doc, ret_policy, ret_err);
		if (r < 0)
			return govex__err(ret_err, r, 0,
					  "preset 'workspace': the current directory '%.100s' "
					  "is not usable as a read root",
					  cwd);
		return r;
	}
	return govex__err(ret_err, GOVEX_EPRESET, 0,
			  "preset '%.60s': unknown (strict, workspace, trusted)", name);
}

GOVEX_API const char *govex_policy_canonical(const govex_policy *p, size_t *ret_len)
{
	if (!p)
		return NULL;
	if (ret_len)
		*ret_len = p->canon_len;
	return p->canon;
}

GOVEX_API const char *govex_policy_digest(const govex_policy *p)
{
	return p ? p->digest : NULL;
}

govex__ctlset govex__policy_required(const struct govex_policy *p)
{
	govex__ctlset s = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) |
			  CTL(PROCESS_TREE_KILL) | CTL(FD_HYGIENE);
	if (!p->workdir)
		s |= CTL(FRESH_WORKDIR);
	if (!p->network)
		s |= CTL(NETWORK_DENY);
	if (!p->subprocess)
		s |= CTL(SUBPROCESS_DENY);
	if (!govex__strv_contains(p->read_roots, "/"))
		s |= CTL(FS_READ_ALLOWLIST);
	if (!govex__strv_contains(p->write_roots, "/"))
		s |= CTL(FS_WRITE_ALLOWLIST);
	if (p->limits.cpu_ms)
		s |= CTL(CPU_TIME_AGGREGATE);
	if (p->limits.memory_bytes)
		s |= CTL(MEMORY_AGGREGATE);
	if (p->limits.processes)
		s |= CTL(PIDS_AGGREGATE);
	if (p->limits.open_files)
		s |= CTL(OPEN_FILES_PER_PROCESS);
	if (p->limits.file_size_bytes)
		s |= CTL(FILE_SIZE_PER_PROCESS);
	return s;
}
