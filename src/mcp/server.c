/* SPDX-License-Identifier: MIT */
/*
 * govex mcp: the stdio transport (newline-delimited JSON-RPC 2.0; stdout carries protocol
 * only, logs go to stderr) and the dispatch of both protocol eras:
 *
 *   legacy (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25): initialize with version
 *     negotiation, notifications/initialized, ping, logging/setLevel, tools/list,
 *     tools/call;
 *   modern (2026-07-28): every request carries its protocol version and client
 *     capabilities in params._meta; server/discover, tools/list, tools/call; results
 *     carry resultType and the server's identity in _meta.
 *
 * A request with the modern _meta envelope is served statelessly; anything else follows
 * the legacy session (the spec's "dual-era" server).  The main thread reads and answers
 * everything but tools/call, which goes to the pool (calls.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"
#include "mcp_serve.h"

#define MODERN_VERSION	"2026-07-28"
#define LATEST_LEGACY	"2025-11-25"
#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_INFO	"io.modelcontextprotocol/clientInfo"
#define META_LOGLEVEL	"io.modelcontextprotocol/logLevel"
#define META_SERVERINFO "io.modelcontextprotocol/serverInfo"
#define LIST_TTL_MS	300000
#define READ_CHUNK	65536

/* newest first: the order of server/discover and of -32022's "supported" */
static const char *const versions[] = {MODERN_VERSION, "2025-11-25", "2025-06-18",
				       "2025-03-26",   "2024-11-05", NULL};

static const char *const log_levels[] = {"debug",    "info",  "notice",	   "warning", "error",
					 "critical", "alert", "emergency", NULL};

/* A message waiting for the writer. */
struct outmsg {
	struct outmsg *next;
	char *text; /* ends with its newline, not NUL-terminated */
	size_t len;
};

/* Notifications (log lines, progress) are dropped while more than this waits to be
 * written: a client that stops reading never holds up a run (its live output is queued
 * by the run's supervisor) nor the server's memory.  Replies are never dropped. */
#define OUT_NOTIFY_MAX ((size_t)4 << 20)
/* At the end, how long the writer may take to hand over what is queued. */
#define OUT_DRAIN_MS 5000

struct mcp_server {
	/* stdout belongs to one writer thread; everyone else queues */
	pthread_mutex_t out_lock;
	pthread_cond_t out_more; /* a message queued, or closing */
	pthread_cond_t out_idle; /* the queue is empty */
	struct outmsg *out_head, **out_tail;
	size_t out_bytes;
	uint64_t out_dropped;
	bool out_broken, out_closing, out_writer;
	bool out_busy; /* the writer is in write(2) with a message taken off the queue */
	pthread_t out_thread;
	const govex_policy *policy;
	govex_runtime *rt;
	govex_toolset *ts;
	json_t *tools; /* govex_toolset_list(), parsed once: the list never changes */
	struct mcp_pool *pool;
	char *instructions;
	/* the legacy session (main thread only) */
	bool initialized;
	char version[16];
	char *client_name;
	int log_level; /* logging/setLevel; -1 until set */
};

/* ---------------------------------------------------------------- output */

void mcp_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fprintf(stderr, "govex mcp: %s\n", line);
}

/* Writes all of it to stdout unless stdout broke before; called by the writer only (or
 * by the caller when no writer thread could be started). */
static void write_out(struct mcp_server *srv, const char *p, size_t left)
{
	while (left && !srv->out_broken) {
		ssize_t w = write(1, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			mcp_log("stdout: %s; replies are dropped from now on", strerror(errno));
			srv->out_broken = true;
			break;
		}
		p += w;
		left -= (size_t)w;
	}
}

static void *writer(void *arg)
{
	struct mcp_server *srv = arg;
	pthread_mutex_lock(&srv->out_lock);
	for (;;) {
		while (!srv->out_head && !srv->out_closing)
			pthread_cond_wait(&srv->out_more, &srv->out_lock);
		struct outmsg *m = srv->out_head;
		if (!m)
			break; /* closing, and nothing left */
		srv->out_head = m->next;
		if (!srv->out_head)
			srv->out_tail = &srv->out_head;
		srv->out_busy = true;
		pthread_mutex_unlock(&srv->out_lock);
		write_out(srv, m->text, m->len); /* only this thread writes: no lock held */
		pthread_mutex_lock(&srv->out_lock);
		srv->out_busy = false;
		srv->out_bytes -= m->len;
		free(m->text);
		free(m);
		if (!srv->out_head)
			pthread_cond_broadcast(&srv->out_idle);
	}
	pthread_cond_broadcast(&srv->out_idle);
	pthread_mutex_unlock(&srv->out_lock);
	return NULL;
}

/* Queues one line (s: malloc'ed, NUL-terminated, taken).  A droppable one is dropped
 * while the queue is over OUT_NOTIFY_MAX.  Without a writer (its thread could not be
 * started), writes it now. */
static void enqueue(struct mcp_server *srv, char *s, bool droppable)
{
	size_t n = strlen(s);
	s[n] = '\n'; /* the NUL goes; the length is kept */
	struct outmsg *m = malloc(sizeof(*m));
	pthread_mutex_lock(&srv->out_lock);
	if (!srv->out_writer) {
		write_out(srv, s, n + 1);
	} else if (!m || srv->out_broken || (droppable && srv->out_bytes > OUT_NOTIFY_MAX)) {
		srv->out_dropped += droppable;
		if (!m && !droppable)
			mcp_log("out of memory: a reply is lost");
	} else {
		*m = (struct outmsg){.text = s, .len = n + 1};
		*srv->out_tail = m;
		srv->out_tail = &m->next;
		s = NULL;
		m = NULL;
		srv->out_bytes += n + 1;
		pthread_cond_signal(&srv->out_more);
	}
	pthread_mutex_unlock(&srv->out_lock);
	free(m);
	free(s);
}

static int writer_start(struct mcp_server *srv)
{
	srv->out_tail = &srv->out_head;
	int r = pthread_create(&srv->out_thread, NULL, writer, srv);
	if (r == 0)
		srv->out_writer = true;
	return -r;
}

/* Hands over what is queued (at most OUT_DRAIN_MS: a client that does not read gets no
 * more) and ends the writer. */
static void writer_stop(struct mcp_server *srv)
{
	if (!srv->out_writer)
		return;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += OUT_DRAIN_MS / 1000;
	pthread_mutex_lock(&srv->out_lock);
	srv->out_closing = true;
	pthread_cond_signal(&srv->out_more);
	int r = 0;
	while ((srv->out_head || srv->out_busy) && r == 0)
		r = pthread_cond_timedwait(&srv->out_idle, &srv->out_lock, &until);
	bool drained = !srv->out_head && !srv->out_busy;
	uint64_t dropped = srv->out_dropped;
	pthread_mutex_unlock(&srv->out_lock);
	if (dropped)
		mcp_log("%llu notification%s dropped: the client was not reading",
			(unsigned long long)dropped, dropped == 1 ? "" : "s");
	if (drained) {
		pthread_join(srv->out_thread, NULL);
	} else {
		/* blocked in write(2) to a client that stopped reading: left to the exit */
		mcp_log("stdout: the client is not reading; the rest is left unsent");
		pthread_detach(srv->out_thread);
	}
	srv->out_writer = false;
}

static char *encode(json_t *msg)
{
	if (!msg) {
		mcp_log("cannot encode a message (out of memory?)");
		return NULL;
	}
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		mcp_log("cannot encode a message");
	return s;
}

void mcp_send(struct mcp_server *srv, json_t *msg)
{
	char *s = encode(msg);
	if (s)
		enqueue(srv, s, false);
}

void mcp_send_text(struct mcp_server *srv, char *s)
{
	enqueue(srv, s, false);
}

void mcp_notify(struct mcp_server *srv, json_t *msg)
{
	char *s = encode(msg);
	if (s)
		enqueue(srv, s, true);
}

int mcp_log_level(const char *name)
{
	for (int i = 0; name && log_levels[i]; i++)
		if (strcmp(name, log_levels[i]) == 0)
			return i;
	return -1;
}

void mcp_notify_log(struct mcp_server *srv, int request_level, const char *level,
		    const char *logger, json_t *data)
{
	if (request_level < 0 || mcp_log_level(level) < request_level) {
		json_decref(data);
		return;
	}
	mcp_notify(srv, json_pack("{s:s, s:s, s:{s:s, s:s, s:o}}", "jsonrpc", "2.0", "method",
				  "notifications/message", "params", "level", level, "logger",
				  logger, "data", data ? data : json_null()));
}

static json_t *server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", MCP_SERVER_NAME, "title",
			 "govex: Python under an enforced policy", "version", govex_version());
}

void mcp_stamp_modern(json_t *result)
{
	json_object_set_new(result, "resultType", json_string("complete"));
	json_t *meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVERINFO, server_info());
}

static void reply(struct mcp_server *srv, json_t *id, json_t *result)
{
	mcp_send(srv, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* id NULL: JSON null (the request's id could not be read).  Takes data. */
static void reply_error(struct mcp_server *srv, json_t *id, int code, const char *message,
			json_t *data)
{
	json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (!err) /* a message that is not UTF-8 */
		err = json_pack("{s:i, s:s}", "code", code, "message", "invalid message");
	if (data)
		json_object_set_new(err, "data", data);
	mcp_send(srv, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
				"error", err));
}

static void reply_errorf(struct mcp_server *srv, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_errorf(struct mcp_server *srv, json_t *id, int code, const char *fmt, ...)
{
	char msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_error(srv, id, code, msg, NULL);
}

/* ---------------------------------------------------------------- requests */

struct request {
	json_t *id;
	const char *method;
	json_t *params; /* object or NULL */
	bool modern;
	json_t *meta; /* params._meta, object or NULL */
};

static json_t *capabilities(void)
{
	return json_pack("{s:{s:b}, s:{}}", "tools", "listChanged", 0, "logging");
}

static json_t *supported_versions(void)
{
	json_t *a = json_array();
	for (size_t i = 0; versions[i]; i++)
		json_array_append_new(a, json_string(versions[i]));
	return a;
}

static bool legacy_version(const char *v)
{
	for (size_t i = 1; versions[i]; i++)
		if (strcmp(v, versions[i]) == 0)
			return true;
	return false;
}

static void do_initialize(struct mcp_server *srv, struct request *rq)
{
	json_t *pv = json_object_get(rq->params, "protocolVersion");
	if (!json_is_string(pv)) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "initialize: params.protocolVersion must be a string", NULL);
		return;
	}
	if (srv->initialized) {
		reply_error(srv, rq->id, RPC_INVALID_REQUEST,
			    "initialize: the session is already initialized", NULL);
		return;
	}
	/* the client's version when we speak it, else our latest handshake version */
	const char *want = json_string_value(pv);
	snprintf(srv->version, sizeof(srv->version), "%s",
		 legacy_version(want) ? want : LATEST_LEGACY);
	const char *name =
	    json_string_value(json_object_get(json_object_get(rq->params, "clientInfo"), "name"));
	free(srv->client_name);
	srv->client_name = name ? strndup(name, 100) : NULL;
	srv->initialized = true;
	json_t *info = server_info();
	if (strcmp(srv->version, "2025-06-18") < 0)
		json_object_del(info, "title");
	reply(srv, rq->id,
	      json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", srv->version, "capabilities",
			capabilities(), "serverInfo", info, "instructions", srv->instructions));
}

static void do_discover(struct mcp_server *srv, struct request *rq)
{
	json_t *r = json_pack("{s:o, s:o, s:s, s:i, s:s}", "supportedVersions",
			      supported_versions(), "capabilities", capabilities(), "instructions",
			      srv->instructions, "ttlMs", LIST_TTL_MS, "cacheScope", "private");
	mcp_stamp_modern(r);
	reply(srv, rq->id, r);
}

static void do_tools_list(struct mcp_server *srv, struct request *rq)
{
	if (json_object_get(rq->params, "cursor")) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "tools/list: invalid cursor (the list has one page)", NULL);
		return;
	}
	json_t *r = json_pack("{s:O}", "tools", srv->tools);
	if (rq->modern) {
		/* the list is fixed for the life of the process (modules are bound at start) */
		json_object_set_new(r, "ttlMs", json_integer(LIST_TTL_MS));
		json_object_set_new(r, "cacheScope", json_string("private"));
		mcp_stamp_modern(r);
	}
	reply(srv, rq->id, r);
}

static bool find_tool(struct mcp_server *srv, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(srv->tools, i, t)
	{
		const char *n = json_string_value(json_object_get(t, "name"));
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static void do_tools_call(struct mcp_server *srv, struct request *rq)
{
	const char *name = json_string_value(json_object_get(rq->params, "name"));
	if (!name) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "tools/call: params.name must be a string", NULL);
		return;
	}
	if (!find_tool(srv, name)) {
		reply_errorf(srv, rq->id, RPC_INVALID_PARAMS, "unknown tool '%.200s'", name);
		return;
	}
	json_t *args = json_object_get(rq->params, "arguments");
	if (args && json_is_null(args))
		args = NULL;
	if (args && !json_is_object(args)) {
		reply_errorf(srv, rq->id, RPC_INVALID_PARAMS,
			     "tool '%s': arguments must be an object", name);
		return;
	}
	struct mcp_call_ctx ctx = {.modern = rq->modern, .log_level = -1};
	json_t *pt = json_object_get(rq->meta, "progressToken");
	if (json_is_string(pt) || json_is_integer(pt))
		ctx.progress_token = json_incref(pt);
	if (rq->modern) {
		ctx.log_level =
		    mcp_log_level(json_string_value(json_object_get(rq->meta, META_LOGLEVEL)));
		ctx.client_name = json_string_value(
		    json_object_get(json_object_get(rq->meta, META_INFO), "name"));
	} else {
		ctx.log_level = srv->log_level;
		ctx.client_name = srv->client_name;
		ctx.legacy_text_json = srv->initialized && strcmp(srv->version, "2025-06-18") < 0;
		/* 2025-11-25 made invalid arguments a tool error the model can read; the
		 * versions before keep -32602 */
		ctx.args_rpc_error = srv->initialized && strcmp(srv->version, "2025-11-25") < 0;
	}
	json_t *id = json_incref(rq->id);
	int r =
	    mcp_pool_submit(srv->pool, id, name, args ? json_incref(args) : json_object(), &ctx);
	if (r == -EEXIST)
		reply_error(srv, rq->id, RPC_INVALID_REQUEST,
			    "tools/call: a request with this id is still in flight", NULL);
	else if (r == -EBUSY)
		reply_error(srv, rq->id, -32000, "server busy: too many calls queued", NULL);
	else if (r < 0)
		reply_error(srv, rq->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
	if (r < 0)
		json_decref(id);
}

/* The modern envelope: version (checked by the caller), capabilities, identity, log
 * level.  Returns 0 or -1 after answering. */
static int check_envelope(struct mcp_server *srv, struct request *rq)
{
	json_t *caps = json_object_get(rq->meta, META_CAPS);
	if (!json_is_object(caps)) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_CAPS "' is required (an object)", NULL);
		return -1;
	}
	json_t *info = json_object_get(rq->meta, META_INFO);
	if (info && !(json_is_object(info) && json_is_string(json_object_get(info, "name")) &&
		      json_is_string(json_object_get(info, "version")))) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_INFO "' must be an object with name and version",
			    NULL);
		return -1;
	}
	json_t *ll = json_object_get(rq->meta, META_LOGLEVEL);
	if (ll && mcp_log_level(json_string_value(ll)) < 0) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_LOGLEVEL "' is not a logging level", NULL);
		return -1;
	}
	return 0;
}

static void handle_request(struct mcp_server *srv, struct request *rq)
{
	json_t *pv = json_object_get(rq->meta, META_VERSION);
	if (pv && !json_is_string(pv)) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "params._meta: '" META_VERSION "' must be a string", NULL);
		return;
	}
	const char *v = json_string_value(pv);
	if (v && strcmp(v, MODERN_VERSION) == 0) {
		rq->modern = true;
	} else if (v && !legacy_version(v)) {
		reply_error(
		    srv, rq->id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
		    json_pack("{s:o, s:s}", "supported", supported_versions(), "requested", v));
		return;
	}
	/* a legacy version in the envelope: served as a legacy request */
	const char *m = rq->method;
	if (rq->modern) {
		if (check_envelope(srv, rq) < 0)
			return;
		if (strcmp(m, "server/discover") == 0)
			do_discover(srv, rq);
		else if (strcmp(m, "tools/list") == 0)
			do_tools_list(srv, rq);
		else if (strcmp(m, "tools/call") == 0)
			do_tools_call(srv, rq);
		else
			reply_errorf(
			    srv, rq->id, RPC_METHOD_NOT_FOUND,
			    "method '%.200s' not found in protocol version " MODERN_VERSION, m);
		return;
	}
	if (strcmp(m, "initialize") == 0) {
		do_initialize(srv, rq);
	} else if (strcmp(m, "ping") == 0) {
		reply(srv, rq->id, json_object());
	} else if (strcmp(m, "tools/list") == 0) {
		do_tools_list(srv, rq);
	} else if (strcmp(m, "tools/call") == 0) {
		do_tools_call(srv, rq);
	} else if (strcmp(m, "logging/setLevel") == 0) {
		int lv = mcp_log_level(json_string_value(json_object_get(rq->params, "level")));
		if (lv < 0) {
			reply_error(srv, rq->id, RPC_INVALID_PARAMS,
				    "logging/setLevel: params.level is not a logging level", NULL);
			return;
		}
		srv->log_level = lv;
		reply(srv, rq->id, json_object());
	} else if (strcmp(m, "server/discover") == 0) {
		reply_error(srv, rq->id, RPC_INVALID_PARAMS,
			    "server/discover: params._meta must name the protocol version "
			    "('" META_VERSION "')",
			    json_pack("{s:o}", "supported", supported_versions()));
	} else {
		reply_errorf(srv, rq->id, RPC_METHOD_NOT_FOUND, "method '%.200s' not found", m);
	}
}

static void handle_notification(struct mcp_server *srv, const char *method, json_t *params)
{
	if (strcmp(method, "notifications/cancelled") == 0) {
		json_t *id = json_object_get(params, "requestId");
		if (id && mcp_pool_cancel(srv->pool, id)) {
			char *s = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
			mcp_log("request %s cancelled by the client", s ? s : "?");
			free(s);
		}
	}
	/* notifications/initialized: the session is usable once initialize was answered;
	 * anything else (progress, roots/list_changed, unknown): nothing to do */
}

static bool valid_id(json_t *id)
{
	return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

static void handle_line(struct mcp_server *srv, const char *line, size_t len)
{
	json_error_t e;
	json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
	if (!msg) {
		/* jansson's text, unless it quotes invalid UTF-8 (then NULL) */
		json_t *text = strstr(e.text, "JSON_ALLOW_NUL")
				   ? json_string("\\u0000 is not allowed in strings")
				   : json_string(e.text);
		reply_error(srv, NULL, RPC_PARSE_ERROR, "Parse error",
			    text ? json_pack("{s:o, s:i}", "detail", text, "column", e.column)
				 : NULL);
		return;
	}
	if (json_is_array(msg)) {
		reply_error(srv, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: JSON-RPC batches are not supported", NULL);
		json_decref(msg);
		return;
	}
	if (!json_is_object(msg)) {
		reply_error(srv, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: a message must be a JSON object", NULL);
		json_decref(msg);
		return;
	}
	json_t *id = json_object_get(msg, "id");
	json_t *method = json_object_get(msg, "method");
	json_t *params = json_object_get(msg, "params");
	const char *jv = json_string_value(json_object_get(msg, "jsonrpc"));
	bool has_id = id != NULL;
	json_t *rid = has_id && valid_id(id) ? id : NULL;
	if (!method && has_id &&
	    (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		/* a response: this server sends no requests, so there is nothing to match */
		json_decref(msg);
		return;
	}
	if (!jv || strcmp(jv, "2.0") != 0) {
		reply_error(srv, rid, RPC_INVALID_REQUEST,
			    "Invalid Request: \"jsonrpc\" must be \"2.0\"", NULL);
	} else if (has_id && !rid) {
		reply_error(srv, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: \"id\" must be a string or a number", NULL);
	} else if (!json_is_string(method)) {
		reply_error(srv, rid, RPC_INVALID_REQUEST,
			    "Invalid Request: \"method\" must be a string", NULL);
	} else if (!has_id) {
		handle_notification(srv, json_string_value(method),
				    json_is_object(params) ? params : NULL);
	} else if (params && !json_is_object(params)) {
		reply_error(srv, rid, RPC_INVALID_PARAMS, "Invalid params: must be an object",
			    NULL);
	} else {
		json_t *meta = json_object_get(params, "_meta");
		struct request rq = {
		    .id = rid,
		    .method = json_string_value(method),
		    .params = params,
		    .meta = json_is_object(meta) ? meta : NULL,
		};
		if (meta && !json_is_object(meta))
			reply_error(srv, rid, RPC_INVALID_PARAMS,
				    "Invalid params: _meta must be an object", NULL);
		else
			handle_request(srv, &rq);
	}
	json_decref(msg);
}

/* ---------------------------------------------------------------- the stdio loop */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full pipe: a signal is already pending */
	}
	errno = saved;
}

static void too_long(struct mcp_server *srv)
{
	char msg[120];
	snprintf(msg, sizeof(msg), "Invalid Request: message longer than %zu bytes",
		 (size_t)MCP_LINE_MAX);
	reply_error(srv, NULL, RPC_INVALID_REQUEST, msg,
		    json_pack("{s:I}", "limit", (json_int_t)MCP_LINE_MAX));
	mcp_log("discarding a message longer than %zu bytes", (size_t)MCP_LINE_MAX);
}

/*
 * Reads newline-delimited messages from fd 0 with a bounded buffer: a line longer than
 * MCP_LINE_MAX is answered with -32600 once and the rest of it is discarded unread into
 * memory.  Returns the signal that stopped it, or 0 at end of input.
 */
static int serve(struct mcp_server *srv)
{
	size_t cap = READ_CHUNK, len = 0, scanned = 0;
	char *buf = malloc(cap);
	bool discarding = false;
	int stop = 0;
	if (!buf)
		return 0;
	struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = sig_pipe[0], .events = POLLIN}};
	for (;;) {
		int pr = poll(pfd, 2, -1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			mcp_log("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents & POLLIN) {
			unsigned char c = 0;
			if (read(sig_pipe[0], &c, 1) == 1) {
				stop = c;
				break;
			}
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (cap - len < READ_CHUNK && !discarding) {
			size_t ncap = cap * 2;
			if (ncap > MCP_LINE_MAX + READ_CHUNK)
				ncap = MCP_LINE_MAX + READ_CHUNK;
			if (ncap > cap) {
				char *nb = realloc(buf, ncap);
				if (!nb) {
					mcp_log("out of memory reading a message");
					break;
				}
				buf = nb;
				cap = ncap;
			}
		}
		ssize_t n = read(0, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			mcp_log("stdin: %s", strerror(errno));
			break;
		}
		if (n == 0) {
			if (len && !discarding) /* a last message without its newline */
				handle_line(srv, buf, len);
			break;
		}
		len += (size_t)n;
		for (;;) {
			char *nl = memchr(buf + scanned, '\n', len - scanned);
			if (!nl) {
				scanned = len;
				break;
			}
			size_t ll = (size_t)(nl - buf);
			if (discarding) {
				discarding = false;
			} else if (ll > MCP_LINE_MAX) {
				too_long(srv);
			} else {
				size_t tl = ll;
				if (tl && buf[tl - 1] == '\r')
					tl--;
				size_t k = 0;
				while (k < tl && (buf[k] == ' ' || buf[k] == '\t'))
					k++;
				if (k < tl)
					handle_line(srv, buf, tl);
			}
			memmove(buf, nl + 1, len - ll - 1);
			len -= ll + 1;
			scanned = 0;
		}
		if (len > MCP_LINE_MAX || (discarding && len)) {
			if (!discarding) {
				too_long(srv);
				discarding = true;
			}
			len = scanned = 0;
			/* give the memory back while the rest of the line streams by */
			if (cap > READ_CHUNK * 4) {
				char *nb = realloc(buf, READ_CHUNK * 4);
				if (nb) {
					buf = nb;
					cap = READ_CHUNK * 4;
				}
			}
		}
	}
	free(buf);
	return stop;
}

/* ---------------------------------------------------------------- start-up */

static char *make_instructions(struct mcp_server *srv)
{
	size_t nf = json_array_size(srv->tools) - 1; /* run_python_snippet and the functions */
	char *s = NULL;
	if (asprintf(&s,
		     "govex runs Python under an enforced policy (%s). run_python_snippet runs "
		     "a whole program in a fresh process%s; nothing survives between calls. "
		     "Every result carries the govex.result/v1 document as structured content: "
		     "status, exit code, stdout, stderr (with truncation flags), value, "
		     "diagnostics, usage and the backend's enforced controls.",
		     govex_policy_digest(srv->policy),
		     nf ? ", and the module functions run one call each in a fresh worker" : "") <
	    0)
		return NULL;
	return s;
}

/* The tools: the library's tool provider over the runtime; -1 logged. */
static int build_tools(struct mcp_server *srv, const struct mcp_serve_options *o)
{
	const char **mods = calloc(o->n_modules + 1, sizeof(*mods));
	if (!mods) {
		mcp_log("out of memory");
		return -1;
	}
	for (size_t i = 0; i < o->n_modules; i++)
		mods[i] = o->modules[i];
	struct govex_toolset_options to = {.modules = mods};
	struct govex_error ge = {0};
	int r = govex_toolset_new(srv->rt, &to, &srv->ts, &ge);
	free(mods);
	if (r < 0) {
		mcp_log("%s", ge.message[0] ? ge.message : govex_strerror(r));
		return -1;
	}
	char *list = govex_toolset_list(srv->ts);
	json_error_t e;
	srv->tools = list ? json_loads(list, 0, &e) : NULL;
	free(list);
	srv->instructions = srv->tools ? make_instructions(srv) : NULL;
	if (!srv->instructions) {
		mcp_log("out of memory");
		return -1;
	}
	return 0;
}

/* The policy's wall-time limit: the total of a call's progress. */
static uint64_t policy_wall_ms(const govex_policy *policy)
{
	size_t len;
	const char *canon = govex_policy_canonical(policy, &len);
	json_error_t e;
	json_t *doc = canon ? json_loadb(canon, len, 0, &e) : NULL;
	json_t *w = json_object_get(json_object_get(doc, "limits"), "wall_ms");
	uint64_t ms = json_is_integer(w) && json_integer_value(w) > 0
			  ? (uint64_t)json_integer_value(w)
			  : 5000;
	json_decref(doc);
	return ms;
}

/* A client that goes away must not kill us with SIGPIPE mid-reply; SIGTERM, SIGINT and
 * SIGHUP stop the loop like the end of stdin does. */
static int catch_signals(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		mcp_log("pipe: %s", strerror(errno));
		return -1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return 0;
}

int mcp_serve(const struct mcp_serve_options *o)
{
	struct mcp_server srv;
	memset(&srv, 0, sizeof(srv));
	srv.log_level = -1;
	srv.policy = o->policy;
	srv.rt = o->rt;
	pthread_mutex_init(&srv.out_lock, NULL);
	pthread_cond_init(&srv.out_more, NULL);
	pthread_cond_init(&srv.out_idle, NULL);
	int rc = 1, r;
	if ((r = writer_start(&srv)) < 0)
		mcp_log("threads: %s (stdout written directly)", strerror(-r));
	if (build_tools(&srv, o) < 0 || catch_signals() < 0)
		goto out;
	if ((r = mcp_pool_new(&srv, srv.ts, policy_wall_ms(srv.policy), o->max_concurrent,
			      &srv.pool)) < 0) {
		mcp_log("threads: %s", strerror(-r));
		goto out;
	}
	size_t nt = json_array_size(srv.tools);
	mcp_log("serving %zu tool%s on stdio (policy %s, up to %u calls at once)", nt,
		nt == 1 ? "" : "s", govex_policy_digest(srv.policy), o->max_concurrent);
	int sig = serve(&srv);
	/* the end of input, or a signal: cancel what runs, join, leave */
	mcp_pool_free(srv.pool);
	srv.pool = NULL;
	rc = sig ? 128 + sig : 0;
out:
	mcp_pool_free(srv.pool);
	json_decref(srv.tools);
	govex_toolset_free(srv.ts);
	for (int i = 0; i < 2; i++)
		if (sig_pipe[i] >= 0) {
			close(sig_pipe[i]);
			sig_pipe[i] = -1;
		}
	free(srv.instructions);
	free(srv.client_name);
	writer_stop(&srv);
	if (!srv.out_writer && !srv.out_head) {
		pthread_cond_destroy(&srv.out_more);
		pthread_cond_destroy(&srv.out_idle);
		pthread_mutex_destroy(&srv.out_lock);
	}
	return rc;
}
