/* SPDX-License-Identifier: MIT */
/*
 * The tool catalogue: run_python_snippet, whose bounds come from the policy, and one tool
 * per eligible function of each --module, whose input schema comes from the module's
 * static inspection (annotations as text; the module is never imported).  The
 * arguments of a call are checked against these schemas in arguments.c.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"

#define SNIPPET_TOOL "run_python_snippet"
#define MODULE_MAX   ((size_t)16 << 20)
#define DOC_MAX	     4000

/* ---------------------------------------------------------------- policy bounds */

static uint64_t limit_of(json_t *limits, const char *name, uint64_t dflt)
{
	json_t *v = json_object_get(limits, name);
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	return dflt;
}

int mcp_bounds_from_policy(const govex_policy *policy, struct mcp_bounds *ret)
{
	size_t len;
	const char *canon = govex_policy_canonical(policy, &len);
	json_error_t e;
	json_t *doc = canon ? json_loadb(canon, len, 0, &e) : NULL;
	json_t *limits = json_object_get(doc, "limits");
	if (!json_is_object(limits)) {
		json_decref(doc);
		return -GOVEX_EPOLICY;
	}
	ret->code_bytes = limit_of(limits, "code_bytes", 64u << 10);
	ret->stdin_bytes = limit_of(limits, "stdin_bytes", 1u << 20);
	ret->wall_ms = limit_of(limits, "wall_ms", 5000);
	ret->call_input_bytes = limit_of(limits, "call_input_bytes", 1u << 20);
	ret->call_output_bytes = limit_of(limits, "call_output_bytes", 1u << 20);
	json_decref(doc);
	return 0;
}

/* ---------------------------------------------------------------- result schema */

/* Every status, every termination: a refused or failed run conforms too.  No "$schema":
 * the keywords used mean the same in draft-07 and 2020-12, and clients validating with
 * either accept it. */
static const char result_schema_text[] =
    "{\"type\":\"object\","
    "\"description\":\"The govex.result/v1 document of the run.\","
    "\"required\":[\"version\",\"status\",\"termination\",\"exit_code\",\"signal\",\"stdout\","
    "\"stderr\",\"stdout_bytes\",\"stderr_bytes\",\"stdout_truncated\",\"stderr_truncated\","
    "\"value\",\"diagnostics\",\"usage\",\"backend\",\"policy_digest\",\"plan_digest\"],"
    "\"properties\":{"
    "\"version\":{\"type\":\"string\",\"enum\":[\"govex.result/v1\"]},"
    "\"status\":{\"type\":\"string\",\"enum\":[\"success\",\"execution_failed\",\"timeout\","
    "\"cancelled\",\"resource_limit\",\"output_limit\",\"invalid_input\",\"policy_refused\","
    "\"worker_failed\",\"binding_failed\",\"result_invalid\",\"source_mismatch\"]},"
    "\"termination\":{\"type\":\"string\",\"enum\":[\"none\",\"exited\",\"signaled\","
    "\"timeout\",\"cancelled\",\"memory_limit\",\"cpu_limit\",\"output_limit\",\"refused\","
    "\"launch_failed\"]},"
    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
    "\"signal\":{\"type\":[\"integer\",\"null\"]},"
    "\"stdout\":{\"type\":\"string\"},"
    "\"stderr\":{\"type\":\"string\"},"
    "\"stdout_bytes\":{\"type\":\"integer\",\"minimum\":0},"
    "\"stderr_bytes\":{\"type\":\"integer\",\"minimum\":0},"
    "\"stdout_truncated\":{\"type\":\"boolean\"},"
    "\"stderr_truncated\":{\"type\":\"boolean\"},"
    "\"value\":{\"description\":\"call mode: the function's return value; "
    "run_python_snippet: the value of a final expression statement (finite JSON), "
    "else null\"},"
    "\"diagnostics\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"code\",\"message\"],"
    "\"properties\":{\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}}}},"
    "\"usage\":{\"type\":[\"object\",\"null\"],\"properties\":{"
    "\"wall_ms\":{\"type\":[\"integer\",\"null\"]},\"cpu_ms\":{\"type\":[\"integer\",\"null\"]},"
    "\"max_rss_bytes\":{\"type\":[\"integer\",\"null\"]}}},"
    "\"backend\":{\"type\":[\"object\",\"null\"],\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"version\":{\"type\":[\"string\",\"null\"]},"
    "\"controls\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
    "\"policy_digest\":{\"type\":[\"string\",\"null\"],\"pattern\":\"^sha256:[0-9a-f]{64}$\"},"
    "\"plan_digest\":{\"type\":[\"string\",\"null\"],\"pattern\":\"^sha256:[0-9a-f]{64}$\"}"
    "}}";

json_t *mcp_result_schema(void)
{
	json_error_t e;
	return json_loads(result_schema_text, JSON_REJECT_DUPLICATES, &e);
}

/* ---------------------------------------------------------------- catalogue */

static struct mcp_tool *new_tool(struct mcp_catalog *cat)
{
	struct mcp_tool *t = realloc(cat->tools, (cat->n_tools + 1) * sizeof(*t));
	if (!t)
		return NULL;
	cat->tools = t;
	t = &cat->tools[cat->n_tools];
	memset(t, 0, sizeof(*t));
	return t;
}

static const char *onoff(json_t *policy, const char *field)
{
	const char *v = json_string_value(json_object_get(policy, field));
	return v && strcmp(v, "allow") == 0 ? "allowed" : "denied";
}

int mcp_catalog_add_snippet(struct mcp_catalog *cat)
{
	const struct mcp_bounds *b = &cat->bounds;
	char desc[2048];
	snprintf(desc, sizeof(desc),
		 "Run a Python 3 snippet in a fresh process under an enforced policy and get "
		 "back its stdout, stderr, exit status and, REPL-style, the value of its final "
		 "expression statement (when that value is JSON: numbers, strings, booleans, "
		 "null, lists, dicts with string keys). Each call starts from nothing: no "
		 "variables, imports or files survive between calls, so put everything a "
		 "computation needs into one snippet. Print what you want to read. Limits: "
		 "%llu ms of wall time (timeout_ms may only lower it), %llu bytes of code; "
		 "output beyond the policy's bound per stream is cut and the result says so. "
		 "Optional `inputs` (a JSON object) is available to the code as the read-only "
		 "global INPUTS. Optional `stdin` is the program's standard input. A failed "
		 "run (exception, non-zero exit, timeout, refusal by the policy) is reported "
		 "with isError and the full govex.result/v1 document as structured content.",
		 (unsigned long long)b->wall_ms, (unsigned long long)b->code_bytes);

	json_t *schema = json_pack(
	    "{s:s, s:{s:{s:s, s:I, s:s}, s:{s:s, s:I, s:s}, s:{s:s, s:i, s:I, s:s}, "
	    "s:{s:s, s:s}}, s:[s], s:b}",
	    "type", "object", "properties", "code", "type", "string", "maxLength",
	    (json_int_t)b->code_bytes, "description",
	    "Python 3 source code to run, as a whole program (not a function body).", "stdin",
	    "type", "string", "maxLength", (json_int_t)b->stdin_bytes, "description",
	    "Text given to the program on standard input; default empty.", "timeout_ms", "type",
	    "integer", "minimum", 1, "maximum", (json_int_t)b->wall_ms, "description",
	    "Wall-time limit in milliseconds; default and maximum: the policy's.", "inputs", "type",
	    "object", "description",
	    "JSON object exposed to the code as the read-only global INPUTS.", "required", "code",
	    "additionalProperties", 0);
	json_t *out = mcp_result_schema();
	if (!schema || !out) {
		json_decref(schema);
		json_decref(out);
		return -ENOMEM;
	}
	json_t *ip = json_object_get(json_object_get(schema, "properties"), "inputs");
	char idesc[200];
	snprintf(idesc, sizeof(idesc),
		 "JSON object exposed to the code as the read-only global INPUTS "
		 "(at most %llu bytes as compact JSON).",
		 (unsigned long long)b->call_input_bytes);
	json_object_set_new(ip, "description", json_string(idesc));

	struct mcp_tool *t = new_tool(cat);
	if (!t) {
		json_decref(schema);
		json_decref(out);
		return -ENOMEM;
	}
	t->name = strdup(SNIPPET_TOOL);
	t->kind = MCP_TOOL_SNIPPET;
	t->def = json_pack("{s:s, s:s, s:s, s:o, s:o}", "name", SNIPPET_TOOL, "title",
			   "Run Python snippet", "description", desc, "inputSchema", schema,
			   "outputSchema", out);
	if (!t->name || !t->def) {
		free(t->name);
		json_decref(t->def);
		return -ENOMEM;
	}
	t->input_schema = json_object_get(t->def, "inputSchema");
	cat->n_tools++;
	return 0;
}

/* Hints only (MCP: "not guaranteed"); they follow the policy, not the code. */
static json_t *annotations_for(const govex_policy *policy, const char *title)
{
	size_t len;
	const char *canon = govex_policy_canonical(policy, &len);
	json_error_t e;
	json_t *doc = json_loadb(canon, len, 0, &e);
	json_t *w = json_object_get(json_object_get(doc, "filesystem"), "write");
	bool writes = json_is_array(w) && json_array_size(w) > 0;
	bool net = strcmp(onoff(doc, "network"), "allowed") == 0;
	bool sub = strcmp(onoff(doc, "subprocess"), "allowed") == 0;
	json_t *a = json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", title, "readOnlyHint",
			      !writes && !net && !sub, "destructiveHint", writes || sub,
			      "idempotentHint", 0, "openWorldHint", net);
	json_decref(doc);
	return a;
}

void mcp_catalog_annotate(struct mcp_catalog *cat, const govex_policy *policy)
{
	for (size_t i = 0; i < cat->n_tools; i++) {
		struct mcp_tool *t = &cat->tools[i];
		const char *title = json_string_value(json_object_get(t->def, "title"));
		json_t *a = annotations_for(policy, title ? title : t->name);
		if (a)
			json_object_set_new(t->def, "annotations", a);
	}
}

/* ---------------------------------------------------------------- annotations -> schema */

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

static bool is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* s[0..n) starts with NAME "[" and ends with "]": sets the inner text. */
static bool generic(const char *s, size_t n, const char *name, const char **in, size_t *inn)
{
	size_t k = strlen(name);
	const char *names[3] = {name, NULL, NULL};
	char t1[64], t2[64];
	snprintf(t1, sizeof(t1), "typing.%s", name);
	snprintf(t2, sizeof(t2), "builtins.%s", name);
	names[1] = t1;
	names[2] = t2;
	for (int i = 0; i < 3; i++) {
		k = strlen(names[i]);
		if (n > k + 1 && memcmp(s, names[i], k) == 0 && s[k] == '[' && s[n - 1] == ']') {
			*in = s + k + 1;
			*inn = n - k - 2;
			return true;
		}
	}
	return false;
}

static bool bare(const char *s, size_t n, const char *name)
{
	char t[64];
	if (is(s, n, name))
		return true;
	snprintf(t, sizeof(t), "typing.%s", name);
	if (is(s, n, t))
		return true;
	snprintf(t, sizeof(t), "builtins.%s", name);
	return is(s, n, t);
}

/* Splits at top-level SEP (outside brackets); returns the number of parts (<= max). */
static size_t split_top(const char *s, size_t n, char sep, const char **parts, size_t *lens,
			size_t max)
{
	size_t np = 0, depth = 0, start = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? s[i] : sep;
		if (c == '[' || c == '(')
			depth++;
		else if ((c == ']' || c == ')') && depth)
			depth--;
		else if (c == sep && depth == 0) {
			if (np == max)
				return max + 1;
			parts[np] = s + start;
			lens[np] = i - start;
			np++;
			start = i + 1;
		}
	}
	return np;
}

static json_t *schema_of(const char *s, size_t n, int depth);

/* A union of parts: {"type": [...]} when every part is a plain type, else anyOf. */
static json_t *union_of(const char **parts, size_t *lens, size_t np, int depth)
{
	json_t *any = json_array(), *types = json_array();
	bool plain = true, unknown = false;
	for (size_t i = 0; i < np; i++) {
		json_t *p = schema_of(parts[i], lens[i], depth + 1);
		if (!p)
			continue;
		if (json_object_size(p) == 0)
			unknown = true;
		json_t *t = json_object_get(p, "type");
		if (json_object_size(p) == 1 && json_is_string(t))
			json_array_append(types, t);
		else
			plain = false;
		json_array_append_new(any, p);
	}
	json_t *r;
	if (unknown)
		r = json_object();
	else if (plain)
		r = json_pack("{s:O}", "type", types);
	else
		r = json_pack("{s:O}", "anyOf", any);
	json_decref(any);
	json_decref(types);
	return r;
}

/*
 * The JSON Schema for an annotation's text: int -> integer, float -> number, str, bool,
 * list[X] -> array (of X), dict[str, X] -> object (of X), Optional[X] / X | None /
 * Union[...] -> a union with null, Any or anything else -> {} (any JSON value).
 */
static json_t *schema_of(const char *s, size_t n, int depth)
{
	const char *in;
	size_t inn;
	trim(&s, &n);
	if (depth > 16 || n == 0)
		return json_object();
	if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0])
		return schema_of(s + 1, n - 2, depth + 1);
	const char *parts[16];
	size_t lens[16];
	size_t np = split_top(s, n, '|', parts, lens, 15);
	if (np > 15)
		return json_object();
	if (np > 1)
		return union_of(parts, lens, np, depth);
	if (generic(s, n, "Optional", &in, &inn)) {
		parts[0] = in;
		lens[0] = inn;
		parts[1] = "None";
		lens[1] = 4;
		return union_of(parts, lens, 2, depth);
	}
	if (generic(s, n, "Union", &in, &inn)) {
		np = split_top(in, inn, ',', parts, lens, 15);
		if (np > 15)
			return json_object();
		return union_of(parts, lens, np, depth);
	}
	if (bare(s, n, "int"))
		return json_pack("{s:s}", "type", "integer");
	if (bare(s, n, "float"))
		return json_pack("{s:s}", "type", "number");
	if (bare(s, n, "str"))
		return json_pack("{s:s}", "type", "string");
	if (bare(s, n, "bool"))
		return json_pack("{s:s}", "type", "boolean");
	if (is(s, n, "None") || is(s, n, "NoneType"))
		return json_pack("{s:s}", "type", "null");
	if (bare(s, n, "list") || bare(s, n, "List"))
		return json_pack("{s:s}", "type", "array");
	if (bare(s, n, "dict") || bare(s, n, "Dict"))
		return json_pack("{s:s}", "type", "object");
	if (generic(s, n, "list", &in, &inn) || generic(s, n, "List", &in, &inn)) {
		json_t *items = schema_of(in, inn, depth + 1);
		if (json_object_size(items) == 0) {
			json_decref(items);
			return json_pack("{s:s}", "type", "array");
		}
		return json_pack("{s:s, s:o}", "type", "array", "items", items);
	}
	if (generic(s, n, "dict", &in, &inn) || generic(s, n, "Dict", &in, &inn)) {
		np = split_top(in, inn, ',', parts, lens, 2);
		json_t *vals = np == 2 ? schema_of(parts[1], lens[1], depth + 1) : json_object();
		if (json_object_size(vals) == 0) {
			json_decref(vals);
			return json_pack("{s:s}", "type", "object");
		}
		return json_pack("{s:s, s:o}", "type", "object", "additionalProperties", vals);
	}
	return json_object();
}

/* ---------------------------------------------------------------- modules */

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISREG(st.st_mode) ? errno : EINVAL;
		close(fd);
		return -e;
	}
	size_t cap = 65536, len = 0;
	char *b = malloc(cap + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			if (cap > MODULE_MAX)
				break;
			char *nb = realloc(b, cap * 2 + 1);
			if (!nb) {
				free(b);
				close(fd);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(b);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (len > MODULE_MAX) {
		free(b);
		return -EFBIG;
	}
	b[len] = '\0';
	*ret = b;
	*ret_len = len;
	return 0;
}

int mcp_read_source(const char *path, char **ret, size_t *ret_len)
{
	return read_file(path, ret, ret_len);
}

/* The inspection document's fields, read tolerantly (govex.inspection/v1 names first). */
static json_t *get_any(json_t *o, const char *const *names)
{
	for (size_t i = 0; names[i]; i++) {
		json_t *v = json_object_get(o, names[i]);
		if (v)
			return v;
	}
	return NULL;
}

static bool function_eligible(json_t *f)
{
	json_t *e = get_any(f, (const char *const[]){"eligible", "eligibility", NULL});
	if (json_is_boolean(e))
		return json_is_true(e);
	if (json_is_string(e))
		return strcmp(json_string_value(e), "eligible") == 0;
	if (json_is_object(e)) {
		json_t *x = get_any(e, (const char *const[]){"eligible", "ok", NULL});
		if (json_is_boolean(x))
			return json_is_true(x);
		const char *st =
		    json_string_value(get_any(e, (const char *const[]){"status", NULL}));
		return st && strcmp(st, "eligible") == 0;
	}
	return false;
}

static bool param_has_default(json_t *p)
{
	json_t *d = get_any(p, (const char *const[]){"has_default", "default_present",
						     "defaults_present", "default", NULL});
	if (json_is_boolean(d))
		return json_is_true(d);
	return d != NULL && !json_is_null(d);
}

static bool valid_tool_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

static json_t *function_tool(json_t *f, const char *name, const char *modname,
			     const struct mcp_bounds *b)
{
	json_t *props = json_object(), *req = json_array();
	json_t *params = get_any(f, (const char *const[]){"parameters", "params", NULL});
	size_t i;
	json_t *p;
	json_array_foreach(params, i, p)
	{
		const char *pname = json_string_value(json_object_get(p, "name"));
		if (!pname)
			continue;
		const char *kind = json_string_value(json_object_get(p, "kind"));
		if (kind && (strstr(kind, "var_") || strstr(kind, "VAR_")))
			continue; /* an eligible function has none */
		const char *ann = json_string_value(
		    get_any(p, (const char *const[]){"annotation", "annotation_text", NULL}));
		json_t *s = ann ? schema_of(ann, strlen(ann), 0) : json_object();
		if (ann) {
			char d[300];
			snprintf(d, sizeof(d), "Python annotation: %.250s", ann);
			json_object_set_new(s, "description", json_string(d));
		}
		json_object_set_new(props, pname, s);
		if (!param_has_default(p))
			json_array_append_new(req, json_string(pname));
	}
	json_t *schema = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
				   "additionalProperties", 0);
	if (json_array_size(req))
		json_object_set_new(schema, "required", req);
	else
		json_decref(req);

	const char *doc =
	    json_string_value(get_any(f, (const char *const[]){"docstring", "doc", NULL}));
	bool is_async = json_is_true(get_any(f, (const char *const[]){"async", "is_async", NULL}));
	char *desc = NULL;
	char lim[200];
	snprintf(lim, sizeof(lim),
		 "\n\nRuns %s%s() from %s in a fresh worker under the server's policy (at most "
		 "%llu ms); its return value is the result's `value`.",
		 is_async ? "async " : "", name, modname, (unsigned long long)b->wall_ms);
	if (doc && *doc) {
		size_t dn = strlen(doc);
		if (asprintf(&desc, "%.*s%s%s", (int)(dn > DOC_MAX ? DOC_MAX : dn), doc,
			     dn > DOC_MAX ? " [...]" : "", lim) < 0)
			desc = NULL;
	} else if (asprintf(&desc, "Calls %s.%s.%s", modname, name, lim) < 0) {
		desc = NULL;
	}
	json_t *tool = json_pack("{s:s, s:s?, s:o, s:o}", "name", name, "description", desc,
				 "inputSchema", schema, "outputSchema", mcp_result_schema());
	free(desc);
	return tool;
}

int mcp_catalog_add_module(struct mcp_catalog *cat, govex_runtime *rt, const char *path, char *err,
			   size_t errlen)
{
	char *abs = realpath(path, NULL);
	if (!abs) {
		snprintf(err, errlen, "module '%s': %s", path, strerror(errno));
		return -1;
	}
	struct mcp_module *m = realloc(cat->modules, (cat->n_modules + 1) * sizeof(*m));
	if (!m) {
		free(abs);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cat->modules = m;
	m = &cat->modules[cat->n_modules];
	memset(m, 0, sizeof(*m));
	m->path = abs;
	size_t pl = strlen(abs);
	m->notebook = pl > 6 && strcmp(abs + pl - 6, ".ipynb") == 0;
	int r = read_file(abs, &m->data, &m->len);
	if (r < 0) {
		snprintf(err, errlen, "module '%s': %s", path, strerror(-r));
		free(abs);
		return -1;
	}
	cat->n_modules++;

	struct govex_source src = {
	    .data = m->data, .len = m->len, .path = m->path, .notebook = m->notebook};
	char *insp = NULL;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	r = govex_runtime_inspect(rt, &src, &insp, &res, &ge);
	if (r < 0) {
		snprintf(err, errlen, "module '%s': inspection failed: %s", path,
			 ge.message[0] ? ge.message : govex_strerror(r));
		return -1;
	}
	if (!insp) {
		snprintf(err, errlen, "module '%s': %s", path,
			 res ? govex_result_summary(res) : "inspection refused");
		govex_result_free(res);
		return -1;
	}
	json_error_t je;
	json_t *doc = json_loads(insp, 0, &je);
	free(insp);
	json_t *fns = get_any(doc, (const char *const[]){"functions", NULL});
	if (!json_is_array(fns)) {
		snprintf(err, errlen, "module '%s': inspection lists no functions", path);
		json_decref(doc);
		return -1;
	}
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	size_t i;
	json_t *f;
	int added = 0;
	json_array_foreach(fns, i, f)
	{
		const char *name = json_string_value(json_object_get(f, "name"));
		if (!name || name[0] == '_' || !function_eligible(f))
			continue;
		if (!valid_tool_name(name)) {
			mcp_log("module '%s': function '%s' skipped: not a valid tool name", path,
				name);
			continue;
		}
		struct mcp_tool *t = new_tool(cat);
		if (!t)
			break;
		t->def = function_tool(f, name, base, &cat->bounds);
		t->name = strdup(name);
		t->function = strdup(name);
		if (!t->def || !t->name || !t->function) {
			json_decref(t->def);
			free(t->name);
			free(t->function);
			json_decref(doc);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		t->kind = MCP_TOOL_FUNCTION;
		t->input_schema = json_object_get(t->def, "inputSchema");
		t->module = (const struct mcp_module *)(uintptr_t)(cat->n_modules - 1);
		cat->n_tools++;
		added++;
	}
	json_decref(doc);
	if (added == 0)
		mcp_log("module '%s': no eligible public function", path);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mcp_tool *)a)->name, ((const struct mcp_tool *)b)->name);
}

int mcp_catalog_finish(struct mcp_catalog *cat, char *err, size_t errlen)
{
	/* modules were stored as indices while the array could still move */
	for (size_t i = 0; i < cat->n_tools; i++)
		if (cat->tools[i].kind == MCP_TOOL_FUNCTION)
			cat->tools[i].module = &cat->modules[(uintptr_t)cat->tools[i].module];
	qsort(cat->tools, cat->n_tools, sizeof(*cat->tools), by_name);
	for (size_t i = 1; i < cat->n_tools; i++)
		if (strcmp(cat->tools[i - 1].name, cat->tools[i].name) == 0) {
			snprintf(err, errlen, "two tools named '%s' (from %s and %s)",
				 cat->tools[i].name,
				 cat->tools[i - 1].module ? cat->tools[i - 1].module->path
							  : "the server",
				 cat->tools[i].module ? cat->tools[i].module->path : "the server");
			return -1;
		}
	return 0;
}

void mcp_catalog_free(struct mcp_catalog *cat)
{
	for (size_t i = 0; i < cat->n_tools; i++) {
		free(cat->tools[i].name);
		free(cat->tools[i].function);
		json_decref(cat->tools[i].def);
	}
	free(cat->tools);
	for (size_t i = 0; i < cat->n_modules; i++) {
		free(cat->modules[i].path);
		free(cat->modules[i].data);
	}
	free(cat->modules);
	memset(cat, 0, sizeof(*cat));
}

const struct mcp_tool *mcp_catalog_find(const struct mcp_catalog *cat, const char *name)
{
	struct mcp_tool key = {.name = (char *)name};
	return bsearch(&key, cat->tools, cat->n_tools, sizeof(*cat->tools), by_name);
}
