/* SPDX-License-Identifier: MIT */
/*
 * A run's inner layers (layers.h has the order and the rules): built into the library
 * (the cold program child, launch.c; the probe, probe.c; the cold shim's answers,
 * execonce.c) and into the warm runs' helper (zyg_prog.c, zyg_init.c).  Raw syscalls
 * only (zsys.h): nothing here writes errno or takes a lock.
 */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "layers.h"
#include "zsys.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule	    445
#define SYS_landlock_restrict_self  446
#endif
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT     2
#define LL_CONNECT_TCP	     (1ULL << 1) /* LANDLOCK_ACCESS_NET_CONNECT_TCP, ABI 4 */
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));
struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
} __attribute__((packed));

/* 1: into the run's cgroups before anything of the program runs, then a cgroup namespace
 * rooted there: /proc/self/cgroup shows "/" (per v1 hierarchy), not the host's layout.
 * While the capability is still there (in the user namespace, when not root). */
static int cgroups(const struct rlayers *l, enum govex__step *step)
{
	*step = GOVEX_STEP_CGROUP;
	for (size_t i = 0; i < l->n_procs; i++) {
		ssize_t w = z_write(l->procs[i], "0", 1);
		if (w != 1)
			return w < 0 ? (int)w : -EIO;
	}
	*step = GOVEX_STEP_CGROUPNS;
	/* EINVAL: a kernel without cgroup namespaces (before 4.6): the paths stay visible,
	 * which hides nothing any control relies on */
	int r = (int)ZS1(SYS_unshare, CLONE_NEWCGROUP);
	return r == -EINVAL ? 0 : r;
}

/* 3: the guard.  With a listener: it goes to the supervisor, which answers what the
 * policy denies (rlayers_answer) and counts it. */
static int guard(struct rlayers *l, enum govex__step *step)
{
	*step = GOVEX_STEP_SECCOMP_GUARD;
	if (l->notify_sock < 0)
		return (int)ZS5(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, l->guard, 0, 0);
	int fd = (int)ZS3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  l->guard);
	if (fd < 0)
		return fd;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	char byte = 'L';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	long w;
	do
		w = ZS3(SYS_sendmsg, l->notify_sock, &m, MSG_NOSIGNAL);
	while (w == -EINTR);
	z_close(fd);
	int e = w == 1 ? 0 : (w < 0 ? (int)w : -EIO);
	if (!l->notify_keep) {
		z_close(l->notify_sock);
		l->notify_sock = -1;
		return e;
	}
	if (e < 0)
		return e;
	/* kept (a spare's go comes on it): above the descriptors step 4 places */
	int moved = z_fcntl(l->notify_sock, F_DUPFD_CLOEXEC, 10);
	if (moved < 0) {
		*step = GOVEX_STEP_STDIO;
		return moved;
	}
	z_close(l->notify_sock);
	l->notify_sock = moved;
	return 0;
}

/* Closes [lo, ~0U] but the descriptors in keep[] (n <= 2). */
static void close_from_except(unsigned lo, const int *keep, size_t n)
{
	int k[2];
	size_t m = 0;
	for (size_t i = 0; i < n && m < 2; i++)
		if (keep[i] >= 0 && (unsigned)keep[i] >= lo)
			k[m++] = keep[i];
	if (m == 2 && k[1] < k[0]) {
		int t = k[0];
		k[0] = k[1];
		k[1] = t;
	}
	for (size_t i = 0; i < m; i++) {
		if ((unsigned)k[i] > lo)
			ZS3(SYS_close_range, lo, (unsigned)k[i] - 1, 0);
		lo = (unsigned)k[i] + 1;
	}
	ZS3(SYS_close_range, lo, ~0U, 0);
}

/* 4: stdio.  Everything above 10 first, so that placing 0..3 cannot clobber a source (a
 * host started with closed stdio has the run's pipes on 0..2); then nothing of the
 * host's survives but stdio (and fd 3 in call mode), the error pipe (close-on-exec: it
 * reports an exec's failure) and the descriptor kept. */
static int stdio(struct rlayers *l, enum govex__step *step)
{
	*step = GOVEX_STEP_STDIO;
	int ep = z_fcntl(l->errpipe, F_DUPFD_CLOEXEC, 10);
	if (ep < 0)
		return ep;
	l->errpipe = ep;
	int src[4] = {l->in, l->out, l->err, l->extra};
	for (int i = 0; i < 4; i++) {
		if (src[i] < 0)
			continue;
		if ((src[i] = z_fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0)
			return src[i];
	}
	for (int i = 0; i < 4; i++) {
		if (src[i] < 0)
			continue;
		int r = (int)ZS3(SYS_dup3, src[i], i, 0); /* (clears FD_CLOEXEC on i) */
		if (r < 0)
			return r;
	}
	int keep[2] = {ep, l->notify_keep ? l->notify_sock : -1};
	close_from_except(l->extra >= 0 ? 4 : 3, keep, 2);
	return 0;
}

int rlayers_landlock(const struct rlayers *l, enum govex__step *ret_step)
{
	*ret_step = GOVEX_STEP_LANDLOCK;
	if (!l->ll_size)
		return 0;
	int rs = (int)ZS3(SYS_landlock_create_ruleset, l->ll_attr, l->ll_size, 0);
	if (rs < 0)
		return rs;
	int r = 0;
	size_t it = 0;
	struct rlayers_rule rule;
	while (r == 0 && l->ll_next && (r = l->ll_next(l->ll_ctx, &it, &rule)) > 0) {
		r = 0;
		uint64_t acc = rule.access & l->ll_attr[0];
		if (!acc)
			continue;
		int fd = z_open(rule.path, O_PATH | O_CLOEXEC, 0);
		if (fd < 0)
			continue; /* not there (left out of the plan): nothing to allow */
		struct statx sx;
		memset(&sx, 0, sizeof(sx));
		if (ZS5(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) == 0 &&
		    !S_ISDIR(sx.stx_mode))
			acc &= l->ll_file_rights; /* only file rights apply to a file */
		struct ll_path_beneath_attr pb = {.allowed_access = acc, .parent_fd = fd};
		r = (int)ZS4(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
		z_close(fd);
	}
	if (r == 0 && l->ll_connect_port && (l->ll_attr[1] & LL_CONNECT_TCP)) {
		struct ll_net_port_attr np = {.allowed_access = LL_CONNECT_TCP,
					      .port = l->ll_connect_port};
		r = (int)ZS4(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0);
	}
	if (r == 0)
		r = (int)ZS2(SYS_landlock_restrict_self, rs, 0);
	z_close(rs);
	return r < 0 ? r : 0;
}

/* 8: the bounding set while we may (CAP_SETPCAP), so that no file capability can be
 * gained; as root the run's ids (raw: libc's set*id() would signal the threads of a
 * host this process does not have); then the ambient and every other set, which a
 * non-root uid loses at execve anyway: so before Landlock and seccomp are relied on. */
static int identity(const struct rlayers *l, enum govex__step *step)
{
	int r;
	*step = GOVEX_STEP_CAPS;
	for (int c = 0; c < 64; c++)
		if ((r = (int)ZS2(SYS_prctl, PR_CAPBSET_DROP, c)) < 0) {
			if (r == -EINVAL)
				break; /* past the kernel's last capability */
			return r;
		}
	if (l->setid) {
		*step = GOVEX_STEP_SETGROUPS;
		if ((r = (int)ZS2(SYS_setgroups, 0, NULL)) < 0)
			return r;
		*step = GOVEX_STEP_SETGID;
		if ((r = (int)ZS3(SYS_setresgid, l->gid, l->gid, l->gid)) < 0)
			return r;
		*step = GOVEX_STEP_SETUID;
		if ((r = (int)ZS3(SYS_setresuid, l->uid, l->uid, l->uid)) < 0)
			return r;
	}
	*step = GOVEX_STEP_CAPS;
	r = (int)ZS5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0 && r != -EINVAL)
		return r;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if ((r = (int)ZS2(SYS_capset, &h, d)) < 0)
		return r;
	/* a cold run's execve leaves the program dumpable (setresuid cleared it): its own
	 * /proc files are its own */
	if (l->dumpable)
		ZS2(SYS_prctl, PR_SET_DUMPABLE, 1);
	return 0;
}

int rlayers_setrlimits(const struct rlayers_rlimit *rl, size_t n, enum govex__step *ret_step)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t lim[2] = {rl[i].soft, rl[i].hard}; /* struct rlimit64 */
		int r = (int)ZS4(SYS_prlimit64, 0, rl[i].resource, lim, NULL);
		if (r < 0) {
			*ret_step = (enum govex__step)rl[i].step;
			return r;
		}
	}
	return 0;
}

size_t rlayers_rlimits(const struct govex__limits *l, struct rlayers_rlimit *ret)
{
	size_t n = 0;
#define RL(res, s, h, st)                                                                          \
	(ret[n++] =                                                                                \
	     (struct rlayers_rlimit){(int32_t)(res), (int32_t)(st), (uint64_t)(s), (uint64_t)(h)})
	/* No core dumps of the run's memory: not into its workdir, nor to a host helper a
	 * pipe core_pattern names (systemd-coredump, apport), which a limit of 0 does not
	 * stop and 1 does (the kernel's convention). */
	RL(RLIMIT_CORE, 1, 1, GOVEX_STEP_RLIMIT_CORE);
	/* Signals queued (and POSIX timers made) count against a per-user total: a run's
	 * share of it is bounded, whatever the caller's own limit is. */
	RL(RLIMIT_SIGPENDING, 256, 256, GOVEX_STEP_RLIMIT_SIGPENDING);
	if (l->cpu_ms) {
		/* SIGXCPU at the soft limit, SIGKILL one second later */
		uint64_t s = (l->cpu_ms + 999) / 1000;
		RL(RLIMIT_CPU, s, s + 1, GOVEX_STEP_RLIMIT_CPU);
	}
	if (l->memory_bytes)
		RL(RLIMIT_AS, l->memory_bytes, l->memory_bytes, GOVEX_STEP_RLIMIT_AS);
	if (l->file_size_bytes)
		RL(RLIMIT_FSIZE, l->file_size_bytes, l->file_size_bytes, GOVEX_STEP_RLIMIT_FSIZE);
	if (l->open_files)
		RL(RLIMIT_NOFILE, l->open_files, l->open_files, GOVEX_STEP_RLIMIT_NOFILE);
#undef RL
	return n;
}

int rlayers_enter(struct rlayers *l, enum govex__step *ret_step)
{
	int r;
	if ((r = cgroups(l, ret_step)) < 0)
		return r;
	*ret_step = GOVEX_STEP_SETSID; /* no controlling terminal, own session and group */
	if (l->setsid && (r = (int)ZS0(SYS_setsid)) < 0)
		return r;
	/* before the descriptors are tidied (the listener's socket goes with them); it
	 * allows everything else, so the steps below are unaffected */
	if ((r = guard(l, ret_step)) < 0)
		return r;
	if ((r = stdio(l, ret_step)) < 0)
		return r;
	*ret_step = GOVEX_STEP_CHDIR;
	if (!l->workdir)
		return -EINVAL;
	if ((r = (int)ZS1(SYS_chdir, l->workdir)) < 0)
		return r;
	*ret_step = GOVEX_STEP_NO_NEW_PRIVS;
	if ((r = (int)ZS5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		return r;
	if ((r = rlayers_landlock(l, ret_step)) < 0)
		return r;
	if ((r = identity(l, ret_step)) < 0)
		return r;
	if ((r = rlayers_setrlimits(l->rlimits, l->n_rlimits, ret_step)) < 0)
		return r;
	*ret_step = GOVEX_STEP_SECCOMP;
	r = (int)ZS5(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, l->filter, 0, 0);
	return r < 0 ? r : 0;
}

/* ---- the guard's notifications -------------------------------------------------------- */

bool rlayers_answer(const struct seccomp_notif *req, bool exec_once, uint64_t max,
		    struct rdenials *d, struct seccomp_notif_resp *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->id = req->id;
	/* the guard notifies only these, on the native architecture (the allowlist kills
	 * any other) */
	int nr = req->data.nr;
	if (nr == SYS_socket) {
		ret->error = -EAFNOSUPPORT; /* what the filter answers where nobody counts */
		d->net_denied += d->net_denied < UINT32_MAX;
	} else if ((nr == SYS_execve || nr == SYS_execveat) && exec_once && d->execs++ == 0) {
		ret->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE; /* the interpreter's start */
	} else if (nr == SYS_clone || nr == SYS_fork || nr == SYS_vfork) {
		/* a new process under subprocess: deny: EPERM, as the allowlist answers it
		 * where nobody counts (Python: PermissionError) */
		ret->error = -EPERM;
		d->exec_denied += d->exec_denied < UINT32_MAX;
	} else {
		/* a later execve: ENOSYS, as the kernel answers once the listener is gone */
		ret->error = -ENOSYS;
		if (nr == SYS_execve || nr == SYS_execveat)
			d->exec_denied += d->exec_denied < UINT32_MAX;
	}
	return (uint64_t)d->net_denied + d->exec_denied >= max;
}
