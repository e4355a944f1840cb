/* SPDX-License-Identifier: MIT */
/*
 * The interpreter probe's sandbox.  Asking an interpreter for its version and paths runs
 * code the policy names (its stdlib, a wrapper script, a pyenv shim): that code is not
 * trusted, so it runs here and never as a plain child of the host (DESIGN.md, "Trust
 * boundaries"; contract item 3).  Built from the restricted backend's own pieces:
 *
 *   namespaces   govex__clone(rns_flags(): mount, PID, IPC, UTS, network; user when not
 *                root).  The shim is PID 1: when it exits every process of the probe dies.
 *   file system  rmount_apply() on a plan of: a recursive read-only bind of "/" (nosuid,
 *                nodev), over which a fresh /proc, a minimal /dev (null, zero, full,
 *                random, urandom) and an empty read-only /sys are mounted.  Nothing is
 *                writable: the host's /tmp stays visible, read-only, because an
 *                interpreter, a venv or the caller's cwd (where pyenv looks for
 *                .python-version) may live there.
 *   Landlock     rlandlock_apply() over the same plan (read and execute beneath "/"),
 *                TCP denied, abstract sockets and signals scoped.
 *   seccomp      rfilter_build(network denied, subprocesses allowed: a pyenv shim is a
 *                bash script that forks), plus a filter of our own refusing socket(): the
 *                read-only view still shows the host's pathname sockets (/run/docker.sock,
 *                agents), and a probe has no use for any socket.
 *   identity     not root: a user namespace mapping the caller's uid and gid to
 *                themselves; every capability dropped.  Root: uid 0 is kept, so that
 *                root's 0700 home (where pyenv lives) stays reachable by its owner bits,
 *                but nothing of root's privilege: no supplementary groups, empty bounding,
 *                permitted, effective, inheritable and ambient sets, and the securebits
 *                NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off), NO_CAP_AMBIENT_RAISE all locked,
 *                so that no execve() gives a capability back; no_new_privs as well.
 *                (An unprivileged sandbox uid could not read a pyenv under /root; a user
 *                namespace mapping 0 would hand DAC override over root's files back.)
 *                What remains is what uid 0 may read by owner bits, read-only, with no
 *                network and no channel out but the answer, which is bounded and
 *                validated (interp.c) before anything uses it.
 *   limits       a hard wall-clock timeout (the host's supervisor closes the kill pipe,
 *                the shim kills the namespace); stdout bounded; at most PROBE_TASKS_MAX
 *                tasks at once (counted by the shim); RLIMIT_AS (1 GiB), CPU, FSIZE,
 *                NOFILE, no core.  No cgroup yet: memory is bounded per process only.
 *
 * The caller's environment and cwd are passed: a shim (pyenv) reads PYENV_VERSION and
 * .python-version in the directories above the cwd.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "restricted.h"

#define PROBE_DEV_OPTS	 "size=64k,nr_inodes=64,mode=0755"
#define PROBE_SYS_OPTS	 "size=4k,nr_inodes=4,mode=0555"
#define PROBE_STDERR_MAX 4096
/* Tasks (threads included) the probe may have at once: a pyenv shim runs a few at a
 * time.  Without a cgroup (the kernel exempts uid 0 from RLIMIT_NPROC) the shim counts
 * them every PROBE_POLL_MS and kills the namespace beyond: a thread or fork bomb cannot
 * take the host's pid space. */
#define PROBE_TASKS_MAX 256
#define PROBE_POLL_MS	5

struct pctx {
	bool userns;
	char uid_map[32], gid_map[32];
	int landlock_abi;
	struct rplan plan;
	struct rscratch scr;
	struct rfilter filter;
	struct govex__pipes f;
	struct govex__limits lim;
	const char *exe;
	char *const *argv;
	char *const *envp;
	const char *cwd;
	/* a cgroup of the probe's own where the host can make one (memory and tasks of the
	 * whole probe, kernel-accounted), and the slot that names it */
	struct rcg_setup cgs;
	struct rcg_run cg;
	struct rslot slot;
};

/* ---- the plan --------------------------------------------------------------------- */

static int base_plan(struct rplan *ret)
{
	static const struct {
		enum rmount_kind kind;
		const char *path, *opts;
		uint64_t access;
	} e[] = {
	    {RM_BIND_RO, "/", NULL, LL_READ},
	    {RM_TMPFS, "/sys", PROBE_SYS_OPTS, 0},
	    {RM_TMPFS, "/dev", PROBE_DEV_OPTS, 0},
	    {RM_BIND_DEV, "/dev/null", NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE},
	    {RM_BIND_DEV, "/dev/zero", NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE},
	    {RM_BIND_DEV, "/dev/full", NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE},
	    {RM_BIND_DEV, "/dev/random", NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE},
	    {RM_BIND_DEV, "/dev/urandom", NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE},
	    {RM_SYMLINK, "/dev/fd", "/proc/self/fd", 0},
	    {RM_SYMLINK, "/dev/stdin", "/proc/self/fd/0", 0},
	    {RM_SYMLINK, "/dev/stdout", "/proc/self/fd/1", 0},
	    {RM_SYMLINK, "/dev/stderr", "/proc/self/fd/2", 0},
	    {RM_PROC, "/proc", NULL, LL_FS_READ_FILE | LL_FS_READ_DIR},
	    {RM_READONLY, "/sys", NULL, 0},
	    {RM_READONLY, "/dev", NULL, 0},
	};
	struct rplan pl = {.ro_access = LL_READ};
	pl.m = calloc(ARRAY_SIZE(e), sizeof(*pl.m));
	if (!pl.m)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(e); i++) {
		struct rmount *m = &pl.m[pl.n++];
		m->kind = e[i].kind;
		m->ll_access = e[i].access;
		m->path = strdup(e[i].path);
		m->opts = e[i].opts ? strdup(e[i].opts) : NULL;
		if (!m->path || (e[i].opts && !m->opts)) {
			rplan_free(&pl);
			return -ENOMEM;
		}
	}
	*ret = pl;
	return 0;
}

/* ---- inside (async-signal-safe) --------------------------------------------------- */

/* Refuses socket() (EACCES): loaded in addition to the restricted filter. */
static int no_sockets(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ARRAY_SIZE(f), .filter = f};
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -errno : 0;
}

/* Every capability gone for good (see the top of this file). */
static int drop_privilege(bool root, enum govex__step *step)
{
	if (root) {
		*step = GOVEX_STEP_SECUREBITS;
		if (prctl(PR_SET_SECUREBITS,
			  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
			  0, 0, 0) < 0)
			return -errno;
		*step = GOVEX_STEP_SETGROUPS;
		if (syscall(SYS_setgroups, 0, NULL) < 0)
			return -errno;
	}
	*step = GOVEX_STEP_CAPS;
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/* The probe child's steps up to execve: 0 or -errno with *step set. */
static int probe_setup(struct pctx *c, int *ce, enum govex__step *step)
{
	int r;
	*step = GOVEX_STEP_CGROUP;
	for (int i = 0; i < RCG_N; i++) {
		if (c->cg.procs_fd[i] < 0)
			continue;
		ssize_t w = write(c->cg.procs_fd[i], "0", 1);
		if (w != 1)
			return w < 0 ? -errno : -EIO;
	}
	*step = GOVEX_STEP_SETSID;
	if ((r = govex__neg_errno(setsid())) < 0)
		return r;
	if ((r = govex__child_stdio(c->f.in[0], c->f.out[1], c->f.err[1], -1, ce, step)) < 0)
		return r;
	*step = GOVEX_STEP_CHDIR;
	/* the caller's cwd; "/" when it is not visible here */
	if (chdir(c->cwd) < 0 && (r = govex__neg_errno(chdir("/"))) < 0)
		return r;
	*step = GOVEX_STEP_NO_NEW_PRIVS;
	if ((r = govex__neg_errno(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))) < 0)
		return r;
	if ((r = rlandlock_apply(c->landlock_abi, &c->plan, true, step)) < 0)
		return r;
	if ((r = drop_privilege(!c->userns, step)) < 0)
		return r;
	if ((r = govex__child_rlimits(&c->lim, step)) < 0)
		return r;
	govex__child_reset_signals();
	*step = GOVEX_STEP_SECCOMP;
	if ((r = no_sockets()) < 0)
		return r;
	return rfilter_load(&c->filter);
}

static __attribute__((noreturn)) void probe_child(struct pctx *c)
{
	enum govex__step step = GOVEX_STEP_CGROUP;
	int ce = c->f.ce[1];
	int r = probe_setup(c, &ce, &step);
	if (r >= 0) {
		step = GOVEX_STEP_EXECVE;
		r = govex__neg_errno(execve(c->exe, c->argv, c->envp));
	}
	govex__child_fail(ce, step, r < 0 ? -r : EPERM);
	_exit(127);
}

/* Counts the entries of a directory fd (raw getdents64: async-signal-safe). */
static long count_entries(int dfd, bool numeric_only, long stop_at)
{
	char buf[4096];
	long n = 0;
	for (;;) {
		long got = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (got <= 0)
			return n;
		for (long off = 0; off < got;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			if (d->name[0] != '.' &&
			    (!numeric_only || (d->name[0] >= '0' && d->name[0] <= '9')))
				n++;
			off += d->reclen;
		}
		if (n > stop_at)
			return n;
	}
}

/* Whether the PID namespace (its /proc) holds more than max tasks. */
static bool tasks_over(long max)
{
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0)
		return false;
	char buf[4096];
	long total = 0;
	bool over = false;
	for (;;) {
		long got = syscall(SYS_getdents64, proc, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (long off = 0; off < got && !over;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			char path[64] = "";
			size_t k = 0;
			for (const char *c = d->name; *c && k < 40; c++)
				path[k++] = *c;
			memcpy(path + k, "/task", 6);
			int t = openat(proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			total += t >= 0 ? count_entries(t, true, max) : 1;
			if (t >= 0)
				close(t);
			over = total > max;
		}
		if (over)
			break;
	}
	close(proc);
	return over;
}

/* The probe shim's work in the new namespaces: a signalfd for SIGCHLD, or -errno with
 * *step set. */
static int probe_shim_setup(struct pctx *c, enum govex__step *step)
{
	const struct govex__pipes *f = &c->f;
	int r;
	/* the host's handlers (the CLI's SIGINT/SIGTERM/SIGHUP) are not ours: with the
	 * default dispositions PID 1 ignores every signal sent from inside */
	govex__child_reset_signals();
	{
		int keep[16], n = 0;
		int mine[] = {f->in[0],		 f->out[1],	    f->err[1],
			      f->ce[1],		 f->rep[1],	    f->kill[0],
			      c->cg.procs_fd[0], c->cg.procs_fd[1], c->cg.procs_fd[2]};
		for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
			if (mine[i] >= 0)
				keep[n++] = mine[i];
		govex__close_fds_except(3, keep, (size_t)n);
	}
	*step = GOVEX_STEP_SHIM;
	if (c->userns && (r = rns_write_maps(c->uid_map, c->gid_map, step)) < 0)
		return r;
	/* a copy of the host: its memory and /proc entries are not the probe's to read */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* (its environment is not wiped: the probe's child gets it, for a pyenv shim) */
	return rns_shim_enter(&c->plan, &c->scr, step);
}

/* Waits for the child's end, the host's kill request or too many tasks, then kills and
 * reaps everything in the namespace; returns the child's wait status. */
static int probe_shim_wait(const struct pctx *c, pid_t child, int sfd,
			   struct govex__shim_report *rep)
{
	bool done = false;
	int status = 0;
	while (!done) {
		struct pollfd p[2] = {{.fd = c->f.kill[0], .events = POLLIN},
				      {.fd = sfd, .events = POLLIN}};
		int n = poll(p, 2, PROBE_POLL_MS);
		if (n < 0 && errno != EINTR)
			break;
		if (tasks_over(PROBE_TASKS_MAX)) {
			rep->killed = 2; /* ours, not the host's: the tree is killed below */
			break;
		}
		if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			rep->killed = 1; /* timeout, or the host died */
			break;
		}
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof(si)) > 0)
			;
		int wst;
		pid_t w;
		while ((w = waitpid(-1, &wst, WNOHANG | __WALL)) > 0)
			if (w == child) {
				status = wst;
				done = true;
			}
	}
	/* everything else in the namespace: killed and reaped until none is left */
	for (;;) {
		int wst;
		kill(-1, SIGKILL);
		pid_t w = waitpid(-1, &wst, __WALL);
		if (w == child && !done) {
			status = wst;
			done = true;
		}
		if (w < 0 && errno != EINTR)
			break;
	}
	return status;
}

static __attribute__((noreturn)) void probe_shim(void *ctx)
{
	struct pctx *c = ctx;
	const struct govex__pipes *f = &c->f;
	struct govex__shim_report rep;
	enum govex__step step = GOVEX_STEP_SHIM;
	memset(&rep, 0, sizeof(rep));
	int sfd = probe_shim_setup(c, &step);
	if (sfd < 0)
		govex__shim_fail(f->ce[1], step, sfd);
	pid_t child = govex__clone(0);
	if (child < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_FORK, -errno);
	if (child == 0)
		probe_child(c);
	close(f->in[0]);
	close(f->out[1]);
	close(f->err[1]);
	close(f->ce[1]);
	rep.wait_status = probe_shim_wait(c, child, sfd, &rep);
	govex__shim_report(f->rep[1], &rep);
}

/* ---- host side ---------------------------------------------------------------------- */

static void pctx_free(struct pctx *c)
{
	rcg_destroy(&c->cg);
	rcg_setup_free(&c->cgs);
	rslot_release(&c->slot); /* last: the name is free for another only now */
	rscratch_free(&c->scr);
	rplan_free(&c->plan);
	rfilter_free(&c->filter);
}

/* The probe's identity and bounds (nothing allocated). */
static void pctx_init(struct pctx *c, const char *exe, char *const argv[], char *const envp[],
		      const char *cwd, size_t out_max, uint64_t timeout_ms)
{
	memset(c, 0, sizeof(*c));
	rcg_run_init(&c->cg);
	c->slot.n = c->slot.fd = -1;
	c->userns = !govex__privileged();
	rns_id_maps(c->uid_map, sizeof(c->uid_map), c->gid_map, sizeof(c->gid_map), NULL, NULL);
	c->landlock_abi = rlandlock_abi();
	if (c->landlock_abi < 0)
		c->landlock_abi = 0;
	c->exe = exe;
	c->argv = argv;
	c->envp = envp;
	c->cwd = cwd && cwd[0] == '/' ? cwd : "/";
	c->lim.wall_ms = timeout_ms;
	c->lim.cpu_ms = timeout_ms;
	c->lim.memory_bytes = 1ULL << 30;
	c->lim.processes = PROBE_TASKS_MAX;
	c->lim.file_size_bytes = 1ULL << 20;
	c->lim.open_files = 256;
	c->lim.stdout_bytes = out_max;
	c->lim.stderr_bytes = PROBE_STDERR_MAX;
	/* the probe's own bounds never exceed the host's hard limits (a lower one,
	 * inherited, applies instead): a probe under prlimit still answers */
	govex__rlimits_clamp_to_host(&c->lim);
}

/* The sandbox's plan, cgroup and filter, before the shim exists. */
static int pctx_prepare(struct pctx *c, struct govex_error *err)
{
	struct rplan base = {0};
	int r;
	if ((r = base_plan(&base)) < 0 ||
	    (r = rplan_for_run(&base, NULL, NULL, NULL, NULL, &c->plan)) < 0 ||
	    (r = rscratch_alloc(&c->scr, c->plan.n)) < 0) {
		rplan_free(&base);
		return govex__err(err, GOVEX_EINTERP, -r, "interpreter probe: sandbox plan: %s",
				  strerror(-r));
	}
	rplan_free(&base);
	/* The whole probe's memory and tasks in a cgroup of its own, where one can be
	 * made (named by a run slot, like a run's); without one, the per-process rlimits
	 * and the shim's task count are what bound it. */
	char why[PATH_MAX + 80];
	rcg_discover(&c->cgs, false, RCG_MODE_CURRENT);
	struct govex_error ce;
	if (rslot_acquire(NULL, 65536, &c->slot, why, sizeof(why)) == 0 &&
	    rcg_create(&c->cgs, c->slot.id, &c->lim, 0, &c->cg, &ce) < 0) {
		for (int i = 0; i < RCG_N; i++)
			c->cg.procs_fd[i] = -1;
	}
	struct govex_error fe;
	if ((r = rfilter_build(true, false, false, &c->filter, &fe)) < 0)
		return govex__err(err, GOVEX_EINTERP, -r, "interpreter probe: %s", fe.message);
	return 0;
}

/* Why a probe that ran gave no answer. */
static void probe_why(const struct govex__outcome *o, size_t out_max, uint64_t timeout_ms,
		      char *why, size_t cap)
{
	if (o->term == GOVEX_TERM_LAUNCH_FAILED)
		snprintf(why, cap, "could not start in the sandbox (%s: %s)", o->failed_step,
			 strerror(o->failed_errno));
	else if (o->term == GOVEX_TERM_TIMEOUT)
		snprintf(why, cap, "timed out after %llu ms", (unsigned long long)timeout_ms);
	else if (o->term == GOVEX_TERM_EXITED && o->exit_code == 0)
		snprintf(why, cap, "answer larger than %zu bytes", out_max);
	else if (o->term == GOVEX_TERM_EXITED)
		snprintf(why, cap, "failed (exit status %d)", o->exit_code);
	else if (o->term == GOVEX_TERM_SIGNALED && o->signal == SIGKILL)
		snprintf(why, cap, "killed (more than %d tasks, or out of memory)",
			 PROBE_TASKS_MAX);
	else if (o->term == GOVEX_TERM_SIGNALED)
		snprintf(why, cap, "failed (killed by signal %d)", o->signal);
	else
		snprintf(why, cap, "failed");
}

static const struct govex__shim_ops probe_shim_ops = {
    .fork_step = GOVEX_STEP_CLONE,
    .shim = probe_shim,
};

int govex__probe_sandboxed(const char *exe, char *const argv[], char *const envp[], size_t out_max,
			   uint64_t timeout_ms, char **ret_out, struct govex_error *err)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	_cleanup_(pctx_free) struct pctx c;
	pctx_init(&c, exe, argv, envp, cwd, out_max, timeout_ms);
	int r = pctx_prepare(&c, err);
	if (r < 0)
		return r;
	struct govex__shim_ops ops = probe_shim_ops;
	ops.clone_flags = rns_flags(c.userns, true);
	struct govex__launch l = {
	    .limits = &c.lim,
	    .argv = argv,
	    .envp = envp,
	    .cancel_fd = -1,
	    .extra_fd = -1,
	    .frame_fd = -1,
	};
	_cleanup_(govex__outcome_release) struct govex__outcome o = {0};
	struct govex_error se;
	if ((r = govex__run_shim(&l, &c.f, &ops, &c, &o, &se)) < 0)
		return govex__err(err, GOVEX_EINTERP, -r,
				  "interpreter probe: cannot make the sandbox: %s: %s",
				  o.failed_step, strerror(-r));
	if (o.term == GOVEX_TERM_EXITED && o.exit_code == 0 && !o.out_truncated) {
		*ret_out = o.out.data ? TAKE_PTR(o.out.data) : strdup("");
		return *ret_out
			   ? 0
			   : govex__err(err, ENOMEM, ENOMEM, "interpreter probe: out of memory");
	}
	char why[96];
	probe_why(&o, out_max, timeout_ms, why, sizeof(why));
	return govex__err(err, GOVEX_EINTERP, 0, "interpreter '%.120s': probe %s (is it Python 3?)",
			  exe, why);
}
