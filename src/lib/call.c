/* SPDX-License-Identifier: MIT */
/*
 * Call mode: a call of one of a module's functions is a job (job.h): its source read
 * (callsource.c), inspected (inspect.c, a nested inspection job), the function and the
 * effects the policy requires checked, the plan filled with the source, the function
 * and the inspection's digest; at execute time the arguments checked (callargs.c), the
 * request frame sent to a fresh worker and its response decided on by the parent
 * (callframe.c), the value checked again.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "call.h"
#include "runtime.h"
#include "values.h"

struct call_job {
	const struct govex_call *call;
	struct source s;
	struct inspection in;
	json_t *fn;   /* the function's entry in the inspection (borrowed from in.doc) */
	json_t *args; /* the arguments, parsed (check) */
	char *frame;  /* the request frame (program) */
	char interface_digest[72];
};

/* The function's interface: what a caller relies on (name, sync or async, parameters
 * with their kinds, annotations and schemas, return annotation, input and output
 * schemas), not its docstring, line or effects.  Its digest is the plan's
 * interface_digest: a host can pin the interface a module keeps across edits. */
static int interface_digest(const json_t *fn, char out[72])
{
	static const char *const keys[] = {"name",	   "async",	    "parameters", "returns",
					   "input_schema", "output_schema", NULL};
	_cleanup_json_ json_t *o = json_object();
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; keys[i]; i++) {
		json_t *v = json_object_get(fn, keys[i]);
		if (v && json_object_set(o, keys[i], v) < 0)
			return -ENOMEM;
	}
	char *canon = NULL;
	size_t n = 0;
	int r = govex__canon(o, &canon, &n);
	if (r < 0)
		return r;
	govex__sha256_digest(canon, n, out);
	free(canon);
	return 0;
}

static int call_prepare(struct govex__job *j, govex_result **ret_refusal)
{
	struct call_job *cj = j->state;
	int r = govex__source_prepare(j->rt, &cj->call->source, &cj->s, ret_refusal);
	if (r == 0 && !*ret_refusal)
		j->req.code_len = cj->s.len; /* what the "received" event counts */
	return r;
}

/* a plan made earlier: one differing byte of the source refuses before anything */
static govex_result *given_source_mismatch(govex_runtime *rt, const govex_plan *given,
					   const struct source *s, bool *oom)
{
	json_t *src = json_object_get(given->doc, "source");
	const char *pd = json_string_value(json_object_get(src, "digest"));
	const char *nd = json_string_value(json_object_get(src, "notebook_digest"));
	*oom = false;
	if (pd && strcmp(pd, s->digest) == 0 &&
	    (nd ? s->notebook && strcmp(nd, s->notebook_digest) == 0 : !s->notebook))
		return NULL;
	govex_result *res = govex__refusal(rt, GOVEX_STATUS_SOURCE_MISMATCH);
	if (res)
		govex__result_diag(
		    res, "source_mismatch", NULL,
		    "source: its digest differs from the plan's (the source changed)");
	*oom = !res;
	return res;
}

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

/* the effects the policy requires to be known, unknown for fn: NULL, or the refusal */
static govex_result *unknown_effects(govex_runtime *rt, const char *function, json_t *fn, bool *oom)
{
	json_t *effects = json_object_get(fn, "effects");
	_cleanup_json_ json_t *unknown = json_array();
	for (size_t i = 0; rt->policy->require_known[i]; i++) {
		const char *e =
		    json_string_value(json_object_get(effects, rt->policy->require_known[i]));
		if (!e || strcmp(e, "unknown") == 0)
			json_array_append_new(unknown, json_string(rt->policy->require_known[i]));
	}
	*oom = !unknown;
	if (!json_array_size(unknown))
		return NULL;
	char list[300] = "";
	size_t i;
	json_t *e;
	json_array_foreach(unknown, i, e)
	{
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", json_string_value(e));
	}
	govex_result *res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
	if (res)
		govex__result_diag(res, "unknown_required_effect",
				   json_pack("{s:O}", "effects", unknown),
				   "function '%s': effects the policy requires to be known are "
				   "unknown: %s",
				   function, list);
	*oom = !res;
	return res;
}

/* before planning: the given plan's source, the function named, the inspection, the
 * function's eligibility and the effects the policy requires to be known */
static int call_resolve(struct govex__job *j, govex_result **ret_refusal)
{
	struct call_job *cj = j->state;
	const struct govex_call *call = cj->call;
	govex_runtime *rt = j->rt;
	bool oom = false;
	if (j->given && (*ret_refusal = given_source_mismatch(rt, j->given, &cj->s, &oom)))
		return 0;
	if (oom)
		return -ENOMEM;
	if (!call->function || !govex__call_identifier(call->function, strlen(call->function))) {
		*ret_refusal = govex__call_invalid(rt, "invalid_function",
						   "function: '%.80s' is not an identifier",
						   call->function ? call->function : "");
		return *ret_refusal ? 0 : -ENOMEM;
	}
	int r = govex__inspect_nested(j, call, &cj->s, &cj->in, ret_refusal, j->err);
	if (r < 0 || *ret_refusal)
		return r;
	if (!(cj->fn = find_function(cj->in.doc, call->function))) {
		*ret_refusal = govex__call_invalid(
		    rt, "unknown_function", "function '%s': no top-level function of that name",
		    call->function);
		return *ret_refusal ? 0 : -ENOMEM;
	}
	if (!json_is_true(json_object_get(cj->fn, "eligible"))) {
		const char *why = json_string_value(json_object_get(cj->fn, "reason"));
		govex_result *res = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		if (res)
			govex__result_diag(res, "function_not_eligible",
					   json_pack("{s:s?}", "reason", why),
					   "function '%s': not callable in call mode (%s)",
					   call->function, why ? why : "ineligible");
		*ret_refusal = res;
		return res ? 0 : -ENOMEM;
	}
	*ret_refusal = unknown_effects(rt, call->function, cj->fn, &oom);
	return oom ? -ENOMEM : 0;
}

static int call_fill(const struct govex__job *j, struct govex__plan_fields *f)
{
	const struct call_job *cj = j->state;
	f->source.digest = cj->s.digest;
	f->source.bytes = cj->s.len;
	f->source.path = cj->s.path;
	f->source.notebook_digest = cj->s.notebook ? cj->s.notebook_digest : NULL;
	f->source.module = cj->s.module;
	f->function = cj->fn;
	f->inspection_digest = cj->in.digest;
	if (interface_digest(cj->fn, ((struct call_job *)j->state)->interface_digest) < 0)
		return -ENOMEM;
	f->interface_digest = cj->interface_digest;
	f->require_known = j->rt->policy->require_known;
	f->observed = json_object_get(cj->fn, "effects");
	return 0;
}

/* after planning: the arguments, parsed and checked against the planned signature */
static int call_check(struct govex__job *j, govex_result **ret_refusal)
{
	struct call_job *cj = j->state;
	const struct govex_call *call = cj->call;
	govex_runtime *rt = j->rt;
	if (call->args) {
		json_error_t je;
		if (!govex__utf8_valid(call->args, call->args_len)) {
			*ret_refusal =
			    govex__call_invalid(rt, "invalid_arguments", "args: not valid UTF-8");
			return *ret_refusal ? 0 : -ENOMEM;
		}
		cj->args = json_loadb(call->args, call->args_len,
				      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (!cj->args) {
			/* jansson's own words: position and cause ("too big integer",
			 * "duplicate object key", ...) */
			*ret_refusal = govex__call_invalid(rt, "invalid_arguments",
							   "args: line %d column %d: %.120s",
							   je.line, je.column, je.text);
			return *ret_refusal ? 0 : -ENOMEM;
		}
	} else if (!(cj->args = json_object())) {
		return -ENOMEM;
	}
	size_t args_len = 0;
	*ret_refusal = govex__call_check_args(rt, json_object_get(j->plan->doc, "function"),
					      cj->args, j->d.limits.call_input_bytes, &args_len);
	return 0;
}

static int call_program(struct govex__job *j, struct govex__program *prog,
			govex_result **ret_refusal)
{
	struct call_job *cj = j->state;
	const struct source *s = &cj->s;
	const govex_plan *plan = j->plan;
	const struct govex__limits *l = &j->d.limits;
	json_t *request = json_pack(
	    "{s:s, s:s, s:s%, s:s, s:s, s:s, s:s%, s:s, s:s%, s:s, s:O, s:{s:I, s:I}}", "version",
	    GOVEX_FRAME_VERSION, "op", "call", "source", s->text, s->len, "source_digest",
	    s->digest, "module", s->module, "filename", s->filename, "plan", plan->canon, plan->len,
	    "plan_digest", plan->digest, "inspection", cj->in.canon, cj->in.len, "function",
	    cj->call->function, "args", cj->args, "limits", "call_input_bytes",
	    (json_int_t)l->call_input_bytes, "call_output_bytes", (json_int_t)l->call_output_bytes);
	size_t len = 0;
	int r = request ? govex__frame_encode(request, &cj->frame, &len) : -ENOMEM;
	json_decref(request);
	if (r < 0)
		return r;
	if (len > REQUEST_FRAME_MAX + 8) {
		*ret_refusal = govex__refusal(j->rt, GOVEX_STATUS_INVALID_INPUT);
		if (*ret_refusal)
			govex__result_diag(*ret_refusal, "request_too_large", NULL,
					   "call: the request frame of %zu bytes exceeds 64 MiB",
					   len);
		return *ret_refusal ? 0 : -ENOMEM;
	}
	if ((r = govex__worker_argv(j->rt, false, prog->argv)) < 0)
		return r;
	prog->stdin_data = cj->frame;
	prog->stdin_len = len;
	prog->frame = true;
	prog->frame_max = l->call_output_bytes + ENVELOPE_SLACK;
	return 0;
}

/* the worker's response decided on; a success's value checked again by the parent */
static int call_finish(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		       struct govex_error *err)
{
	json_t *resp = NULL;
	govex_result *res = NULL;
	uint64_t out_max = j->d.limits.call_output_bytes;
	int r = govex__worker_result(j, false, o, &resp, &res, err);
	if (r < 0)
		return r;
	*ret_result = res;
	if (!resp)
		return 0;
	json_t *value = json_object_get(resp, "value");
	/* bounded in nodes like the worker's values, and counted on the canonical bytes the
	 * worker counted (shortest reals) */
	bool bounded = govex__json_within(value, GOVEX_VALUE_NODES_MAX, GOVEX_VALUE_DEPTH_MAX);
	char *vj = bounded ? govex__json_dumps(value, JSON_SORT_KEYS) : NULL;
	if (value && !bounded) {
		govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
					 govex_result_view(res)->termination);
		govex__result_diag(res, "worker_failed", NULL,
				   "the response's value exceeds the node or depth budget");
	} else if (!vj) {
		govex__result_set_status(res, GOVEX_STATUS_WORKER_FAILED,
					 govex_result_view(res)->termination);
		govex__result_diag(res, "worker_failed", NULL, "the response has no value");
	} else if (strlen(vj) + 1 > out_max) {
		govex__result_set_status(res, GOVEX_STATUS_OUTPUT_LIMIT,
					 govex_result_view(res)->termination);
		govex__result_diag(res, "output_too_large", NULL,
				   "value: %zu bytes exceeds limits.call_output_bytes (%llu)",
				   strlen(vj) + 1, (unsigned long long)out_max);
	} else {
		govex__result_set_value(res, json_incref(value));
	}
	free(vj);
	json_decref(resp);
	return 0;
}

static void call_release(struct govex__job *j)
{
	struct call_job *cj = j->state;
	govex__source_release(&cj->s);
	govex__inspection_release(&cj->in);
	json_decref(cj->args);
	free(cj->frame);
	cj->args = NULL;
	cj->frame = NULL;
	cj->fn = NULL;
}

const struct govex__job_ops govex__job_call = {
    .kind = GOVEX_JOB_CALL,
    .received = {"call", "execute_call", "plan_call"},
    .approve = true,
    .prepare = call_prepare,
    .resolve = call_resolve,
    .fill = call_fill,
    .check = call_check,
    .program = call_program,
    .finish = call_finish,
    .release = call_release,
};

static int call_job_run(govex_runtime *rt, const govex_plan *given, const struct govex_call *call,
			enum govex__job_mode mode, govex_plan **ret_plan, govex_result **ret_result,
			struct govex_error *err)
{
	struct call_job cj;
	memset(&cj, 0, sizeof(cj));
	cj.call = call;
	struct govex__job j = {
	    .ops = &govex__job_call,
	    .rt = rt,
	    .mode = mode,
	    .given = given,
	    .req = govex__worker_request(call),
	    .state = &cj,
	};
	j.req.code_len = 0; /* the source's, once read (call_prepare) */
	return govex__job_execute(&j, ret_plan, ret_result, err);
}

GOVEX_API int govex_runtime_plan_call(govex_runtime *rt, const struct govex_call *call,
				      govex_plan **ret_plan, govex_result **ret_result,
				      struct govex_error *ret_err)
{
	if (!rt || !call || !ret_plan || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	return call_job_run(rt, NULL, call, GOVEX_JOB_PLAN_ONLY, ret_plan, ret_result, ret_err);
}

GOVEX_API int govex_runtime_call(govex_runtime *rt, const govex_plan *given,
				 const struct govex_call *call, govex_result **ret_result,
				 struct govex_error *ret_err)
{
	if (!rt || !call || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "call: missing argument");
	return call_job_run(rt, given, call, GOVEX_JOB_EXECUTE, NULL, ret_result, ret_err);
}
