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

pid_t rns_clone(int flags)
{
	/* A bare clone: no atfork handlers (and no sanitizer fork hooks) that could take a
	 * lock another thread of the host held at this moment. */
	return (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

static int write_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(data);
	ssize_t w = write(fd, data, n);
	int e = errno;
	close(fd);
	if (w < 0)
		return -e;
	return (size_t)w == n ? 0 : -EIO;
}

int rns_write_maps(const char *uid_map, const char *gid_map, const char **ret_step)
{
	/* An unprivileged process may map only its own ids, and a gid map needs setgroups
	 * denied first (else a dropped supplementary group could be regained). */
	int r;
	*ret_step = "setgroups";
	if ((r = write_file("/proc/self/setgroups", "deny")) < 0)
		return r;
	*ret_step = "uid_map";
	if ((r = write_file("/proc/self/uid_map", uid_map)) < 0)
		return r;
	*ret_step = "gid_map";
	if ((r = write_file("/proc/self/gid_map", gid_map)) < 0)
		return r;
	return 0;
}

static __attribute__((noreturn)) void probe_child(bool userns, int errfd, const char *uid_map,
						  const char *gid_map, struct rplan *plan,
						  struct rscratch *scr)
{
	const char *step = "probe";
	int r = 0;
	if (userns && (r = rns_write_maps(uid_map, gid_map, &step)) < 0)
		goto fail;
	if ((r = rmount_apply(plan, scr, &step)) < 0)
		goto fail;
	step = "no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		goto fail;
	}
	/* seccomp last: a failure here leaves namespaces usable but no filter */
	{
		struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
		struct sock_fprog prog = {.len = 1, .filter = allow};
		step = "seccomp";
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
			r = -errno;
			goto fail;
		}
	}
	_exit(0);
fail:
	govex__child_fail(errfd, step, -r);
	_exit(1);
}

int rns_probe(bool userns, char *ret_step, size_t step_len)
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
	if (rscratch_alloc(&scr, plan.n) < 0) {
		snprintf(ret_step, step_len, "alloc");
		return -ENOMEM;
	}
	int p[2];
	int pr = govex__pipe(p, 0);
	if (pr < 0) {
		int e = -pr;
		rscratch_free(&scr);
		snprintf(ret_step, step_len, "pipe");
		return -e;
	}
	pid_t pid = rns_clone(rns_flags(userns, true));
	if (pid == 0) {
		close(p[0]);
		probe_child(userns, p[1], uid_map, gid_map, &plan, &scr);
	}
	int e = errno;
	close(p[1]);
	rscratch_free(&scr);
	if (pid < 0) {
		close(p[0]);
		snprintf(ret_step, step_len, "clone");
		return -e;
	}
	struct govex__child_error ce;
	memset(&ce, 0, sizeof(ce));
	ssize_t n;
	do
		n = read(p[0], &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	int st;
	while (waitpid(pid, &st, __WALL) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(ce)) {
		ce.step[sizeof(ce.step) - 1] = '\0';
		snprintf(ret_step, step_len, "%s", ce.step);
		return -(ce.err ? ce.err : EPERM);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(ret_step, step_len, "probe child");
		return -ECHILD;
	}
	return 0;
}
