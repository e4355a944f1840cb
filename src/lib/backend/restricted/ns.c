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

void rns_id_maps(char *uid_map, size_t ucap, char *gid_map, size_t gcap, uid_t *ret_uid,
		 gid_t *ret_gid)
{
	/* the same ids inside.  (Mapping onto uid 0, a container's root whose capabilities
	 * were dropped, needs CAP_SETFCAP when the namespace is made: Linux >= 5.12.) */
	uid_t u = geteuid();
	gid_t g = getegid();
	snprintf(uid_map, ucap, "%u %u 1\n", (unsigned)u, (unsigned)u);
	snprintf(gid_map, gcap, "%u %u 1\n", (unsigned)g, (unsigned)g);
	if (ret_uid)
		*ret_uid = u;
	if (ret_gid)
		*ret_gid = g;
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
	rns_id_maps(uid_map, sizeof(uid_map), gid_map, sizeof(gid_map), NULL, NULL);
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

/* ---- the slots' empty network namespaces (root, network: deny) ------------------------
 *
 * Creating a network namespace per run costs a global lock and, when it goes, a cleanup
 * in a kernel worker (about 0.4 ms per one-shot run here, much more under contention).
 * As root, a run whose policy denies the network instead joins its slot's namespace,
 * made once per boot: /run/govex/netns-N, an nsfs bind mount in root's 0700 /run/govex.
 * Only the holder of slot N (slot.c's lock) joins netns-N, so concurrent runs never share
 * one: a shared namespace would show each run the others' unix sockets in
 * /proc/self/net/unix.  What a run could reach there is what it could reach in a fresh
 * one: a loopback that is down and nothing else, and, under network: deny, no socket()
 * at all (seccomp) and no capability over the namespace (it belongs to the host's user
 * namespace), so nothing of it outlives the run's processes for the slot's next run.
 * There are as many as runs were ever concurrent on this host.
 *
 * Believed only when checked: at open (a network namespace of nsfs, owned by our user
 * namespace, not the one we are in), and by the shim after joining it, before anything
 * else (one interface, "lo", and it is down).  Whatever fails, the run gets a fresh
 * namespace of its own, as without it.
 */
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define NETNS_DIR "govex"
/* a mount point file nobody mounted on for this long was left by a creator that died */
#define NETNS_STALE_S 10

static bool same_ns(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* fd is a network namespace of nsfs owned by our user namespace, and not ours */
static bool netns_ok(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != NSFS_MAGIC)
		return false;
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
		return false;
	int ufd = ioctl(fd, NS_GET_USERNS);
	if (ufd < 0)
		return false;
	bool owner = same_ns(ufd, "/proc/self/ns/user");
	close(ufd);
	return owner && !same_ns(fd, "/proc/self/ns/net");
}

/* A child in a new network namespace that waits for the pipe to close. */
static int netns_mount(int dfd, const char *name)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = govex__clone(CLONE_NEWNET);
	if (pid == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	int r = 0;
	if (pid < 0) {
		r = -errno;
	} else {
		char src[64], dst[64];
		snprintf(src, sizeof(src), "/proc/%d/ns/net", (int)pid);
		snprintf(dst, sizeof(dst), "/proc/self/fd/%d/%s", dfd, name);
		if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
			r = -errno;
	}
	close(p[1]);
	if (pid > 0)
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	return r;
}

int rns_empty_netns(int slot)
{
	char name[32];
	if (!govex__privileged() || slot < 0)
		return -EPERM;
	snprintf(name, sizeof(name), "netns-%d", slot);
	_cleanup_close_ int run = open("/run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (run < 0)
		return -errno;
	if (mkdirat(run, NETNS_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	_cleanup_close_ int dfd =
	    openat(run, NETNS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return -errno;
	if (st.st_uid != 0 || (st.st_mode & 077))
		return -EPERM;
	for (int tries = 0; tries < 2; tries++) {
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && netns_ok(fd))
			return fd;
		if (fd >= 0) {
			/* not (yet) a namespace: a creator between its file and its mount, or
			 * one that died there (then removed; a mount point cannot be) */
			bool stale = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
				     time(NULL) - st.st_mtime > NETNS_STALE_S;
			close(fd);
			if (!stale || unlinkat(dfd, name, 0) < 0)
				return -EBUSY;
		} else if (errno != ENOENT) {
			return -errno;
		}
		fd = openat(dfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
		if (fd < 0)
			return errno == EEXIST ? -EBUSY : -errno;
		close(fd);
		int r = netns_mount(dfd, name);
		if (r < 0) {
			unlinkat(dfd, name, 0);
			return r;
		}
	}
	return -EBUSY;
}

/* Reads a small /proc file into buf (NUL-terminated): its length, or -1 when it cannot
 * be read or does not fit.  No allocation (the shim, after clone). */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0 || (size_t)n == size - 1)
		return -1;
	buf[n] = '\0';
	return n;
}

/* /proc/self/net/dev names exactly one interface, lo, lo is down, and no unix socket is
 * in the namespace. */
static bool netns_empty_here(void)
{
	char buf[1024];
	/* no unix socket lives in it (one a host process left there would be listed to the
	 * run): /proc/self/net/unix holds its header line only (checked before our own
	 * socket below is made) */
	if (read_proc("/proc/self/net/unix", buf, sizeof(buf)) < 0)
		return false;
	const char *nl = strchr(buf, '\n');
	if (!nl || nl[1] != '\0')
		return false;
	if (read_proc("/proc/self/net/dev", buf, sizeof(buf)) < 0)
		return false;
	/* two header lines, then one line per interface */
	int lines = 0;
	const char *third = NULL;
	for (char *p = buf; *p; p++)
		if (*p == '\n' && ++lines == 2)
			third = p + 1;
	if (lines != 3 || !third)
		return false;
	while (*third == ' ')
		third++;
	if (strncmp(third, "lo:", 3) != 0)
		return false;
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	close(s);
	return r == 0 && !(ifr.ifr_flags & IFF_UP);
}

int rns_join_empty(int fd, enum govex__step *ret_step)
{
	*ret_step = GOVEX_STEP_SHIM;
	int r = govex__neg_errno(setns(fd, CLONE_NEWNET));
	close(fd);
	if (r == 0 && netns_empty_here())
		return 0;
	/* not joined, or not as it must be: a namespace of the run's own */
	return govex__neg_errno(unshare(CLONE_NEWNET));
}
