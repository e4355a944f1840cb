/* SPDX-License-Identifier: MIT */
/*
 * JSON values the library writes and checks: the canonical encoder with shortest
 * round-trip reals (jsonout.c) and the JSON Schema validator of call arguments
 * (schema.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * Compact JSON text of any value with reals in their shortest round-trip form, as
 * Python's repr writes them.  flags: JSON_SORT_KEYS (sorted by bytes, as jansson does)
 * and JSON_ENSURE_ASCII are honoured; the text is always compact and any value may be
 * at the top.  For a value without reals the text is byte for byte json_dumps(v,
 * flags | JSON_COMPACT | JSON_ENCODE_ANY).  NULL when out of memory.  Caller frees.
 */
char *govex__json_dumps(const json_t *v, size_t flags);

/* The shortest round-trip text of a finite double, as Python's repr(float); out has at
 * least 32 bytes.  -GOVEX_EINVAL for NaN and infinities. */
int govex__json_real_repr(double d, char *out, size_t outlen);

/* true when v has at most max_nodes nodes (a node met twice through sharing counts
 * twice) and at most max_depth nested containers */
bool govex__json_within(const json_t *v, size_t max_nodes, int max_depth);

/* The node budget and depth of values decoded from frames: the contract's node budget;
 * the depth the worker allows today (worker.py RESULT_DEPTH_MAX), which jansson's parser
 * (2048) also holds. */
#define GOVEX_VALUE_NODES_MAX 1000000
#define GOVEX_VALUE_DEPTH_MAX 1001

/*
 * Checks value against a JSON Schema (the subset govex's inspection emits: type,
 * enum, const, anyOf/oneOf, items, prefixItems, minItems/maxItems, properties,
 * required, additionalProperties, minLength/maxLength, minimum/maximum and their
 * exclusive forms).  path names the value in messages ("args", "args.n").  Returns 0
 * when valid, 1 when invalid with a message in err ("args.n: expected integer, got
 * number 1.5"), -ENOMEM.  A schema keyword it does not know is ignored; a schema that
 * is not an object or a boolean accepts everything.
 */
int govex__schema_check(json_t *schema, json_t *value, const char *path, char *err, size_t errlen);

/* A call's arguments (a JSON object) against the "input_schema" of its function's
 * inspection entry fn; 0 when fn has none.  As govex__schema_check, path "args". */
int govex__schema_check_args(json_t *fn, json_t *args, char *err, size_t errlen);

/* env (NAME=VALUE strings, NULL-terminated) with the platform defaults added (a new
 * vector the caller frees with govex__strv_free): HOME=workdir unless HOME is set;
 * LANG=C.UTF-8 and LC_ALL=C.UTF-8 unless LANG or an LC_* variable is set.  Not in the
 * plan (platform.c says why). */
int govex__env_platform(char *const *env, const char *workdir, char ***ret);
