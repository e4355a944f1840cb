/* SPDX-License-Identifier: MIT */
/*
 * The command line's one option table and its one parser (options.c), apart from the
 * commands so that it can be unit-tested (tests/unit/test_options.c).  Each command
 * accepts the subset of the table whose commands mask names it; the parser checks
 * values (--timeout-ms, --env, --max-concurrent) and reports what went wrong as data, so
 * that each command words its refusal as it always has.
 */
#ifndef GOVEX_CLI_OPTIONS_H
#define GOVEX_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* The commands, as bits of an option's commands mask.  plan is two: the plan of a run and
 * the plan of a call (plan FILE:FUNCTION) take different options. */
enum cli_command {
	CLI_CMD_RUN = 1u << 0,
	CLI_CMD_PLAN = 1u << 1, /* plan of a run */
	CLI_CMD_CALL = 1u << 2,
	CLI_CMD_PLAN_CALL = 1u << 3, /* plan FILE:FUNCTION */
	CLI_CMD_INSPECT = 1u << 4,
	CLI_CMD_EXEC = 1u << 5,
	CLI_CMD_MCP = 1u << 6,
	CLI_CMD_POLICY = 1u << 7,
	CLI_CMD_BACKENDS = 1u << 8,
	CLI_CMD_VERSION = 1u << 9,
};

enum cli_option_id {
	CLI_OPT_POLICY,
	CLI_OPT_PRESET,
	CLI_OPT_JSON,
	CLI_OPT_TIMEOUT_MS,
	CLI_OPT_STDIN,
	CLI_OPT_BACKEND,
	CLI_OPT_ENV,
	CLI_OPT_AUDIT,
	CLI_OPT_APPROVER,
	CLI_OPT_ASK,
	CLI_OPT_PLAN,
	CLI_OPT_CODE,
	CLI_OPT_ARGS,
	CLI_OPT_ARGS_FILE,
	CLI_OPT_SHELL,
	CLI_OPT_PLAN_ONLY,
	CLI_OPT_MODULE,
	CLI_OPT_MAX_CONCURRENT,
	CLI_OPT_HELP,
	CLI_OPT_FILE,
	CLI_OPT_OUTPUT_DIR,
	CLI_OPT_HTTP,
	CLI_OPT_TOKEN_FILE,
	CLI_OPT_ALLOW_ORIGIN,
	CLI_OPT_MAX_CONNECTIONS,
	CLI_OPT_RATE,
	CLI_OPT_DRAIN_TIMEOUT,
	CLI_OPT_MAX_QUEUED,
	CLI_OPT_QUEUE_TIMEOUT,
	CLI_OPT_CLIENT_TOKENS,
	CLI_OPT_COUNT
};

/* Where an option's value goes in struct cli_opts. */
enum cli_option_store {
	CLI_STORE_STRING, /* the argument, at offset (a const char *) */
	CLI_STORE_FLAG,	  /* true, at offset (a bool) */
	CLI_STORE_CHECKED /* checked and stored by the parser's own code */
};

/* What an option's argument is, for the shell completions (govex __complete). */
enum cli_value {
	CLI_VALUE_NONE,	   /* no argument */
	CLI_VALUE_FILE,	   /* a file name */
	CLI_VALUE_DIR,	   /* a directory */
	CLI_VALUE_PRESET,  /* one of cli_presets */
	CLI_VALUE_BACKEND, /* one of cli_backends */
	CLI_VALUE_TEXT,	   /* anything else: nothing to complete */
};

struct cli_option {
	const char *name;  /* long name, without "--"; NULL: short only */
	char short_name;   /* 0: long only */
	bool has_arg;	   /* a required argument */
	unsigned commands; /* enum cli_command bits that accept it */
	enum cli_option_store store;
	size_t offset; /* in struct cli_opts */
	enum cli_value value;
	const char *help; /* one line, for the reader of the table */
};

/* Indexed by enum cli_option_id. */
extern const struct cli_option cli_options[CLI_OPT_COUNT];

/* The commands main dispatches, each with the enum cli_command bits whose options it
 * takes and its usage (what `govex NAME --help` prints); NULL-terminated. */
struct cli_command_info {
	const char *name;
	unsigned commands;
	const char *usage;
};
extern const struct cli_command_info cli_commands[];
/* The command named name, or NULL. */
const struct cli_command_info *cli_command_find(const char *name);

/* The built-in presets, the backends and govex policy's verbs, NULL-terminated (the
 * completions offer them; cmd_policy takes exactly the verbs). */
extern const char *const cli_presets[], *const cli_backends[], *const cli_policy_verbs[];

#define CLI_ENV_MAX	       64
#define CLI_FILES_MAX	       256
#define CLI_MODULES_MAX	       64
#define CLI_MAX_CONCURRENT_MAX 256
#define CLI_ORIGINS_MAX	       16

/* What a command line said.  Strings are borrowed from argv. */
struct cli_opts {
	const char *policy_file, *preset, *backend, *audit_file, *approver;
	const char *stdin_file, *code, *plan_file, *args, *args_file, *shell;
	bool json, ask, plan_only, help;
	unsigned long long timeout_ms;	  /* 0 = the policy's */
	const char *env[CLI_ENV_MAX + 1]; /* NAME=VALUE, NULL-terminated */
	size_t n_env;
	const char *modules[CLI_MODULES_MAX];
	size_t n_modules;
	unsigned max_concurrent;	      /* 0 = not given */
	const char *files[CLI_FILES_MAX + 1]; /* --file NAME=PATH, NULL-terminated */
	size_t n_files;
	const char *output_dir;
	/* govex mcp --http */
	const char *http, *token_file, *client_tokens;
	const char *origins[CLI_ORIGINS_MAX];
	size_t n_origins;
	unsigned max_connections, rate, drain_timeout_s; /* 0 = not given (drain: see _set) */
	bool drain_timeout_set;
	unsigned max_queued, queue_timeout_s; /* govex mcp's queue; 0 = not given */
	char **operands;		      /* what follows the options (argv order) */
	int n_operands;
};

enum cli_opt_error_kind {
	CLI_OPTERR_NONE,
	CLI_OPTERR_UNKNOWN,   /* an unknown option, or one missing its argument */
	CLI_OPTERR_BAD_VALUE, /* msg says why */
	CLI_OPTERR_TOO_MANY,  /* a repeatable option past its bound */
};

struct cli_opt_error {
	enum cli_opt_error_kind kind;
	int option;	 /* enum cli_option_id, -1 for CLI_OPTERR_UNKNOWN */
	const char *arg; /* the word at fault (borrowed from argv) */
	int short_name;	 /* CLI_OPTERR_UNKNOWN: the short option at fault, or 0 */
	char msg[300];	 /* CLI_OPTERR_BAD_VALUE and TOO_MANY: "--opt: ..." */
};

/*
 * Parses argv (argv[0] is the command's name) with the options of cmd.  --help stops
 * the parse (ret->help).  permute: options may follow operands (call's FILE:FUNCTION);
 * else the first operand ends the options, so a file named like an option is taken
 * literally.  Returns 0, or -1 with err filled.  Not thread-safe (getopt_long).
 */
int cli_options_parse(unsigned cmd, bool permute, int argc, char **argv, struct cli_opts *ret,
		      struct cli_opt_error *err);

/* Whether cmd accepts the long option NAME (without "--"). */
bool cli_option_accepted(unsigned cmd, const char *name);

/* A positive integer option value (--timeout-ms); -1 with a message naming opt. */
int cli_parse_ms(const char *opt, const char *arg, unsigned long long *ret, char *err,
		 size_t errlen);

/* Each command's usage text; the unit test checks each against the table both ways. */
extern const char cli_usage_run[], cli_usage_plan[], cli_usage_call[], cli_usage_inspect[],
    cli_usage_exec[], cli_usage_mcp[], cli_usage_policy[], cli_usage_backends[],
    cli_usage_version[];

#endif
