/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (zyg.c has the whole picture): a run's program (P, PID 2):
 * its steps up to the user's code, the cold program child's order.
 */
#include "zyg_int.h"

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

/* a spare's program between its steps and its go (P's own memory) */
static struct spec spare;
static int spare_csock = -1;

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
	out->fce = fce;
	if (deferred) {
		/* a spare: back to the interpreter without a spec (out->spec NULL), which
		 * warms itself up and calls govex_zyg_go for the go */
		spare = *s;
		spare_csock = csock;
		out->spec = NULL;
		out->prewarm = s->h->prewarm;
		return;
	}
	out->spec = s->base;
	out->size = s->size;
	out->first = sizeof(struct zyg_hdr);
	out->text = s->h->text;
}

int govex_zyg_wait(int ms)
{
	if (spare_csock < 0)
		return 1;
	struct pollfd pfd = {.fd = spare_csock, .events = POLLIN};
	/* readable, ended, or poll failed (a signal): the go (or its end) may be there */
	return poll(&pfd, 1, ms) != 0;
}

int govex_zyg_go(struct zyg_out *out)
{
	/* the go, then the rlimits (the allowlist has setrlimit): RLIMIT_AS counts what is
	 * mapped, and mapping the go's spec under a tight memory limit would fail where a
	 * cold run's start does not */
	if (spare_csock < 0)
		fail(out->fce, GOVEX_STEP_SHIM, EINVAL);
	struct spec go;
	program_go(&go, spare_csock, out->fce);
	spare_csock = -1;
	rlimits(&spare, out->fce);
	munmap((void *)spare.base, spare.size);
	out->spec = go.base;
	out->size = go.size;
	out->first = sizeof(struct zyg_hdr);
	out->text = go.h->text;
	return 0;
}

/* P, made ahead: waits for the run's descriptors from B, then for B's go, takes the
 * cold program child's steps and returns (0) for zygote.py to run the code. */
int program_main(const struct zyg_params *p, int pair, const sigset_t *mask, struct zyg_out *out)
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
