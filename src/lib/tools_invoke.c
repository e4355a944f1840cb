/* SPDX-License-Identifier: MIT */
/*
 * govex_toolset_invoke: a tool's JSON arguments checked against its input schema and the
 * policy's bounds (a failure is a tool result with isError that names the argument, so a
 * model can read it and retry), then the snippet run REPL-style or the function called,
 * and the result turned into an MCP CallToolResult (tools_result.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "files.h"
#include "tools.h"
#include "values.h"

#define FILES_MAX 64

/* The files of one invoke: the array given to the request and the decoded bytes. */
struct files_in {
	struct govex_file v[FILES_MAX];
	char *owned[FILES_MAX];
	size_t n;
};

static void files_in_free(struct files_in *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->owned[i]);
	f->n = 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard or URL-safe base64, padding optional, whitespace ignored.  0, -EINVAL, -ENOMEM.
 * Four characters at a time while they are all digits (issue 23: a byte at a time was a
 * quarter of what a 16 MiB file cost through MCP); anything else a character at a time. */
static int b64_decode(const char *s, size_t n, char **ret, size_t *ret_len)
{
	short t[256];
	for (int c = 0; c < 256; c++)
		t[c] = (short)b64_value((unsigned char)c);
	char *out = malloc(n / 4 * 3 + 4);
	if (!out)
		return -ENOMEM;
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, pad = 0;
	unsigned acc = 0, bits = 0;
	for (size_t i = 0; i < n;) {
		if (bits == 0 && !pad && n - i >= 4) {
			int a = t[u[i]], b = t[u[i + 1]], c = t[u[i + 2]], d = t[u[i + 3]];
			if ((a | b | c | d) >= 0) {
				unsigned v = (unsigned)a << 18 | (unsigned)b << 12 |
					     (unsigned)c << 6 | (unsigned)d;
				out[o++] = (char)(v >> 16);
				out[o++] = (char)(v >> 8 & 0xff);
				out[o++] = (char)(v & 0xff);
				i += 4;
				continue;
			}
		}
		unsigned char c = u[i++];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		int v = t[c];
		if (v < 0 || pad) {
			free(out);
			return -EINVAL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (bits >= 6 || pad > 2) {
		free(out);
		return -EINVAL;
	}
	*ret = out;
	*ret_len = o;
	return 0;
}

/* The `files` argument (already checked against the schema): decoded, names unique. */
static int files_decode(json_t *files, struct files_in *f, char *err, size_t errlen)
{
	size_t i;
	json_t *x;
	if (json_array_size(files) > FILES_MAX) {
		snprintf(err, errlen, "args.files: at most %d files", FILES_MAX);
		return 1;
	}
	json_array_foreach(files, i, x)
	{
		const char *name = json_string_value(json_object_get(x, "name"));
		json_t *text = json_object_get(x, "text"), *b64 = json_object_get(x, "base64");
		if (!!text == !!b64) {
			snprintf(err, errlen,
				 "args.files[%zu]: give exactly one of text and base64", i);
			return 1;
		}
		/* the library's name rule (files.c), checked here to name the argument */
		if (!name || !govex__file_name_ok(name, strlen(name))) {
			snprintf(err, errlen,
				 "args.files[%zu].name: a plain file name of 1 to 128 characters "
				 "[A-Za-z0-9._-], not starting with '.'",
				 i);
			return 1;
		}
		for (size_t k = 0; k < f->n; k++)
			if (strcmp(f->v[k].name, name) == 0) {
				snprintf(err, errlen, "args.files[%zu].name: '%s' is given twice",
					 i, name);
				return 1;
			}
		struct govex_file *g = &f->v[f->n];
		g->name = name;
		if (text) {
			g->data = json_string_value(text);
			g->len = json_string_length(text);
			f->owned[f->n++] = NULL;
			continue;
		}
		char *data = NULL;
		size_t len = 0;
		int r = b64_decode(json_string_value(b64), json_string_length(b64), &data, &len);
		if (r == -ENOMEM)
			return -ENOMEM;
		if (r < 0) {
			snprintf(err, errlen, "args.files[%zu].base64: not valid base64", i);
			return 1;
		}
		g->data = data;
		g->len = len;
		f->owned[f->n++] = data;
	}
	return 0;
}

static size_t compact_size(json_t *v)
{
	return json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* The bounds in bytes the schema cannot say (it bounds characters).  0 or 1 (err set). */
static int check_bounds(const govex_toolset *ts, const struct govex__tool *t, json_t *args,
			char *err, size_t errlen)
{
	const struct govex__tool_facts *b = &ts->facts;
	if (!t->snippet) {
		/* the function's own arguments: files in have their own bound (files_in_bytes,
		 * the library's) */
		size_t n = compact_size(args);
		json_t *files = t->own_files ? NULL : json_object_get(args, "files");
		if (files)
			n -= compact_size(files) + strlen(",\"files\":");
		if (n > b->call_input_bytes) {
			snprintf(err, errlen,
				 "arguments: %zu bytes of JSON exceeds the limit of %llu bytes", n,
				 (unsigned long long)b->call_input_bytes);
			return 1;
		}
		return 0;
	}
	json_t *code = json_object_get(args, "code"), *in = json_object_get(args, "stdin");
	json_t *inputs = json_object_get(args, "inputs");
	if (json_string_length(code) > b->code_bytes) {
		snprintf(err, errlen, "args.code: %zu bytes exceeds the limit of %llu bytes",
			 json_string_length(code), (unsigned long long)b->code_bytes);
		return 1;
	}
	if (in && json_string_length(in) > b->stdin_bytes) {
		snprintf(err, errlen, "args.stdin: %zu bytes exceeds the limit of %llu bytes",
			 json_string_length(in), (unsigned long long)b->stdin_bytes);
		return 1;
	}
	if (inputs && compact_size(inputs) > b->call_input_bytes) {
		snprintf(err, errlen,
			 "args.inputs: %zu bytes of JSON exceeds the limit of %llu bytes",
			 compact_size(inputs), (unsigned long long)b->call_input_bytes);
		return 1;
	}
	if (memchr(json_string_value(code), '\0', json_string_length(code))) {
		snprintf(err, errlen, "args.code: contains a NUL character");
		return 1;
	}
	return 0;
}

/* Parses and checks the arguments.  0 with *ret the object, 1 with err set, -ENOMEM. */
static int arguments(const govex_toolset *ts, const struct govex__tool *t, const char *js,
		     size_t len, json_t **ret, char *err, size_t errlen)
{
	_cleanup_json_ json_t *args = NULL;
	if (js && len) {
		struct govex_error ge = {0};
		if (govex__json_parse_long(js, len, 0, &args, &ge) < 0) {
			snprintf(err, errlen, "args: %s", ge.message);
			return 1;
		}
	} else {
		args = json_object();
		if (!args)
			return -ENOMEM;
	}
	if (json_is_null(args)) {
		json_decref(args);
		args = json_object();
	}
	if (!json_is_object(args)) {
		snprintf(err, errlen, "args: must be a JSON object");
		return 1;
	}
	int r = govex__schema_check(t->input_schema, args, "args", err, errlen);
	if (r < 0)
		return r;
	if (r > 0 || check_bounds(ts, t, args, err, errlen) != 0)
		return 1;
	*ret = TAKE_PTR(args);
	return 0;
}

static json_t *doc_of(govex_result *res)
{
	size_t n;
	const char *js = govex_result_json(res, &n);
	json_error_t e;
	/* output may hold NUL bytes (escaped as \u0000 in the document) */
	return json_loadb(js, n, JSON_ALLOW_NUL, &e);
}

static json_t *refusal_doc(enum govex_status st, const char *code, const char *msg)
{
	govex_result *r = NULL;
	if (govex_result_new_refusal(st, code, msg, &r) < 0)
		return NULL;
	json_t *doc = doc_of(r);
	govex_result_free(r);
	return doc;
}

static json_t *run_snippet(govex_toolset *ts, json_t *args, const struct govex_invoke *inv,
			   const struct files_in *files, govex_result **ret_res)
{
	json_t *code = json_object_get(args, "code"), *in = json_object_get(args, "stdin");
	json_t *to = json_object_get(args, "timeout_ms"), *inputs = json_object_get(args, "inputs");
	_cleanup_free_ char *inputs_json = inputs ? json_dumps(inputs, JSON_COMPACT) : NULL;
	if (inputs && !inputs_json)
		return NULL;
	struct govex_request req = {.language = "python"};
	if (in) {
		req.stdin_data = json_string_value(in);
		req.stdin_len = json_string_length(in);
	}
	req.limits.wall_ms = json_is_integer(to) ? (uint64_t)json_integer_value(to) : 0;
	req.metadata = inv ? inv->metadata : NULL;
	req.cancel = inv ? inv->cancel : NULL;
	req.on_output = inv ? inv->on_output : NULL;
	req.output_userdata = inv ? inv->output_userdata : NULL;
	req.files = files->n ? files->v : NULL;
	req.n_files = files->n;
	req.outputs = 1;
	/* REPL-style in govex's worker: the value comes back in the result, INPUTS is the
	 * inputs object (repl.c) */
	req.repl = 1;
	req.code = json_string_value(code);
	req.code_len = json_string_length(code);
	req.inputs_json = inputs_json;
	req.inputs_len = inputs_json ? strlen(inputs_json) : 0;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	if (govex_runtime_run(ts->rt, &req, &res, &ge) < 0)
		return refusal_doc(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message);
	json_t *doc = doc_of(res);
	*ret_res = res;
	return doc;
}

static json_t *run_function(govex_toolset *ts, const struct govex__tool *t, json_t *args,
			    const struct govex_invoke *inv, const struct files_in *files,
			    govex_result **ret_res)
{
	const struct govex__tool_module *m = &ts->modules[t->module];
	_cleanup_free_ char *now = NULL;
	size_t now_len = 0;
	struct govex_error ge = {0};
	if (govex__read_file(m->path, (size_t)16 << 20, &now, &now_len, &ge) < 0) {
		char msg[400];
		snprintf(msg, sizeof(msg), "module: cannot read it again: %s", ge.message);
		return refusal_doc(GOVEX_STATUS_SOURCE_MISMATCH, "source_unreadable", msg);
	}
	/* the function's own arguments: without "files" unless it takes a parameter of that
	 * name (a shallow copy: files borrows the strings of args' "files") */
	_cleanup_json_ json_t *fargs = json_copy(args);
	if (!fargs)
		return NULL;
	if (!t->own_files)
		json_object_del(fargs, "files");
	_cleanup_free_ char *js = json_dumps(fargs, JSON_COMPACT);
	if (!js)
		return NULL;
	/* the plan binds the bytes read when the toolset was made; the call re-reads the
	 * file, so a module changed on disk since gives source_mismatch, never a silent
	 * reload */
	struct govex_call call = {
	    .source = {.data = m->data, .len = m->len, .path = m->path, .notebook = m->notebook},
	    .function = t->name,
	    .args = js,
	    .args_len = strlen(js),
	    .metadata = inv ? inv->metadata : NULL,
	    .cancel = inv ? inv->cancel : NULL,
	    .files = files->n ? files->v : NULL,
	    .n_files = files->n,
	    .outputs = 1,
	    .on_output = inv ? inv->on_output : NULL,
	    .output_userdata = inv ? inv->output_userdata : NULL,
	};
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	int r = govex_runtime_plan_call(ts->rt, &call, &plan, &res, &ge);
	if (r == 0 && plan) {
		call.source.data = now;
		call.source.len = now_len;
		r = govex_runtime_call(ts->rt, plan, &call, &res, &ge);
	}
	govex_plan_free(plan);
	if (r < 0)
		return refusal_doc(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message);
	json_t *doc = doc_of(res);
	*ret_res = res;
	return doc;
}

/* The CallToolResult of a tool that exists, as JSON text.  NULL on ENOMEM. */
static char *invoke(govex_toolset *ts, const struct govex__tool *t, const char *args_json,
		    size_t args_len, const struct govex_invoke *inv)
{
	char err[600];
	_cleanup_json_ json_t *args = NULL;
	struct files_in files = {.n = 0};
	int r = arguments(ts, t, args_json, args_len, &args, err, sizeof(err));
	if (r == 0 && (t->snippet || !t->own_files))
		r = files_decode(json_object_get(args, "files"), &files, err, sizeof(err));
	if (r < 0) {
		files_in_free(&files);
		return NULL;
	}
	if (r == 1) {
		files_in_free(&files);
		return govex__tool_refusal(GOVEX_STATUS_INVALID_INPUT, "invalid_argument", err);
	}
	govex_result *res = NULL;
	json_t *doc = t->snippet ? run_snippet(ts, args, inv, &files, &res)
				 : run_function(ts, t, args, inv, &files, &res);
	files_in_free(&files);
	/* structuredContent is the result's own bytes (numbers as the library wrote them) */
	size_t len = 0;
	_cleanup_free_ char *dumped = NULL;
	const char *text = NULL;
	if (res) {
		text = govex_result_json(res, &len);
	} else if (doc) {
		dumped = json_dumps(doc, JSON_COMPACT);
		text = dumped;
		len = dumped ? strlen(dumped) : 0;
	}
	char *out = doc && text ? govex__tool_result(doc, text, len, res) : NULL;
	if (!text)
		json_decref(doc);
	govex_result_free(res);
	return out;
}

GOVEX_API int govex_toolset_invoke(govex_toolset *ts, const char *name, const char *args_json,
				   size_t args_len, const struct govex_invoke *inv, char **ret_json,
				   struct govex_error *err)
{
	if (!ts || !name || !ret_json)
		return govex__err(err, GOVEX_EINVAL, 0, "toolset, name and ret_json are required");
	const struct govex__tool *t = govex__toolset_find(ts, name);
	if (!t)
		return govex__err(err, GOVEX_EINVAL, 0, "unknown tool '%.200s'", name);
	char *s = invoke(ts, t, args_json, args_len, inv);
	if (!s)
		return govex__err(err, ENOMEM, ENOMEM, "out of memory");
	*ret_json = s;
	return 0;
}
