/* SPDX-License-Identifier: MIT */
/*
 * govex mcp --http: MCP's streamable HTTP transport over libmicrohttpd (an epoll thread
 * pool; a request waiting for its call is suspended, not holding a thread).
 *
 *   POST /mcp     one JSON-RPC message.  A request is answered 200 with application/json
 *                 (its response) or, for tools/call when the client accepts it,
 *                 text/event-stream (the call's notifications, then its response); a
 *                 notification or response gets 202.  Legacy versions live in a session
 *                 (Mcp-Session-Id, made by initialize); 2026-07-28 requests are stateless.
 *   DELETE /mcp   ends the session.
 *   GET /healthz  200 while serving; GET /readyz 200 when ready, 503 draining or not warm;
 *   GET /metrics  Prometheus text.
 *
 * Every message of a request goes to that request's sink (struct hsink): its response or
 * its stream, never another's.  The controls (guard.c): token, Origin/Host, per-address
 * rate, body and header bounds, connection limits and idle timeout, calls waiting.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define CONN_MEMORY	 ((size_t)64 << 10) /* libmicrohttpd's per-connection pool */
#define SSE_NOTIFY_MAX	 ((size_t)1 << 20)  /* a stream's unsent notifications */
#define IDLE_TIMEOUT_S	 15
#define DEFAULT_MAX_CONN 256
#define DEFAULT_RATE	 50
#define DEFAULT_DRAIN_S	 30
#define MHD_THREADS	 4
#define FINISH_WAIT_MS	 3000
#define BODY_BUDGET	 ((size_t)256 << 20) /* request bodies held at once */

static int sig_fd = -1; /* mcp_signals_catch()'s read end */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- sinks */

static void sink_unref(struct mcp_sink *base);
static void body_free(struct hreq *rq);

static void sink_ref(struct mcp_sink *base)
{
	struct hsink *s = (struct hsink *)base;
	pthread_mutex_lock(&s->lock);
	s->refs++;
	pthread_mutex_unlock(&s->lock);
}

static void sink_unref(struct mcp_sink *base)
{
	struct hsink *s = (struct hsink *)base;
	struct http_server *h = s->h;
	pthread_mutex_lock(&s->lock);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	pthread_mutex_lock(&h->sinks_lock);
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	h->n_sinks--;
	pthread_cond_broadcast(&h->sinks_gone);
	pthread_mutex_unlock(&h->sinks_lock);
	pthread_mutex_destroy(&s->lock);
	json_decref(s->id);
	free(s->resp);
	free(s->buf);
	free(s);
}

/* Appends an SSE event to the stream's buffer; false on ENOMEM. */
static bool sse_append(struct hsink *s, const char *text)
{
	size_t tl = strlen(text), need = s->len + tl + 32;
	if (need > s->cap) {
		if (s->off) { /* give back what was sent */
			memmove(s->buf, s->buf + s->off, s->len - s->off);
			s->len -= s->off;
			s->off = 0;
			need = s->len + tl + 32;
		}
		size_t ncap = s->cap ? s->cap : 4096;
		while (ncap < need)
			ncap *= 2;
		char *nb = ncap > s->cap ? realloc(s->buf, ncap) : s->buf;
		if (!nb)
			return false;
		s->buf = nb;
		s->cap = ncap > s->cap ? ncap : s->cap;
	}
	s->len += (size_t)sprintf(s->buf + s->len, "event: message\ndata: %s\n\n", text);
	return true;
}

/* resumes the connection when it waits for this sink (lock held) */
static void sink_wake(struct hsink *s)
{
	if (s->suspended && s->conn) {
		s->suspended = false;
		mhd.resume_connection(s->conn);
	}
}

static void sink_send(struct mcp_sink *base, char *text, bool notify)
{
	struct hsink *s = (struct hsink *)base;
	pthread_mutex_lock(&s->lock);
	if (s->done || s->closed) {
		/* answered already (a late reply after a drain), or the client went away */
	} else if (notify) {
		if (s->sse && s->len - s->off <= SSE_NOTIFY_MAX && sse_append(s, text))
			sink_wake(s);
		else
			s->dropped++;
	} else {
		s->done = true;
		if (s->sse && !sse_append(s, text))
			mcp_log("out of memory: a reply is lost");
		s->resp = text; /* a stream sends its copy; else the JSON body */
		text = NULL;
		sink_wake(s);
	}
	pthread_mutex_unlock(&s->lock);
	free(text);
}

/* Its call was cancelled (notifications/cancelled, DELETE, a session ended): no reply
 * will come.  A stream ends without one; a JSON request gets a -32000 error. */
static void sink_cancelled(struct mcp_sink *base)
{
	struct hsink *s = (struct hsink *)base;
	pthread_mutex_lock(&s->lock);
	if (!s->done && !s->closed) {
		s->done = true;
		s->cancelled = true;
		sink_wake(s);
	}
	pthread_mutex_unlock(&s->lock);
}

static struct hsink *sink_new(struct http_server *h)
{
	struct hsink *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->base.send = sink_send;
	s->base.ref = sink_ref;
	s->base.unref = sink_unref;
	s->base.cancelled = sink_cancelled;
	s->h = h;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_lock(&h->sinks_lock);
	if (h->stopping) { /* the drain finished the sinks already */
		pthread_mutex_unlock(&h->sinks_lock);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	s->next = h->sinks;
	if (s->next)
		s->next->pprev = &s->next;
	s->pprev = &h->sinks;
	h->sinks = s;
	h->n_sinks++;
	pthread_mutex_unlock(&h->sinks_lock);
	return s;
}

/* The stream's bytes, as libmicrohttpd asks for them; waits (suspended) for more. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct hsink *s = cls;
	pthread_mutex_lock(&s->lock);
	ssize_t n;
	if (s->len > s->off) {
		size_t k = s->len - s->off < max ? s->len - s->off : max;
		memcpy(buf, s->buf + s->off, k);
		s->off += k;
		if (s->off == s->len)
			s->off = s->len = 0;
		n = (ssize_t)k;
	} else if (s->done || !s->conn) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		s->suspended = true;
		mhd.suspend_connection(s->conn);
		n = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void sse_free(void *cls)
{
	sink_unref(cls);
}

/* At the end of a drain: every request still waiting gets an error reply now. */
static void finish_sinks(struct http_server *h)
{
	pthread_mutex_lock(&h->sinks_lock);
	h->stopping = true;
	for (struct hsink *s = h->sinks; s; s = s->next) {
		pthread_mutex_lock(&s->lock);
		bool waiting = !s->done;
		pthread_mutex_unlock(&s->lock);
		if (waiting)
			mcp_reply_error(&s->base, s->id, -32000,
					"server shutting down: the call was cancelled", NULL);
	}
	pthread_mutex_unlock(&h->sinks_lock);
}

/* ---------------------------------------------------------------- responses */

enum MHD_Result http_respond(struct hreq *rq, unsigned code, const char *ctype, char *body,
			     size_t len)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(
	    len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	if (ctype)
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (rq->session_hdr[0])
		mhd.add_response_header(r, "Mcp-Session-Id", rq->session_hdr);
	if (code == 429 || code == 503) {
		char ra[16];
		unsigned s = rq->sink ? rq->sink->base.retry_after : 0;
		snprintf(ra, sizeof(ra), "%u", s ? s : 1);
		mhd.add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (code == 401)
		mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"govex\"");
	if (code == 405)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW,
					rq->path == PATH_MCP ? "POST, DELETE" : "GET, HEAD");
	if (rq->close || (rq->h->draining && rq->path == PATH_MCP))
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	http_cors_headers(rq, r);
	enum MHD_Result ret = mhd.queue_response(rq->conn, code, r);
	mhd.destroy_response(r);
	mcp_metrics_http(rq->h->srv.metrics, code, rq->rejected);
	return ret;
}

/* {"error": MESSAGE} with code; reason: the control that refused (metrics), or NULL */
enum MHD_Result http_refuse(struct hreq *rq, unsigned code, const char *reason, const char *message)
{
	rq->rejected = reason;
	rq->answered = true;
	json_t *j = json_pack("{s:s}", "error", message);
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return http_respond(rq, code, "application/json", body, body ? strlen(body) : 0);
}

/* ---------------------------------------------------------------- /mcp POST */

/* What a body is, read before dispatching (the dispatch reads it again). */
struct shape {
	bool object, request, notification, modern;
	const char *method;
	json_t *id;
	json_t *msg;
};

static void shape_of(const char *body, size_t len, struct shape *sh)
{
	json_error_t e;
	struct mcp_bignum big;
	memset(sh, 0, sizeof(*sh));
	/* its shape only: long strings need not be read (the dispatch checks them) */
	size_t blen = len;
	char *brief =
	    len > ((size_t)64 << 10) ? mcp_json_brief(body, len, 4096, false, &blen) : NULL;
	sh->msg = mcp_json_loadb(brief ? brief : body, blen, JSON_DECODE_ANY, &e, &big);
	free(brief);
	if (!json_is_object(sh->msg))
		return;
	sh->object = true;
	sh->method = json_string_value(json_object_get(sh->msg, "method"));
	sh->id = json_object_get(sh->msg, "id");
	sh->request = sh->method && sh->id;
	sh->notification = sh->method && !sh->id;
	json_t *meta = json_object_get(json_object_get(sh->msg, "params"), "_meta");
	const char *v =
	    json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
	sh->modern = v && strcmp(v, "2026-07-28") == 0;
}

/* The response of a finished (JSON) request. */
static enum MHD_Result answer_json(struct hreq *rq)
{
	struct hsink *s = rq->sink;
	pthread_mutex_lock(&s->lock);
	char *text = s->resp;
	bool cancelled = s->cancelled;
	s->resp = NULL;
	unsigned code = s->base.status ? (unsigned)s->base.status : 200;
	pthread_mutex_unlock(&s->lock);
	if (!text && cancelled) {
		json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
				      s->id ? s->id : json_null(), "error", "code", -32000,
				      "message", "request cancelled");
		text = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
	}
	if (!text)
		return http_refuse(rq, 503, NULL, "server shutting down");
	if (code == 200 && strncmp(text, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":", 35) == 0)
		code = 400; /* the message could not be read: no request to answer */
	return http_respond(rq, code, "application/json", text, strlen(text));
}

static enum MHD_Result start_sse(struct hreq *rq)
{
	struct hsink *s = rq->sink;
	sink_ref(&s->base); /* the response's */
	struct MHD_Response *r =
	    mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, s, sse_free);
	if (!r) {
		sink_unref(&s->base);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	mhd.add_response_header(r, "X-Accel-Buffering", "no");
	if (rq->session_hdr[0])
		mhd.add_response_header(r, "Mcp-Session-Id", rq->session_hdr);
	http_cors_headers(rq, r);
	enum MHD_Result ret = mhd.queue_response(rq->conn, 200, r);
	mhd.destroy_response(r);
	mcp_metrics_http(rq->h->srv.metrics, 200, NULL);
	rq->answered = true;
	return ret;
}

/* A dispatched request: its answer now, or suspended until the sink has it. */
static enum MHD_Result answer_or_wait(struct hreq *rq)
{
	struct hsink *s = rq->sink;
	pthread_mutex_lock(&s->lock);
	bool done = s->done, sse = s->sse;
	if (!done && !sse) {
		s->suspended = true;
		mhd.suspend_connection(rq->conn);
	}
	pthread_mutex_unlock(&s->lock);
	if (sse && !done)
		return start_sse(rq);
	if (!done)
		return MHD_YES;
	/* answered at once (an error, even where a stream was chosen): JSON, its status */
	return answer_json(rq);
}

/* MCP-Protocol-Version: unknown → 400 (the spec's rule: in a session any supported
 * version passes, as the official suite expects); for a 2026-07-28 body, another version
 * → 400.  0 or answered. */
static int check_version_header(struct hreq *rq, const struct shape *sh)
{
	const char *pv =
	    mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, "MCP-Protocol-Version");
	if (!pv)
		return 0;
	const char *why = NULL;
	if (!mcp_version_known(pv))
		why = "MCP-Protocol-Version: unsupported protocol version";
	else if (sh->modern && strcmp(pv, "2026-07-28") != 0)
		why = "MCP-Protocol-Version does not match params._meta's protocol version";
	if (!why)
		return 0;
	http_refuse(rq, 400, "protocol_version", why);
	return -1;
}

static enum MHD_Result post_mcp(struct hreq *rq)
{
	struct http_server *h = rq->h;
	if (h->draining)
		return http_refuse(rq, 503, "draining", "server shutting down");
	if (rq->too_big)
		return http_refuse(rq, 413, "body_too_large",
				   "request body larger than 17 MiB (17825792 bytes)");
	struct shape sh;
	shape_of(rq->body ? rq->body : "", rq->len, &sh);
	const char *sid = mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Mcp-Session-Id");
	struct hsession *ss = NULL;
	bool fresh = false, initialized = false;
	enum MHD_Result ret;
	if (sid) {
		ss = session_find(h, sid);
		if (!ss) {
			json_decref(sh.msg);
			return http_refuse(rq, 404, "session",
					   "unknown or expired session: initialize again");
		}
		snprintf(rq->session_hdr, sizeof(rq->session_hdr), "%s", ss->id);
	} else if (sh.request && !sh.modern && strcmp(sh.method, "initialize") == 0) {
		if (!(ss = session_new())) {
			json_decref(sh.msg);
			return http_refuse(rq, 503, NULL, "out of memory");
		}
		fresh = true;
	} else if (sh.object && sh.method && !sh.modern && sh.request) {
		json_decref(sh.msg);
		return http_refuse(rq, 400, "session",
				   "Mcp-Session-Id required: initialize first (or send "
				   "2026-07-28 requests, which need no session)");
	}
	if (check_version_header(rq, &sh) < 0) {
		ret = MHD_YES;
		goto out;
	}
	rq->sink = sink_new(h);
	if (!rq->sink) {
		ret = http_refuse(rq, 503, "draining", "server shutting down");
		goto out;
	}
	rq->sink->conn = rq->conn;
	rq->sink->sse = sh.request && rq->accept_sse && strcmp(sh.method, "tools/call") == 0;
	if (sh.request && (json_is_string(sh.id) || json_is_integer(sh.id))) {
		rq->id = json_incref(sh.id);
		rq->sink->id = json_incref(sh.id);
	}
	rq->owner = ss ? (const void *)ss : (const void *)rq->sink;
	rq->sink->owner = rq->owner;
	rq->sink->sess_owner = ss != NULL;
	/* the client its calls are scheduled under: the client token's name, else the
	 * session, else the address group */
	char client[MCP_CLIENT_KEY_MAX];
	if (rq->ctoken >= 0)
		snprintf(client, sizeof(client), "token %s", h->ctokens[rq->ctoken].name);
	else if (ss)
		snprintf(client, sizeof(client), "session %p", (void *)ss);
	else
		snprintf(client, sizeof(client), "address %s", rq->client);
	struct mcp_msg m = {.sink = &rq->sink->base,
			    .sess = ss ? &ss->s : NULL,
			    .owner = rq->owner,
			    .client = client};
	if (ss)
		pthread_mutex_lock(&ss->lock);
	mcp_dispatch(&h->srv, &m, rq->body ? rq->body : "", rq->len);
	initialized = ss && ss->s.initialized;
	if (ss)
		pthread_mutex_unlock(&ss->lock);
	if (fresh && initialized) {
		if (!session_add(h, ss)) {
			ret = http_refuse(rq, 503, "sessions", "too many sessions");
			goto out;
		}
		snprintf(rq->session_hdr, sizeof(rq->session_hdr), "%s", ss->id);
	}
	rq->dispatched = true;
	body_free(rq);
	if (!m.answered) {
		rq->answered = true;
		ret = http_respond(rq, 202, NULL, NULL, 0);
	} else {
		ret = answer_or_wait(rq);
	}
out:
	json_decref(sh.msg);
	if (ss && fresh && !initialized)
		session_unref(h, ss); /* initialize failed: no session was made */
	else if (ss)
		rq->sess = ss; /* the request keeps its reference until it completes */
	return ret;
}

static enum MHD_Result delete_mcp(struct hreq *rq)
{
	const char *sid = mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Mcp-Session-Id");
	if (!sid)
		return http_refuse(rq, 400, "session", "Mcp-Session-Id required");
	struct hsession *ss = session_find(rq->h, sid);
	if (!ss)
		return http_refuse(rq, 404, "session", "unknown or expired session");
	session_end(rq->h, ss);
	session_unref(rq->h, ss);
	rq->answered = true;
	return http_respond(rq, 200, NULL, NULL, 0);
}

/* ---------------------------------------------------------------- the handler */

/* Bodies being read share BODY_BUDGET: a flood of large uploads gets 503, not the
 * server's memory.  add: bytes to reserve (true if they fit), or to give back (< 0). */
static bool body_budget(struct http_server *h, long long add)
{
	pthread_mutex_lock(&h->sinks_lock);
	bool ok = add <= 0 || h->body_bytes + (size_t)add <= BODY_BUDGET;
	if (ok)
		h->body_bytes += (size_t)add; /* wraps back for add < 0 */
	pthread_mutex_unlock(&h->sinks_lock);
	return ok;
}

static void body_free(struct hreq *rq)
{
	if (rq->cap)
		body_budget(rq->h, -(long long)rq->cap);
	free(rq->body);
	rq->body = NULL;
	rq->len = rq->cap = 0;
}

/* A chunk of the body; past MCP_LINE_MAX the rest is dropped and 413 answered at its end.
 * -1: no room in the budget (503). */
#define DISCARD_MAX ((size_t)64 << 20)
static int take_body(struct hreq *rq, const char *data, size_t n)
{
	if (rq->too_big || n > MCP_LINE_MAX - rq->len) {
		rq->too_big = true;
		body_free(rq);
		return 0;
	}
	if (rq->len + n + 1 > rq->cap) {
		size_t ncap = rq->cap ? rq->cap : 16384;
		while (ncap < rq->len + n + 1)
			ncap *= 2;
		if (ncap > MCP_LINE_MAX + 1)
			ncap = MCP_LINE_MAX + 1;
		if (!body_budget(rq->h, (long long)(ncap - rq->cap)))
			return -1;
		char *nb = realloc(rq->body, ncap);
		if (!nb) {
			body_budget(rq->h, -(long long)(ncap - rq->cap));
			return -1;
		}
		rq->body = nb;
		rq->cap = ncap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	rq->body[rq->len] = '\0';
	return 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **req_cls)
{
	struct hreq *rq = *req_cls;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->h = cls;
		rq->conn = conn;
		*req_cls = rq;
		return http_first(rq, url, method);
	}
	if (rq->answered) {
		*upload_size = 0; /* refused at the headers: the body is not kept */
		return MHD_YES;
	}
	if (*upload_size) {
		/* a body past MCP_LINE_MAX (chunked: its length was not announced) is read
		 * and dropped to its end, within the body deadline and DISCARD_MAX, and then
		 * answered 413: libmicrohttpd sends no answer in the middle of a body */
		if (rq->too_big) {
			rq->discarded += *upload_size;
			*upload_size = 0;
			return rq->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		int r = take_body(rq, upload, *upload_size);
		*upload_size = 0;
		if (r < 0) {
			body_free(rq);
			return http_refuse(rq, 503, "body_budget",
					   "server busy: too many large requests at once");
		}
		return MHD_YES;
	}
	if (rq->too_big) {
		rq->close = true;
		return http_refuse(rq, 413, "body_too_large",
				   "request body larger than 17 MiB (17825792 bytes)");
	}
	if (rq->dispatched)
		return answer_or_wait(rq); /* resumed: the reply is there */
	http_conn_phase(rq, CONN_SERVING);
	if (strcmp(method, MHD_HTTP_METHOD_POST) == 0)
		return post_mcp(rq);
	if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0)
		return delete_mcp(rq);
	if (rq->path != PATH_MCP)
		return http_probe(rq);
	return http_refuse(rq, 405, "method", "method not allowed");
}

static void completed(void *cls, struct MHD_Connection *conn, void **req_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)conn;
	struct http_server *h = cls;
	struct hreq *rq = *req_cls;
	if (!rq)
		return;
	*req_cls = NULL;
	http_conn_phase(rq, CONN_HEADERS);
	if (rq->sink) {
		struct hsink *s = rq->sink;
		pthread_mutex_lock(&s->lock);
		bool unanswered = !s->done;
		s->conn = NULL;
		s->closed = true;
		pthread_mutex_unlock(&s->lock);
		/* the client went away before its reply: its call is of no use to anyone */
		if (unanswered && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
			if (rq->sess && rq->id)
				mcp_pool_cancel(h->srv.pool, rq->sess, rq->id);
			else if (!rq->sess)
				mcp_pool_cancel_owner(h->srv.pool, rq->owner);
		}
		sink_unref(&s->base);
	}
	session_unref(h, rq->sess);
	json_decref(rq->id);
	body_free(rq);
	free(rq);
}

/* ---------------------------------------------------------------- the daemon */

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	mcp_log("http: %s", line);
}

/* The path is matched as it was sent, not percent-decoded: libmicrohttpd's own unescaping
 * turns "/mcp%00" into "/mcp" followed by a NUL, which every C comparison reads as "/mcp"
 * (issue 23).  No path this server serves has a character that needs escaping; "/m%63p" is
 * 404 too.  (The query, which this server reads nothing from, is split off before.) */
static size_t raw_path(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

static struct MHD_Daemon *start_daemon(struct http_server *h, int fd)
{
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
			 (h->addr.v6 ? MHD_USE_IPv6 : 0);
	unsigned per_ip = h->max_conn < 64 ? h->max_conn : 64;
	if (h->max_conn >= 256)
		per_ip = h->max_conn / 4;
	/* its threads take no signal: the main thread waits for them */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	struct MHD_Daemon *d = mhd.start_daemon(
	    flags, 0, NULL, NULL, handler, h, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)MHD_THREADS, MHD_OPTION_CONNECTION_LIMIT,
	    h->max_conn, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION,
	    http_conn_notify, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
	    MHD_OPTION_UNESCAPE_CALLBACK, raw_path, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return d;
}

/* A suspended request's client hung up (libmicrohttpd does not watch a suspended
 * connection): its call is cancelled and its sink answered, so that the connection
 * resumes and is closed.  Checked once a tick, at most WATCH_MAX per tick. */
#define WATCH_MAX 64
static void watch_clients(struct http_server *h)
{
	struct hsink *gone[WATCH_MAX];
	size_t n = 0;
	pthread_mutex_lock(&h->sinks_lock);
	for (struct hsink *s = h->sinks; s && n < WATCH_MAX; s = s->next) {
		pthread_mutex_lock(&s->lock);
		if (s->suspended && !s->done && s->conn) {
			const union MHD_ConnectionInfo *ci =
			    mhd.get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
			struct pollfd pfd = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};
			if (pfd.fd >= 0 && poll(&pfd, 1, 0) > 0 &&
			    (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				s->refs++;
				gone[n++] = s;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&h->sinks_lock);
	for (size_t i = 0; i < n; i++) {
		struct hsink *s = gone[i];
		if (s->sess_owner && s->id)
			mcp_pool_cancel(h->srv.pool, s->owner, s->id);
		else if (!s->sess_owner)
			mcp_pool_cancel_owner(h->srv.pool, s->owner);
		mcp_reply_error(&s->base, s->id, -32000, "the client went away", NULL);
		sink_unref(&s->base);
	}
}

/* Serves until a signal; returns it. */
static int wait_signal(struct http_server *h)
{
	struct pollfd pfd = {.fd = sig_fd, .events = POLLIN};
	for (;;) {
		int r = poll(&pfd, 1, 500);
		if (r < 0 && errno != EINTR)
			return 0;
		unsigned char c;
		if (r > 0 && read(sig_fd, &c, 1) == 1)
			return c;
		sessions_expire(h, false);
		watch_clients(h);
		http_conns_deadline(h);
	}
}

/* SIGTERM: answer 503 to new MCP requests, let calls finish for up to the drain timeout
 * (a second signal cuts it short), then cancel them and answer what still waits. */
static void drain(struct http_server *h, int sig)
{
	h->draining = true;
	unsigned n = mcp_pool_in_flight(h->srv.pool);
	mcp_log("signal %d: draining (%u call%s in flight, up to %u s)", sig, n, n == 1 ? "" : "s",
		h->drain_s);
	uint64_t until = now_ms() + (uint64_t)h->drain_s * 1000;
	struct pollfd pfd = {.fd = sig_fd, .events = POLLIN};
	while ((n = mcp_pool_in_flight(h->srv.pool)) > 0 && now_ms() < until) {
		unsigned char c;
		if (poll(&pfd, 1, 50) > 0 && read(sig_fd, &c, 1) == 1) {
			mcp_log("signal %d: no more waiting", c);
			break;
		}
	}
	if (n)
		mcp_log("cancelling %u call%s still running", n, n == 1 ? "" : "s");
	finish_sinks(h);
	sessions_expire(h, true);
	/* cancels what runs and joins: a cancelled call sends nothing */
	mcp_metrics_attach(h->srv.metrics, NULL);
	mcp_pool_free(h->srv.pool);
	h->srv.pool = NULL;
	/* let the answers go out before the daemon stops (none may stay suspended) */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FINISH_WAIT_MS / 1000;
	pthread_mutex_lock(&h->sinks_lock);
	while (h->n_sinks && pthread_cond_timedwait(&h->sinks_gone, &h->sinks_lock, &ts) == 0)
		;
	pthread_mutex_unlock(&h->sinks_lock);
}

/* The address and the tokens, checked: 0, or the exit status (said on stderr). */
static int check_addr_token(const struct mcp_serve_options *o, struct guard_addr *addr,
			    char **token, struct guard_client_token **ctokens, size_t *n_ctokens)
{
	char err[400];
	if (guard_parse_addr(o->http, addr, err, sizeof(err)) < 0) {
		mcp_log("%s", err);
		return 2; /* a command line error, as the option parser's */
	}
	if (o->token_file && guard_read_token(o->token_file, token, err, sizeof(err)) < 0) {
		mcp_log("%s", err);
		return 125;
	}
	if (o->client_tokens &&
	    guard_read_client_tokens(o->client_tokens, ctokens, n_ctokens, err, sizeof(err)) < 0) {
		mcp_log("%s", err);
		return 125;
	}
	if (!addr->loopback && !*token && !*n_ctokens) {
		mcp_log("--http %s: not a loopback address; a token is required there "
			"(--token-file FILE or --client-tokens FILE)",
			o->http);
		return 125;
	}
	return 0;
}

int mcp_http_check(const struct mcp_serve_options *o)
{
	struct guard_addr addr;
	char *token = NULL;
	struct guard_client_token *ct = NULL;
	size_t nct = 0;
	int rc = check_addr_token(o, &addr, &token, &ct, &nct);
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	guard_client_tokens_free(ct, nct);
	char err[400];
	if (rc == 0 && mhd_load(err, sizeof(err)) < 0) {
		mcp_log("--http: %s", err);
		rc = 1;
	}
	return rc;
}

static int setup(struct http_server *h, const struct mcp_serve_options *o)
{
	int rc = check_addr_token(o, &h->addr, &h->token, &h->ctokens, &h->n_ctokens);
	if (rc)
		return rc;
	h->allow = o->allow_origins;
	h->n_allow = o->n_allow_origins;
	h->max_conn = o->max_connections ? o->max_connections : DEFAULT_MAX_CONN;
	h->drain_s = o->drain_timeout_set ? o->drain_timeout_s : DEFAULT_DRAIN_S;
	guard_rate_init(&h->rate, o->rate ? o->rate : DEFAULT_RATE);
	return 0;
}

int mcp_serve_http(const struct mcp_serve_options *o)
{
	struct http_server *h = calloc(1, sizeof(*h));
	if (!h) {
		mcp_log("out of memory");
		return 1;
	}
	pthread_mutex_init(&h->sinks_lock, NULL);
	pthread_mutex_init(&h->sess_lock, NULL);
	pthread_mutex_init(&h->conns_lock, NULL);
	pthread_cond_init(&h->sinks_gone, NULL);
	int rc = setup(h, o), fd = -1;
	struct MHD_Daemon *d = NULL;
	if (rc)
		goto out;
	rc = 1;
	char err[400];
	if (mhd_load(err, sizeof(err)) < 0) {
		mcp_log("--http: %s", err);
		goto out;
	}
	if (mcp_metrics_new(&h->srv.metrics) < 0 || (sig_fd = mcp_signals_catch()) < 0)
		goto out;
	struct mcp_queue_limits lim = {.client_max = o->max_queued,
				       .timeout_ms = (uint64_t)o->queue_timeout_s * 1000};
	if (mcp_server_init(&h->srv, o->policy, o->rt, o->modules, o->n_modules, o->max_concurrent,
			    &lim) < 0)
		goto out;
	mcp_metrics_attach(h->srv.metrics, h->srv.pool);
	if ((fd = guard_listen(&h->addr)) < 0) {
		mcp_log("--http %s: %s", o->http, strerror(-fd));
		goto out;
	}
	uint16_t port = guard_bound_port(fd);
	if (!(d = start_daemon(h, fd))) {
		mcp_log("--http %s: the HTTP server did not start", o->http);
		goto out;
	}
	fd = -1; /* the daemon's */
	size_t nt = json_array_size(h->srv.tools);
	mcp_log("serving %zu tool%s over HTTP (policy %s, up to %u calls at once, %s)", nt,
		nt == 1 ? "" : "s", govex_policy_digest(o->policy), o->max_concurrent,
		h->token || h->n_ctokens ? "bearer token required" : "no token: loopback only");
	mcp_log("listening on http://%s:%u/mcp", h->addr.text, (unsigned)port);
	int sig = wait_signal(h);
	drain(h, sig);
	mhd.stop_daemon(d);
	d = NULL;
	rc = 0;
out:
	if (d)
		mhd.stop_daemon(d);
	if (fd >= 0)
		close(fd);
	sessions_expire(h, true);
	mcp_metrics_attach(h->srv.metrics, NULL);
	mcp_server_fini(&h->srv);
	mcp_metrics_free(h->srv.metrics);
	mcp_signals_release();
	sig_fd = -1;
	if (h->token) {
		explicit_bzero(h->token, strlen(h->token));
		free(h->token);
	}
	guard_client_tokens_free(h->ctokens, h->n_ctokens);
	guard_rate_fini(&h->rate);
	free(h);
	return rc;
}
