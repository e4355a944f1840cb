/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (zyg.c has the whole picture): a run's init (B, PID 1 of the
 * run): its places, the go of a spare, the supervision of its program and the shim report; made
 * ahead by the template (zyg_init_main).  B shares the template's memory: every call here is
 * the kernel's own (zyg_int.h, zs), but for the fork of its program (zyg.c).
 */
#include "zyg_int.h"

/* ---- B: the run's own places ---------------------------------------------------------- */

int zyg_mnt(const char *src, const char *dst, const char *type, unsigned long fl, const char *data)
{
	return (int)ZS5(SYS_mount, src, dst, type, fl, data);
}

int zyg_bind_ro(const char *src, const char *dst)
{
	int r = zyg_mnt(src, dst, NULL, MS_BIND, NULL);
	if (r == 0)
		r = zyg_mnt(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MNT_FL, NULL);
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
		ssize_t pl = zyg_rec_str(&rc, 0);
		if (pl < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		if (!mounted) {
			int e =
			    zyg_mnt("tmpfs", wd, "tmpfs", MNT_FL, "size=64k,nr_inodes=8,mode=0755");
			if (e < 0)
				zyg_fail(fce, GOVEX_STEP_TMPFS, -e);
			mounted = true;
		}
		char src[4096];
		size_t wl = strlen(wd);
		if (wl + 16 > sizeof(src))
			zyg_fail(fce, GOVEX_STEP_TMPFS, ENAMETOOLONG);
		memcpy(src, wd, wl);
		src[wl] = '/';
		src[wl + 1] = (char)('0' + k % 10);
		src[wl + 2] = (char)('0' + k / 10);
		src[wl + 3] = '\0';
		k++;
		int fd = z_open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, -fd);
		size_t cl = rc.len - (uint32_t)pl - 1;
		ssize_t w = zyg_full_write(fd, rc.data + pl + 1, cl);
		if (w < 0 || (w = ZS2(SYS_fchmod, fd, 0644)) < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, (int)-w);
		z_close(fd);
		int e = zyg_bind_ro(src, rc.data);
		if (e < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, -e);
	}
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

static void tmpfs_places(const struct spec *s, int fce)
{
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_TMPFS, rc, r)
	{
		ssize_t pl = zyg_rec_str(&rc, 0);
		if (pl < 0 || zyg_rec_str(&rc, (uint32_t)pl + 1) < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		int e = zyg_mnt("tmpfs", rc.data, "tmpfs", MNT_FL, rc.data + pl + 1);
		if (e < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, -e);
	}
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

/* Files in: the workdir's descriptor to the host (template_relay.c), which writes the
 * files (and the output directory) there as the cold shim does; then each file bound
 * read-only onto itself, in the run's mount namespace. */
static void files_in(const struct spec *s, const char *wd, int watch, int fce)
{
	int fd = z_open(wd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -fd);
	int e = zyg_send_fds(watch, 'W', &fd, 1);
	z_close(fd);
	if (e < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -e);
	char go = 0;
	if (zyg_read1(watch, &go) != 1 || go != 'G')
		z_exit(0); /* the host reported the failure on the error pipe */
	struct recd rc;
	int r;
	char path[4096];
	size_t wl = strlen(wd);
	SPEC_EACH(s, ZR_FILE, rc, r)
	{
		ssize_t nl = zyg_rec_str(&rc, 0);
		if (nl < 0 || wl + 1 + (size_t)nl + 1 > sizeof(path))
			zyg_fail(fce, GOVEX_STEP_WORKDIR, EINVAL);
		memcpy(path, wd, wl);
		path[wl] = '/';
		memcpy(path + wl + 1, rc.data, (size_t)nl + 1);
		if ((e = zyg_bind_ro(path, path)) < 0)
			zyg_fail(fce, GOVEX_STEP_WORKDIR, -e);
	}
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

/* Outputs and no file in: the output directory made here, as the cold shim makes it
 * (files.c, govex__files_place: mode 0700, the run's ids), in the run's fresh workdir
 * before anything of the run started; the workdir's descriptor goes to the host
 * one-way (it collects the outputs from it). */
static void output_dir(const struct spec *s, const char *wd, int watch, int fce)
{
	int fd = z_open(wd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -fd);
	int e = z_mkdirat(fd, GOVEX__OUTPUT_DIR, 0700);
	if (e < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -e);
	if (s->h->uid != 0xFFFFFFFFu &&
	    (e = (int)ZS5(SYS_fchownat, fd, GOVEX__OUTPUT_DIR, s->h->uid, s->h->gid,
			  AT_SYMLINK_NOFOLLOW)) < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -e);
	e = zyg_send_fds(watch, 'O', &fd, 1);
	z_close(fd);
	if (e < 0)
		zyg_fail(fce, GOVEX_STEP_WORKDIR, -e);
}

/* proc for the run's PID namespace: subset=pid where the kernel has it, else the whole
 * of it with the host-wide files masked; hidepid hides PID 1 (this init: its memory is
 * the template's, and its size changes with every other run of the template) as a cold
 * run's proc hides its shim (mounts.c, new_proc). */
static void proc_mount(const struct spec *s, int fce)
{
	if (zyg_mnt("proc", "/proc", "proc", MNT_FL, "subset=pid,hidepid=invisible") == 0)
		return;
	int e = zyg_mnt("proc", "/proc", "proc", MNT_FL, "hidepid=2");
	if (e < 0)
		zyg_fail(fce, GOVEX_STEP_PROC, -e);
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_MASK, rc, r)
	{
		if (zyg_rec_str(&rc, 0) < 0)
			zyg_fail(fce, GOVEX_STEP_PROC_MASK, EINVAL);
		struct statx sx = {0};
		if (ZS5(SYS_statx, AT_FDCWD, rc.data, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0 ||
		    S_ISLNK(sx.stx_mode))
			continue;
		if (S_ISDIR(sx.stx_mode))
			e = zyg_mnt("tmpfs", rc.data, "tmpfs", MS_RDONLY | MNT_FL,
				    "size=4k,nr_inodes=1,mode=0555");
		else
			e = zyg_bind_ro("/dev/null", rc.data);
		if (e < 0)
			zyg_fail(fce, GOVEX_STEP_PROC_MASK, -e);
	}
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
}

/* ---- B: the run's init ---------------------------------------------------------------- */

/* A decimal at s (strtoll writes errno): its value, or -1. */
static int64_t decimal(const char *s)
{
	int64_t v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static int64_t cpu_ns(const struct init *b)
{
	if (b->f.cpu < 0)
		return -1;
	char buf[4096];
	ssize_t n = z_pread(b->f.cpu, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (b->s.h->cpu_version == 1)
		return decimal(buf);
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strncmp(l, "usage_usec ", 11) == 0) {
			int64_t us = decimal(l + 11);
			return us < 0 ? -1 : us * 1000;
		}
	return -1;
}

static void close_listener(struct init *b)
{
	zyg_closep(&b->listener);
}

/* One notification on the program's guard listener, answered as a cold run's shim
 * answers it (rlayers_answer): in a warm run the interpreter runs already, every execve
 * is a later one (no exec_once). */
static void zyg_answer(struct init *b)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ZS3(SYS_ioctl, b->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* the caller went away (ENOENT) or EINTR */
	struct seccomp_notif_resp resp;
	int32_t max = b->s.h->denials_max;
	bool full = rlayers_answer(&req, false, max > 0 ? (uint64_t)max : 0, &b->den, &resp);
	ZS3(SYS_ioctl, b->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (full)
		close_listener(b); /* the kernel refuses the rest (ENOSYS) */
}

static void take_listener(struct init *b)
{
	char tag;
	int fd = -1;
	size_t n = 0;
	ssize_t r = zyg_recv_fds(b->lsock, &tag, &fd, 1, &n, 0);
	zyg_closep(&b->lsock);
	if (r > 0 && n == 1 && tag == 'L')
		b->listener = fd;
	else if (n == 1)
		z_close(fd);
}

/* Reaps what is there; true once the program child is (its status in *st). */
bool zyg_reap(struct init *b, int *st, bool *got)
{
	for (;;) {
		int wst = 0; /* (the kernel's: the analyzer cannot see it fill it) */
		pid_t pid = z_wait(-1, &wst, WNOHANG | WALL);
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
		int n = z_poll(p, 4, tmo);
		if (n < 0 && n != -EINTR)
			break;
		if (n > 0 && p[0].revents) {
			killed = 1;
			break;
		}
		if (n > 0 && p[2].revents)
			take_listener(b);
		if (n > 0 && p[3].revents) {
			if (p[3].revents & POLLIN)
				zyg_answer(b);
			else
				close_listener(b); /* no task left under the filter */
		}
		if (n > 0 && p[1].revents) {
			struct signalfd_siginfo si;
			while (z_read(b->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
		if (zyg_reap(b, &status, &got))
			break;
		if (budget >= 0 && (used = cpu_ns(b)) >= budget)
			break;
	}
	/* kill and reap everything in the run's PID namespace (all but this process, its
	 * PID 1: kill(-1) reaches only the namespace's processes, and only from inside) */
	if (z_getpid() == 1) {
		for (;;) {
			z_kill(-1, SIGKILL);
			int wst = 0;
			pid_t pid = z_wait(-1, &wst, WALL);
			if (pid == -EINTR)
				continue;
			if (pid < 0)
				break;
			if (pid == b->child && !got) {
				status = wst;
				got = true;
			}
		}
	} else {
		z_kill(b->child, SIGKILL);
		zyg_reap(b, &status, &got);
	}
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	ZS2(SYS_getrusage, RUSAGE_CHILDREN, &ru);
	struct govex__shim_report rep = {
	    .wait_status = status,
	    .killed = killed,
	    .cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
		      (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
	    .max_rss_kb = ru.ru_maxrss,
	    .cgroup_oom = 0,
	    .net_denied = b->den.net_denied,
	    .exec_denied = b->den.exec_denied,
	};
	zyg_full_write(b->f.rep, &rep, sizeof(rep));
	/* the run is over (every process of it killed and reaped): the watch socket's end
	 * tells the host, without waiting for this process's exit (the teardown of the
	 * run's namespaces) */
	zyg_closep(&b->f.watch);
	z_exit(0);
}

/* Files in or the output directory (s: the run's records), and a go's remount. */
static void run_files(const struct spec *s, const char *wd, int watch, int fce)
{
	struct recd rc;
	int k;
	bool any = false;
	SPEC_EACH(s, ZR_REMOUNT, rc, k)
	{
		ssize_t pl = zyg_rec_str(&rc, 0);
		if (pl < 0 || zyg_rec_str(&rc, (uint32_t)pl + 1) < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, EINVAL);
		int e = zyg_mnt(NULL, rc.data, NULL, MS_REMOUNT | MNT_FL, rc.data + pl + 1);
		if (e < 0)
			zyg_fail(fce, GOVEX_STEP_TMPFS, -e);
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
			z_close(mine[i]);
	for (int i = 0; i < b->s.h->nprocs; i++)
		z_close(b->f.fds[b->f.procs0 + i]);
}

/* Every process of the namespace killed and reaped (a spare the host let go). */
static __attribute__((noreturn)) void init_drop(void)
{
	if (z_getpid() == 1)
		for (;;) {
			z_kill(-1, SIGKILL);
			pid_t r = z_wait(-1, NULL, WALL);
			if (r < 0 && r != -EINTR)
				break;
		}
	z_exit(0);
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
		int n = z_poll(p, 3, -1);
		if (n == -EINTR)
			continue;
		if (n < 0)
			init_drop();
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (z_read(b->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			int st;
			bool got = false;
			if (zyg_reap(b, &st, &got))
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
		ssize_t r = zyg_recv_fds(b->f.watch, &tag, fds, 2, &nf, 0);
		if (r == -EINTR)
			continue;
		if (r <= 0 || tag != 'g' || nf < 1) {
			for (size_t i = 0; i < nf; i++)
				z_close(fds[i]);
			init_drop(); /* the host let the spare go */
		}
		/* the go's spec, read here and forwarded to P with call mode's fd 3 */
		int fwd[2] = {z_fcntl(fds[0], F_DUPFD_CLOEXEC, 3), nf > 1 ? fds[1] : -1};
		struct spec gs = {0};
		int e = zyg_spec_load(fds[0], &gs, &b->km->spec[1]); /* (closes fds[0]) */
		if (e < 0 || fwd[0] < 0)
			zyg_fail(fce, GOVEX_STEP_SHIM, e < 0 ? -e : -fwd[0]);
		run_files(&gs, wd, b->f.watch, fce);
		e = zyg_send_fds(pair, 'g', fwd, fwd[1] >= 0 ? 2 : 1);
		z_close(fwd[0]);
		if (fwd[1] >= 0)
			z_close(fwd[1]);
		if (e < 0)
			zyg_fail(fce, GOVEX_STEP_FORK, -e);
		return; /* (the go's spec is T's to free, as the run's) */
	}
}

/* B, once a run's descriptors came: hands them to P, makes the run's places, lets P go
 * on and supervises the run.  failed: a failure while the namespaces were made, reported
 * as this run's.  Never returns. */
static __attribute__((noreturn)) void init_run(struct init *b, int pair, enum govex__step fstep,
					       int ferr)
{
	int fce = b->f.ce;
	int se = zyg_send_fds(pair, 'F', b->f.fds, b->f.n);
	int r = zyg_spec_load(b->f.spec, &b->s, &b->km->spec[0]);
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, -r);
	if (zyg_runfds_index(&b->f, b->s.h) < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
	if (fstep)
		zyg_fail(fce, fstep, ferr);
	if (se < 0)
		zyg_fail(fce, GOVEX_STEP_FORK, -se);
	const char *wd = zyg_spec_workdir(&b->s);
	if (!wd)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
	identity_files(&b->s, wd, fce);
	tmpfs_places(&b->s, fce);
	bool deferred = b->s.h->deferred;
	if (!deferred)
		run_files(&b->s, wd, b->f.watch, fce);
	proc_mount(&b->s, fce);
	ssize_t w = zyg_full_write(pair, "G", 1); /* P goes on: its places are there */
	if (w < 0)
		zyg_fail(fce, GOVEX_STEP_FORK, (int)-w);
	/* B's own pidfd to the host, which kills B (and so the run's PID namespace) should
	 * B not end after the host asked for the end (the last resort) */
	if (b->f.watch >= 0) {
		int pfd = (int)ZS2(SYS_pidfd_open, z_getpid(), 0);
		if (pfd >= 0) {
			zyg_send_fds(b->f.watch, 'p', &pfd, 1);
			z_close(pfd);
		}
	}
	if (deferred) {
		/* P's guard listener comes on a duplicate of pair (lsock, closed once it came,
		 * else kept for the supervision), pair itself carries the go */
		b->lsock = b->s.h->notify ? z_fcntl(pair, F_DUPFD_CLOEXEC, 3) : -1;
		if (b->s.h->notify && b->lsock < 0)
			zyg_fail(fce, GOVEX_STEP_FORK, -b->lsock);
		init_wait_go(b, pair, wd);
		z_close(pair);
	} else {
		b->lsock = b->s.h->notify ? pair : -1;
		if (!b->s.h->notify)
			z_close(pair);
	}
	close_mine(b);
	init_supervise(b);
}

/* ---- B made ahead ------------------------------------------------------------------- */

/* In B, cloned by T into the run's namespaces (sharing T's memory where ZYG_SHARED_INIT):
 * forks P, which goes back to T's frame (zyg_back), tells T it may go on, and waits for
 * one run.  Never returns. */
__attribute__((noreturn)) void zyg_init_main(const struct init_arg *a)
{
	/* a is T's, valid until T is told: what B keeps is copied */
	const struct zyg_params *p = a->p;
	int taken = a->taken, netfd = a->netfd;
	struct kid_mem *km = a->km;
	char *stack = a->stack;
	size_t stack_len = a->stack_len;
	enum govex__step fstep = GOVEX__STEP_NONE;
	int ferr = 0, e;
	/* no signal runs a handler here (the interpreter's would write T's memory); P gets
	 * T's mask back, SIGCHLD comes on the signalfd */
	sigset_t all, chld, old;
	sigfillset(&all);
	z_sigmask(SIG_BLOCK, &all, &old);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int keep[] = {p->ctl, taken, netfd};
	zyg_close_except(keep, ARRAY_SIZE(keep));
	if (netfd >= 0 && (e = (int)ZS2(SYS_setns, netfd, CLONE_NEWNET)) < 0) {
		fstep = GOVEX_STEP_CLONE;
		ferr = -e;
	}
	if (netfd >= 0)
		z_close(netfd);
	if (!fstep && (e = zyg_mnt(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) < 0) {
		fstep = GOVEX_STEP_MOUNT_PRIVATE;
		ferr = -e;
	}
	/* named like a cold run's shim, not like the interpreter; not dumpable (the mm's
	 * flag: T's too, and P's until its ids are set) */
	ZS2(SYS_prctl, PR_SET_NAME, "govex-init");
	ZS2(SYS_prctl, PR_SET_DUMPABLE, 0);
	int pair[2] = {-1, -1};
	pid_t c = -1;
	struct init b = {.child = -1, .lsock = -1, .listener = -1, .sfd = -1, .km = km};
	if (!fstep &&
	    (e = (int)ZS4(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair)) < 0) {
		fstep = GOVEX_STEP_FORK;
		ferr = -e;
	}
	if (!fstep &&
	    (b.sfd = (int)ZS4(SYS_signalfd4, -1, &chld, 8, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fstep = GOVEX_STEP_FORK;
		ferr = -b.sfd;
		b.sfd = -1;
	}
	if (!fstep) {
		/* libc's fork, for the program's libc (its thread's id, its locks): T waits,
		 * nothing else forks meanwhile (zyg.c), so errno is B's for this call */
		zyg_child = (struct zyg_child){
		    .pair = pair[1], .mask = old, .stack = stack, .stack_len = stack_len};
		c = fork();
		if (c == 0) {
			z_close(pair[0]);
			zyg_back(); /* P: on with T's frame */
		}
		if (c < 0) {
			fstep = GOVEX_STEP_FORK;
			ferr = errno;
			zyg_closep(&pair[0]); /* (no child to watch: the next run is told) */
		}
		zyg_closep(&pair[1]);
	}
	/* this stack is no later program's (a run's data will be on it), then T goes on */
	int dontfork = (int)ZS3(SYS_madvise, stack, stack_len, MADV_DONTFORK);
	zyg_full_write(taken, "F", 1);
	if (dontfork < 0)
		z_exit(0); /* takes no run (its PID namespace ends with it) */
	b.child = c;
	/* a failure: this process takes the next run and reports it as that run's */
	for (;;) {
		struct pollfd pf[2] = {{.fd = p->ctl, .events = POLLIN},
				       {.fd = pair[0], .events = POLLIN}};
		int n = z_poll(pf, pair[0] >= 0 ? 2 : 1, -1);
		if (n == -EINTR)
			continue;
		if (n < 0)
			z_exit(0);
		if (pair[0] >= 0 && pf[1].revents)
			z_exit(0); /* the program child is gone (nothing of a run was here) */
		if (!pf[0].revents)
			continue;
		char tag;
		ssize_t r = zyg_recv_fds(p->ctl, &tag, b.f.fds, MAX_FDS, &b.f.n, MSG_DONTWAIT);
		if (r == -EAGAIN || r == -EINTR)
			continue; /* another init took it */
		if (r <= 0) {
			/* the host closed the control socket: the template is retired */
			zyg_full_write(taken, "E", 1);
			z_exit(0);
		}
		if (tag == 'R' && b.f.n >= 7)
			break;
		for (size_t i = 0; i < b.f.n; i++)
			z_close(b.f.fds[i]);
		b.f.n = 0;
	}
	zyg_full_write(taken, "T", 1);
	z_close(taken);
	z_close(p->ctl);
	zyg_runfds_index(&b.f, NULL);
	init_run(&b, pair[0], fstep, ferr);
}
