/* SPDX-License-Identifier: MIT */
/*
 * Tool calls: a fixed pool of --max-concurrent threads takes calls from a bounded queue.
 * Each call has its own govex_cancel_token; notifications/cancelled cancels it (or drops a
 * queued call) and the call's reply is never sent.  A ticker thread sends
 * notifications/progress once a second for running calls that asked for it.
 *
 * Locking: pool->lock guards the queue, the in-flight list and every job's state; the
 * output lock (server.c) is only ever taken inside it, never the other way round.  A
 * job's reply is sent after it left the in-flight list, so no progress notification can
 * follow it and a cancel that arrives later finds nothing (the reply stands).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp.h"

#define QUEUE_MAX	256
#define TEXT_STREAM_MAX 16000
#define TEXT_VALUE_MAX	4000
#define TEXT_DIAG_MAX	8

struct job {
	struct job *qnext; /* queue */
	struct job *inext; /* in-flight list */
	json_t *id;
	const struct mcp_tool *tool;
	json_t *args;
	struct mcp_call_ctx ctx;
	char *client_name;
	govex_cancel_token *cancel;
	bool running;
	bool cancelled;
	uint64_t started_ms;
	uint64_t limit_ms;
};

struct mcp_pool {
	struct mcp_server *srv;
	govex_runtime *rt;
	const struct mcp_catalog *cat;
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t tick;
	struct job *qhead, *qtail;
	size_t queued;
	struct job *inflight;
	bool stop;
	pthread_t *threads;
	unsigned n_threads;
	pthread_t ticker;
	bool have_ticker;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	json_decref(j->id);
	json_decref(j->args);
	json_decref(j->ctx.progress_token);
	free(j->client_name);
	govex_cancel_free(j->cancel);
	free(j);
}

static void inflight_remove(struct mcp_pool *p, struct job *j)
{
	for (struct job **pp = &p->inflight; *pp; pp = &(*pp)->inext)
		if (*pp == j) {
			*pp = j->inext;
			return;
		}
}

static void queue_remove(struct mcp_pool *p, struct job *j)
{
	struct job *prev = NULL;
	for (struct job *q = p->qhead; q; prev = q, q = q->qnext)
		if (q == j) {
			if (prev)
				prev->qnext = q->qnext;
			else
				p->qhead = q->qnext;
			if (p->qtail == q)
				p->qtail = prev;
			p->queued--;
			return;
		}
}

/* ---------------------------------------------------------------- the text for the model */

static void put_stream(FILE *f, const char *name, json_t *doc)
{
	char key[32];
	snprintf(key, sizeof(key), "%s_bytes", name);
	json_int_t total = json_integer_value(json_object_get(doc, key));
	snprintf(key, sizeof(key), "%s_truncated", name);
	bool cut = json_is_true(json_object_get(doc, key));
	json_t *js = json_object_get(doc, name);
	const char *s = json_string_value(js);
	size_t n = json_string_length(js);
	if (total == 0 && n == 0) {
		fprintf(f, "%s: (empty)\n", name);
		return;
	}
	fprintf(f, "%s (%lld bytes", name, (long long)total);
	if (cut)
		fprintf(f, "; TRUNCATED by the policy's limit: only the first %zu bytes were kept",
			n);
	fputs("):\n", f);
	if (n <= TEXT_STREAM_MAX) {
		fwrite(s, 1, n, f);
	} else if (strcmp(name, "stderr") == 0) {
		/* a traceback's end says most: keep the tail (at a character boundary) */
		size_t from = n - TEXT_STREAM_MAX;
		while (from < n && ((unsigned char)s[from] & 0xc0) == 0x80)
			from++;
		fprintf(f, "[... %zu earlier bytes of stderr are only in structuredContent]\n",
			from);
		fwrite(s + from, 1, n - from, f);
	} else {
		size_t to = TEXT_STREAM_MAX;
		while (to > 0 && ((unsigned char)s[to] & 0xc0) == 0x80)
			to--;
		fwrite(s, 1, to, f);
		fprintf(f, "\n[... %zu more bytes of stdout are only in structuredContent]",
			n - to);
	}
	if (n && s[n - 1] != '\n')
		fputc('\n', f);
}

static char *summary_text(json_t *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
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

	size_t i, shown = 0;
	json_t *d;
	json_array_foreach(json_object_get(doc, "diagnostics"), i, d)
	{
		const char *code = json_string_value(json_object_get(d, "code"));
		const char *msg = json_string_value(json_object_get(d, "message"));
		if (code && (strcmp(code, "stdout_truncated") == 0 ||
			     strcmp(code, "stderr_truncated") == 0))
			continue; /* said with the stream */
		if (shown++ == TEXT_DIAG_MAX) {
			fputs("(more diagnostics in structuredContent)\n", f);
			break;
		}
		fprintf(f, "%s: %s\n", code ? code : "?", msg ? msg : "");
	}
	json_t *v = json_object_get(doc, "value");
	if (v && !json_is_null(v)) {
		char *vs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (vs) {
			size_t vn = strlen(vs);
			if (vn > TEXT_VALUE_MAX)
				fprintf(f,
					"value: %.*s [... %zu more bytes in structuredContent]\n",
					TEXT_VALUE_MAX, vs, vn - TEXT_VALUE_MAX);
			else
				fprintf(f, "value: %s\n", vs);
			free(vs);
		}
	}
	put_stream(f, "stdout", doc);
	put_stream(f, "stderr", doc);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The CallToolResult for a result document (taken). */
static json_t *tool_result(json_t *doc, const struct mcp_call_ctx *ctx)
{
	const char *status = json_string_value(json_object_get(doc, "status"));
	char *text = summary_text(doc);
	json_t *content = json_array();
	json_array_append_new(content,
			      json_pack("{s:s, s:s}", "type", "text", "text", text ? text : ""));
	free(text);
	if (ctx->legacy_text_json) {
		/* before 2025-06-18 a client has no structuredContent: the document also as
		 * text, as the spec of 2025-06-18 recommends for compatibility */
		char *js = json_dumps(doc, JSON_COMPACT);
		if (js)
			json_array_append_new(content,
					      json_pack("{s:s, s:s}", "type", "text", "text", js));
		free(js);
	}
	json_t *r = json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", doc,
			      "isError", !status || strcmp(status, "success") != 0);
	if (r && ctx->modern)
		mcp_stamp_modern(r);
	return r;
}

/* ---------------------------------------------------------------- running a call */

static govex_result *refusal(enum govex_status st, const char *code, const char *msg)
{
	govex_result *r = NULL;
	if (govex_result_new_refusal(st, code, msg, &r) < 0)
		return NULL;
	return r;
}

static govex_result *run_snippet(struct mcp_pool *p, struct job *j, const char *const *md,
				 struct mcp_program *prog)
{
	json_t *a = j->args;
	json_t *code = json_object_get(a, "code"), *in = json_object_get(a, "stdin");
	json_t *to = json_object_get(a, "timeout_ms"), *inputs = json_object_get(a, "inputs");
	char *inputs_json = inputs ? json_dumps(inputs, JSON_COMPACT) : NULL;
	int r = mcp_program_build(json_string_value(code), json_string_length(code), inputs_json,
				  &p->cat->bounds, prog);
	free(inputs_json);
	if (r < 0)
		return refusal(GOVEX_STATUS_EXECUTION_FAILED, "internal_error",
			       "mcp: out of memory");
	if (r == 1) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "code: the snippet with its INPUTS exceeds limits.code_bytes (%llu)",
			 (unsigned long long)p->cat->bounds.code_bytes);
		return refusal(GOVEX_STATUS_INVALID_INPUT, "code_too_large", msg);
	}
	struct govex_request req;
	memset(&req, 0, sizeof(req));
	req.language = "python";
	req.code = prog->code;
	req.code_len = prog->len;
	if (in) {
		req.stdin_data = json_string_value(in);
		req.stdin_len = json_string_length(in);
	}
	req.limits.wall_ms = json_is_integer(to) ? (uint64_t)json_integer_value(to) : 0;
	req.metadata = md;
	req.cancel = j->cancel;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	if (govex_runtime_run(p->rt, &req, &res, &ge) < 0) {
		mcp_log("run: %s", ge.message);
		return refusal(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message);
	}
	return res;
}

static govex_result *run_function(struct mcp_pool *p, struct job *j, const char *const *md)
{
	const struct mcp_module *m = j->tool->module;
	char msg[600];
	char *now = NULL;
	size_t now_len = 0;
	int r = mcp_read_source(m->path, &now, &now_len);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "module: cannot read it again: %s", strerror(-r));
		return refusal(GOVEX_STATUS_SOURCE_MISMATCH, "source_unreadable", msg);
	}
	char *args = json_dumps(j->args ? j->args : json_object(), JSON_COMPACT);
	struct govex_call call;
	memset(&call, 0, sizeof(call));
	/* the plan binds the bytes read at start-up; the call re-reads the file, so a module
	 * changed on disk since gives source_mismatch, never a silent reload */
	call.source.data = m->data;
	call.source.len = m->len;
	call.source.path = m->path;
	call.source.notebook = m->notebook;
	call.function = j->tool->function;
	call.args = args;
	call.args_len = args ? strlen(args) : 0;
	call.metadata = md;
	call.cancel = j->cancel;
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error ge = {0};
	if (govex_runtime_plan_call(p->rt, &call, &plan, &res, &ge) < 0) {
		mcp_log("plan call: %s", ge.message);
		res = refusal(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message);
	} else if (plan) {
		call.source.data = now;
		call.source.len = now_len;
		if (govex_runtime_call(p->rt, plan, &call, &res, &ge) < 0) {
			mcp_log("call: %s", ge.message);
			res = refusal(GOVEX_STATUS_EXECUTION_FAILED, "internal_error", ge.message);
		}
	}
	govex_plan_free(plan);
	free(args);
	free(now);
	return res;
}

static json_t *run_job(struct mcp_pool *p, struct job *j)
{
	char *idtext = json_dumps(j->id, JSON_COMPACT | JSON_ENCODE_ANY);
	char *md_tool = NULL, *md_id = NULL, *md_client = NULL;
	if (asprintf(&md_tool, "mcp.tool=%s", j->tool->name) < 0)
		md_tool = NULL;
	if (asprintf(&md_id, "mcp.request_id=%.200s", idtext ? idtext : "?") < 0)
		md_id = NULL;
	if (asprintf(&md_client, "mcp.client=%.100s", j->client_name ? j->client_name : "unknown") <
	    0)
		md_client = NULL;
	free(idtext);
	const char *md[4] = {md_tool, md_id, md_client, NULL};
	if (!md_tool || !md_id || !md_client)
		md[0] = NULL;

	struct mcp_program prog;
	memset(&prog, 0, sizeof(prog));
	govex_result *res = j->tool->kind == MCP_TOOL_SNIPPET ? run_snippet(p, j, md, &prog)
							      : run_function(p, j, md);
	free(md_tool);
	free(md_id);
	free(md_client);
	json_t *doc = NULL;
	if (res) {
		size_t n;
		const char *js = govex_result_json(res, &n);
		json_error_t e;
		doc = json_loadb(js, n, 0, &e);
		govex_result_free(res);
	}
	if (!doc) {
		mcp_program_free(&prog);
		return NULL;
	}
	mcp_program_extract_value(&prog, doc);
	mcp_program_free(&prog);
	if (j->ctx.log_level >= 0) {
		const char *st = json_string_value(json_object_get(doc, "status"));
		bool ok = st && strcmp(st, "success") == 0;
		mcp_notify_log(p->srv, j->ctx.log_level, ok ? "info" : "warning",
			       json_pack("{s:s, s:s, s:O?}", "tool", j->tool->name, "status",
					 st ? st : "?", "usage", json_object_get(doc, "usage")));
	}
	return tool_result(doc, &j->ctx);
}

static void send_progress(struct mcp_pool *p, struct job *j, const char *message)
{
	uint64_t el = now_ms() - j->started_ms;
	if (el > j->limit_ms)
		el = j->limit_ms;
	json_t *params =
	    json_pack("{s:O, s:I, s:I, s:s}", "progressToken", j->ctx.progress_token, "progress",
		      (json_int_t)el, "total", (json_int_t)j->limit_ms, "message", message);
	mcp_send(p->srv, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
				   "notifications/progress", "params", params));
}

static void *worker(void *arg)
{
	struct mcp_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && !p->qhead)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		struct job *j = p->qhead;
		queue_remove(p, j);
		j->running = true;
		j->started_ms = now_ms();
		if (j->ctx.progress_token)
			send_progress(p, j, "started");
		pthread_mutex_unlock(&p->lock);

		json_t *result = run_job(p, j);

		pthread_mutex_lock(&p->lock);
		inflight_remove(p, j);
		bool cancelled = j->cancelled;
		pthread_mutex_unlock(&p->lock);
		if (!cancelled) {
			json_t *msg =
			    result ? json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", j->id,
					       "result", result)
				   : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
					       j->id, "error", "code", RPC_INTERNAL_ERROR,
					       "message", "internal error: no result");
			mcp_send(p->srv, msg);
		}
		json_decref(result);
		job_free(j);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void *ticker(void *arg)
{
	struct mcp_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&p->tick, &p->lock, &ts);
		if (p->stop)
			break;
		for (struct job *j = p->inflight; j; j = j->inext)
			if (j->running && !j->cancelled && j->ctx.progress_token)
				send_progress(p, j, "running");
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int mcp_pool_new(struct mcp_server *srv, govex_runtime *rt, const struct mcp_catalog *cat,
		 unsigned max_concurrent, struct mcp_pool **ret)
{
	struct mcp_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->srv = srv;
	p->rt = rt;
	p->cat = cat;
	p->threads = calloc(max_concurrent, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->tick, &ca);
	pthread_condattr_destroy(&ca);

	/* Pool threads get every signal blocked: the main thread alone handles them, and
	 * the library resets the mask of what it starts. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = 0;
	for (unsigned i = 0; i < max_concurrent; i++) {
		r = pthread_create(&p->threads[i], NULL, worker, p);
		if (r != 0)
			break;
		p->n_threads++;
	}
	if (r == 0) {
		r = pthread_create(&p->ticker, NULL, ticker, p);
		p->have_ticker = r == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		mcp_pool_free(p);
		return -r;
	}
	*ret = p;
	return 0;
}

int mcp_pool_submit(struct mcp_pool *p, json_t *id, const struct mcp_tool *tool, json_t *args,
		    struct mcp_call_ctx *ctx)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j || govex_cancel_new(&j->cancel) < 0) {
		free(j);
		json_decref(args);
		json_decref(ctx->progress_token);
		return -ENOMEM;
	}
	j->id = id;
	j->tool = tool;
	j->args = args;
	j->ctx = *ctx;
	j->client_name = ctx->client_name ? strdup(ctx->client_name) : NULL;
	j->ctx.client_name = NULL;
	json_t *to = tool->kind == MCP_TOOL_SNIPPET ? json_object_get(args, "timeout_ms") : NULL;
	j->limit_ms =
	    json_is_integer(to) ? (uint64_t)json_integer_value(to) : p->cat->bounds.wall_ms;

	pthread_mutex_lock(&p->lock);
	int r = 0;
	for (struct job *q = p->inflight; q; q = q->inext)
		if (json_equal(q->id, id)) {
			r = -EEXIST;
			break;
		}
	if (r == 0 && p->queued >= QUEUE_MAX)
		r = -EBUSY;
	if (r == 0) {
		if (p->qtail)
			p->qtail->qnext = j;
		else
			p->qhead = j;
		p->qtail = j;
		p->queued++;
		j->inext = p->inflight;
		p->inflight = j;
		pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	if (r < 0) {
		j->id = NULL; /* not taken: the caller answers with it */
		job_free(j);
	}
	return r;
}

bool mcp_pool_cancel(struct mcp_pool *p, json_t *id)
{
	bool found = false;
	struct job *drop = NULL;
	pthread_mutex_lock(&p->lock);
	for (struct job *j = p->inflight; j; j = j->inext)
		if (json_equal(j->id, id)) {
			found = true;
			j->cancelled = true;
			if (j->running) {
				govex_cancel(j->cancel);
			} else {
				queue_remove(p, j);
				inflight_remove(p, j);
				drop = j;
			}
			break;
		}
	pthread_mutex_unlock(&p->lock);
	job_free(drop);
	return found;
}

void mcp_pool_free(struct mcp_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	struct job *j = p->inflight, *next;
	p->inflight = NULL;
	for (; j; j = next) {
		next = j->inext;
		j->cancelled = true;
		if (j->running) {
			/* its worker still owns it: keep it listed, cancelled */
			govex_cancel(j->cancel);
			j->inext = p->inflight;
			p->inflight = j;
		} else {
			queue_remove(p, j);
			job_free(j);
		}
	}
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->tick);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	if (p->have_ticker)
		pthread_join(p->ticker, NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->tick);
	free(p->threads);
	free(p);
}
