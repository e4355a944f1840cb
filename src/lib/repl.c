/* SPDX-License-Identifier: MIT */
/*
 * REPL runs: the user's code runs in govex's worker (src/worker/worker.py, op "snippet"),
 * which answers the value of a trailing expression over the response descriptor.
 *
 * The program is `python -I [-S] -c WORKER`; its stdin is one govex.frame/v1 request
 * frame {"op":"snippet", "code", "code_digest", "inputs", "value_max"} followed by the
 * request's stdin (the worker reads exactly the frame; the user's sys.stdin reads the
 * rest).  The user's stdout and stderr are the run's.  How the run ended decides
 * (DESIGN.md "Trust boundaries": the worker runs the user's code and is untrusted): exit
 * 0 is a success whose value is the frame's; no frame or a bad one then is
 * worker_failed; a non-zero exit is execution_failed, with the exception's type, message
 * and traceback from the frame when there is one; a frame never changes a status that
 * the termination gave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "repl.h"

/* govex__frame_encode, govex__worker_argv, govex__exception_diag and govex__value_fix are
 * the worker's, shared with call mode (callframe.c) */

static int refuse(govex_runtime *rt, govex_result **ret, const char *code, const char *msg)
{
	*ret = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
	if (!*ret)
		return -ENOMEM;
	govex__result_diag(*ret, code, NULL, "%s", msg);
	return 1;
}

int govex__repl_check(govex_runtime *rt, const struct govex_request *req,
		      govex_result **ret_refusal)
{
	*ret_refusal = NULL;
	if (!req->repl) {
		if (req->inputs_json)
			return refuse(rt, ret_refusal, "invalid_inputs",
				      "inputs: given only with a repl run");
		return 0;
	}
	if (!req->inputs_json)
		return 0;
	if (req->inputs_len > rt->policy->limits.call_input_bytes) {
		*ret_refusal = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (!*ret_refusal)
			return -ENOMEM;
		govex__result_diag(*ret_refusal, "input_too_large", NULL,
				   "inputs: %zu bytes exceeds limits.call_input_bytes (%llu)",
				   req->inputs_len,
				   (unsigned long long)rt->policy->limits.call_input_bytes);
		return 1;
	}
	if (!govex__utf8_valid(req->inputs_json, req->inputs_len))
		return refuse(rt, ret_refusal, "invalid_inputs", "inputs: not valid UTF-8");
	json_error_t je;
	_cleanup_json_ json_t *v =
	    json_loadb(req->inputs_json, req->inputs_len, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		char msg[200];
		snprintf(msg, sizeof(msg), "inputs: line %d column %d: %.120s", je.line, je.column,
			 je.text);
		return refuse(rt, ret_refusal, "invalid_inputs", msg);
	}
	if (!json_is_object(v))
		return refuse(rt, ret_refusal, "invalid_inputs", "inputs: must be a JSON object");
	return 0;
}

uint64_t govex__repl_frame_max(const govex_runtime *rt)
{
	return rt->policy->limits.call_output_bytes + GOVEX__FRAME_SLACK;
}

int govex__repl_program(govex_runtime *rt, const struct govex_request *req, char ***ret_argv,
			char **ret_stdin, size_t *ret_stdin_len)
{
	char digest[72];
	_cleanup_free_ char *frame = NULL;
	size_t frame_len = 0;
	*ret_argv = NULL;
	*ret_stdin = NULL;
	*ret_stdin_len = 0;
	govex__sha256_digest(req->code, req->code_len, digest);
	json_t *inputs =
	    req->inputs_json ? json_stringn(req->inputs_json, req->inputs_len) : json_null();
	json_t *code = json_stringn(req->code, req->code_len);
	if (!inputs || !code) {
		json_decref(inputs);
		json_decref(code);
		return -EINVAL; /* not UTF-8: refused at planning */
	}
	_cleanup_json_ json_t *request =
	    json_pack("{s:s, s:s, s:o, s:s, s:o, s:I}", "version", GOVEX_FRAME_VERSION, "op",
		      "snippet", "code", code, "code_digest", digest, "inputs", inputs, "value_max",
		      (json_int_t)rt->policy->limits.call_output_bytes);
	if (!request)
		return -ENOMEM;
	int r = govex__frame_encode(request, &frame, &frame_len);
	if (r < 0)
		return r;
	char **argv = calloc(8, sizeof(char *));
	char *in = malloc(frame_len + req->stdin_len + 1);
	if (!argv || !in || govex__worker_argv(rt, false, argv) < 0) {
		free(argv);
		free(in);
		return -ENOMEM;
	}
	memcpy(in, frame, frame_len);
	if (req->stdin_len)
		memcpy(in + frame_len, req->stdin_data, req->stdin_len);
	in[frame_len + req->stdin_len] = '\0';
	*ret_argv = argv;
	*ret_stdin = in;
	*ret_stdin_len = frame_len + req->stdin_len;
	return 0;
}

/* The value_omitted diagnostic: the value exists but is not in the result.  The frame
 * may name the item refused inside it (item_type) and a fix (value_fix). */
static void value_omitted(govex_result *res, json_t *om)
{
	const char *reason = json_string_value(json_object_get(om, "reason"));
	const char *type = json_string_value(json_object_get(om, "type"));
	const char *item = json_string_value(json_object_get(om, "item_type"));
	const char *fixname = json_string_value(json_object_get(om, "fix"));
	const char *fix = govex__value_fix(fixname);
	json_t *jb = json_object_get(om, "bytes");
	bool large = reason && strcmp(reason, "too_large") == 0;
	if (!type || !govex__identifier(type, strlen(type), EXC_TYPE_MAX))
		type = "object";
	if (item && !govex__identifier(item, strlen(item), EXC_TYPE_MAX))
		item = NULL;
	json_t *extra =
	    json_pack("{s:s, s:s}", "reason", large ? "too_large" : "not_json", "type", type);
	if (extra && json_is_integer(jb) && json_integer_value(jb) >= 0)
		json_object_set_new(extra, "bytes", json_integer(json_integer_value(jb)));
	if (extra && item)
		json_object_set_new(extra, "item_type", json_string(item));
	if (extra && fix)
		json_object_set_new(extra, "fix", json_string(fixname));
	bool inner = item && strcmp(item, type) != 0;
	if (large)
		govex__result_diag(res, "value_omitted", extra,
				   "value: the final expression's value (%s) exceeds "
				   "limits.call_output_bytes or the value node budget%s%s%s%s",
				   type, inner ? ": it holds an item of type " : "",
				   inner ? item : "", fix ? "; " : "", fix ? fix : "");
	else
		govex__result_diag(res, "value_omitted", extra,
				   "value: the final expression's value (%s) is not finite JSON "
				   "data%s%s%s%s",
				   type, inner ? ": it holds an item of type " : "",
				   inner ? item : "", fix ? "; " : "", fix ? fix : "");
}

static void worker_failed(govex_result *res, const char *msg)
{
	govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
				 govex_result_view(res)->termination);
	govex__result_diag(res, "worker_failed", NULL, "%s", msg);
}

/* The response frame's payload as a JSON object of this frame version, or NULL. */
static json_t *frame_payload(const struct govex__outcome *o)
{
	if (o->frame_state != GOVEX_FRAME_OK || o->frame.len < 8)
		return NULL;
	json_error_t je;
	json_t *resp = json_loadb(o->frame.data + 8, o->frame.len - 8,
				  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	const char *v = json_string_value(json_object_get(resp, "version"));
	if (!json_is_object(resp) || !v || strcmp(v, GOVEX_FRAME_VERSION) != 0) {
		json_decref(resp);
		return NULL;
	}
	return resp;
}

int govex__repl_finish(govex_runtime *rt, const struct govex__outcome *o, govex_result *res)
{
	(void)rt;
	if (o->term != GOVEX_TERM_EXITED)
		return 0; /* a timeout, a signal, a limit: the termination says it all */
	_cleanup_json_ json_t *resp = frame_payload(o);
	if (o->exit_code != 0) {
		/* execution_failed already; the exception, when the frame says which */
		json_t *exc = json_object_get(resp, "exception");
		const char *st = json_string_value(json_object_get(resp, "status"));
		if (exc && st && strcmp(st, "execution_failed") == 0 &&
		    govex__exception_diag(res, "exception", exc) < 0)
			return -ENOMEM;
		return 0;
	}
	/* exit 0 and no frame: the worker never answered (it answers sys.exit() too): the
	 * code ended the process under it (os._exit) or took its response descriptor */
	if (!resp) {
		worker_failed(res,
			      o->frame_state == GOVEX_FRAME_NONE
				  ? "the worker exited 0 without a response frame (os._exit, or "
				    "the response descriptor closed by the code): no value"
				  : "the worker's response frame is not valid");
		return 0;
	}
	const char *st = json_string_value(json_object_get(resp, "status"));
	if (!json_is_true(json_object_get(resp, "ok")) || !st || strcmp(st, "success") != 0) {
		json_t *jm = json_object_get(resp, "message");
		bool cut = false;
		_cleanup_free_ char *m = json_is_string(jm)
					     ? govex__text_clean(json_string_value(jm),
								 json_string_length(jm), 256, &cut)
					     : NULL;
		char msg[320];
		snprintf(msg, sizeof(msg), "the worker reported a failure%s%s", m ? ": " : "",
			 m ? m : "");
		worker_failed(res, msg);
		return 0;
	}
	if (govex_result_view(res)->status != GOVEX_STATUS_SUCCESS)
		return 0; /* e.g. output_limit: the termination's status stays, no value */
	json_t *value = json_object_get(resp, "value");
	json_t *om = json_object_get(resp, "value_omitted");
	if (value)
		govex__result_set_value(res, json_incref(value));
	else if (json_is_object(om))
		value_omitted(res, om);
	return 0;
}
