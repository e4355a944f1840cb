/* SPDX-License-Identifier: MIT */
/* unit-options: the CLI's option table, its parser and the usage texts against it. */
#define _GNU_SOURCE
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/options.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const unsigned all_cmds[] = {
    CLI_CMD_RUN,  CLI_CMD_PLAN, CLI_CMD_CALL,	CLI_CMD_PLAN_CALL, CLI_CMD_INSPECT,
    CLI_CMD_EXEC, CLI_CMD_MCP,	CLI_CMD_POLICY, CLI_CMD_BACKENDS,  CLI_CMD_VERSION};

/* Parses a NULL-terminated word list (the command's name first). */
static int parse(unsigned cmd, bool permute, char **words, struct cli_opts *o,
		 struct cli_opt_error *e)
{
	int n = 0;
	while (words[n])
		n++;
	return cli_options_parse(cmd, permute, n, words, o, e);
}

START_TEST(test_table_well_formed)
{
	for (size_t i = 0; i < CLI_OPT_COUNT; i++) {
		const struct cli_option *d = &cli_options[i];
		ck_assert_msg(d->name || d->short_name, "option %zu has no name", i);
		ck_assert_msg(d->commands != 0, "option %zu: no command takes it", i);
		ck_assert_ptr_nonnull(d->help);
		/* a stored string needs an argument, a flag takes none */
		if (d->store == CLI_STORE_STRING)
			ck_assert_msg(d->has_arg, "option %zu: a string without argument", i);
		if (d->store == CLI_STORE_FLAG)
			ck_assert_msg(!d->has_arg, "option %zu: a flag with an argument", i);
		for (size_t j = i + 1; j < CLI_OPT_COUNT; j++) {
			if (d->name && cli_options[j].name)
				ck_assert_str_ne(d->name, cli_options[j].name);
			if (d->short_name)
				ck_assert_int_ne(d->short_name, cli_options[j].short_name);
		}
	}
	/* every command has --help */
	for (size_t k = 0; k < ARRAY_SIZE(all_cmds); k++)
		ck_assert(cli_option_accepted(all_cmds[k], "help"));
}
END_TEST

START_TEST(test_run_options)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"run", "--preset", "workspace", "--json", "--timeout-ms", "250",	"--env",
		     "A=1", "--env",	"B=2",	     "-c",     "print(1)",     "--ask", NULL};
	ck_assert_int_eq(parse(CLI_CMD_RUN, false, w, &o, &e), 0);
	ck_assert_str_eq(o.preset, "workspace");
	ck_assert(o.json && o.ask && !o.help);
	ck_assert_int_eq(o.timeout_ms, 250);
	ck_assert_int_eq(o.n_env, 2);
	ck_assert_str_eq(o.env[1], "B=2");
	ck_assert_ptr_null(o.env[2]);
	ck_assert_str_eq(o.code, "print(1)");
	ck_assert_int_eq(o.n_operands, 0);
	char *x[] = {"exec",	  "--policy",	"p.json",  "--stdin",	  "-",
		     "--backend", "controlled", "--audit", "a.log",	  "--approver",
		     "true",	  "--shell",	"echo",	   "--plan-only", NULL};
	ck_assert_int_eq(parse(CLI_CMD_EXEC, false, x, &o, &e), 0);
	ck_assert_str_eq(o.policy_file, "p.json");
	ck_assert_str_eq(o.stdin_file, "-");
	ck_assert_str_eq(o.backend, "controlled");
	ck_assert_str_eq(o.audit_file, "a.log");
	ck_assert_str_eq(o.approver, "true");
	ck_assert_str_eq(o.shell, "echo");
	ck_assert(o.plan_only && !o.json);
	char *c[] = {"call", "--plan", "p", "--args-file", "-", NULL};
	ck_assert_int_eq(parse(CLI_CMD_CALL, true, c, &o, &e), 0);
	ck_assert_str_eq(o.plan_file, "p");
	ck_assert_str_eq(o.args_file, "-");
}
END_TEST

START_TEST(test_first_operand_ends_options)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"run", "--json", "prog.py", "--ask", NULL};
	ck_assert_int_eq(parse(CLI_CMD_RUN, false, w, &o, &e), 0);
	ck_assert(!o.ask);
	ck_assert_int_eq(o.n_operands, 2);
	ck_assert_str_eq(o.operands[0], "prog.py");
	ck_assert_str_eq(o.operands[1], "--ask");
	char *x[] = {"exec", "--", "ls", "-l", NULL};
	ck_assert_int_eq(parse(CLI_CMD_EXEC, false, x, &o, &e), 0);
	ck_assert_int_eq(o.n_operands, 2);
	ck_assert_str_eq(o.operands[0], "ls");
	ck_assert_ptr_null(o.operands[2]);
}
END_TEST

START_TEST(test_call_permutes)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"call", "m.py:f", "--args", "{}", "--json", NULL};
	ck_assert_int_eq(parse(CLI_CMD_CALL, true, w, &o, &e), 0);
	ck_assert(o.json);
	ck_assert_str_eq(o.args, "{}");
	ck_assert_int_eq(o.n_operands, 1);
	ck_assert_str_eq(o.operands[0], "m.py:f");
}
END_TEST

/* an option of another command is unknown here, named as written */
static const struct {
	unsigned cmd;
	const char *word;
} foreign[] = {
    {CLI_CMD_RUN, "--module"},
    {CLI_CMD_RUN, "--shell"},
    {CLI_CMD_CALL, "--stdin"},
    {CLI_CMD_CALL, "--env"},
    {CLI_CMD_EXEC, "--module"},
    {CLI_CMD_EXEC, "--args"},
    {CLI_CMD_MCP, "--json"},
    {CLI_CMD_MCP, "--ask"},
    {CLI_CMD_MCP, "--timeout-ms"},
    {CLI_CMD_MCP, "--backend"},
    {CLI_CMD_RUN, "--bogus"},
    {CLI_CMD_INSPECT, "--shell"},
    /* a plan is never approved, nor made from a plan; a call's plan has no arguments */
    {CLI_CMD_PLAN, "--approver"},
    {CLI_CMD_PLAN, "--ask"},
    {CLI_CMD_PLAN, "--plan"},
    {CLI_CMD_PLAN_CALL, "--ask"},
    {CLI_CMD_PLAN_CALL, "--args"},
    {CLI_CMD_PLAN_CALL, "--args-file"},
    {CLI_CMD_PLAN_CALL, "--stdin"},
    /* inspect takes only what it uses */
    {CLI_CMD_INSPECT, "--timeout-ms"},
    {CLI_CMD_INSPECT, "--approver"},
    {CLI_CMD_INSPECT, "--plan"},
    {CLI_CMD_INSPECT, "--args"},
    {CLI_CMD_BACKENDS, "--policy"},
    {CLI_CMD_POLICY, "--json"},
    {CLI_CMD_VERSION, "--json"},
};

START_TEST(test_foreign_option_unknown)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"cmd", (char *)foreign[_i].word, "x", NULL};
	ck_assert_int_eq(parse(foreign[_i].cmd, false, w, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_UNKNOWN);
	ck_assert_str_eq(e.arg, foreign[_i].word);
	ck_assert_int_eq(e.short_name, 0);
}
END_TEST

START_TEST(test_unknown_short_and_missing_argument)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"mcp", "-c", "x", NULL};
	ck_assert_int_eq(parse(CLI_CMD_MCP, false, w, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_UNKNOWN);
	ck_assert_int_eq(e.short_name, 'c');
	char *m[] = {"run", "--policy", NULL};
	ck_assert_int_eq(parse(CLI_CMD_RUN, false, m, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_UNKNOWN);
	ck_assert_str_eq(e.arg, "--policy");
	ck_assert_int_eq(e.short_name, 0);
}
END_TEST

START_TEST(test_bad_values)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *t[] = {"run", "--timeout-ms", "-5", NULL};
	ck_assert_int_eq(parse(CLI_CMD_RUN, false, t, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_BAD_VALUE);
	ck_assert_int_eq(e.option, CLI_OPT_TIMEOUT_MS);
	ck_assert_str_eq(e.msg, "--timeout-ms: '-5' is not a positive integer");
	char *v[] = {"exec", "--env", "NOVALUE", NULL};
	ck_assert_int_eq(parse(CLI_CMD_EXEC, false, v, &o, &e), -1);
	ck_assert_int_eq(e.option, CLI_OPT_ENV);
	ck_assert_str_eq(e.msg, "--env: 'NOVALUE' is not NAME=VALUE");
	char *m[] = {"mcp", "--max-concurrent", "257", NULL};
	ck_assert_int_eq(parse(CLI_CMD_MCP, false, m, &o, &e), -1);
	ck_assert_str_eq(e.msg, "--max-concurrent: must be an integer from 1 to 256");
	char *k[] = {"mcp", "--max-concurrent", "256", NULL};
	ck_assert_int_eq(parse(CLI_CMD_MCP, false, k, &o, &e), 0);
	ck_assert_int_eq(o.max_concurrent, 256);
}
END_TEST

START_TEST(test_repeat_bounds)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[2 * CLI_MODULES_MAX + 4];
	int n = 0;
	w[n++] = "mcp";
	for (int i = 0; i <= CLI_MODULES_MAX; i++) {
		w[n++] = "--module";
		w[n++] = "m.py";
	}
	w[n] = NULL;
	ck_assert_int_eq(cli_options_parse(CLI_CMD_MCP, false, n - 2, w, &o, &e), 0);
	ck_assert_int_eq(o.n_modules, CLI_MODULES_MAX);
	ck_assert_int_eq(cli_options_parse(CLI_CMD_MCP, false, n, w, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_TOO_MANY);
	ck_assert_str_eq(e.msg, "at most 64 --module options");
	char *env[2 * CLI_ENV_MAX + 4];
	n = 0;
	env[n++] = "run";
	for (int i = 0; i <= CLI_ENV_MAX; i++) {
		env[n++] = "--env";
		env[n++] = "A=1";
	}
	env[n] = NULL;
	ck_assert_int_eq(cli_options_parse(CLI_CMD_RUN, false, n, env, &o, &e), -1);
	ck_assert_int_eq(e.kind, CLI_OPTERR_TOO_MANY);
	ck_assert_str_eq(e.msg, "--env: at most 64");
}
END_TEST

START_TEST(test_help_stops)
{
	struct cli_opts o;
	struct cli_opt_error e;
	char *w[] = {"exec", "-h", "--bogus", NULL};
	ck_assert_int_eq(parse(CLI_CMD_EXEC, false, w, &o, &e), 0);
	ck_assert(o.help);
	/* getopt_long's unique abbreviations, as ever: --plan is --plan-only to exec */
	char *a[] = {"exec", "--plan", "--shell", "true", NULL};
	ck_assert_int_eq(parse(CLI_CMD_EXEC, false, a, &o, &e), 0);
	ck_assert(o.plan_only);
	char *l[] = {"mcp", "--help", NULL};
	ck_assert_int_eq(parse(CLI_CMD_MCP, false, l, &o, &e), 0);
	ck_assert(o.help);
}
END_TEST

/* ---- the usage texts against the table ---------------------------------------------------- */

/* Every command main dispatches is in cli_commands, and its usage names exactly the options
 * its commands mask takes (--help aside), both ways. */
static size_t n_commands(void)
{
	size_t n = 0;
	while (cli_commands[n].name)
		n++;
	return n;
}

START_TEST(test_commands_table)
{
	static const char *const names[] = {"run", "plan",   "call",	 "inspect", "exec",
					    "mcp", "policy", "backends", "version"};
	ck_assert_uint_eq(n_commands(), ARRAY_SIZE(names));
	unsigned seen = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct cli_command_info *c = cli_command_find(names[i]);
		ck_assert_msg(c != NULL, "no command %s", names[i]);
		ck_assert_msg(c->commands && !(c->commands & seen), "%s: bits", names[i]);
		seen |= c->commands;
		char want[40];
		snprintf(want, sizeof(want), "usage: govex %s", names[i]);
		ck_assert_msg(strncmp(c->usage, want, strlen(want)) == 0, "%s: usage '%.40s'",
			      names[i], c->usage);
	}
	ck_assert_ptr_null(cli_command_find("frobnicate"));
}
END_TEST

/* Whether text mentions --NAME as a whole word. */
static bool mentions(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; (p = strstr(p, "--")); p += 2)
		if (strncmp(p + 2, name, n) == 0 && !isalnum((unsigned char)p[2 + n]) &&
		    p[2 + n] != '-')
			return true;
	return false;
}

START_TEST(test_usage_documents_table)
{
	const char *text = cli_commands[_i].usage;
	unsigned cmd = cli_commands[_i].commands;
	for (size_t i = 0; i < CLI_OPT_COUNT; i++) {
		const struct cli_option *d = &cli_options[i];
		if (!(d->commands & cmd) || i == CLI_OPT_HELP)
			continue;
		if (!d->name) {
			char s[4] = {'-', d->short_name, ' ', 0};
			ck_assert_msg(strstr(text, s), "usage %d lacks -%c", cmd, d->short_name);
			continue;
		}
		ck_assert_msg(mentions(text, d->name), "usage of %s lacks --%s",
			      cli_commands[_i].name, d->name);
	}
}
END_TEST

START_TEST(test_usage_names_only_accepted)
{
	const char *text = cli_commands[_i].usage;
	for (const char *p = text; (p = strstr(p, "--")); p += 2) {
		char name[40];
		size_t n = 0;
		while (n + 1 < sizeof(name) &&
		       (isalnum((unsigned char)p[2 + n]) || p[2 + n] == '-'))
			name[n] = p[2 + n], n++;
		name[n] = '\0';
		if (!n) /* "-- ARGV" */
			continue;
		ck_assert_msg(cli_option_accepted(cli_commands[_i].commands, name),
			      "usage of %s names --%s, which the command refuses",
			      cli_commands[_i].name, name);
	}
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("parser");
	tcase_add_test(tc, test_table_well_formed);
	tcase_add_test(tc, test_run_options);
	tcase_add_test(tc, test_first_operand_ends_options);
	tcase_add_test(tc, test_call_permutes);
	tcase_add_loop_test(tc, test_foreign_option_unknown, 0, ARRAY_SIZE(foreign));
	tcase_add_test(tc, test_unknown_short_and_missing_argument);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_repeat_bounds);
	tcase_add_test(tc, test_help_stops);
	suite_add_tcase(s, tc);
	tc = tcase_create("usage");
	tcase_add_test(tc, test_commands_table);
	tcase_add_loop_test(tc, test_usage_documents_table, 0, (int)n_commands());
	tcase_add_loop_test(tc, test_usage_names_only_accepted, 0, (int)n_commands());
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(options_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
