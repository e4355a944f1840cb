/* SPDX-License-Identifier: MIT */
/* Option parsing for run and plan, apart from main so that it can be unit-tested. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
	OPT_POLICY = 256,
	OPT_PRESET,
	OPT_JSON,
	OPT_TIMEOUT,
	OPT_STDIN,
	OPT_BACKEND,
	OPT_AUDIT,
	OPT_APPROVER,
	OPT_ASK,
	OPT_PLAN,
	OPT_ENV,
};

static const struct option long_options[] = {
	{"policy", required_argument, NULL, OPT_POLICY},
	{"preset", required_argument, NULL, OPT_PRESET},
	{"json", no_argument, NULL, OPT_JSON},
	{"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
	{"stdin", required_argument, NULL, OPT_STDIN},
	{"backend", required_argument, NULL, OPT_BACKEND},
	{"audit", required_argument, NULL, OPT_AUDIT},
	{"approver", required_argument, NULL, OPT_APPROVER},
	{"ask", no_argument, NULL, OPT_ASK},
	{"plan", required_argument, NULL, OPT_PLAN},
	{"env", required_argument, NULL, OPT_ENV},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

int cli_parse_run_args(int argc, char **argv, struct run_args *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	int c;
	/* "+": stop at the first non-option (FILE), so a file named like an option is
	 * still taken literally after "--" */
	while ((c = getopt_long(argc, argv, "+c:h", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY:
			a->policy_file = optarg;
			break;
		case OPT_PRESET:
			a->preset = optarg;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_TIMEOUT:
			if (cli_parse_ms("--timeout-ms", optarg, &a->timeout_ms, err, errlen) < 0)
				return -1;
			break;
		case OPT_STDIN:
			a->stdin_file = optarg;
			break;
		case OPT_BACKEND:
			a->backend = optarg;
			break;
		case OPT_AUDIT:
			a->audit_file = optarg;
			break;
		case OPT_APPROVER:
			a->approver = optarg;
			break;
		case OPT_ASK:
			a->ask = true;
			break;
		case OPT_PLAN:
			a->plan_file = optarg;
			break;
		case OPT_ENV:
			if (a->n_env >= 64) {
				snprintf(err, errlen, "--env: at most 64");
				return -1;
			}
			if (!strchr(optarg, '=')) {
				snprintf(err, errlen, "--env: '%s' is not NAME=VALUE", optarg);
				return -1;
			}
			a->env[a->n_env++] = optarg;
			break;
		case 'c':
			a->code = optarg;
			break;
		case 'h':
			a->help = true;
			return 0;
		case ':':
			snprintf(err, errlen, "option '%s' needs an argument", argv[optind - 1]);
			return -1;
		default:
			snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc)
		a->file = argv[optind++];
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (a->policy_file && a->preset) {
		snprintf(err, errlen, "--policy and --preset are exclusive");
		return -1;
	}
	if (a->code && a->file) {
		snprintf(err, errlen, "-c and FILE are exclusive");
		return -1;
	}
	if (!a->code && !a->file && !a->plan_file) {
		snprintf(err, errlen, "no code: give -c CODE, FILE, - or --plan PLAN");
		return -1;
	}
	if (a->file && strcmp(a->file, "-") == 0 && a->stdin_file &&
	    strcmp(a->stdin_file, "-") == 0) {
		snprintf(err, errlen, "code and --stdin cannot both come from standard input");
		return -1;
	}
	return 0;
}
