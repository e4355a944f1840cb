/* SPDX-License-Identifier: MIT */
/*
 * govex mcp: the MCP server.  A client of the public API (govex.h) only, plus jansson for
 * JSON-RPC.  docs/mcp.md describes the protocol surface; this header ties the pieces:
 *
 *   server.c   the entry point (mcp_serve.h), stdio loop, bounded line reader, JSON-RPC
 *              dispatch, both eras
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

/* ---------------------------------------------------------------- server.c */

struct mcp_server;

/* Writes one JSON-RPC message (a line) to stdout; thread-safe.  Takes msg. */
void mcp_send(struct mcp_server *srv, json_t *msg);
/* The same for a message already encoded (one line, no newline; malloc'ed, taken). */
void mcp_send_text(struct mcp_server *srv, char *text);
/* A notification (log line, progress): dropped rather than queued while the client is
 * not reading (more than a few MiB wait), so that it never holds up a run.  Takes msg. */
void mcp_notify(struct mcp_server *srv, json_t *msg);

/* Logs a line to stderr ("govex mcp: ..."); thread-safe. */
void mcp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* notifications/message from LOGGER, when the client asked for LEVEL or lower ("info",
 * "warning"...) for the request (modern: its _meta logLevel) or the connection (legacy
 * setLevel).  Takes data. */
void mcp_notify_log(struct mcp_server *srv, int request_level, const char *level,
		    const char *logger, json_t *data);

/* Syslog level index of a logging level name (0 = debug ... 7 = emergency), -1 unknown. */
int mcp_log_level(const char *name);

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

/* wall_ms: the policy's limit, the total of a call's progress unless timeout_ms lowers it */
int mcp_pool_new(struct mcp_server *srv, govex_toolset *ts, uint64_t wall_ms,
		 unsigned max_concurrent, struct mcp_pool **ret);

/* Queues a call; a thread of the pool runs it and sends the reply.  Always takes args and
 * ctx->progress_token; takes id on success only.  Returns 0; -EEXIST when a call with
 * that id is in flight; -EBUSY when the queue is full; -ENOMEM. */
int mcp_pool_submit(struct mcp_pool *pool, json_t *id, const char *tool, json_t *args,
		    struct mcp_call_ctx *ctx);

/* notifications/cancelled: cancels the call with that id (running: its token; queued:
 * dropped).  No reply is ever sent for it.  Returns true when such a call was found. */
bool mcp_pool_cancel(struct mcp_pool *pool, json_t *id);

/* Cancels every call, joins the threads and frees the pool. */
void mcp_pool_free(struct mcp_pool *pool);

/* Adds resultType and the server's identity to a modern result. */
void mcp_stamp_modern(json_t *result);

#endif
