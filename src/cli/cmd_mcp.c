/* SPDX-License-Identifier: MIT */
/* govex mcp: the command line of the MCP server (src/mcp serves, through mcp_serve.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mcp/mcp_serve.h"
#include "cli.h"

/* stdout is the protocol: everything is said on stderr, as the server says it */
__attribute__((format(printf, 1, 2))) static void mcp_cli_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	// NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n >= 0)
		fprintf(stderr, "govex mcp: %s\n", line);
}

/* 0, or the exit status of a command line refused (2) or of --help (0 as -1). */
static int parse(int argc, char **argv, struct cli_opts *a)
{
	struct cli_opt_error oe;
	if (cli_options_parse(CLI_CMD_MCP, false, argc, argv, a, &oe) < 0) {
		if (oe.kind != CLI_OPTERR_UNKNOWN)
			mcp_cli_log("%s", oe.msg);
		else if (oe.short_name)
			mcp_cli_log("unknown or incomplete option '-%c' (see govex mcp --help)",
				    oe.short_name);
		else
			mcp_cli_log("unknown or incomplete option '%s' (see govex mcp --help)",
				    oe.arg);
		return EXIT_USAGE;
	}
	if (a->help)
		return 0;
	if (a->n_operands) {
		mcp_cli_log("unexpected argument '%s' (see govex mcp --help)", a->operands[0]);
		return EXIT_USAGE;
	}
	if (!a->http && (a->token_file || a->client_tokens || a->n_origins || a->max_connections ||
			 a->rate || a->drain_timeout_set)) {
		mcp_cli_log("--token-file, --client-tokens, --allow-origin, --max-connections, "
			    "--rate and --drain-timeout go with --http");
		return EXIT_USAGE;
	}
	if (a->policy_file && a->preset) {
		mcp_cli_log("--policy and --preset exclude each other");
		return EXIT_USAGE;
	}
	return 0;
}

int cmd_mcp(int argc, char **argv)
{
	struct cli_opts a;
	int rc = parse(argc, argv, &a);
	if (rc != 0)
		return rc;
	if (a.help) {
		fputs(cli_usage_mcp, stdout);
		return 0;
	}
	unsigned max_conc = a.max_concurrent;
	if (!max_conc) {
		long nproc = sysconf(_SC_NPROCESSORS_ONLN);
		max_conc = nproc > 0 ? (unsigned)nproc : 1;
		if (max_conc > CLI_MAX_CONCURRENT_MAX)
			max_conc = CLI_MAX_CONCURRENT_MAX;
	}
	struct mcp_serve_options o = {
	    .modules = a.modules,
	    .n_modules = a.n_modules,
	    .max_concurrent = max_conc,
	    .max_queued = a.max_queued,
	    .queue_timeout_s = a.queue_timeout_s,
	    .http = a.http,
	    .token_file = a.token_file,
	    .client_tokens = a.client_tokens,
	    .allow_origins = a.origins,
	    .n_allow_origins = a.n_origins,
	    .max_connections = a.max_connections,
	    .rate = a.rate,
	    .drain_timeout_s = a.drain_timeout_s,
	    .drain_timeout_set = a.drain_timeout_set,
	};
	/* an address or a token refused before the runtime (and its templates) start */
	if (a.http && (rc = mcp_http_check(&o)) != 0)
		return rc;
	struct cli_session s;
	cli_session_init(&s, &a);
	if (cli_session_start(&s, 0) < 0) {
		/* the policy's and the audit file's messages name their subject already */
		bool rt = strcmp(s.err_code, "invalid_runtime") == 0;
		mcp_cli_log("%s%s", rt ? "runtime: " : "", s.err);
		cli_session_close(&s);
		return 1;
	}
	/* a long-lived runtime: warm templates, unless GOVEX_WARM=0 (DESIGN.md "Warm runs") */
	const char *w = getenv("GOVEX_WARM");
	if (!(w && strcmp(w, "0") == 0)) {
		struct govex_error we;
		if (govex_runtime_warm(s.rt, &we) < 0)
			mcp_cli_log("runs start cold: %s", we.message);
	}
	o.policy = s.policy;
	o.rt = s.rt;
	rc = mcp_serve(&o);
	cli_session_close(&s);
	return rc;
}
