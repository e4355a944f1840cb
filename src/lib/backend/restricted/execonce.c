/* SPDX-License-Identifier: MIT */
/*
 * One execve, then none: how `subprocess: deny` keeps the run to the interpreter; and
 * the refusals the sandbox counts so that a result can name the control that refused
 * (network_deny, subprocess_deny) without reading anything the run wrote.
 *
 * Denying fork and clone leaves execve: Python could replace itself with /bin/sh, with
 * the ELF loader running any readable binary, or with a file it wrote (through
 * /proc/self/fd or execveat on a memfd).  A seccomp filter cannot tell the program
 * child's own execve of the interpreter from a later one, so the decision is taken out
 * of the sandbox: the program child installs the guard filter (seccomp.c), which turns
 * execve and execveat into user notifications, hands its listener to the shim
 * (SCM_RIGHTS over a socketpair made before the fork) and only then loads the
 * allowlist.  The shim lets
 * the first notification continue (the interpreter's start) and then closes the
 * listener: with no listener left the kernel fails every later execve and execveat at
 * once with ENOSYS, costing the shim nothing (a flood of them cannot spend CPU outside
 * the run's cgroup).  The answer does not depend on the arguments, so there is nothing for a
 * racing thread to change between the check and the use.
 *
 * Denials named (contract section 6): the shim keeps the listener after the first
 * execve and answers each later one with ENOSYS itself (what the kernel answers without
 * a listener), counting it; under network: deny the guard also notifies socket() of
 * every family but AF_UNIX, which the allowlist then lets through to it, and the shim
 * answers EAFNOSUPPORT (what the allowlist answers where nobody counts) and counts.
 * The counts reach the host in the shim's report, never through anything the run can
 * write.  At most RDENIALS_ANSWERED_MAX refusals are answered; then the listener is
 * closed and the kernel refuses the rest (ENOSYS) at no cost to the shim.
 *
 * Everything here after prepare is a raw syscall on memory allocated before the clone
 * (async-signal-safe).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "restricted.h"

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

int rexec_install(const struct rfilter *f, int sock)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};
	long lfd =
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		return -errno;
	int fd = (int)lfd;
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	char byte = 'L';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t w;
	do
		w = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	int e = w == 1 ? 0 : (w < 0 ? -errno : -EIO);
	close(fd);
	close(sock);
	return e;
}

int rexec_receive(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECHILD; /* the child failed before it had a listener to send */
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Large enough for struct seccomp_notif and seccomp_notif_resp of any kernel we know;
 * rexec_answer() checks the kernel's own sizes against it. */
#define NOTIF_BUF 512

int rexec_answer(int listener, bool exec_once, struct rdenials *d)
{
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return -errno;
	if (sz.seccomp_notif > NOTIF_BUF || sz.seccomp_notif_resp > NOTIF_BUF ||
	    sz.seccomp_notif < sizeof(struct seccomp_notif) ||
	    sz.seccomp_notif_resp < sizeof(struct seccomp_notif_resp))
		return -EOVERFLOW;
	union {
		struct seccomp_notif n;
		unsigned char b[NOTIF_BUF];
	} req;
	union {
		struct seccomp_notif_resp r;
		unsigned char b[NOTIF_BUF];
	} resp;
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return errno == ENOENT || errno == EINTR ? 0 : -errno; /* the caller went away */
	memset(&resp, 0, sizeof(resp));
	resp.r.id = req.n.id;
	/* the guard notifies only these, on the native architecture (the allowlist kills
	 * any other) */
	int nr = req.n.data.nr;
	if (nr == SYS_socket) {
		resp.r.error = -EAFNOSUPPORT; /* what the filter answers where nobody counts */
		if (d->net_denied < UINT32_MAX)
			d->net_denied++;
	} else if ((nr == SYS_execve || nr == SYS_execveat) && exec_once && d->execs++ == 0) {
		resp.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE; /* the interpreter's start */
	} else if (nr == SYS_clone || nr == SYS_fork || nr == SYS_vfork) {
		/* a new process under subprocess: deny: EPERM, as the allowlist answers it
		 * where nobody counts (Python: PermissionError) */
		resp.r.error = -EPERM;
		d->exec_denied += d->exec_denied < UINT32_MAX;
	} else {
		/* a later execve: ENOSYS, as the kernel answers once the listener is gone */
		resp.r.error = -ENOSYS;
		if (nr == SYS_execve || nr == SYS_execveat)
			d->exec_denied += d->exec_denied < UINT32_MAX;
	}
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -errno;
	return (uint64_t)d->net_denied + d->exec_denied >= RDENIALS_ANSWERED_MAX ? 1 : 0;
}
