/* SPDX-License-Identifier: MIT */
/* govex run / govex plan */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"


#define INPUT_MAX (64u << 20)

static const char run_usage[] =
	"usage: govex %s [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
	"                 [--stdin FILE] [--backend NAME] [--env NAME=VALUE]...\n"
	"                 [--audit FILE] [--approver COMMAND] [--ask]\n"
	"                 (-c CODE | FILE | - | --plan PLAN [FILE])\n"
	"\n"
	"%s\n"
	"\n"
	"  --policy FILE       policy file (govex.policy/v1); default: the strict preset\n"
	"  --preset NAME       built-in policy: strict, workspace, trusted\n"
	"  --json              print one govex.result/v1 document on stdout\n"
	"  --timeout-ms N      wall-time limit, at most the policy's limits.wall_ms\n"
	"  --stdin FILE        feed FILE ('-': govex's stdin) to the program; default empty\n"
	"  --backend NAME      use this backend (controlled, restricted) or refuse\n"
	"  --env NAME=VALUE    set a variable the policy's environment.allow names\n"
	"  --audit FILE        append govex.audit/v1 events (JSON lines) to FILE\n"
	"  --approver COMMAND  run COMMAND (sh -c) with the plan on stdin when the policy\n"
	"                      requires approval; exit 0 approves\n"
	"  --ask               ask on the terminal when the policy requires approval\n"
	"  --plan PLAN         execute exactly the plan made earlier by govex plan\n"
	"\n"
	"exit status: the program's own; 124 timeout; 125 refused, invalid or not started;\n"
	"128+N killed by signal N (or cancelled by signal N to govex)\n";

int cmd_run(int argc, char **argv, bool plan_only)
{
	struct run_args a;
	char err[300];
	const char *name = plan_only ? "plan" : "run";
	if (cli_parse_run_args(argc, argv, &a, err, sizeof(err)) < 0) {
		cli_error("%s: %s (see govex %s --help)", name, err, name);
		/* for run, a bad command line is invalid input like any other: 125 */
		return EXIT_REFUSED;
	}
	if (a.help) {
		printf(run_usage, name,
		       plan_only ? "Validate the request against the policy, choose a backend and "
				   "print the\ncanonical govex.plan/v1 document.  Runs nothing."
				 : "Run Python code under the policy and report the result.");
		return 0;
	}

	int rc = EXIT_REFUSED;
	govex_policy *policy = NULL;
	govex_runtime *rt = NULL;
	govex_plan *plan = NULL, *fresh = NULL;
	govex_result *res = NULL;
	char *code = NULL, *stdin_data = NULL, *plan_text = NULL, *cdir = NULL;
	char *source_path = NULL;
	size_t code_len = 0, stdin_len = 0, plan_len = 0;
	int audit_fd = -1;
	struct govex_error ge = {0};
	char msg[600];

	int r = a.policy_file ? govex_policy_load(a.policy_file, &policy, &ge)
			      : govex_policy_preset(a.preset ? a.preset : "strict", &policy, &ge);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "policy: %s", ge.message);
		rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "invalid_policy", msg);
		goto out;
	}

	if (a.plan_file) {
		if ((r = cli_read_regular(a.plan_file, 4u << 20, &plan_text, &plan_len)) < 0 ||
		    govex_plan_parse(plan_text, plan_len, &plan, &ge) < 0) {
			snprintf(msg, sizeof(msg), "plan '%s': %s", a.plan_file,
				 r < 0 ? cli_read_error(r) : ge.message);
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "invalid_plan", msg);
			goto out;
		}
		if (!a.code && !a.file) {
			if (!govex_plan_source_path(plan)) {
				rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "missing_code",
						  "plan: it records no source file; give -c CODE, "
						  "FILE or -");
				goto out;
			}
			a.file = govex_plan_source_path(plan);
		}
	}
	if (a.code) {
		code_len = strlen(a.code);
		if (!(code = strdup(a.code)))
			goto oom;
	} else {
		if ((r = cli_read_all(a.file, INPUT_MAX, &code, &code_len)) < 0) {
			snprintf(msg, sizeof(msg), "code '%s': %s", a.file, strerror(-r));
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unreadable_code", msg);
			goto out;
		}
		if (strcmp(a.file, "-") != 0)
			source_path = realpath(a.file, NULL);
	}
	if (a.stdin_file && (r = cli_read_all(a.stdin_file, INPUT_MAX, &stdin_data, &stdin_len)) < 0) {
		snprintf(msg, sizeof(msg), "stdin '%s': %s", a.stdin_file, strerror(-r));
		rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unreadable_stdin", msg);
		goto out;
	}
	if (a.audit_file) {
		audit_fd = open(a.audit_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (audit_fd < 0) {
			snprintf(msg, sizeof(msg), "audit '%s': %s", a.audit_file, strerror(errno));
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unwritable_audit",
					  msg);
			goto out;
		}
	}

	cdir = cli_cache_dir();
	struct govex_runtime_options o = {
		.audit_fd = audit_fd,
		.probe_cache_dir = cdir,
		.backend = a.backend,
	};
	if (a.approver) {
		o.approve = cli_approve_command;
		o.approve_userdata = (void *)a.approver;
	} else if (a.ask) {
		if (!cli_have_terminal()) {
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "no_terminal",
					  "--ask: no terminal to ask on (/dev/tty cannot be "
					  "opened: no controlling terminal)");
			goto out;
		}
		o.approve = cli_approve_ask;
	}
	if ((r = govex_runtime_new(policy, &o, &rt, &ge)) < 0) {
		snprintf(msg, sizeof(msg), "%s", ge.message);
		rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "invalid_runtime", msg);
		goto out;
	}
	if ((r = govex_cancel_new(&cli_cancel_token)) < 0)
		goto oom;

	struct govex_request req = {
		.language = "python",
		.code = code,
		.code_len = code_len,
		.source_path = source_path,
		.stdin_data = stdin_data,
		.stdin_len = stdin_len,
		.env = a.n_env ? a.env : NULL,
		.cancel = cli_cancel_token,
	};
	req.limits.wall_ms = a.timeout_ms;

	if (plan_only) {
		if ((r = govex_runtime_plan(rt, &req, &fresh, &res, &ge)) < 0) {
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
		cli_cancel_on_signals();
		r = plan ? govex_runtime_execute(rt, plan, &req, &res, &ge)
			 : govex_runtime_run(rt, &req, &res, &ge);
		if (r < 0) {
			cli_error("run: %s", ge.message);
			goto out;
		}
	}

	rc = cli_print_run_result(res, a.json);
	goto out;
oom:
	cli_error("out of memory");
	rc = EXIT_REFUSED;
out:
	govex_result_free(res);
	govex_plan_free(fresh);
	govex_plan_free(plan);
	govex_runtime_free(rt);
	govex_policy_free(policy);
	cli_cancel_token = govex_cancel_free(cli_cancel_token);
	if (audit_fd >= 0)
		close(audit_fd);
	free(code);
	free(stdin_data);
	free(plan_text);
	free(cdir);
	free(source_path);
	return rc;
}
