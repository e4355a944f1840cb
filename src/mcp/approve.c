/* SPDX-License-Identifier: MIT */
/* --approver COMMAND: the same contract as `govex run --approver`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcp.h"

extern char **environ;

/*
 * sh -c COMMAND with the canonical plan on its stdin; exit 0 approves.  Its stdout goes to
 * our stderr: stdout carries the protocol only.  Runs on the call's thread, so concurrent
 * calls ask concurrently.  The server ignores SIGPIPE and its pool threads block signals:
 * the command gets default dispositions and an empty mask back.
 */
int mcp_approve_command(void *userdata, const char *plan, size_t len,
			const char *const *permissions)
{
	const char *cmd = userdata;
	int in[2];
	(void)permissions;
	if (pipe2(in, O_CLOEXEC) < 0)
		return 0;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	posix_spawnattr_init(&at);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	pid_t pid;
	int r = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(in[0]);
	if (r != 0) {
		close(in[1]);
		mcp_log("approver: cannot start /bin/sh: %s", strerror(r));
		return 0;
	}
	/* SIGPIPE is ignored process-wide: a command that does not read gives EPIPE here */
	const char *p = plan;
	size_t n = len;
	while (n) {
		ssize_t w = write(in[1], p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		p += w;
		n -= (size_t)w;
	}
	close(in[1]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return 0;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
