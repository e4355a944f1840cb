/* SPDX-License-Identifier: MIT */
/*
 * govex.controlled/v1: a bounded plain subprocess for trusted code.  Not a sandbox.
 *
 * Process layout:
 *
 *   host (govex_runtime_run)          supervise.c: pipes, deadline, cancel
 *     └─ shim (fork, no exec)         own process group, PR_SET_CHILD_SUBREAPER
 *          └─ program (fork + exec)   own process group, rlimits, clean fds and env
 *
 * The shim exists so that no descendant outlives the run without changing the host
 * process's own semantics (the host does not become a subreaper): a descendant that
 * calls setsid() and double-forks is re-parented to the shim, which kills and reaps the
 * whole tree when the program exits or when the host asks (by closing the kill pipe;
 * the host dying closes it too).  Between fork and exec only async-signal-safe calls.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../internal.h"

static void controlled_probe(const struct govex_runtime_options *opts, struct govex__report *r)
{
	(void)opts;
	memset(r, 0, sizeof(*r));
	r->available = true;
	r->enforced = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) |
		      CTL(FRESH_WORKDIR) | CTL(FD_HYGIENE) | CTL(MEMORY_PER_PROCESS) |
		      CTL(CPU_TIME_PER_PROCESS) | CTL(OPEN_FILES_PER_PROCESS) |
		      CTL(FILE_SIZE_PER_PROCESS);
	/* The shim needs PR_SET_CHILD_SUBREAPER (Linux 3.4) and, to find the descendants
	 * re-parented to it, /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN): without
	 * it a daemon that escaped the group could not be found. */
	int sub = 0;
	char children[64];
	snprintf(children, sizeof(children), "/proc/self/task/%d/children", (int)gettid());
	const char *why = NULL;
	int e = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, &sub, 0, 0, 0) < 0)
		why = "no child subreaper", e = errno;
	else if (access(children, R_OK) < 0)
		why = "no /proc/<pid>/task/<tid>/children", e = errno;
	if (!why) {
		r->enforced |= CTL(PROCESS_TREE_KILL);
	} else {
		struct govex__unavailable *u = &r->unavailable[r->n_unavailable++];
		u->control = GOVEX_CTL_PROCESS_TREE_KILL;
		snprintf(u->reason, sizeof(u->reason), "%s: %s", why, strerror(e));
	}
	static const struct {
		enum govex__control c;
		const char *why;
	} none[] = {
	    {GOVEX_CTL_NETWORK_DENY, "a plain subprocess has the host's network"},
	    {GOVEX_CTL_NETWORK_ALLOWLIST, "a plain subprocess has the host's network"},
	    {GOVEX_CTL_FS_READ_ALLOWLIST, "a plain subprocess reads what the user can"},
	    {GOVEX_CTL_FS_WRITE_ALLOWLIST, "a plain subprocess writes what the user can"},
	    {GOVEX_CTL_SUBPROCESS_DENY, "a plain subprocess may start processes"},
	    {GOVEX_CTL_MEMORY_AGGREGATE, "rlimits are per process, not per run"},
	    {GOVEX_CTL_CPU_TIME_AGGREGATE, "rlimits are per process, not per run"},
	    {GOVEX_CTL_PIDS_AGGREGATE, "no process-count limit without a cgroup"},
	    {GOVEX_CTL_SYSCALL_FILTER, "no seccomp filter in this backend"},
	    {GOVEX_CTL_NO_NEW_PRIVILEGES, "setuid programs keep their privileges"},
	    {GOVEX_CTL_LANDLOCK, "no Landlock ruleset in this backend"},
	    {GOVEX_CTL_FS_DENY, "a plain subprocess sees every path the user can"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
		struct govex__unavailable *u = &r->unavailable[r->n_unavailable++];
		u->control = none[i].c;
		snprintf(u->reason, sizeof(u->reason), "%s", none[i].why);
	}
}

struct run_ctx {
	const struct govex__launch *l;
	struct govex__pipes f;
};

/* The program child's steps up to execve: 0 or -errno with *step set. */
static int program_setup(const struct govex__launch *l, const struct govex__pipes *f, int *ce,
			 enum govex__step *step)
{
	int r;
	*step = GOVEX_STEP_SETPGID;
	if ((r = govex__neg_errno(setpgid(0, 0))) < 0)
		return r;
	if ((r = govex__child_stdio(f->in[0], f->out[1], f->err[1], l->extra_fd, ce, step)) < 0)
		return r;
	*step = GOVEX_STEP_CHDIR;
	if ((r = govex__neg_errno(chdir(l->workdir))) < 0)
		return r;
	if ((r = govex__child_rlimits(l->limits, step)) < 0)
		return r;
	govex__child_reset_signals();
	return 0;
}

static __attribute__((noreturn)) void program_child(const struct govex__launch *l,
						    const struct govex__pipes *f)
{
	enum govex__step step = GOVEX_STEP_SETPGID;
	int ce = f->ce[1];
	int r = program_setup(l, f, &ce, &step);
	if (r >= 0) {
		step = GOVEX_STEP_EXECVE;
		r = govex__neg_errno(execve(govex__launch_exe(l), l->argv, l->envp));
	}
	govex__child_fail(ce, step, -r);
	_exit(127);
}

/* Waits for the program's end or the host's kill request (then kills the program's
 * group); returns the program's wait status.  SIGCHLD through sfd (a signalfd, or -1:
 * then polled). */
static int shim_wait(pid_t child, int kill_fd, int sfd, struct govex__shim_report *rep)
{
	struct rusage ru;
	int st = 0;
	pid_t got = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = kill_fd, .events = POLLIN},
				      {.fd = sfd, .events = POLLIN}};
		int n = poll(p, sfd >= 0 ? 2 : 1, sfd >= 0 ? -1 : 50);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
		got = wait4(child, &st, WNOHANG | __WALL, &ru);
		if (got == child)
			break; /* the program ended by itself */
		if (n < 0 || (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))) {
			/* the host asked (or died): kill the program's group */
			rep->killed = 1;
			kill(-child, SIGKILL);
			kill(child, SIGKILL);
			break;
		}
	}
	while (got != child) {
		got = wait4(child, &st, __WALL, &ru);
		if (got < 0 && errno != EINTR)
			break;
	}
	return st;
}

static __attribute__((noreturn)) void shim(void *ctx)
{
	const struct run_ctx *c = ctx;
	const struct govex__launch *l = c->l;
	const struct govex__pipes *f = &c->f;
	struct govex__shim_report rep;
	memset(&rep, 0, sizeof(rep));
	/* First drop every host descriptor we did not make for this run: in a
	 * multi-threaded host, another run's pipes must not be held open by us. */
	{
		int keep[] = {f->in[0],	 f->out[1],  f->err[1],	 f->ce[1],
			      f->rep[1], f->kill[0], l->extra_fd};
		govex__close_fds_except(3, keep, ARRAY_SIZE(keep) - (l->extra_fd < 0));
	}
	/* The host's signal handlers are no business of the shim's. */
	govex__child_reset_signals();
	/* Own group: a terminal's SIGINT to the host's group must not kill the shim and
	 * orphan the program. */
	setpgid(0, 0);
	int r = govex__neg_errno(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	if (r < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_SUBREAPER, r);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	/* vfork: the program child only makes async-signal-safe calls and then execs or
	 * _exits, and the shim waits for that anyway; it saves copying the page tables. */
	pid_t child = vfork();
	if (child < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_FORK, -errno);
	if (child == 0)
		program_child(l, f);
	setpgid(child, child); /* also done by the child: no race on who is first */
	close(f->in[0]);
	close(f->out[1]);
	close(f->err[1]);
	close(f->ce[1]);
	if (l->extra_fd >= 0)
		close(l->extra_fd);

	/* SIGCHLD through a signalfd (blocked before the vfork; the program unblocks it
	 * before exec). */
	rep.wait_status = shim_wait(child, f->kill[0], sfd, &rep);
	govex__shim_sweep(child);
	govex__shim_report(f->rep[1], &rep);
}

static const struct govex__shim_ops controlled_shim = {
    .clone_flags = 0,
    .fork_step = GOVEX_STEP_FORK,
    .shim = shim,
};

static int controlled_run(void *state, const struct govex__launch *l, struct govex__outcome *o,
			  struct govex_error *err)
{
	(void)state;
	struct run_ctx c = {.l = l};
	return govex__run_shim(l, &c.f, &controlled_shim, &c, o, err);
}

const struct govex__backend_ops govex__controlled_backend = {
    .name = "controlled",
    .version = "govex.controlled/v1",
    .probe = controlled_probe,
    .prepare = NULL,
    .release = NULL,
    .run = controlled_run,
};
