/* SPDX-License-Identifier: MIT */
/* govex exec: an executable, argv first, under the policy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define INPUT_MAX (64u << 20)

static const char exec_usage[] =
	"usage: govex exec [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
	"                  [--stdin FILE] [--backend NAME] [--env NAME=VALUE]...\n"
	"                  [--audit FILE] [--approver COMMAND] [--ask] [--plan-only]\n"
	"                  (--shell STRING | -- ARGV...)\n"
	"\n"
	"Run an executable, argv first, under the policy, with the same limits, result and\n"
	"exit statuses as govex run.  ARGV[0] is searched on PATH before planning; the plan\n"
	"carries its absolute path and digest, and a sandbox binds it, its loader and its\n"
	"libraries read-only.  --shell runs /bin/sh -c STRING, only when the policy allows\n"
	"shell; nothing else interprets command strings.  --plan-only prints the plan.\n";

enum { O_POLICY = 256, O_PRESET, O_JSON, O_TIMEOUT, O_STDIN, O_BACKEND, O_ENV, O_AUDIT,
       O_APPROVER, O_ASK, O_SHELL, O_PLAN_ONLY };

static const struct option exec_options[] = {
	{"policy", required_argument, NULL, O_POLICY},
	{"preset", required_argument, NULL, O_PRESET},
	{"json", no_argument, NULL, O_JSON},
	{"timeout-ms", required_argument, NULL, O_TIMEOUT},
	{"stdin", required_argument, NULL, O_STDIN},
	{"backend", required_argument, NULL, O_BACKEND},
	{"env", required_argument, NULL, O_ENV},
	{"audit", required_argument, NULL, O_AUDIT},
	{"approver", required_argument, NULL, O_APPROVER},
	{"ask", no_argument, NULL, O_ASK},
	{"shell", required_argument, NULL, O_SHELL},
	{"plan-only", no_argument, NULL, O_PLAN_ONLY},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

int cmd_exec(int argc, char **argv)
{
	const char *policy_file = NULL, *preset = NULL, *stdin_file = NULL, *backend = NULL;
	const char *audit_file = NULL, *approver = NULL, *shell = NULL;
	const char *env[65] = {NULL};
	size_t n_env = 0;
	bool json = false, ask = false, plan_only = false;
	unsigned long long timeout_ms = 0;
	char msg[600];
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", exec_options, NULL)) != -1) {
		switch (c) {
		case O_POLICY:
			policy_file = optarg;
			break;
		case O_PRESET:
			preset = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case O_TIMEOUT:
			if (cli_parse_ms("--timeout-ms", optarg, &timeout_ms, msg, sizeof(msg)) < 0) {
				cli_error("exec: %s", msg);
				return EXIT_REFUSED;
			}
			break;
		case O_STDIN:
			stdin_file = optarg;
			break;
		case O_BACKEND:
			backend = optarg;
			break;
		case O_ENV:
			if (n_env >= 64 || !strchr(optarg, '=')) {
				cli_error("exec: --env: '%s' is not NAME=VALUE (at most 64)", optarg);
				return EXIT_REFUSED;
			}
			env[n_env++] = optarg;
			break;
		case O_AUDIT:
			audit_file = optarg;
			break;
		case O_APPROVER:
			approver = optarg;
			break;
		case O_ASK:
			ask = true;
			break;
		case O_SHELL:
			shell = optarg;
			break;
		case O_PLAN_ONLY:
			plan_only = true;
			break;
		case 'h':
			fputs(exec_usage, stdout);
			return 0;
		default:
			cli_error("exec: unknown option or missing argument '%s' (see govex exec "
				  "--help)",
				  argv[optind - 1]);
			return EXIT_REFUSED;
		}
	}
	if (policy_file && preset) {
		cli_error("exec: --policy and --preset are exclusive");
		return EXIT_REFUSED;
	}
	if (!!shell == (optind < argc)) {
		cli_error("exec: give --shell STRING or -- ARGV... (see govex exec --help)");
		return EXIT_REFUSED;
	}

	int rc = EXIT_REFUSED, audit_fd = -1;
	govex_runtime *rt = NULL;
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	char *stdin_data = NULL;
	size_t stdin_len = 0;
	struct govex_error ge = {0};
	if (stdin_file) {
		int r = cli_read_all(stdin_file, INPUT_MAX, &stdin_data, &stdin_len);
		if (r < 0) {
			snprintf(msg, sizeof(msg), "stdin '%s': %s", stdin_file, strerror(-r));
			rc = cli_emit_refusal(json, GOVEX_STATUS_INVALID_INPUT, "unreadable_stdin",
					      msg);
			goto out;
		}
	}
	if ((rc = cli_make_runtime(policy_file, preset, backend, audit_file, approver, ask, json,
				   &rt, &audit_fd)) != 0)
		goto out;
	rc = EXIT_REFUSED;
	if (govex_cancel_new(&cli_cancel_token) < 0)
		goto out;
	struct govex_exec x = {
		.argv = shell ? NULL : (const char *const *)(argv + optind),
		.shell = shell,
		.stdin_data = stdin_data,
		.stdin_len = stdin_len,
		.env = n_env ? env : NULL,
		.cancel = cli_cancel_token,
	};
	x.limits.wall_ms = timeout_ms;
	if (plan_only) {
		if (govex_runtime_plan_exec(rt, &x, &plan, &res, &ge) < 0) {
			cli_error("exec: %s", ge.message);
			goto out;
		}
		if (plan) {
			size_t n;
			const char *p = govex_plan_canonical(plan, &n);
			rc = cli_write_all(1, p, n) < 0 ? 1 : 0;
			goto out;
		}
	} else {
		cli_cancel_on_signals();
		if (govex_runtime_exec(rt, NULL, &x, &res, &ge) < 0) {
			cli_error("exec: %s", ge.message);
			goto out;
		}
	}
	rc = cli_print_run_result(res, json);
out:
	govex_result_free(res);
	govex_plan_free(plan);
	govex_runtime_free(rt);
	cli_cancel_token = govex_cancel_free(cli_cancel_token);
	if (audit_fd >= 0)
		close(audit_fd);
	free(stdin_data);
	return rc;
}
