/* SPDX-License-Identifier: MIT */
/* govex exec: an executable, argv first, under the policy. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define INPUT_MAX (64u << 20)

/* Runs or plans (--plan-only) x in the session; returns the exit status. */
static int exec_or_plan(struct cli_session *s, struct govex_exec *x)
{
	struct govex_error ge = {0};
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	int rc = EXIT_REFUSED;
	if (s->opts->plan_only) {
		if (govex_runtime_plan_exec(s->rt, x, &plan, &res, &ge) < 0) {
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
		cli_session_cancel_on_signals(s);
		if (govex_runtime_exec(s->rt, NULL, x, &res, &ge) < 0) {
			cli_error("exec: %s", ge.message);
			goto out;
		}
	}
	int copy_rc = s->opts->plan_only ? 0 : cli_output_dir_write(s->opts, res);
	rc = cli_print_run_result(res, s->opts->json, x->on_output != NULL);
	cli_output_dir_messages();
	if (copy_rc)
		rc = copy_rc;
out:
	govex_result_free(res);
	govex_plan_free(plan);
	return rc;
}

int cmd_exec(int argc, char **argv)
{
	struct cli_opts a;
	struct cli_opt_error oe;
	char msg[600];
	if (cli_options_parse(CLI_CMD_EXEC, false, argc, argv, &a, &oe) < 0) {
		if (oe.kind == CLI_OPTERR_UNKNOWN)
			cli_error("exec: unknown option or missing argument '%s' (see govex exec "
				  "--help)",
				  oe.arg);
		else if (oe.option == CLI_OPT_ENV)
			cli_error("exec: --env: '%s' is not NAME=VALUE (at most %d)", oe.arg,
				  CLI_ENV_MAX);
		else
			cli_error("exec: %s", oe.msg);
		return EXIT_REFUSED;
	}
	if (a.help) {
		fputs(cli_usage_exec, stdout);
		return 0;
	}
	if (a.policy_file && a.preset) {
		cli_error("exec: --policy and --preset are exclusive");
		return EXIT_REFUSED;
	}
	if (!!a.shell == (a.n_operands > 0)) {
		cli_error("exec: give --shell STRING or -- ARGV... (see govex exec --help)");
		return EXIT_REFUSED;
	}

	int rc = EXIT_REFUSED;
	struct cli_session s;
	char *stdin_data = NULL;
	size_t stdin_len = 0;
	struct cli_files files;
	memset(&files, 0, sizeof(files));
	cli_session_init(&s, &a);

	if (a.stdin_file) {
		int r = cli_read_all(a.stdin_file, INPUT_MAX, &stdin_data, &stdin_len);
		if (r < 0) {
			snprintf(msg, sizeof(msg), "stdin '%s': %s", a.stdin_file, strerror(-r));
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT,
					      "unreadable_stdin", msg);
			goto out;
		}
	}
	if (cli_session_start(&s, CLI_SESSION_CANCEL) < 0) {
		rc = cli_session_refuse(&s);
		goto out;
	}
	if ((rc = cli_files_read(&a, s.policy, &files)) != 0 ||
	    (!a.plan_only && (rc = cli_output_dir_check(&a)) != 0))
		goto out;
	struct govex_exec x = {
	    .argv = a.shell ? NULL : (const char *const *)a.operands,
	    .shell = a.shell,
	    .stdin_data = stdin_data,
	    .stdin_len = stdin_len,
	    .env = a.n_env ? a.env : NULL,
	    .cancel = s.cancel,
	    .files = files.n ? files.files : NULL,
	    .n_files = files.n,
	    .outputs = a.output_dir != NULL,
	    .on_output = a.plan_only ? NULL : cli_live_output(&a),
	};
	x.limits.wall_ms = a.timeout_ms;
	rc = exec_or_plan(&s, &x);
out:
	cli_session_close(&s);
	cli_files_free(&files);
	free(stdin_data);
	return rc;
}
