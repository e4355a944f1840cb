/* SPDX-License-Identifier: MIT */
/*
 * What a request must pass before its body is read (http.h): a known path and method,
 * bounded headers, and for /mcp and /metrics: a loopback Host when bound to loopback
 * (DNS rebinding), an allowed Origin, the bearer token, the per-address rate, a body
 * that announces no more than MCP_LINE_MAX.  /healthz and /readyz need none of it and
 * say nothing but their status.  The probes' answers are here too.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "http.h"

#define HDR_MAX ((size_t)16 << 10)

static enum MHD_Result add_len(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	(void)kind;
	size_t *n = cls;
	*n += strlen(key) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

/* Content-Length and Transfer-Encoding headers seen (a request carrying two lengths, or a
 * length and a transfer coding, cannot be framed safely: RFC 9112 6.3) */
struct framing {
	unsigned lengths, codings;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	(void)kind;
	(void)value;
	struct framing *f = cls;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		f->lengths++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		f->codings++;
	return MHD_YES;
}

static void client_of(struct hreq *rq)
{
	const union MHD_ConnectionInfo *ci =
	    mhd.get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	guard_client_group(ci ? ci->client_addr : NULL, rq->client, sizeof(rq->client));
}

static bool is(const char *method, const char *m)
{
	return strcmp(method, m) == 0;
}

static const char *header(struct hreq *rq, const char *name)
{
	return mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

void http_cors_headers(struct hreq *rq, struct MHD_Response *r)
{
	if (!rq->origin)
		return;
	mhd.add_response_header(r, "Access-Control-Allow-Origin", rq->origin);
	mhd.add_response_header(r, "Vary", "Origin");
	mhd.add_response_header(r, "Access-Control-Expose-Headers", "Mcp-Session-Id");
}

/* Host, Origin, token, rate: 0, or -1 answered */
static int gate(struct hreq *rq)
{
	struct http_server *h = rq->h;
	if (h->addr.loopback && !guard_host_ok(header(rq, MHD_HTTP_HEADER_HOST))) {
		http_refuse(rq, 403, "host", "Host is not a loopback name (DNS rebinding?)");
		return -1;
	}
	const char *origin = header(rq, "Origin");
	if (origin) {
		if (!guard_origin_ok(origin, h->addr.loopback, h->allow, h->n_allow)) {
			http_refuse(rq, 403, "origin", "Origin not allowed");
			return -1;
		}
		rq->origin = origin;
	}
	/* the rate first: token guesses are throttled too */
	if (!guard_rate_take(&h->rate, rq->client)) {
		http_refuse(rq, 429, "rate", "too many requests from this address; retry later");
		return -1;
	}
	if (h->token || h->n_ctokens) {
		const char *auth = header(rq, MHD_HTTP_HEADER_AUTHORIZATION);
		/* both kinds compared, whichever matches: one timing for every token */
		bool shared = h->token && guard_bearer_ok(auth, h->token);
		rq->ctoken = guard_bearer_client(auth, h->ctokens, h->n_ctokens);
		if (!shared && rq->ctoken < 0) {
			http_refuse(rq, 401, "auth",
				    "missing or wrong bearer token (Authorization)");
			return -1;
		}
	}
	return 0;
}

static enum MHD_Result preflight(struct hreq *rq)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	http_cors_headers(rq, r);
	mhd.add_response_header(r, "Access-Control-Allow-Methods", "POST, DELETE");
	mhd.add_response_header(r, "Access-Control-Allow-Headers",
				"Authorization, Content-Type, Accept, Mcp-Session-Id, "
				"MCP-Protocol-Version, Last-Event-ID");
	mhd.add_response_header(r, "Access-Control-Max-Age", "600");
	rq->answered = true;
	enum MHD_Result ret = mhd.queue_response(rq->conn, 204, r);
	mhd.destroy_response(r);
	mcp_metrics_http(rq->h->srv.metrics, 204, NULL);
	return ret;
}

/* Accept: SSE welcome? 406 when it admits neither JSON nor SSE. */
static int accept_of(struct hreq *rq)
{
	const char *a = header(rq, MHD_HTTP_HEADER_ACCEPT);
	if (!a)
		return 0;
	rq->accept_sse = strcasestr(a, "text/event-stream") != NULL;
	if (rq->accept_sse || strcasestr(a, "application/json") || strstr(a, "*/*") ||
	    strcasestr(a, "application/*"))
		return 0;
	http_refuse(rq, 406, "accept", "Accept must admit application/json or text/event-stream");
	return -1;
}

enum MHD_Result http_first(struct hreq *rq, const char *url, const char *method)
{
	rq->ctoken = -1;
	client_of(rq);
	http_conn_phase(rq, CONN_BODY);
	if (strcmp(url, "/mcp") == 0)
		rq->path = PATH_MCP;
	else if (strcmp(url, "/healthz") == 0)
		rq->path = PATH_HEALTHZ;
	else if (strcmp(url, "/readyz") == 0)
		rq->path = PATH_READYZ;
	else if (strcmp(url, "/metrics") == 0)
		rq->path = PATH_METRICS;
	size_t hl = strlen(url) + strlen(method) + 16;
	mhd.get_connection_values(rq->conn, MHD_HEADER_KIND, add_len, &hl);
	if (hl > HDR_MAX)
		return http_refuse(rq, 431, "headers_too_large",
				   "request headers larger than 16 KiB");
	struct framing fr = {0, 0};
	mhd.get_connection_values(rq->conn, MHD_HEADER_KIND, count_framing, &fr);
	if (fr.lengths > 1 || (fr.lengths && fr.codings)) {
		/* what follows on the connection is not known to be a request: closed */
		rq->close = true;
		return http_refuse(rq, 400, "framing",
				   "more than one Content-Length, or Content-Length with "
				   "Transfer-Encoding");
	}
	if (rq->path == PATH_NONE)
		return http_refuse(rq, 404, "path", "not found (MCP is at /mcp)");
	bool get = is(method, MHD_HTTP_METHOD_GET) || is(method, MHD_HTTP_METHOD_HEAD);
	if (rq->path == PATH_HEALTHZ || rq->path == PATH_READYZ)
		return get ? MHD_YES : http_refuse(rq, 405, "method", "method not allowed");
	if (gate(rq) < 0)
		return MHD_YES;
	if (rq->path == PATH_METRICS)
		return get ? MHD_YES : http_refuse(rq, 405, "method", "method not allowed");
	if (is(method, MHD_HTTP_METHOD_OPTIONS) && rq->origin)
		return preflight(rq);
	if (is(method, MHD_HTTP_METHOD_DELETE))
		return MHD_YES;
	if (!is(method, MHD_HTTP_METHOD_POST))
		return http_refuse(rq, 405, "method",
				   "method not allowed: POST a JSON-RPC message (this server "
				   "opens no stream of its own: GET is not offered)");
	if (rq->h->draining)
		return http_refuse(rq, 503, "draining", "server shutting down");
	/* JSON only: a browser's form or text/plain POST (no CORS preflight) is not one */
	const char *ct = header(rq, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
	    (ct[16] && ct[16] != ';' && ct[16] != ' '))
		return http_refuse(rq, 415, "content_type",
				   "Content-Type must be application/json");
	/* a body of a length announced first: libmicrohttpd can answer only before a body
	 * or after all of it, so a chunked one could not be refused once past the bound */
	if (header(rq, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return http_refuse(rq, 411, "length_required",
				   "send the body with a Content-Length (at most 17 MiB), not "
				   "a transfer coding");
	const char *cl = header(rq, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > MCP_LINE_MAX)
		return http_refuse(rq, 413, "body_too_large",
				   "request body larger than 17 MiB (17825792 bytes)");
	if (accept_of(rq) < 0)
		return MHD_YES;
	return MHD_YES;
}

/* ---------------------------------------------------------------- probes */

static enum MHD_Result get_ready(struct hreq *rq)
{
	struct http_server *h = rq->h;
	bool ready = !h->draining;
	char *stats = NULL;
	if (ready && govex_runtime_stats_json(h->srv.rt, &stats) == 0) {
		json_error_t e;
		json_t *st = json_loads(stats, 0, &e);
		/* the policy cannot run here (a control no backend enforces): every call
		 * would be refused */
		if (!json_is_true(json_object_get(st, "runnable")))
			ready = false;
		json_t *w = json_object_get(st, "warm");
		if (json_is_true(json_object_get(w, "enabled")) &&
		    !json_is_true(json_object_get(w, "ready")))
			ready = false;
		json_decref(st);
	}
	free(stats);
	const char *b = ready ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\"}";
	rq->answered = true;
	return http_respond(rq, ready ? 200 : 503, "application/json", strdup(b), strlen(b));
}

static enum MHD_Result get_metrics(struct hreq *rq)
{
	size_t len = 0;
	char *text = mcp_metrics_render(rq->h->srv.metrics, rq->h->srv.rt, &len);
	if (!text)
		return http_refuse(rq, 503, NULL, "out of memory");
	rq->answered = true;
	return http_respond(rq, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

/* GET /healthz, /readyz, /metrics */
enum MHD_Result http_probe(struct hreq *rq)
{
	if (rq->path == PATH_READYZ)
		return get_ready(rq);
	if (rq->path == PATH_METRICS)
		return get_metrics(rq);
	const char *b = "{\"status\":\"ok\"}";
	rq->answered = true;
	return http_respond(rq, 200, "application/json", strdup(b), strlen(b));
}

/* ---------------------------------------------------------------- the header deadline */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	struct hconn *hc = *socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		hc = calloc(1, sizeof(*hc));
		if (!hc || !ci) {
			free(hc);
			return;
		}
		hc->conn = c;
		hc->fd = ci->connect_fd;
		hc->since_ms = mono_ms();
		pthread_mutex_lock(&h->conns_lock);
		hc->next = h->conns;
		if (hc->next)
			hc->next->pprev = &hc->next;
		hc->pprev = &h->conns;
		h->conns = hc;
		pthread_mutex_unlock(&h->conns_lock);
		*socket_context = hc;
	} else if (hc) { /* closed: the socket is still open until this returns */
		pthread_mutex_lock(&h->conns_lock);
		*hc->pprev = hc->next;
		if (hc->next)
			hc->next->pprev = hc->pprev;
		pthread_mutex_unlock(&h->conns_lock);
		free(hc);
		*socket_context = NULL;
	}
}

/* A request's headers arrived (CONN_BODY), it was read (CONN_SERVING), or it completed
 * (CONN_HEADERS: the next one's). */
void http_conn_phase(struct hreq *rq, enum hconn_phase phase)
{
	const union MHD_ConnectionInfo *ci =
	    mhd.get_connection_info(rq->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct hconn *hc = ci ? ci->socket_context : NULL;
	if (!hc)
		return;
	pthread_mutex_lock(&rq->h->conns_lock);
	hc->phase = phase;
	hc->since_ms = mono_ms();
	pthread_mutex_unlock(&rq->h->conns_lock);
}

void http_conns_deadline(struct http_server *h)
{
	uint64_t now = mono_ms();
	unsigned n = 0;
	pthread_mutex_lock(&h->conns_lock);
	for (struct hconn *hc = h->conns; hc; hc = hc->next)
		if (hc->fd >= 0 && hc->phase != CONN_SERVING &&
		    now - hc->since_ms >
			(hc->phase == CONN_HEADERS ? HEADER_DEADLINE_S : BODY_DEADLINE_S) * 1000) {
			shutdown(hc->fd, SHUT_RDWR);
			hc->fd = -1; /* once */
			n++;
		}
	pthread_mutex_unlock(&h->conns_lock);
	for (unsigned i = 0; i < n; i++)
		mcp_metrics_http(h->srv.metrics, 408, "deadline");
}
