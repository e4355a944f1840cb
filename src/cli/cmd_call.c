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
#define ARGS_MAX   (64u << 20)

/* Parses call's (and inspect's) options and checks its operands; -1 with err. */
static int parse(unsigned cmd, int argc, char **argv, struct cli_opts *a, char *err, size_t errlen)
{
	struct cli_opt_error oe;
	/* permuted: options may follow FILE:FUNCTION */
	if (cli_options_parse(cmd, true, argc, argv, a, &oe) < 0) {
		if (oe.kind == CLI_OPTERR_UNKNOWN)
			snprintf(err, errlen, "unknown option or missing argument '%s'", oe.arg);
		else
			snprintf(err, errlen, "%s", oe.msg);
		return -1;
	}
	if (a->help)
		return 0;
	if (a->n_operands > 1) {
		snprintf(err, errlen, "unexpected argument '%s'", a->operands[1]);
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
	if (!a->n_operands && !a->plan_file) {
		snprintf(err, errlen, "%s",
			 cmd == CLI_CMD_INSPECT ? "give FILE"
						: "give FILE:FUNCTION or --plan PLAN");
		return -1;
	}
	return 0;
}

static const char *target_of(const struct cli_opts *a)
{
	return a->n_operands > 0 ? a->operands[0] : NULL;
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
static int read_source(const char *file, struct govex_source *src, char **ret_data, char **ret_path)
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
	cli_live_finish();
	if (json) {
		cli_result_json_write(res);
		return;
	}
	if (v->status == GOVEX_STATUS_SUCCESS && v->value) {
		cli_live_end(1);
		/* JSON text: DEL and C1 as \u escapes (the library writes them so too) */
		char *t = cli_terminal_safe(v->value, true);
		if (t) {
			cli_write_all(1, t, strlen(t));
			cli_write_all(1, "\n", 1);
		}
		free(t);
	}
	/* the summary quotes a diagnostic, which may be a worker's (cleaned) text */
	if (v->status != GOVEX_STATUS_SUCCESS) {
		cli_live_end(2);
		cli_error_safe(govex_result_summary(res));
	}
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
		if (v->termination == GOVEX_TERM_SIGNALED ||
		    v->termination == GOVEX_TERM_CPU_LIMIT ||
		    v->termination == GOVEX_TERM_MEMORY_LIMIT)
			return 128 + v->signal;
		if (v->termination == GOVEX_TERM_LAUNCH_FAILED)
			return 125;
		return 1;
	}
}

/* What a call reads before it starts: the plan, the target, the source, the arguments. */
struct call_input {
	govex_plan *plan;
	char *plan_text, *data, *path, *args, *target;
	size_t plan_len, args_len;
};

static void call_input_free(struct call_input *in)
{
	govex_plan_free(in->plan);
	free(in->plan_text);
	free(in->data);
	free(in->path);
	free(in->args);
	free(in->target);
}

/* The plan, and FILE:FUNCTION from the command line or the plan; 125 after a refusal. */
static int read_call_target(const struct cli_opts *a, struct call_input *in)
{
	struct govex_error ge = {0};
	char msg[600];
	if (a->plan_file) {
		int r = cli_read_regular(a->plan_file, 4u << 20, &in->plan_text, &in->plan_len);
		if (r < 0 || govex_plan_parse(in->plan_text, in->plan_len, &in->plan, &ge) < 0) {
			snprintf(msg, sizeof(msg), "plan '%s': %s", a->plan_file,
				 r < 0 ? cli_read_error(r) : ge.message);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "invalid_plan",
						msg);
		}
	}
	const char *t = target_of(a);
	if (t) {
		if (!cli_is_call_target(t)) {
			snprintf(msg, sizeof(msg),
				 "'%s': not FILE.py:FUNCTION or FILE.ipynb:FUNCTION", t);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"invalid_target", msg);
		}
		in->target = strdup(t);
	} else {
		/* from the plan: its source path and function */
		const char *sp = govex_plan_source_path(in->plan);
		const char *fn = govex_plan_function(in->plan);
		if (!sp || !fn)
			return cli_emit_refusal(
			    a->json, GOVEX_STATUS_INVALID_INPUT, "missing_target",
			    "plan: it is not a call plan with a source path; give "
			    "FILE:FUNCTION");
		if (asprintf(&in->target, "%s:%s", sp, fn) < 0)
			in->target = NULL;
	}
	if (!in->target) {
		cli_error("out of memory");
		return EXIT_REFUSED;
	}
	return 0;
}

/* The source and the arguments of the call; 125 after a refusal. */
static int read_call_input(const struct cli_opts *a, struct call_input *in, struct govex_call *call)
{
	char msg[600];
	int r = read_call_target(a, in);
	if (r != 0)
		return r;
	char *colon = in->target ? strrchr(in->target, ':') : NULL;
	if (!colon) /* read_call_target checked FILE:FUNCTION */
		return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "invalid_target",
					"no FILE:FUNCTION");
	*colon = '\0';
	call->function = colon + 1;
	if ((r = read_source(in->target, &call->source, &in->data, &in->path)) < 0) {
		/* in->target is the caller's to free (call_input_release) */
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		snprintf(msg, sizeof(msg), "source '%s': %s", in->target, strerror(-r));
		return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "unreadable_source",
					msg);
	}
	if (a->args) {
		call->args = a->args;
		call->args_len = strlen(a->args);
	} else if (a->args_file) {
		if ((r = cli_read_all(a->args_file, ARGS_MAX, &in->args, &in->args_len)) < 0) {
			snprintf(msg, sizeof(msg), "args '%s': %s", a->args_file, strerror(-r));
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"unreadable_args", msg);
		}
		call->args = in->args;
		call->args_len = in->args_len;
	}
	call->limits.wall_ms = a->timeout_ms;
	return 0;
}

/* Plans (plan_only) or makes the call; returns the exit status. */
static int call_or_plan(struct cli_session *s, govex_plan *plan, struct govex_call *call,
			bool plan_only)
{
	struct govex_error ge = {0};
	govex_plan *fresh = NULL;
	govex_result *res = NULL;
	int rc = EXIT_REFUSED;
	call->cancel = s->cancel;
	cli_session_cancel_on_signals(s);
	if (plan_only) {
		if (govex_runtime_plan_call(s->rt, call, &fresh, &res, &ge) < 0) {
			cli_error("plan: %s", ge.message);
			goto out;
		}
		if (fresh) {
			size_t n;
			const char *c = govex_plan_canonical(fresh, &n);
			rc = cli_write_all(1, c, n) < 0 ? 1 : 0;
			goto out;
		}
	} else if (govex_runtime_call(s->rt, plan, call, &res, &ge) < 0) {
		cli_error("call: %s", ge.message);
		goto out;
	}
	int copy_rc = plan_only ? 0 : cli_output_dir_write(s->opts, res);
	print_result(res, s->opts->json);
	cli_output_dir_messages();
	rc = copy_rc ? copy_rc : call_exit_status(res);
out:
	govex_result_free(res);
	govex_plan_free(fresh);
	return rc;
}

int cmd_call(int argc, char **argv, bool plan_only)
{
	struct cli_opts a;
	char err[300];
	const char *name = plan_only ? "plan" : "call";
	if (parse(plan_only ? CLI_CMD_PLAN_CALL : CLI_CMD_CALL, argc, argv, &a, err, sizeof(err)) <
	    0) {
		cli_error("%s: %s (see govex %s --help)", name, err, name);
		return EXIT_REFUSED;
	}
	if (a.help) {
		fputs(plan_only ? cli_usage_plan : cli_usage_call, stdout);
		return 0;
	}
	int rc;
	struct cli_session s;
	struct call_input in = {0};
	struct govex_call call;
	struct cli_files files;
	memset(&call, 0, sizeof(call));
	memset(&files, 0, sizeof(files));
	cli_session_init(&s, &a);
	if ((rc = read_call_input(&a, &in, &call)) != 0)
		goto out;
	call.outputs = a.output_dir != NULL;
	call.on_output = plan_only ? NULL : cli_live_output(&a);
	if (cli_session_start(&s, CLI_SESSION_CANCEL) < 0) {
		rc = cli_session_refuse(&s);
		goto out;
	}
	if ((rc = cli_files_read(&a, s.policy, &files)) != 0 ||
	    (!plan_only && (rc = cli_output_dir_check(&a)) != 0))
		goto out;
	call.files = files.n ? files.files : NULL;
	call.n_files = files.n;
	rc = call_or_plan(&s, in.plan, &call, plan_only);
out:
	call_input_free(&in);
	cli_files_free(&files);
	cli_session_close(&s);
	return rc;
}

/* The inspection's summary on a terminal. */
static void print_inspection(const char *doc)
{
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
		       json_is_true(json_object_get(f, "eligible")) ? "eligible" : "not eligible");
		if (!json_is_true(json_object_get(f, "eligible")))
			printf(" (%s)", json_string_value(json_object_get(f, "reason")));
		printf("\n    effects:");
		json_object_foreach(json_object_get(f, "effects"), k, e)
		    printf(" %s=%s", k, json_string_value(e));
		printf("\n");
	}
	json_decref(j);
}

/* Inspects target under a's policy: 0 with *ret_doc, or the exit status of a refusal,
 * which is reported unless quiet. */
static int inspect_doc(const struct cli_opts *a, const char *target, bool quiet, char **ret_doc)
{
	char msg[600];
	int rc = EXIT_REFUSED;
	struct cli_session s;
	govex_result *res = NULL;
	char *data = NULL, *path = NULL;
	struct govex_source src;
	struct govex_error ge = {0};
	memset(&src, 0, sizeof(src));
	*ret_doc = NULL;
	cli_session_init(&s, a);
	int r = read_source(target, &src, &data, &path);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "source '%s': %s", target, strerror(-r));
		if (!quiet)
			rc = cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
					      "unreadable_source", msg);
		goto out;
	}
	if (cli_session_start(&s, 0) < 0) {
		if (!quiet)
			rc = cli_session_refuse(&s);
		goto out;
	}
	if (govex_runtime_inspect(s.rt, &src, ret_doc, &res, &ge) < 0) {
		if (!quiet)
			cli_error("inspect: %s", ge.message);
		goto out;
	}
	if (res) {
		if (!quiet)
			print_result(res, a->json);
		rc = call_exit_status(res);
		free(*ret_doc);
		*ret_doc = NULL;
		goto out;
	}
	rc = 0;
out:
	govex_result_free(res);
	cli_session_close(&s);
	free(data);
	free(path);
	return rc;
}

int cmd_inspect(int argc, char **argv)
{
	struct cli_opts a;
	char err[300];
	if (parse(CLI_CMD_INSPECT, argc, argv, &a, err, sizeof(err)) < 0) {
		cli_error("inspect: %s (see govex inspect --help)", err);
		return EXIT_REFUSED;
	}
	if (a.help) {
		fputs(cli_usage_inspect, stdout);
		return 0;
	}
	const char *target = target_of(&a);
	if (!target) {
		cli_error("inspect: give FILE (see govex inspect --help)");
		return EXIT_REFUSED;
	}
	char *doc = NULL;
	int rc = inspect_doc(&a, target, false, &doc);
	if (rc != 0)
		return rc;
	if (a.json) {
		/* docstrings and annotations are the module's text: DEL and C1 escaped */
		char *t = cli_terminal_safe(doc, true);
		if (t)
			cli_write_all(1, t, strlen(t));
		free(t);
	} else {
		print_inspection(doc);
	}
	free(doc);
	return 0;
}

int cli_complete_functions(const char *file)
{
	struct cli_opts a;
	char *doc = NULL;
	memset(&a, 0, sizeof(a)); /* the defaults: the strict preset, the best backend */
	int rc = inspect_doc(&a, file, true, &doc);
	if (rc != 0)
		return rc;
	json_t *j = json_loads(doc, 0, NULL), *f;
	size_t i;
	json_array_foreach(json_object_get(j, "functions"), i, f)
	{
		const char *name = json_string_value(json_object_get(f, "name"));
		char t[300];
		/* only what a FILE:FUNCTION target can name (cli_is_call_target) */
		if (name && json_is_true(json_object_get(f, "eligible")) &&
		    snprintf(t, sizeof(t), "x.py:%s", name) < (int)sizeof(t) &&
		    cli_is_call_target(t))
			puts(name);
	}
	json_decref(j);
	free(doc);
	return 0;
}
