/* SPDX-License-Identifier: MIT */
/* govex: command dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    "  mcp       serve run_python_snippet and a module's functions as MCP tools (stdio,\n"
    "            or streamable HTTP with --http)\n"
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

/*
 * Fds 0, 1 and 2 are open before anything else is: a descriptor govex opens itself (a
 * pipe, an eventfd) must never take one of them, or govex would read its own pipe as
 * its standard input (govex mcp <&- waited on itself).  A closed one is replaced by
 * /dev/null opened read-only, as daemons do: standard input reads as empty, and a write
 * to standard output or error fails (EBADF) just as it would on the closed descriptor,
 * so a result written to a closed stdout is still reported lost (cli_stdout_finish).
 */
static int stdio_ensure_open(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDONLY | O_NOCTTY);
		if (n < 0)
			return -errno;
		if (n != fd) { /* cannot happen: fd is the lowest free one */
			int d = dup2(n, fd);
			close(n);
			if (d < 0)
				return -errno;
		}
	}
	return 0;
}

static int dispatch(int argc, char **argv);

static int cmd_version(int argc, char **argv)
{
	struct cli_opts a;
	struct cli_opt_error oe;
	if (cli_options_parse(CLI_CMD_VERSION, false, argc, argv, &a, &oe) < 0 ||
	    (!a.help && a.n_operands > 0)) {
		cli_error("version: unexpected argument '%s' (see govex version --help)",
			  oe.kind != CLI_OPTERR_NONE ? oe.arg : a.operands[0]);
		return EXIT_USAGE;
	}
	if (a.help)
		fputs(cli_usage_version, stdout);
	else
		printf("govex %s\n", govex_version());
	return 0;
}

int main(int argc, char **argv)
{
	if (stdio_ensure_open() < 0)
		return EXIT_REFUSED; /* no /dev/null: nothing safe to say it on */
	/* a closed pipe is an error to report (EPIPE), not a reason to die: writing the
	 * result, feeding an approver, speaking MCP */
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "mcp") == 0)
		return cmd_mcp(argc - 1, argv + 1); /* stdout is its protocol: it reports itself */
	return cli_stdout_finish(dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0)
		return cmd_version(1, argv + 1);
	if (strcmp(cmd, "version") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(cmd, "__complete") == 0)
		return cmd_complete(argc - 1, argv + 1);

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
	if (strcmp(cmd, "policy") == 0)
		return cmd_policy(argc - 1, argv + 1);
	if (strcmp(cmd, "backends") == 0)
		return cmd_backends(argc - 1, argv + 1);
	cli_error("unknown command '%s'", cmd);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
