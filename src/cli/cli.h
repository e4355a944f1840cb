/* SPDX-License-Identifier: MIT */
/* The govex command line: a thin client of libgovex (include/govex.h only). */
#ifndef GOVEX_CLI_H
#define GOVEX_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "govex.h"
#include "options.h"

int cmd_run(int argc, char **argv, bool plan_only);
int cmd_policy(int argc, char **argv);
int cmd_backends(int argc, char **argv);

/* session.c: the signal that cancelled the session's runs (0: none), and their token */
#include <signal.h>
extern volatile sig_atomic_t cli_caught_signal;
extern govex_cancel_token *cli_cancel_token;

/* common.c */
/* Reads a whole file ("-": stdin) of at most max bytes; -errno on failure. */
int cli_read_all(const char *path, size_t max, char **ret, size_t *ret_len);
/* The same for a file that must be regular (a policy, a plan): a FIFO, socket or device
 * is refused at once (-CLI_ENOTREG) instead of blocking in open(); "-" is stdin still. */
int cli_read_regular(const char *path, size_t max, char **ret, size_t *ret_len);
#define CLI_ENOTREG 4095
/* strerror(-r), or what CLI_ENOTREG means */
const char *cli_read_error(int r);
int cli_write_all(int fd, const char *s, size_t n);
/* At the end of a command: flushes stdout; when that or any cli_write_all() to fd 1
 * failed (a full disk, a closed stdout), says so on stderr and returns rc, or 1 when rc
 * is 0: a result nobody received is never a success. */
int cli_stdout_finish(int rc);
/* s without what a terminal acts on (C0 but \n \t, DEL, C1); json: DEL and C1 as \u
 * escapes instead.  Caller frees; NULL on ENOMEM. */
char *cli_terminal_safe(const char *s, bool json);
/* cli_error("%s", s) with s made terminal-safe. */
void cli_error_safe(const char *s);
/* Approvers: an external command (userdata: the command) or the terminal. */
int cli_approve_command(void *ud, const char *plan, size_t len, const char *const *perms);
int cli_approve_ask(void *ud, const char *plan, size_t len, const char *const *perms);
/* Whether --ask has a terminal to ask on: /dev/tty opens (a controlling terminal). */
bool cli_have_terminal(void);
/* Prints msg on stderr and, with json, a refusal result on stdout; returns 125. */
int cli_emit_refusal(bool json, enum govex_status st, const char *code, const char *msg);
/* $XDG_CACHE_HOME/govex or ~/.cache/govex (for the interpreter probe cache), or NULL. */
char *cli_cache_dir(void);
/*
 * One command's session (session.c): the policy, the audit fd, the probe cache
 * directory, the approver (--approver or --ask), the runtime made from them and the
 * cancel token that SIGINT, SIGTERM and SIGHUP cancel.  Run, plan, call, inspect, exec
 * and mcp each make one from their parsed options.
 */
struct cli_session {
	const struct cli_opts *opts; /* borrowed */
	govex_policy *policy;
	govex_runtime *rt;
	int audit_fd;
	char *cache_dir;
	govex_cancel_token *cancel; /* CLI_SESSION_CANCEL: cli_cancel_token */
	const char *err_code;	    /* after a failure: the refusal's code */
	char err[600];		    /* and its message */
};
#define CLI_SESSION_CANCEL 1u /* make the cancel token */
void cli_session_init(struct cli_session *s, const struct cli_opts *o);
/* Loads the policy (file or preset; default strict) unless loaded.  0, or -1 with err. */
int cli_session_load_policy(struct cli_session *s);
/* The policy, the audit file, the approver, the runtime and, with CLI_SESSION_CANCEL,
 * the cancel token.  0, or -1 with err_code and err set. */
int cli_session_start(struct cli_session *s, unsigned flags);
/* The library's govex_runtime_warm without starting templates now (each starts at the
 * first run it serves): for GOVEX_WARM=1 on one-shot commands.  Internal to libgovex
 * (src/lib/runtime.c); the CLI links the library statically. */
int govex__runtime_warm_lazy(govex_runtime *rt, struct govex_error *err);
/* For a process about to exit: the runs' shims that reported and are still exiting are
 * not waited for by govex_runtime_free (init reaps them).  Internal to libgovex
 * (src/lib/supervise.c). */
void govex__reap_leave_to_exit(void);
/* The failure as a refusal (cli_emit_refusal, --json honoured); returns 125. */
int cli_session_refuse(const struct cli_session *s);
/* From now on SIGINT, SIGTERM and SIGHUP cancel the session's runs. */
void cli_session_cancel_on_signals(struct cli_session *s);
void cli_session_close(struct cli_session *s);
/* Prints a run's result (--json document, or the program's output unless live already
 * showed it) and returns the exit status: the program's own, 124, 125 or 128+N. */
int cli_print_run_result(govex_result *res, bool json, bool live);

/* ---- files in and out, live output (files.c) ---- */
struct cli_files {
	struct govex_file files[CLI_FILES_MAX];
	char *names[CLI_FILES_MAX];
	char *data[CLI_FILES_MAX];
	size_t n;
};
/* Reads each --file NAME=PATH (regular files only, never blocking on a FIFO, nothing
 * read past the policy's limits.files_in_bytes); 0, or the refusal emitted and 125. */
int cli_files_read(const struct cli_opts *a, const govex_policy *policy, struct cli_files *f);
void cli_files_free(struct cli_files *f);
/* --output-dir DIR exists and is a directory: 0, or the refusal emitted and 125. */
int cli_output_dir_check(const struct cli_opts *a);
/* Copies the result's files into --output-dir as new entries (never overwriting, never
 * through a symlink); 0, or 125 with each file refused recorded (see below). */
int cli_output_dir_write(const struct cli_opts *a, govex_result *res);
/* The refused copies' messages on stderr (after the result is printed). */
void cli_output_dir_messages(void);
/* The result document on stdout. */
void cli_result_json_write(const govex_result *res);
/* The live output callback: on a terminal (stdout or stderr) without --json, else NULL. */
govex_output_fn cli_live_output(const struct cli_opts *a);
/* Once the run is over: waits until the live output queued is written. */
void cli_live_finish(void);
/* Before govex prints its own text on fd after live output on a terminal: the live
 * output written (cli_live_finish), then ends what the run's bytes may have left open
 * (string terminator, SGR reset, a new line). */
void cli_live_end(int fd);
int cmd_exec(int argc, char **argv);
int cmd_mcp(int argc, char **argv); /* cmd_mcp.c */

int cmd_call(int argc, char **argv, bool plan_only);
/* FILE.py:FUNCTION or FILE.ipynb:FUNCTION */
bool cli_is_call_target(const char *s);
int cmd_inspect(int argc, char **argv);
/* Prints the names of FILE's functions a call can take, one a line, from its inspection
 * (static: the file is parsed, never imported); 0, or a refusal's exit status, silently. */
int cli_complete_functions(const char *file);
/* govex __complete, for the shell completions (cmd_complete.c) */
int cmd_complete(int argc, char **argv);

/* Prints "govex: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define EXIT_REFUSED 125
#define EXIT_USAGE   2

#endif
