/* SPDX-License-Identifier: MIT */
/*
 * govex mcp: the MCP server.  A client of the public API (govex.h) only, plus jansson for
 * JSON-RPC.  docs/mcp.md describes the protocol surface; this header ties the pieces:
 *
 *   server.c   the entry point (mcp_serve.h), stdio loop, bounded line reader, JSON-RPC dispatch, both eras
 *   tools.c    the tool catalogue: run_python_snippet and one tool per module function,
 *              input/output schemas
 *   arguments.c  a call's arguments checked against its tool's schema and the bounds
 *   calls.c    the worker pool: one thread and one cancel token per running call,
 *              progress, cancellation, tool results
 *   snippet.c  the Python wrapper that gives a snippet INPUTS and a REPL-style value
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

/* The policy's bounds that shape the tools' schemas (from govex_policy_canonical()). */
struct mcp_bounds {
	uint64_t code_bytes;
	uint64_t stdin_bytes;
	uint64_t wall_ms;
	uint64_t call_input_bytes;
	uint64_t call_output_bytes;
};

/* ---------------------------------------------------------------- tools.c */

enum mcp_tool_kind {
	MCP_TOOL_SNIPPET,
	MCP_TOOL_FUNCTION,
};

struct mcp_module {
	char *path; /* absolute (realpath at start-up) */
	char *data; /* the bytes read at start-up: calls are planned against these */
	size_t len;
	bool notebook;
};

struct mcp_tool {
	char *name;
	enum mcp_tool_kind kind;
	json_t *def;			 /* the Tool object of tools/list */
	json_t *input_schema;		 /* borrowed from def */
	const struct mcp_module *module; /* MCP_TOOL_FUNCTION */
	char *function;			 /* MCP_TOOL_FUNCTION */
};

struct mcp_catalog {
	struct mcp_tool *tools; /* sorted by name: tools/list is deterministic */
	size_t n_tools;
	struct mcp_module *modules;
	size_t n_modules;
	struct mcp_bounds bounds;
};

/* Reads the bounds from the policy's canonical JSON.  Returns 0 or -GOVEX_EPOLICY. */
int mcp_bounds_from_policy(const govex_policy *policy, struct mcp_bounds *ret);

/* Adds run_python_snippet.  Returns 0 or -ENOMEM. */
int mcp_catalog_add_snippet(struct mcp_catalog *cat);

/* Reads and inspects a module, adding one tool per eligible function.  On failure
 * writes a message to err and returns < 0. */
int mcp_catalog_add_module(struct mcp_catalog *cat, govex_runtime *rt, const char *path, char *err,
			   size_t errlen);

/* Sorts the tools by name and rejects duplicates (message in err). */
int mcp_catalog_finish(struct mcp_catalog *cat, char *err, size_t errlen);

void mcp_catalog_free(struct mcp_catalog *cat);

/* Sets each tool's annotations (hints derived from the policy). */
void mcp_catalog_annotate(struct mcp_catalog *cat, const govex_policy *policy);

/* Reads a module file (at most 16 MiB).  Returns 0 or -errno. */
int mcp_read_source(const char *path, char **ret, size_t *ret_len);

const struct mcp_tool *mcp_catalog_find(const struct mcp_catalog *cat, const char *name);

/* arguments.c: checks arguments (a JSON object or NULL) against the tool's input schema
 * and its own bounds.  Returns 0, or -1 with a message naming the argument in err. */
int mcp_check_arguments(const struct mcp_catalog *cat, const struct mcp_tool *tool, json_t *args,
			char *err, size_t errlen);

/* The JSON Schema of a govex.result/v1 document (every status admitted).  New ref. */
json_t *mcp_result_schema(void);

/* ---------------------------------------------------------------- snippet.c */

/* A snippet program: the user's code, wrapped (INPUTS, REPL value) when it fits in
 * limits.code_bytes, else passed through as is (no INPUTS given then). */
struct mcp_program {
	char *code;
	size_t len;
	bool wrapped;
	char nonce[33]; /* marks the value line on stdout */
};

/* Builds the program for CODE and INPUTS_JSON (a JSON object text or NULL).  Returns 0,
 * 1 when the wrapped program does not fit and INPUTS were given (the caller refuses),
 * or -ENOMEM. */
int mcp_program_build(const char *code, size_t len, const char *inputs_json,
		      const struct mcp_bounds *b, struct mcp_program *ret);
void mcp_program_free(struct mcp_program *p);

/* Takes the value line of a wrapped program out of the result document's stdout
 * (adjusting stdout and stdout_bytes) and sets "value" from it. */
void mcp_program_extract_value(const struct mcp_program *p, json_t *doc);

/* ---------------------------------------------------------------- server.c */

struct mcp_server;

/* Writes one JSON-RPC message (a line) to stdout; thread-safe.  Takes msg. */
void mcp_send(struct mcp_server *srv, json_t *msg);

/* Logs a line to stderr ("govex mcp: ..."); thread-safe. */
void mcp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* notifications/message, when the client asked for LEVEL or lower ("info", "warning"...)
 * for the request (modern: its _meta logLevel) or the connection (legacy setLevel). */
void mcp_notify_log(struct mcp_server *srv, int request_level, const char *level, json_t *data);

/* Syslog level index of a logging level name (0 = debug ... 7 = emergency), -1 unknown. */
int mcp_log_level(const char *name);

/* ---------------------------------------------------------------- calls.c */

struct mcp_pool;

struct mcp_call_ctx {
	bool modern;		/* 2026-07-28 request: resultType and serverInfo in _meta */
	bool legacy_text_json;	/* pre-2025-06-18: the document also as a text block */
	int log_level;		/* -1: no notifications/message for this call */
	json_t *progress_token; /* NULL or a string/number (new ref taken) */
	const char *client_name;
};

int mcp_pool_new(struct mcp_server *srv, govex_runtime *rt, const struct mcp_catalog *cat,
		 unsigned max_concurrent, struct mcp_pool **ret);

/* Queues a call; a thread of the pool runs it and sends the reply.  Always takes args and
 * ctx->progress_token; takes id on success only.  Returns 0; -EEXIST when a call with
 * that id is in flight; -EBUSY when the queue is full; -ENOMEM. */
int mcp_pool_submit(struct mcp_pool *pool, json_t *id, const struct mcp_tool *tool, json_t *args,
		    struct mcp_call_ctx *ctx);

/* notifications/cancelled: cancels the call with that id (running: its token; queued:
 * dropped).  No reply is ever sent for it.  Returns true when such a call was found. */
bool mcp_pool_cancel(struct mcp_pool *pool, json_t *id);

/* Cancels every call, joins the threads and frees the pool. */
void mcp_pool_free(struct mcp_pool *pool);

/* Adds resultType and the server's identity to a modern result. */
void mcp_stamp_modern(json_t *result);

#endif
