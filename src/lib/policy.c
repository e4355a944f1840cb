/* SPDX-License-Identifier: MIT */
/*
 * govex.policy/v1: parse, validate, normalize, canonical bytes and digest, presets.
 *
 * The parsed document is decoded into struct govex_policy and the canonical form is then
 * re-encoded from the struct, so the canonical bytes can only say what the struct holds.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include "files.h"

#define POLICY_FILE_MAX (1u << 20)

struct limit_desc {
	const char *name;
	size_t off;
	bool nullable;
	uint64_t min, max, def;
	bool omit_default; /* left out of canonical bytes at its default (newer fields:
			    * every older policy keeps its digest) */
};

#define LIM(f) offsetof(struct govex__limits, f)
/* clang-format off */
static const struct limit_desc limit_table[] = {
	{"wall_ms", LIM(wall_ms), false, 1, GOVEX_WALL_MS_MAX, 5000},
	{"cpu_ms", LIM(cpu_ms), true, 1, 24ULL * GOVEX_WALL_MS_MAX, 0},
	{"memory_bytes", LIM(memory_bytes), true, 1ULL << 20, 1ULL << 42, 0},
	{"processes", LIM(processes), true, 1, 1ULL << 20, 0},
	{"open_files", LIM(open_files), true, 8, 1ULL << 20, 0},
	{"file_size_bytes", LIM(file_size_bytes), true, 1, 1ULL << 50, 0},
	{"code_bytes", LIM(code_bytes), false, 1, 64ULL << 20, 64ULL << 10},
	{"stdin_bytes", LIM(stdin_bytes), false, 0, 1ULL << 30, 1ULL << 20},
	{"stdout_bytes", LIM(stdout_bytes), false, 0, 1ULL << 30, 64ULL << 10},
	{"stderr_bytes", LIM(stderr_bytes), false, 0, 1ULL << 30, 64ULL << 10},
	{"call_input_bytes", LIM(call_input_bytes), false, 1, GOVEX_CALL_BYTES_MAX, 1ULL << 20},
	{"call_output_bytes", LIM(call_output_bytes), false, GOVEX_CALL_OUTPUT_MIN,
	 GOVEX_CALL_BYTES_MAX, 1ULL << 20},
	{"files_in_bytes", LIM(files_in_bytes), false, 0, 1ULL << 32, GOVEX__FILES_IN_DEFAULT,
	 true},
	{"files_out_bytes", LIM(files_out_bytes), false, 0, 1ULL << 32, GOVEX__FILES_OUT_DEFAULT,
	 true},
	{"files_out_count", LIM(files_out_count), false, 0, GOVEX__FILES_COUNT_MAX,
	 GOVEX__FILES_COUNT_DEFAULT, true},
};
/* clang-format on */
#undef LIM

static uint64_t *limit_ptr(struct govex__limits *l, const struct limit_desc *d)
{
	return (uint64_t *)((char *)l + d->off);
}

static const char *const perm_names[] = {"network", "filesystem_write", "shell", "subprocess"};

static const char *const effect_names[] = {
#define GOVEX__EFFNAME(id, name) name,
	GOVEX__EFFECTS(GOVEX__EFFNAME)
#undef GOVEX__EFFNAME
};

static const char *const backend_names[] = {"controlled", "restricted"};

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
	free(p->backend);
	free(p);
	return NULL;
}

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

/* Refuses members of obj not in allowed (NULL-terminated). */
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
			return fail(err, path, "unknown field");
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

static int get_string(const json_t *v, const char *path, const char **ret,
		      struct govex_error *err)
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
static int get_name_set(const json_t *v, const char *path, const char *const *names,
			size_t n_names, bool (*fn)(const char *), char ***ret,
			struct govex_error *err)
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
	/* clang-format off */
	static const char *const keys[] = {
		"wall_ms",      "cpu_ms",       "memory_bytes",     "processes",
		"open_files",   "file_size_bytes", "code_bytes",    "stdin_bytes",
		"stdout_bytes", "stderr_bytes", "call_input_bytes", "call_output_bytes",
		"files_in_bytes", "files_out_bytes", "files_out_count", NULL};
	/* clang-format on */
	int r = want_type(v, JSON_OBJECT, "limits", "an object", err);
	if (r < 0 || (r = check_keys(v, "limits", keys, err)) < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(limit_table); i++) {
		const struct limit_desc *d = &limit_table[i];
		json_t *e = json_object_get(v, d->name);
		char path[64];
		snprintf(path, sizeof(path), "limits.%s", d->name);
		if (!e)
			continue;
		if (json_is_null(e) && d->nullable) {
			*limit_ptr(l, d) = 0;
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
		*limit_ptr(l, d) = (uint64_t)n;
	}
	return 0;
}

static int parse_allow_deny(const json_t *o, const char *key, bool *ret,
			    struct govex_error *err)
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
		if ((r = get_name_set(e, "environment.allow", NULL, 0, env_name_ok, &names,
				      err)) < 0)
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
	for (size_t i = 0; i < ARRAY_SIZE(perm_names); i++)
		if (strcmp(s, perm_names[i]) == 0)
			return 1u << i;
	return 0;
}

/* ---- canonical form ------------------------------------------------------------------- */


json_t *govex__limits_json(const struct govex__limits *l)
{
	json_t *o = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(limit_table); i++) {
		const struct limit_desc *d = &limit_table[i];
		uint64_t v = *limit_ptr((struct govex__limits *)l, d);
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
	for (size_t i = 0; i < ARRAY_SIZE(perm_names); i++)
		if (p->approval & (1u << i))
			json_array_append_new(approval, json_string(perm_names[i]));
	/* perm_names are not in sorted order; sort for the canonical array */
	char **ap = NULL;
	size_t idx;
	json_t *e;
	json_array_foreach(approval, idx, e) govex__strv_push(&ap, json_string_value(e));
	govex__strv_sort_uniq(ap);
	json_decref(approval);
	approval = govex__strv_json(ap);
	govex__strv_free(ap);

	return json_pack(
		"{s:s, s:[s], s:{s:s, s:b}, s:s, s:o, s:{s:o, s:o, s:b}, s:s, s:s, s:s,"
		" s:{s:b, s:o, s:o}, s:o, s:{s:o}, s:s?}",
		"version", GOVEX_POLICY_VERSION, "languages", "python", "python", "interpreter",
		p->interpreter ? p->interpreter : "auto", "site", p->site, "workdir",
		p->workdir ? p->workdir : "fresh", "limits", govex__limits_json(&p->limits),
		"filesystem", "read", govex__strv_json(p->read_roots), "write", govex__strv_json(p->write_roots),
		"platform_defaults", p->platform_defaults, "network",
		p->network ? "allow" : "deny", "subprocess", p->subprocess ? "allow" : "deny",
		"shell", p->shell ? "allow" : "deny", "environment", "inherit", p->env_inherit,
		"allow", govex__strv_json(p->env_allow), "set", env_set, "approval", approval, "effects",
		"require_known", govex__strv_json(p->require_known), "backend", p->backend);
}

static int finish(govex_policy *p, struct govex_error *err)
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

static void set_defaults(govex_policy *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(limit_table); i++)
		*limit_ptr(&p->limits, &limit_table[i]) = limit_table[i].def;
	p->platform_defaults = true;
}

static int policy_from_json(const json_t *doc, govex_policy **ret, struct govex_error *err)
{
	static const char *const keys[] = {
		"version", "languages", "python",   "workdir", "limits",
		"filesystem", "network", "subprocess", "shell", "environment",
		"approval", "effects", "backend", NULL};
	int r;
	json_t *v;

	if (!json_is_object(doc))
		return fail(err, "document", "must be an object, not %s", type_name(doc));
	if ((r = check_keys(doc, "", keys, err)) < 0)
		return r;
	v = json_object_get(doc, "version");
	if (!v)
		return fail(err, "version", "missing (must be \"" GOVEX_POLICY_VERSION "\")");
	const char *s = NULL;
	if ((r = get_string(v, "version", &s, err)) < 0)
		return r;
	if (strcmp(s, GOVEX_POLICY_VERSION) != 0)
		return fail(err, "version", "unsupported '%.60s' (must be \"" GOVEX_POLICY_VERSION
				"\")", s);

	govex_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	set_defaults(p);
	p->read_roots = calloc(1, sizeof(char *));
	p->write_roots = calloc(1, sizeof(char *));
	p->env_allow = calloc(1, sizeof(char *));
	p->env_set = calloc(1, sizeof(char *));
	p->require_known = calloc(1, sizeof(char *));
	if (!p->read_roots || !p->write_roots || !p->env_allow || !p->env_set ||
	    !p->require_known) {
		r = -ENOMEM;
		goto out;
	}

	if ((v = json_object_get(doc, "languages"))) {
		static const char *const langs[] = {"python"};
		char **l = NULL;
		if ((r = get_name_set(v, "languages", langs, 1, NULL, &l, err)) < 0)
			goto out;
		size_t n = govex__strv_len(l);
		govex__strv_free(l);
		if (n == 0) {
			r = fail(err, "languages", "must name at least one language");
			goto out;
		}
	}
	if ((v = json_object_get(doc, "python"))) {
		static const char *const pk[] = {"interpreter", "site", NULL};
		json_t *e;
		if ((r = want_type(v, JSON_OBJECT, "python", "an object", err)) < 0 ||
		    (r = check_keys(v, "python", pk, err)) < 0)
			goto out;
		if ((e = json_object_get(v, "interpreter"))) {
			const char *is = NULL;
			if ((r = get_string(e, "python.interpreter", &is, err)) < 0)
				goto out;
			if (strcmp(is, "auto") != 0 &&
			    (r = get_path(e, "python.interpreter", &p->interpreter, err)) < 0)
				goto out;
		}
		if ((e = json_object_get(v, "site"))) {
			if ((r = want_type(e, JSON_TRUE, "python.site", "a boolean", err)) < 0)
				goto out;
			p->site = json_is_true(e);
		}
	}
	if ((v = json_object_get(doc, "limits")) && (r = parse_limits(v, &p->limits, err)) < 0)
		goto out;
	if ((v = json_object_get(doc, "filesystem"))) {
		static const char *const fk[] = {"read", "write", "platform_defaults", NULL};
		json_t *e;
		if ((r = want_type(v, JSON_OBJECT, "filesystem", "an object", err)) < 0 ||
		    (r = check_keys(v, "filesystem", fk, err)) < 0)
			goto out;
		if ((e = json_object_get(v, "read"))) {
			govex__strv_free(p->read_roots);
			p->read_roots = NULL;
			if ((r = get_paths(e, "filesystem.read", &p->read_roots, err)) < 0)
				goto out;
		}
		if ((e = json_object_get(v, "write"))) {
			govex__strv_free(p->write_roots);
			p->write_roots = NULL;
			if ((r = get_paths(e, "filesystem.write", &p->write_roots, err)) < 0)
				goto out;
		}
		if ((e = json_object_get(v, "platform_defaults"))) {
			if ((r = want_type(e, JSON_TRUE, "filesystem.platform_defaults",
					   "a boolean", err)) < 0)
				goto out;
			p->platform_defaults = json_is_true(e);
		}
	}
	/*
	 * A path a sandbox gives its own meaning: /govex is where the run's fresh workdir is
	 * mounted (a host path there would be hidden or collide).  (Read roots beneath /tmp
	 * are refused at planning, for a sandboxed run only: plan.c.)
	 */
	{
		char **lists[] = {p->read_roots, p->write_roots};
		const char *names[] = {"filesystem.read", "filesystem.write"};
		for (size_t k = 0; k < ARRAY_SIZE(lists); k++)
			for (size_t i = 0; lists[k] && lists[k][i]; i++) {
				const char *root = lists[k][i];
				if (govex__path_under(root, "/govex")) {
					r = fail(err, names[k],
						 "'%.100s': /govex is reserved for the sandbox's "
						 "workdir",
						 root);
					goto out;
				}
			}
	}
	if ((v = json_object_get(doc, "workdir"))) {
		const char *ws = NULL;
		if ((r = get_string(v, "workdir", &ws, err)) < 0)
			goto out;
		if (strcmp(ws, "fresh") != 0) {
			if ((r = get_path(v, "workdir", &p->workdir, err)) < 0)
				goto out;
			if (govex__path_under(p->workdir, "/govex")) {
				r = fail(err, "workdir",
					 "'%.100s': /govex is reserved for the sandbox's workdir",
					 p->workdir);
				goto out;
			}
			bool under = false;
			for (size_t i = 0; p->write_roots[i]; i++)
				if (govex__path_under(p->workdir, p->write_roots[i]))
					under = true;
			if (!under) {
				r = fail(err, "workdir",
					 "'%.100s' does not lie under a filesystem.write root",
					 p->workdir);
				goto out;
			}
		}
	}
	if ((r = parse_allow_deny(doc, "network", &p->network, err)) < 0 ||
	    (r = parse_allow_deny(doc, "subprocess", &p->subprocess, err)) < 0 ||
	    (r = parse_allow_deny(doc, "shell", &p->shell, err)) < 0)
		goto out;
	if ((v = json_object_get(doc, "environment")) &&
	    (r = parse_environment(v, p, err)) < 0)
		goto out;
	if ((v = json_object_get(doc, "approval"))) {
		char **a = NULL;
		if ((r = get_name_set(v, "approval", perm_names, ARRAY_SIZE(perm_names), NULL, &a,
				      err)) < 0)
			goto out;
		for (size_t i = 0; a[i]; i++)
			p->approval |= perm_bit(a[i]);
		govex__strv_free(a);
	}
	if ((v = json_object_get(doc, "effects"))) {
		static const char *const ek[] = {"require_known", NULL};
		json_t *e;
		if ((r = want_type(v, JSON_OBJECT, "effects", "an object", err)) < 0 ||
		    (r = check_keys(v, "effects", ek, err)) < 0)
			goto out;
		if ((e = json_object_get(v, "require_known"))) {
			govex__strv_free(p->require_known);
			p->require_known = NULL;
			if ((r = get_name_set(e, "effects.require_known", effect_names,
					      ARRAY_SIZE(effect_names), NULL, &p->require_known,
					      err)) < 0)
				goto out;
		}
	}
	if ((v = json_object_get(doc, "backend")) && !json_is_null(v)) {
		const char *bs = NULL;
		bool known = false;
		if ((r = get_string(v, "backend", &bs, err)) < 0)
			goto out;
		for (size_t i = 0; i < ARRAY_SIZE(backend_names); i++)
			if (strcmp(bs, backend_names[i]) == 0)
				known = true;
		if (!known) {
			r = fail(err, "backend", "unknown backend '%.60s'", bs);
			goto out;
		}
		if (!(p->backend = strdup(bs))) {
			r = -ENOMEM;
			goto out;
		}
	}
	if ((r = finish(p, err)) < 0)
		goto out;
	*ret = p;
	return 0;
out:
	govex_policy_free(p);
	return r;
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
	return policy_from_json(doc, ret_policy, ret_err);
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
		json_object_set_new(doc, "filesystem",
				    json_pack("{s:[s]}", "read", cwd));
		r = policy_from_json(doc, ret_policy, ret_err);
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
