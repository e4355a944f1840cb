/* SPDX-License-Identifier: MIT */
/* The option table and its parser (options.h); the usage texts it is checked against. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#define R   CLI_CMD_RUN
#define P   CLI_CMD_PLAN
#define C   CLI_CMD_CALL
#define Q   CLI_CMD_PLAN_CALL
#define I   CLI_CMD_INSPECT
#define X   CLI_CMD_EXEC
#define M   CLI_CMD_MCP
#define ALL (R | P | C | Q | I | X | M | CLI_CMD_POLICY | CLI_CMD_BACKENDS | CLI_CMD_VERSION)

#define S(field) CLI_STORE_STRING, offsetof(struct cli_opts, field)
#define F(field) CLI_STORE_FLAG, offsetof(struct cli_opts, field)
#define V	 CLI_STORE_CHECKED, 0

/* A plan is never approved: --approver, --ask and --plan are no plan's options. */
const struct cli_option cli_options[CLI_OPT_COUNT] = {
    /* clang-format off */
	[CLI_OPT_POLICY]	 = {"policy", 0, true, R | P | C | Q | I | X | M, S(policy_file),
				    CLI_VALUE_FILE, "policy file (govex.policy/v1)"},
	[CLI_OPT_PRESET]	 = {"preset", 0, true, R | P | C | Q | I | X | M, S(preset),
				    CLI_VALUE_PRESET, "built-in policy"},
	[CLI_OPT_JSON]		 = {"json", 0, false, R | P | C | Q | I | X | CLI_CMD_BACKENDS,
				    F(json), CLI_VALUE_NONE, "print one JSON document"},
	[CLI_OPT_TIMEOUT_MS]	 = {"timeout-ms", 0, true, R | P | C | Q | X, V, CLI_VALUE_TEXT,
				    "wall-time limit"},
	[CLI_OPT_STDIN]		 = {"stdin", 0, true, R | P | X, S(stdin_file), CLI_VALUE_FILE,
				    "feed FILE to the program"},
	[CLI_OPT_BACKEND]	 = {"backend", 0, true, R | P | C | Q | I | X, S(backend),
				    CLI_VALUE_BACKEND, "use this backend or refuse"},
	[CLI_OPT_ENV]		 = {"env", 0, true, R | P | X, V, CLI_VALUE_TEXT,
				    "NAME=VALUE the policy allows (repeatable)"},
	[CLI_OPT_AUDIT]		 = {"audit", 0, true, R | P | C | Q | I | X | M, S(audit_file),
				    CLI_VALUE_FILE, "append govex.audit/v1 events"},
	[CLI_OPT_APPROVER]	 = {"approver", 0, true, R | C | X | M, S(approver), CLI_VALUE_TEXT,
				    "approve with a command"},
	[CLI_OPT_ASK]		 = {"ask", 0, false, R | C | X, F(ask), CLI_VALUE_NONE,
				    "approve on the terminal"},
	[CLI_OPT_PLAN]		 = {"plan", 0, true, R | C, S(plan_file), CLI_VALUE_FILE,
				    "execute a plan made by govex plan"},
	[CLI_OPT_CODE]		 = {NULL, 'c', true, R | P, S(code), CLI_VALUE_TEXT,
				    "the code to run"},
	[CLI_OPT_ARGS]		 = {"args", 0, true, C, S(args), CLI_VALUE_TEXT,
				    "the call's arguments, a JSON object"},
	[CLI_OPT_ARGS_FILE]	 = {"args-file", 0, true, C, S(args_file), CLI_VALUE_FILE,
				    "the same, read from FILE"},
	[CLI_OPT_SHELL]		 = {"shell", 0, true, X, S(shell), CLI_VALUE_TEXT,
				    "run /bin/sh -c STRING"},
	[CLI_OPT_PLAN_ONLY]	 = {"plan-only", 0, false, X, F(plan_only), CLI_VALUE_NONE,
				    "print the plan, run nothing"},
	[CLI_OPT_MODULE]	 = {"module", 0, true, M, V, CLI_VALUE_FILE,
				    "offer FILE's functions as tools"},
	[CLI_OPT_MAX_CONCURRENT] = {"max-concurrent", 0, true, M, V, CLI_VALUE_TEXT,
				    "calls running at once"},
	[CLI_OPT_HELP]		 = {"help", 'h', false, ALL, F(help), CLI_VALUE_NONE,
				    "print the usage"},
	[CLI_OPT_FILE]		 = {"file", 0, true, R | P | C | Q | X, V, CLI_VALUE_TEXT,
				    "NAME=PATH: a file placed read-only in the workdir (repeatable)"},
	[CLI_OPT_OUTPUT_DIR]	 = {"output-dir", 0, true, R | P | C | Q | X, S(output_dir),
				    CLI_VALUE_DIR,
				    "copy the files the run leaves in $GOVEX_OUTPUT_DIR to DIR"},
	[CLI_OPT_HTTP]		 = {"http", 0, true, M, S(http), CLI_VALUE_TEXT,
				    "serve streamable HTTP at ADDR:PORT"},
	[CLI_OPT_TOKEN_FILE]	 = {"token-file", 0, true, M, S(token_file), CLI_VALUE_FILE,
				    "require Authorization: Bearer (the file's first line)"},
	[CLI_OPT_ALLOW_ORIGIN]	 = {"allow-origin", 0, true, M, V, CLI_VALUE_TEXT,
				    "an Origin allowed (repeatable)"},
	[CLI_OPT_MAX_CONNECTIONS] = {"max-connections", 0, true, M, V, CLI_VALUE_TEXT,
				    "HTTP connections at once"},
	[CLI_OPT_RATE]		 = {"rate", 0, true, M, V, CLI_VALUE_TEXT,
				    "HTTP requests per second per address"},
	[CLI_OPT_DRAIN_TIMEOUT]	 = {"drain-timeout", 0, true, M, V, CLI_VALUE_TEXT,
				    "seconds calls may finish after SIGTERM"},
	[CLI_OPT_MAX_QUEUED]	 = {"max-queued", 0, true, M, V, CLI_VALUE_TEXT,
				    "calls one client may have waiting"},
	[CLI_OPT_QUEUE_TIMEOUT]	 = {"queue-timeout", 0, true, M, V, CLI_VALUE_TEXT,
				    "seconds a call may wait for a slot"},
	[CLI_OPT_CLIENT_TOKENS]	 = {"client-tokens", 0, true, M, S(client_tokens), CLI_VALUE_FILE,
				    "NAME TOKEN lines: a bearer token per client"},
    /* clang-format on */
};

#undef S
#undef F
#undef V

const struct cli_command_info cli_commands[] = {
    {"run", R, cli_usage_run},
    {"plan", P | Q, cli_usage_plan},
    {"call", C, cli_usage_call},
    {"inspect", I, cli_usage_inspect},
    {"exec", X, cli_usage_exec},
    {"mcp", M, cli_usage_mcp},
    {"policy", CLI_CMD_POLICY, cli_usage_policy},
    {"backends", CLI_CMD_BACKENDS, cli_usage_backends},
    {"version", CLI_CMD_VERSION, cli_usage_version},
    {NULL, 0, NULL},
};

#undef R
#undef P
#undef C
#undef Q
#undef I
#undef X
#undef M
#undef ALL

const char *const cli_presets[] = {"strict", "workspace", "trusted", NULL};
const char *const cli_backends[] = {"controlled", "restricted", NULL};
const char *const cli_policy_verbs[] = {"check", "canon", "digest", "show", NULL};

const struct cli_command_info *cli_command_find(const char *name)
{
	for (size_t i = 0; cli_commands[i].name; i++)
		if (strcmp(cli_commands[i].name, name) == 0)
			return &cli_commands[i];
	return NULL;
}

bool cli_option_accepted(unsigned cmd, const char *name)
{
	for (size_t i = 0; i < CLI_OPT_COUNT; i++)
		if (cli_options[i].name && strcmp(cli_options[i].name, name) == 0)
			return (cli_options[i].commands & cmd) != 0;
	return false;
}

int cli_parse_ms(const char *opt, const char *arg, unsigned long long *ret, char *err,
		 size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || *end || !*arg || arg[0] == '-' || v == 0) {
		snprintf(err, errlen, "%s: '%s' is not a positive integer", opt, arg);
		return -1;
	}
	*ret = v;
	return 0;
}

static int bad(struct cli_opt_error *err, enum cli_opt_error_kind kind, int id, const char *arg)
{
	err->kind = kind;
	err->option = id;
	err->arg = arg;
	return -1;
}

/* --max-connections (1..65536), --rate (1..1000000), --drain-timeout (0..3600 s),
 * --max-queued (1..1000000), --queue-timeout (1..86400 s) */
static int take_count(int id, const char *arg, struct cli_opts *o, struct cli_opt_error *err)
{
	static const struct {
		int id;
		const char *name;
		long lo, hi;
		size_t off;
	} c[] = {
	    {CLI_OPT_MAX_CONNECTIONS, "--max-connections", 1, 65536,
	     offsetof(struct cli_opts, max_connections)},
	    {CLI_OPT_RATE, "--rate", 1, 1000000, offsetof(struct cli_opts, rate)},
	    {CLI_OPT_DRAIN_TIMEOUT, "--drain-timeout", 0, 3600,
	     offsetof(struct cli_opts, drain_timeout_s)},
	    {CLI_OPT_MAX_QUEUED, "--max-queued", 1, 1000000, offsetof(struct cli_opts, max_queued)},
	    {CLI_OPT_QUEUE_TIMEOUT, "--queue-timeout", 1, 86400,
	     offsetof(struct cli_opts, queue_timeout_s)},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (c[i].id != id)
			continue;
		char *end;
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (errno || *end || end == arg || v < c[i].lo || v > c[i].hi) {
			snprintf(err->msg, sizeof(err->msg),
				 "%s: must be an integer from %ld to %ld", c[i].name, c[i].lo,
				 c[i].hi);
			return bad(err, CLI_OPTERR_BAD_VALUE, id, arg);
		}
		*(unsigned *)((char *)o + c[i].off) = (unsigned)v;
		if (id == CLI_OPT_DRAIN_TIMEOUT)
			o->drain_timeout_set = true;
		return 0;
	}
	return bad(err, CLI_OPTERR_UNKNOWN, -1, arg);
}

/* Stores one option's value in o, checking it; -1 with err filled. */
static int take(int id, const char *arg, struct cli_opts *o, struct cli_opt_error *err)
{
	const struct cli_option *d = &cli_options[id];
	if (d->store == CLI_STORE_STRING) {
		*(const char **)((char *)o + d->offset) = arg;
		return 0;
	}
	if (d->store == CLI_STORE_FLAG) {
		*(bool *)((char *)o + d->offset) = true;
		return 0;
	}
	switch (id) {
	case CLI_OPT_TIMEOUT_MS:
		if (cli_parse_ms("--timeout-ms", arg, &o->timeout_ms, err->msg, sizeof(err->msg)) <
		    0)
			return bad(err, CLI_OPTERR_BAD_VALUE, id, arg);
		break;
	case CLI_OPT_ENV:
		if (o->n_env >= CLI_ENV_MAX) {
			snprintf(err->msg, sizeof(err->msg), "--env: at most %d", CLI_ENV_MAX);
			return bad(err, CLI_OPTERR_TOO_MANY, id, arg);
		}
		if (!strchr(arg, '=')) {
			snprintf(err->msg, sizeof(err->msg), "--env: '%s' is not NAME=VALUE", arg);
			return bad(err, CLI_OPTERR_BAD_VALUE, id, arg);
		}
		o->env[o->n_env++] = arg;
		break;
	case CLI_OPT_FILE: {
		const char *eq = strchr(arg, '=');
		if (o->n_files >= CLI_FILES_MAX) {
			snprintf(err->msg, sizeof(err->msg), "--file: at most %d", CLI_FILES_MAX);
			return bad(err, CLI_OPTERR_TOO_MANY, id, arg);
		}
		if (!eq) { /* the name is the library's to check (invalid_input) */
			snprintf(err->msg, sizeof(err->msg), "--file: '%s' is not NAME=PATH", arg);
			return bad(err, CLI_OPTERR_BAD_VALUE, id, arg);
		}
		o->files[o->n_files++] = arg;
		break;
	}
	case CLI_OPT_MODULE:
		if (o->n_modules == CLI_MODULES_MAX) {
			snprintf(err->msg, sizeof(err->msg), "at most %d --module options",
				 CLI_MODULES_MAX);
			return bad(err, CLI_OPTERR_TOO_MANY, id, arg);
		}
		o->modules[o->n_modules++] = arg;
		break;
	case CLI_OPT_MAX_CONCURRENT: {
		char *end;
		errno = 0;
		long v = strtol(arg, &end, 10);
		if (errno || *end || end == arg || v < 1 || v > CLI_MAX_CONCURRENT_MAX) {
			snprintf(err->msg, sizeof(err->msg),
				 "--max-concurrent: must be an integer from 1 to %d",
				 CLI_MAX_CONCURRENT_MAX);
			return bad(err, CLI_OPTERR_BAD_VALUE, id, arg);
		}
		o->max_concurrent = (unsigned)v;
		break;
	}
	case CLI_OPT_ALLOW_ORIGIN:
		if (o->n_origins == CLI_ORIGINS_MAX) {
			snprintf(err->msg, sizeof(err->msg), "at most %d --allow-origin options",
				 CLI_ORIGINS_MAX);
			return bad(err, CLI_OPTERR_TOO_MANY, id, arg);
		}
		o->origins[o->n_origins++] = arg;
		break;
	case CLI_OPT_MAX_CONNECTIONS:
	case CLI_OPT_RATE:
	case CLI_OPT_DRAIN_TIMEOUT:
	case CLI_OPT_MAX_QUEUED:
	case CLI_OPT_QUEUE_TIMEOUT:
		return take_count(id, arg, o, err);
	default:
		return bad(err, CLI_OPTERR_UNKNOWN, -1, arg);
	}
	return 0;
}

int cli_options_parse(unsigned cmd, bool permute, int argc, char **argv, struct cli_opts *o,
		      struct cli_opt_error *err)
{
	struct option longs[CLI_OPT_COUNT + 1];
	char shorts[2 * CLI_OPT_COUNT + 2];
	size_t nl = 0, ns = 0;
	memset(o, 0, sizeof(*o));
	memset(err, 0, sizeof(*err));
	/* "+": stop at the first operand */
	if (!permute)
		shorts[ns++] = '+';
	for (int i = 0; i < CLI_OPT_COUNT; i++) {
		const struct cli_option *d = &cli_options[i];
		if (!(d->commands & cmd))
			continue;
		if (d->name)
			longs[nl++] = (struct option){
			    d->name, d->has_arg ? required_argument : no_argument, NULL, 256 + i};
		if (d->short_name) {
			shorts[ns++] = d->short_name;
			if (d->has_arg)
				shorts[ns++] = ':';
		}
	}
	longs[nl] = (struct option){NULL, 0, NULL, 0};
	shorts[ns] = '\0';
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		int id = -1;
		if (c >= 256)
			id = c - 256;
		else
			for (int i = 0; i < CLI_OPT_COUNT && c != '?'; i++)
				if (cli_options[i].short_name == c &&
				    (cli_options[i].commands & cmd))
					id = i;
		if (id < 0) {
			/* optopt: the short option at fault; a long option's is its value */
			err->short_name = optopt > 0 && optopt < 256 ? optopt : 0;
			return bad(err, CLI_OPTERR_UNKNOWN, -1, argv[optind - 1]);
		}
		if (take(id, optarg, o, err) < 0)
			return -1;
		if (id == CLI_OPT_HELP)
			return 0;
	}
	o->operands = argv + optind;
	o->n_operands = argc - optind;
	return 0;
}

/* ---------------------------------------------------------------- usage */

const char cli_usage_run[] =
    "usage: govex run [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
    "                 [--stdin FILE] [--backend NAME] [--env NAME=VALUE]...\n"
    "                 [--audit FILE] [--approver COMMAND] [--ask]\n"
    "                 [--file NAME=PATH]... [--output-dir DIR]\n"
    "                 (-c CODE | FILE | - | --plan PLAN [FILE])\n"
    "\n"
    "Run Python code under the policy and report the result.\n"
    "\n"
    "  -c CODE             the code to run\n"
    "  FILE, -             the file the code is read from ('-': govex's stdin)\n"
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
    "  --file NAME=PATH    place a copy of the regular file PATH, read-only, in the run's\n"
    "                      workdir as NAME ([A-Za-z0-9._-]; repeatable)\n"
    "  --output-dir DIR    give the run $GOVEX_OUTPUT_DIR and copy the files it leaves\n"
    "                      there into DIR (which must exist; nothing is overwritten)\n"
    "\n"
    "On a terminal and without --json, the program's output is shown as it arrives.\n"
    "exit status: the program's own; 124 timeout; 125 refused, invalid or not started;\n"
    "128+N killed by signal N (or cancelled by signal N to govex)\n";

const char cli_usage_plan[] =
    "usage: govex plan [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
    "                  [--stdin FILE] [--backend NAME] [--env NAME=VALUE]...\n"
    "                  [--audit FILE] [--file NAME=PATH]... [--output-dir DIR]\n"
    "                  (-c CODE | FILE | -)\n"
    "       govex plan [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
    "                  [--backend NAME] [--audit FILE] [--file NAME=PATH]...\n"
    "                  [--output-dir DIR] FILE:FUNCTION\n"
    "\n"
    "Check a run of code, or a call of FILE:FUNCTION, against the policy, choose a\n"
    "backend and print the canonical govex.plan/v1 document on stdout.  Nothing runs and\n"
    "no approval is asked: the plan file, given to govex run or govex call, has exactly\n"
    "that run or call made (and approved then when the policy says so).\n"
    "\n"
    "  -c CODE, FILE, -    the code of the run, as for govex run\n"
    "  FILE:FUNCTION       the function of the call, as for govex call (its arguments\n"
    "                      are not planned: they are the call's)\n"
    "  --policy FILE       policy file (govex.policy/v1); default: the strict preset\n"
    "  --preset NAME       built-in policy: strict, workspace, trusted\n"
    "  --json              print a refusal as one govex.result/v1 document on stdout\n"
    "                      (a plan is JSON in any case)\n"
    "  --timeout-ms N      the planned wall-time limit, at most the policy's limits.wall_ms\n"
    "  --stdin FILE        the run's standard input ('-': govex's stdin); the plan\n"
    "                      records its digest (not for a call)\n"
    "  --backend NAME      plan for this backend (controlled, restricted) or refuse\n"
    "  --env NAME=VALUE    a variable the policy's environment.allow names (not for a\n"
    "                      call)\n"
    "  --audit FILE        append govex.audit/v1 events (JSON lines) to FILE\n"
    "  --file NAME=PATH    a regular file the run gets read-only in its workdir as NAME;\n"
    "                      the plan records its digest (repeatable)\n"
    "  --output-dir DIR    plan a run that may leave files in $GOVEX_OUTPUT_DIR (DIR is\n"
    "                      given again to the run that executes the plan)\n"
    "\n"
    "Exit status: 0 the plan printed; 125 refused or invalid input (the refusal on\n"
    "stderr, or with --json on stdout).\n";

const char cli_usage_call[] =
    "usage: govex call [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
    "                  [--backend NAME] [--audit FILE] [--approver COMMAND] [--ask]\n"
    "                  [--args JSON | --args-file FILE]\n"
    "                  [--file NAME=PATH]... [--output-dir DIR]\n"
    "                  (FILE:FUNCTION | --plan PLAN [FILE:FUNCTION])\n"
    "\n"
    "Call one Python function with JSON arguments in a fresh worker and report its\n"
    "JSON value.\n"
    "\n"
    "  FILE:FUNCTION       a top-level function of a Python file (.py) or notebook (.ipynb)\n"
    "  --policy FILE       policy file (govex.policy/v1); default: the strict preset\n"
    "  --preset NAME       built-in policy: strict, workspace, trusted\n"
    "  --json              print one govex.result/v1 document on stdout\n"
    "  --timeout-ms N      wall-time limit, at most the policy's limits.wall_ms\n"
    "  --backend NAME      use this backend (controlled, restricted) or refuse\n"
    "  --audit FILE        append govex.audit/v1 events (JSON lines) to FILE\n"
    "  --approver COMMAND  run COMMAND (sh -c) with the plan on stdin when the policy\n"
    "                      requires approval; exit 0 approves\n"
    "  --ask               ask on the terminal when the policy requires approval\n"
    "  --args JSON         a JSON object from parameter names to values (default {})\n"
    "  --args-file FILE    the same, read from FILE ('-': stdin)\n"
    "  --plan PLAN         call exactly the plan made earlier by govex plan FILE:FUNCTION;\n"
    "                      one changed byte of the source gives source_mismatch\n"
    "  --file NAME=PATH    place a copy of the regular file PATH, read-only, in the\n"
    "                      call's workdir as NAME ([A-Za-z0-9._-]; repeatable)\n"
    "  --output-dir DIR    give the call $GOVEX_OUTPUT_DIR and copy the files it leaves\n"
    "                      there into DIR (which must exist; nothing is overwritten)\n"
    "\n"
    "Without --json the value is printed as JSON on stdout.  Exit status: 0 success;\n"
    "124 timeout; 125 refused, invalid input, binding failure or source mismatch;\n"
    "128+N killed by signal N; 1 any other failure (the status says which).\n";

const char cli_usage_inspect[] =
    "usage: govex inspect [--policy FILE | --preset NAME] [--json] [--backend NAME]\n"
    "                     [--audit FILE] FILE\n"
    "\n"
    "Statically inspect a Python file or notebook (Python's ast, in a worker under the\n"
    "policy; the module is never imported) and print its govex.inspection/v1 document:\n"
    "every top-level function with its parameters, annotations, docstring, eligibility\n"
    "for call mode and effects (present, absent or unknown).\n"
    "\n"
    "  --policy FILE       policy file (govex.policy/v1); default: the strict preset\n"
    "  --preset NAME       built-in policy: strict, workspace, trusted\n"
    "  --json              print the govex.inspection/v1 document (default: a summary)\n"
    "  --backend NAME      run the worker on this backend (controlled, restricted) or\n"
    "                      refuse\n"
    "  --audit FILE        append govex.audit/v1 events (JSON lines) to FILE\n";

const char cli_usage_exec[] =
    "usage: govex exec [--policy FILE | --preset NAME] [--json] [--timeout-ms N]\n"
    "                  [--stdin FILE] [--backend NAME] [--env NAME=VALUE]...\n"
    "                  [--audit FILE] [--approver COMMAND] [--ask] [--plan-only]\n"
    "                  [--file NAME=PATH]... [--output-dir DIR]\n"
    "                  (--shell STRING | -- ARGV...)\n"
    "\n"
    "Run an executable, argv first, under the policy, with the same limits, result and\n"
    "exit statuses as govex run.  ARGV[0] is searched on PATH before planning; the plan\n"
    "carries its absolute path and digest, and a sandbox binds it, its loader and its\n"
    "libraries read-only.\n"
    "\n"
    "  -- ARGV...          the executable and its arguments\n"
    "  --shell STRING      run /bin/sh -c STRING, only when the policy allows shell;\n"
    "                      nothing else interprets command strings\n"
    "  --plan-only         print the canonical govex.plan/v1 document, run nothing\n"
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
    "  --file NAME=PATH    place a copy of the regular file PATH, read-only, in the\n"
    "                      workdir as NAME ([A-Za-z0-9._-]; repeatable)\n"
    "  --output-dir DIR    give the program $GOVEX_OUTPUT_DIR and copy the files it\n"
    "                      leaves there into DIR (which must exist; nothing is overwritten)\n";

const char cli_usage_policy[] =
    "usage: govex policy check FILE    validate FILE; exit 0 when valid, 2 naming the field\n"
    "       govex policy canon FILE    print the canonical bytes with every default\n"
    "       govex policy digest FILE   print sha256:<hex> of the canonical bytes\n"
    "       govex policy show PRESET   print a built-in preset (strict, workspace, trusted)\n";

const char cli_usage_backends[] =
    "usage: govex backends [--json]\n"
    "\n"
    "List the backends and the controls each enforces on this host, probed now.\n"
    "\n"
    "  --json  print a JSON array of govex.backend/v1 reports\n";

const char cli_usage_version[] = "usage: govex version\n"
				 "\n"
				 "Print govex's version, as the option of that name does.\n";

const char cli_usage_mcp[] =
    "usage: govex mcp [--policy FILE | --preset NAME] [--module FILE.py]...\n"
    "                 [--audit FILE] [--approver COMMAND] [--max-concurrent N]\n"
    "                 [--max-queued N] [--queue-timeout S]\n"
    "                 [--http ADDR:PORT [--token-file FILE] [--client-tokens FILE]\n"
    "                  [--allow-origin ORIGIN]...\n"
    "                  [--max-connections N] [--rate N] [--drain-timeout S]]\n"
    "\n"
    "Serve run_python_snippet, and one tool per eligible function of each module, over\n"
    "MCP's stdio transport (JSON-RPC 2.0, one message per line; protocol versions\n"
    "2024-11-05 to 2025-11-25 with initialize, and 2026-07-28 per request), or over\n"
    "streamable HTTP with --http.\n"
    "\n"
    "  --policy FILE         policy file (govex.policy/v1); default: the strict preset\n"
    "  --preset NAME         built-in policy: strict, workspace, trusted\n"
    "  --module FILE         offer FILE's eligible public functions as tools, each call\n"
    "                        bound to the bytes read now (repeatable)\n"
    "  --audit FILE          append govex.audit/v1 events (JSON lines) to FILE\n"
    "  --approver COMMAND    run COMMAND (sh -c) with the plan on stdin when the policy\n"
    "                        requires approval; exit 0 approves.  Without it, such\n"
    "                        calls are refused\n"
    "  --max-concurrent N    calls running at once (default: the number of CPUs)\n"
    "  --max-queued N        calls one client may have waiting for a slot (default 64\n"
    "                        per --max-concurrent; 8 times that in all); past it 429\n"
    "  --queue-timeout S     a call that waits longer gets an error (default 60)\n"
    "  --http ADDR:PORT      serve streamable HTTP at http://ADDR:PORT/mcp (ADDR: IPv4,\n"
    "                        [IPv6] or localhost; PORT 0: any, said on stderr)\n"
    "  --token-file FILE     require Authorization: Bearer TOKEN, the file's first line\n"
    "                        (16 bytes at least; required off loopback)\n"
    "  --client-tokens FILE  a token per client: lines NAME TOKEN; each such token is\n"
    "                        accepted, and names its client for the scheduler\n"
    "  --allow-origin ORIGIN a browser Origin allowed besides loopback ones (repeatable)\n"
    "  --max-connections N   HTTP connections at once (default 256)\n"
    "  --rate N              requests per second per client address (default 50,\n"
    "                        bursts of 2N)\n"
    "  --drain-timeout S     after SIGTERM, how long calls may finish (default 30)\n"
    "\n"
    "Logs go to stderr.  On stdio, stdin's end stops the server and cancels the calls in\n"
    "flight; over HTTP, SIGTERM or SIGINT drains, then exits 0.  Runs are forked from\n"
    "warm templates (an interpreter per policy started inside the sandbox; each run still\n"
    "gets its own namespaces, identity, cgroups, Landlock, seccomp and limits);\n"
    "GOVEX_WARM=0 starts every run cold.\n";
