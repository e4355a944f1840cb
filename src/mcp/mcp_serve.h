/* SPDX-License-Identifier: MIT */
/*
 * The MCP server's entry point: what `govex mcp` (src/cli/cmd_mcp.c) hands it once the
 * command line is parsed and the runtime made.  Depends on govex.h only: the approver,
 * the audit file and the probe cache are the runtime's already.
 */
#ifndef GOVEX_MCP_SERVE_H
#define GOVEX_MCP_SERVE_H

#include <stddef.h>

#include "govex.h"

struct mcp_serve_options {
	const govex_policy *policy; /* borrowed: the runtime's policy, for bounds and hints */
	govex_runtime *rt;	    /* borrowed: every call runs in it */
	const char *const *modules; /* --module FILE..., n_modules of them */
	size_t n_modules;
	unsigned max_concurrent; /* calls running at once, 1 or more */
};

/*
 * Serves MCP on stdin/stdout until stdin ends or SIGINT, SIGTERM or SIGHUP arrives.
 * Logs go to stderr ("govex mcp: ...").  Returns the exit status: 0 at the end of input,
 * 128+N after signal N, 1 when the server could not start (said on stderr).
 */
int mcp_serve(const struct mcp_serve_options *o);

#endif
