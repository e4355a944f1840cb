/* SPDX-License-Identifier: MIT */
/* The govex command line: a thin client of libgovex (include/govex.h only). */
#ifndef GOVEX_CLI_H
#define GOVEX_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "govex.h"

/* Options shared by run and plan. */
struct run_args {
	const char *policy_file;
	const char *preset;
	bool json;
	unsigned long long timeout_ms; /* 0 = the policy's */
	const char *stdin_file;
	const char *backend;
	const char *audit_file;
	const char *approver;
	bool ask;
	const char *code;      /* -c */
	const char *file;      /* FILE or "-" */
	const char *plan_file; /* --plan */
	const char *env[65];   /* --env NAME=VALUE, NULL-terminated */
	size_t n_env;
	bool help;
};

/* Parses argv (argv[0] is the subcommand name).  Returns 0, or -1 with a message in err. */
int cli_parse_run_args(int argc, char **argv, struct run_args *ret, char *err, size_t errlen);

int cmd_run(int argc, char **argv, bool plan_only);
int cmd_policy(int argc, char **argv);
int cmd_backends(int argc, char **argv);

/* Prints "govex: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define EXIT_REFUSED 125
#define EXIT_USAGE 2

#endif
