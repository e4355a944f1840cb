/* SPDX-License-Identifier: MIT */
/* Call mode: a module's source (a file's or a notebook's), read and checked before it is
 * inspected or called. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "call.h"
#include "runtime.h"

void govex__source_release(struct source *s)
{
	free(s->text);
	free(s->module);
	free(s->filename);
	memset(s, 0, sizeof(*s));
}

bool govex__call_identifier(const char *s, size_t n)
{
	return govex__identifier(s, n, 200);
}

govex_result *govex__call_invalid(govex_runtime *rt, const char *code, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
	if (r)
		govex__result_diag(r, code, NULL, "%s", msg);
	return r;
}

/* Reads the module's source into s; a refusal when it is not usable. */
int govex__source_prepare(govex_runtime *rt, const struct govex_source *src, struct source *s,
			  govex_result **ret_refusal)
{
	struct govex_error e = {0};
	memset(s, 0, sizeof(*s));
	*ret_refusal = NULL;
	if (!src->data) {
		*ret_refusal = govex__call_invalid(rt, "missing_code", "source: %s", "missing");
		return 0;
	}
	if (src->len > rt->policy->limits.code_bytes) {
		*ret_refusal = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (*ret_refusal)
			govex__result_diag(*ret_refusal, "code_too_large", NULL,
					   "source: %zu bytes exceeds limits.code_bytes (%llu)",
					   src->len,
					   (unsigned long long)rt->policy->limits.code_bytes);
		return 0;
	}
	if (src->path && !govex__path_normalized(src->path)) {
		*ret_refusal = govex__call_invalid(rt, "invalid_source_path", "source_path: %s",
						   "must be an absolute normalized path");
		return 0;
	}
	s->path = src->path;
	if (src->notebook) {
		s->notebook = true;
		govex__sha256_digest(src->data, src->len, s->notebook_digest);
		int r = govex__notebook_to_python(src->data, src->len, &s->text, &s->len, &e);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			*ret_refusal = govex__call_invalid(rt, "invalid_notebook", "%s", e.message);
			return 0;
		}
	} else {
		if (memchr(src->data, '\0', src->len)) {
			*ret_refusal = govex__call_invalid(rt, "invalid_code", "source: %s",
							   "contains a NUL byte");
			return 0;
		}
		if (!(s->text = strndup(src->data, src->len)))
			return -ENOMEM;
		s->len = src->len;
	}
	if (!govex__utf8_valid(s->text, s->len)) {
		*ret_refusal =
		    govex__call_invalid(rt, "invalid_code", "source: %s", "not valid UTF-8");
		return 0;
	}
	govex__sha256_digest(s->text, s->len, s->digest);

	/* module name: given, or the file's base name without its extension */
	const char *m = src->module;
	size_t mlen = m ? strlen(m) : 0;
	if (!m && src->path) {
		const char *base = strrchr(src->path, '/');
		base = base ? base + 1 : src->path;
		const char *dot = strrchr(base, '.');
		m = base;
		mlen = dot ? (size_t)(dot - base) : strlen(base);
		if (!govex__call_identifier(m, mlen)) {
			m = "module";
			mlen = 6;
		}
	} else if (!m) {
		m = "module";
		mlen = 6;
	}
	if (!govex__call_identifier(m, mlen)) {
		*ret_refusal = govex__call_invalid(rt, "invalid_module",
						   "module: '%.80s' is not an identifier", m);
		return 0;
	}
	if (!(s->module = strndup(m, mlen)))
		return -ENOMEM;
	if (asprintf(&s->filename, "%s.py", s->module) < 0) {
		s->filename = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* A synthetic request for planning a worker run: limits, metadata and cancellation of the
 * call; the code is the worker itself. */
struct govex_request govex__worker_request(const struct govex_call *call)
{
	struct govex_request req = {
	    .language = "python",
	    .code = (const char *)govex__worker_py,
	    .code_len = govex__worker_py_len,
	    .limits = call->limits,
	    .metadata = call->metadata,
	    .cancel = call->cancel,
	    .files = call->files,
	    .n_files = call->n_files,
	    .outputs = call->outputs,
	    .on_output = call->on_output,
	    .output_userdata = call->output_userdata,
	};
	return req;
}
