/* SPDX-License-Identifier: MIT */
/* govex: command dispatch. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: govex COMMAND [ARGS]\n"
	"\n"
	"Run Python code under an enforced policy and report, truthfully, what was enforced.\n"
	"\n"
	"commands:\n"
	"  run       run code under a policy (govex run --help)\n"
	"  plan      print the canonical plan of a run or call without running it\n"
	"  call      call one function of a Python file with JSON arguments\n"
	"  inspect   list a module's functions, signatures and effects (static)\n"
	"  exec      run an executable, argv first, under a policy\n"
	"  mcp       serve run_python_snippet and a module's functions as MCP tools (stdio)\n"
	"  policy    check, canonicalize, digest or show policies\n"
	"  backends  list backends and the controls they enforce on this host\n"
	"  version   print the version\n"
	"\n"
	"The default policy is the strict preset.  Exit status of run: the program's own;\n"
	"124 timeout; 125 refused, invalid or not started; 128+N killed by signal N.\n";

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("govex: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	/* a closed pipe is an error to report (EPIPE), not a reason to die: writing the
	 * result, feeding an approver, speaking MCP */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("govex %s\n", govex_version());
		return 0;
	}
	if (strcmp(cmd, "run") == 0)
		return cmd_run(argc - 1, argv + 1, false);
	if (strcmp(cmd, "plan") == 0) {
		/* a FILE:FUNCTION argument makes it the plan of a call */
		for (int i = 2; i < argc; i++)
			if (argv[i][0] != '-' && cli_is_call_target(argv[i]))
				return cmd_call(argc - 1, argv + 1, true);
		return cmd_run(argc - 1, argv + 1, true);
	}
	if (strcmp(cmd, "call") == 0)
		return cmd_call(argc - 1, argv + 1, false);
	if (strcmp(cmd, "inspect") == 0)
		return cmd_inspect(argc - 1, argv + 1);
	if (strcmp(cmd, "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	if (strcmp(cmd, "mcp") == 0)
		return cmd_mcp(argc - 1, argv + 1);
	if (strcmp(cmd, "policy") == 0)
		return cmd_policy(argc - 1, argv + 1);
	if (strcmp(cmd, "backends") == 0)
		return cmd_backends(argc - 1, argv + 1);
	cli_error("unknown command '%s'", cmd);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
