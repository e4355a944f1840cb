/* SPDX-License-Identifier: MIT */
/* Call mode: a call's arguments checked against the planned signature before any user
 * code runs. */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>

#include "call.h"
#include "runtime.h"
#include "values.h"

/* Annotations that do not admit None (explicit null is then invalid input). */
static bool annotation_rejects_null(const char *a)
{
	if (!a)
		return false;
	char t[256];
	size_t n = 0;
	for (const char *c = a; *c && n < sizeof(t) - 1; c++)
		if (!isspace((unsigned char)*c))
			t[n++] = *c;
	t[n] = '\0';
	if (strstr(t, "None") || strstr(t, "Optional") || strstr(t, "Any"))
		return false;
	static const char *const plain[] = {"int", "float", "str", "bool", "list", "dict"};
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++)
		if (strcmp(t, plain[i]) == 0)
			return true;
	static const char *const generic[] = {"list[", "dict[",	       "List[",
					      "Dict[", "typing.List[", "typing.Dict["};
	for (size_t i = 0; i < ARRAY_SIZE(generic); i++)
		if (strncmp(t, generic[i], strlen(generic[i])) == 0 && t[n - 1] == ']')
			return true;
	return false;
}

/* Checks the arguments against the planned signature before any user code runs. */
govex_result *govex__call_check_args(govex_runtime *rt, json_t *fn, json_t *args,
				     uint64_t input_max, size_t *ret_canon_len)
{
	size_t len = 0;
	if (!json_is_object(args))
		return govex__call_invalid(rt, "invalid_arguments", "args: %s",
					   "must be a JSON object");
	/* canonical bytes of the arguments (reals in their shortest form, as the worker
	 * counts them) */
	char *js = govex__json_dumps(args, JSON_SORT_KEYS);
	if (!js)
		return NULL;
	len = strlen(js) + 1;
	free(js);
	*ret_canon_len = len;
	if (len > input_max) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (r)
			govex__result_diag(r, "input_too_large", NULL,
					   "args: %zu bytes exceeds limits.call_input_bytes (%llu)",
					   len, (unsigned long long)input_max);
		return r;
	}
	json_t *params = json_object_get(fn, "parameters");
	const char *k;
	json_t *v;
	json_object_foreach(args, k, v)
	{
		bool known = false;
		size_t i;
		json_t *p;
		json_array_foreach(params, i, p)
		{
			if (strcmp(json_string_value(json_object_get(p, "name")), k) == 0) {
				known = true;
				if (json_is_null(v) && annotation_rejects_null(json_string_value(
							   json_object_get(p, "annotation"))))
					return govex__call_invalid(
					    rt, "null_not_allowed",
					    "args.%s: null is not allowed by the "
					    "parameter's annotation",
					    k);
			}
		}
		if (!known)
			return govex__call_invalid(rt, "unknown_argument",
						   "args.%s: no parameter of that name", k);
	}
	size_t i;
	json_t *p;
	json_array_foreach(params, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		if (!json_is_true(json_object_get(p, "has_default")) &&
		    !json_object_get(args, name))
			return govex__call_invalid(rt, "missing_argument",
						   "args.%s: required and missing", name);
	}
	/* the values against the annotations' JSON Schema (schema.c, shared with MCP) */
	char why[300];
	if (govex__schema_check_args(fn, args, why, sizeof(why)) != 0)
		return govex__call_invalid(rt, "invalid_argument", "%s", why);
	return NULL;
}
