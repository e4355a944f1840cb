/* SPDX-License-Identifier: MIT */
/* The HTTP transport's pieces shared by http.c (daemon, sinks, sessions, /mcp) and
 * http_gate.c (what a request's headers must pass). */
#ifndef GOVEX_MCP_HTTP_H
#define GOVEX_MCP_HTTP_H

#include "mhd.h"

#include "guard.h"
#include "mcp.h"
#include "mcp_serve.h"

enum http_path { PATH_NONE, PATH_MCP, PATH_HEALTHZ, PATH_READYZ, PATH_METRICS };

/* Where one request's messages go: its JSON response, or its SSE stream. */
struct hsink {
	struct mcp_sink base; /* first */
	struct http_server *h;
	pthread_mutex_t lock;
	unsigned refs;		     /* the request's, a call's, the stream's */
	struct MHD_Connection *conn; /* NULL once the request completed */
	bool suspended;		     /* the connection waits for this sink */
	bool done;		     /* the response arrived */
	bool closed;		     /* the request completed (or its client left) */
	bool sse;
	bool cancelled;	   /* its call was cancelled: no reply will come */
	json_t *id;	   /* the request's id (a reference) */
	const void *owner; /* its call's owner (the session, or this sink) */
	bool sess_owner;   /* owner is a session: cancel by (owner, id) */
	char *resp;	   /* the response text */
	char *buf;	   /* SSE: bytes not yet sent, from off to len */
	size_t len, off, cap;
	uint64_t dropped;	     /* notifications dropped: the client did not read */
	struct hsink *next, **pprev; /* the server's list of live sinks */
};

struct hsession {
	struct mcp_session s;
	char id[65];	      /* 256 random bits, hex */
	pthread_mutex_t lock; /* one message of the session dispatched at a time */
	unsigned refs;	      /* the table's, and each request's (sess_lock) */
	bool gone;
	uint64_t last_ms;
	uint64_t used; /* h->sess_clock at its last use: the least recent goes first */
	struct hsession *next;
};

struct http_server {
	struct mcp_server srv;
	struct guard_addr addr;
	char *token;			    /* NULL: none (loopback only) */
	struct guard_client_token *ctokens; /* --client-tokens: n_ctokens of them */
	size_t n_ctokens;
	const char *const *allow;
	size_t n_allow;
	unsigned max_conn, drain_s;
	struct guard_rate rate;
	volatile bool draining;
	pthread_mutex_t sinks_lock;
	pthread_cond_t sinks_gone;
	struct hsink *sinks;
	size_t n_sinks;
	size_t body_bytes; /* request bodies held (sinks_lock) */
	bool stopping;
	pthread_mutex_t sess_lock;
	struct hsession *sessions;
	size_t n_sessions;
	uint64_t sess_clock;
	pthread_mutex_t conns_lock;
	struct hconn *conns;
};

/* Where a connection is: its deadlines (http_gate.c) apply to the first two phases. */
enum hconn_phase {
	CONN_HEADERS, /* waiting for a request's headers: HEADER_DEADLINE_S */
	CONN_BODY,    /* reading its body: BODY_DEADLINE_S */
	CONN_SERVING, /* the request is read: no deadline (a call may take its time) */
};

/* One connection, for the deadlines (http_gate.c). */
struct hconn {
	struct MHD_Connection *conn;
	int fd;
	uint64_t since_ms; /* accepted, or its last request completed */
	enum hconn_phase phase;
	struct hconn *next, **pprev;
};

/* One HTTP request (libmicrohttpd's per-request pointer). */
struct hreq {
	struct http_server *h;
	struct MHD_Connection *conn;
	enum http_path path;
	char client[48];    /* the peer's address */
	const char *origin; /* an allowed Origin, echoed in CORS headers */
	bool accept_sse;
	bool answered, dispatched, too_big;
	bool close;	      /* answer with Connection: close (a request that cannot be framed) */
	size_t discarded;     /* body bytes dropped past MCP_LINE_MAX before the 413 */
	const char *rejected; /* the control that refused it (metrics) */
	int ctoken;	      /* the client token it carries (--client-tokens), -1 none */
	char *body;
	size_t len, cap;
	struct hsink *sink;
	struct hsession *sess; /* referenced */
	const void *owner;
	json_t *id;
	char session_hdr[80];
};

/* Sessions (http_session.c).  find: referenced, NULL when unknown or ended (every id is
 * compared in full, in constant time); new: unfiled, one reference; add: files an
 * initialized one (false: the table is full); end: unfiles it and cancels its calls;
 * expire: ends the idle ones (all: every one). */
struct hsession *session_find(struct http_server *h, const char *id);
struct hsession *session_new(void);
bool session_add(struct http_server *h, struct hsession *ss);
void session_end(struct http_server *h, struct hsession *ss);
void session_unref(struct http_server *h, struct hsession *ss);
void sessions_expire(struct http_server *h, bool all);

/* The checks on a request's line and headers (http_gate.c), at its first call: answers
 * and returns when one fails. */
enum MHD_Result http_first(struct hreq *rq, const char *url, const char *method);
/* The header deadline: libmicrohttpd's timeout is an idle one, so a client dribbling its
 * headers a byte at a time would keep its connection.  A request's headers must arrive
 * whole within HEADER_DEADLINE_S of the connection (or of its previous request), its body
 * within BODY_DEADLINE_S of its headers; past that, the tick shuts the socket down
 * (libmicrohttpd then closes it). */
#define HEADER_DEADLINE_S 10
#define BODY_DEADLINE_S	  60
void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);
void http_conn_phase(struct hreq *rq, enum hconn_phase phase);
void http_conns_deadline(struct http_server *h);
/* CORS headers for an allowed Origin. */
void http_cors_headers(struct hreq *rq, struct MHD_Response *r);
/* Queues a response (body malloc'ed and taken, or NULL) with the headers every answer
 * gets (http.c). */
enum MHD_Result http_respond(struct hreq *rq, unsigned code, const char *ctype, char *body,
			     size_t len);
/* GET /healthz, /readyz, /metrics (http_gate.c) */
enum MHD_Result http_probe(struct hreq *rq);
/* {"error": MESSAGE} with code (http.c). */
enum MHD_Result http_refuse(struct hreq *rq, unsigned code, const char *reason,
			    const char *message);

#endif
