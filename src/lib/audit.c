/* SPDX-License-Identifier: MIT */
/* govex.audit/v1 events: one JSON object a line, to a callback and/or an fd.  Events carry
 * names, digests, statuses and usage; never code, stdin, output or environment values.
 * Also the runtime's events of a request: received, refused, finished. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime.h"

void govex__audit(const struct govex__audit *a, const char *run_id, const char *event,
		  json_t *fields)
{
	if (!a || (!a->fn && a->fd < 0)) {
		json_decref(fields);
		return;
	}
	json_t *o = fields ? fields : json_object();
	struct timespec ts;
	struct tm tm;
	char when[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%03ldZ", ts.tv_nsec / 1000000);
	json_object_set_new(o, "version", json_string(GOVEX_AUDIT_VERSION));
	json_object_set_new(o, "event", json_string(event));
	json_object_set_new(o, "run_id", json_string(run_id));
	json_object_set_new(o, "time", json_string(when));
	char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!line)
		return;
	size_t len = strlen(line);
	if (a->fn)
		a->fn(a->userdata, line, len);
	if (a->fd >= 0) {
		/* one write per line: appends from concurrent runs do not interleave */
		line[len] = '\n';
		if (a->lock)
			pthread_mutex_lock(a->lock);
		size_t off = 0;
		while (off < len + 1) {
			ssize_t w = write(a->fd, line + off, len + 1 - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		if (a->lock)
			pthread_mutex_unlock(a->lock);
	}
	free(line);
}

/* ---- the runtime's events ------------------------------------------------------------- */

static json_t *first_diag_code(govex_result *res)
{
	size_t len;
	const char *js = govex_result_json(res, &len);
	json_t *doc = js ? json_loadb(js, len, 0, NULL) : NULL;
	json_t *code = json_copy(
	    json_object_get(json_array_get(json_object_get(doc, "diagnostics"), 0), "code"));
	json_decref(doc);
	return code ? code : json_string("unknown");
}

void govex__audit_refused(govex_runtime *rt, const char *run_id, govex_result *res)
{
	govex__audit(&rt->audit, run_id, "decision",
		     json_pack("{s:s, s:s, s:o}", "decision", "refused", "status",
			       govex_status_name(govex_result_view(res)->status), "reason",
			       first_diag_code(res)));
}

void govex__audit_received(govex_runtime *rt, const char *run_id, const char *kind,
			   const struct govex_request *req)
{
	json_t *meta = json_object();
	for (size_t i = 0; req->metadata && req->metadata[i] && i < METADATA_MAX; i++) {
		const char *eq = strchr(req->metadata[i], '=');
		if (!eq || (size_t)(eq - req->metadata[i]) > METADATA_ITEM_MAX ||
		    !govex__utf8_valid(req->metadata[i], strlen(req->metadata[i])))
			continue;
		char key[METADATA_ITEM_MAX + 1];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - req->metadata[i]), req->metadata[i]);
		json_object_set_new(meta, key, json_string(eq + 1));
	}
	govex__audit(&rt->audit, run_id, "received",
		     json_pack("{s:s, s:s, s:I, s:I, s:o, s:s}", "kind", kind, "language", "python",
			       "code_bytes", (json_int_t)req->code_len, "stdin_bytes",
			       (json_int_t)req->stdin_len, "metadata", meta, "policy_digest",
			       rt->policy->digest));
}

void govex__audit_finish(govex_runtime *rt, const char *run_id, govex_result *res,
			 const govex_plan *plan)
{
	const struct govex_result_view *v = govex_result_view(res);
	if (v->termination == GOVEX_TERM_REFUSED || !plan) {
		govex__audit(&rt->audit, run_id, "finish",
			     json_pack("{s:s, s:s}", "status", govex_status_name(v->status),
				       "termination", "refused"));
		return;
	}
	govex__audit(&rt->audit, run_id, "finish",
		     json_pack("{s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I}, s:I, s:I, s:s}", "status",
			       govex_status_name(v->status), "termination",
			       govex_termination_name(v->termination), "exit_code",
			       v->termination == GOVEX_TERM_EXITED ? json_integer(v->exit_code)
								   : json_null(),
			       "signal", v->signal ? json_integer(v->signal) : json_null(), "usage",
			       "wall_ms", (json_int_t)v->wall_ms, "cpu_ms", (json_int_t)v->cpu_ms,
			       "max_rss_bytes", (json_int_t)v->max_rss_bytes, "stdout_bytes",
			       (json_int_t)v->stdout_bytes, "stderr_bytes",
			       (json_int_t)v->stderr_bytes, "plan_digest", plan->digest));
}
