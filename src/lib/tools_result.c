/* SPDX-License-Identifier: MIT */
/*
 * The CallToolResult of a tool: a short text a model can act on (status, the exception's
 * type, message and traceback of the user's code, denials naming the control, the value,
 * both streams, the files), the files as image and resource content, the whole
 * govex.result/v1 document as structuredContent, and isError for anything but success.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "tools.h"
#include "values.h"

/* Files out come from another branch of this round (H5: govex_result_file*); until it
 * lands these are undefined and weak, so a result simply has no files. */
#pragma weak govex_result_file_count
#pragma weak govex_result_file

#define TEXT_STREAM_MAX 16000
#define TEXT_VALUE_MAX	4000
#define TEXT_DIAG_MAX	8
#define TEXT_TB_MAX	8192

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
    "\"plan_digest\":{\"type\":[\"string\",\"null\"],\"pattern\":\"^sha256:[0-9a-f]{64}$\"},"
    "\"files\":{\"type\":\"array\",\"description\":\"files the run left in "
    "GOVEX_OUTPUT_DIR\",\"items\":{\"type\":\"object\",\"required\":[\"name\",\"bytes\"],"
    "\"properties\":{\"name\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
    "\"sha256\":{\"type\":\"string\"},\"mime\":{\"type\":\"string\"}}}}"
    "}}";

json_t *govex__tool_result_schema(void)
{
	json_error_t e;
	return json_loads(result_schema_text, JSON_REJECT_DUPLICATES, &e);
}

/* ---------------------------------------------------------------- the text for the model */

/* One stream; cut (when non-NULL) is where the stream repeats the traceback shown above. */
static void put_stream(FILE *f, const char *name, json_t *doc, const char *cut)
{
	char key[32];
	snprintf(key, sizeof(key), "%s_bytes", name);
	json_int_t total = json_integer_value(json_object_get(doc, key));
	snprintf(key, sizeof(key), "%s_truncated", name);
	bool truncated = json_is_true(json_object_get(doc, key));
	json_t *js = json_object_get(doc, name);
	const char *s = json_string_value(js);
	size_t n = json_string_length(js);
	if (total == 0 && n == 0)
		return;
	fprintf(f, "%s (%lld bytes", name, (long long)total);
	if (truncated)
		fprintf(f, "; TRUNCATED by the policy's limit: only the first %zu bytes were kept",
			n);
	fputs("):\n", f);
	size_t shown = cut ? (size_t)(cut - s) : n;
	if (shown <= TEXT_STREAM_MAX) {
		fwrite(s, 1, shown, f);
	} else if (strcmp(name, "stderr") == 0) {
		/* the end of stderr says most: keep the tail (at a character boundary) */
		size_t from = shown - TEXT_STREAM_MAX;
		while (from < shown && ((unsigned char)s[from] & 0xc0) == 0x80)
			from++;
		fprintf(f, "[... %zu earlier bytes of stderr are only in structuredContent]\n",
			from);
		fwrite(s + from, 1, shown - from, f);
	} else {
		size_t to = TEXT_STREAM_MAX;
		while (to > 0 && ((unsigned char)s[to] & 0xc0) == 0x80)
			to--;
		fwrite(s, 1, to, f);
		fprintf(f, "\n[... %zu more bytes of stdout are only in structuredContent]",
			shown - to);
	}
	if (shown && s[shown - 1] != '\n')
		fputc('\n', f);
	if (cut)
		fputs("(then the traceback shown above)\n", f);
}

/* succeeded: the run's status is success (a denial then stopped nothing: its message
 * says so, and there is nothing to retry). */
static void put_diag(FILE *f, json_t *d, const char **tb, bool succeeded)
{
	const char *code = json_string_value(json_object_get(d, "code"));
	const char *msg = json_string_value(json_object_get(d, "message"));
	if (!code)
		code = "?";
	fprintf(f, "%s: %s", code, msg ? msg : "");
	const char *etype = json_string_value(json_object_get(d, "exception_type"));
	if (etype && msg && !strstr(msg, etype))
		fprintf(f, " (%s)", etype); /* call mode before its exception frame */
	json_t *ctl = json_object_get(d, "controls");
	if (strcmp(code, "denied_by_policy") == 0 && !succeeded) {
		fputs(" (denied by the policy", f);
		size_t i;
		json_t *c;
		json_array_foreach(ctl, i, c)
		    fprintf(f, "%s%s", i ? ", " : ": control ", json_string_value(c));
		fputs("; retrying will not help)", f);
	} else if (strcmp(code, "invalid_argument") == 0) {
		fputs(" (fix the argument and call again)", f);
	}
	fputc('\n', f);
	const char *t =
	    json_string_value(json_object_get(json_object_get(d, "exception"), "traceback"));
	if (strcmp(code, "exception") == 0 && t && *t) {
		size_t tn = strlen(t);
		if (tn > TEXT_TB_MAX)
			fprintf(f, "[...]\n%s", t + tn - TEXT_TB_MAX);
		else
			fputs(t, f);
		if (t[tn - 1] != '\n')
			fputc('\n', f);
		*tb = t;
	}
}

static const char *hint(const char *status)
{
	static const struct {
		const char *status, *hint;
	} hints[] = {
	    {"timeout", "the run was stopped at its wall-time limit: do less per call"},
	    {"resource_limit", "the run was stopped at a limit of the policy (memory, CPU time, "
			       "processes or file size)"},
	    {"output_limit", "the run printed more than the policy keeps: print less"},
	    {"policy_refused", "the policy refused this request: the same call will be refused "
			       "again"},
	    {"cancelled", "the call was cancelled"},
	};
	for (size_t i = 0; status && i < ARRAY_SIZE(hints); i++)
		if (strcmp(status, hints[i].status) == 0)
			return hints[i].hint;
	return NULL;
}

static void put_head(FILE *f, json_t *doc)
{
	const char *status = json_string_value(json_object_get(doc, "status"));
	const char *term = json_string_value(json_object_get(doc, "termination"));
	json_t *ec = json_object_get(doc, "exit_code"), *sig = json_object_get(doc, "signal");
	json_int_t wall =
	    json_integer_value(json_object_get(json_object_get(doc, "usage"), "wall_ms"));
	fprintf(f, "status: %s", status ? status : "?");
	if (json_is_integer(ec))
		fprintf(f, " (exit code %lld", (long long)json_integer_value(ec));
	else if (json_is_integer(sig) && term && strcmp(term, "signaled") == 0)
		fprintf(f, " (killed by signal %lld", (long long)json_integer_value(sig));
	else
		fprintf(f, " (termination %s", term ? term : "?");
	if (term && strcmp(term, "refused") != 0)
		fprintf(f, ", %lld ms", (long long)wall);
	fputs(")\n", f);
	const char *h = hint(status);
	if (h)
		fprintf(f, "hint: %s\n", h);
}

static char *summary_text(json_t *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	put_head(f, doc);
	size_t i, shown = 0;
	json_t *d;
	const char *tb = NULL;
	const char *status = json_string_value(json_object_get(doc, "status"));
	bool succeeded = status && strcmp(status, "success") == 0;
	json_array_foreach(json_object_get(doc, "diagnostics"), i, d)
	{
		const char *code = json_string_value(json_object_get(d, "code"));
		if (code && (strcmp(code, "stdout_truncated") == 0 ||
			     strcmp(code, "stderr_truncated") == 0))
			continue; /* said with the stream */
		if (shown++ == TEXT_DIAG_MAX) {
			fputs("(more diagnostics in structuredContent)\n", f);
			break;
		}
		put_diag(f, d, &tb, succeeded);
	}
	json_t *v = json_object_get(doc, "value");
	if (v && !json_is_null(v)) {
		_cleanup_free_ char *vs = govex__json_dumps(v, 0); /* shortest reals */
		size_t vn = vs ? strlen(vs) : 0;
		if (vn > TEXT_VALUE_MAX)
			fprintf(f, "value: %.*s [... %zu more bytes in structuredContent]\n",
				TEXT_VALUE_MAX, vs, vn - TEXT_VALUE_MAX);
		else if (vs)
			fprintf(f, "value: %s\n", vs);
	}
	put_stream(f, "stdout", doc, NULL);
	const char *err = json_string_value(json_object_get(doc, "stderr"));
	const char *cut = tb && err ? strstr(err, tb) : NULL;
	put_stream(f, "stderr", doc, cut);
	json_array_foreach(json_object_get(doc, "files"), i, d)
	{
		fprintf(f, "%s %s (%s, %lld bytes)\n",
			i ? "     " : "files:", json_string_value(json_object_get(d, "name")),
			json_string_value(json_object_get(d, "mime")),
			(long long)json_integer_value(json_object_get(d, "bytes")));
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---------------------------------------------------------------- files as content */

static json_t *b64_string(const void *data, size_t len)
{
	if (len > (size_t)1 << 30)
		return NULL;
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (!out)
		return NULL;
	int n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	json_t *s = n < 0 ? NULL : json_stringn(out, (size_t)n);
	free(out);
	return s;
}

static bool textual(const char *mime)
{
	return strncmp(mime, "text/", 5) == 0 || strcmp(mime, "application/json") == 0 ||
	       strcmp(mime, "image/svg+xml") == 0;
}

/* The raster formats model APIs take as an image (an SVG is XML text: a resource). */
static bool raster(const char *mime)
{
	static const char *const types[] = {"image/png", "image/jpeg", "image/gif", "image/webp"};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (strcmp(mime, types[i]) == 0)
			return true;
	return false;
}

static json_t *file_content(const char *name, const char *mime, const void *data, size_t len)
{
	if (raster(mime))
		return json_pack("{s:s, s:o, s:s}", "type", "image", "data", b64_string(data, len),
				 "mimeType", mime);
	char uri[200];
	snprintf(uri, sizeof(uri), "govex://output/%s", name);
	json_t *r = json_pack("{s:s, s:s}", "uri", uri, "mimeType", mime);
	if (textual(mime) && govex__utf8_valid(data, len))
		json_object_set_new(r, "text", json_stringn(data, len));
	else
		json_object_set_new(r, "blob", b64_string(data, len));
	return json_pack("{s:s, s:o}", "type", "resource", "resource", r);
}

static void add_files(json_t *content, const govex_result *res)
{
	if (!res || !govex_result_file_count || !govex_result_file)
		return;
	size_t n = govex_result_file_count(res);
	for (size_t i = 0; i < n; i++) {
		const char *name, *mime;
		const void *data;
		size_t len;
		if (govex_result_file(res, i, &name, &mime, &data, &len) == 0)
			json_array_append_new(content, file_content(name, mime, data, len));
	}
}

/* The result object with structuredContent spliced in as the exact bytes of the document:
 * re-encoding it would change its numbers (jansson writes reals with 17 digits). */
static char *with_document(json_t *r, const char *doc_text, size_t doc_len)
{
	while (doc_len && doc_text[doc_len - 1] == '\n')
		doc_len--;
	_cleanup_free_ char *head = json_dumps(r, JSON_COMPACT);
	size_t hn = head ? strlen(head) : 0;
	if (hn < 2 || head[hn - 1] != '}')
		return NULL;
	static const char key[] = ",\"structuredContent\":";
	char *out = malloc(hn - 1 + sizeof(key) - 1 + doc_len + 2);
	if (!out)
		return NULL;
	size_t n = hn - 1;
	memcpy(out, head, n);
	memcpy(out + n, key, sizeof(key) - 1);
	n += sizeof(key) - 1;
	memcpy(out + n, doc_text, doc_len);
	n += doc_len;
	out[n++] = '}';
	out[n] = '\0';
	return out;
}

static char *tool_result(json_t *doc, const char *doc_text, size_t doc_len, const govex_result *res)
{
	const char *status = json_string_value(json_object_get(doc, "status"));
	_cleanup_free_ char *text = summary_text(doc);
	_cleanup_json_ json_t *content = json_array();
	if (!text || !content)
		return NULL;
	json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text));
	add_files(content, res);
	_cleanup_json_ json_t *r = json_pack("{s:O, s:b}", "content", content, "isError",
					     !status || strcmp(status, "success") != 0);
	return r ? with_document(r, doc_text, doc_len) : NULL;
}

char *govex__tool_result(json_t *doc, const char *doc_text, size_t doc_len, const govex_result *res)
{
	char *out = tool_result(doc, doc_text, doc_len, res);
	json_decref(doc);
	return out;
}

char *govex__tool_refusal(enum govex_status status, const char *code, const char *msg)
{
	govex_result *r = NULL;
	if (govex_result_new_refusal(status, code, msg, &r) < 0)
		return NULL;
	size_t n;
	const char *js = govex_result_json(r, &n);
	json_error_t e;
	json_t *doc = json_loadb(js, n, JSON_ALLOW_NUL, &e);
	char *out = doc ? govex__tool_result(doc, js, n, NULL) : NULL;
	govex_result_free(r);
	return out;
}
