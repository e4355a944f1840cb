/* SPDX-License-Identifier: MIT */
/* govex run / govex plan */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define INPUT_MAX (64u << 20)

/* The run's operand and the combinations the table cannot express; -1 with err. */
static int check_run_args(struct cli_opts *a, bool plan_only, const char **file, char *err,
			  size_t errlen)
{
	*file = a->n_operands > 0 ? a->operands[0] : NULL;
	if (a->n_operands > 1) {
		snprintf(err, errlen, "unexpected argument '%s'", a->operands[1]);
		return -1;
	}
	if (a->policy_file && a->preset) {
		snprintf(err, errlen, "--policy and --preset are exclusive");
		return -1;
	}
	if (a->code && *file) {
		snprintf(err, errlen, "-c and FILE are exclusive");
		return -1;
	}
	if (!a->code && !*file && !a->plan_file) {
		snprintf(err, errlen, "no code: give -c CODE, FILE, - or %s",
			 plan_only ? "FILE:FUNCTION" : "--plan PLAN");
		return -1;
	}
	if (*file && strcmp(*file, "-") == 0 && a->stdin_file && strcmp(a->stdin_file, "-") == 0) {
		snprintf(err, errlen, "code and --stdin cannot both come from standard input");
		return -1;
	}
	return 0;
}

/* What a run reads before it starts: the plan, the code and its stdin. */
struct run_input {
	govex_plan *plan;
	char *plan_text, *code, *stdin_data, *source_path;
	size_t plan_len, code_len, stdin_len;
};

static void run_input_free(struct run_input *in)
{
	govex_plan_free(in->plan);
	free(in->plan_text);
	free(in->code);
	free(in->stdin_data);
	free(in->source_path);
}

/* Reads the plan, the code and the stdin; on failure emits the refusal and returns 125. */
static int read_run_input(const struct cli_opts *a, const char *file, struct run_input *in)
{
	struct govex_error ge = {0};
	char msg[600];
	int r = 0;
	if (a->plan_file) {
		if ((r = cli_read_regular(a->plan_file, 4u << 20, &in->plan_text, &in->plan_len)) <
			0 ||
		    govex_plan_parse(in->plan_text, in->plan_len, &in->plan, &ge) < 0) {
			snprintf(msg, sizeof(msg), "plan '%s': %s", a->plan_file,
				 r < 0 ? cli_read_error(r) : ge.message);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "invalid_plan",
						msg);
		}
		if (!a->code && !file) {
			if (!govex_plan_source_path(in->plan))
				return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
							"missing_code",
							"plan: it records no source file; give -c "
							"CODE, FILE or -");
			file = govex_plan_source_path(in->plan);
		}
	}
	if (a->code) {
		in->code_len = strlen(a->code);
		if (!(in->code = strdup(a->code))) {
			cli_error("out of memory");
			return EXIT_REFUSED;
		}
	} else {
		if ((r = cli_read_all(file, INPUT_MAX, &in->code, &in->code_len)) < 0) {
			snprintf(msg, sizeof(msg), "code '%s': %s", file, strerror(-r));
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"unreadable_code", msg);
		}
		if (strcmp(file, "-") != 0)
			in->source_path = realpath(file, NULL);
	}
	if (a->stdin_file &&
	    (r = cli_read_all(a->stdin_file, INPUT_MAX, &in->stdin_data, &in->stdin_len)) < 0) {
		snprintf(msg, sizeof(msg), "stdin '%s': %s", a->stdin_file, strerror(-r));
		return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "unreadable_stdin",
					msg);
	}
	return 0;
}

/* Plans (plan_only) or runs the request; returns the exit status. */
static int run_or_plan(struct cli_session *s, struct run_input *in, struct govex_request *req,
		       bool plan_only)
{
	struct govex_error ge = {0};
	govex_plan *fresh = NULL;
	govex_result *res = NULL;
	int rc = EXIT_REFUSED;
	if (plan_only) {
		if (govex_runtime_plan(s->rt, req, &fresh, &res, &ge) < 0) {
			cli_error("plan: %s", ge.message);
			goto out;
		}
		if (fresh) {
			size_t n;
			const char *c = govex_plan_canonical(fresh, &n);
			rc = cli_write_all(1, c, n) < 0 ? 1 : 0;
			goto out;
		}
	} else {
		cli_session_cancel_on_signals(s);
		int r = in->plan ? govex_runtime_execute(s->rt, in->plan, req, &res, &ge)
				 : govex_runtime_run(s->rt, req, &res, &ge);
		if (r < 0) {
			cli_error("run: %s", ge.message);
			goto out;
		}
	}
	int copy_rc = plan_only ? 0 : cli_output_dir_write(s->opts, res);
	rc = cli_print_run_result(res, s->opts->json, req->on_output != NULL);
	cli_output_dir_messages();
	if (copy_rc)
		rc = copy_rc;
out:
	govex_result_free(res);
	govex_plan_free(fresh);
	return rc;
}

int cmd_run(int argc, char **argv, bool plan_only)
{
	struct cli_opts a;
	struct cli_opt_error oe;
	const char *file = NULL;
	char err[300];
	const char *name = plan_only ? "plan" : "run";
	if (cli_options_parse(plan_only ? CLI_CMD_PLAN : CLI_CMD_RUN, false, argc, argv, &a, &oe) <
	    0)
		snprintf(err, sizeof(err),
			 oe.kind == CLI_OPTERR_UNKNOWN ? "unknown option '%s'" : "%s",
			 oe.kind == CLI_OPTERR_UNKNOWN ? oe.arg : oe.msg);
	if (oe.kind != CLI_OPTERR_NONE ||
	    (!a.help && check_run_args(&a, plan_only, &file, err, sizeof(err)) < 0)) {
		cli_error("%s: %s (see govex %s --help)", name, err, name);
		/* for run, a bad command line is invalid input like any other: 125 */
		return EXIT_REFUSED;
	}
	if (a.help) {
		fputs(plan_only ? cli_usage_plan : cli_usage_run, stdout);
		return 0;
	}

	struct cli_session s;
	struct run_input in = {0};
	struct cli_files files;
	int rc;
	memset(&files, 0, sizeof(files));
	cli_session_init(&s, &a);
	if (cli_session_load_policy(&s) < 0) {
		rc = cli_session_refuse(&s);
		goto out;
	}
	if ((rc = read_run_input(&a, file, &in)) != 0)
		goto out;
	if (cli_session_start(&s, CLI_SESSION_CANCEL) < 0) {
		rc = cli_session_refuse(&s);
		goto out;
	}
	if ((rc = cli_files_read(&a, s.policy, &files)) != 0 ||
	    (!plan_only && (rc = cli_output_dir_check(&a)) != 0))
		goto out;
	struct govex_request req = {
	    .language = "python",
	    .code = in.code,
	    .code_len = in.code_len,
	    .source_path = in.source_path,
	    .stdin_data = in.stdin_data,
	    .stdin_len = in.stdin_len,
	    .env = a.n_env ? a.env : NULL,
	    .cancel = s.cancel,
	    .files = files.n ? files.files : NULL,
	    .n_files = files.n,
	    .outputs = a.output_dir != NULL,
	    .on_output = plan_only ? NULL : cli_live_output(&a),
	};
	req.limits.wall_ms = a.timeout_ms;
	rc = run_or_plan(&s, &in, &req, plan_only);
out:
	run_input_free(&in);
	cli_files_free(&files);
	cli_session_close(&s);
	return rc;
}
