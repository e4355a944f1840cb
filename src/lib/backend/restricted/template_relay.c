/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: the relay (template.c).  The host clones it instead of a cold run's shim;
 * it hands the run's descriptors to the template over its control socket (SCM_RIGHTS),
 * places the run's files in its workdir and collects its outputs (files.c, the cold
 * shim's functions, on the workdir's descriptor the run's init sends back; a run with
 * outputs and no file in has its output directory made by its init), and watches the
 * run's init.  Async-signal-safe after the clone, like the cold shim.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "files.h"
#include "restricted.h"

/* ---- the relay: hands the run's descriptors to the template (async-signal-safe) ------ */

struct relay {
	int ctl, spec;
	struct govex__pipes *f;
	const struct rwarm_run *r;
};

/*
 * After the hand-over the relay watches the run's init (B, PID 1 of the run's PID
 * namespace), whose pidfd comes back on sock: it exits when B does.  When the host asks
 * for the end (the kill pipe closes) and B has not ended RELAY_GRACE_MS later, the relay
 * SIGKILLs it -- which ends the run's whole PID namespace -- as the supervisor's last
 * resort (kill the shim, KILL_GRACE_NS later) does for a cold run; that one reaches only
 * this relay.  Holds nothing else of the host.
 */
#define RELAY_GRACE_MS 5000
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
/* Receives one message with at most one descriptor on sock: the descriptor (or -1), the
 * byte in *ret_b (0 at EOF). */
static int recv_fd(int sock, char *ret_b)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	*ret_b = 0;
	struct iovec iov = {.iov_base = ret_b, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * Files in: the run's first process (A, in the run's mount namespace, its workdir tmpfs
 * mounted and nothing of the run started) sends the workdir's descriptor; the files are
 * written there (and the output directory made for the run's ids) as the cold shim does,
 * then A is told to go on (it binds each file read-only onto itself).  A failure is the
 * launch's (step workdir), as cold.  Returns the workdir's descriptor.
 */
static int relay_files_in(const struct relay *rl, int sock, int ce)
{
	const struct govex__launch *l = rl->r->l;
	char b;
	int wdfd = recv_fd(sock, &b);
	if (wdfd < 0 || b != 'W')
		_exit(0); /* the run failed before (its error pipe says so) */
	int r = govex__files_place(wdfd, NULL, l->files, l->n_files, l->outputs, rl->r->uid,
				   rl->r->gid, false);
	if (r < 0)
		govex__shim_fail(ce, GOVEX_STEP_WORKDIR, r);
	ssize_t w;
	do
		w = send(sock, "G", 1, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return wdfd;
}

static __attribute__((noreturn)) void relay_watch(const struct relay *rl, int sock)
{
	const struct govex__launch *l = rl->r->l;
	int kill_fd = rl->f->kill[0], ce = rl->f->ce[1];
	bool files = l->n_files;
	int keep[] = {sock, kill_fd, files ? ce : -1, l->outputs ? l->out_fd : -1};
	govex__close_fds_except(3, keep, ARRAY_SIZE(keep));
	int wdfd = -1;
	char b;
	if (files) {
		wdfd = relay_files_in(rl, sock, ce);
		close(ce);
	} else if (l->outputs) {
		/* outputs only: the run's init made the output directory (zygote.py,
		 * _Run.output_dir) and sends the workdir one-way */
		wdfd = recv_fd(sock, &b);
		if (wdfd < 0 || b != 'O')
			_exit(0); /* the run failed before (its error pipe says so) */
	}
	int pidfd = recv_fd(sock, &b);
	if (pidfd < 0)
		_exit(0); /* no init (the run failed before it; the error pipe says so) */
	/* the init's end of sock closes once its report is written (every process of the
	 * run killed and reaped): the run is over without waiting for the init's own exit
	 * (the teardown of the run's namespaces); or the init is gone */
	struct pollfd p[3] = {{.fd = pidfd, .events = POLLIN},
			      {.fd = sock, .events = POLLIN},
			      {.fd = kill_fd, .events = POLLIN}};
	bool asked = false;
	for (;;) {
		int r = poll(p, asked ? 2 : 3, asked ? RELAY_GRACE_MS : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && (p[0].revents || p[1].revents)))
			break;
		if (r == 0) {
			/* asked for the end RELAY_GRACE_MS ago: the last resort */
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			asked = false;
			p[2].fd = -1;
			continue;
		}
		if (p[2].revents) {
			/* the end is asked for (or the host closed its end) */
			asked = true;
			p[2].fd = -1;
		}
	}
	/* the run's init is gone: it killed and reaped every process of the run first */
	rfiles_out(rl->r->l, wdfd);
	_exit(0);
}

static __attribute__((noreturn)) void relay(void *ctx)
{
	struct relay *rl = ctx;
	const struct govex__pipes *f = rl->f;
	int fds[16];
	size_t n = 0;
	int fixed[] = {rl->spec, f->in[0], f->out[1], f->err[1], f->ce[1], f->rep[1], f->kill[0]};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		fds[n++] = fixed[i];
	for (int i = 0; i < RCG_N; i++)
		if (rl->r->cg->procs_fd[i] >= 0)
			fds[n++] = rl->r->cg->procs_fd[i];
	if (rl->r->cg->cpu_fd >= 0)
		fds[n++] = rl->r->cg->cpu_fd;
	if (rl->r->l->extra_fd >= 0)
		fds[n++] = rl->r->l->extra_fd;
	/* last: the run's init sends its pidfd back on this (relay_watch) */
	int bp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bp) < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_SOCKETPAIR, -errno);
	fds[n++] = bp[1];
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = (void *)"R", .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	ssize_t w;
	do
		w = sendmsg(rl->ctl, &msg, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_SHIM, -errno);
	close(bp[1]);
	relay_watch(rl, bp[0]);
}

/* the launch's own hooks, through the relay's context */
static void relay_after_fork(void *ctx)
{
	const struct relay *rl = ctx;
	if (rl->r->after_fork)
		rl->r->after_fork(rl->r->ctx);
}

static void relay_amend(void *ctx, struct govex__shim_report *rep)
{
	const struct relay *rl = ctx;
	if (rl->r->amend)
		rl->r->amend(rl->r->ctx, rep);
}

int rwarm_relay_run(int ctl, int spec, const struct rwarm_run *r, struct govex__pipes *f,
		    struct govex__outcome *o, struct govex_error *err)
{
	struct relay rl = {.ctl = ctl, .spec = spec, .f = f, .r = r};
	const struct govex__shim_ops ops = {
	    .clone_flags = 0,
	    .fork_step = GOVEX_STEP_FORK,
	    .shim = relay,
	    .after_fork = relay_after_fork,
	    .amend = relay_amend,
	};
	return govex__run_shim(r->l, f, &ops, &rl, o, err);
}
