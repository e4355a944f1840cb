/* SPDX-License-Identifier: MIT */
/*
 * One JSON Schema validator for call arguments, used by govex_runtime_call (the CLI and
 * the library) and by the tool provider (MCP), so that an annotation is checked the same
 * way everywhere.  The subset is what govex's inspection emits for annotations (and what
 * the MCP tools' own schemas use): boolean schemas, type (a name or a list of names),
 * enum, const, anyOf, oneOf, allOf, items, prefixItems, minItems/maxItems, properties,
 * required, additionalProperties, minLength/maxLength (in code points),
 * minimum/maximum, exclusiveMinimum/exclusiveMaximum.  Unknown keywords are ignored.
 *
 * Types follow Python's reading of the JSON the worker receives, not JSON Schema's
 * looser one: "integer" is an integer literal only (1.0 decodes to a float in Python,
 * and 1.5 or true are not an int); "number" is an integer or a real; a boolean is never
 * an integer or a number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "values.h"

#define SCHEMA_DEPTH_MAX 128
#define PATH_MAX_LEN	 512

struct ctx {
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	if (c->errlen) {
		int n = snprintf(c->err, c->errlen, "%s: ", path);
		if (n >= 0 && (size_t)n < c->errlen) {
			va_list ap;
			va_start(ap, fmt);
			/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start above */
			vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return 1;
}

static size_t utf8_chars(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t c = 0;
	for (size_t i = 0; i < n;) {
		size_t a = govex__ascii_run(u + i, n - i); /* files' base64: all of it */
		c += a;
		i += a;
		if (i < n)
			c += (u[i++] & 0xc0) != 0x80;
	}
	return c;
}

static bool type_matches(const char *t, const json_t *v)
{
	if (!t)
		return false;
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	return false;
}

/* "number 1.5", "boolean true", "string \"abc\"", "object", "array", "null" */
static void describe(const json_t *v, char *out, size_t outlen)
{
	char num[40];
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		snprintf(out, outlen, "object");
		return;
	case JSON_ARRAY:
		snprintf(out, outlen, "array");
		return;
	case JSON_NULL:
		snprintf(out, outlen, "null");
		return;
	case JSON_TRUE:
		snprintf(out, outlen, "boolean true");
		return;
	case JSON_FALSE:
		snprintf(out, outlen, "boolean false");
		return;
	case JSON_INTEGER:
		snprintf(out, outlen, "integer %" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	case JSON_REAL:
		if (govex__json_real_repr(json_real_value(v), num, sizeof(num)) < 0)
			snprintf(num, sizeof(num), "?");
		snprintf(out, outlen, "number %s", num);
		return;
	case JSON_STRING: {
		/* at most 40 bytes of it, control characters as '?' */
		char s[48];
		size_t n = json_string_length(v), k = 0;
		const char *p = json_string_value(v);
		for (size_t i = 0; i < n && k < 40; i++)
			s[k++] = ((unsigned char)p[i] < 0x20 || p[i] == 0x7f || p[i] == '"') ? '?'
											     : p[i];
		/* do not cut a UTF-8 sequence */
		while (k > 0 && k < n && ((unsigned char)p[k] & 0xc0) == 0x80)
			k--;
		s[k] = '\0';
		snprintf(out, outlen, "string \"%s\"%s", s, k < n ? "..." : "");
		return;
	}
	}
	snprintf(out, outlen, "?");
}

static int check(struct ctx *c, json_t *schema, json_t *v, const char *path, int depth);

static int child(struct ctx *c, json_t *schema, json_t *v, int depth, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int child(struct ctx *c, json_t *schema, json_t *v, int depth, const char *fmt, ...)
{
	char sub[PATH_MAX_LEN];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start above */
	vsnprintf(sub, sizeof(sub), fmt, ap);
	va_end(ap);
	return check(c, schema, v, sub, depth + 1);
}

static int check_type(struct ctx *c, json_t *schema, json_t *v, const char *path)
{
	json_t *t = json_object_get(schema, "type");
	char got[80];
	if (json_is_string(t) && !type_matches(json_string_value(t), v)) {
		describe(v, got, sizeof(got));
		return fail(c, path, "expected %s, got %s", json_string_value(t), got);
	}
	if (json_is_array(t)) {
		size_t i;
		json_t *x;
		json_array_foreach(t, i, x) if (type_matches(json_string_value(x), v)) return 0;
		_cleanup_free_ char *names = govex__json_dumps(t, 0);
		describe(v, got, sizeof(got));
		return fail(c, path, "expected one of the types %.200s, got %s",
			    names ? names : "?", got);
	}
	return 0;
}

static int check_enum(struct ctx *c, json_t *schema, json_t *v, const char *path)
{
	json_t *e = json_object_get(schema, "enum"), *k = json_object_get(schema, "const");
	char got[80];
	if (json_is_array(e)) {
		size_t i;
		json_t *x;
		json_array_foreach(e, i, x) if (json_equal(x, v)) return 0;
		_cleanup_free_ char *names = govex__json_dumps(e, 0);
		describe(v, got, sizeof(got));
		return fail(c, path, "expected one of %.200s, got %s", names ? names : "?", got);
	}
	if (k && !json_equal(k, v)) {
		_cleanup_free_ char *want = govex__json_dumps(k, 0);
		describe(v, got, sizeof(got));
		return fail(c, path, "expected %.200s, got %s", want ? want : "?", got);
	}
	return 0;
}

/* anyOf / oneOf / allOf; r < 0 is out of memory */
static int check_combinators(struct ctx *c, json_t *schema, json_t *v, const char *path, int depth)
{
	size_t i;
	json_t *x;
	int r;
	json_t *all = json_object_get(schema, "allOf");
	json_array_foreach(all, i, x) if ((r = check(c, x, v, path, depth + 1)) != 0) return r;
	static const char *const kw[] = {"anyOf", "oneOf"};
	for (size_t w = 0; w < ARRAY_SIZE(kw); w++) {
		json_t *alts = json_object_get(schema, kw[w]);
		if (!json_is_array(alts))
			continue;
		char first[256] = "no alternative";
		struct ctx sc = {first, sizeof(first)};
		size_t matched = 0;
		json_array_foreach(alts, i, x)
		{
			/* the first alternative's complaint is the one reported */
			char other[256];
			struct ctx oc = {other, sizeof(other)};
			if ((r = check(i == 0 ? &sc : &oc, x, v, path, depth + 1)) < 0)
				return r;
			matched += r == 0;
		}
		if (matched == 0) {
			char got[80];
			describe(v, got, sizeof(got));
			return fail(c, path, "got %s, which matches none of the allowed forms (%s)",
				    got, first);
		}
		if (w == 1 && matched > 1)
			return fail(c, path, "matches %zu of the forms of oneOf, not one", matched);
	}
	return 0;
}

static int check_string_number(struct ctx *c, json_t *schema, json_t *v, const char *path)
{
	if (json_is_string(v)) {
		size_t n = utf8_chars(json_string_value(v), json_string_length(v));
		json_t *mx = json_object_get(schema, "maxLength");
		json_t *mn = json_object_get(schema, "minLength");
		if (json_is_integer(mx) && n > (size_t)json_integer_value(mx))
			return fail(c, path, "longer than %" JSON_INTEGER_FORMAT " characters",
				    json_integer_value(mx));
		if (json_is_integer(mn) && json_integer_value(mn) > 0 &&
		    n < (size_t)json_integer_value(mn))
			return fail(c, path, "shorter than %" JSON_INTEGER_FORMAT " characters",
				    json_integer_value(mn));
	}
	if (!json_is_number(v))
		return 0;
	static const struct {
		const char *kw;
		int sign; /* the bound holds when cmp(v, bound) * sign is <= 0 (or < 0) */
		bool strict;
		const char *says;
	} bounds[] = {
	    {"minimum", -1, false, "at least"},
	    {"maximum", 1, false, "at most"},
	    {"exclusiveMinimum", -1, true, "more than"},
	    {"exclusiveMaximum", 1, true, "less than"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bounds); i++) {
		json_t *b = json_object_get(schema, bounds[i].kw);
		if (!json_is_number(b))
			continue;
		int cmp;
		if (json_is_integer(v) && json_is_integer(b))
			cmp = (json_integer_value(v) > json_integer_value(b)) -
			      (json_integer_value(v) < json_integer_value(b));
		else
			cmp = (json_number_value(v) > json_number_value(b)) -
			      (json_number_value(v) < json_number_value(b));
		cmp *= bounds[i].sign;
		if (cmp > 0 || (bounds[i].strict && cmp == 0)) {
			_cleanup_free_ char *bt = govex__json_dumps(b, 0);
			return fail(c, path, "must be %s %s", bounds[i].says, bt ? bt : "?");
		}
	}
	return 0;
}

static int check_array(struct ctx *c, json_t *schema, json_t *v, const char *path, int depth)
{
	size_t n = json_array_size(v), i;
	json_t *mn = json_object_get(schema, "minItems"), *mx = json_object_get(schema, "maxItems");
	if (json_is_integer(mx) && json_integer_value(mx) >= 0 &&
	    n > (size_t)json_integer_value(mx))
		return fail(c, path, "more than %" JSON_INTEGER_FORMAT " items (%zu)",
			    json_integer_value(mx), n);
	if (json_is_integer(mn) && json_integer_value(mn) > 0 && n < (size_t)json_integer_value(mn))
		return fail(c, path, "fewer than %" JSON_INTEGER_FORMAT " items (%zu)",
			    json_integer_value(mn), n);
	json_t *prefix = json_object_get(schema, "prefixItems");
	json_t *items = json_object_get(schema, "items");
	size_t np = json_is_array(prefix) ? json_array_size(prefix) : 0;
	/* draft 2019 tuples: "items" as an array of schemas, "additionalItems" after them */
	if (json_is_array(items)) {
		prefix = items;
		np = json_array_size(items);
		items = json_object_get(schema, "additionalItems");
	}
	int r;
	for (i = 0; i < n; i++) {
		json_t *s = i < np ? json_array_get(prefix, i) : items;
		if (!s)
			continue;
		if (json_is_false(s))
			return fail(c, path, "at most %zu items allowed, got %zu", np, n);
		if ((r = child(c, s, json_array_get(v, i), depth, "%s[%zu]", path, i)) != 0)
			return r;
	}
	return 0;
}

static int check_object(struct ctx *c, json_t *schema, json_t *v, const char *path, int depth)
{
	json_t *props = json_object_get(schema, "properties");
	json_t *addl = json_object_get(schema, "additionalProperties");
	json_t *req = json_object_get(schema, "required");
	size_t i;
	json_t *x;
	int r;
	json_array_foreach(req, i, x)
	{
		const char *k = json_string_value(x);
		if (k && !json_object_get(v, k)) {
			char sub[PATH_MAX_LEN];
			snprintf(sub, sizeof(sub), "%s.%.200s", path, k);
			return fail(c, sub, "required and missing");
		}
	}
	const char *k;
	json_object_foreach(v, k, x)
	{
		json_t *ps = json_object_get(props, k);
		if (!ps)
			ps = addl;
		if (!ps)
			continue;
		if (json_is_false(ps)) {
			char sub[PATH_MAX_LEN];
			snprintf(sub, sizeof(sub), "%s.%.200s", path, k);
			return fail(c, sub, "unknown argument (no parameter of that name)");
		}
		if ((r = child(c, ps, x, depth, "%s.%.200s", path, k)) != 0)
			return r;
	}
	return 0;
}

static int check(struct ctx *c, json_t *schema, json_t *v, const char *path, int depth)
{
	if (json_is_false(schema))
		return fail(c, path, "no value is allowed here");
	if (!json_is_object(schema))
		return 0;
	if (depth > SCHEMA_DEPTH_MAX)
		return fail(c, path, "nested too deeply");
	int r;
	if ((r = check_type(c, schema, v, path)) != 0 ||
	    (r = check_enum(c, schema, v, path)) != 0 ||
	    (r = check_combinators(c, schema, v, path, depth)) != 0 ||
	    (r = check_string_number(c, schema, v, path)) != 0)
		return r;
	if (json_is_array(v))
		return check_array(c, schema, v, path, depth);
	if (json_is_object(v))
		return check_object(c, schema, v, path, depth);
	return 0;
}

int govex__schema_check(json_t *schema, json_t *value, const char *path, char *err, size_t errlen)
{
	struct ctx c = {err, errlen};
	if (errlen)
		err[0] = '\0';
	if (!value)
		return fail(&c, path ? path : "value", "no value");
	return check(&c, schema, value, path ? path : "value", 0);
}

int govex__schema_check_args(json_t *fn, json_t *args, char *err, size_t errlen)
{
	json_t *schema = json_object_get(fn, "input_schema");
	if (errlen)
		err[0] = '\0';
	if (!json_is_object(schema) && !json_is_boolean(schema))
		return 0;
	return govex__schema_check(schema, args, "args", err, errlen);
}
