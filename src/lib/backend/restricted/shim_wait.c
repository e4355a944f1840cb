/* SPDX-License-Identifier: MIT */
/*
 * The cold shim's wait (launch.c): for the program's end, the host's kill request or the
 * end of the run's CPU budget, answering the execve listener meanwhile (execonce.c) and
 * reaping orphans; then everything left in the PID namespace killed and reaped.
 * Async-signal-safe, like the rest of the shim.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "restricted.h"

/* The shim reads the cgroup's CPU time at most this far apart when a CPU budget is
 * set, and sooner as the budget runs out: min(CPU_POLL_MAX, remaining / CPUs), so the
 * whole run overshoots the budget by about one poll (or a scheduler tick) per CPU. */
#define CPU_POLL_MAX_NS (20 * 1000 * 1000LL)
#define CPU_POLL_MIN_NS (200 * 1000LL)

/* How long the shim may sleep: forever, or until the CPU budget needs a look (every CPU
 * may burn the rest of the budget in parallel). */
static struct timespec *cpu_poll_timeout(const struct rshim_wait *w, int ncpus, struct timespec *ts)
{
	if (w->cpu_budget_ns < 0)
		return NULL;
	int64_t wait = (w->cpu_budget_ns - w->cpu_used_ns) / ncpus;
	if (wait > CPU_POLL_MAX_NS)
		wait = CPU_POLL_MAX_NS;
	if (wait < CPU_POLL_MIN_NS)
		wait = CPU_POLL_MIN_NS;
	ts->tv_sec = (time_t)(wait / 1000000000);
	ts->tv_nsec = (long)(wait % 1000000000);
	return ts;
}

/* The execve listener's traffic: its arrival, a notification, or its end.  Returns
 * false when an execve cannot be answered (the run ends there). */
static bool shim_exec_events(struct rshim_wait *w, short xrev, short lrev)
{
	if (xrev) {
		/* the listener, or the child closed its end (it failed before) */
		int lfd = rexec_receive(w->xsock);
		if (lfd >= 0)
			w->listener = lfd;
		close(w->xsock);
		w->xsock = -1;
	}
	if (lrev & POLLIN) {
		int r = rexec_answer(w->listener, w->exec_once, &w->den);
		if (r < 0)
			return false;
		if (r > 0) {
			/* enough refusals counted: the kernel refuses the rest (ENOSYS) */
			close(w->listener);
			w->listener = -1;
		}
	} else if (lrev) {
		close(w->listener); /* no task left under the filter */
		w->listener = -1;
	}
	return true;
}

/* Waits for the program's end, the host's kill request, or the end of the CPU budget;
 * reaps orphans meanwhile. */
void rshim_wait(struct rshim_wait *w, struct govex__shim_report *rep)
{
	while (!w->done) {
		struct pollfd p[4] = {{.fd = w->kill_fd, .events = POLLIN},
				      {.fd = w->sfd, .events = POLLIN},
				      {.fd = w->xsock, .events = POLLIN},
				      {.fd = w->listener, .events = POLLIN}};
		struct timespec ts;
		int n = ppoll(p, 4, cpu_poll_timeout(w, w->ncpus, &ts), NULL);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			rep->killed = 1; /* the host asked (or died) */
			break;
		}
		if (n > 0 && !shim_exec_events(w, p[2].revents, p[3].revents))
			break;
		if (n > 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(w->sfd, &si, sizeof(si)) > 0)
				;
		}
		int wst;
		pid_t got;
		while ((got = waitpid(-1, &wst, WNOHANG | __WALL)) > 0)
			if (got == w->child) {
				w->status = wst;
				w->done = true;
			}
		if (!w->done && w->cpu_budget_ns >= 0 &&
		    (w->cpu_used_ns = rcg_cpu_ns(w->cpu_fd, w->cpu_version)) >= w->cpu_budget_ns)
			break; /* the whole run's CPU budget is spent: killed below */
	}
}

/* Kills everything in the PID namespace (all but us), reaps, repeats until none is left:
 * a process forked during a round is caught by the next. */
void rshim_kill_all(struct rshim_wait *w)
{
	for (;;) {
		int wst;
		kill(-1, SIGKILL);
		pid_t got = waitpid(-1, &wst, __WALL);
		if (got == w->child && !w->done) {
			w->status = wst;
			w->done = true;
		}
		if (got < 0 && errno != EINTR)
			break;
	}
}
