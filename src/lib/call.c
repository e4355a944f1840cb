/* SPDX-License-Identifier: MIT */
/*
 * Call mode: inspect a module, plan a call of one of its functions, run it in a fresh
 * worker and return its JSON value.
 *
 * The worker (src/worker/worker.py, embedded) is started as `python -I [-S] -c WORKER`
 * under the policy like any run.  govex.frame/v1: one request frame on its stdin, one
 * response frame on fd 3 (8-byte big-endian length, then JSON).  The parent checks a
 * frame's length before reading its payload, and never puts the worker's stdout or
 * stderr into a call's result.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

#define REQUEST_FRAME_MAX (64ULL << 20)
#define INSPECTION_FRAME_MAX (16ULL << 20)
/* room for the response envelope around a value of call_output_bytes */
#define ENVELOPE_SLACK (64ULL << 10)

struct source {
	char *text; /* Python source (a notebook's transformed source) */
	size_t len;
	char digest[72];
	bool notebook;
	char notebook_digest[72];
	char *module;
	char *filename;
	const char *path;
};

static void source_release(struct source *s)
{
	free(s->text);
	free(s->module);
	free(s->filename);
	memset(s, 0, sizeof(*s));
}

static bool identifier(const char *s, size_t n)
{
	return govex__identifier(s, n, 200);
}

static govex_result *invalid(govex_runtime *rt, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static govex_result *invalid(govex_runtime *rt, const char *code, const char *fmt, ...)
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
static int source_prepare(govex_runtime *rt, const struct govex_source *src, struct source *s,
			  govex_result **ret_refusal)
{
	struct govex_error e = {0};
	memset(s, 0, sizeof(*s));
	*ret_refusal = NULL;
	if (!src->data) {
		*ret_refusal = invalid(rt, "missing_code", "source: %s", "missing");
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
		*ret_refusal = invalid(rt, "invalid_source_path", "source_path: %s",
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
			*ret_refusal = invalid(rt, "invalid_notebook", "%s", e.message);
			return 0;
		}
	} else {
		if (memchr(src->data, '\0', src->len)) {
			*ret_refusal = invalid(rt, "invalid_code", "source: %s", "contains a NUL byte");
			return 0;
		}
		if (!(s->text = strndup(src->data, src->len)))
			return -ENOMEM;
		s->len = src->len;
	}
	if (!govex__utf8_valid(s->text, s->len)) {
		*ret_refusal = invalid(rt, "invalid_code", "source: %s", "not valid UTF-8");
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
		if (!identifier(m, mlen)) {
			m = "module";
			mlen = 6;
		}
	} else if (!m) {
		m = "module";
		mlen = 6;
	}
	if (!identifier(m, mlen)) {
		*ret_refusal = invalid(rt, "invalid_module", "module: '%.80s' is not an identifier", m);
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

static json_t *source_json(const struct source *s)
{
	return json_pack("{s:s, s:I, s:s?, s:s?, s:s}", "digest", s->digest, "bytes",
			 (json_int_t)s->len, "path", s->path, "notebook_digest",
			 s->notebook ? s->notebook_digest : NULL, "module", s->module);
}

/* 8-byte big-endian length + compact JSON. */
static int frame_encode(json_t *payload, char **ret, size_t *ret_len)
{
	char *js = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS);
	if (!js)
		return -ENOMEM;
	size_t n = strlen(js);
	char *f = malloc(n + 8);
	if (!f) {
		free(js);
		return -ENOMEM;
	}
	for (int i = 0; i < 8; i++)
		f[i] = (char)(((uint64_t)n >> (56 - 8 * i)) & 0xff);
	memcpy(f + 8, js, n);
	free(js);
	*ret = f;
	*ret_len = n + 8;
	return 0;
}

/* The inspection worker's text: the inspection part, then the worker (whose last line
 * runs main()).  Made once per process. */
static char *inspection_worker;
static pthread_once_t inspection_worker_once = PTHREAD_ONCE_INIT;

static void make_inspection_worker(void)
{
	size_t a = govex__worker_inspection_py_len, b = govex__worker_py_len;
	char *t = malloc(a + 1 + b + 1);
	if (!t)
		return;
	memcpy(t, govex__worker_inspection_py, a);
	t[a] = '\n';
	memcpy(t + a + 1, govex__worker_py, b + 1); /* with its NUL */
	inspection_worker = t;
}

/* The worker's argv: a call's worker does not compile the inspection part.  Returns
 * -ENOMEM when the inspection text could not be made. */
static int worker_argv(govex_runtime *rt, bool inspect, char *argv[8])
{
	size_t ac = 0;
	const char *text = (const char *)govex__worker_py;
	if (inspect) {
		pthread_once(&inspection_worker_once, make_inspection_worker);
		if (!(text = inspection_worker))
			return -ENOMEM;
	}
	argv[ac++] = rt->interp.path;
	argv[ac++] = "-I";
	if (!rt->policy->site)
		argv[ac++] = "-S";
	argv[ac++] = "-c";
	argv[ac++] = (char *)text;
	argv[ac] = NULL;
	return 0;
}

/* A synthetic request for planning a worker run: limits, metadata and cancellation of the
 * call; the code is the worker itself. */
static struct govex_request worker_request(const struct govex_call *call)
{
	struct govex_request req = {
		.language = "python",
		.code = (const char *)govex__worker_py,
		.code_len = govex__worker_py_len,
		.limits = call->limits,
		.metadata = call->metadata,
		.cancel = call->cancel,
	};
	return req;
}

static const char *frame_problem(const struct govex__outcome *o)
{
	switch (o->frame_state) {
	case GOVEX_FRAME_OK:
		return NULL;
	case GOVEX_FRAME_NONE:
		return "the worker exited without a response frame";
	case GOVEX_FRAME_TRUNCATED:
		return "the response frame was truncated";
	case GOVEX_FRAME_OVERSIZED:
		return "the response frame announced more than the output bound";
	case GOVEX_FRAME_TRAILING:
		return "bytes followed the response frame";
	}
	return "unknown frame state";
}

static enum govex_status status_named(const char *s, bool *ok)
{
	static const struct {
		const char *name;
		enum govex_status st;
	} t[] = {
		{"success", GOVEX_STATUS_SUCCESS},
		{"invalid_input", GOVEX_STATUS_INVALID_INPUT},
		{"binding_failed", GOVEX_STATUS_BINDING_FAILED},
		{"execution_failed", GOVEX_STATUS_EXECUTION_FAILED},
		{"result_invalid", GOVEX_STATUS_RESULT_INVALID},
		{"output_limit", GOVEX_STATUS_OUTPUT_LIMIT},
		{"worker_failed", GOVEX_STATUS_WORKER_FAILED},
		{"source_mismatch", GOVEX_STATUS_SOURCE_MISMATCH},
		/* never sent by the worker: named so that a frame claiming them is reported
		 * as claiming a status only govex decides */
		{"policy_refused", GOVEX_STATUS_POLICY_REFUSED},
		{"timeout", GOVEX_STATUS_TIMEOUT},
		{"cancelled", GOVEX_STATUS_CANCELLED},
		{"resource_limit", GOVEX_STATUS_RESOURCE_LIMIT},
	};
	for (size_t i = 0; s && i < ARRAY_SIZE(t); i++)
		if (strcmp(s, t[i].name) == 0) {
			*ok = true;
			return t[i].st;
		}
	*ok = false;
	return GOVEX_STATUS_WORKER_FAILED;
}

/* Longest text taken from a frame into a result (a diagnostic's message); the cut is
 * said (" [truncated]").  Well under the contract's 4 KiB. */
#define FRAME_TEXT_MAX 256

/* A diagnostic code from a frame: one the worker itself uses (worker.py's MESSAGES), so
 * that the code under test cannot dress its failure up as one of govex's own
 * (missing_controls, protected_path, ...). */
static bool frame_code_ok(const char *c)
{
	static const char *const known[] = {
	    "args_not_object",	  "async_mismatch",	"bad_request",	      "digest_mismatch",
	    "exception",	  "function_missing",	"generator_function", "input_too_large",
	    "int_out_of_range",	  "internal_error",	"missing_argument",   "module_error",
	    "not_a_function",	  "not_eligible",	"not_json",	      "null_not_allowed",
	    "output_too_large",	  "signature_mismatch", "source_too_complex", "syntax_error",
	    "too_deep",		  "unknown_argument",
	};
	for (size_t i = 0; c && i < ARRAY_SIZE(known); i++)
		if (strcmp(c, known[i]) == 0)
			return true;
	return false;
}

/*
 * The outcome of a worker that sent a well-formed response frame claiming `claimed`,
 * decided by the parent (DESIGN.md "Trust boundaries": the worker is untrusted).  The
 * claim is taken only when the process exited 0 and the claim is one the worker may
 * make at the point it reached:
 *  - a frame followed by a non-zero exit or a signal is worker_failed;
 *  - invalid_input, policy_refused, source_mismatch (and timeout, cancelled,
 *    resource_limit) are govex's to decide, never the worker's.  One exception: an
 *    inspection's syntax_error / source_too_complex, which govex's own inspection code
 *    found (an inspection runs nothing of the module: it has no "module starts" mark);
 *  - a call's worker marks the moment the module's code starts (an empty frame,
 *    o->frame_module_started).  Before it only govex's worker ran, and it reports
 *    nothing but worker_failed there that govex has not decided already (binding_failed
 *    before the import, i.e. an ineligible function, is checked by the parent at
 *    planning).  After it the module may have written the frame itself: it may claim
 *    what its code could have caused anyway (success with a value the parent checks
 *    again, execution_failed, result_invalid, output_limit, binding_failed of the live
 *    object, worker_failed), nothing more.
 * Returns the status; *why is set (a diagnostic message) when the claim was not taken.
 */
static enum govex_status frame_decision(const struct govex__outcome *o, bool inspect,
					enum govex_status claimed, const char *code,
					char *why, size_t why_len)
{
	const char *name = govex_status_name(claimed);
	why[0] = '\0';
	if (o->term == GOVEX_TERM_SIGNALED) {
		snprintf(why, why_len,
			 "the worker sent a response frame (%s), then was killed by signal %d",
			 name, o->signal);
		return GOVEX_STATUS_WORKER_FAILED;
	}
	if (o->term != GOVEX_TERM_EXITED || o->exit_code != 0) {
		snprintf(why, why_len,
			 "the worker sent a response frame (%s), then exited with status %d", name,
			 o->exit_code);
		return GOVEX_STATUS_WORKER_FAILED;
	}
	switch (claimed) {
	case GOVEX_STATUS_INVALID_INPUT:
		if (inspect && !o->frame_module_started && code &&
		    (strcmp(code, "syntax_error") == 0 || strcmp(code, "source_too_complex") == 0))
			return claimed;
		/* fall through */
	case GOVEX_STATUS_POLICY_REFUSED:
	case GOVEX_STATUS_SOURCE_MISMATCH:
	case GOVEX_STATUS_TIMEOUT:
	case GOVEX_STATUS_CANCELLED:
	case GOVEX_STATUS_RESOURCE_LIMIT:
		snprintf(why, why_len, "the worker claimed a status only govex decides (%s)", name);
		return GOVEX_STATUS_WORKER_FAILED;
	case GOVEX_STATUS_BINDING_FAILED:
		if (inspect || !o->frame_module_started) {
			snprintf(why, why_len,
				 "the worker claimed a status only govex decides (%s before the "
				 "module was imported)",
				 name);
			return GOVEX_STATUS_WORKER_FAILED;
		}
		return claimed;
	case GOVEX_STATUS_WORKER_FAILED:
		return claimed;
	default:
		break;
	}
	if (inspect && o->frame_module_started) {
		snprintf(why, why_len, "the inspection worker sent a call's module mark");
		return GOVEX_STATUS_WORKER_FAILED;
	}
	if (!inspect && !o->frame_module_started) {
		snprintf(why, why_len, "the worker claimed %s before the module's code ran", name);
		return GOVEX_STATUS_WORKER_FAILED;
	}
	return claimed;
}

/*
 * Runs the worker with one request frame; on return *ret_result is the result (status
 * from the outcome or the response frame) and, when the response said ok, *ret_response
 * is its payload (caller decrefs).
 */
static int worker_exchange(govex_runtime *rt, const char *run_id, bool inspect,
			   const struct decision *d,
			   const govex_plan *plan, const struct govex_call *call, json_t *request,
			   uint64_t frame_max, json_t **ret_response, govex_result **ret_result,
			   struct govex_error *err)
{
	_cleanup_free_ char *frame = NULL;
	size_t frame_len = 0;
	char *argv[8];
	int p[2];
	struct govex__outcome o;
	govex_result *res = NULL;
	int r;

	*ret_response = NULL;
	*ret_result = NULL;
	if ((r = frame_encode(request, &frame, &frame_len)) < 0)
		return govex__err(err, ENOMEM, ENOMEM, "call: out of memory");
	if (frame_len > REQUEST_FRAME_MAX + 8) {
		*ret_result = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (*ret_result)
			govex__result_diag(*ret_result, "request_too_large", NULL,
					   "call: the request frame of %zu bytes exceeds 64 MiB",
					   frame_len);
		return 0;
	}
	if (worker_argv(rt, inspect, argv) < 0)
		return govex__err(err, ENOMEM, ENOMEM, "call: out of memory");
	if ((r = govex__pipe(p, 0)) < 0)
		return govex__err(err, -r, -r, "call: pipe: %s", strerror(-r));
	r = govex__launch(rt, run_id, d, plan, argv, frame, frame_len, call->cancel, p[1], p[0],
			  frame_max, NULL, &o, &res, err);
	if (r < 0)
		return r;
	if (res) {
		*ret_result = res;
		return 0;
	}

	enum govex_status st = govex__status_of(&o);
	json_t *resp = NULL;
	const char *problem = NULL;
	char why[200] = "";
	const char *claimed_name = NULL;
	bool limit_end = o.term != GOVEX_TERM_EXITED && o.term != GOVEX_TERM_SIGNALED;
	if (!limit_end) {
		if ((problem = frame_problem(&o))) {
			st = GOVEX_STATUS_WORKER_FAILED;
		} else {
			json_error_t je;
			/* U+0000 is a valid JSON string character in a value */
			resp = json_loadb(o.frame.data + 8, o.frame.len - 8,
					  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
			bool known = false;
			if (!json_is_object(resp)) {
				problem = "the response frame is not a JSON object";
				st = GOVEX_STATUS_WORKER_FAILED;
			} else {
				enum govex_status claimed = status_named(
					json_string_value(json_object_get(resp, "status")), &known);
				if (!known || (claimed == GOVEX_STATUS_SUCCESS) !=
						      json_is_true(json_object_get(resp, "ok"))) {
					problem = "the response frame has no valid status";
					st = GOVEX_STATUS_WORKER_FAILED;
				} else {
					st = frame_decision(
						&o, inspect, claimed,
						json_string_value(json_object_get(resp, "code")),
						why, sizeof(why));
					if (why[0]) {
						problem = why;
						claimed_name = govex_status_name(claimed);
					}
				}
			}
		}
	}
	/* a call's output never reaches its result: keep the counts, drop the bytes */
	free(o.out.data);
	free(o.err.data);
	o.out.data = o.err.data = NULL;
	o.out.len = o.err.len = 0;
	o.out_truncated = o.err_truncated = false;

	enum govex_termination term = o.term;
	res = govex__run_result(rt, d, plan, &o);
	if (!res) {
		json_decref(resp);
		return govex__err(err, ENOMEM, ENOMEM, "call: out of memory");
	}
	govex__result_set_status(res, st, term);
	if (problem) {
		govex__result_diag(res, "worker_failed",
				   claimed_name ? json_pack("{s:s}", "claimed_status", claimed_name)
						: NULL,
				   "%s", problem);
		json_decref(resp);
		resp = NULL;
	} else if (resp && st != GOVEX_STATUS_SUCCESS) {
		/* the worker's code and fixed message; the exception's type name only.  All of
		 * it is text the module could have chosen (it may write the frame itself):
		 * bounded and without control characters */
		const char *code = json_string_value(json_object_get(resp, "code"));
		json_t *jm = json_object_get(resp, "message");
		const char *et = json_string_value(json_object_get(resp, "exception_type"));
		bool cut = false;
		char *msg = json_is_string(jm) ? govex__text_clean(json_string_value(jm),
								   json_string_length(jm),
								   FRAME_TEXT_MAX, &cut)
					       : NULL;
		if (!frame_code_ok(code))
			code = "worker_error";
		/* a type name only: an identifier, nothing the code under test could use to
		 * carry a message or a path out (the worker checks this too) */
		if (et && !identifier(et, strlen(et)))
			et = NULL;
		json_t *extra = json_object();
		if (extra && et)
			json_object_set_new(extra, "exception_type", json_string(et));
		if (extra && cut)
			json_object_set_new(extra, "message_truncated", json_true());
		govex__result_diag(res, code, extra, "%s",
				   msg && msg[0] ? msg : "the worker reported a failure");
		free(msg);
		json_decref(resp);
		resp = NULL;
	}
	*ret_response = resp;
	*ret_result = res;
	return 0;
}

/* Everything an inspection yields. */
struct inspection {
	json_t *doc;  /* govex.inspection/v1 */
	char *canon;  /* canonical bytes */
	size_t len;
	char digest[72];
};

static void inspection_release(struct inspection *in)
{
	json_decref(in->doc);
	free(in->canon);
	memset(in, 0, sizeof(*in));
}

static char *inspection_key(const struct source *s)
{
	char *k = NULL;
	if (asprintf(&k, "%s %s", s->digest, s->module) < 0)
		return NULL;
	return k;
}

/* A cached inspection of this source, into in; false when there is none. */
static bool inspection_cached(govex_runtime *rt, const struct source *s, struct inspection *in)
{
	_cleanup_free_ char *key = inspection_key(s);
	bool found = false;
	if (!key)
		return false;
	pthread_mutex_lock(&rt->lock);
	for (size_t i = 0; i < ARRAY_SIZE(rt->inspections) && !found; i++) {
		if (!rt->inspections[i].key || strcmp(rt->inspections[i].key, key) != 0)
			continue;
		in->canon = strndup(rt->inspections[i].canon, rt->inspections[i].len);
		in->len = rt->inspections[i].len;
		found = in->canon != NULL;
	}
	pthread_mutex_unlock(&rt->lock);
	if (found) {
		in->doc = json_loadb(in->canon, in->len, 0, NULL);
		govex__sha256_digest(in->canon, in->len, in->digest);
		if (!in->doc) {
			free(in->canon);
			in->canon = NULL;
			return false;
		}
	}
	return found;
}

static void inspection_store(govex_runtime *rt, const struct source *s,
			     const struct inspection *in)
{
	char *key = inspection_key(s), *canon = strndup(in->canon, in->len);
	if (!key || !canon) {
		free(key);
		free(canon);
		return;
	}
	pthread_mutex_lock(&rt->lock);
	size_t i = rt->inspections_next++ % ARRAY_SIZE(rt->inspections);
	free(rt->inspections[i].key);
	free(rt->inspections[i].canon);
	rt->inspections[i].key = key;
	rt->inspections[i].canon = canon;
	rt->inspections[i].len = in->len;
	pthread_mutex_unlock(&rt->lock);
}

/* Plans and runs an inspection worker (or finds the inspection in the runtime's
 * cache).  On success in->doc is set; otherwise *ret_result says why. */
static int inspect_internal(govex_runtime *rt, const char *run_id, const struct govex_call *call,
			    const struct source *s, struct inspection *in,
			    govex_result **ret_result, struct govex_error *err)
{
	struct govex_request req = worker_request(call);
	struct decision d;
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	json_t *resp = NULL;
	memset(in, 0, sizeof(*in));
	*ret_result = NULL;
	if (inspection_cached(rt, s, in))
		return 0;

	json_t *job = json_pack("{s:s, s:o}", "kind", "inspect", "source", source_json(s));
	int r = govex__plan_internal(rt, &req, run_id, job, &plan, &d, &res, err);
	json_decref(job);
	if (r < 0)
		return r;
	if (res) {
		*ret_result = res;
		return 0;
	}
	if (rt->interp.major < 3 || (rt->interp.major == 3 && rt->interp.minor < 8)) {
		res = govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
		if (res) {
			govex__result_set_digests(res, rt->policy->digest, NULL);
			govex__result_diag(res, "interpreter_unsupported", NULL,
					   "call mode needs Python 3.8 or later, not %s",
					   rt->interp.version);
		}
		govex__decision_release(&d);
		govex_plan_free(plan);
		*ret_result = res;
		return res ? 0 : -ENOMEM;
	}
	json_t *request = json_pack("{s:s, s:s, s:s%, s:s, s:s, s:s}", "version",
				    GOVEX_FRAME_VERSION, "op", "inspect", "source", s->text, s->len,
				    "source_digest", s->digest, "module", s->module, "filename",
				    s->filename);
	r = worker_exchange(rt, run_id, true, &d, plan, call, request, INSPECTION_FRAME_MAX, &resp,
			    &res, err);
	json_decref(request);
	if (r < 0)
		goto out;
	if (resp) {
		json_t *doc = json_object_get(resp, "inspection");
		const char *v = json_string_value(json_object_get(doc, "version"));
		const char *sd = json_string_value(json_object_get(doc, "source_digest"));
		if (!json_is_object(doc) || !v || strcmp(v, GOVEX_INSPECTION_VERSION) != 0 || !sd ||
		    strcmp(sd, s->digest) != 0 || !json_is_array(json_object_get(doc, "functions")) ||
		    govex__canon(doc, &in->canon, &in->len) < 0) {
			govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
						 govex_result_view(res)->termination);
			govex__result_diag(res, "worker_failed", NULL,
					   "the inspection in the response is not valid");
		} else {
			in->doc = json_incref(doc);
			govex__sha256_digest(in->canon, in->len, in->digest);
			inspection_store(rt, s, in);
			govex_result_free(res);
			res = NULL;
		}
	}
out:
	json_decref(resp);
	govex__decision_release(&d);
	govex_plan_free(plan);
	*ret_result = res;
	return r < 0 ? r : 0;
}

static int finish_result(govex_runtime *rt, const char *run_id, govex_result *res,
			 const govex_plan *plan, govex_result **ret, struct govex_error *err)
{
	if (govex__result_finish(res) < 0) {
		govex_result_free(res);
		return govex__err(err, ENOMEM, ENOMEM, "call: out of memory");
	}
	if (govex_result_view(res)->termination == GOVEX_TERM_REFUSED)
		govex__audit_refused(rt, run_id, res);
	govex__audit_finish(rt, run_id, res, plan);
	*ret = res;
	return 0;
}

static struct govex_call source_only_call(const struct govex_source *src)
{
	struct govex_call c;
	memset(&c, 0, sizeof(c));
	c.source = *src;
	return c;
}

static void audit_received_call(govex_runtime *rt, const char *run_id, const char *kind,
				const struct govex_call *call, const struct source *s)
{
	struct govex_request req = {.code = "", .code_len = s ? s->len : 0,
				    .metadata = call->metadata};
	govex__audit_received(rt, run_id, kind, &req);
}

GOVEX_API int govex_runtime_inspect(govex_runtime *rt, const struct govex_source *src,
				    char **ret_inspection, govex_result **ret_result,
				    struct govex_error *ret_err)
{
	char run_id[33];
	struct source s;
	struct inspection in;
	govex_result *res = NULL;
	if (!rt || !src || !ret_inspection || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "inspect: missing argument");
	*ret_inspection = NULL;
	*ret_result = NULL;
	struct govex_call call = source_only_call(src);
	govex__run_id_new(run_id);
	int r = source_prepare(rt, src, &s, &res);
	audit_received_call(rt, run_id, "inspect", &call, r == 0 && !res ? &s : NULL);
	if (r < 0) {
		source_release(&s);
		return govex__err(ret_err, ENOMEM, ENOMEM, "inspect: out of memory");
	}
	if (!res && (r = inspect_internal(rt, run_id, &call, &s, &in, &res, ret_err)) < 0) {
		source_release(&s);
		return r;
	}
	source_release(&s);
	if (res)
		return finish_result(rt, run_id, res, NULL, ret_result, ret_err);
	*ret_inspection = TAKE_PTR(in.canon);
	inspection_release(&in);
	govex__audit(&rt->audit, run_id, "finish",
		     json_pack("{s:s, s:s}", "status", "success", "kind", "inspect"));
	return 0;
}

/* ---- calls ------------------------------------------------------------------------------ */

static json_t *find_function(json_t *inspection, const char *name)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(inspection, "functions"), i, f)
	{
		const char *n = json_string_value(json_object_get(f, "name"));
		if (n && strcmp(n, name) == 0)
			return f;
	}
	return NULL;
}

/* Plans a call: inspection, function checks, effects, backend.  *ret_plan and *ret_d, or
 * a refusal; *ret_in holds the inspection on success. */
static int plan_call_internal(govex_runtime *rt, const char *run_id, const struct govex_call *call,
			      const struct source *s, struct inspection *in, govex_plan **ret_plan,
			      struct decision *ret_d, govex_result **ret_result,
			      struct govex_error *err)
{
	govex_result *res = NULL;
	*ret_plan = NULL;
	*ret_result = NULL;
	if (!call->function || !identifier(call->function, strlen(call->function))) {
		*ret_result = invalid(rt, "invalid_function", "function: '%.80s' is not an identifier",
				      call->function ? call->function : "");
		return *ret_result ? 0 : -ENOMEM;
	}
	int r = inspect_internal(rt, run_id, call, s, in, &res, err);
	if (r < 0 || res) {
		*ret_result = res;
		return r;
	}
	json_t *fn = find_function(in->doc, call->function);
	if (!fn) {
		*ret_result = invalid(rt, "unknown_function",
				      "function '%s': no top-level function of that name",
				      call->function);
		return *ret_result ? 0 : -ENOMEM;
	}
	if (!json_is_true(json_object_get(fn, "eligible"))) {
		const char *why = json_string_value(json_object_get(fn, "reason"));
		res = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (res)
			govex__result_diag(res, "function_not_eligible",
					   json_pack("{s:s?}", "reason", why),
					   "function '%s': not callable in call mode (%s)",
					   call->function, why ? why : "ineligible");
		*ret_result = res;
		return res ? 0 : -ENOMEM;
	}
	/* effects the policy requires to be known */
	json_t *effects = json_object_get(fn, "effects");
	json_t *unknown = json_array();
	for (size_t i = 0; rt->policy->require_known[i]; i++) {
		const char *e = json_string_value(json_object_get(effects, rt->policy->require_known[i]));
		if (!e || strcmp(e, "unknown") == 0)
			json_array_append_new(unknown, json_string(rt->policy->require_known[i]));
	}
	if (json_array_size(unknown)) {
		char list[300] = "";
		size_t i;
		json_t *e;
		json_array_foreach(unknown, i, e)
		{
			size_t n = strlen(list);
			snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "",
				 json_string_value(e));
		}
		res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		if (res)
			govex__result_diag(res, "unknown_required_effect",
					   json_pack("{s:O}", "effects", unknown),
					   "function '%s': effects the policy requires to be known "
					   "are unknown: %s",
					   call->function, list);
		json_decref(unknown);
		*ret_result = res;
		return res ? 0 : -ENOMEM;
	}
	json_decref(unknown);

	struct govex_request req = worker_request(call);
	/* files in and out, live output: the call's (not the inspection's) */
	req.files = call->files;
	req.n_files = call->n_files;
	req.outputs = call->outputs;
	req.on_output = call->on_output;
	req.output_userdata = call->output_userdata;
	json_t *job = json_pack("{s:s, s:o, s:O, s:s, s:{s:o, s:O}}", "kind", "call", "source",
				source_json(s), "function", fn, "inspection_digest", in->digest,
				"effects", "require_known",
				govex__strv_json(rt->policy->require_known), "observed", effects);
	r = govex__plan_internal(rt, &req, run_id, job, ret_plan, ret_d, ret_result, err);
	json_decref(job);
	return r;
}

GOVEX_API int govex_runtime_plan_call(govex_runtime *rt, const struct govex_call *call,
				      govex_plan **ret_plan, govex_result **ret_result,
				      struct govex_error *ret_err)
{
	char run_id[33];
	struct source s;
	struct inspection in;
	struct decision d;
	govex_result *res = NULL;
	if (!rt || !call || !ret_plan || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	*ret_plan = NULL;
	*ret_result = NULL;
	memset(&in, 0, sizeof(in));
	memset(&d, 0, sizeof(d));
	govex__run_id_new(run_id);
	int r = source_prepare(rt, &call->source, &s, &res);
	audit_received_call(rt, run_id, "plan_call", call, r == 0 && !res ? &s : NULL);
	if (r == 0 && !res)
		r = plan_call_internal(rt, run_id, call, &s, &in, ret_plan, &d, &res, ret_err);
	govex__decision_release(&d);
	inspection_release(&in);
	source_release(&s);
	if (r < 0)
		return r;
	if (res)
		return finish_result(rt, run_id, res, NULL, ret_result, ret_err);
	return 0;
}

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
	static const char *const generic[] = {"list[", "dict[", "List[", "Dict[",
					      "typing.List[", "typing.Dict["};
	for (size_t i = 0; i < ARRAY_SIZE(generic); i++)
		if (strncmp(t, generic[i], strlen(generic[i])) == 0 && t[n - 1] == ']')
			return true;
	return false;
}

/* Checks the arguments against the planned signature before any user code runs. */
static govex_result *check_args(govex_runtime *rt, json_t *fn, json_t *args,
				uint64_t input_max, size_t *ret_canon_len)
{
	size_t len = 0;
	if (!json_is_object(args))
		return invalid(rt, "invalid_arguments", "args: %s", "must be a JSON object");
	/* canonical bytes of the arguments; floats are allowed here, so dump directly */
	char *js = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
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
				if (json_is_null(v) &&
				    annotation_rejects_null(
					    json_string_value(json_object_get(p, "annotation"))))
					return invalid(rt, "null_not_allowed",
						       "args.%s: null is not allowed by the "
						       "parameter's annotation",
						       k);
			}
		}
		if (!known)
			return invalid(rt, "unknown_argument", "args.%s: no parameter of that name",
				       k);
	}
	size_t i;
	json_t *p;
	json_array_foreach(params, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		if (!json_is_true(json_object_get(p, "has_default")) &&
		    !json_object_get(args, name))
			return invalid(rt, "missing_argument", "args.%s: required and missing",
				       name);
	}
	return NULL;
}

GOVEX_API int govex_runtime_call(govex_runtime *rt, const govex_plan *given,
				 const struct govex_call *call, govex_result **ret_result,
				 struct govex_error *ret_err)
{
	char run_id[33];
	struct source s;
	struct inspection in;
	struct decision d;
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	json_t *args = NULL, *resp = NULL, *request = NULL;
	int r;
	if (!rt || !call || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "call: missing argument");
	*ret_result = NULL;
	memset(&in, 0, sizeof(in));
	memset(&d, 0, sizeof(d));
	govex__run_id_new(run_id);
	r = source_prepare(rt, &call->source, &s, &res);
	audit_received_call(rt, run_id, given ? "execute_call" : "call", call,
			    r == 0 && !res ? &s : NULL);
	if (r < 0 || res)
		goto done;

	/* a plan made earlier: one differing byte of the source refuses before anything */
	if (given) {
		const char *pd = json_string_value(
			json_object_get(json_object_get(given->doc, "source"), "digest"));
		const char *nd = json_string_value(
			json_object_get(json_object_get(given->doc, "source"), "notebook_digest"));
		if (!pd || strcmp(pd, s.digest) != 0 ||
		    (nd && (!s.notebook || strcmp(nd, s.notebook_digest) != 0)) ||
		    (!nd && s.notebook)) {
			res = govex__refusal(rt, GOVEX_STATUS_SOURCE_MISMATCH);
			if (res)
				govex__result_diag(res, "source_mismatch", NULL,
						   "source: its digest differs from the plan's "
						   "(the source changed)");
			goto done;
		}
	}
	if ((r = plan_call_internal(rt, run_id, call, &s, &in, &plan, &d, &res, ret_err)) < 0 ||
	    res)
		goto done;
	if (given && strcmp(given->digest, plan->digest) != 0) {
		res = govex__plan_mismatch(rt, given, plan);
		goto done;
	}
	json_t *fn = json_object_get(plan->doc, "function");
	if (call->args) {
		json_error_t je;
		if (!govex__utf8_valid(call->args, call->args_len)) {
			res = invalid(rt, "invalid_arguments", "args: not valid UTF-8");
			goto done;
		}
		args = json_loadb(call->args, call->args_len,
				  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (!args) {
			/* jansson's own words: position and cause ("too big integer",
			 * "duplicate object key", ...) */
			res = invalid(rt, "invalid_arguments", "args: line %d column %d: %.120s",
				      je.line, je.column, je.text);
			goto done;
		}
	} else {
		args = json_object();
	}
	size_t args_len = 0;
	if ((res = check_args(rt, fn, args, d.limits.call_input_bytes, &args_len)))
		goto done;
	if ((res = govex__approve(rt, run_id, &d, plan)))
		goto done;

	request = json_pack("{s:s, s:s, s:s%, s:s, s:s, s:s, s:s%, s:s, s:s%, s:s, s:O,"
			    " s:{s:I, s:I}}",
			    "version", GOVEX_FRAME_VERSION, "op", "call", "source", s.text, s.len,
			    "source_digest", s.digest, "module", s.module, "filename", s.filename,
			    "plan", plan->canon, plan->len, "plan_digest", plan->digest,
			    "inspection", in.canon, in.len, "function", call->function, "args",
			    args, "limits", "call_input_bytes",
			    (json_int_t)d.limits.call_input_bytes, "call_output_bytes",
			    (json_int_t)d.limits.call_output_bytes);
	if (!request) {
		r = govex__err(ret_err, ENOMEM, ENOMEM, "call: out of memory");
		goto done;
	}
	r = worker_exchange(rt, run_id, false, &d, plan, call, request,
			    d.limits.call_output_bytes + ENVELOPE_SLACK, &resp, &res, ret_err);
	if (r < 0 || !resp)
		goto done;
	/* success: the parent checks the value's size again */
	json_t *value = json_object_get(resp, "value");
	char *vj = value ? json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
			 : NULL;
	if (!vj) {
		govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
					 govex_result_view(res)->termination);
		govex__result_diag(res, "worker_failed", NULL, "the response has no value");
	} else if (strlen(vj) + 1 > d.limits.call_output_bytes) {
		govex__result_set_status(res, GOVEX_STATUS_OUTPUT_LIMIT,
					 govex_result_view(res)->termination);
		govex__result_diag(res, "output_too_large", NULL,
				   "value: %zu bytes exceeds limits.call_output_bytes (%llu)",
				   strlen(vj) + 1, (unsigned long long)d.limits.call_output_bytes);
	} else {
		govex__result_set_value(res, json_incref(value));
	}
	free(vj);

done:
	json_decref(request);
	json_decref(resp);
	json_decref(args);
	govex__decision_release(&d);
	inspection_release(&in);
	source_release(&s);
	if (r < 0) {
		govex_result_free(res);
		govex_plan_free(plan);
		return r;
	}
	if (!res) {
		govex_plan_free(plan);
		return govex__err(ret_err, ENOMEM, ENOMEM, "call: out of memory");
	}
	r = finish_result(rt, run_id, res, plan, ret_result, ret_err);
	govex_plan_free(plan);
	return r;
}
