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
 * (SCM_RIGHTS over a socketpair made before the fork: layers.c, step 3) and only then
 * loads the allowlist.  The shim lets
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
 * closed and the kernel refuses the rest (ENOSYS) at no cost to the shim.  What each
 * notification gets is decided by rlayers_answer (layers.c), a warm run's init's too.
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
	bool full = rlayers_answer(&req.n, exec_once, RDENIALS_ANSWERED_MAX, d, &resp.r);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -errno;
	return full ? 1 : 0;
}
