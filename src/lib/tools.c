/* SPDX-License-Identifier: MIT */
/*
 * The tool catalogue: run_python_snippet, and one tool per eligible public function of
 * each module (its input schema from the module's static inspection; the module is never
 * imported).  Every description is derived from the effective policy: which Python,
 * what is allowed and denied, the limits, how inputs, files, stdin and the REPL value
 * work.  The facts come from the plan of an empty snippet, so they are what a run gets.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"

#define MODULE_MAX ((size_t)16 << 20)
#define DOC_MAX	   4000

/* ---------------------------------------------------------------- facts */

static uint64_t limit_of(json_t *limits, const char *name)
{
	json_t *v = json_object_get(limits, name);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

static bool allowed(json_t *doc, const char *field)
{
	const char *v = json_string_value(json_object_get(doc, field));
	return v && strcmp(v, "allow") == 0;
}

/* From a plan document (or, when planning was refused, the policy's canonical bytes). */
static void facts_from(struct govex__tool_facts *f, json_t *doc, bool is_plan)
{
	json_t *l = json_object_get(doc, "limits");
	f->code_bytes = limit_of(l, "code_bytes");
	f->stdin_bytes = limit_of(l, "stdin_bytes");
	f->wall_ms = limit_of(l, "wall_ms");
	f->cpu_ms = limit_of(l, "cpu_ms");
	f->memory_bytes = limit_of(l, "memory_bytes");
	f->stdout_bytes = limit_of(l, "stdout_bytes");
	f->stderr_bytes = limit_of(l, "stderr_bytes");
	f->call_input_bytes = limit_of(l, "call_input_bytes");
	f->call_output_bytes = limit_of(l, "call_output_bytes");
	f->network = allowed(doc, "network");
	f->net_allow = json_incref(json_object_get(json_object_get(doc, "network"), "allow"));
	f->subprocess = allowed(doc, "subprocess");
	json_t *fs = json_object_get(doc, "filesystem");
	f->read = json_incref(json_object_get(fs, "read"));
	f->write = json_incref(json_object_get(fs, "write"));
	snprintf(f->python, sizeof(f->python), "Python 3");
	if (is_plan) {
		json_t *in = json_object_get(doc, "interpreter");
		const char *v = json_string_value(json_object_get(in, "version"));
		const char *p = json_string_value(json_object_get(in, "path"));
		const char *base = p ? strrchr(p, '/') : NULL;
		if (v)
			snprintf(f->python, sizeof(f->python), "Python %.20s (%.60s)", v,
				 base ? base + 1 : "python3");
		size_t i;
		json_t *a;
		f->site = true;
		json_array_foreach(json_object_get(in, "args"), i, a)
		{
			if (json_is_string(a) && strcmp(json_string_value(a), "-S") == 0)
				f->site = false;
		}
		f->venv = json_object_get(in, "executable") != NULL;
		json_t *pk = json_object_get(doc, "packages");
		f->dists = json_incref(json_object_get(pk, "distributions"));
		f->preload = json_incref(json_object_get(pk, "preload"));
		const char *b =
		    json_string_value(json_object_get(json_object_get(doc, "backend"), "name"));
		snprintf(f->backend, sizeof(f->backend), "%s", b ? b : "");
	} else {
		f->site = json_is_true(json_object_get(json_object_get(doc, "python"), "site"));
	}
	/* the defaults of govex.policy/v1 where a document says nothing */
	if (!f->code_bytes)
		f->code_bytes = 64u << 10;
	if (!f->stdin_bytes)
		f->stdin_bytes = 1u << 20;
	if (!f->wall_ms)
		f->wall_ms = 5000;
	if (!f->call_input_bytes)
		f->call_input_bytes = 1u << 20;
	if (!f->call_output_bytes)
		f->call_output_bytes = 1u << 20;
}

static int facts_load(govex_runtime *rt, struct govex__tool_facts *f)
{
	/* a plan only (nothing runs); the audit log shows it as the toolset's */
	static const char *const md[] = {"govex.toolset=describe", NULL};
	struct govex_request req = {
	    .language = "python", .code = "pass", .code_len = 4, .metadata = md};
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	size_t len = 0;
	const char *text = NULL;
	bool is_plan = false;
	if (govex_runtime_plan(rt, &req, &plan, &res, &ge) == 0 && plan) {
		text = govex_plan_canonical(plan, &len);
		is_plan = true;
	} else {
		text = govex_policy_canonical(govex_runtime_policy(rt), &len);
	}
	json_error_t je;
	_cleanup_json_ json_t *doc = text ? json_loadb(text, len, 0, &je) : NULL;
	govex_plan_free(plan);
	govex_result_free(res);
	if (!doc)
		return -ENOMEM;
	facts_from(f, doc, is_plan);
	f->sanitized = govex_runtime_policy(rt)->sanitized;
	return 0;
}

/* ---------------------------------------------------------------- descriptions */

static void put_bytes(FILE *o, uint64_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		fprintf(o, "%llu MiB", (unsigned long long)(n >> 20));
	else if (n >= 1024 && n % 1024 == 0)
		fprintf(o, "%llu KiB", (unsigned long long)(n >> 10));
	else
		fprintf(o, "%llu bytes", (unsigned long long)n);
}

static void put_paths(FILE *o, json_t *paths)
{
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p)
	{
		if (i == 6) {
			fprintf(o, " and %zu more", json_array_size(paths) - i);
			break;
		}
		fprintf(o, "%s%s", i ? ", " : "", json_string_value(p));
	}
}

/* The installed distributions, the common data stack's first, at most 24 named. */
static void put_dists(FILE *o, json_t *dists)
{
	static const char *const first[] = {"numpy",	    "pandas", "matplotlib", "scipy",
					    "scikit-learn", "polars", "pyarrow",    "sympy",
					    "requests",	    "pillow", "seaborn",    "statsmodels"};
	size_t n = json_array_size(dists), shown = 0, i;
	json_t *d;
	fprintf(o, "%zu distributions installed", n);
	for (size_t k = 0; k <= ARRAY_SIZE(first); k++)
		json_array_foreach(dists, i, d)
		{
			const char *s = json_string_value(d);
			size_t nl = s ? strcspn(s, "=") : 0;
			bool known = false;
			for (size_t j = 0; j < ARRAY_SIZE(first) && s; j++)
				known |=
				    strlen(first[j]) == nl && strncasecmp(s, first[j], nl) == 0;
			bool now = k < ARRAY_SIZE(first) ? s && strlen(first[k]) == nl &&
							       strncasecmp(s, first[k], nl) == 0
							 : s && !known;
			if (!now || shown >= 24)
				continue;
			fprintf(o, "%s%.*s %s", shown++ ? ", " : " (", (int)nl, s, s + nl + 2);
		}
	if (shown)
		fprintf(o, "%s)", shown < n ? ", ..." : "");
}

/* "Python ...; network ...; ..." : what the code can and cannot do, and its limits. */
static void put_policy(FILE *o, const struct govex__tool_facts *f)
{
	fprintf(o, "Environment: %s, ", f->python);
	if (f->site && f->dists) {
		fprintf(o, "%s: ", f->venv ? "a virtual environment" : "with its site-packages");
		put_dists(o, f->dists);
		if (json_array_size(f->preload)) {
			fputs("; already imported in each run: ", o);
			put_paths(o, f->preload);
		}
		fputs(". ", o);
	} else {
		fputs(f->site ? "with the interpreter's site-packages. "
			      : "only the standard library (no third-party packages). ",
		      o);
	}
	if (f->net_allow) {
		fputs("Network access only to ", o);
		if (json_array_size(f->net_allow))
			put_paths(o, f->net_allow);
		else
			fputs("nothing (an empty allowlist)", o);
		fprintf(o,
			", through the HTTP proxy in HTTP_PROXY/HTTPS_PROXY (other "
			"destinations get 403; no DNS inside); starting subprocesses is %s. ",
			f->subprocess ? "allowed" : "DENIED");
	} else {
		fprintf(o, "Network access is %s; starting subprocesses is %s. ",
			f->network ? "allowed" : "DENIED by the sandbox",
			f->subprocess ? "allowed" : "DENIED");
	}
	if (json_array_size(f->read)) {
		fputs("Host files readable: ", o);
		put_paths(o, f->read);
		fputs(". ", o);
	} else {
		fputs("Host files are not visible (apart from the interpreter's own). ", o);
	}
	if (json_array_size(f->write)) {
		fputs("Writable: the working directory and ", o);
		put_paths(o, f->write);
		fputs(". ", o);
	} else {
		fputs("Writes go only to a fresh, empty working directory that is removed "
		      "afterwards. ",
		      o);
	}
	fprintf(o, "Limits: %llu ms of wall time", (unsigned long long)f->wall_ms);
	if (f->cpu_ms)
		fprintf(o, ", %llu ms of CPU", (unsigned long long)f->cpu_ms);
	if (f->memory_bytes) {
		fputs(", ", o);
		put_bytes(o, f->memory_bytes);
		fputs(" of memory", o);
	}
	fputs(", ", o);
	put_bytes(o, f->stdout_bytes);
	fputs(" of stdout and ", o);
	put_bytes(o, f->stderr_bytes);
	fputs(" of stderr kept (the rest is cut and the result says so). A denial by the "
	      "policy is reported as such (not as a transient failure): do not retry it. ",
	      o);
}

static char *snippet_description(const struct govex__tool_facts *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&buf, &len);
	if (!o)
		return NULL;
	fputs("Run Python code in a fresh, isolated process and get back what it printed "
	      "(stdout and stderr, separately), its exit status and, REPL-style, the value of "
	      "its last expression statement when that value is JSON (numbers, strings, "
	      "booleans, null, lists, dicts with string keys). Each call starts from nothing: "
	      "no variables, imports or files survive between calls, so put everything a "
	      "computation needs into one snippet. Top-level `await` works. ",
	      o);
	put_policy(o, f);
	fprintf(o, "At most ");
	put_bytes(o, f->code_bytes);
	fputs(" of code; `timeout_ms` may only lower the time limit. Optional `inputs` (a "
	      "JSON object) is the read-only global INPUTS. Optional `stdin` is the program's "
	      "standard input. Optional `files` ({name, text} or {name, base64}) are placed "
	      "read-only in the working directory; files the code writes into the directory "
	      "named by the environment variable GOVEX_OUTPUT_DIR come back (images as "
	      "images). A failed run (an exception with its traceback, a non-zero exit, a "
	      "timeout, a refusal or denial by the policy) comes back with isError and a "
	      "readable summary; the full govex.result/v1 document is the structured "
	      "content.",
	      o);
	if (fclose(o) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *function_description(const struct govex__tool_facts *f, json_t *fn, const char *name,
				  const char *modname)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&buf, &len);
	if (!o)
		return NULL;
	const char *doc = json_string_value(json_object_get(fn, "docstring"));
	bool is_async = json_is_true(json_object_get(fn, "async"));
	if (doc && *doc) {
		size_t dn = strlen(doc);
		fprintf(o, "%.*s%s\n\n", (int)(dn > DOC_MAX ? DOC_MAX : dn), doc,
			dn > DOC_MAX ? " [...]" : "");
	}
	if (f->sanitized)
		fprintf(o,
			"Calls %s%s() from %s in a fresh worker; its return value is the "
			"result's `value`. What it prints is discarded and an exception comes "
			"back with isError and its type name only, no message or traceback (the "
			"policy's results.disclosure is sanitized). ",
			is_async ? "async " : "", name, modname);
	else
		fprintf(o,
			"Calls %s%s() from %s in a fresh worker; its return value is the "
			"result's `value`, what it prints is the result's stdout and stderr, and "
			"an exception comes back with isError, its type, message and traceback. ",
			is_async ? "async " : "", name, modname);
	put_policy(o, f);
	fputs("Optional `files` ({name, text} or {name, base64}) are placed read-only in the "
	      "working directory.",
	      o);
	if (fclose(o) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---------------------------------------------------------------- schemas */

static json_t *files_schema(void)
{
	return json_pack(
	    "{s:s, s:s, s:{s:s, s:[s], s:b, s:{s:{s:s, s:s, s:i, s:i}, s:{s:s}, s:{s:s}}}}", "type",
	    "array", "description",
	    "Files placed read-only in the working directory: {name, text} or {name, base64}.",
	    "items", "type", "object", "required", "name", "additionalProperties", 0, "properties",
	    "name", "type", "string", "pattern", "^[A-Za-z0-9_-][A-Za-z0-9._-]*$", "minLength", 1,
	    "maxLength", 128, "text", "type", "string", "base64", "type", "string");
}

static json_t *snippet_input_schema(const struct govex__tool_facts *f)
{
	char idesc[200];
	snprintf(idesc, sizeof(idesc),
		 "JSON object exposed to the code as the read-only global INPUTS (at most %llu "
		 "bytes as compact JSON).",
		 (unsigned long long)f->call_input_bytes);
	return json_pack(
	    "{s:s, s:{s:{s:s, s:I, s:s}, s:{s:s, s:I, s:s}, s:{s:s, s:i, s:I, s:s}, "
	    "s:{s:s, s:s}, s:o}, s:[s], s:b}",
	    "type", "object", "properties", "code", "type", "string", "maxLength",
	    (json_int_t)f->code_bytes, "description",
	    "Python 3 source code to run, as a whole program (not a function body).", "stdin",
	    "type", "string", "maxLength", (json_int_t)f->stdin_bytes, "description",
	    "Text given to the program on standard input; default empty.", "timeout_ms", "type",
	    "integer", "minimum", 1, "maximum", (json_int_t)f->wall_ms, "description",
	    "Wall-time limit in milliseconds; default and maximum: the policy's.", "inputs", "type",
	    "object", "description", idesc, "files", files_schema(), "required", "code",
	    "additionalProperties", 0);
}

/* A parameter's JSON Schema: the inspection's (from the annotation's ast; any JSON when
 * it has none).  New reference. */
static json_t *param_schema(json_t *param)
{
	json_t *given = json_object_get(param, "schema");
	return json_is_object(given) ? json_deep_copy(given) : json_object();
}

static json_t *function_input_schema(json_t *fn, bool *ret_own_files)
{
	json_t *given = json_object_get(fn, "input_schema");
	json_t *schema;
	*ret_own_files = false;
	if (json_is_object(given)) {
		schema = json_deep_copy(given);
	} else {
		json_t *props = json_object(), *req = json_array();
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(fn, "parameters"), i, p)
		{
			const char *pname = json_string_value(json_object_get(p, "name"));
			if (!pname)
				continue;
			json_object_set_new(props, pname, param_schema(p));
			if (!json_is_true(json_object_get(p, "has_default")))
				json_array_append_new(req, json_string(pname));
		}
		schema = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
				   "additionalProperties", 0);
		if (json_array_size(req))
			json_object_set_new(schema, "required", req);
		else
			json_decref(req);
	}
	json_t *props = json_object_get(schema, "properties");
	if (!json_is_object(props))
		return schema;
	if (json_object_get(props, "files"))
		*ret_own_files = true; /* the function's own parameter wins */
	else
		json_object_set_new(props, "files", files_schema());
	return schema;
}

static json_t *output_schema(json_t *fn)
{
	json_t *s = govex__tool_result_schema();
	json_t *out = json_object_get(fn, "output_schema");
	if (s && json_is_object(out) && json_object_size(out) > 0) {
		json_t *v = json_pack("{s:[O,{s:s}]}", "anyOf", out, "type", "null");
		json_object_set_new(json_object_get(s, "properties"), "value", v);
	}
	return s;
}

/* Hints only (MCP: "not guaranteed"); they follow the policy, not the code. */
static json_t *annotations(const struct govex__tool_facts *f, const char *title)
{
	bool writes = json_array_size(f->write) > 0;
	return json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", title, "readOnlyHint",
			 !writes && !f->network && !json_array_size(f->net_allow) && !f->subprocess,
			 "destructiveHint", writes || f->subprocess, "idempotentHint", 0,
			 "openWorldHint", f->network || json_array_size(f->net_allow) > 0);
}

/* ---------------------------------------------------------------- the catalogue */

static struct govex__tool *new_tool(govex_toolset *ts)
{
	struct govex__tool *t = realloc(ts->tools, (ts->n_tools + 1) * sizeof(*t));
	if (!t)
		return NULL;
	ts->tools = t;
	t = &ts->tools[ts->n_tools];
	memset(t, 0, sizeof(*t));
	return t;
}

/* The tool new_tool() made, its name and definition set (either may be NULL: out of
 * memory), counted in the catalogue; -ENOMEM leaves the catalogue as it was. */
static int tool_added(govex_toolset *ts, struct govex__tool *t)
{
	if (!t->name || !t->def) {
		free(t->name);
		json_decref(t->def);
		return -ENOMEM;
	}
	t->input_schema = json_object_get(t->def, "inputSchema");
	ts->n_tools++;
	return 0;
}

static int add_snippet(govex_toolset *ts)
{
	_cleanup_free_ char *desc = snippet_description(&ts->facts);
	struct govex__tool *t = new_tool(ts);
	if (!t || !desc)
		return -ENOMEM;
	t->name = strdup(GOVEX__SNIPPET_TOOL);
	t->snippet = true;
	t->def =
	    json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "name", GOVEX__SNIPPET_TOOL, "title",
		      "Run Python snippet", "description", desc, "inputSchema",
		      snippet_input_schema(&ts->facts), "outputSchema", govex__tool_result_schema(),
		      "annotations", annotations(&ts->facts, "Run Python snippet"));
	return tool_added(ts, t);
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

static bool eligible(json_t *f)
{
	json_t *e = json_object_get(f, "eligible");
	if (json_is_boolean(e))
		return json_is_true(e);
	const char *st = json_string_value(json_object_get(e, "status"));
	if (!st)
		st = json_string_value(e);
	return st && strcmp(st, "eligible") == 0;
}

static int add_function(govex_toolset *ts, json_t *f, const char *name, const char *base)
{
	_cleanup_free_ char *desc = function_description(&ts->facts, f, name, base);
	struct govex__tool *t = new_tool(ts);
	if (!t || !desc)
		return -ENOMEM;
	t->name = strdup(name);
	t->module = ts->n_modules - 1;
	json_t *schema = function_input_schema(f, &t->own_files);
	t->def = json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", name, "description", desc,
			   "inputSchema", schema, "outputSchema", output_schema(f), "annotations",
			   annotations(&ts->facts, name));
	return tool_added(ts, t);
}

static int read_module(govex_toolset *ts, const char *path, struct govex_error *err)
{
	_cleanup_free_ char *abs = realpath(path, NULL);
	if (!abs)
		return govex__err(err, errno, errno, "module '%s': %s", path, strerror(errno));
	struct govex__tool_module *m =
	    realloc(ts->modules, (ts->n_modules + 1) * sizeof(*ts->modules));
	if (!m)
		return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	ts->modules = m;
	m = &ts->modules[ts->n_modules];
	memset(m, 0, sizeof(*m));
	int r = govex__read_file(abs, MODULE_MAX, &m->data, &m->len, err);
	if (r < 0)
		return r;
	size_t pl = strlen(abs);
	m->notebook = pl > 6 && strcmp(abs + pl - 6, ".ipynb") == 0;
	m->path = TAKE_PTR(abs);
	ts->n_modules++;
	return 0;
}

static int add_module(govex_toolset *ts, const char *path, struct govex_error *err)
{
	int r = read_module(ts, path, err);
	if (r < 0)
		return r;
	const struct govex__tool_module *m = &ts->modules[ts->n_modules - 1];
	struct govex_source src = {
	    .data = m->data, .len = m->len, .path = m->path, .notebook = m->notebook};
	_cleanup_free_ char *insp = NULL;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	r = govex_runtime_inspect(ts->rt, &src, &insp, &res, &ge);
	if (r < 0)
		return govex__err(err, -r, ge.sys_errno, "module '%s': inspection failed: %s", path,
				  ge.message[0] ? ge.message : govex_strerror(r));
	if (!insp) {
		r = govex__err(err, GOVEX_EINVAL, 0, "module '%s': %s", path,
			       res ? govex_result_summary(res) : "inspection refused");
		govex_result_free(res);
		return r;
	}
	json_error_t je;
	_cleanup_json_ json_t *doc = json_loads(insp, 0, &je);
	json_t *fns = json_object_get(doc, "functions");
	if (!json_is_array(fns))
		return govex__err(err, GOVEX_EINVAL, 0,
				  "module '%s': the inspection lists no "
				  "functions",
				  path);
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	size_t i;
	json_t *f;
	json_array_foreach(fns, i, f)
	{
		const char *name = json_string_value(json_object_get(f, "name"));
		if (!name || name[0] == '_' || !eligible(f) || !valid_tool_name(name))
			continue;
		if (add_function(ts, f, name, base) < 0)
			return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct govex__tool *)a)->name, ((const struct govex__tool *)b)->name);
}

static int finish(govex_toolset *ts, struct govex_error *err)
{
	if (ts->n_tools > 1)
		qsort(ts->tools, ts->n_tools, sizeof(*ts->tools), by_name);
	for (size_t i = 1; i < ts->n_tools; i++)
		if (strcmp(ts->tools[i - 1].name, ts->tools[i].name) == 0) {
			const struct govex__tool *a = &ts->tools[i - 1], *b = &ts->tools[i];
			return govex__err(err, GOVEX_EINVAL, 0,
					  "two tools named '%s' (from %s and %s)", a->name,
					  a->snippet ? "govex" : ts->modules[a->module].path,
					  b->snippet ? "govex" : ts->modules[b->module].path);
		}
	return 0;
}

GOVEX_API govex_toolset *govex_toolset_free(govex_toolset *ts)
{
	if (!ts)
		return NULL;
	for (size_t i = 0; i < ts->n_tools; i++) {
		free(ts->tools[i].name);
		json_decref(ts->tools[i].def);
	}
	free(ts->tools);
	for (size_t i = 0; i < ts->n_modules; i++) {
		free(ts->modules[i].path);
		free(ts->modules[i].data);
	}
	free(ts->modules);
	json_decref(ts->facts.read);
	json_decref(ts->facts.dists);
	json_decref(ts->facts.preload);
	json_decref(ts->facts.write);
	json_decref(ts->facts.net_allow);
	free(ts);
	return NULL;
}

GOVEX_API int govex_toolset_new(govex_runtime *rt, const struct govex_toolset_options *o,
				govex_toolset **ret, struct govex_error *err)
{
	if (!rt || !ret)
		return govex__err(err, GOVEX_EINVAL, 0, "toolset: runtime and ret are required");
	govex_toolset *ts = calloc(1, sizeof(*ts));
	if (!ts)
		return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	ts->rt = rt;
	int r = facts_load(rt, &ts->facts);
	if (r < 0) {
		govex_toolset_free(ts);
		return govex__err(err, -r, -r, "toolset: cannot read the effective policy");
	}
	if (!o || !o->no_snippet) {
		r = add_snippet(ts);
		if (r < 0)
			r = govex__err(err, ENOMEM, ENOMEM, "out of memory");
	}
	for (size_t i = 0; r == 0 && o && o->modules && o->modules[i]; i++)
		r = add_module(ts, o->modules[i], err);
	if (r == 0)
		r = finish(ts, err);
	if (r < 0) {
		govex_toolset_free(ts);
		return r;
	}
	*ret = ts;
	return 0;
}

GOVEX_API char *govex_toolset_list(const govex_toolset *ts)
{
	if (!ts)
		return NULL;
	_cleanup_json_ json_t *a = json_array();
	for (size_t i = 0; a && i < ts->n_tools; i++)
		if (json_array_append(a, ts->tools[i].def) < 0)
			return NULL;
	return a ? json_dumps(a, JSON_COMPACT) : NULL;
}

const struct govex__tool *govex__toolset_find(const govex_toolset *ts, const char *name)
{
	struct govex__tool key = {.name = (char *)name};
	if (!ts->n_tools)
		return NULL;
	return bsearch(&key, ts->tools, ts->n_tools, sizeof(*ts->tools), by_name);
}
