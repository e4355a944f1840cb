/* SPDX-License-Identifier: MIT */
/*
 * FALLBACKS, REPLACED AT THE ROUND'S MERGE (each behind one function; see contract2.md):
 *
 *   govex__tool_param_schema   the parameter's "schema" from the inspection (H2, worker)
 *                              when present; until then the annotation text is read here
 *                              (moved from src/mcp/tools.c).  After H2: return a copy of
 *                              param["schema"] and delete the interpreter below.
 *   govex__tool_schema_check   until H3's govex__schema_check (src/lib/schema.c) lands:
 *                              the checker moved from src/mcp/arguments.c.  After H3:
 *                              return govex__schema_check(...) and delete check().
 *   govex__tool_run_snippet    until H2's REPL runs (request.repl, worker op "snippet"):
 *                              the Python wrapper with a nonce (moved from
 *                              src/mcp/snippet.c).  After H2: set req->repl = 1 and
 *                              req->inputs_json, run, and delete the wrapper.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"

json_t *govex__tool_param_schema(json_t *param)
{
	json_t *given = json_object_get(param, "schema");
	return json_is_object(given) ? json_deep_copy(given) : json_object();
}

/* ---------------------------------------------------------------- the argument checker */

static size_t utf8_chars(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static bool type_matches(const char *t, json_t *v)
{
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

static const char *type_name(json_t *v)
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
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* The subset of JSON Schema that our own schemas use. */
static int check(json_t *schema, json_t *v, const char *path, int depth, char *err, size_t errlen)
{
	if (depth > 64) {
		snprintf(err, errlen, "%s: nested too deeply", path);
		return -1;
	}
	json_t *t = json_object_get(schema, "type");
	if (json_is_string(t) && !type_matches(json_string_value(t), v)) {
		snprintf(err, errlen, "%s: must be %s %s, not %s", path,
			 strchr("aeiou", json_string_value(t)[0]) ? "an" : "a",
			 json_string_value(t), type_name(v));
		return -1;
	}
	if (json_is_array(t)) {
		size_t i;
		json_t *x;
		bool ok = false;
		json_array_foreach(t, i, x) ok = ok || type_matches(json_string_value(x), v);
		if (!ok) {
			char *types = json_dumps(t, JSON_COMPACT);
			snprintf(err, errlen, "%s: must be one of the types %s, not %s", path,
				 types ? types : "?", type_name(v));
			free(types);
			return -1;
		}
	}
	json_t *any = json_object_get(schema, "anyOf");
	if (json_is_array(any)) {
		size_t i;
		json_t *x;
		bool ok = false;
		char sub[256] = "an empty anyOf";
		json_array_foreach(any, i, x)
		{
			if (check(x, v, path, depth + 1, sub, sizeof(sub)) == 0) {
				ok = true;
				break;
			}
		}
		if (!ok) {
			snprintf(err, errlen, "%s: matches none of the allowed forms (%s)", path,
				 sub);
			return -1;
		}
	}
	json_t *ml = json_object_get(schema, "maxLength");
	if (json_is_string(v) && json_is_integer(ml) &&
	    utf8_chars(json_string_value(v), json_string_length(v)) >
		(size_t)json_integer_value(ml)) {
		snprintf(err, errlen, "%s: longer than %lld characters", path,
			 (long long)json_integer_value(ml));
		return -1;
	}
	json_t *mn = json_object_get(schema, "minimum"), *mx = json_object_get(schema, "maximum");
	if (json_is_number(v) && json_is_number(mn) &&
	    json_number_value(v) < json_number_value(mn)) {
		snprintf(err, errlen, "%s: must be at least %g", path, json_number_value(mn));
		return -1;
	}
	if (json_is_number(v) && json_is_number(mx)) {
		bool over = json_is_integer(v) && json_is_integer(mx)
				? json_integer_value(v) > json_integer_value(mx)
				: json_number_value(v) > json_number_value(mx);
		if (over) {
			snprintf(err, errlen, "%s: must be at most %lld", path,
				 json_is_integer(mx) ? (long long)json_integer_value(mx)
						     : (long long)json_number_value(mx));
			return -1;
		}
	}
	char sub[512];
	if (json_is_array(v)) {
		json_t *items = json_object_get(schema, "items");
		size_t i;
		json_t *x;
		if (json_is_object(items))
			json_array_foreach(v, i, x)
			{
				snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
				if (check(items, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			}
	}
	if (json_is_object(v)) {
		json_t *props = json_object_get(schema, "properties");
		json_t *addl = json_object_get(schema, "additionalProperties");
		json_t *req = json_object_get(schema, "required");
		size_t i;
		json_t *x;
		json_array_foreach(req, i, x)
		{
			const char *k = json_string_value(x);
			if (k && !json_object_get(v, k)) {
				snprintf(err, errlen, "%s%s'%s' is required", path,
					 *path ? ": " : "", k);
				return -1;
			}
		}
		const char *k;
		json_object_foreach(v, k, x)
		{
			json_t *ps = json_object_get(props, k);
			snprintf(sub, sizeof(sub), "%s%s%.200s", path, *path ? "." : "", k);
			if (ps) {
				if (check(ps, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			} else if (json_is_false(addl)) {
				snprintf(err, errlen, "%s%sunknown argument '%.200s'", path,
					 *path ? ": " : "", k);
				return -1;
			} else if (json_is_object(addl)) {
				if (check(addl, x, sub, depth + 1, err, errlen) < 0)
					return -1;
			}
		}
	}
	return 0;
}

int govex__tool_schema_check(json_t *schema, json_t *value, const char *path, char *err,
			     size_t errlen)
{
	return check(schema, value, path, 0, err, errlen) < 0 ? 1 : 0;
}

