/* SPDX-License-Identifier: MIT */
/*
 * The MCP server's entry point: what `govex mcp` (src/cli/cmd_mcp.c) hands it once the
 * command line is parsed and the runtime made.  Depends on govex.h only: the approver,
 * the audit file and the probe cache are the runtime's already.
 */
#ifndef GOVEX_MCP_SERVE_H
#define GOVEX_MCP_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "govex.h"

struct mcp_serve_options {
	const govex_policy *policy; /* borrowed: the runtime's policy, for bounds and hints */
	govex_runtime *rt;	    /* borrowed: every call runs in it */
	const char *const *modules; /* --module FILE..., n_modules of them */
	size_t n_modules;
	unsigned max_concurrent;  /* calls running at once, 1 or more */
	unsigned max_queued;	  /* calls one client may have waiting; 0: 64 per slot */
	unsigned queue_timeout_s; /* how long a call may wait; 0: 60 s */
	/* --http ADDR:PORT: streamable HTTP instead of stdio (http.c) */
	const char *http;
	const char *token_file;		  /* NULL: no token (loopback only) */
	const char *client_tokens;	  /* NULL: none; else NAME TOKEN lines (guard.c) */
	const char *const *allow_origins; /* n_allow_origins of them */
	size_t n_allow_origins;
	unsigned max_connections; /* 0: the default */
	unsigned rate;		  /* requests per second per client address; 0: default */
	unsigned drain_timeout_s; /* 0: the default (30) */
	bool drain_timeout_set;	  /* --drain-timeout given (0 allowed: cancel at once) */
};

/*
 * Serves MCP on stdin/stdout (or over HTTP when o->http is set) until stdin ends or SIGINT, SIGTERM
 * or SIGHUP arrives. Logs go to stderr ("govex mcp: ...").  Returns the exit status: 0 at the end
 * of input, 128+N after signal N, 1 when the server could not start (said on stderr).
 */
int mcp_serve(const struct mcp_serve_options *o);

/*
 * Serves MCP over streamable HTTP at o->http until SIGTERM or SIGINT, then drains: stops
 * accepting, lets calls in flight finish for up to the drain timeout, cancels the rest.
 * Returns 0 after a drain, 125 when the command line's HTTP settings are refused (said
 * on stderr: a non-loopback address without a token, a bad token file), 1 when the
 * server could not start.
 */
int mcp_serve_http(const struct mcp_serve_options *o);

/* The same checks of o->http and o->token_file before anything starts, and libmicrohttpd
 * loaded: 0, or the exit status (2 a malformed address, 125 refused, 1 no library), said
 * on stderr. */
int mcp_http_check(const struct mcp_serve_options *o);

#endif
