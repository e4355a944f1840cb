/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: the relay (template.c), done by the host's thread that runs the warm run:
 * no process is made on the host per warm run (a relay process cloned per run, its page
 * tables copied, the copy-on-write faults after it and its exit, was about half of the
 * host's CPU per warm run: 1.5 ms against 0.75 ms measured without it).  In place of
 * a shim's clone (govex__shim_ops.launch) the thread hands the run's descriptors to the
 * template over its control socket (SCM_RIGHTS), places the run's files in the workdir
 * whose descriptor the run's init sends back (files.c, the cold shim's functions) and
 * lets the init go on; then supervise.c supervises the run as a cold one, and once the
 * init reported (every process of the run killed and reaped) the outputs are collected
 * from the workdir (a run with outputs and no file in has its output directory made by
 * its init, which sends the workdir one-way).  Nothing here waits past the run's wall
 * deadline; the messages and their order are the relay process's (zyg.c reads
 * them).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "restricted.h"

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
/* The last resort (supervise.c: the run's init has not reported KILL_GRACE after the
 * kill request): the init SIGKILLed through its pidfd, which ends the run's whole PID
 * namespace; waited for (its pidfd readable once the namespace's processes are gone)
 * this long at most before the run's cgroups are removed. */
#define LAST_RESORT_WAIT_MS 2000

struct relay {
	int ctl, spec; /* (a spare's run: no ctl; spec is the go's) */
	struct govex__pipes *f;
	const struct rwarm_run *r;
	/* the host's end of the watch socket (the init's end went with the "R" message),
	 * the workdir and the init's pidfd once the init sent them, or -1 */
	int watch, wdfd, pidfd;
	bool reported; /* the init's report came (amend): every process of the run is gone */
};

int rwarm_recv_fd(int sock, char *ret_b)
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
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Waits until sock is readable (or at its end), the deadline passes or cancel_fd is
 * readable: 1 readable (even past the deadline, when it already is), 0 not (deadline or
 * cancellation), -errno. */
static int wait_watch(int sock, uint64_t deadline_ns, int cancel_fd)
{
	struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = cancel_fd, .events = POLLIN}};
	for (;;) {
		uint64_t now = govex__now_ns();
		uint64_t left = now >= deadline_ns ? 0 : deadline_ns - now;
		struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ULL),
				      .tv_nsec = (long)(left % 1000000000ULL)};
		int n = ppoll(p, cancel_fd >= 0 ? 2 : 1, &ts, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (p[0].revents)
			return 1;
		if (n > 0 || left == 0)
			return 0;
	}
}

/* Takes what the init sent that was not waited for (an outputs-only run's 'O' with the
 * workdir, the 'p' with its pidfd), without waiting; anything else is dropped. */
static void relay_take(struct relay *rl)
{
	const struct govex__launch *l = rl->r->l;
	for (;;) {
		char b;
		int fd = rwarm_recv_fd(rl->watch, &b);
		if (b == 0)
			return; /* nothing (more) yet, or the init's end is closed */
		if (fd >= 0 && b == 'O' && l->outputs && !l->n_files && rl->wdfd < 0)
			rl->wdfd = fd;
		else if (fd >= 0 && b == 'p' && rl->pidfd < 0)
			rl->pidfd = fd;
		else if (fd >= 0)
			close(fd);
	}
}

/*
 * Files in: the run's init (in the run's mount namespace, its workdir tmpfs mounted
 * and nothing of the run started) sends the workdir's descriptor ('W'); the files are
 * written there (and the output directory made for the run's ids) as the cold shim
 * does, then the init is told to go on ('G'; it binds each file read-only onto itself).
 * A failure is the launch's (step workdir, on the run's error pipe, as cold).  The
 * init's end at EOF: it failed (its error pipe says so).  Past the deadline or
 * cancelled: supervise.c ends the run.  Every way but 'G' the init is told the end
 * (EOF on the watch socket: it exits without starting anything of the run).
 */
static void relay_files_in(struct relay *rl, uint64_t deadline_ns, int cancel_fd)
{
	const struct govex__launch *l = rl->r->l;
	char b = 0;
	int fd = -1;
	if (wait_watch(rl->watch, deadline_ns, cancel_fd) > 0)
		fd = rwarm_recv_fd(rl->watch, &b);
	if (fd >= 0 && b == 'W') {
		rl->wdfd = fd;
		int r = govex__files_place(fd, NULL, l->files, l->n_files, l->outputs, rl->r->uid,
					   rl->r->gid, false);
		if (r < 0) {
			govex__child_fail(rl->f->ce[1], GOVEX_STEP_WORKDIR, -r);
		} else {
			ssize_t w;
			do
				w = send(rl->watch, "G", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			while (w < 0 && errno == EINTR);
			if (w == 1)
				return;
		}
	} else if (fd >= 0) {
		close(fd);
	}
	shutdown(rl->watch, SHUT_WR);
}

int rwarm_send_fds(int sock, char tag, const int *fds, size_t n, uint64_t deadline_ns)
{
	union {
		char buf[CMSG_SPACE(RWARM_RUN_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > RWARM_RUN_FDS_MAX)
		return -EINVAL;
	if (n) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	for (;;) {
		ssize_t w = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		uint64_t now = govex__now_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		uint64_t left = deadline_ns - now;
		struct pollfd p = {.fd = sock, .events = POLLOUT};
		struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ULL),
				      .tv_nsec = (long)(left % 1000000000ULL)};
		if (ppoll(&p, 1, &ts, NULL) < 0 && errno != EINTR)
			return -errno;
	}
}

size_t rwarm_run_fds(int spec, const struct govex__pipes *f, const struct rcg_run *cg, int extra,
		     int watch, int fds[RWARM_RUN_FDS_MAX])
{
	size_t n = 0;
	int fixed[] = {spec, f->in[0], f->out[1], f->err[1], f->ce[1], f->rep[1], f->kill[0]};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		fds[n++] = fixed[i];
	for (int i = 0; i < RCG_N; i++)
		if (cg->procs_fd[i] >= 0)
			fds[n++] = cg->procs_fd[i];
	if (cg->cpu_fd >= 0)
		fds[n++] = cg->cpu_fd;
	if (extra >= 0)
		fds[n++] = extra;
	fds[n++] = watch;
	return n;
}

/* The launch (govex__shim_ops.launch): the run's descriptors to one of the template's
 * run inits, then the files-in handshake. */
static int relay_launch(void *ctx, uint64_t deadline_ns, int cancel_fd, enum govex__step *step)
{
	struct relay *rl = ctx;
	/* last: the watch socket's other end; the run's init sends the workdir and its
	 * pidfd back on it and closes it once it reported */
	int bp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bp) < 0) {
		*step = GOVEX_STEP_SOCKETPAIR;
		return -errno;
	}
	int fds[RWARM_RUN_FDS_MAX];
	size_t n = rwarm_run_fds(rl->spec, rl->f, rl->r->cg, rl->r->l->extra_fd, bp[1], fds);
	int r = rwarm_send_fds(rl->ctl, 'R', fds, n, deadline_ns);
	close(bp[1]);
	if (r < 0) {
		close(bp[0]);
		*step = GOVEX_STEP_SHIM;
		return r;
	}
	rl->watch = bp[0];
	if (rl->r->l->n_files)
		relay_files_in(rl, deadline_ns, cancel_fd);
	/* (an outputs-only run's workdir and the init's pidfd are taken when needed:
	 * relay_take) */
	return 0;
}

/* The last resort (govex__shim_ops.last_resort), in place of SIGKILL to a shim. */
static void relay_last_resort(void *ctx)
{
	struct relay *rl = ctx;
	if (rl->watch < 0)
		return;
	relay_take(rl);
	shutdown(rl->watch, SHUT_WR); /* (an init still waiting for 'G' ends) */
	if (rl->pidfd < 0)
		return;
	if (syscall(SYS_pidfd_send_signal, rl->pidfd, SIGKILL, NULL, 0) == 0) {
		struct pollfd p = {.fd = rl->pidfd, .events = POLLIN};
		while (poll(&p, 1, LAST_RESORT_WAIT_MS) < 0 && errno == EINTR)
			;
	}
}

/* Once the template has the run's descriptors: the cgroup.procs ones are its (a spare's
 * were handed over when it was made). */
static void relay_after_fork(void *ctx)
{
	const struct relay *rl = ctx;
	for (int i = 0; i < RCG_N; i++)
		if (rl->r->cg->procs_fd[i] >= 0) {
			close(rl->r->cg->procs_fd[i]);
			rl->r->cg->procs_fd[i] = -1;
		}
}

/* The cgroups' accounting, added to the init's report before it is interpreted. */
static void relay_amend(void *ctx, struct govex__shim_report *rep)
{
	struct relay *rl = ctx;
	rl->reported = true;
	rcg_amend(rl->r->cg, rep);
}

/* The run through the shim's supervision with OPS, then its outputs once the init
 * reported: it killed and reaped every process of the run first (no report, no outputs:
 * as a cold shim that did not report); the relay's descriptors closed. */
static int relay_shim(struct relay *rl, const struct govex__shim_ops *ops, struct govex__outcome *o,
		      struct govex_error *err)
{
	int ret = govex__run_shim(rl->r->l, rl->f, ops, rl, o, err);
	if (rl->reported && rl->r->l->outputs) {
		if (rl->wdfd < 0)
			relay_take(rl);
		rfiles_out(rl->r->l, rl->wdfd);
	}
	int *fds[] = {&rl->watch, &rl->wdfd, &rl->pidfd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	return ret;
}

int rwarm_relay_run(int ctl, int spec, const struct rwarm_run *r, struct govex__pipes *f,
		    struct govex__outcome *o, struct govex_error *err)
{
	struct relay rl = {
	    .ctl = ctl, .spec = spec, .f = f, .r = r, .watch = -1, .wdfd = -1, .pidfd = -1};
	const struct govex__shim_ops ops = {
	    .launch = relay_launch,
	    .last_resort = relay_last_resort,
	    .after_fork = relay_after_fork,
	    .amend = relay_amend,
	};
	return relay_shim(&rl, &ops, o, err);
}

/* A spare's launch: the go ('g', the run's own spec and call mode's descriptor) on the
 * spare's watch socket, then the files-in handshake, as relay_launch's. */
static int relay_go(void *ctx, uint64_t deadline_ns, int cancel_fd, enum govex__step *step)
{
	struct relay *rl = ctx;
	int fds[2] = {rl->spec, rl->r->l->extra_fd};
	int r = rwarm_send_fds(rl->watch, 'g', fds, fds[1] >= 0 ? 2 : 1, deadline_ns);
	if (r < 0) {
		*step = GOVEX_STEP_SHIM;
		return r;
	}
	if (rl->r->l->n_files)
		relay_files_in(rl, deadline_ns, cancel_fd);
	return 0;
}

int rwarm_relay_go(int watch, int pidfd, int go, const struct rwarm_run *r, struct govex__pipes *f,
		   struct govex__outcome *o, struct govex_error *err)
{
	struct relay rl = {
	    .ctl = -1, .spec = go, .f = f, .r = r, .watch = watch, .wdfd = -1, .pidfd = pidfd};
	const struct govex__shim_ops ops = {
	    .launch = relay_go,
	    .last_resort = relay_last_resort,
	    .amend = relay_amend,
	    .pipes_open = true,
	};
	return relay_shim(&rl, &ops, o, err);
}
