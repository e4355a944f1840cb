/* SPDX-License-Identifier: MIT */
/* govex policy check|canon|digest|show */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_policy(int argc, char **argv)
{
	struct cli_opts a;
	struct cli_opt_error oe;
	if (cli_options_parse(CLI_CMD_POLICY, false, argc, argv, &a, &oe) < 0) {
		cli_error("policy: unknown option '%s'", oe.arg);
		fputs(cli_usage_policy, stderr);
		return EXIT_USAGE;
	}
	if (a.help) {
		fputs(cli_usage_policy, stdout);
		return 0;
	}
	if (argc != 3) {
		fputs(cli_usage_policy, stderr);
		return EXIT_USAGE;
	}
	const char *verb = argv[1], *arg = argv[2];
	govex_policy *p = NULL;
	struct govex_error e = {0};
	bool known = false;
	for (size_t i = 0; cli_policy_verbs[i]; i++)
		known = known || strcmp(verb, cli_policy_verbs[i]) == 0;
	if (!known) {
		cli_error("policy: unknown verb '%s'", verb);
		fputs(cli_usage_policy, stderr);
		return EXIT_USAGE;
	}
	int r = strcmp(verb, "show") == 0 ? govex_policy_preset(arg, &p, &e)
					  : govex_policy_load(arg, &p, &e);
	if (r < 0) {
		cli_error("policy '%s': %s", arg, e.message);
		return EXIT_USAGE;
	}
	size_t n;
	const char *c = govex_policy_canonical(p, &n);
	if (strcmp(verb, "check") == 0)
		printf("ok %s\n", govex_policy_digest(p));
	else if (strcmp(verb, "digest") == 0)
		printf("%s\n", govex_policy_digest(p));
	else
		fwrite(c, 1, n, stdout);
	govex_policy_free(p);
	return 0; /* main flushes stdout and reports a failure (cli_stdout_finish) */
}
