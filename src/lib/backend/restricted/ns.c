/* SPDX-License-Identifier: MIT */
/*
 * Namespaces: the clone() that makes the shim, the user namespace's identity maps, and
 * the probe that tries all of it for real in a throwaway child.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "restricted.h"

int rns_flags(bool userns, bool net)
{
	int f = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (userns)
		f |= CLONE_NEWUSER;
	if (net)
		f |= CLONE_NEWNET;
	return f;
}

static int write_file(const char *path, const char *data)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(data);
	ssize_t w = write(fd, data, n);
	if (w < 0)
		return -errno;
	return (size_t)w == n ? 0 : -EIO;
}

int rns_write_maps(const char *uid_map, const char *gid_map, enum govex__step *ret_step)
{
	/* An unprivileged process may map only its own ids, and a gid map needs setgroups
	 * denied first (else a dropped supplementary group could be regained). */
	int r;
	*ret_step = GOVEX_STEP_SETGROUPS;
	if ((r = write_file("/proc/self/setgroups", "deny")) < 0)
		return r;
	*ret_step = GOVEX_STEP_UID_MAP;
	if ((r = write_file("/proc/self/uid_map", uid_map)) < 0)
		return r;
	*ret_step = GOVEX_STEP_GID_MAP;
	if ((r = write_file("/proc/self/gid_map", gid_map)) < 0)
		return r;
	return 0;
}

static int probe_setup(bool userns, const char *uid_map, const char *gid_map, struct rplan *plan,
		       struct rscratch *scr, enum govex__step *step)
{
	int r;
	if (userns && (r = rns_write_maps(uid_map, gid_map, step)) < 0)
		return r;
	if ((r = rmount_apply(plan, scr, step)) < 0)
		return r;
	*step = GOVEX_STEP_NO_NEW_PRIVS;
	if ((r = govex__neg_errno(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))) < 0)
		return r;
	/* seccomp last: a failure here leaves namespaces usable but no filter */
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {.len = 1, .filter = allow};
	*step = GOVEX_STEP_SECCOMP;
	return govex__neg_errno(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0));
}

static __attribute__((noreturn)) void probe_child(bool userns, int errfd, const char *uid_map,
						  const char *gid_map, struct rplan *plan,
						  struct rscratch *scr)
{
	enum govex__step step = GOVEX_STEP_PROBE;
	int r = probe_setup(userns, uid_map, gid_map, plan, scr, &step);
	if (r == 0)
		_exit(0);
	govex__child_fail(errfd, step, -r);
	_exit(1);
}

int rns_probe(bool userns, enum govex__step *ret_step)
{
	/* The same steps a run takes, on a tiny plan. */
	struct rmount m[] = {
	    {.kind = RM_BIND_DEV, .path = (char *)"/dev/null"},
	    {.kind = RM_PROC, .path = (char *)"/proc"},
	    {.kind = RM_TMPFS, .path = (char *)"/tmp", .opts = (char *)"size=64k,mode=1777"},
	    {.kind = RM_READONLY, .path = (char *)"/"},
	};
	struct rplan plan = {.m = m, .n = ARRAY_SIZE(m)};
	struct rscratch scr;
	char uid_map[32], gid_map[32];
	snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	int r;
	if ((r = rscratch_alloc(&scr, plan.n)) < 0) {
		*ret_step = GOVEX_STEP_ALLOC;
		return r;
	}
	int p[2];
	if ((r = govex__pipe(p, 0)) < 0) {
		rscratch_free(&scr);
		*ret_step = GOVEX_STEP_PIPE;
		return r;
	}
	_cleanup_close_ int rd = p[0];
	pid_t pid = govex__clone(rns_flags(userns, true));
	if (pid == 0) {
		close(p[0]);
		probe_child(userns, p[1], uid_map, gid_map, &plan, &scr);
	}
	r = govex__neg_errno(pid);
	close(p[1]);
	rscratch_free(&scr);
	if (r < 0) {
		*ret_step = GOVEX_STEP_CLONE;
		return r;
	}
	struct govex__child_error ce = {0};
	ssize_t n;
	do
		n = read(rd, &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	int st;
	while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(ce)) {
		*ret_step = (enum govex__step)ce.step;
		return -(ce.err ? ce.err : EPERM);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*ret_step = GOVEX_STEP_PROBE_CHILD;
		return -ECHILD;
	}
	return 0;
}

int rns_shim_enter(const struct rplan *plan, struct rscratch *scr, enum govex__step *ret_step)
{
	int r;
	*ret_step = GOVEX_STEP_HOSTNAME;
	if ((r = govex__neg_errno(sethostname("govex", 5))) < 0)
		return r;
	if ((r = rmount_apply(plan, scr, ret_step)) < 0)
		return r;
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	*ret_step = GOVEX_STEP_SIGNALFD;
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	return sfd < 0 ? -errno : sfd;
}
