/* SPDX-License-Identifier: MIT */
/*
 * The CLI session: what run, plan, call, inspect, exec and mcp share once their options
 * are parsed: the policy, the audit file, the probe cache directory, the approver, the
 * runtime made from them, the cancel token and the signals that cancel it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_session_init(struct cli_session *s, const struct cli_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->opts = o;
	s->audit_fd = -1;
}

static int fail(struct cli_session *s, const char *code)
{
	s->err_code = code;
	return -1;
}

int cli_session_load_policy(struct cli_session *s)
{
	const struct cli_opts *o = s->opts;
	struct govex_error ge = {0};
	if (s->policy)
		return 0;
	int r = o->policy_file
		    ? govex_policy_load(o->policy_file, &s->policy, &ge)
		    : govex_policy_preset(o->preset ? o->preset : "strict", &s->policy, &ge);
	if (r < 0) {
		snprintf(s->err, sizeof(s->err), "policy: %s", ge.message);
		return fail(s, "invalid_policy");
	}
	return 0;
}

/* GOVEX_WARM_LOG=FILE: why warm runs could not start */
static void cli_warm_log(const char *why)
{
	const char *p = getenv("GOVEX_WARM_LOG");
	if (!p || !*p)
		return;
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	dprintf(fd, "cold %s\n", why);
	close(fd);
}

int cli_session_start(struct cli_session *s, unsigned flags)
{
	const struct cli_opts *o = s->opts;
	struct govex_error ge = {0};
	if (cli_session_load_policy(s) < 0)
		return -1;
	if (o->audit_file) {
		s->audit_fd = open(o->audit_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (s->audit_fd < 0) {
			snprintf(s->err, sizeof(s->err), "audit '%s': %s", o->audit_file,
				 strerror(errno));
			return fail(s, "unwritable_audit");
		}
	}
	s->cache_dir = cli_cache_dir();
	struct govex_runtime_options ro = {
	    .audit_fd = s->audit_fd,
	    .probe_cache_dir = s->cache_dir,
	    .backend = o->backend,
	    .cgroup = getenv("GOVEX_CGROUP"),
	};
	if (o->approver) {
		ro.approve = cli_approve_command;
		ro.approve_userdata = (void *)o->approver;
	} else if (o->ask) {
		if (!cli_have_terminal()) {
			snprintf(s->err, sizeof(s->err),
				 "--ask: no terminal to ask on (/dev/tty cannot be opened: no "
				 "controlling terminal)");
			return fail(s, "no_terminal");
		}
		ro.approve = cli_approve_ask;
	}
	if (govex_runtime_new(s->policy, &ro, &s->rt, &ge) < 0) {
		snprintf(s->err, sizeof(s->err), "%s", ge.message);
		return fail(s, "invalid_runtime");
	}
	/* GOVEX_WARM=1: runs forked from warm templates even for one run (lets the escape
	 * suite run against warm runs); each template starts at the first run it serves
	 * (a one-shot command starts only the one it needs).  When they cannot start, runs
	 * are cold (the reason goes to GOVEX_WARM_LOG). */
	const char *warm = getenv("GOVEX_WARM");
	if (warm && strcmp(warm, "1") == 0 && govex__runtime_warm_lazy(s->rt, &ge) < 0)
		cli_warm_log(ge.message);
	if (flags & CLI_SESSION_CANCEL) {
		if (govex_cancel_new(&cli_cancel_token) < 0) {
			snprintf(s->err, sizeof(s->err), "out of memory");
			return fail(s, "out_of_memory");
		}
		s->cancel = cli_cancel_token;
	}
	return 0;
}

int cli_session_refuse(const struct cli_session *s)
{
	if (strcmp(s->err_code, "out_of_memory") == 0) {
		cli_error("out of memory");
		return EXIT_REFUSED;
	}
	return cli_emit_refusal(s->opts->json, GOVEX_STATUS_INVALID_INPUT, s->err_code, s->err);
}

volatile sig_atomic_t cli_caught_signal;
govex_cancel_token *cli_cancel_token;

/* govex_cancel() is async-signal-safe (one write(2)) */
static void on_signal(int sig)
{
	cli_caught_signal = sig;
	govex_cancel(cli_cancel_token);
}

void cli_session_cancel_on_signals(struct cli_session *s)
{
	(void)s;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void cli_session_close(struct cli_session *s)
{
	/* the CLI exits after this: its runs' shims, still exiting, are not waited for */
	govex__reap_leave_to_exit();
	govex_runtime_free(s->rt);
	govex_policy_free(s->policy);
	if (s->cancel)
		cli_cancel_token = govex_cancel_free(cli_cancel_token);
	if (s->audit_fd >= 0)
		close(s->audit_fd);
	free(s->cache_dir);
	memset(s, 0, sizeof(*s));
	s->audit_fd = -1;
}
