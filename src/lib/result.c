/* SPDX-License-Identifier: MIT */
/* govex.result/v1: run-time facts of one run, and its JSON document. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "files.h"
#include "internal.h"
#include "runtime.h"
#include "values.h"

struct govex_result {
	struct govex_result_view view;
	json_t *diagnostics;
	json_t *value;
	char *backend_name, *backend_version;
	govex__ctlset controls;
	char *policy_digest, *plan_digest;
	char *out, *err;
	char *value_text;
	char *json;
	size_t json_len;
	char summary[1088]; /* a status name, ": ", a diagnostic message (< 1024) */
	/* outputs were requested: the files the run left (files.h) */
	bool outputs;
	struct govex__outfiles *outfiles;
	/* filtered networking: the egress ledger (egress.h), or NULL */
	json_t *egress;
};

static const char *const status_names[] = {
    "success",	      "execution_failed", "timeout",	    "cancelled",
    "resource_limit", "output_limit",	  "invalid_input",  "policy_refused",
    "worker_failed",  "binding_failed",	  "result_invalid", "source_mismatch",
};

static const char *const term_names[] = {
    NULL,	    "exited",	 "signaled",	 "timeout", "cancelled",
    "memory_limit", "cpu_limit", "output_limit", "refused", "launch_failed",
};

GOVEX_API const char *govex_status_name(enum govex_status s)
{
	return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

GOVEX_API const char *govex_termination_name(enum govex_termination t)
{
	if (t == GOVEX_TERM_NONE)
		return "refused";
	return (unsigned)t < ARRAY_SIZE(term_names) ? term_names[t] : "unknown";
}

govex_result *govex__result_new(enum govex_status status, enum govex_termination term)
{
	govex_result *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->diagnostics = json_array();
	if (!r->diagnostics) {
		free(r);
		return NULL;
	}
	r->view.status = status;
	r->view.termination = term;
	r->view.exit_code = -1;
	return r;
}

void govex__result_set_status(govex_result *r, enum govex_status status,
			      enum govex_termination term)
{
	r->view.status = status;
	r->view.termination = term;
}

void govex__result_diag(govex_result *r, const char *code, json_t *extra, const char *fmt, ...)
{
	/* room for the longest message govex writes (a missing-controls refusal naming
	 * its backend, with the cgroup hint, is some 600 bytes) */
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *d = extra && json_is_object(extra) ? extra : json_object();
	if (extra && d != extra)
		json_decref(extra);
	json_object_set_new(d, "code", json_string(code));
	/* messages are text: never let a stray byte break the document */
	char *clean = NULL;
	size_t clen;
	uint64_t rep;
	if (govex__utf8_sanitize(msg, strlen(msg), false, &clean, &clen, &rep) != (size_t)-1) {
		json_object_set_new(d, "message", json_stringn(clean, clen));
		free(clean);
	}
	json_array_append_new(r->diagnostics, d);
}

void govex__result_set_backend(govex_result *r, const char *name, const char *version,
			       govex__ctlset controls)
{
	free(r->backend_name);
	free(r->backend_version);
	r->backend_name = name ? strdup(name) : NULL;
	r->backend_version = version ? strdup(version) : NULL;
	r->controls = controls;
	r->view.backend_name = r->backend_name;
}

void govex__result_set_digests(govex_result *r, const char *policy, const char *plan)
{
	free(r->policy_digest);
	free(r->plan_digest);
	r->policy_digest = policy ? strdup(policy) : NULL;
	r->plan_digest = plan ? strdup(plan) : NULL;
	r->view.policy_digest = r->policy_digest;
	r->view.plan_digest = r->plan_digest;
}

void govex__result_set_value(govex_result *r, json_t *value)
{
	json_decref(r->value);
	free(r->value_text);
	r->value = value;
	/* DEL and C1 as \u escapes: the same value, but nothing a terminal acts on */
	r->value_text =
	    value ? govex__json_escape_controls(govex__json_dumps(value, JSON_SORT_KEYS)) : NULL;
	r->view.value = r->value_text;
}

/* What a control denies, in the denied_by_policy messages. */
static const struct {
	size_t off;
	const char *control, *what;
} denial_kinds[] = {
    {offsetof(struct govex__outcome, net_denied), "network_deny", "network access"},
    {offsetof(struct govex__outcome, exec_denied), "subprocess_deny", "starting programs"},
};

/* Denials the sandbox counted (contract section 6): they come from the shim's report,
 * never from the run's output or frames, so a run cannot forge or hide them.  Each was
 * refused with an error the code saw, and the run went on; the message is worded for a
 * run that did not succeed (the denial may be why), and again by denials_succeeded. */
static void denials(govex_result *r, const struct govex__outcome *o)
{
	/* the shim stops answering (so counting) after this many refusals of either kind,
	 * so that a flood costs its supervisor nothing more; the kernel refuses the rest */
	bool stopped = o->net_denied + o->exec_denied >= GOVEX_DENIALS_COUNTED_MAX;
	for (size_t i = 0; i < ARRAY_SIZE(denial_kinds); i++) {
		uint64_t n;
		memcpy(&n, (const char *)o + denial_kinds[i].off, sizeof(n));
		if (!n)
			continue;
		govex__result_diag(
		    r, "denied_by_policy",
		    json_pack("{s:[s], s:I, s:b}", "controls", denial_kinds[i].control, "attempts",
			      (json_int_t)n, "counting_stopped", stopped),
		    "the policy denies %s (%s%llu attempt%s refused%s)", denial_kinds[i].what,
		    stopped ? "at least " : "", (unsigned long long)n, n == 1 ? "" : "s",
		    stopped ? "; counting stopped there: later attempts of any kind "
			      "were refused uncounted"
			    : "");
	}
}

/* The ledger's reasons that are the policy's refusals (the allowlist's, and its
 * network_connections and network_bytes limits); the others (a malformed request, a
 * destination that did not answer) are in the ledger only. */
static bool egress_policy_reason(const char *reason)
{
	static const char *const policy[] = {
	    "not_in_allowlist", "refused_address",  "numeric_form", "byte_limit",
	    "total_limit",	"concurrent_limit", "ledger_full"};
	for (size_t i = 0; reason && i < ARRAY_SIZE(policy); i++)
		if (strcmp(reason, policy[i]) == 0)
			return true;
	return false;
}

/* Filtered networking: the proxy's ledger (kept by govex's proxy on the host, never
 * from the run's output) into the result, and each destination the policy refused as
 * a denied_by_policy diagnostic of control network_allowlist, with its attempts. */
static void egress_denials(govex_result *r, struct govex__outcome *o)
{
	json_decref(r->egress);
	r->egress = TAKE_PTR(o->egress);
	size_t i;
	json_t *e;
	json_array_foreach(r->egress, i, e)
	{
		const char *reason = json_string_value(json_object_get(e, "reason"));
		if (json_is_true(json_object_get(e, "allowed")) || !egress_policy_reason(reason))
			continue;
		const char *host = json_string_value(json_object_get(e, "host"));
		json_int_t port = json_integer_value(json_object_get(e, "port"));
		json_int_t n = json_integer_value(json_object_get(e, "connections"));
		bool v6 = host && strchr(host, ':');
		char dest[300];
		bool merged = strcmp(reason, "ledger_full") == 0;
		if (host)
			snprintf(dest, sizeof(dest), "%s%s%s:%lld", v6 ? "[" : "", host,
				 v6 ? "]" : "", (long long)port);
		else if (merged)
			snprintf(dest, sizeof(dest), "(past the ledger's 512, counted together)");
		else
			snprintf(dest, sizeof(dest), "(none named)");
		govex__result_diag(r, "denied_by_policy",
				   json_pack("{s:[s], s:I, s:b, s:s, s:s}", "controls",
					     "network_allowlist", "attempts", n, "counting_stopped",
					     false, "destination", dest, "reason", reason),
				   "the policy's network allowlist refused %s (%s; %lld attempt%s)",
				   dest, reason, (long long)n, n == 1 ? "" : "s");
	}
}

/* A run that succeeded despite its denials (pandas tries `uname -p` at import): each
 * denied_by_policy message says what happened -- attempted, refused, the run went on --
 * with nothing to fix or retry. */
static void denials_succeeded(govex_result *r)
{
	size_t i;
	json_t *d;
	json_array_foreach(r->diagnostics, i, d)
	{
		const char *code = json_string_value(json_object_get(d, "code"));
		if (!code || strcmp(code, "denied_by_policy") != 0)
			continue;
		const char *ctl =
		    json_string_value(json_array_get(json_object_get(d, "controls"), 0));
		json_t *jn = json_object_get(d, "attempts");
		for (size_t k = 0; ctl && json_is_integer(jn) && k < ARRAY_SIZE(denial_kinds);
		     k++) {
			if (strcmp(ctl, denial_kinds[k].control) != 0)
				continue;
			unsigned long long n = (unsigned long long)json_integer_value(jn);
			bool stopped = json_is_true(json_object_get(d, "counting_stopped"));
			char msg[400];
			snprintf(msg, sizeof(msg),
				 "the policy refused %s (%s%llu attempt%s, control %s%s); the "
				 "code went on and the run succeeded",
				 denial_kinds[k].what, stopped ? "at least " : "", n,
				 n == 1 ? "" : "s", ctl,
				 stopped ? "; counting stopped there: later attempts of any kind "
					   "were refused uncounted"
					 : "");
			json_object_set_new(d, "message", json_string(msg));
		}
	}
}

/* ---- files out (files.h) ---- */

/* The files out are the result's once taken (result_take_files); files.c parses them. */
struct govex__outfiles *govex__outfiles_free(struct govex__outfiles *o)
{
	if (!o)
		return NULL;
	for (size_t i = 0; i < o->n; i++) {
		free(o->f[i].name);
		free(o->f[i].data);
	}
	free(o->f);
	json_decref(o->diags);
	free(o);
	return NULL;
}

/* Takes the outcome's output files and their diagnostics. */
static void result_take_files(govex_result *r, struct govex__outcome *o)
{
	if (!o->outputs)
		return;
	r->outputs = true;
	govex__outfiles_free(r->outfiles);
	r->outfiles = TAKE_PTR(o->outfiles);
	if (!r->outfiles) {
		govex__result_diag(r, "output_skipped", NULL,
				   "the output files could not be collected");
		return;
	}
	size_t i;
	json_t *d;
	json_array_foreach(r->outfiles->diags, i, d) json_array_append(r->diagnostics, d);
}

/* The document's "files": [{name, bytes, sha256, mime}]. */
static json_t *files_json(const govex_result *r)
{
	json_t *a = json_array();
	for (size_t i = 0; a && r->outfiles && i < r->outfiles->n; i++) {
		const struct govex__outfile *f = &r->outfiles->f[i];
		json_array_append_new(a, json_pack("{s:s, s:I, s:s, s:s}", "name", f->name, "bytes",
						   (json_int_t)f->len, "sha256", f->sha256 + 7,
						   "mime", f->mime));
	}
	return a;
}

GOVEX_API size_t govex_result_file_count(const govex_result *r)
{
	return r && r->outfiles ? r->outfiles->n : 0;
}

GOVEX_API int govex_result_file(const govex_result *r, size_t i, const char **ret_name,
				const char **ret_mime, const void **ret_data, size_t *ret_len)
{
	if (!r || !r->outfiles || i >= r->outfiles->n)
		return -GOVEX_EINVAL;
	const struct govex__outfile *f = &r->outfiles->f[i];
	if (ret_name)
		*ret_name = f->name;
	if (ret_mime)
		*ret_mime = f->mime;
	if (ret_data)
		*ret_data = f->data;
	if (ret_len)
		*ret_len = f->len;
	return 0;
}

/* Takes the outcome's buffers. */
void govex__result_take_outcome(govex_result *r, struct govex__outcome *o)
{
	r->out = TAKE_PTR(o->out.data);
	r->err = TAKE_PTR(o->err.data);
	r->view.stdout_data = r->out ? r->out : "";
	r->view.stdout_len = o->out.len;
	r->view.stderr_data = r->err ? r->err : "";
	r->view.stderr_len = o->err.len;
	r->view.stdout_bytes = o->out_bytes;
	r->view.stderr_bytes = o->err_bytes;
	r->view.stdout_truncated = o->out_truncated;
	r->view.stderr_truncated = o->err_truncated;
	r->view.wall_ms = o->wall_ms;
	r->view.cpu_ms = o->cpu_ms;
	r->view.max_rss_bytes = o->max_rss_bytes;
	r->view.termination = o->term;
	if (o->term == GOVEX_TERM_EXITED)
		r->view.exit_code = o->exit_code;
	if (o->term == GOVEX_TERM_SIGNALED || o->term == GOVEX_TERM_CPU_LIMIT ||
	    o->term == GOVEX_TERM_MEMORY_LIMIT)
		r->view.signal = o->signal;
	denials(r, o);
	egress_denials(r, o);
	result_take_files(r, o);
}

static json_t *text_json(govex_result *r, const char *stream, const char *data, size_t len,
			 bool truncated)
{
	char *clean = NULL;
	size_t clen;
	uint64_t replaced = 0;
	if (govex__utf8_sanitize(data ? data : "", len, truncated, &clean, &clen, &replaced) ==
	    (size_t)-1)
		return json_string("");
	json_t *s = json_stringn(clean, clen);
	free(clean);
	if (replaced) {
		char code[32];
		snprintf(code, sizeof(code), "%s_not_utf8", stream);
		govex__result_diag(r, code,
				   json_pack("{s:I}", "replaced_bytes", (json_int_t)replaced),
				   "%s: %llu bytes that are not UTF-8 were replaced by U+FFFD",
				   stream, (unsigned long long)replaced);
	}
	return s;
}

/* The document's text (r->json) and summary, from what the result holds now. */
static int render(govex_result *r)
{
	struct govex_result_view *v = &r->view;
	json_t *out = text_json(r, "stdout", v->stdout_data, v->stdout_len, v->stdout_truncated);
	json_t *err = text_json(r, "stderr", v->stderr_data, v->stderr_len, v->stderr_truncated);
	json_t *backend = r->backend_name ? json_pack("{s:s, s:s?, s:o}", "name", r->backend_name,
						      "version", r->backend_version, "controls",
						      govex__ctlset_json(r->controls))
					  : json_null();
	json_t *doc = json_pack(
	    "{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:I, s:I, s:b, s:b, s:O, s:O,"
	    " s:{s:I, s:I, s:I}, s:o, s:o, s:o}",
	    "version", GOVEX_RESULT_VERSION, "status", govex_status_name(v->status), "termination",
	    govex_termination_name(v->termination), "exit_code",
	    v->termination == GOVEX_TERM_EXITED ? json_integer(v->exit_code) : json_null(),
	    "signal", v->signal ? json_integer(v->signal) : json_null(), "stdout", out, "stderr",
	    err, "stdout_bytes", (json_int_t)v->stdout_bytes, "stderr_bytes",
	    (json_int_t)v->stderr_bytes, "stdout_truncated", v->stdout_truncated,
	    "stderr_truncated", v->stderr_truncated, "value", r->value ? r->value : json_null(),
	    "diagnostics", r->diagnostics, "usage", "wall_ms", (json_int_t)v->wall_ms, "cpu_ms",
	    (json_int_t)v->cpu_ms, "max_rss_bytes", (json_int_t)v->max_rss_bytes, "backend",
	    backend, "policy_digest",
	    r->policy_digest ? json_string(r->policy_digest) : json_null(), "plan_digest",
	    r->plan_digest ? json_string(r->plan_digest) : json_null());
	if (!doc)
		return -ENOMEM;
	if (r->egress && json_object_set(doc, "egress", r->egress) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	if (r->outputs && json_object_set_new(doc, "files", files_json(r)) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	/* reals (a value's) in their shortest form; otherwise jansson's bytes */
	char *s = govex__json_dumps(doc, JSON_SORT_KEYS);
	json_decref(doc);
	if (s) /* DEL and C1 as \u escapes: safe to print on a terminal */
		s = govex__json_escape_controls(s);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return -ENOMEM;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	free(r->json);
	r->json = t;
	r->json_len = n + 1;

	json_t *d0 = json_array_get(r->diagnostics, 0);
	const char *m0 = d0 ? json_string_value(json_object_get(d0, "message")) : NULL;
	snprintf(r->summary, sizeof(r->summary), "%s%s%s", govex_status_name(v->status),
		 m0 ? ": " : "", m0 ? m0 : "");
	return 0;
}

int govex__result_finish(govex_result *r)
{
	struct govex_result_view *v = &r->view;
	if (v->status == GOVEX_STATUS_SUCCESS)
		denials_succeeded(r);
	if (v->stdout_truncated)
		govex__result_diag(r, "stdout_truncated", NULL, "stdout: kept %zu of %llu bytes",
				   v->stdout_len, (unsigned long long)v->stdout_bytes);
	if (v->stderr_truncated)
		govex__result_diag(r, "stderr_truncated", NULL, "stderr: kept %zu of %llu bytes",
				   v->stderr_len, (unsigned long long)v->stderr_bytes);
	return render(r);
}

GOVEX_API int govex_result_add_diagnostic(govex_result *r, const char *code, const char *message)
{
	if (!r || !code || !message || !code[0])
		return -GOVEX_EINVAL;
	for (const char *c = code; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && *c != '_')
			return -GOVEX_EINVAL;
	govex__result_diag(r, code, NULL, "%s", message);
	return render(r);
}

GOVEX_API const struct govex_result_view *govex_result_view(const govex_result *r)
{
	return r ? &r->view : NULL;
}

GOVEX_API const char *govex_result_json(const govex_result *r, size_t *ret_len)
{
	if (!r)
		return NULL;
	if (ret_len)
		*ret_len = r->json_len;
	return r->json;
}

GOVEX_API const char *govex_result_summary(const govex_result *r)
{
	return r ? r->summary : NULL;
}

GOVEX_API int govex_result_exit_status(const govex_result *r)
{
	if (!r)
		return 125;
	const struct govex_result_view *v = &r->view;
	switch (v->termination) {
	case GOVEX_TERM_EXITED:
		return v->exit_code;
	case GOVEX_TERM_TIMEOUT:
		return 124;
	case GOVEX_TERM_SIGNALED:
	case GOVEX_TERM_CPU_LIMIT:
	case GOVEX_TERM_MEMORY_LIMIT:
	case GOVEX_TERM_OUTPUT_LIMIT:
		return 128 + (v->signal ? v->signal : SIGKILL);
	case GOVEX_TERM_CANCELLED:
		return 128 + SIGTERM;
	default:
		return 125;
	}
}

GOVEX_API int govex_result_new_refusal(enum govex_status status, const char *code,
				       const char *message, govex_result **ret_result)
{
	if (!code || !message || !ret_result)
		return -GOVEX_EINVAL;
	govex_result *r = govex__result_new(status, status == GOVEX_STATUS_EXECUTION_FAILED
							? GOVEX_TERM_LAUNCH_FAILED
							: GOVEX_TERM_REFUSED);
	if (!r)
		return -ENOMEM;
	govex__result_diag(r, code, NULL, "%s", message);
	if (govex__result_finish(r) < 0) {
		govex_result_free(r);
		return -ENOMEM;
	}
	*ret_result = r;
	return 0;
}

GOVEX_API govex_result *govex_result_free(govex_result *r)
{
	if (!r)
		return NULL;
	json_decref(r->diagnostics);
	json_decref(r->value);
	free(r->backend_name);
	free(r->backend_version);
	free(r->policy_digest);
	free(r->plan_digest);
	free(r->out);
	free(r->err);
	free(r->value_text);
	free(r->json);
	govex__outfiles_free(r->outfiles);
	json_decref(r->egress);
	free(r);
	return NULL;
}

govex_result *govex__refusal(govex_runtime *rt, enum govex_status status)
{
	govex_result *r = govex__result_new(status, GOVEX_TERM_REFUSED);
	if (r)
		govex__result_set_digests(r, rt->policy->digest, NULL);
	return r;
}
