/* SPDX-License-Identifier: MIT */
/*
 * govex mcp: the MCP server.  A client of the public API (govex.h) only, plus jansson for
 * JSON-RPC.  docs/mcp.md describes the protocol surface; this header ties the pieces:
 *
 *   server.c   JSON-RPC dispatch of both eras, over the transport seam (struct mcp_sink)
 *   stdio.c    the entry point (mcp_serve.h), stdio loop, bounded line reader, writer
 *   http.c     streamable HTTP (libmicrohttpd): /mcp, sessions, /healthz /readyz /metrics
 *   guard.c    HTTP's controls: token, Origin/Host, per-address rate
 *   metrics.c  counters for /metrics
 *   calls.c    the worker pool: one thread and one cancel token per running call over
 *              govex_toolset_invoke, live output as log notifications, progress,
 *              cancellation, what each protocol version makes of a tool result
 *   The tools themselves (catalogue, descriptions, schemas, argument checks, running,
 *   the CallToolResult) are the library's tool provider (govex_toolset_*).
 *   (src/cli/cmd_mcp.c parses the command line and makes the runtime, approver included)
 */
#ifndef GOVEX_MCP_H
#define GOVEX_MCP_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "govex.h"

/* A line longer than this is not read: the largest argument a policy admits is 16 MiB
 * (limits.call_input_bytes), JSON escaping and the envelope get 1 MiB of slack.  The
 * rest of such a line is discarded and the server answers -32600. */
#define MCP_LINE_MAX ((size_t)17 << 20)

#define MCP_SERVER_NAME "govex"

/* JSON-RPC and MCP error codes. */
#define RPC_PARSE_ERROR		-32700
#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603
#define RPC_UNSUPPORTED_VERSION -32022

/* ---------------------------------------------------------------- the transport seam */

/*
 * Where the messages of a request go: stdio has one sink (stdout, through a writer
 * thread); HTTP has one per request (its JSON response or its SSE stream), so that a
 * call's notifications and its reply reach the client that asked and no other.
 */
struct mcp_sink {
	/* One message (malloc'ed, NUL-terminated JSON, no newline; taken).  notify: a
	 * notification the sink may drop (log line, progress); else a response. */
	void (*send)(struct mcp_sink *s, char *text, bool notify);
	void (*ref)(struct mcp_sink *s);   /* NULL: the sink outlives every call */
	void (*unref)(struct mcp_sink *s); /* NULL likewise */
	/* A call of this sink was cancelled (no reply will come); NULL: nothing to do */
	void (*cancelled)(struct mcp_sink *s);
	int status;	      /* HTTP: a status the dispatch asks for, 0 none */
	unsigned retry_after; /* HTTP: with a 429, its Retry-After (seconds), 0: 1 */
};

/* The legacy era's session: what initialize and logging/setLevel set.  stdio has one;
 * HTTP one per Mcp-Session-Id (and none for a stateless 2026-07-28 request). */
struct mcp_session {
	bool initialized;
	char version[16];
	char *client_name;
	int log_level; /* logging/setLevel; -1 until set */
};

/* One message being dispatched: where its answers go, whose session it belongs to, and
 * the owner its calls are filed under (a notifications/cancelled reaches only calls of
 * the same owner: the session, or for a stateless request the request itself). */
struct mcp_msg {
	struct mcp_sink *sink;
	struct mcp_session *sess; /* NULL: stateless (modern requests only) */
	const void *owner;
	const char *client; /* the client its calls are scheduled under (calls.c) */
	bool answered;	    /* set by the dispatch: a response went (or will go) to sink */
	bool is_initialize;
};

struct mcp_metrics;

struct mcp_server {
	const govex_policy *policy;
	govex_runtime *rt;
	govex_toolset *ts;
	json_t *tools; /* govex_toolset_list(), parsed once: the list never changes */
	struct mcp_pool *pool;
	char *instructions;
	struct mcp_metrics *metrics; /* NULL: not counted (stdio) */
};

/* ---------------------------------------------------------------- server.c */

struct mcp_queue_limits;

/* Builds the toolset, the tool list and the call pool (lim: its queue's bounds, 0 fields
 * the defaults); -1 logged.  mcp_server_fini frees what it made. */
int mcp_server_init(struct mcp_server *srv, const govex_policy *policy, govex_runtime *rt,
		    const char *const *modules, size_t n_modules, unsigned max_concurrent,
		    const struct mcp_queue_limits *lim);
void mcp_server_fini(struct mcp_server *srv);

/* Numbers of a message past jansson's range (numbers.c): the "id" (as sent, when shorter
 * than id_text) and the first other one (its path, as params.arguments.a). */
struct mcp_bignum {
	bool id;
	char id_text[64];
	char path[200]; /* "" none */
	char text[48];	/* its first digits */
};

/* json_loadb, but a number out of range is read as null and said in *big instead of
 * failing the parse.  NULL: e says why (another error, or ENOMEM). */
json_t *mcp_json_loadb(const char *text, size_t len, size_t flags, json_error_t *e,
		       struct mcp_bignum *big);

/* A copy of text (*ret_len bytes) in which every string value longer than keep bytes is
 * "" instead; check: only strings jansson would read (valid UTF-8 and escapes, no
 * \u0000), so that whether jansson accepts the copy is whether it accepts text (its
 * error's position is the copy's: parse text again for the message).  NULL when none was
 * (or ENOMEM): use text. */
char *mcp_json_brief(const char *text, size_t len, size_t keep, bool check, size_t *ret_len);
/* jansson's rules for a string, one implementation for the library's long-string parse
 * and this brief reading.  Internal to libgovex (src/lib/jsonlong.c); the server links
 * the library statically. */
const char *govex__json_string_end(const char *q, const char *end);
/* The next string value (not a key) of at least min bytes inside, from *p on: its
 * quotes in *ret_q and *ret_c, *p past it; false when none is left (or one is
 * unterminated: jansson says so). */
bool govex__json_next_long_value(const char **p, const char *end, size_t min, const char **ret_q,
				 const char **ret_c);
bool govex__json_string_ok(const unsigned char *s, const unsigned char *e);
/* Where the value of member k1.k2 of the object text is, as written (keys without
 * escapes); false when not found. */
bool mcp_json_member_span(const char *text, size_t len, const char *k1, const char *k2,
			  size_t *ret_off, size_t *ret_len);
/* json_loadb of a document whose strings longer than keep bytes (as written) are read as
 * "" (numbers.c): for what the server reads of a tool result, not for its text. */
json_t *mcp_json_load_brief(const char *text, size_t len, size_t flags, size_t keep,
			    json_error_t *e);

/* Dispatches one JSON-RPC message (the text of a line or of a POST body). */
void mcp_dispatch(struct mcp_server *srv, struct mcp_msg *m, const char *text, size_t len);

/* Sends one message to a sink.  Takes msg. */
void mcp_send(struct mcp_sink *sink, json_t *msg);
/* The same for a message already encoded (NUL-terminated, no newline; taken). */
void mcp_send_text(struct mcp_sink *sink, char *text);
/* A notification (log line, progress): a sink may drop it rather than queue it while the
 * client is not reading, so that it never holds up a run.  Takes msg. */
void mcp_notify(struct mcp_sink *sink, json_t *msg);
/* An error response with a null id (a message that could not be read).  */
void mcp_reply_error(struct mcp_sink *sink, json_t *id, int code, const char *message,
		     json_t *data);

/* Logs a line to stderr ("govex mcp: ..."); thread-safe. */
void mcp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* notifications/message from LOGGER, when the client asked for LEVEL or lower ("info",
 * "warning"...) for the request (modern: its _meta logLevel) or the session (legacy
 * setLevel).  Takes data. */
void mcp_notify_log(struct mcp_sink *sink, int request_level, const char *level, const char *logger,
		    json_t *data);

/* Syslog level index of a logging level name (0 = debug ... 7 = emergency), -1 unknown. */
int mcp_log_level(const char *name);

/* Whether V is a version this server speaks (modern or legacy). */
bool mcp_version_known(const char *v);

/* The policy's wall-time limit: the total of a call's progress. */
uint64_t mcp_policy_wall_ms(const govex_policy *policy);

/* SIGTERM, SIGINT and SIGHUP written as a byte (the signal number) to a self-pipe whose
 * read end (non-blocking) is returned for the transport's loop to poll, or -1 (errno);
 * SIGPIPE ignored.  mcp_signals_release closes the pipe. */
int mcp_signals_catch(void);
void mcp_signals_release(void);

/* ---------------------------------------------------------------- calls.c */

struct mcp_pool;

struct mcp_call_ctx {
	bool modern;		/* 2026-07-28 request: resultType and serverInfo in _meta */
	bool legacy_text_json;	/* pre-2025-06-18: the document also as a text block */
	bool args_rpc_error;	/* pre-2025-11-25: invalid arguments are -32602, not isError */
	int log_level;		/* -1: no notifications/message for this call */
	json_t *progress_token; /* NULL or a string/number (new ref taken) */
	const char *client_name;
};

/* The name a client's calls are scheduled under (a session, an address group...). */
#define MCP_CLIENT_KEY_MAX 96

/* The queue's default bounds (docs/mcp.md "Scheduling"): calls waiting per client, per
 * running slot; in all, that many clients' worth; the bytes of their arguments; the time
 * a call may wait before it is answered with an error. */
#define MCP_QUEUE_PER_SLOT  64
#define MCP_QUEUE_CLIENTS   8
#define MCP_QUEUE_BYTES	    ((size_t)256 << 20)
#define MCP_QUEUE_TIMEOUT_S 60

struct mcp_queue_limits {
	size_t client_max;   /* calls one client may have waiting; 0: 64 per slot */
	size_t total_max;    /* calls waiting in all; 0: 8 clients' depth */
	size_t bytes_max;    /* their arguments' JSON; 0: 256 MiB */
	uint64_t timeout_ms; /* a call's wait, then an error; 0: 60 s; UINT64_MAX: none */
};

/* Fills the 0 fields of lim with the defaults for max_concurrent slots. */
void mcp_queue_limits_default(struct mcp_queue_limits *lim, unsigned max_concurrent);

/* wall_ms: the policy's limit, the total of a call's progress unless timeout_ms lowers
 * it; lim: the queue's bounds (0 fields: the defaults) */
int mcp_pool_new(struct mcp_server *srv, govex_toolset *ts, uint64_t wall_ms,
		 unsigned max_concurrent, const struct mcp_queue_limits *lim,
		 struct mcp_pool **ret);

/* Queues a call of client (its scheduling name; NULL "?"); a thread of the pool runs it
 * and sends the reply to sink (referenced until then).  args_text: the arguments' JSON as
 * sent (NULL: args encoded); args is read for timeout_ms only then.  Always takes args,
 * args_text and ctx->progress_token; takes id on success only.  Returns 0; -EEXIST when a call of
 * the same owner with that id is in flight; -EBUSY when a bound of the queue is reached
 * (*ret_why: "client", "total" or "bytes"); -ENOMEM; -EMFILE (no descriptor for its cancel
 * token) or another -errno. */
int mcp_pool_submit(struct mcp_pool *pool, struct mcp_sink *sink, const void *owner,
		    const char *client, json_t *id, const char *tool, json_t *args, char *args_text,
		    struct mcp_call_ctx *ctx, const char **ret_why);

/* Seconds after which a call refused -EBUSY now may find room (1 to 60). */
unsigned mcp_pool_retry_after(struct mcp_pool *pool);

#define MCP_WAIT_BUCKETS 12

/* What /metrics shows of the pool. */
struct mcp_pool_stats {
	unsigned slots, running;
	size_t queued, queued_bytes;
	struct mcp_queue_limits lim;
	unsigned clients_waiting, clients_running;	/* clients with calls so */
	unsigned client_queued_max, client_running_max; /* the most one client has */
	uint64_t rejected_client, rejected_total, rejected_bytes, expired;
	double wait_bounds[MCP_WAIT_BUCKETS];
	uint64_t wait_bucket[MCP_WAIT_BUCKETS]; /* cumulative, as Prometheus's */
	uint64_t wait_count, wait_sum_ms;
};

void mcp_pool_stats(struct mcp_pool *pool, struct mcp_pool_stats *ret);

/* Calls f for each client with calls whose name starts with prefix (its name past the
 * prefix, its calls waiting and running), under the pool's lock: f must not call the
 * pool.  At most max clients. */
void mcp_pool_clients(struct mcp_pool *pool, const char *prefix, size_t max,
		      void (*f)(void *ud, const char *name, unsigned queued, unsigned running),
		      void *ud);

/* notifications/cancelled: cancels the owner's call with that id (running: its token;
 * queued: dropped).  No reply is ever sent for it.  Returns true when one was found. */
bool mcp_pool_cancel(struct mcp_pool *pool, const void *owner, json_t *id);

/* Cancels every call of owner (a session ended, a client went away); returns how many. */
unsigned mcp_pool_cancel_owner(struct mcp_pool *pool, const void *owner);

/* Calls queued or running. */
unsigned mcp_pool_in_flight(struct mcp_pool *pool);

/* Cancels every call, joins the threads and frees the pool. */
void mcp_pool_free(struct mcp_pool *pool);

/* Adds resultType and the server's identity to a modern result. */
void mcp_stamp_modern(json_t *result);

/* ---------------------------------------------------------------- metrics.c */

/* Counts a finished call from its govex.result/v1 document (NULL: no result). */
int mcp_metrics_new(struct mcp_metrics **ret);
void mcp_metrics_free(struct mcp_metrics *mt);
void mcp_metrics_run(struct mcp_metrics *mt, json_t *doc, uint64_t duration_us);
/* An HTTP answer; rejected: the control that refused it ("auth", "origin", "rate"...) */
void mcp_metrics_http(struct mcp_metrics *mt, unsigned code, const char *rejected);
/* The pool whose queue /metrics shows (NULL: none, before the pool is freed). */
void mcp_metrics_attach(struct mcp_metrics *mt, struct mcp_pool *pool);
/* The exposition text (malloc'ed, *len bytes), NULL on ENOMEM. */
char *mcp_metrics_render(struct mcp_metrics *mt, govex_runtime *rt, size_t *len);

#endif
