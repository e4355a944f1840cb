/* SPDX-License-Identifier: MIT */
/*
 * Call mode's worker and its frames (govex.frame/v1): the worker's program, the request
 * frame's encoding, the `exception` diagnostic and the value fixes a response frame
 * names (both shared with REPL runs, repl.c), and the parent's decision on the response
 * frame and the termination (DESIGN.md "Trust boundaries": the worker is untrusted).
 *
 * The worker (src/worker/worker.py, embedded) is started as `python -I [-S] -c WORKER`
 * under the policy like any run.  One request frame on its stdin, one response frame on
 * fd 3 (8-byte big-endian length, then JSON).  The parent checks a frame's length before
 * reading its payload, and never puts the worker's stdout or stderr into a call's
 * result.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "call.h"
#include "repl.h"
#include "runtime.h"

/* 8-byte big-endian length + compact JSON. */
int govex__frame_encode(json_t *payload, char **ret, size_t *ret_len)
{
	char *js = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS);
	if (!js)
		return -ENOMEM;
	size_t n = strlen(js);
	char *f = malloc(n + 8 + 1); /* a NUL after the frame, not part of it */
	if (!f) {
		free(js);
		return -ENOMEM;
	}
	for (int i = 0; i < 8; i++)
		f[i] = (char)(((uint64_t)n >> (56 - 8 * i)) & 0xff);
	memcpy(f + 8, js, n + 1);
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
int govex__worker_argv(govex_runtime *rt, bool inspect, char *argv[8])
{
	const char *text = (const char *)govex__worker_py;
	if (inspect) {
		pthread_once(&inspection_worker_once, make_inspection_worker);
		if (!(text = inspection_worker))
			return -ENOMEM;
	}
	govex__interp_argv(rt, text, argv);
	return 0;
}

/* The tail of s (at most max bytes, starting at a character), cleaned. */
static char *tail_clean(const char *s, size_t n, size_t max, bool *ret_cut)
{
	size_t start = 0;
	*ret_cut = false;
	if (n > max) {
		start = n - max;
		while (start < n && ((unsigned char)s[start] & 0xc0) == 0x80)
			start++;
		*ret_cut = true;
	}
	bool cut2 = false;
	char *t = govex__text_clean(s + start, n - start, max + 64, &cut2);
	*ret_cut = *ret_cut || cut2;
	return t;
}

int govex__exception_diag(govex_result *res, const char *code, json_t *exc)
{
	const char *type = json_string_value(json_object_get(exc, "type"));
	json_t *jm = json_object_get(exc, "message");
	json_t *jt = json_object_get(exc, "traceback");
	if (!json_is_object(exc) || !type || !json_is_string(jm) || !json_is_string(jt))
		return 1;
	/* a type name only: an identifier, as call mode's exception_type */
	if (!govex__identifier(type, strlen(type), EXC_TYPE_MAX))
		type = "Exception";
	bool mcut = false, tcut = false;
	_cleanup_free_ char *msg = govex__text_clean(json_string_value(jm), json_string_length(jm),
						     EXC_MESSAGE_MAX, &mcut);
	_cleanup_free_ char *tb =
	    tail_clean(json_string_value(jt), json_string_length(jt), EXC_TRACEBACK_MAX, &tcut);
	if (!msg || !tb)
		return -ENOMEM;
	json_t *extra = json_pack("{s:{s:s, s:s, s:s}, s:s}", "exception", "type", type, "message",
				  msg, "traceback", tb, "exception_type", type);
	if (!extra)
		return -ENOMEM;
	if (tcut)
		json_object_set_new(json_object_get(extra, "exception"), "traceback_truncated",
				    json_true());
	if (mcut)
		json_object_set_new(json_object_get(extra, "exception"), "message_truncated",
				    json_true());
	if (msg[0])
		govex__result_diag(res, code, extra, "%s: %s", type, msg);
	else
		govex__result_diag(res, code, extra, "%s", type);
	return 0;
}

const char *govex__value_fix(const char *name)
{
	static const struct {
		const char *name, *text;
	} fixes[] = {
	    {"finite", "NaN and infinities are not JSON: replace them (e.g. by None)"},
	    {"float", "convert it: float(x), int(x) or bool(x)"},
	    {"tolist", "convert it: x.tolist()"},
	    {"to_dict", "convert it: df.to_dict() (by column), df.to_dict('records') (by row)"},
	    {"series", "convert it: s.tolist() (the values) or s.to_dict() (index to value)"},
	    {"str", "convert it: str(x) (or x.isoformat())"},
	    {"list", "convert it: list(x)"},
	    {"complex", "convert it: [x.real, x.imag] (an array's: .tolist() of each)"},
	    {"keys", "object keys must be strings: {str(k): v for k, v in d.items()}"},
	    {"int_range", "integers are kept to 64 bits: str(x) keeps it exact"},
	    {"none", "a missing value: use None"},
	};
	for (size_t i = 0; name && i < ARRAY_SIZE(fixes); i++)
		if (strcmp(name, fixes[i].name) == 0)
			return fixes[i].text;
	return NULL;
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
	    "args_not_object",	"async_mismatch",     "bad_request",	    "digest_mismatch",
	    "exception",	"function_missing",   "generator_function", "input_too_large",
	    "int_out_of_range", "internal_error",     "missing_argument",   "module_error",
	    "not_a_function",	"not_eligible",	      "not_json",	    "null_not_allowed",
	    "output_too_large", "signature_mismatch", "source_too_complex", "syntax_error",
	    "too_deep",		"unknown_argument",
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
					enum govex_status claimed, const char *code, char *why,
					size_t why_len)
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
		__attribute__((fallthrough));
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
 * The result of a worker's run: its status from the outcome or the response frame, as
 * the parent decides (frame_decision).  When the response said ok, *ret_response is its
 * payload (caller decrefs).  o is released.
 */
int govex__worker_result(struct govex__job *j, bool inspect, struct govex__outcome *o,
			 json_t **ret_response, govex_result **ret_result, struct govex_error *err)
{
	govex_result *res = NULL;
	*ret_response = NULL;
	*ret_result = NULL;

	enum govex_status st = govex__status_of(o);
	json_t *resp = NULL;
	const char *problem = NULL;
	char why[200] = "";
	const char *claimed_name = NULL;
	bool limit_end = o->term != GOVEX_TERM_EXITED && o->term != GOVEX_TERM_SIGNALED;
	if (!limit_end) {
		if ((problem = frame_problem(o))) {
			st = GOVEX_STATUS_WORKER_FAILED;
		} else {
			json_error_t je;
			/* U+0000 is a valid JSON string character in a value */
			resp = json_loadb(o->frame.data + 8, o->frame.len - 8,
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
					    o, inspect, claimed,
					    json_string_value(json_object_get(resp, "code")), why,
					    sizeof(why));
					if (why[0]) {
						problem = why;
						claimed_name = govex_status_name(claimed);
					}
				}
			}
		}
	}
	/* an inspection's output never reaches its result; a call's stdout and stderr are
	 * its result's (the function's output is the caller's to read), unless the policy's
	 * disclosure is sanitized: then they are discarded, and its exception is its type
	 * name only (below) */
	bool sanitized = !inspect && j->rt->policy->sanitized;
	if (inspect || sanitized) {
		free(o->out.data);
		free(o->err.data);
		o->out.data = o->err.data = NULL;
		o->out.len = o->err.len = 0;
		o->out_truncated = o->err_truncated = false;
		if (sanitized) /* how much it printed is not disclosed either */
			o->out_bytes = o->err_bytes = 0;
	}

	enum govex_termination term = o->term;
	if (o->controls_lost && st == GOVEX_STATUS_SUCCESS)
		st = GOVEX_STATUS_EXECUTION_FAILED; /* (its diagnostic: controls_lost) */
	res = govex__run_result(j->rt, &j->d, j->plan, o);
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
		char *msg = json_is_string(jm)
				? govex__text_clean(json_string_value(jm), json_string_length(jm),
						    FRAME_TEXT_MAX, &cut)
				: NULL;
		if (!frame_code_ok(code))
			code = "worker_error";
		/* an exception of the user's code: its type, message, traceback (repl.c) */
		json_t *exc =
		    !sanitized &&
			    (strcmp(code, "exception") == 0 || strcmp(code, "module_error") == 0) &&
			    st == GOVEX_STATUS_EXECUTION_FAILED
			? json_object_get(resp, "exception")
			: NULL;
		/* sanitized: govex's words for the code and the type name, never a message
		 * the module could have shaped */
		if (sanitized) {
			const char *tn = et && govex__call_identifier(et, strlen(et)) ? et : NULL;
			char words[200];
			if (strcmp(code, "exception") == 0 && tn)
				snprintf(words, sizeof(words), "the function raised %.120s", tn);
			else if (strcmp(code, "module_error") == 0 && tn)
				snprintf(words, sizeof(words),
					 "the module raised %.120s while loading", tn);
			else
				snprintf(words, sizeof(words), "the call failed (%.60s)", code);
			free(msg);
			msg = strdup(words);
			cut = false;
		}
		int er = exc ? govex__exception_diag(res, code, exc) : 1;
		if (er <= 0) {
			free(msg);
			json_decref(resp);
			*ret_response = NULL;
			*ret_result = res;
			return er < 0 ? govex__err(err, ENOMEM, ENOMEM, "call: out of memory") : 0;
		}
		/* a type name only: an identifier, nothing the code under test could use to
		 * carry a message or a path out (the worker checks this too) */
		if (et && !govex__call_identifier(et, strlen(et)))
			et = NULL;
		json_t *extra = json_object();
		if (extra && et)
			json_object_set_new(extra, "exception_type", json_string(et));
		if (extra && cut)
			json_object_set_new(extra, "message_truncated", json_true());
		/* a value that is not JSON: the fix, by name (its words are govex's) */
		const char *fixname = st == GOVEX_STATUS_RESULT_INVALID
					  ? json_string_value(json_object_get(resp, "fix"))
					  : NULL;
		const char *fix = govex__value_fix(fixname);
		if (extra && fix)
			json_object_set_new(extra, "fix", json_string(fixname));
		govex__result_diag(res, code, extra, "%s%s%s",
				   msg && msg[0] ? msg : "the worker reported a failure",
				   fix ? "; " : "", fix ? fix : "");
		free(msg);
		json_decref(resp);
		resp = NULL;
	}
	/* said on every call, printed or not (whether it printed is not disclosed either),
	 * after what decided its status */
	if (sanitized)
		govex__result_diag(res, "output_withheld", NULL,
				   "the call's stdout and stderr are not disclosed (the policy's "
				   "results.disclosure is sanitized)");
	*ret_response = resp;
	*ret_result = res;
	return 0;
}
