/* SPDX-License-Identifier: MIT */
/*
 * govex __complete: what the shell completions (completions/) offer, read from the one
 * option table the parser reads, so that they cannot drift from it.  Not a user's
 * command: `govex --help` does not list it; govex(1) FILES describes it.
 *   govex __complete commands        the commands, one a line
 *   govex __complete options [CMD]   CMD's options (without CMD: govex's own), "NAME KIND"
 *                                    a line (KIND: none, file, dir, preset, backend, text:
 *                                    what its value is)
 *   govex __complete values KIND     the words of a KIND (preset, backend), or policy's
 *                                    verbs (policy)
 *   govex __complete functions FILE  the functions of FILE (.py or .ipynb) a call can
 *                                    take, from its static inspection (never imported)
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *const value_kinds[] = {
    [CLI_VALUE_NONE] = "none",	   [CLI_VALUE_FILE] = "file",	    [CLI_VALUE_DIR] = "dir",
    [CLI_VALUE_PRESET] = "preset", [CLI_VALUE_BACKEND] = "backend", [CLI_VALUE_TEXT] = "text",
};

static void put_words(const char *const *w)
{
	for (size_t i = 0; w[i]; i++)
		puts(w[i]);
}

int cmd_complete(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "commands") == 0) {
		for (size_t i = 0; cli_commands[i].name; i++)
			puts(cli_commands[i].name);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "options") == 0) {
		puts("--help none\n-h none\n--version none");
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "functions") == 0)
		return cli_complete_functions(argv[2]);
	if (argc == 3 && strcmp(argv[1], "options") == 0) {
		const struct cli_command_info *c = cli_command_find(argv[2]);
		if (!c) {
			cli_error("__complete: unknown command '%s'", argv[2]);
			return EXIT_USAGE;
		}
		for (size_t i = 0; i < CLI_OPT_COUNT; i++) {
			const struct cli_option *d = &cli_options[i];
			if (!(d->commands & c->commands))
				continue;
			if (d->name)
				printf("--%s %s\n", d->name, value_kinds[d->value]);
			if (d->short_name)
				printf("-%c %s\n", d->short_name, value_kinds[d->value]);
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "values") == 0) {
		if (strcmp(argv[2], "preset") == 0)
			put_words(cli_presets);
		else if (strcmp(argv[2], "backend") == 0)
			put_words(cli_backends);
		else if (strcmp(argv[2], "policy") == 0)
			put_words(cli_policy_verbs);
		else {
			cli_error("__complete: unknown kind '%s'", argv[2]);
			return EXIT_USAGE;
		}
		return 0;
	}
	cli_error("__complete: give commands, options [CMD], values KIND or functions FILE");
	return EXIT_USAGE;
}
