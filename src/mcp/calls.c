/* SPDX-License-Identifier: MIT */
/*
 * Tool calls: a fixed pool of --max-concurrent threads (the running slots) takes calls from
 * per-client queues and runs each through the library's tool provider
 * (govex_toolset_invoke).  Each call has its own govex_cancel_token; notifications/cancelled
 * cancels it (or drops a queued call) and the call's reply is never sent.  A ticker thread
 * sends notifications/progress once a second for running calls that asked for it, and
 * answers calls that waited past the queue-time limit.  While a call runs, its output goes
 * to the client line by line as notifications/message (logger "stdout" at level info,
 * "stderr" at level warning) when the client set a logging level that admits them.
 *
 * Scheduling (issue 23): a call is filed under its client (the transport names it: a
 * session, else an address group; stdio is one client).  A free slot goes to the waiting
 * client with the fewest calls running, the one started least recently among equals, and
 * a client's calls run in the order they came.  So while others wait, no client holds more
 * than its share of the slots (max-min fair; a slot is never taken from a running call),
 * and a client alone may use them all.  Bounds: calls waiting per client (depth), in all,
 * and the bytes of their arguments; past them -EBUSY (HTTP 429).  A call that waits longer
 * than the queue-time limit is answered with an error and never runs.
 *
 * Locking: pool->lock guards the clients, their queues, the in-flight list and every
 * job's state; the output lock (server.c) is only ever taken inside it, never the other
 * way round.  A job's reply is sent after it left the in-flight list, so no progress
 * notification can follow it and a cancel that arrives later finds nothing (the reply
 * stands).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp.h"

/* Live output is coalesced (issue 23: 200 KB of short lines were 6,666 notifications):
 * the lines of a stream go out together, one notification at most every FLUSH_MS (the
 * first at once; FLUSH_SLOW_MS after FLUSH_FAST of them), or when CHUNK_MAX bytes wait;
 * a line longer than that goes in pieces.  The ticker sends what waited past the
 * interval, the end of the run the rest. */
#define CHUNK_MAX     ((size_t)64 << 10)
#define BRIEF_KEEP    ((size_t)8 << 10) /* longer strings of a result are not read */
#define FLUSH_MS      40
#define FLUSH_FAST    64
#define FLUSH_SLOW_MS 500

/* The output of one stream not yet sent (allocated at its first output). */
struct pending {
	size_t len;  /* bytes in buf */
	size_t done; /* of them, up to the last newline */
	uint64_t last_ms;
	unsigned sent;
	char buf[CHUNK_MAX];
};

struct client;

struct job {
	struct job *qnext; /* its client's queue */
	struct job *inext; /* in-flight list */
	struct client *cl;
	json_t *id;
	const void *owner; /* its calls are cancelled by id within the owner only */
	struct mcp_sink *sink;
	char *tool;
	char *args; /* the arguments' JSON text */
	size_t args_len;
	struct mcp_call_ctx ctx;
	char *client_name;
	govex_cancel_token *cancel;
	bool running;
	bool cancelled;
	uint64_t queued_ms;
	uint64_t started_ms;
	uint64_t limit_ms;
	struct timespec t0;
	struct mcp_server *srv;
	pthread_mutex_t out_lock; /* out: on_output's thread and the ticker */
	struct pending *out[2];	  /* stdout, stderr */
};

/* A client with calls queued or running (freed when it has none). */
struct client {
	struct client *next;
	char key[MCP_CLIENT_KEY_MAX];
	struct job *qhead, *qtail;
	unsigned queued, running;
	uint64_t turn; /* p->turns when a call of it last started */
};

/* Queue waits, seconds: the histogram's upper bounds. */
static const double wait_bounds[MCP_WAIT_BUCKETS] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
						     2.5,  5,	 10,  30,   60,	 120};

struct mcp_pool {
	struct mcp_server *srv;
	govex_toolset *ts;
	uint64_t wall_ms;
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t tick;
	struct client *clients;
	unsigned n_clients;
	size_t queued, queued_bytes;
	struct mcp_queue_limits lim;
	uint64_t turns;
	unsigned running;
	unsigned n_inflight;
	struct job *inflight;
	uint64_t run_ewma_ms;	  /* recent runs' duration, for Retry-After */
	struct mcp_pool_stats st; /* the counters of mcp_pool_stats */
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
	free(j->args);
	free(j->tool);
	json_decref(j->ctx.progress_token);
	free(j->client_name);
	govex_cancel_free(j->cancel);
	free(j->out[0]);
	free(j->out[1]);
	pthread_mutex_destroy(&j->out_lock);
	if (j->cancelled && j->sink && j->sink->cancelled)
		j->sink->cancelled(j->sink);
	if (j->sink && j->sink->unref)
		j->sink->unref(j->sink);
	free(j);
}

static void inflight_remove(struct mcp_pool *p, struct job *j)
{
	for (struct job **pp = &p->inflight; *pp; pp = &(*pp)->inext)
		if (*pp == j) {
			*pp = j->inext;
			p->n_inflight--;
			return;
		}
}

static struct client *client_find(struct mcp_pool *p, const char *key)
{
	for (struct client *c = p->clients; c; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

/* Frees c once it has nothing queued or running (lock held). */
static void client_release(struct mcp_pool *p, struct client *c)
{
	if (!c || c->queued || c->running)
		return;
	for (struct client **pp = &p->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			p->n_clients--;
			free(c);
			return;
		}
}

/* Takes a queued job off its client's queue (lock held; the client stays). */
static void queue_remove(struct mcp_pool *p, struct job *j)
{
	struct client *c = j->cl;
	struct job *prev = NULL;
	for (struct job *q = c ? c->qhead : NULL; q; prev = q, q = q->qnext)
		if (q == j) {
			if (prev)
				prev->qnext = q->qnext;
			else
				c->qhead = q->qnext;
			if (c->qtail == q)
				c->qtail = prev;
			q->qnext = NULL;
			c->queued--;
			p->queued--;
			p->queued_bytes -= j->args_len;
			return;
		}
}

/* Takes the first job of c's queue (lock held; c has one). */
static struct job *queue_pop(struct mcp_pool *p, struct client *c)
{
	struct job *j = c->qhead;
	c->qhead = j->qnext;
	if (!c->qhead)
		c->qtail = NULL;
	j->qnext = NULL;
	c->queued--;
	p->queued--;
	p->queued_bytes -= j->args_len;
	return j;
}

/* The client whose call runs next: the fewest running, then the least recently served. */
static struct client *next_client(struct mcp_pool *p)
{
	struct client *best = NULL;
	for (struct client *c = p->clients; c; c = c->next)
		if (c->queued && (!best || c->running < best->running ||
				  (c->running == best->running && c->turn < best->turn)))
			best = c;
	return best;
}

static void count_wait(struct mcp_pool *p, uint64_t ms)
{
	double s = (double)ms / 1000;
	for (size_t i = 0; i < MCP_WAIT_BUCKETS; i++)
		if (s <= wait_bounds[i])
			p->st.wait_bucket[i]++;
	p->st.wait_count++;
	p->st.wait_sum_ms += ms;
}

/* ---------------------------------------------------------------- live output */

/* Bytes as a JSON string: invalid UTF-8 bytes become '?' (a log line, not the record:
 * the result's stdout and stderr are exact). */
static json_t *text_of(const char *s, size_t n)
{
	json_t *t = json_stringn(s, n);
	if (t)
		return t;
	char *c = malloc(n ? n : 1);
	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++)
		c[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	t = json_stringn(c, n);
	free(c);
	return t;
}

static void emit_line(struct job *j, int stream, const char *s, size_t n)
{
	mcp_notify_log(j->sink, j->ctx.log_level, stream == 1 ? "info" : "warning",
		       stream == 1 ? "stdout" : "stderr", text_of(s, n));
}

/* Sends the first n bytes of p (without a last newline) and keeps the rest (out_lock). */
static void emit_upto(struct job *j, int stream, struct pending *p, size_t n, uint64_t now)
{
	emit_line(j, stream, p->buf, n && p->buf[n - 1] == '\n' ? n - 1 : n);
	memmove(p->buf, p->buf + n, p->len - n);
	p->len -= n;
	p->done = 0; /* what is left has no newline */
	p->last_ms = now;
	p->sent++;
}

static bool due(const struct pending *p, uint64_t now)
{
	return now - p->last_ms >= (p->sent < FLUSH_FAST ? FLUSH_MS : FLUSH_SLOW_MS);
}

/* govex_output_fn: the bytes join their stream's chunk; complete lines go out when the
 * interval has passed or the chunk is full (then a line without its end in pieces). */
static void on_output(void *userdata, int stream, const char *data, size_t len)
{
	struct job *j = userdata;
	if (stream != 1 && stream != 2)
		return;
	uint64_t now = now_ms();
	pthread_mutex_lock(&j->out_lock);
	struct pending **pp = &j->out[stream - 1];
	if (!*pp && (*pp = malloc(sizeof(**pp)))) {
		(*pp)->len = (*pp)->done = 0;
		(*pp)->sent = 0;
		(*pp)->last_ms = 0; /* the first lines go out at once */
	}
	struct pending *p = *pp;
	while (p && len) {
		size_t take = CHUNK_MAX - p->len < len ? CHUNK_MAX - p->len : len;
		memcpy(p->buf + p->len, data, take);
		const char *nl = memrchr(p->buf + p->len, '\n', take);
		p->len += take;
		if (nl)
			p->done = (size_t)(nl - p->buf) + 1;
		data += take;
		len -= take;
		if (p->len == CHUNK_MAX)
			emit_upto(j, stream, p, p->done ? p->done : p->len, now);
	}
	if (p && p->done && due(p, now))
		emit_upto(j, stream, p, p->done, now);
	pthread_mutex_unlock(&j->out_lock);
}

/* The ticker: lines that waited past the interval (pool lock held; out_lock inside it). */
static void flush_due(struct job *j, uint64_t now)
{
	pthread_mutex_lock(&j->out_lock);
	for (int s = 0; s < 2; s++)
		if (j->out[s] && j->out[s]->done && due(j->out[s], now))
			emit_upto(j, s + 1, j->out[s], j->out[s]->done, now);
	pthread_mutex_unlock(&j->out_lock);
}

/* The end of the run: everything, a last line without its newline too. */
static void flush_output(struct job *j)
{
	pthread_mutex_lock(&j->out_lock);
	for (int s = 0; s < 2; s++)
		if (j->out[s] && j->out[s]->len)
			emit_upto(j, s + 1, j->out[s], j->out[s]->len, now_ms());
	pthread_mutex_unlock(&j->out_lock);
}

/* ---------------------------------------------------------------- running a call */

/* The first diagnostic of an arguments refusal, or NULL. */
static const char *argument_error(json_t *result)
{
	json_t *doc = json_object_get(result, "structuredContent");
	const char *st = json_string_value(json_object_get(doc, "status"));
	json_t *d = json_array_get(json_object_get(doc, "diagnostics"), 0);
	const char *code = json_string_value(json_object_get(d, "code"));
	if (!st || strcmp(st, "invalid_input") != 0 || !code ||
	    strcmp(code, "invalid_argument") != 0)
		return NULL;
	return json_string_value(json_object_get(d, "message"));
}

/* a + b without a's closing brace and b's opening one: two JSON objects merged as text */
static char *merge_objects(const char *a, const char *b)
{
	size_t an = strlen(a), bn = strlen(b);
	if (an < 2 || bn < 2 || a[an - 1] != '}' || b[0] != '{')
		return NULL;
	bool empty = bn == 2;
	char *out = malloc(an + bn + 1);
	if (!out)
		return NULL;
	memcpy(out, a, an - 1);
	size_t n = an - 1;
	if (!empty)
		out[n++] = ',';
	memcpy(out + n, b + 1, bn - 1);
	out[n + bn - 1] = '\0';
	return out;
}

/*
 * What the protocol version makes of the library's CallToolResult.  The text is kept as
 * the library wrote it (re-encoding would change the document's numbers: jansson writes
 * reals with 17 digits); the modern fields are merged in as text.  Only the old versions'
 * extra text block is made by re-encoding the parsed result r.  Returns the text (out or
 * a new one, out then freed), NULL on ENOMEM.
 */
static char *shape(char *out, json_t *r, const struct mcp_call_ctx *ctx)
{
	if (ctx->legacy_text_json) {
		/* before 2025-06-18 a client has no structuredContent: the document also as
		 * text, as the spec of 2025-06-18 recommends for compatibility */
		char *js = json_dumps(json_object_get(r, "structuredContent"), JSON_COMPACT);
		if (js)
			json_array_append_new(json_object_get(r, "content"),
					      json_pack("{s:s, s:s}", "type", "text", "text", js));
		free(js);
		free(out);
		out = json_dumps(r, JSON_COMPACT);
	}
	if (out && ctx->modern) {
		json_t *stamp = json_object();
		mcp_stamp_modern(stamp);
		char *st = json_dumps(stamp, JSON_COMPACT);
		json_decref(stamp);
		char *merged = st ? merge_objects(st, out) : NULL;
		free(st);
		free(out);
		out = merged;
	}
	return out;
}

/* Runs a job: *ret_text is the result's JSON text, or *ret_error the error object. */
static void run_job(struct mcp_pool *p, struct job *j, char **ret_text, json_t **ret_error)
{
	/* metadata enter the request's digest, so the plan's: only what is the same for the
	 * same call (the tool, the client), never the JSON-RPC id (a run-time fact: two
	 * identical snippets have identical plans) */
	char *md_tool = NULL, *md_client = NULL;
	if (asprintf(&md_tool, "mcp.tool=%s", j->tool) < 0)
		md_tool = NULL;
	if (asprintf(&md_client, "mcp.client=%.100s", j->client_name ? j->client_name : "unknown") <
	    0)
		md_client = NULL;
	const char *md[3] = {md_tool, md_client, NULL};
	if (!md_tool || !md_client)
		md[0] = NULL;

	struct govex_invoke inv = {.cancel = j->cancel, .metadata = md};
	if (j->ctx.log_level >= 0) {
		inv.on_output = on_output;
		inv.output_userdata = j;
	}
	char *out = NULL;
	struct govex_error ge = {0};
	int r = govex_toolset_invoke(p->ts, j->tool, j->args, j->args_len, &inv, &out, &ge);
	flush_output(j);
	free(md_tool);
	free(md_client);
	json_error_t e;
	/* the server reads the status, diagnostics and usage; the text is sent as it is,
	 * unless an old version wants the document re-encoded as a text block */
	json_t *res = r != 0 ? NULL
		      : j->ctx.legacy_text_json
			  ? json_loads(out, JSON_ALLOW_NUL, &e)
			  : mcp_json_load_brief(out, strlen(out), JSON_ALLOW_NUL, BRIEF_KEEP, &e);
	if (p->srv->metrics) {
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		uint64_t us = (uint64_t)(t1.tv_sec - j->t0.tv_sec) * 1000000 +
			      (uint64_t)((t1.tv_nsec - j->t0.tv_nsec) / 1000);
		mcp_metrics_run(p->srv->metrics, json_object_get(res, "structuredContent"), us);
	}
	if (!res) {
		mcp_log("tools/call %s: %s", j->tool, r < 0 ? ge.message : "out of memory");
		free(out);
		/* what it was (EMFILE is not ENOMEM), not the server's inner details */
		char msg[200];
		int code = r < 0 && ge.sys_errno ? ge.sys_errno : r;
		if (r < 0)
			snprintf(msg, sizeof(msg), "internal error: the call did not run: %s (%s)",
				 govex_strerror(code), govex_error_name(code));
		else
			snprintf(msg, sizeof(msg), "internal error: no result (out of memory)");
		*ret_error = json_pack("{s:i, s:s}", "code", RPC_INTERNAL_ERROR, "message", msg);
		return;
	}
	const char *bad = j->ctx.args_rpc_error ? argument_error(res) : NULL;
	if (bad) {
		char msg[800];
		snprintf(msg, sizeof(msg), "tool '%s': invalid arguments: %s", j->tool, bad);
		*ret_error = json_pack("{s:i, s:s}", "code", RPC_INVALID_PARAMS, "message", msg);
		json_decref(res);
		free(out);
		return;
	}
	json_t *doc = json_object_get(res, "structuredContent");
	if (j->ctx.log_level >= 0) {
		const char *st = json_string_value(json_object_get(doc, "status"));
		bool ok = st && strcmp(st, "success") == 0;
		mcp_notify_log(j->sink, j->ctx.log_level, ok ? "info" : "warning", "govex",
			       json_pack("{s:s, s:s, s:O?}", "tool", j->tool, "status",
					 st ? st : "?", "usage", json_object_get(doc, "usage")));
	}
	*ret_text = shape(out, res, &j->ctx);
	json_decref(res);
}

/* The reply line: {"jsonrpc":"2.0","id":ID,"result":TEXT} or an error. */
static void send_reply(struct mcp_sink *sink, json_t *id, char *text, json_t *error)
{
	if (!text) {
		mcp_send(sink,
			 json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "error",
				   error ? error
					 : json_pack("{s:i, s:s}", "code", RPC_INTERNAL_ERROR,
						     "message", "internal error: out of memory")));
		return;
	}
	json_decref(error);
	char *idtext = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
	char *line = NULL;
	if (!idtext ||
	    asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", idtext, text) < 0)
		line = NULL;
	free(idtext);
	free(text);
	if (line)
		mcp_send_text(sink, line);
	else
		mcp_log("cannot encode a reply (out of memory)");
}

static void send_progress(struct mcp_pool *p, struct job *j, const char *message)
{
	uint64_t el = now_ms() - j->started_ms;
	if (el > j->limit_ms)
		el = j->limit_ms;
	json_t *params =
	    json_pack("{s:O, s:I, s:I, s:s}", "progressToken", j->ctx.progress_token, "progress",
		      (json_int_t)el, "total", (json_int_t)j->limit_ms, "message", message);
	mcp_notify(j->sink, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
				      "notifications/progress", "params", params));
}

static void *worker(void *arg)
{
	struct mcp_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct client *c = NULL;
		while (!p->stop && !(c = next_client(p)))
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		struct job *j = queue_pop(p, c);
		c->running++;
		c->turn = ++p->turns;
		p->running++;
		j->running = true;
		j->started_ms = now_ms();
		count_wait(p, j->started_ms - j->queued_ms);
		clock_gettime(CLOCK_MONOTONIC, &j->t0);
		if (j->ctx.progress_token)
			send_progress(p, j, "started");
		pthread_mutex_unlock(&p->lock);

		char *text = NULL;
		json_t *error = NULL;
		run_job(p, j, &text, &error);

		pthread_mutex_lock(&p->lock);
		uint64_t ran = now_ms() - j->started_ms;
		p->run_ewma_ms = p->run_ewma_ms ? (p->run_ewma_ms * 7 + ran) / 8 : ran;
		inflight_remove(p, j);
		c->running--;
		p->running--;
		client_release(p, c);
		j->cl = NULL;
		bool cancelled = j->cancelled;
		pthread_mutex_unlock(&p->lock);
		if (!cancelled) {
			send_reply(j->sink, j->id, text, error);
		} else {
			free(text);
			json_decref(error);
		}
		job_free(j);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Takes the queued calls that waited past the limit off their queues (lock held); the
 * caller answers them without the lock.  Each client's queue is in arrival order, so only
 * its first calls can be past it. */
static struct job *take_expired(struct mcp_pool *p, uint64_t now)
{
	struct job *out = NULL;
	for (struct client *c = p->clients, *next; c; c = next) {
		next = c->next;
		while (c->qhead && now - c->qhead->queued_ms >= p->lim.timeout_ms) {
			struct job *j = queue_pop(p, c);
			inflight_remove(p, j);
			j->cl = NULL;
			j->inext = out;
			out = j;
			p->st.expired++;
		}
		client_release(p, c);
	}
	return out;
}

static void answer_expired(struct mcp_pool *p, struct job *j)
{
	while (j) {
		struct job *next = j->inext;
		char msg[300];
		snprintf(
		    msg, sizeof(msg),
		    "server busy: the call waited %llu s for a free slot (the queue-time limit, "
		    "--queue-timeout) and was not run; retry later",
		    (unsigned long long)(p->lim.timeout_ms / 1000));
		mcp_reply_error(j->sink, j->id, -32000, msg, NULL);
		job_free(j);
		j = next;
	}
}

static void *ticker(void *arg)
{
	struct mcp_pool *p = arg;
	uint64_t last_second = now_ms();
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)FLUSH_MS * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->tick, &p->lock, &ts);
		if (p->stop)
			break;
		uint64_t now = now_ms();
		for (struct job *j = p->inflight; j; j = j->inext)
			if (j->running && !j->cancelled && j->ctx.log_level >= 0)
				flush_due(j, now);
		if (now - last_second < 1000)
			continue;
		last_second = now;
		for (struct job *j = p->inflight; j; j = j->inext)
			if (j->running && !j->cancelled && j->ctx.progress_token)
				send_progress(p, j, "running");
		struct job *expired = take_expired(p, now);
		if (expired) {
			pthread_mutex_unlock(&p->lock);
			answer_expired(p, expired);
			pthread_mutex_lock(&p->lock);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void mcp_queue_limits_default(struct mcp_queue_limits *lim, unsigned max_concurrent)
{
	if (!lim->client_max)
		lim->client_max = (size_t)MCP_QUEUE_PER_SLOT * max_concurrent;
	if (!lim->total_max)
		lim->total_max = lim->client_max * MCP_QUEUE_CLIENTS;
	if (!lim->bytes_max)
		lim->bytes_max = MCP_QUEUE_BYTES;
	if (!lim->timeout_ms)
		lim->timeout_ms = (uint64_t)MCP_QUEUE_TIMEOUT_S * 1000;
}

int mcp_pool_new(struct mcp_server *srv, govex_toolset *ts, uint64_t wall_ms,
		 unsigned max_concurrent, const struct mcp_queue_limits *lim, struct mcp_pool **ret)
{
	struct mcp_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->srv = srv;
	p->ts = ts;
	p->wall_ms = wall_ms;
	p->lim = *lim;
	mcp_queue_limits_default(&p->lim, max_concurrent);
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

/* Whether j fits the bounds (lock held): 0, or the reason it does not (-EBUSY). */
static int fits(struct mcp_pool *p, const struct client *c, const struct job *j,
		const char **ret_why)
{
	if (c && c->queued >= p->lim.client_max) {
		*ret_why = "client";
		p->st.rejected_client++;
	} else if (p->queued >= p->lim.total_max) {
		*ret_why = "total";
		p->st.rejected_total++;
	} else if (p->queued_bytes + j->args_len > p->lim.bytes_max) {
		*ret_why = "bytes";
		p->st.rejected_bytes++;
	} else {
		return 0;
	}
	return -EBUSY;
}

int mcp_pool_submit(struct mcp_pool *p, struct mcp_sink *sink, const void *owner,
		    const char *client, json_t *id, const char *tool, json_t *args, char *args_text,
		    struct mcp_call_ctx *ctx, const char **ret_why)
{
	const char *why_ = NULL;
	if (!ret_why)
		ret_why = &why_;
	*ret_why = NULL;
	struct job *j = calloc(1, sizeof(*j));
	int r = -ENOMEM;
	if (j && (j->tool = strdup(tool)) &&
	    (j->args = args_text ? args_text : json_dumps(args, JSON_COMPACT))) {
		args_text = NULL;
		r = govex_cancel_new(&j->cancel);
	}
	free(args_text);
	if (r < 0) {
		if (j) {
			free(j->tool);
			free(j->args);
		}
		free(j);
		json_decref(args);
		json_decref(ctx->progress_token);
		return r; /* govex_cancel_new: -EMFILE when the process is out of descriptors */
	}
	j->args_len = strlen(j->args);
	pthread_mutex_init(&j->out_lock, NULL);
	j->id = id;
	j->owner = owner;
	if (sink->ref)
		sink->ref(sink);
	j->sink = sink;
	j->srv = p->srv;
	j->ctx = *ctx;
	j->client_name = ctx->client_name ? strdup(ctx->client_name) : NULL;
	j->ctx.client_name = NULL;
	json_t *to = json_object_get(args, "timeout_ms");
	j->limit_ms = json_is_integer(to) && json_integer_value(to) > 0 &&
			      (uint64_t)json_integer_value(to) < p->wall_ms
			  ? (uint64_t)json_integer_value(to)
			  : p->wall_ms;
	json_decref(args);
	if (!client || !*client)
		client = "?";

	pthread_mutex_lock(&p->lock);
	r = 0;
	for (struct job *q = p->inflight; q; q = q->inext)
		if (q->owner == owner && json_equal(q->id, id)) {
			r = -EEXIST;
			break;
		}
	struct client *c = r == 0 ? client_find(p, client) : NULL;
	if (r == 0)
		r = fits(p, c, j, ret_why);
	if (r == 0 && !c) {
		c = calloc(1, sizeof(*c));
		if (c) {
			snprintf(c->key, sizeof(c->key), "%s", client);
			c->next = p->clients;
			p->clients = c;
			p->n_clients++;
		} else {
			r = -ENOMEM;
		}
	}
	if (r == 0) {
		j->cl = c;
		j->queued_ms = now_ms();
		if (c->qtail)
			c->qtail->qnext = j;
		else
			c->qhead = j;
		c->qtail = j;
		c->queued++;
		p->queued++;
		p->queued_bytes += j->args_len;
		j->inext = p->inflight;
		p->inflight = j;
		p->n_inflight++;
		pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	if (r < 0) {
		j->id = NULL; /* not taken: the caller answers with it */
		job_free(j);
	}
	return r;
}

unsigned mcp_pool_retry_after(struct mcp_pool *p)
{
	pthread_mutex_lock(&p->lock);
	/* the time the calls waiting now take to start, at the recent runs' pace */
	uint64_t slots = p->n_threads ? p->n_threads : 1;
	uint64_t ms = p->run_ewma_ms * (p->queued / slots + 1);
	pthread_mutex_unlock(&p->lock);
	uint64_t s = (ms + 999) / 1000;
	return s < 1 ? 1 : s > 60 ? 60 : (unsigned)s;
}

void mcp_pool_stats(struct mcp_pool *p, struct mcp_pool_stats *ret)
{
	pthread_mutex_lock(&p->lock);
	*ret = p->st;
	ret->slots = p->n_threads;
	ret->running = p->running;
	ret->queued = p->queued;
	ret->queued_bytes = p->queued_bytes;
	ret->lim = p->lim;
	ret->clients_waiting = ret->clients_running = 0;
	ret->client_queued_max = ret->client_running_max = 0;
	for (const struct client *c = p->clients; c; c = c->next) {
		ret->clients_waiting += c->queued > 0;
		ret->clients_running += c->running > 0;
		if (c->queued > ret->client_queued_max)
			ret->client_queued_max = c->queued;
		if (c->running > ret->client_running_max)
			ret->client_running_max = c->running;
	}
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < MCP_WAIT_BUCKETS; i++)
		ret->wait_bounds[i] = wait_bounds[i];
}

void mcp_pool_clients(struct mcp_pool *p, const char *prefix, size_t max,
		      void (*f)(void *ud, const char *name, unsigned queued, unsigned running),
		      void *ud)
{
	size_t pl = strlen(prefix), n = 0;
	pthread_mutex_lock(&p->lock);
	for (const struct client *c = p->clients; c && n < max; c = c->next)
		if (strncmp(c->key, prefix, pl) == 0) {
			f(ud, c->key + pl, c->queued, c->running);
			n++;
		}
	pthread_mutex_unlock(&p->lock);
}

/* Drops a queued job (lock held): off its queue and the in-flight list, its client
 * released; the caller frees it without the lock. */
static void drop_queued(struct mcp_pool *p, struct job *j)
{
	struct client *c = j->cl;
	queue_remove(p, j);
	j->cl = NULL;
	client_release(p, c);
}

bool mcp_pool_cancel(struct mcp_pool *p, const void *owner, json_t *id)
{
	bool found = false;
	struct job *drop = NULL;
	pthread_mutex_lock(&p->lock);
	for (struct job *j = p->inflight; j; j = j->inext)
		if (j->owner == owner && json_equal(j->id, id)) {
			found = true;
			j->cancelled = true;
			if (j->running) {
				govex_cancel(j->cancel);
			} else {
				drop_queued(p, j);
				inflight_remove(p, j);
				drop = j;
			}
			break;
		}
	pthread_mutex_unlock(&p->lock);
	job_free(drop);
	return found;
}

unsigned mcp_pool_cancel_owner(struct mcp_pool *p, const void *owner)
{
	unsigned n = 0;
	struct job *drop = NULL;
	pthread_mutex_lock(&p->lock);
	for (struct job **pp = &p->inflight; *pp;) {
		struct job *j = *pp;
		if (j->owner != owner || j->cancelled) {
			pp = &j->inext;
			continue;
		}
		n++;
		j->cancelled = true;
		if (j->running) {
			govex_cancel(j->cancel);
			pp = &j->inext;
		} else {
			drop_queued(p, j);
			*pp = j->inext;
			p->n_inflight--;
			j->inext = drop;
			drop = j;
		}
	}
	pthread_mutex_unlock(&p->lock);
	while (drop) {
		struct job *next = drop->inext;
		job_free(drop);
		drop = next;
	}
	return n;
}

unsigned mcp_pool_in_flight(struct mcp_pool *p)
{
	pthread_mutex_lock(&p->lock);
	unsigned n = p->n_inflight;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void mcp_pool_free(struct mcp_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	struct job *j = p->inflight, *next;
	p->inflight = NULL;
	p->n_inflight = 0;
	for (; j; j = next) {
		next = j->inext;
		j->cancelled = true;
		if (j->running) {
			/* its worker still owns it: keep it listed, cancelled */
			govex_cancel(j->cancel);
			j->inext = p->inflight;
			p->inflight = j;
			p->n_inflight++;
		} else {
			drop_queued(p, j);
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
	/* every client had its calls run or dropped: none is left */
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->tick);
	free(p->threads);
	free(p);
}
