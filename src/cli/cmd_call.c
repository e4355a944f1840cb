/* SPDX-License-Identifier: MIT */
/* govex call / govex plan FILE:FUNCTION / govex inspect */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

#define SOURCE_MAX (64u << 20)
#define ARGS_MAX (64u << 20)

static const char call_usage[] =
	"usage: govex %s [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
	"                  [--backend NAME] [--audit FILE] [--approver COMMAND] [--ask]\n"
	"                  (FILE:FUNCTION | --plan PLAN [FILE:FUNCTION])%s\n"
	"\n"
	"%s\n"
	"\n"
	"  FILE:FUNCTION       a top-level function of a Python file (.py) or notebook (.ipynb)\n"
	"  --args JSON         a JSON object from parameter names to values (default {})\n"
	"  --args-file FILE    the same, read from FILE ('-': stdin)\n"
	"  --plan PLAN         call exactly the plan made earlier by govex plan FILE:FUNCTION;\n"
	"                      one changed byte of the source gives source_mismatch\n"
	"  other options as for govex run\n"
	"\n"
	"Without --json the value is printed as JSON on stdout.  Exit status: 0 success;\n"
	"124 timeout; 125 refused, invalid input, binding failure or source mismatch;\n"
	"128+N killed by signal N; 1 any other failure (the status says which).\n";

static const char inspect_usage[] =
	"usage: govex inspect [--policy FILE | --preset NAME] [--json] FILE\n"
	"\n"
	"Statically inspect a Python file or notebook (Python's ast, in a worker under the\n"
	"policy; the module is never imported) and print its govex.inspection/v1 document:\n"
	"every top-level function with its parameters, annotations, docstring, eligibility\n"
	"for call mode and effects (present, absent or unknown).  Without --json, a summary.\n";

enum { O_POLICY = 256, O_PRESET, O_JSON, O_TIMEOUT, O_BACKEND, O_AUDIT, O_APPROVER, O_ASK,
       O_PLAN, O_ARGS, O_ARGS_FILE };

static const struct option call_options[] = {
	{"policy", required_argument, NULL, O_POLICY},
	{"preset", required_argument, NULL, O_PRESET},
	{"json", no_argument, NULL, O_JSON},
	{"timeout-ms", required_argument, NULL, O_TIMEOUT},
	{"backend", required_argument, NULL, O_BACKEND},
	{"audit", required_argument, NULL, O_AUDIT},
	{"approver", required_argument, NULL, O_APPROVER},
	{"ask", no_argument, NULL, O_ASK},
	{"plan", required_argument, NULL, O_PLAN},
	{"args", required_argument, NULL, O_ARGS},
	{"args-file", required_argument, NULL, O_ARGS_FILE},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct call_args {
	const char *policy_file, *preset, *backend, *audit_file, *approver, *plan_file;
	const char *target, *args, *args_file;
	unsigned long long timeout_ms;
	bool json, ask, help;
};

static int parse(int argc, char **argv, struct call_args *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "h", call_options, NULL)) != -1) {
		switch (c) {
		case O_POLICY:
			a->policy_file = optarg;
			break;
		case O_PRESET:
			a->preset = optarg;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_TIMEOUT:
			if (cli_parse_ms("--timeout-ms", optarg, &a->timeout_ms, err, errlen) < 0)
				return -1;
			break;
		case O_BACKEND:
			a->backend = optarg;
			break;
		case O_AUDIT:
			a->audit_file = optarg;
			break;
		case O_APPROVER:
			a->approver = optarg;
			break;
		case O_ASK:
			a->ask = true;
			break;
		case O_PLAN:
			a->plan_file = optarg;
			break;
		case O_ARGS:
			a->args = optarg;
			break;
		case O_ARGS_FILE:
			a->args_file = optarg;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			snprintf(err, errlen, "unknown option or missing argument '%s'",
				 argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc)
		a->target = argv[optind++];
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (a->policy_file && a->preset) {
		snprintf(err, errlen, "--policy and --preset are exclusive");
		return -1;
	}
	if (a->args && a->args_file) {
		snprintf(err, errlen, "--args and --args-file are exclusive");
		return -1;
	}
	if (!a->target && !a->plan_file) {
		snprintf(err, errlen, "give FILE:FUNCTION or --plan PLAN");
		return -1;
	}
	return 0;
}

bool cli_is_call_target(const char *s)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	if (!colon || colon == s || !colon[1])
		return false;
	for (const char *c = colon + 1; *c; c++)
		if (!(isalnum((unsigned char)*c) || *c == '_'))
			return false;
	size_t n = (size_t)(colon - s);
	return (n > 3 && memcmp(colon - 3, ".py", 3) == 0) ||
	       (n > 6 && memcmp(colon - 6, ".ipynb", 6) == 0);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Reads FILE for a govex_source; path made absolute for plans. */
static int read_source(const char *file, struct govex_source *src, char **ret_data,
		       char **ret_path)
{
	size_t len = 0;
	int r = cli_read_all(file, SOURCE_MAX, ret_data, &len);
	if (r < 0)
		return r;
	*ret_path = realpath(file, NULL);
	src->data = *ret_data;
	src->len = len;
	src->path = *ret_path;
	src->notebook = ends_with(file, ".ipynb");
	return 0;
}

static void print_result(govex_result *res, bool json)
{
	const struct govex_result_view *v = govex_result_view(res);
	if (json) {
		size_t n;
		const char *js = govex_result_json(res, &n);
		cli_write_all(1, js, n);
		return;
	}
	if (v->status == GOVEX_STATUS_SUCCESS && v->value) {
		/* JSON text: DEL and C1 as \u escapes (the library writes them so too) */
		char *t = cli_terminal_safe(v->value, true);
		if (t) {
			cli_write_all(1, t, strlen(t));
			cli_write_all(1, "\n", 1);
		}
		free(t);
	}
	/* the summary quotes a diagnostic, which may be a worker's (cleaned) text */
	if (v->status != GOVEX_STATUS_SUCCESS)
		cli_error_safe(govex_result_summary(res));
}

static int call_exit_status(govex_result *res)
{
	const struct govex_result_view *v = govex_result_view(res);
	switch (v->status) {
	case GOVEX_STATUS_SUCCESS:
		return 0;
	case GOVEX_STATUS_TIMEOUT:
		return 124;
	case GOVEX_STATUS_INVALID_INPUT:
	case GOVEX_STATUS_POLICY_REFUSED:
	case GOVEX_STATUS_BINDING_FAILED:
	case GOVEX_STATUS_SOURCE_MISMATCH:
		return 125;
	case GOVEX_STATUS_CANCELLED:
		return 128 + (cli_caught_signal ? cli_caught_signal : 15);
	default:
		if (v->termination == GOVEX_TERM_SIGNALED || v->termination == GOVEX_TERM_CPU_LIMIT ||
		    v->termination == GOVEX_TERM_MEMORY_LIMIT)
			return 128 + v->signal;
		if (v->termination == GOVEX_TERM_LAUNCH_FAILED)
			return 125;
		return 1;
	}
}

int cmd_call(int argc, char **argv, bool plan_only)
{
	struct call_args a;
	char err[300], msg[600];
	const char *name = plan_only ? "plan" : "call";
	if (parse(argc, argv, &a, err, sizeof(err)) < 0) {
		cli_error("%s: %s (see govex %s --help)", name, err, name);
		return EXIT_REFUSED;
	}
	if (a.help) {
		printf(call_usage, name, plan_only ? "" : "\n                  [--args JSON | --args-file FILE]",
		       plan_only ? "Plan a call of one function without running any user code and "
				   "print the\ncanonical govex.plan/v1 document."
				 : "Call one Python function with JSON arguments in a fresh worker and "
				   "report its\nJSON value.");
		return 0;
	}
	int rc = EXIT_REFUSED, audit_fd = -1;
	govex_runtime *rt = NULL;
	govex_plan *plan = NULL, *fresh = NULL;
	govex_result *res = NULL;
	char *plan_text = NULL, *data = NULL, *path = NULL, *args = NULL, *target = NULL;
	size_t plan_len = 0, args_len = 0;
	struct govex_error ge = {0};
	struct govex_call call;
	memset(&call, 0, sizeof(call));

	if (a.plan_file) {
		int r = cli_read_regular(a.plan_file, 4u << 20, &plan_text, &plan_len);
		if (r < 0 || govex_plan_parse(plan_text, plan_len, &plan, &ge) < 0) {
			snprintf(msg, sizeof(msg), "plan '%s': %s", a.plan_file,
				 r < 0 ? cli_read_error(r) : ge.message);
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "invalid_plan", msg);
			goto out;
		}
	}
	if (a.target) {
		if (!cli_is_call_target(a.target)) {
			snprintf(msg, sizeof(msg),
				 "'%s': not FILE.py:FUNCTION or FILE.ipynb:FUNCTION", a.target);
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "invalid_target",
					      msg);
			goto out;
		}
		target = strdup(a.target);
	} else {
		/* from the plan: its source path and function */
		const char *sp = govex_plan_source_path(plan);
		const char *fn = govex_plan_function(plan);
		if (!sp || !fn) {
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "missing_target",
					      "plan: it is not a call plan with a source path; give "
					      "FILE:FUNCTION");
			goto out;
		}
		if (asprintf(&target, "%s:%s", sp, fn) < 0)
			target = NULL;
	}
	if (!target)
		goto oom;
	char *colon = strrchr(target, ':');
	*colon = '\0';
	call.function = colon + 1;
	int r = read_source(target, &call.source, &data, &path);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "source '%s': %s", target, strerror(-r));
		rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unreadable_source", msg);
		goto out;
	}
	if (a.args) {
		call.args = a.args;
		call.args_len = strlen(a.args);
	} else if (a.args_file) {
		if ((r = cli_read_all(a.args_file, ARGS_MAX, &args, &args_len)) < 0) {
			snprintf(msg, sizeof(msg), "args '%s': %s", a.args_file, strerror(-r));
			rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unreadable_args",
					      msg);
			goto out;
		}
		call.args = args;
		call.args_len = args_len;
	}
	call.limits.wall_ms = a.timeout_ms;
	if ((rc = cli_make_runtime(a.policy_file, a.preset, a.backend, a.audit_file, a.approver, a.ask,
			       a.json, &rt, &audit_fd)) != 0)
		goto out;
	rc = EXIT_REFUSED;
	if (govex_cancel_new(&cli_cancel_token) < 0)
		goto oom;
	call.cancel = cli_cancel_token;
	cli_cancel_on_signals();
	if (plan_only) {
		if (govex_runtime_plan_call(rt, &call, &fresh, &res, &ge) < 0) {
			cli_error("plan: %s", ge.message);
			goto out;
		}
		if (fresh) {
			size_t n;
			const char *c = govex_plan_canonical(fresh, &n);
			rc = cli_write_all(1, c, n) < 0 ? 1 : 0;
			goto out;
		}
		print_result(res, a.json);
		rc = call_exit_status(res);
		goto out;
	}
	if (govex_runtime_call(rt, plan, &call, &res, &ge) < 0) {
		cli_error("call: %s", ge.message);
		goto out;
	}
	print_result(res, a.json);
	rc = call_exit_status(res);
	goto out;
oom:
	cli_error("out of memory");
	rc = EXIT_REFUSED;
out:
	govex_result_free(res);
	govex_plan_free(fresh);
	govex_plan_free(plan);
	govex_runtime_free(rt);
	cli_cancel_token = govex_cancel_free(cli_cancel_token);
	if (audit_fd >= 0)
		close(audit_fd);
	free(plan_text);
	free(data);
	free(path);
	free(args);
	free(target);
	return rc;
}

int cmd_inspect(int argc, char **argv)
{
	struct call_args a;
	char err[300], msg[600];
	if (parse(argc, argv, &a, err, sizeof(err)) < 0 || a.plan_file || a.args || a.args_file) {
		cli_error("inspect: %s (see govex inspect --help)",
			  a.plan_file || a.args || a.args_file ? "only FILE and policy options"
							       : err);
		return EXIT_REFUSED;
	}
	if (a.help) {
		fputs(inspect_usage, stdout);
		return 0;
	}
	if (!a.target) {
		cli_error("inspect: give FILE (see govex inspect --help)");
		return EXIT_REFUSED;
	}
	int rc = EXIT_REFUSED, audit_fd = -1;
	govex_runtime *rt = NULL;
	govex_result *res = NULL;
	char *data = NULL, *path = NULL, *doc = NULL;
	struct govex_source src;
	struct govex_error ge = {0};
	memset(&src, 0, sizeof(src));
	int r = read_source(a.target, &src, &data, &path);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "source '%s': %s", a.target, strerror(-r));
		rc = cli_emit_refusal(a.json, GOVEX_STATUS_INVALID_INPUT, "unreadable_source", msg);
		goto out;
	}
	if ((rc = cli_make_runtime(a.policy_file, a.preset, a.backend, a.audit_file, a.approver, a.ask,
			       a.json, &rt, &audit_fd)) != 0)
		goto out;
	rc = EXIT_REFUSED;
	if (govex_runtime_inspect(rt, &src, &doc, &res, &ge) < 0) {
		cli_error("inspect: %s", ge.message);
		goto out;
	}
	if (res) {
		print_result(res, a.json);
		rc = call_exit_status(res);
		goto out;
	}
	if (a.json) {
		/* docstrings and annotations are the module's text: DEL and C1 escaped */
		char *t = cli_terminal_safe(doc, true);
		if (t)
			cli_write_all(1, t, strlen(t));
		free(t);
	} else {
		json_t *j = json_loads(doc, 0, NULL);
		size_t i;
		json_t *f;
		printf("module %s (%s)\n", json_string_value(json_object_get(j, "module")),
		       json_string_value(json_object_get(j, "source_digest")));
		json_array_foreach(json_object_get(j, "functions"), i, f)
		{
			const char *k;
			json_t *e;
			printf("  %s%s: %s", json_is_true(json_object_get(f, "async")) ? "async " : "",
			       json_string_value(json_object_get(f, "name")),
			       json_is_true(json_object_get(f, "eligible")) ? "eligible"
									   : "not eligible");
			if (!json_is_true(json_object_get(f, "eligible")))
				printf(" (%s)", json_string_value(json_object_get(f, "reason")));
			printf("\n    effects:");
			json_object_foreach(json_object_get(f, "effects"), k, e)
				printf(" %s=%s", k, json_string_value(e));
			printf("\n");
		}
		json_decref(j);
	}
	rc = 0;
out:
	govex_result_free(res);
	govex_runtime_free(rt);
	if (audit_fd >= 0)
		close(audit_fd);
	free(data);
	free(path);
	free(doc);
	return rc;
}
