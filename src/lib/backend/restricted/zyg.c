/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (DESIGN.md "Warm runs"; template.c has the whole
 * picture).  Built as a small shared object with no dependency but libc, embedded in the
 * library, handed to the template as a memfd after READY and loaded by zygote.py with
 * ctypes.PyDLL (the GIL held: the interpreter is quiescent while this code forks it).
 * govex_zyg_serve() is the template's loop from then on: it never returns in the
 * template, and returns 0 in a run's program process, its layers entered, for
 * zygote.py to run the code.
 *
 * Per template (T), made ahead, SPARES at a time, each replaced once taken:
 *   B  clone3 of T into new mount, PID, IPC and UTS namespaces (and, under network:
 *      deny, a network namespace from T's pool): PID 1 of a future run.  Forks P and
 *      waits on the control socket for one run's descriptors (SCM_RIGHTS; the kernel
 *      gives each message to one B).
 *   P  PID 2, the program: Python's after-fork handlers run at once (PyOS_AfterFork_Child,
 *      as os.fork); its own session; waits for B.
 * Per run (every step before any user code, each failure reported as {step, errno} on
 * the run's error pipe like a cold launch's):
 *   B  hands the descriptors to P, mounts the run's identity files, /tmp, workdir and
 *      proc, has the host place the files in (or makes the output directory), tells P
 *      to go on; then keeps the CPU budget and the host's kill request, answers P's
 *      seccomp notifications (denials counted), reaps, kills the namespace (it is its
 *      PID 1) and writes the shim report.
 *   P  joins the run's cgroups, cgroup namespace, seccomp guard (its listener to B),
 *      stdio, chdir, no_new_privs, Landlock, ids and capabilities dropped, rlimits, the
 *      seccomp allowlist -- the cold program child's order -- and returns.
 * T never reads a run's spec: only B and P do, after the run's message came, so nothing
 * of one run is in what a later run inherits.
 *
 * Network namespaces (network: deny): made by T once and reused, one run at a time each:
 * T gets a run's namespace back when its B has ended (every process of the run killed
 * and reaped), and keeps it only when it holds no socket at all and its loopback is down
 * (a socket left in flight would be a channel to the next run); otherwise it is dropped
 * and a new one made.  Creating and destroying a network namespace per run costs more
 * than the rest of a warm run's namespaces together (measured: ~1.5 ms of CPU).
 *
 * Everything here runs in a fork of an interpreter: no allocation after a fork, no stdio,
 * only system calls and the few libc functions that wrap them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "internal.h"
#include "zyg_spec.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* What zygote.py passes (ctypes): keep in step with its _Params. */
struct zyg_params {
	int ctl;    /* the control socket (the host's runs come on it) */
	int spares; /* run inits made ahead */
	int netns;  /* network: deny: each run a network namespace of its own */
	int n_guards;
	const struct sock_fprog *const *guards; /* loaded first, with a listener under notify */
	const struct sock_fprog *filter;	/* the allowlist, loaded last */
	void (*after_fork_child)(void);		/* PyOS_AfterFork_Child */
	const char *comm;			/* the program's name (the interpreter's) */
};

/* What a run's program gets back (in P only). */
struct zyg_out {
	const char *spec; /* the run's spec, mapped read-only */
	uint32_t size;
	uint32_t first; /* offset of the first record */
	int fce;	/* the error pipe (close-on-exec), closed by zygote.py right before the
			 * code runs */
	int text;	/* which worker text, or -1: the ZR_CODE record */
};

__attribute__((visibility("default"))) int govex_zyg_serve(const struct zyg_params *p,
							   struct zyg_out *out);

#define MAX_FDS 64
#define WALL	0x40000000
#define MNT_FL	(MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* ---- small things ---------------------------------------------------------------- */

static int neg(long r)
{
	return r < 0 ? -errno : 0;
}

static void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Closes every descriptor from 3 up but keep[] (-1 entries ignored). */
static void close_except(int *keep, size_t n)
{
	qsort(keep, n, sizeof(int), cmp_int);
	unsigned lo = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

static __attribute__((noreturn)) void fail(int fce, enum govex__step step, int err)
{
	struct govex__child_error ce = {.step = (int32_t)step, .err = err > 0 ? err : EPERM};
	if (fce >= 0) {
		ssize_t w;
		do
			w = write(fce, &ce, sizeof(ce));
		while (w < 0 && errno == EINTR);
	}
	_exit(127);
}

static ssize_t full_write(int fd, const void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, (const char *)buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return (ssize_t)off;
}

static ssize_t read1(int fd, char *b)
{
	ssize_t n;
	do
		n = read(fd, b, 1);
	while (n < 0 && errno == EINTR);
	return n;
}

/* One message with descriptors: 1-byte tag, up to max fds.  Returns the bytes read
 * (0: EOF), -errno; *n the descriptors received. */
static ssize_t recv_fds(int sock, char *tag, int *fds, size_t max, size_t *n, int flags)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	*tag = 0;
	*n = 0;
	struct iovec iov = {.iov_base = tag, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(max * sizeof(int))};
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
	if (r < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*n < max)
				fds[(*n)++] = fd;
			else
				close(fd);
		}
	}
	return r;
}

static int send_fds(int sock, char tag, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	ssize_t w;
	do
		w = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == 1 ? 0 : -(w < 0 ? errno : EIO);
}

/* ---- the run's spec ---------------------------------------------------------------- */

struct spec {
	const char *base;
	uint32_t size;
	const struct zyg_hdr *h;
};

struct recd {
	uint32_t type, len;
	const char *data;
};

/* Maps the spec memfd (closed); 0 or -errno. */
static int spec_map(int fd, struct spec *s)
{
	struct stat sb;
	int r = neg(fstat(fd, &sb));
	if (r == 0 && (sb.st_size < (off_t)sizeof(struct zyg_hdr) || sb.st_size > ZYG_SPEC_MAX))
		r = -EINVAL;
	void *m = MAP_FAILED;
	if (r == 0) {
		m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			r = -errno;
	}
	close(fd);
	if (r < 0)
		return r;
	s->base = m;
	s->size = (uint32_t)sb.st_size;
	s->h = m;
	if (s->h->magic != ZYG_MAGIC || s->h->size != s->size || s->h->nprocs < 0 ||
	    s->h->nprocs > 8 || s->h->report_size != sizeof(struct govex__shim_report))
		return -EINVAL;
	return 0;
}

/* The next record at *off (advanced): 1, 0 at the end, -EINVAL when malformed. */
static int spec_next(const struct spec *s, uint32_t *off, struct recd *rc)
{
	if (*off >= s->size)
		return 0;
	if (s->size - *off < 8)
		return -EINVAL;
	uint32_t h[2];
	memcpy(h, s->base + *off, sizeof(h));
	uint64_t end = (uint64_t)*off + 8 + h[1];
	if (end > s->size)
		return -EINVAL;
	rc->type = h[0];
	rc->len = h[1];
	rc->data = s->base + *off + 8;
	*off = (uint32_t)((end + 7) & ~(uint64_t)7);
	return 1;
}

/* A record's leading string (NUL within the record): its length, or -1. */
static ssize_t rec_str(const struct recd *rc, uint32_t at)
{
	if (at >= rc->len)
		return -1;
	const char *z = memchr(rc->data + at, 0, rc->len - at);
	return z ? z - (rc->data + at) : -1;
}

/* Iterates records of one type: for (FOR_RECORDS(s, type, rc)) ... */
#define SPEC_EACH(s, t, rc, r)                                                                     \
	for (uint32_t _off = sizeof(struct zyg_hdr); ((r) = spec_next((s), &_off, &(rc))) > 0;)    \
		if ((rc).type == (t))

/* ---- the descriptors of one run ------------------------------------------------------ */

/* The host's "R" message: spec, stdin, stdout, stderr, error pipe, report, kill request,
 * the cgroup.procs descriptors, the CPU accounting descriptor, call mode's descriptor,
 * and last the watch socket (template_relay.c).  Indices into fds[]. */
struct runfds {
	int fds[MAX_FDS];
	size_t n;
	int spec, in, out, err, ce, rep, kill, procs0, cpu, extra, watch;
};

static int runfds_index(struct runfds *f, const struct zyg_hdr *h)
{
	f->spec = f->fds[0];
	f->in = f->fds[1];
	f->out = f->fds[2];
	f->err = f->fds[3];
	f->ce = f->fds[4];
	f->rep = f->fds[5];
	f->kill = f->fds[6];
	size_t i = 7;
	f->procs0 = (int)i;
	i += h ? (size_t)h->nprocs : 0;
	f->cpu = h && h->has_cpu && i < f->n ? f->fds[i++] : -1;
	f->extra = h && h->has_extra && i < f->n ? f->fds[i++] : -1;
	f->watch = i < f->n ? f->fds[i] : -1;
	return i <= f->n ? 0 : -EINVAL;
}

/* ---- B: the run's own places ---------------------------------------------------------- */

static int mnt(const char *src, const char *dst, const char *type, unsigned long fl,
	       const char *data)
{
	return neg(mount(src, dst, type, fl, data));
}

static int bind_ro(const char *src, const char *dst)
{
	int r = mnt(src, dst, NULL, MS_BIND, NULL);
	if (r == 0)
		r = mnt(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MNT_FL, NULL);
	return r;
}

/* The run's own /etc/passwd and /etc/group (its ids), read-only, bound over the
 * template's placeholders; written in a small tmpfs on the workdir's mount point,
 * which the run's workdir then covers. */
static void identity_files(const struct spec *s, const char *wd, int fce)
{
	struct recd rc;
	int r, k = 0;
	bool mounted = false;
	SPEC_EACH(s, ZR_IDENT, rc, r)
	{
		ssize_t pl = rec_str(&rc, 0);
		if (pl < 0)
			fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		if (!mounted) {
			int e = mnt("tmpfs", wd, "tmpfs", MNT_FL, "size=64k,nr_inodes=8,mode=0755");
			if (e < 0)
				fail(fce, GOVEX_STEP_TMPFS, -e);
			mounted = true;
		}
		char src[4096];
		size_t wl = strlen(wd);
		if (wl + 16 > sizeof(src))
			fail(fce, GOVEX_STEP_TMPFS, ENAMETOOLONG);
		memcpy(src, wd, wl);
		src[wl] = '/';
		src[wl + 1] = (char)('0' + k % 10);
		src[wl + 2] = (char)('0' + k / 10);
		src[wl + 3] = '\0';
		k++;
		int fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			fail(fce, GOVEX_STEP_TMPFS, errno);
		size_t cl = rc.len - (uint32_t)pl - 1;
		if (full_write(fd, rc.data + pl + 1, cl) < 0 || fchmod(fd, 0644) < 0)
			fail(fce, GOVEX_STEP_TMPFS, errno ? errno : EIO);
		close(fd);
		int e = bind_ro(src, rc.data);
		if (e < 0)
			fail(fce, GOVEX_STEP_TMPFS, -e);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

static void tmpfs_places(const struct spec *s, int fce)
{
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_TMPFS, rc, r)
	{
		ssize_t pl = rec_str(&rc, 0);
		if (pl < 0 || rec_str(&rc, (uint32_t)pl + 1) < 0)
			fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		int e = mnt("tmpfs", rc.data, "tmpfs", MNT_FL, rc.data + pl + 1);
		if (e < 0)
			fail(fce, GOVEX_STEP_TMPFS, -e);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

/* Files in: the workdir's descriptor to the host (template_relay.c), which writes the
 * files (and the output directory) there as the cold shim does; then each file bound
 * read-only onto itself, in the run's mount namespace. */
static void files_in(const struct spec *s, const char *wd, int watch, int fce)
{
	int fd = open(wd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail(fce, GOVEX_STEP_WORKDIR, errno);
	int e = send_fds(watch, 'W', &fd, 1);
	close(fd);
	if (e < 0)
		fail(fce, GOVEX_STEP_WORKDIR, -e);
	char go = 0;
	if (read1(watch, &go) != 1 || go != 'G')
		_exit(0); /* the host reported the failure on the error pipe */
	struct recd rc;
	int r;
	char path[4096];
	size_t wl = strlen(wd);
	SPEC_EACH(s, ZR_FILE, rc, r)
	{
		ssize_t nl = rec_str(&rc, 0);
		if (nl < 0 || wl + 1 + (size_t)nl + 1 > sizeof(path))
			fail(fce, GOVEX_STEP_WORKDIR, EINVAL);
		memcpy(path, wd, wl);
		path[wl] = '/';
		memcpy(path + wl + 1, rc.data, (size_t)nl + 1);
		if ((e = bind_ro(path, path)) < 0)
			fail(fce, GOVEX_STEP_WORKDIR, -e);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

/* Outputs and no file in: the output directory made here, as the cold shim makes it
 * (files.c, govex__files_place: mode 0700, the run's ids), in the run's fresh workdir
 * before anything of the run started; the workdir's descriptor goes to the host
 * one-way (it collects the outputs from it). */
static void output_dir(const struct spec *s, const char *wd, int watch, int fce)
{
	int fd = open(wd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail(fce, GOVEX_STEP_WORKDIR, errno);
	if (mkdirat(fd, GOVEX__OUTPUT_DIR, 0700) < 0)
		fail(fce, GOVEX_STEP_WORKDIR, errno);
	if (s->h->uid != 0xFFFFFFFFu &&
	    fchownat(fd, GOVEX__OUTPUT_DIR, s->h->uid, s->h->gid, AT_SYMLINK_NOFOLLOW) < 0)
		fail(fce, GOVEX_STEP_WORKDIR, errno);
	int e = send_fds(watch, 'O', &fd, 1);
	close(fd);
	if (e < 0)
		fail(fce, GOVEX_STEP_WORKDIR, -e);
}

/* proc for the run's PID namespace: subset=pid where the kernel has it, else the whole
 * of it with the host-wide files masked. */
static void proc_mount(const struct spec *s, int fce)
{
	if (mnt("proc", "/proc", "proc", MNT_FL, "subset=pid") == 0)
		return;
	int e = mnt("proc", "/proc", "proc", MNT_FL, NULL);
	if (e < 0)
		fail(fce, GOVEX_STEP_PROC, -e);
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_MASK, rc, r)
	{
		if (rec_str(&rc, 0) < 0)
			fail(fce, GOVEX_STEP_PROC_MASK, EINVAL);
		struct stat sb;
		if (lstat(rc.data, &sb) < 0 || S_ISLNK(sb.st_mode))
			continue;
		if (S_ISDIR(sb.st_mode))
			e = mnt("tmpfs", rc.data, "tmpfs", MS_RDONLY | MNT_FL,
				"size=4k,nr_inodes=1,mode=0555");
		else
			e = bind_ro("/dev/null", rc.data);
		if (e < 0)
			fail(fce, GOVEX_STEP_PROC_MASK, -e);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

static const char *spec_workdir(const struct spec *s)
{
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_WORKDIR, rc, r)
	{
		if (rec_str(&rc, 0) > 0 && rc.data[0] == '/')
			return rc.data;
	}
	return NULL;
}

/* ---- B: the run's init ---------------------------------------------------------------- */

struct init {
	struct spec s;
	struct runfds f;
	pid_t child;
	int lsock, listener, sfd;
	uint32_t net_denied, exec_denied;
};

static int64_t cpu_ns(const struct init *b)
{
	if (b->f.cpu < 0)
		return -1;
	char buf[4096];
	ssize_t n = pread(b->f.cpu, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (b->s.h->cpu_version == 1)
		return strtoll(buf, NULL, 10);
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strncmp(l, "usage_usec ", 11) == 0)
			return strtoll(l + 11, NULL, 10) * 1000;
	return -1;
}

static void close_listener(struct init *b)
{
	closep(&b->listener);
}

/* One notification on the program's guard listener, answered as a cold run's shim
 * answers it (execonce.c, rexec_answer): in a warm run the interpreter runs already,
 * every execve is a later one. */
static void answer(struct init *b)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ioctl(b->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* the caller went away (ENOENT) or EINTR */
	int err;
	long nr = req.data.nr;
	if (nr == SYS_socket) {
		err = EAFNOSUPPORT;
		b->net_denied++;
	} else if (nr == SYS_clone || nr == SYS_fork || nr == SYS_vfork) {
		err = EPERM;
		b->exec_denied++;
	} else {
		err = ENOSYS;
		if (nr == SYS_execve || nr == SYS_execveat)
			b->exec_denied++;
	}
	struct seccomp_notif_resp resp = {.id = req.id, .val = 0, .error = -err, .flags = 0};
	ioctl(b->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if ((int64_t)b->net_denied + b->exec_denied >= b->s.h->denials_max)
		close_listener(b); /* the kernel refuses the rest (ENOSYS) */
}

static void take_listener(struct init *b)
{
	char tag;
	int fd = -1;
	size_t n = 0;
	ssize_t r = recv_fds(b->lsock, &tag, &fd, 1, &n, 0);
	closep(&b->lsock);
	if (r > 0 && n == 1 && tag == 'L')
		b->listener = fd;
	else if (n == 1)
		close(fd);
}

/* Reaps what is there; true once the program child is (its status in *st). */
static bool reap(struct init *b, int *st, bool *got)
{
	for (;;) {
		int wst;
		pid_t pid = waitpid(-1, &wst, WNOHANG | WALL);
		if (pid <= 0)
			return *got;
		if (pid == b->child && !*got) {
			*st = wst;
			*got = true;
		}
	}
}

static __attribute__((noreturn)) void init_supervise(struct init *b)
{
	int status = 0;
	bool got = false;
	int killed = 0;
	int64_t budget = b->s.h->cpu_budget_ns, used = 0;
	int64_t ncpus = b->s.h->ncpus > 0 ? b->s.h->ncpus : 1;
	while (!got) {
		struct pollfd p[4] = {{.fd = b->f.kill, .events = POLLIN},
				      {.fd = b->sfd, .events = POLLIN},
				      {.fd = b->lsock, .events = POLLIN},
				      {.fd = b->listener, .events = POLLIN}};
		int tmo = -1;
		if (budget >= 0) {
			int64_t w = (budget - used) / ncpus;
			if (w < 200000)
				w = 200000;
			if (w > 20000000)
				w = 20000000;
			tmo = (int)(w / 1000000);
			if (tmo < 1)
				tmo = 1;
		}
		int n = poll(p, 4, tmo);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents) {
			killed = 1;
			break;
		}
		if (n > 0 && p[2].revents)
			take_listener(b);
		if (n > 0 && p[3].revents) {
			if (p[3].revents & POLLIN)
				answer(b);
			else
				close_listener(b); /* no task left under the filter */
		}
		if (n > 0 && p[1].revents) {
			struct signalfd_siginfo si;
			while (read(b->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
		if (reap(b, &status, &got))
			break;
		if (budget >= 0 && (used = cpu_ns(b)) >= budget)
			break;
	}
	/* kill and reap everything in the run's PID namespace (all but this process, its
	 * PID 1: kill(-1) reaches only the namespace's processes, and only from inside) */
	if (getpid() == 1) {
		for (;;) {
			kill(-1, SIGKILL);
			int wst;
			pid_t pid = waitpid(-1, &wst, WALL);
			if (pid < 0 && errno == EINTR)
				continue;
			if (pid < 0)
				break;
			if (pid == b->child && !got) {
				status = wst;
				got = true;
			}
		}
	} else {
		kill(b->child, SIGKILL);
		reap(b, &status, &got);
	}
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	getrusage(RUSAGE_CHILDREN, &ru);
	struct govex__shim_report rep = {
	    .wait_status = status,
	    .killed = killed,
	    .cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
		      (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
	    .max_rss_kb = ru.ru_maxrss,
	    .cgroup_oom = 0,
	    .net_denied = b->net_denied,
	    .exec_denied = b->exec_denied,
	};
	full_write(b->f.rep, &rep, sizeof(rep));
	/* the run is over (every process of it killed and reaped): the watch socket's end
	 * tells the host, without waiting for this process's exit (the teardown of the
	 * run's namespaces) */
	closep(&b->f.watch);
	_exit(0);
}

/* Files in or the output directory (s: the run's records), and a go's remount. */
static void run_files(const struct spec *s, const char *wd, int watch, int fce)
{
	struct recd rc;
	int k;
	bool any = false;
	SPEC_EACH(s, ZR_REMOUNT, rc, k)
	{
		ssize_t pl = rec_str(&rc, 0);
		if (pl < 0 || rec_str(&rc, (uint32_t)pl + 1) < 0)
			fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		int e = mnt(NULL, rc.data, NULL, MS_REMOUNT | MNT_FL, rc.data + pl + 1);
		if (e < 0)
			fail(fce, GOVEX_STEP_TMPFS, -e);
	}
	SPEC_EACH(s, ZR_FILE, rc, k)
	{
		any = true;
		break;
	}
	if (watch < 0)
		return;
	if (any)
		files_in(s, wd, watch, fce);
	else if (s->h->outputs)
		output_dir(s, wd, watch, fce);
}

static void close_mine(struct init *b)
{
	int mine[] = {b->f.in, b->f.out, b->f.err, b->f.ce, b->f.extra};
	for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
		if (mine[i] >= 0)
			close(mine[i]);
	for (int i = 0; i < b->s.h->nprocs; i++)
		close(b->f.fds[b->f.procs0 + i]);
}

/* Every process of the namespace killed and reaped (a spare the host let go). */
static __attribute__((noreturn)) void init_drop(void)
{
	if (getpid() == 1)
		for (;;) {
			kill(-1, SIGKILL);
			if (waitpid(-1, NULL, WALL) < 0 && errno != EINTR)
				break;
		}
	_exit(0);
}

/*
 * A spare's init (deferred), its places made and P on its way through its steps: waits
 * for the host's go on the watch socket (its end closed: the spare is let go), takes
 * P's guard listener meanwhile (P sends it during its steps), makes the run's files (or
 * output directory) and forwards the go to P.  If P ends before the go (a step failed:
 * the error pipe says which), so does this process.  Returns the go's pair end state in
 * b->lsock (the listener may still be to come).
 */
static void init_wait_go(struct init *b, int pair, const char *wd)
{
	int fce = b->f.ce;
	for (;;) {
		struct pollfd p[3] = {{.fd = b->f.watch, .events = POLLIN},
				      {.fd = b->sfd, .events = POLLIN},
				      {.fd = b->lsock, .events = POLLIN}};
		int n = poll(p, 3, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			init_drop();
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(b->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			int st;
			bool got = false;
			if (reap(b, &st, &got))
				init_drop(); /* P failed a step (its error is written) */
		}
		if (b->lsock >= 0 && p[2].revents) {
			take_listener(b); /* (closes lsock: pair is kept apart) */
		}
		if (!p[0].revents)
			continue;
		char tag = 0;
		int fds[2] = {-1, -1};
		size_t nf = 0;
		ssize_t r = recv_fds(b->f.watch, &tag, fds, 2, &nf, 0);
		if (r == -EINTR)
			continue;
		if (r <= 0 || tag != 'g' || nf < 1) {
			for (size_t i = 0; i < nf; i++)
				close(fds[i]);
			init_drop(); /* the host let the spare go */
		}
		/* the go's spec, read here and forwarded to P with call mode's fd 3 */
		int fwd[2] = {fcntl(fds[0], F_DUPFD_CLOEXEC, 3), nf > 1 ? fds[1] : -1};
		struct spec gs;
		int e = spec_map(fds[0], &gs); /* (closes fds[0]) */
		if (e < 0 || fwd[0] < 0)
			fail(fce, GOVEX_STEP_SHIM, e < 0 ? -e : errno);
		run_files(&gs, wd, b->f.watch, fce);
		e = send_fds(pair, 'g', fwd, fwd[1] >= 0 ? 2 : 1);
		close(fwd[0]);
		if (fwd[1] >= 0)
			close(fwd[1]);
		if (e < 0)
			fail(fce, GOVEX_STEP_FORK, -e);
		munmap((void *)gs.base, gs.size);
		return;
	}
}

/* B, once a run's descriptors came: hands them to P, makes the run's places, lets P go
 * on and supervises the run.  failed: a failure while the namespaces were made, reported
 * as this run's.  Never returns. */
static __attribute__((noreturn)) void init_run(struct init *b, int pair, enum govex__step fstep,
					       int ferr)
{
	int fce = b->f.ce;
	int se = send_fds(pair, 'F', b->f.fds, b->f.n);
	int r = spec_map(b->f.spec, &b->s);
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, -r);
	if (runfds_index(&b->f, b->s.h) < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
	if (fstep)
		fail(fce, fstep, ferr);
	if (se < 0)
		fail(fce, GOVEX_STEP_FORK, -se);
	const char *wd = spec_workdir(&b->s);
	if (!wd)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
	identity_files(&b->s, wd, fce);
	tmpfs_places(&b->s, fce);
	bool deferred = b->s.h->deferred;
	if (!deferred)
		run_files(&b->s, wd, b->f.watch, fce);
	proc_mount(&b->s, fce);
	if (full_write(pair, "G", 1) < 0) /* P goes on: its places are there */
		fail(fce, GOVEX_STEP_FORK, errno ? errno : EPIPE);
	/* B's own pidfd to the host, which kills B (and so the run's PID namespace) should
	 * B not end after the host asked for the end (the last resort) */
	if (b->f.watch >= 0) {
		int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		if (pfd >= 0) {
			send_fds(b->f.watch, 'p', &pfd, 1);
			close(pfd);
		}
	}
	if (deferred) {
		/* P's guard listener comes on a duplicate of pair (lsock, closed once it came,
		 * else kept for the supervision), pair itself carries the go */
		b->lsock = b->s.h->notify ? fcntl(pair, F_DUPFD_CLOEXEC, 3) : -1;
		if (b->s.h->notify && b->lsock < 0)
			fail(fce, GOVEX_STEP_FORK, errno);
		init_wait_go(b, pair, wd);
		close(pair);
	} else {
		b->lsock = b->s.h->notify ? pair : -1;
		if (!b->s.h->notify)
			close(pair);
	}
	close_mine(b);
	init_supervise(b);
}

/* ---- P: the program, up to the user's code -------------------------------------------- */

static int seccomp_load(const struct sock_fprog *prog, bool listener)
{
	if (listener)
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    SECCOMP_FILTER_FLAG_NEW_LISTENER, prog);
	return neg(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0));
}

static void landlock(const struct spec *s, int fce)
{
	const struct zyg_hdr *h = s->h;
	if (!h->ll_size)
		return;
	/* struct landlock_ruleset_attr as the running kernel's ABI has it (fs, net,
	 * scoped: the build's headers may be older) */
	uint64_t a[3] = {h->ll_fs, h->ll_net, h->ll_scoped};
	size_t size = h->ll_size < sizeof(a) ? h->ll_size : sizeof(a);
	int rs = (int)syscall(SYS_landlock_create_ruleset, a, size, 0);
	if (rs < 0)
		fail(fce, GOVEX_STEP_LANDLOCK, errno);
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_LLRULE, rc, r)
	{
		uint64_t acc;
		if (rc.len < 9 || rec_str(&rc, 8) < 0)
			fail(fce, GOVEX_STEP_LANDLOCK, EINVAL);
		memcpy(&acc, rc.data, 8);
		int fd = open(rc.data + 8, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat sb;
		if (fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode))
			acc &= h->ll_file_rights;
		struct landlock_path_beneath_attr pb = {.allowed_access = acc, .parent_fd = fd};
		long e = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
		int en = errno;
		close(fd);
		if (e < 0)
			fail(fce, GOVEX_STEP_LANDLOCK, en);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		fail(fce, GOVEX_STEP_LANDLOCK, errno);
	close(rs);
}

static void identity(const struct spec *s, int fce)
{
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the kernel's last capability */
			fail(fce, GOVEX_STEP_CAPS, errno);
		}
	if (s->h->setid) {
		if (syscall(SYS_setgroups, 0, NULL) < 0)
			fail(fce, GOVEX_STEP_SETGROUPS, errno);
		if (syscall(SYS_setresgid, s->h->gid, s->h->gid, s->h->gid) < 0)
			fail(fce, GOVEX_STEP_SETGID, errno);
		if (syscall(SYS_setresuid, s->h->uid, s->h->uid, s->h->uid) < 0)
			fail(fce, GOVEX_STEP_SETUID, errno);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail(fce, GOVEX_STEP_CAPS, errno);
	struct __user_cap_header_struct hd = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &hd, d) < 0)
		fail(fce, GOVEX_STEP_CAPS, errno);
	/* a cold run's execve leaves the program dumpable (setresuid cleared it here): its
	 * own /proc files are its own, as after execve */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* stdio: everything above 10 first, then 0..2 (and 3 in call mode); nothing else
 * survives but the error pipe (close-on-exec, closed right before the code runs).
 * Returns the error pipe's new number. */
static int stdio(struct runfds *f, int fce, int keep)
{
	int ce = fcntl(fce, F_DUPFD_CLOEXEC, 10);
	if (ce < 0)
		fail(fce, GOVEX_STEP_STDIO, errno);
	int src[4], n = 0;
	int want[4] = {f->in, f->out, f->err, f->extra};
	for (int i = 0; i < 4; i++) {
		if (want[i] < 0)
			continue;
		if ((src[n] = fcntl(want[i], F_DUPFD_CLOEXEC, 10)) < 0)
			fail(ce, GOVEX_STEP_STDIO, errno);
		n++;
	}
	for (int i = 0; i < n; i++)
		if (dup2(src[i], i) < 0)
			fail(ce, GOVEX_STEP_STDIO, errno);
	for (int fd = n; fd < ce; fd++)
		if (fd != keep)
			close(fd);
	if (keep > ce)
		syscall(SYS_close_range, (unsigned)ce + 1, (unsigned)keep - 1, 0);
	syscall(SYS_close_range, (unsigned)(keep > ce ? keep : ce) + 1, ~0U, 0);
	return ce;
}

/* A spare's program, every step taken: waits for the go its init forwards (the run's
 * records, and call mode's descriptor as fd 3); *s is the go's spec. */
static void rlimits(const struct spec *s, int fce)
{
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_RLIMIT, rc, r)
	{
		struct zyg_rlimit z;
		if (rc.len != sizeof(z))
			fail(fce, GOVEX_STEP_SHIM, EINVAL);
		memcpy(&z, rc.data, sizeof(z));
		struct rlimit rl = {.rlim_cur = z.soft, .rlim_max = z.hard};
		if (setrlimit(z.resource, &rl) < 0)
			fail(fce, (enum govex__step)z.step, errno);
	}
	if (r < 0)
		fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

static void program_go(struct spec *s, int csock, int fce)
{
	char tag = 0;
	int fds[2] = {-1, -1};
	size_t n = 0;
	ssize_t r;
	do
		r = recv_fds(csock, &tag, fds, 2, &n, 0);
	while (r == -EINTR);
	close(csock);
	if (r <= 0 || tag != 'g' || n < 1)
		_exit(0); /* the init let the spare go, or failed (and said so) */
	int e = spec_map(fds[0], s);
	if (e < 0)
		fail(fce, GOVEX_STEP_SHIM, -e);
	if (s->h->has_extra) {
		if (n < 2 || dup2(fds[1], 3) != 3)
			fail(fce, GOVEX_STEP_STDIO, n < 2 ? EBADF : errno);
		close(fds[1]);
	} else if (n > 1) {
		close(fds[1]);
	}
}

static void program(const struct zyg_params *p, struct spec *s, struct runfds *f, int csock,
		    struct zyg_out *out)
{
	int fce = f->ce;
	for (int i = 0; i < s->h->nprocs; i++) {
		ssize_t w = write(f->fds[f->procs0 + i], "0", 1);
		if (w != 1)
			fail(fce, GOVEX_STEP_CGROUP, w < 0 ? errno : EIO);
	}
	if (unshare(CLONE_NEWCGROUP) < 0 && errno != EINVAL)
		fail(fce, GOVEX_STEP_CGROUPNS, errno);
	for (int i = 0; i < p->n_guards; i++) {
		if (csock >= 0) {
			/* the guard with a new listener, sent to the run's init, which answers
			 * and counts what the policy denies (execonce.c's rexec_install) */
			int lfd = seccomp_load(p->guards[i], true);
			if (lfd < 0)
				fail(fce, GOVEX_STEP_SECCOMP_GUARD, errno);
			int e = send_fds(csock, 'L', &lfd, 1);
			close(lfd);
			if (!s->h->deferred)
				closep(&csock);
			if (e < 0)
				fail(fce, GOVEX_STEP_SECCOMP_GUARD, -e);
		} else if (seccomp_load(p->guards[i], false) < 0) {
			fail(fce, GOVEX_STEP_SECCOMP_GUARD, errno);
		}
	}
	if (csock >= 0 && !s->h->deferred)
		closep(&csock);
	for (int i = 0; i < s->h->nprocs; i++)
		close(f->fds[f->procs0 + i]);
	/* (a spare keeps csock, which carries the go: moved above the descriptors kept) */
	if (csock >= 0 && (csock = fcntl(csock, F_DUPFD_CLOEXEC, 10)) < 0)
		fail(fce, GOVEX_STEP_STDIO, errno);
	fce = stdio(f, fce, csock);
	const char *wd = spec_workdir(s);
	if (!wd || chdir(wd) < 0)
		fail(fce, GOVEX_STEP_CHDIR, wd ? errno : EINVAL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(fce, GOVEX_STEP_NO_NEW_PRIVS, errno);
	landlock(s, fce);
	identity(s, fce);
	bool deferred = s->h->deferred;
	if (!deferred)
		rlimits(s, fce);
	if (seccomp_load(p->filter, false) < 0)
		fail(fce, GOVEX_STEP_SECCOMP, errno);
	if (deferred) {
		/* a spare: the go, then the rlimits (the allowlist has setrlimit) -- RLIMIT_AS
		 * counts what is mapped, and mapping the go's spec under a tight memory limit
		 * would fail where a cold run's start does not */
		struct spec go;
		program_go(&go, csock, fce);
		rlimits(s, fce);
		munmap((void *)s->base, s->size);
		*s = go;
	}
	out->spec = s->base;
	out->size = s->size;
	out->first = sizeof(struct zyg_hdr);
	out->fce = fce;
	out->text = s->h->text;
}

/* P, made ahead: waits for the run's descriptors from B, then for B's go, takes the
 * cold program child's steps and returns (0) for zygote.py to run the code. */
static int program_main(const struct zyg_params *p, int pair, const sigset_t *mask,
			struct zyg_out *out)
{
	if (p->after_fork_child)
		p->after_fork_child();
	sigprocmask(SIG_SETMASK, mask, NULL);
	int keep[] = {pair};
	close_except(keep, 1);
	/* its own session (setsid, the cold program child's step after the cgroups), made
	 * here before the run: nothing of a run depends on it */
	int serr = setsid() < 0 ? errno : 0;
	prctl(PR_SET_NAME, p->comm, 0, 0, 0);
	struct runfds f = {.n = 0};
	char tag;
	ssize_t n;
	do
		n = recv_fds(pair, &tag, f.fds, MAX_FDS, &f.n, 0);
	while (n == -EINTR);
	if (n <= 0 || tag != 'F' || f.n < 7)
		_exit(0); /* B ended (the template is retired) or failed */
	runfds_index(&f, NULL);
	struct spec s;
	int r = spec_map(f.spec, &s);
	if (r < 0)
		fail(f.ce, GOVEX_STEP_SHIM, -r);
	if (runfds_index(&f, s.h) < 0)
		fail(f.ce, GOVEX_STEP_SHIM, EINVAL);
	if (serr)
		fail(f.ce, GOVEX_STEP_SETSID, serr);
	int theirs[] = {f.kill, f.rep, f.watch, f.cpu};
	for (size_t i = 0; i < ARRAY_SIZE(theirs); i++)
		if (theirs[i] >= 0)
			close(theirs[i]);
	f.cpu = f.watch = -1;
	char go = 0;
	if (read1(pair, &go) != 1 || go != 'G')
		_exit(0); /* B reported the failure on the error pipe */
	int csock = pair;
	if (!s.h->notify && !s.h->deferred) {
		close(pair);
		csock = -1;
	}
	program(p, &s, &f, csock, out);
	return 0;
}

/* ---- B made ahead ------------------------------------------------------------------- */

/* In B, cloned by T into the run's namespaces: forks P and waits for one run.  Returns
 * only in P (0). */
static int init_main(const struct zyg_params *p, int taken, int netfd, struct zyg_out *out)
{
	enum govex__step fstep = GOVEX__STEP_NONE;
	int ferr = 0;
	int keep[] = {p->ctl, taken, netfd};
	close_except(keep, ARRAY_SIZE(keep));
	if (netfd >= 0 && setns(netfd, CLONE_NEWNET) < 0) {
		fstep = GOVEX_STEP_CLONE;
		ferr = errno;
	}
	if (netfd >= 0)
		close(netfd);
	if (!fstep && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fstep = GOVEX_STEP_MOUNT_PRIVATE;
		ferr = errno;
	}
	/* named like a cold run's shim, not like the interpreter */
	prctl(PR_SET_NAME, "govex-init", 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	int pair[2] = {-1, -1};
	pid_t c = -1;
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	struct init b = {.child = -1, .lsock = -1, .listener = -1, .sfd = -1};
	if (!fstep && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
		fstep = GOVEX_STEP_FORK;
		ferr = errno;
	}
	if (!fstep && (b.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fstep = GOVEX_STEP_FORK;
		ferr = errno;
	}
	if (!fstep) {
		c = fork();
		if (c == 0) {
			close(pair[0]);
			return program_main(p, pair[1], &old, out);
		}
		if (c < 0) {
			fstep = GOVEX_STEP_FORK;
			ferr = errno;
			closep(&pair[0]); /* (no child to watch: the next run is told) */
		}
		closep(&pair[1]);
	}
	b.child = c;
	/* a failure: this process takes the next run and reports it as that run's */
	for (;;) {
		struct pollfd pf[2] = {{.fd = p->ctl, .events = POLLIN},
				       {.fd = pair[0], .events = POLLIN}};
		int n = poll(pf, pair[0] >= 0 ? 2 : 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(0);
		if (pair[0] >= 0 && pf[1].revents)
			_exit(0); /* the program child is gone (nothing of a run was here) */
		if (!pf[0].revents)
			continue;
		char tag;
		ssize_t r = recv_fds(p->ctl, &tag, b.f.fds, MAX_FDS, &b.f.n, MSG_DONTWAIT);
		if (r == -EAGAIN || r == -EINTR)
			continue; /* another init took it */
		if (r <= 0) {
			/* the host closed the control socket: the template is retired */
			full_write(taken, "E", 1);
			_exit(0);
		}
		if (tag == 'R' && b.f.n >= 7)
			break;
		for (size_t i = 0; i < b.f.n; i++)
			close(b.f.fds[i]);
		b.f.n = 0;
	}
	full_write(taken, "T", 1);
	close(taken);
	close(p->ctl);
	runfds_index(&b.f, NULL);
	init_run(&b, pair[0], fstep, ferr);
}

/* ---- T: the template's loop --------------------------------------------------------------- */

struct kid {
	int pidfd, taken, netfd;
	bool spare;
};

struct tmpl {
	const struct zyg_params *p;
	struct kid *kids;
	size_t n, cap, spares;
	int *free_net;
	size_t n_free, cap_free;
	int own_net; /* T's own network namespace */
};

/* A new network namespace (its descriptor), T staying in its own. */
static int netns_new(struct tmpl *t)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int e = fd < 0 ? -errno : 0;
	if (setns(t->own_net, CLONE_NEWNET) < 0)
		_exit(1); /* T in a namespace not its own: nothing of it can go on */
	return fd < 0 ? e : fd;
}

/* Whether the namespace holds nothing of a run: no socket of any kind, no unix socket
 * listed (one in flight included), the loopback down. */
static bool netns_clean(struct tmpl *t, int fd)
{
	if (setns(fd, CLONE_NEWNET) < 0)
		return false;
	bool clean = false;
	char buf[8192];
	int f = open("/proc/self/net/sockstat", O_RDONLY | O_CLOEXEC);
	ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (f >= 0)
		close(f);
	if (n > 0) {
		buf[n] = '\0';
		clean = strncmp(buf, "sockets: used 0\n", 16) == 0;
	}
	if (clean) {
		clean = false;
		f = open("/proc/self/net/unix", O_RDONLY | O_CLOEXEC);
		n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
		if (f >= 0)
			close(f);
		if (n > 0) {
			buf[n] = '\0';
			char *nl = strchr(buf, '\n');
			clean = nl && nl[1] == '\0'; /* the header alone */
		}
	}
	if (clean) {
		int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr;
		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, "lo", 3);
		clean = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP);
		if (s >= 0)
			close(s);
	}
	if (setns(t->own_net, CLONE_NEWNET) < 0)
		_exit(1);
	return clean;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *np = realloc(*p, nc * elem);
	if (!np)
		return false;
	*p = np;
	*cap = nc;
	return true;
}

/* Makes one spare; returns 0 in T, 1 in P (out filled), -errno. */
static int spare_make(struct tmpl *t, struct zyg_out *out)
{
	const struct zyg_params *p = t->p;
	if (!grow((void **)&t->kids, &t->cap, t->n + 1, sizeof(*t->kids)) ||
	    !grow((void **)&t->free_net, &t->cap_free, t->n + t->n_free + 1, sizeof(int)))
		return -ENOMEM;
	int tp[2];
	if (pipe2(tp, O_CLOEXEC) < 0)
		return -errno;
	int netfd = -1;
	if (p->netns) {
		if (t->n_free)
			netfd = t->free_net[--t->n_free];
		else if ((netfd = netns_new(t)) < 0) {
			close(tp[0]);
			close(tp[1]);
			return netfd;
		}
	}
	int pidfd = -1;
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		close(tp[0]);
		init_main(p, tp[1], netfd, out);
		return 1; /* in P */
	}
	int e = -errno;
	close(tp[1]);
	if (pid < 0) {
		close(tp[0]);
		if (netfd >= 0)
			t->free_net[t->n_free++] = netfd;
		return e;
	}
	t->kids[t->n++] =
	    (struct kid){.pidfd = pidfd, .taken = tp[0], .netfd = netfd, .spare = true};
	t->spares++;
	return 0;
}

/* A kid ended: reaped; its network namespace back in the pool when it is clean. */
static void kid_end(struct tmpl *t, size_t i)
{
	struct kid *k = &t->kids[i];
	siginfo_t si;
	while (waitid((idtype_t)P_PIDFD, (id_t)k->pidfd, &si, WEXITED | WALL) < 0 && errno == EINTR)
		;
	close(k->pidfd);
	if (k->spare) {
		t->spares--;
		closep(&k->taken);
	}
	if (k->netfd >= 0) {
		if (netns_clean(t, k->netfd))
			t->free_net[t->n_free++] = k->netfd;
		else
			close(k->netfd);
	}
	t->kids[i] = t->kids[--t->n];
}

int govex_zyg_serve(const struct zyg_params *p, struct zyg_out *out)
{
	struct tmpl t = {.p = p, .own_net = -1};
	/* T's own network namespace, one its user namespace owns (the template's may be its
	 * parent's, as root): T can come back to it from the ones it makes */
	if (p->netns && (unshare(CLONE_NEWNET) < 0 ||
			 (t.own_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0))
		return -errno;
	struct pollfd *pf = NULL;
	size_t cap_pf = 0;
	/* A taken spare is replaced once a run ended, or at once when none is left: making
	 * one (a clone of this interpreter) on the CPU a run that just started needs would
	 * be paid by that run's latency. */
	bool refill = true;
	for (;;) {
		if (t.spares == 0)
			refill = true;
		while (refill && t.spares < (size_t)p->spares) {
			int r = spare_make(&t, out);
			if (r == 1) {
				/* P: the run's code is next (T's tables are nothing of its own) */
				free(pf);
				free(t.kids);
				free(t.free_net);
				return 0;
			}
			if (r < 0) {
				struct timespec ts = {0, 10000000}; /* out of processes for now */
				nanosleep(&ts, NULL);
				break;
			}
		}
		if (t.spares >= (size_t)p->spares)
			refill = false;
		if (!grow((void **)&pf, &cap_pf, 2 * t.n + 1, sizeof(*pf)))
			_exit(1);
		size_t np = 0;
		for (size_t i = 0; i < t.n; i++) {
			pf[np++] = (struct pollfd){.fd = t.kids[i].pidfd, .events = POLLIN};
			pf[np++] = (struct pollfd){.fd = t.kids[i].spare ? t.kids[i].taken : -1,
						   .events = POLLIN};
		}
		int n = poll(pf, np, refill && t.spares < (size_t)p->spares ? 10 : -1);
		if (n < 0 && errno != EINTR)
			_exit(1);
		if (n <= 0)
			continue;
		/* from the end: kid_end moves the last kid into the ended one's place */
		for (size_t i = t.n; i-- > 0;) {
			struct kid *k = &t.kids[i];
			if (k->spare && pf[2 * i + 1].revents) {
				char b = 0;
				if (read1(k->taken, &b) == 1 && b == 'E')
					_exit(0); /* retired: the host closed the control socket */
				k->spare = false;
				t.spares--;
				closep(&k->taken);
			}
			if (pf[2 * i].revents) {
				kid_end(&t, i);
				refill = true;
			}
		}
	}
}
