/* SPDX-License-Identifier: MIT */
/* Pieces shared by the CLI's commands. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

const char *cli_read_error(int r)
{
	return r == -CLI_ENOTREG ? "not a regular file (a FIFO, socket or device is not read)"
				 : strerror(-r);
}

static int read_fd(int fd, size_t max, char **ret, size_t *ret_len);

int cli_read_regular(const char *path, size_t max, char **ret, size_t *ret_len)
{
	if (strcmp(path, "-") == 0)
		return cli_read_all(path, max, ret, ret_len);
	/* O_NONBLOCK: opening a FIFO nobody writes would block for ever; reading a
	 * regular file ignores it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -errno;
	int r = fstat(fd, &st) < 0     ? -errno
		: S_ISDIR(st.st_mode)  ? -EISDIR
		: !S_ISREG(st.st_mode) ? -CLI_ENOTREG
				       : 0;
	if (r < 0) {
		close(fd);
		return r;
	}
	return read_fd(fd, max, ret, ret_len);
}

int cli_read_all(const char *path, size_t max, char **ret, size_t *ret_len)
{
	int fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return read_fd(fd, max, ret, ret_len);
}

/* Reads fd to its end (at most max bytes) and closes it. */
static int read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			if (cap > max)
				break;
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > max) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* the first error writing to standard output (errno), for cli_stdout_finish */
static int stdout_errno;

int cli_write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			if (fd == 1 && !stdout_errno)
				stdout_errno = errno;
			return -errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int cli_stdout_finish(int rc)
{
	int e = stdout_errno;
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (!e)
			e = errno ? errno : EIO;
	}
	if (!e)
		return rc;
	cli_error("standard output: %s: what govex wrote there is lost%s", strerror(e),
		  e == EBADF ? " (is it closed?)" : "");
	return rc ? rc : 1;
}

/*
 * --approver COMMAND: sh -c COMMAND with the canonical plan on its stdin; exit 0
 * approves.  Its stdout goes to our stderr (stdout is reserved for the result or, in
 * govex mcp, the protocol).  The govex binary ignores SIGPIPE (main.c), so a command that
 * does not read gives EPIPE here; the command gets default dispositions and an empty
 * signal mask (govex mcp's pool threads block signals).  Thread-safe.
 */
int cli_approve_command(void *ud, const char *plan, size_t len, const char *const *perms)
{
	const char *cmd = ud;
	int in[2];
	(void)perms;
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
		cli_error("approver: cannot start /bin/sh: %s", strerror(r));
		return 0;
	}
	cli_write_all(in[1], plan, len);
	close(in[1]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool cli_have_terminal(void)
{
	/* access("/dev/tty") succeeds without a controlling terminal too: open it */
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* --ask: the plan's permissions on the terminal, y/N. */
int cli_approve_ask(void *ud, const char *plan, size_t len, const char *const *perms)
{
	(void)ud;
	FILE *tty = fopen("/dev/tty", "r+e");
	if (!tty)
		return 0;
	fprintf(tty, "govex: this run needs approval for:");
	for (size_t i = 0; perms[i]; i++)
		fprintf(tty, " %s", perms[i]);
	fprintf(tty, "\nplan: %.*s", (int)len, plan);
	fprintf(tty, "approve? [y/N] ");
	fflush(tty);
	char line[16] = "";
	bool ok = fgets(line, sizeof(line), tty) && (line[0] == 'y' || line[0] == 'Y');
	fclose(tty);
	return ok;
}

int cli_emit_refusal(bool json, enum govex_status st, const char *code, const char *msg)
{
	cli_error("%s", msg);
	if (json) {
		govex_result *r = NULL;
		if (govex_result_new_refusal(st, code, msg, &r) == 0) {
			size_t n;
			const char *js = govex_result_json(r, &n);
			cli_write_all(1, js, n);
			govex_result_free(r);
		}
	}
	return EXIT_REFUSED;
}

char *cli_cache_dir(void)
{
	const char *x = secure_getenv("XDG_CACHE_HOME");
	const char *h = secure_getenv("HOME");
	char *d = NULL;
	if (x && x[0] == '/') {
		if (asprintf(&d, "%s/govex", x) < 0)
			return NULL;
	} else if (h && h[0] == '/') {
		char *c = NULL;
		if (asprintf(&c, "%s/.cache", h) < 0)
			return NULL;
		mkdir(c, 0700);
		if (asprintf(&d, "%s/govex", c) < 0)
			d = NULL;
		free(c);
	}
	return d;
}

int cli_print_run_result(govex_result *res, bool json, bool live)
{
	const struct govex_result_view *v = govex_result_view(res);
	cli_live_finish();
	if (json) {
		cli_result_json_write(res);
	} else if (!live) {
		cli_write_all(1, v->stdout_data, v->stdout_len);
		cli_write_all(2, v->stderr_data, v->stderr_len);
	}
	if (v->status != GOVEX_STATUS_SUCCESS &&
	    !(v->status == GOVEX_STATUS_EXECUTION_FAILED && v->termination == GOVEX_TERM_EXITED)) {
		if (live)
			cli_live_end(2);
		cli_error("%s", govex_result_summary(res));
	}
	int rc = govex_result_exit_status(res);
	if (v->status == GOVEX_STATUS_CANCELLED && cli_caught_signal)
		rc = 128 + cli_caught_signal;
	return rc;
}

/*
 * What the CLI prints on a terminal from a result or an inspection: the bytes a terminal
 * acts on removed (C0 controls but \n and \t, DEL, C1 as UTF-8 C2 80-C2 9F; so ESC and
 * with it every escape sequence; and Unicode's bidirectional controls, which reorder
 * what is shown).  In JSON text (json = true) DEL, C1 and those are written as
 * \u escapes instead (the same JSON value; C0 is escaped by the JSON writer already).
 * The library cleans a worker's text already; this is the CLI's own wall.  NULL on ENOMEM.
 */
/* The code point of a Unicode bidirectional control encoded at p (U+061C, U+200E,
 * U+200F, U+202A-U+202E, U+2066-U+2069), or 0. */
static unsigned bidi_control(const unsigned char *p)
{
	if (p[0] == 0xd8 && p[1] == 0x9c)
		return 0x061c;
	if (p[0] != 0xe2 || !p[1] || !p[2])
		return 0;
	unsigned cp = ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu) | 0x2000u;
	if ((p[1] == 0x80 && (cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e))) ||
	    (p[1] == 0x81 && cp >= 0x2066 && cp <= 0x2069))
		return cp;
	return 0;
}

char *cli_terminal_safe(const char *s, bool json)
{
	size_t n = strlen(s);
	char *t = malloc(json ? 6 * n + 1 : n + 1);
	if (!t)
		return NULL;
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool c1 = *p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
		unsigned bidi = bidi_control(p);
		if (json && (*p == 0x7f || c1 || bidi)) {
			snprintf(t + o, 7, "\\u%04x", bidi ? bidi : c1 ? (unsigned)p[1] : 0x7fu);
			o += 6;
		} else if (!json &&
			   ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || c1 || bidi)) {
			/* dropped */
		} else {
			t[o++] = (char)*p;
			continue;
		}
		if (c1)
			p++;
		else if (bidi)
			p += bidi == 0x061c ? 1 : 2;
	}
	t[o] = '\0';
	return t;
}

void cli_error_safe(const char *s)
{
	char *t = cli_terminal_safe(s ? s : "", false);
	cli_error("%s", t ? t : "(message not shown)");
	free(t);
}
