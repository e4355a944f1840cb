/* SPDX-License-Identifier: MIT */
/*
 * Code that runs between fork and exec, or in the shim: only async-signal-safe calls,
 * no malloc, no stdio, no locks (the host may be multi-threaded).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *const step_names[] = {[GOVEX__STEP_NONE] = "none",
#define GOVEX__STEPNAME(id, name) [GOVEX_STEP_##id] = name,
					 GOVEX__LAUNCH_STEPS(GOVEX__STEPNAME)
#undef GOVEX__STEPNAME
};

const char *govex__step_name(enum govex__step step)
{
	if ((unsigned)step >= ARRAY_SIZE(step_names) || !step_names[step])
		return "unknown";
	return step_names[step];
}

void govex__child_fail(int errfd, enum govex__step step, int err)
{
	struct govex__child_error ce = {.step = (int32_t)step, .err = err ? err : EPERM};
	/* A pipe write of fewer than PIPE_BUF bytes is atomic. */
	ssize_t w;
	do
		w = write(errfd, &ce, sizeof(ce));
	while (w < 0 && errno == EINTR);
}

pid_t govex__clone(int flags)
{
	return (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

void govex__shim_fail(int errfd, enum govex__step step, int r)
{
	govex__child_fail(errfd, step, -r);
	_exit(127);
}

void govex__shim_report(int fd, struct govex__shim_report *rep)
{
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		rep->cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
			      (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
		rep->max_rss_kb = ru.ru_maxrss;
	}
	ssize_t w;
	do
		w = write(fd, rep, sizeof(*rep));
	while (w < 0 && errno == EINTR);
	_exit(0);
}

static void close_span(unsigned lo, unsigned hi)
{
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	/* a kernel without close_range: close one by one up to a sane bound */
	for (unsigned fd = lo; fd <= hi && fd < 65536; fd++)
		close((int)fd);
}

void govex__close_fds_except(int lowfd, const int *keep, size_t nkeep)
{
	/* Close [lowfd, max] minus keep[], as runs of close_range between kept fds.  keep
	 * need not be sorted; it is tiny, so sort it by selection here. */
	int k[16];
	size_t n = 0;
	for (size_t i = 0; i < nkeep && n < ARRAY_SIZE(k); i++)
		if (keep[i] >= lowfd)
			k[n++] = keep[i];
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (k[j] < k[i]) {
				int t = k[i];
				k[i] = k[j];
				k[j] = t;
			}
	unsigned lo = (unsigned)lowfd;
	for (size_t i = 0; i <= n; i++) {
		unsigned hi = i < n ? (unsigned)k[i] : 0U;
		if (i < n && hi < lo)
			continue;
		if (i == n || hi > lo)
			close_span(lo, i < n ? hi - 1 : ~0U);
		if (i < n)
			lo = hi + 1;
	}
}

/* Parses decimal pids from buf[0..len) and SIGKILLs each; returns how many. */
static int kill_listed(const char *buf, size_t len)
{
	int n = 0;
	long pid = 0;
	bool in = false;
	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? buf[i] : ' ';
		if (c >= '0' && c <= '9') {
			pid = pid * 10 + (c - '0');
			in = true;
		} else if (in) {
			if (pid > 1)
				kill((pid_t)pid, SIGKILL);
			n++;
			pid = 0;
			in = false;
		}
	}
	return n;
}

static size_t fmt_uint(char *out, unsigned long v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* Kills the children of this process listed by /proc/self/task/<tid>/children. */
static int kill_children(void)
{
	char path[64] = "/proc/self/task/";
	size_t n = strlen(path);
	n += fmt_uint(path + n, (unsigned long)syscall(SYS_gettid));
	memcpy(path + n, "/children", sizeof("/children"));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096];
	int killed = 0;
	ssize_t r;
	char carry[24];
	size_t nc = 0;
	/* The file may be larger than buf: keep a partial number across reads. */
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		size_t start = 0;
		if (nc) {
			while (start < (size_t)r && buf[start] >= '0' && buf[start] <= '9' &&
			       nc < sizeof(carry))
				carry[nc++] = buf[start++];
			killed += kill_listed(carry, nc);
			nc = 0;
		}
		size_t end = (size_t)r;
		while (end > start && buf[end - 1] >= '0' && buf[end - 1] <= '9')
			end--;
		killed += kill_listed(buf + start, end - start);
		for (size_t i = end; i < (size_t)r && nc < sizeof(carry); i++)
			carry[nc++] = buf[i];
	}
	if (nc)
		killed += kill_listed(carry, nc);
	close(fd);
	return killed;
}

void govex__shim_sweep(pid_t pgid)
{
	/*
	 * The shim is a child subreaper: a descendant that escapes its process group
	 * (setsid, double fork) is re-parented to the shim when its parent dies.  Kill the
	 * group, kill every child, reap one, repeat until no child is left: a grandchild
	 * orphaned by a kill becomes a child of ours and is found on the next round.
	 */
	for (;;) {
		int st;
		if (pgid > 0)
			kill(-pgid, SIGKILL);
		kill_children();
		pid_t r = waitpid(-1, &st, __WALL);
		if (r < 0 && errno == ECHILD)
			return;
		if (r < 0 && errno != EINTR)
			return;
	}
}

static bool can_raise_rlimits(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_SYS_RESOURCE / 32].effective & (1u << (CAP_SYS_RESOURCE % 32));
}

/* The hard rlimits govex__child_rlimits sets, each from its limit (0: not set). */
struct rl_use {
	const char *limit, *rlimit;
	int resource;
	uint64_t want; /* in the rlimit's units */
	uint64_t *field;
};

static size_t rl_uses(struct govex__limits *l, struct rl_use *u)
{
	size_t n = 0;
	u[n++] = (struct rl_use){"cpu_ms", "RLIMIT_CPU", RLIMIT_CPU,
				 l->cpu_ms ? (l->cpu_ms + 999) / 1000 + 1 : 0, &l->cpu_ms};
	u[n++] = (struct rl_use){"memory_bytes", "RLIMIT_AS", RLIMIT_AS, l->memory_bytes,
				 &l->memory_bytes};
	u[n++] = (struct rl_use){"file_size_bytes", "RLIMIT_FSIZE", RLIMIT_FSIZE,
				 l->file_size_bytes, &l->file_size_bytes};
	u[n++] = (struct rl_use){"open_files", "RLIMIT_NOFILE", RLIMIT_NOFILE, l->open_files,
				 &l->open_files};
	return n;
}

static bool rl_above(const struct rl_use *u, uint64_t *ret_host)
{
	struct rlimit rl;
	if (!u->want || getrlimit(u->resource, &rl) < 0 || rl.rlim_max == RLIM_INFINITY)
		return false;
	*ret_host = (uint64_t)rl.rlim_max;
	return u->want > (uint64_t)rl.rlim_max;
}

int govex__rlimits_above_host(const struct govex__limits *l, struct govex__host_rlimit *ret)
{
	struct govex__limits copy = *l;
	struct rl_use u[4];
	size_t n = rl_uses(&copy, u);
	for (size_t i = 0; i < n; i++) {
		uint64_t host;
		if (rl_above(&u[i], &host)) {
			if (can_raise_rlimits())
				return 0;
			*ret =
			    (struct govex__host_rlimit){u[i].limit, u[i].rlimit, u[i].want, host};
			return 1;
		}
	}
	return 0;
}

void govex__rlimits_clamp_to_host(struct govex__limits *l)
{
	struct rl_use u[4];
	size_t n = rl_uses(l, u);
	if (can_raise_rlimits())
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t host;
		if (rl_above(&u[i], &host))
			*u[i].field = 0;
	}
}

int govex__child_rlimits(const struct govex__limits *l, enum govex__step *ret_step)
{
	struct rlimit rl;
	/* No core dumps of the run's memory: not into its workdir, nor to a host helper a
	 * pipe core_pattern names (systemd-coredump, apport), which a limit of 0 does not
	 * stop and 1 does (the kernel's convention). */
	rl.rlim_cur = rl.rlim_max = 1;
	if (setrlimit(RLIMIT_CORE, &rl) < 0) {
		*ret_step = GOVEX_STEP_RLIMIT_CORE;
		return -errno;
	}
	/* Signals queued (and POSIX timers made) count against a per-user total: a run's
	 * share of it is bounded, whatever the caller's own limit is. */
	rl.rlim_cur = rl.rlim_max = 256;
	if (setrlimit(RLIMIT_SIGPENDING, &rl) < 0) {
		*ret_step = GOVEX_STEP_RLIMIT_SIGPENDING;
		return -errno;
	}
	if (l->cpu_ms) {
		rlim_t s = (rlim_t)((l->cpu_ms + 999) / 1000);
		/* SIGXCPU at the soft limit, SIGKILL one second later */
		rl.rlim_cur = s;
		rl.rlim_max = s + 1;
		if (setrlimit(RLIMIT_CPU, &rl) < 0) {
			*ret_step = GOVEX_STEP_RLIMIT_CPU;
			return -errno;
		}
	}
	if (l->memory_bytes) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)l->memory_bytes;
		if (setrlimit(RLIMIT_AS, &rl) < 0) {
			*ret_step = GOVEX_STEP_RLIMIT_AS;
			return -errno;
		}
	}
	if (l->file_size_bytes) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)l->file_size_bytes;
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0) {
			*ret_step = GOVEX_STEP_RLIMIT_FSIZE;
			return -errno;
		}
	}
	if (l->open_files) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)l->open_files;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			*ret_step = GOVEX_STEP_RLIMIT_NOFILE;
			return -errno;
		}
	}
	return 0;
}

int govex__child_stdio(int in, int out, int err, int extra, int *errpipe,
		       enum govex__step *ret_step)
{
	/* Move everything above 10 first, so that dup2 onto 0..3 cannot clobber a source
	 * (a host started with closed stdio gets pipes on fds 0..2). */
	int src[4] = {in, out, err, extra};
	*ret_step = GOVEX_STEP_STDIO;
	int ep = fcntl(*errpipe, F_DUPFD_CLOEXEC, 10);
	if (ep < 0)
		return -errno;
	*errpipe = ep;
	for (int i = 0; i < 4; i++) {
		if (src[i] < 0)
			continue;
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
		if (src[i] < 0)
			return -errno;
	}
	for (int i = 0; i < 4; i++) {
		if (src[i] < 0)
			continue;
		if (dup2(src[i], i) < 0) /* dup2 clears FD_CLOEXEC on the new fd */
			return -errno;
	}
	/* fd hygiene: nothing of the host's survives but stdio (and fd 3 in call mode); the
	 * error pipe is close-on-exec and reports exec failures. */
	int keep[] = {ep};
	govex__close_fds_except(extra >= 0 ? 4 : 3, keep, 1);
	return 0;
}

void govex__child_reset_signals(void)
{
	/* default dispositions and an empty mask: a host may ignore SIGPIPE or block
	 * SIGINT, and the program should see a normal process state */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}
