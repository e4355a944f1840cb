/* SPDX-License-Identifier: MIT */
/*
 * govex.policy/v1's fields: each section of a policy document parsed and validated into
 * struct govex_policy (one parser per section), errors naming the field.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "internal.h"
#include "policy.h"

static const char *const effect_names[] = {
#define GOVEX__EFFNAME(id, name) name,
    GOVEX__EFFECTS(GOVEX__EFFNAME)
#undef GOVEX__EFFNAME
};

static const char *const backend_names[] = {"controlled", "restricted"};

/* ---- validation helpers ------------------------------------------------------------ */

static int fail(struct govex_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct govex_error *err, const char *path, const char *fmt, ...)
{
	char cause[180];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	return govex__err(err, GOVEX_EPOLICY, 0, "%s: %s", path, cause);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number with a fraction or exponent";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Refuses members of obj not in allowed (NULL-terminated), naming the nearest allowed one. */
static int check_keys(const json_t *obj, const char *prefix, const char *const *allowed,
		      struct govex_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(k, allowed[i]) == 0)
				ok = true;
		if (!ok) {
			char path[200];
			snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", k);
			const char *near = govex__nearest_name(k, allowed);
			if (near)
				return fail(err, path,
					    "unknown field \"%.80s\" (did you mean \"%s\"?)", k,
					    near);
			return fail(err, path, "unknown field \"%.80s\"", k);
		}
	}
	return 0;
}

static int want_type(const json_t *v, json_type t, const char *path, const char *tname,
		     struct govex_error *err)
{
	if (json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v)))
		return 0;
	return fail(err, path, "must be %s, not %s", tname, type_name(v));
}

static int get_string(const json_t *v, const char *path, const char **ret, struct govex_error *err)
{
	int r = want_type(v, JSON_STRING, path, "a string", err);
	if (r < 0)
		return r;
	/* jansson refuses \u0000 by default; the length check is belt and braces. */
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fail(err, path, "must not contain NUL");
	*ret = json_string_value(v);
	return 0;
}

static int get_path(const json_t *v, const char *path, char **ret, struct govex_error *err)
{
	const char *s = NULL;
	int r = get_string(v, path, &s, err);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return fail(err, path, "'%.100s' is not an absolute path", s);
	if (strlen(s) > 4095)
		return fail(err, path, "path longer than 4095 bytes");
	if (!govex__path_normalized(s))
		return fail(err, path,
			    "'%.100s' is not normalized (no '.', '..', '//' or trailing '/')", s);
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static bool env_name_ok(const char *s)
{
	return govex__identifier(s, strlen(s), 255);
}

/* An array of strings, each one of names[] (when names) or checked by fn. */
static int get_name_set(const json_t *v, const char *path, const char *const *names, size_t n_names,
			bool (*fn)(const char *), char ***ret, struct govex_error *err)
{
	int r = want_type(v, JSON_ARRAY, path, "an array", err);
	if (r < 0)
		return r;
	char **out = calloc(1, sizeof(char *));
	if (!out)
		return -ENOMEM;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		char ep[200];
		const char *s = NULL;
		snprintf(ep, sizeof(ep), "%s[%zu]", path, i);
		r = get_string(e, ep, &s, err);
		if (r < 0)
			goto out;
		bool ok = fn ? fn(s) : false;
		for (size_t k = 0; !fn && k < n_names; k++)
			if (strcmp(s, names[k]) == 0)
				ok = true;
		if (!ok) {
			r = fail(err, ep, "'%.80s' is not allowed here", s);
			goto out;
		}
		if ((r = govex__strv_push(&out, s)) < 0)
			goto out;
	}
	govex__strv_sort_uniq(out);
	*ret = out;
	return 0;
out:
	govex__strv_free(out);
	return r;
}

static int get_paths(const json_t *v, const char *path, char ***ret, struct govex_error *err)
{
	int r = want_type(v, JSON_ARRAY, path, "an array", err);
	if (r < 0)
		return r;
	if (json_array_size(v) > 256)
		return fail(err, path, "more than 256 entries");
	char **out = calloc(1, sizeof(char *));
	if (!out)
		return -ENOMEM;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		char ep[200];
		char *s = NULL;
		snprintf(ep, sizeof(ep), "%s[%zu]", path, i);
		if ((r = get_path(e, ep, &s, err)) < 0 ||
		    (r = govex__strv_push_take(&out, s)) < 0) {
			govex__strv_free(out);
			return r;
		}
	}
	govex__strv_sort_uniq(out);
	*ret = out;
	return 0;
}

static int parse_limits(const json_t *v, struct govex__limits *l, struct govex_error *err)
{
	static const char *const keys[] = GOVEX__LIMIT_NAMES;
	int r = want_type(v, JSON_OBJECT, "limits", "an object", err);
	if (r < 0 || (r = check_keys(v, "limits", keys, err)) < 0)
		return r;
	for (size_t i = 0; i < govex__limit_count; i++) {
		const struct govex__limit_desc *d = &govex__limit_table[i];
		json_t *e = json_object_get(v, d->name);
		char path[64];
		snprintf(path, sizeof(path), "limits.%s", d->name);
		if (!e)
			continue;
		if (json_is_null(e) && d->nullable) {
			*govex__limit_ptr(l, d) = 0;
			continue;
		}
		if (!json_is_integer(e))
			return fail(err, path, "must be %s, not %s",
				    d->nullable ? "an integer or null" : "an integer",
				    type_name(e));
		json_int_t n = json_integer_value(e);
		if (n < 0 || (uint64_t)n < d->min || (uint64_t)n > d->max)
			return fail(err, path, "must be between %llu and %llu, not %lld",
				    (unsigned long long)d->min, (unsigned long long)d->max,
				    (long long)n);
		*govex__limit_ptr(l, d) = (uint64_t)n;
	}
	return 0;
}

static int parse_allow_deny(const json_t *o, const char *key, bool *ret, struct govex_error *err)
{
	json_t *v = json_object_get(o, key);
	const char *s = NULL;
	if (!v)
		return 0;
	int r = get_string(v, key, &s, err);
	if (r < 0)
		return r;
	if (strcmp(s, "allow") == 0)
		*ret = true;
	else if (strcmp(s, "deny") == 0)
		*ret = false;
	else
		return fail(err, key, "must be \"allow\" or \"deny\", not '%.60s'", s);
	return 0;
}

static int parse_environment(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const keys[] = {"inherit", "allow", "set", NULL};
	int r = want_type(v, JSON_OBJECT, "environment", "an object", err);
	if (r < 0 || (r = check_keys(v, "environment", keys, err)) < 0)
		return r;
	json_t *e;
	if ((e = json_object_get(v, "inherit"))) {
		if ((r = want_type(e, JSON_TRUE, "environment.inherit", "a boolean", err)) < 0)
			return r;
		p->env_inherit = json_is_true(e);
	}
	if ((e = json_object_get(v, "allow"))) {
		if (json_array_size(e) > 1024)
			return fail(err, "environment.allow", "more than 1024 names");
		char **names = NULL;
		if ((r = get_name_set(e, "environment.allow", NULL, 0, env_name_ok, &names, err)) <
		    0)
			return r;
		govex__strv_free(p->env_allow);
		p->env_allow = names;
	}
	if ((e = json_object_get(v, "set"))) {
		if ((r = want_type(e, JSON_OBJECT, "environment.set", "an object", err)) < 0)
			return r;
		if (json_object_size(e) > 1024)
			return fail(err, "environment.set", "more than 1024 names");
		const char *k;
		json_t *val;
		json_object_foreach(e, k, val)
		{
			char ep[300];
			const char *s = NULL;
			snprintf(ep, sizeof(ep), "environment.set.%.200s", k);
			if (!env_name_ok(k))
				return fail(err, ep, "not a valid environment variable name");
			if ((r = get_string(val, ep, &s, err)) < 0)
				return r;
			if (strlen(s) > 32768)
				return fail(err, ep, "value longer than 32768 bytes");
			char *kv = NULL;
			if (asprintf(&kv, "%s=%s", k, s) < 0)
				return -ENOMEM;
			if ((r = govex__strv_push_take(&p->env_set, kv)) < 0)
				return r;
		}
		govex__strv_sort_uniq(p->env_set);
	}
	return 0;
}

static unsigned perm_bit(const char *s)
{
	for (size_t i = 0; i < GOVEX__N_PERMS; i++)
		if (strcmp(s, govex__perm_names[i]) == 0)
			return 1u << i;
	return 0;
}

static int parse_languages(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const langs[] = {"python"};
	char **l = NULL;
	int r;
	(void)p;
	if ((r = get_name_set(v, "languages", langs, 1, NULL, &l, err)) < 0)
		return r;
	size_t n = govex__strv_len(l);
	govex__strv_free(l);
	if (n == 0)
		return fail(err, "languages", "must name at least one language");
	return 0;
}

/* A module's dotted name: identifiers (ASCII) joined by dots, at most 100 bytes. */
static bool module_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 100)
		return false;
	bool start = true;
	for (const char *c = s; *c; c++) {
		bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
		bool digit = *c >= '0' && *c <= '9';
		if (*c == '.') {
			if (start)
				return false;
			start = true;
		} else if (alpha || (digit && !start)) {
			start = false;
		} else {
			return false;
		}
	}
	return !start;
}

static int parse_python(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const pk[] = {"interpreter", "site", "preload", NULL};
	json_t *e;
	int r;
	if ((r = want_type(v, JSON_OBJECT, "python", "an object", err)) < 0 ||
	    (r = check_keys(v, "python", pk, err)) < 0)
		return r;
	if ((e = json_object_get(v, "interpreter"))) {
		const char *is = NULL;
		if ((r = get_string(e, "python.interpreter", &is, err)) < 0)
			return r;
		if (strcmp(is, "auto") != 0 &&
		    (r = get_path(e, "python.interpreter", &p->interpreter, err)) < 0)
			return r;
	}
	if ((e = json_object_get(v, "site"))) {
		if ((r = want_type(e, JSON_TRUE, "python.site", "a boolean", err)) < 0)
			return r;
		p->site = json_is_true(e);
	}
	if ((e = json_object_get(v, "preload"))) {
		if (json_is_array(e) && json_array_size(e) > 32)
			return fail(err, "python.preload", "more than 32 modules");
		if ((r = get_name_set(e, "python.preload", NULL, 0, module_name, &p->preload,
				      err)) < 0)
			return r;
		if (!p->preload[0])
			p->preload = govex__strv_free(p->preload);
	}
	return 0;
}

static int parse_limits_section(const json_t *v, govex_policy *p, struct govex_error *err)
{
	return parse_limits(v, &p->limits, err);
}

/*
 * A path a sandbox gives its own meaning: /govex is where the run's fresh workdir is
 * mounted (a host path there would be hidden or collide).  (Read roots beneath /tmp
 * are refused at planning, for a sandboxed run only: planning.c.)
 */
static int roots_not_reserved(const govex_policy *p, struct govex_error *err)
{
	char **lists[] = {p->read_roots, p->write_roots};
	const char *names[] = {"filesystem.read", "filesystem.write"};
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++)
		for (size_t i = 0; lists[k] && lists[k][i]; i++) {
			const char *root = lists[k][i];
			if (govex__path_under(root, "/govex"))
				return fail(
				    err, names[k],
				    "'%.100s': /govex is reserved for the sandbox's workdir", root);
		}
	return 0;
}

static int parse_filesystem(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const fk[] = {"read", "write", "deny", "platform_defaults", NULL};
	json_t *e;
	int r;
	if ((r = want_type(v, JSON_OBJECT, "filesystem", "an object", err)) < 0 ||
	    (r = check_keys(v, "filesystem", fk, err)) < 0)
		return r;
	if ((e = json_object_get(v, "read"))) {
		govex__strv_free(p->read_roots);
		p->read_roots = NULL;
		if ((r = get_paths(e, "filesystem.read", &p->read_roots, err)) < 0)
			return r;
	}
	if ((e = json_object_get(v, "write"))) {
		govex__strv_free(p->write_roots);
		p->write_roots = NULL;
		if ((r = get_paths(e, "filesystem.write", &p->write_roots, err)) < 0)
			return r;
	}
	if ((e = json_object_get(v, "deny"))) {
		p->deny_paths = govex__strv_free(p->deny_paths);
		if ((r = get_paths(e, "filesystem.deny", &p->deny_paths, err)) < 0)
			return r;
		for (size_t i = 0; p->deny_paths[i]; i++)
			if (strcmp(p->deny_paths[i], "/") == 0)
				return fail(err, "filesystem.deny",
					    "'/' would deny everything: name the paths to hide");
		if (!p->deny_paths[0])
			p->deny_paths = govex__strv_free(p->deny_paths);
	}
	if ((e = json_object_get(v, "platform_defaults"))) {
		if ((r = want_type(e, JSON_TRUE, "filesystem.platform_defaults", "a boolean",
				   err)) < 0)
			return r;
		p->platform_defaults = json_is_true(e);
	}
	return 0;
}

static int parse_workdir(const json_t *v, govex_policy *p, struct govex_error *err)
{
	const char *ws = NULL;
	int r;
	if ((r = get_string(v, "workdir", &ws, err)) < 0)
		return r;
	if (strcmp(ws, "fresh") == 0)
		return 0;
	if ((r = get_path(v, "workdir", &p->workdir, err)) < 0)
		return r;
	if (govex__path_under(p->workdir, "/govex"))
		return fail(err, "workdir",
			    "'%.100s': /govex is reserved for the sandbox's workdir", p->workdir);
	for (size_t i = 0; p->write_roots[i]; i++)
		if (govex__path_under(p->workdir, p->write_roots[i]))
			return 0;
	return fail(err, "workdir", "'%.100s' does not lie under a filesystem.write root",
		    p->workdir);
}

/* network: "allow", "deny", or {"allow": ["host:port", ...]} (filtered networking,
 * egress.h: the list sorted, duplicates dropped) */
static int parse_network(const json_t *doc, govex_policy *p, struct govex_error *err)
{
	json_t *v = json_object_get(doc, "network");
	if (!json_is_object(v)) {
		if (v && !json_is_string(v))
			return fail(err, "network",
				    "must be \"allow\", \"deny\" or {\"allow\": [\"host:port\", "
				    "...]}, not %s",
				    type_name(v));
		return parse_allow_deny(doc, "network", &p->network, err);
	}
	static const char *const keys[] = {"allow", NULL};
	int r = check_keys(v, "network", keys, err);
	if (r < 0)
		return r;
	json_t *a = json_object_get(v, "allow");
	if (!a)
		return fail(err, "network",
			    "an object needs \"allow\": [\"host:port\", ...] (the destinations "
			    "a run may reach)");
	p->network = false;
	return govex__egress_list_parse(a, &p->net_allow, err);
}

/* network, subprocess, shell: "allow" or "deny" (v is the document: the key is looked
 * up there) */
static int parse_permissions(const json_t *doc, govex_policy *p, struct govex_error *err)
{
	int r;
	if ((r = parse_network(doc, p, err)) < 0 ||
	    (r = parse_allow_deny(doc, "subprocess", &p->subprocess, err)) < 0 ||
	    (r = parse_allow_deny(doc, "shell", &p->shell, err)) < 0)
		return r;
	return 0;
}

static int parse_environment_section(const json_t *v, govex_policy *p, struct govex_error *err)
{
	return parse_environment(v, p, err);
}

static int parse_approval(const json_t *v, govex_policy *p, struct govex_error *err)
{
	char **a = NULL;
	int r = get_name_set(v, "approval", govex__perm_names, GOVEX__N_PERMS, NULL, &a, err);
	if (r < 0)
		return r;
	for (size_t i = 0; a[i]; i++)
		p->approval |= perm_bit(a[i]);
	govex__strv_free(a);
	return 0;
}

static int parse_effects(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const ek[] = {"require_known", NULL};
	json_t *e;
	int r;
	if ((r = want_type(v, JSON_OBJECT, "effects", "an object", err)) < 0 ||
	    (r = check_keys(v, "effects", ek, err)) < 0)
		return r;
	if ((e = json_object_get(v, "require_known"))) {
		govex__strv_free(p->require_known);
		p->require_known = NULL;
		if ((r = get_name_set(e, "effects.require_known", effect_names,
				      ARRAY_SIZE(effect_names), NULL, &p->require_known, err)) < 0)
			return r;
	}
	return 0;
}

static int parse_backend(const json_t *v, govex_policy *p, struct govex_error *err)
{
	const char *bs = NULL;
	bool known = false;
	int r;
	if (json_is_null(v))
		return 0;
	if ((r = get_string(v, "backend", &bs, err)) < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(backend_names); i++)
		if (strcmp(bs, backend_names[i]) == 0)
			known = true;
	if (!known)
		return fail(err, "backend", "unknown backend '%.60s'", bs);
	return (p->backend = strdup(bs)) ? 0 : -ENOMEM;
}

/* results: what of a call's run reaches its result (disclosure). */
static int parse_results(const json_t *v, govex_policy *p, struct govex_error *err)
{
	static const char *const rk[] = {"disclosure", NULL};
	int r;
	if ((r = want_type(v, JSON_OBJECT, "results", "an object", err)) < 0 ||
	    (r = check_keys(v, "results", rk, err)) < 0)
		return r;
	json_t *d = json_object_get(v, "disclosure");
	if (!d)
		return 0;
	const char *s = NULL;
	if ((r = get_string(d, "results.disclosure", &s, err)) < 0)
		return r;
	if (s && (strcmp(s, "full") == 0 || strcmp(s, "sanitized") == 0)) {
		p->sanitized = s[0] == 's';
		return 0;
	}
	return fail(err, "results.disclosure", "must be \"full\" or \"sanitized\", not '%.60s'",
		    s ? s : "");
}

/* The sections of a policy document, parsed in this order (a workdir is checked
 * against the write roots, so after filesystem).  A NULL key: the parser is given the
 * whole document. */
static const struct {
	const char *key;
	int (*parse)(const json_t *v, govex_policy *p, struct govex_error *err);
} policy_sections[] = {
    {"languages", parse_languages},
    {"python", parse_python},
    {"limits", parse_limits_section},
    {"filesystem", parse_filesystem},
    {"workdir", parse_workdir},
    {NULL, parse_permissions},
    {"environment", parse_environment_section},
    {"approval", parse_approval},
    {"effects", parse_effects},
    {"results", parse_results},
    {"backend", parse_backend},
};

static int policy_version(const json_t *doc, struct govex_error *err)
{
	json_t *v = json_object_get(doc, "version");
	const char *s = NULL;
	int r;
	if (!v)
		return fail(err, "version", "missing (must be \"" GOVEX_POLICY_VERSION "\")");
	if ((r = get_string(v, "version", &s, err)) < 0)
		return r;
	if (strcmp(s, GOVEX_POLICY_VERSION) != 0)
		return fail(err, "version",
			    "unsupported '%.60s' (must be \"" GOVEX_POLICY_VERSION "\")", s);
	return 0;
}

static govex_policy *policy_new(void)
{
	govex_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	govex__policy_set_defaults(p);
	p->read_roots = calloc(1, sizeof(char *));
	p->write_roots = calloc(1, sizeof(char *));
	p->env_allow = calloc(1, sizeof(char *));
	p->env_set = calloc(1, sizeof(char *));
	p->require_known = calloc(1, sizeof(char *));
	if (!p->read_roots || !p->write_roots || !p->env_allow || !p->env_set || !p->require_known)
		return govex_policy_free(p), NULL;
	return p;
}

int govex__policy_from_json(const json_t *doc, govex_policy **ret, struct govex_error *err)
{
	static const char *const keys[] = {"version", "languages",   "python",	 "workdir",
					   "limits",  "filesystem",  "network",	 "subprocess",
					   "shell",   "environment", "approval", "effects",
					   "results", "backend",     NULL};
	int r;

	if (!json_is_object(doc))
		return fail(err, "document", "must be an object, not %s", type_name(doc));
	if ((r = check_keys(doc, "", keys, err)) < 0 || (r = policy_version(doc, err)) < 0)
		return r;
	govex_policy *p = policy_new();
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(policy_sections); i++) {
		const char *key = policy_sections[i].key;
		json_t *v = key ? json_object_get(doc, key) : (json_t *)doc;
		if (v && (r = policy_sections[i].parse(v, p, err)) < 0)
			goto out;
		/* the roots just parsed: none in /govex (before the workdir is checked) */
		if (key && strcmp(key, "filesystem") == 0 && (r = roots_not_reserved(p, err)) < 0)
			goto out;
	}
	if ((r = govex__policy_finish(p, err)) < 0)
		goto out;
	*ret = p;
	return 0;
out:
	govex_policy_free(p);
	return r;
}

/* ---- the entry points: a document, a file, a preset (govex.h) ---------------------- */

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
