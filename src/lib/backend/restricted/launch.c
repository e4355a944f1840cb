/* SPDX-License-Identifier: MIT */
/*
 * govex.restricted-linux/v1: the Linux sandbox backend.  See restricted.h for the
 * lifecycle and the process layout.
 *
 * Identity: as root, the shim stays root (outside any user namespace) to build the
 * sandbox and the program runs as an unprivileged host uid and gid of its own: the run
 * slot's (slot.c), base + N where base is opts->sandbox_uid/gid (default 0x7f000000)
 * and N < opts->sandbox_uid_count (default 65536).  Concurrent runs never share an
 * identity, so they share no per-user kernel limit and cannot read each other's
 * files.  As an ordinary user, the shim gets a user namespace in which
 * the caller's uid and gid are mapped to themselves: the program keeps the caller's ids
 * (files it creates in a write root belong to the caller) and loses every capability at
 * execve because it is not uid 0 there.
 *
 * Order in the program child (minijail's): the signals' defaults, then the inner layers
 * (layers.c, as a warm run enters them too): cgroups, cgroup namespace, setsid, the
 * seccomp guard (tty ioctls; under subprocess: deny its execve listener goes to the shim,
 * see execonce.c), stdio, chdir, no_new_privs, Landlock, ids and capabilities, rlimits,
 * the seccomp allowlist; then execve.  (User notifications with CONTINUE need Linux 5.5; this
 * backend already needs 5.12 for the mount API.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress.h"
#include "files.h"
#include "restricted.h"

/* ---- prepare ------------------------------------------------------------------------ */

static void restricted_release(void *state)
{
	struct rstate *st = state;
	if (!st)
		return;
	rwarm_free(st->warm); /* first: its templates use the filters */
	rplan_free(&st->plan);
	rfilter_free(&st->filter);
	rfilter_free(&st->guard);
	rcg_setup_free(&st->cg);
	pthread_mutex_destroy(&st->cg_lock);
	free(st);
}

static int restricted_prepare(const struct govex_runtime_options *opts,
			      const struct govex_policy *p, const struct govex__interp *interp,
			      void **ret_state, struct govex_error *err)
{
	struct rstate *st = calloc(1, sizeof(*st));
	if (!st)
		return govex__err(err, ENOMEM, ENOMEM, "restricted: out of memory");
	pthread_mutex_init(&st->cg_lock, NULL);
	st->userns = !govex__privileged();
	if (st->userns) {
		rns_id_maps(st->uid_map, sizeof(st->uid_map), st->gid_map, sizeof(st->gid_map),
			    &st->uid, &st->gid);
	}
	/* root: slot N is uid id_base + N, gid gid_base + N (kept below (uid_t)-1) */
	uint32_t ubase = opts && opts->sandbox_uid ? opts->sandbox_uid : RSLOT_ID_BASE;
	uint32_t gbase = opts && opts->sandbox_gid ? opts->sandbox_gid : ubase;
	uint32_t count = opts && opts->sandbox_uid_count ? opts->sandbox_uid_count : RSLOT_ID_COUNT;
	uint32_t top = ubase > gbase ? ubase : gbase;
	if (count > 0xfffffffeu - top)
		count = 0xfffffffeu - top;
	st->id_base = ubase;
	st->gid_base = gbase;
	st->id_count = count;
	if (!st->userns && count == 0) {
		restricted_release(st);
		return govex__err(err, GOVEX_EINVAL, EINVAL,
				  "restricted: sandbox_uid %u leaves no room for run ids", ubase);
	}
	{
		cpu_set_t set;
		st->ncpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
		if (st->ncpus <= 0)
			st->ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
		if (st->ncpus <= 0)
			st->ncpus = 1;
	}
	st->filter_net = p->net_allow != NULL;
	st->deny_net = !p->network && !st->filter_net;
	st->deny_subprocess = !p->subprocess;
	int abi = rlandlock_abi();
	st->landlock_abi = abi > 0 ? abi : 0;
	int r = rplan_build(p, interp, &st->plan, err);
	for (size_t i = 0; r >= 0 && i < st->plan.n; i++)
		if ((st->plan.m[i].kind == RM_BIND_RO || st->plan.m[i].kind == RM_BIND_RW) &&
		    strcmp(st->plan.m[i].path, "/") == 0)
			st->root_bind = true;
	/* network: deny: socket() refused and counted by the shim (execonce.c); subprocess:
	 * deny: every execve but the first, fork, vfork and a new process's clone, too.
	 * Compiled in at build time where this host is the build's (seccomp.c). */
	if (r >= 0 && st->filter_net)
		r = rfilters_get_filtered(st->deny_subprocess, &st->filter, &st->guard, err);
	else if (r >= 0)
		r = rfilters_get(st->deny_net, st->deny_subprocess, &st->filter, &st->guard, err);
	if (r < 0) {
		restricted_release(st);
		return r;
	}
	*ret_state = st;
	return 0;
}

/* ---- the program child (async-signal-safe) ----------------------------------------- */

/* Where a fresh workdir is inside: its own tmpfs, unless the policy binds the host's "/"
 * (no mount point can be made in that tree without writing to the host). */
#define WORKDIR_PATH "/govex/work"

static const char *restricted_private_workdir(const void *state)
{
	const struct rstate *st = state;
	return st && !st->root_bind ? WORKDIR_PATH : NULL;
}

struct run_ctx {
	const struct rstate *st;
	const struct govex__launch *l;
	const char *exe; /* what the program child executes (govex__launch_exe) */
	struct govex__pipes f;
	struct rplan plan;
	struct rscratch scr;
	struct rcg_run cg;
	uid_t uid; /* the program's ids (root: the slot's) */
	gid_t gid;
	/* subprocess: deny: the program child hands its execve listener to the shim over
	 * this socketpair ([0] the shim's end, [1] the child's), or -1 */
	int xsock[2];
	/* a cold run's cgroups are made by the host once the shim exists, and handed to it
	 * over this socketpair ([0] the host's end, [1] the shim's: rcg_send), or -1 */
	int cgsock[2];
	struct rslot slot;
	char why[PATH_MAX + 80]; /* why no slot could be taken */
	bool wd_tmpfs; /* the workdir is the run's own tmpfs: files in and out are the shim's */
	int netns_fd;  /* root, network: deny, cold: the slot's empty namespace (ns.c), or -1 */
	bool warm;     /* forked from the runtime's template (template.c) */
	/* filtered networking (cold runs only): the shim hands the proxy's listening socket,
	 * made in the run's network namespace, to the host over this socketpair ([0] the
	 * host's end, [1] the shim's), or -1; the proxy serving it; the program's
	 * environment with the proxy's variables (else NULL: the launch's) */
	int egsock[2];
	struct govex__egress *egress;
	char **envp;
};

/* The program child's steps up to execve, in the order of the top of this file (the
 * inner layers: layers.c): 0 or -errno with *step set, *ce where the error pipe is. */
static int program_setup(struct run_ctx *c, int *ce, enum govex__step *step)
{
	const struct rstate *st = c->st;
	const struct govex__launch *l = c->l;
	/* the host's handlers and mask are not the program's (the shim's SIGCHLD blocked) */
	govex__child_reset_signals();
	const struct sock_fprog guard = {.len = st->guard.len, .filter = st->guard.insns};
	const struct sock_fprog filter = {.len = st->filter.len, .filter = st->filter.insns};
	struct rlayers_rlimit rl[RLAYERS_RLIMIT_MAX];
	/* under subprocess: deny (or network: deny), the guard's listener goes to the shim,
	 * which lets only the first execve through (execonce.c) */
	if (c->xsock[1] >= 0)
		close(c->xsock[0]);
	struct rlayers ly = {
	    .setsid = true,
	    .guard = &guard,
	    .notify_sock = c->xsock[1],
	    .in = c->f.in[0],
	    .out = c->f.out[1],
	    .err = c->f.err[1],
	    .extra = l->extra_fd,
	    .errpipe = *ce,
	    .workdir = l->workdir,
	    .setid = !st->userns,
	    .uid = (uint32_t)c->uid,
	    .gid = (uint32_t)c->gid,
	    .rlimits = rl,
	    .n_rlimits = rlayers_rlimits(l->limits, rl),
	    .filter = &filter,
	};
	int procs[RCG_N];
	for (int i = 0; i < RCG_N; i++)
		if (c->cg.procs_fd[i] >= 0)
			procs[ly.n_procs++] = c->cg.procs_fd[i];
	ly.procs = procs;
	rlandlock_fill(&ly, st->landlock_abi, &c->plan, st->deny_net);
	/* filtered networking, a second wall where Landlock has TCP (ABI 4): connect()
	 * only to the proxy's port */
	if (st->filter_net && st->landlock_abi >= 4) {
		ly.ll_attr[1] = LL_NET_CONNECT_TCP;
		ly.ll_connect_port = RNET_PROXY_PORT;
	}
	int r = rlayers_enter(&ly, step);
	*ce = ly.errpipe;
	return r;
}

static __attribute__((noreturn)) void program_child(struct run_ctx *c)
{
	enum govex__step step = GOVEX_STEP_CGROUP;
	int ce = c->f.ce[1];
	int r = program_setup(c, &ce, &step);
	if (r >= 0) {
		step = GOVEX_STEP_EXECVE;
		r = govex__neg_errno(
		    execve(c->exe, c->l->argv, c->envp ? c->envp : (char **)c->l->envp));
	}
	govex__child_fail(ce, step, r < 0 ? -r : EPERM);
	_exit(127);
}

/* ---- the shim (async-signal-safe) ------------------------------------------------- */

extern char **environ;

/* Reads /proc/self/stat fields arg_start, arg_end, env_start, env_end (48..51). */
static bool stat_ranges(unsigned long ret[4])
{
	char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the command name (field 2) may hold spaces and parentheses: count from the last
	 * ')' on, which ends field 2 */
	char *p = NULL;
	for (char *q = buf; *q; q++)
		if (*q == ')')
			p = q;
	if (!p)
		return false;
	int field = 2, got = 0;
	for (p++; *p && got < 4;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		field++;
		unsigned long v = 0;
		char *s = p;
		while (*p && *p != ' ')
			p++;
		if (field >= 48 && field <= 51) {
			for (char *d = s; d < p && *d >= '0' && *d <= '9'; d++)
				v = v * 10 + (unsigned long)(*d - '0');
			ret[got++] = v;
		}
	}
	return got == 4;
}

/*
 * The shim is a copy of the host process: its command line and environment (which may
 * hold secrets of the host) would be readable as /proc/1/cmdline and /proc/1/environ
 * inside.  Non-dumpable already protects environ; both are also wiped here (our copy
 * only).
 */
static void wipe_args_env(void)
{
	unsigned long r[4];
	if (stat_ranges(r)) {
		if (r[1] > r[0] && r[1] - r[0] < (1UL << 24))
			memset((void *)r[0], 0, r[1] - r[0]);
		if (r[3] > r[2] && r[3] - r[2] < (1UL << 24))
			memset((void *)r[2], 0, r[3] - r[2]);
	}
	for (char **e = environ; e && *e; e++)
		memset(*e, 0, strlen(*e));
}

/* /dev/null on each of fds 0..2 that is not one of keep[] (a host started with closed
 * stdio has the run's pipes there). */
static void shim_stdio_null(const int *keep, size_t n)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return;
	for (int fd = 0; fd <= 2; fd++) {
		bool kept = fd == null;
		for (size_t i = 0; i < n; i++)
			kept |= keep[i] == fd;
		if (!kept)
			dup2(null, fd);
	}
	if (null > 2)
		close(null);
}

/*
 * Filtered networking, in the shim in the run's new network namespace (async-signal-safe):
 * its loopback up, a TCP listener on 127.0.0.1:RNET_PROXY_PORT, the listener sent to the
 * host (SCM_RIGHTS over sock) and closed here.  The run's code never holds it: the host's
 * proxy accepts on it and is the only way out of the namespace.
 */
static int shim_egress_listener(int sock, enum govex__step *step)
{
	*step = GOVEX_STEP_EGRESS;
	int s = (int)socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = govex__neg_errno(ioctl(s, SIOCGIFFLAGS, &ifr));
	if (r == 0) {
		ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP);
		r = govex__neg_errno(ioctl(s, SIOCSIFFLAGS, &ifr));
	}
	close(s);
	if (r < 0)
		return r;
	int l = (int)socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -errno;
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(RNET_PROXY_PORT);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r = govex__neg_errno(bind(l, (struct sockaddr *)&a, sizeof(a)));
	if (r == 0)
		r = govex__neg_errno(listen(l, 128));
	if (r == 0) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		memset(cbuf, 0, sizeof(cbuf));
		char byte = 'L';
		struct iovec iov = {.iov_base = &byte, .iov_len = 1};
		struct msghdr m = {.msg_iov = &iov,
				   .msg_iovlen = 1,
				   .msg_control = cbuf,
				   .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &l, sizeof(int));
		if (sendmsg(sock, &m, MSG_NOSIGNAL) != 1)
			r = -errno;
	}
	close(l);
	close(sock);
	return r;
}

/* The shim's work in the new namespaces before the program child exists: identity
 * maps, its own privacy, the hostname, the new root.  Returns a signalfd for SIGCHLD or
 * -errno with *step set. */
static int shim_setup(struct run_ctx *c, enum govex__step *step)
{
	const struct rstate *st = c->st;
	const struct govex__launch *l = c->l;
	const struct govex__pipes *f = &c->f;
	int r;
	/* the host's handlers (the CLI's SIGINT/SIGTERM/SIGHUP) are not ours: with the
	 * default dispositions PID 1 ignores every signal sent from inside */
	govex__child_reset_signals();
	if (c->netns_fd >= 0 && (r = rns_join_empty(c->netns_fd, step)) < 0)
		return r;

	/* Drop every host descriptor we did not make for this run. */
	{
		int keep[20], n = 0;
		int mine[] = {f->in[0],		 f->out[1],	    f->err[1],	  f->ce[1],
			      f->rep[1],	 f->kill[0],	    l->extra_fd,  c->cg.procs_fd[0],
			      c->cg.procs_fd[1], c->cg.procs_fd[2], c->cg.cpu_fd, c->xsock[0],
			      c->xsock[1],	 c->cgsock[1],	    c->egsock[1]};
		for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
			if (mine[i] >= 0)
				keep[n++] = mine[i];
		if (l->outputs && l->out_fd >= 0) /* the outputs' memfd (files.c) */
			keep[n++] = l->out_fd;
		govex__close_fds_except(3, keep, (size_t)n);
		/* nor the host's stdio: the shim, left to exit once it has reported, would hold
		 * a caller's pipe open until its namespaces are torn down */
		shim_stdio_null(keep, (size_t)n);
	}
	*step = GOVEX_STEP_SHIM;
	if (st->userns && (r = rns_write_maps(st->uid_map, st->gid_map, step)) < 0)
		return r;
	if (c->egsock[1] >= 0) {
		r = shim_egress_listener(c->egsock[1], step);
		c->egsock[1] = -1;
		if (r < 0)
			return r;
		*step = GOVEX_STEP_SHIM;
	}
	/* The shim is a copy of the host: its memory and /proc entries must not be
	 * readable from inside (the program has the same uid in a user namespace).  After
	 * the maps: a non-dumpable process cannot write its own /proc/self files. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	wipe_args_env();
	return rns_shim_enter(&c->plan, &c->scr, step);
}

/*
 * Files in, in the new root before the program exists: written into the run's tmpfs and
 * each bound read-only onto itself (files.c), and the output directory made for the
 * run's identity.  Returns the workdir's descriptor (kept for collecting: the directory
 * opened before the run, whatever the run does to paths), -1 when there is nothing to
 * do, or -errno.
 */
static int shim_files_in(const struct run_ctx *c, int *ret_wdfd)
{
	const struct govex__launch *l = c->l;
	*ret_wdfd = -1;
	if (!l->n_files && !l->outputs)
		return 0;
	if (!c->wd_tmpfs) /* a fresh host workdir: govex__launch placed the files there */
		return l->workdir_fresh ? govex__files_bind_ro(l->workdir, l->files, l->n_files)
					: 0;
	int wdfd = open(WORKDIR_PATH, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wdfd < 0)
		return -errno;
	int r = govex__files_place(wdfd, WORKDIR_PATH, l->files, l->n_files, l->outputs, c->uid,
				   c->gid, true);
	if (r < 0) {
		close(wdfd);
		return r;
	}
	*ret_wdfd = wdfd;
	return 0;
}

static __attribute__((noreturn)) void shim(void *ctx)
{
	struct run_ctx *c = ctx;
	const struct govex__launch *l = c->l;
	const struct govex__pipes *f = &c->f;
	struct govex__shim_report rep;
	enum govex__step step = GOVEX_STEP_SHIM;
	memset(&rep, 0, sizeof(rep));
	int sfd = shim_setup(c, &step);
	if (sfd < 0)
		govex__shim_fail(f->ce[1], step, sfd);
	int wdfd = -1;
	int fr = shim_files_in(c, &wdfd);
	if (fr < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_WORKDIR, fr);
	if (c->cgsock[1] >= 0) { /* the run's cgroups, made by the host meanwhile */
		int cr = rcg_receive(c->cgsock[1], &c->cg);
		close(c->cgsock[1]);
		if (cr < 0)
			govex__shim_fail(f->ce[1], GOVEX_STEP_CGROUP, cr);
	}
	pid_t child = govex__clone(0);
	if (child < 0)
		govex__shim_fail(f->ce[1], GOVEX_STEP_FORK, -errno);
	if (child == 0)
		program_child(c);
	close(f->in[0]);
	close(f->out[1]);
	close(f->err[1]);
	close(f->ce[1]);
	if (l->extra_fd >= 0)
		close(l->extra_fd);
	for (int i = 0; i < RCG_N; i++)
		if (c->cg.procs_fd[i] >= 0)
			close(c->cg.procs_fd[i]);
	if (c->xsock[1] >= 0)
		close(c->xsock[1]);
	struct rshim_wait w = {
	    .child = child,
	    .sfd = sfd,
	    .kill_fd = f->kill[0],
	    .xsock = c->xsock[0],
	    .listener = -1,
	    .exec_once = c->st->deny_subprocess,
	    .ncpus = c->st->ncpus,
	    .cpu_fd = c->cg.cpu_fd,
	    .cpu_version = c->cg.cpu_version,
	    .cpu_budget_ns =
		c->cg.cpu_fd >= 0 && l->limits->cpu_ms ? (int64_t)l->limits->cpu_ms * 1000000 : -1,
	};
	rshim_wait(&w, &rep);
	rshim_kill_all(&w);
	rfiles_out(c->l, wdfd);
	rep.wait_status = w.status;
	rep.net_denied = w.den.net_denied;
	rep.exec_denied = w.den.exec_denied;
	govex__shim_report(f->rep[1], &rep);
}

/* ---- run (host side) ---------------------------------------------------------------- */

/* The cgroup's accounting, added to the shim's report before it is interpreted. */
static void amend_report(void *ctx, struct govex__shim_report *rep)
{
	const struct run_ctx *c = ctx;
	rcg_amend(&c->cg, rep);
}

/* The outputs ended before the shim's report: the cgroups, found empty, are read and
 * removed now, while the shim reaps (rcg_finish_early). */
static void outputs_done(void *ctx)
{
	struct run_ctx *c = ctx;
	rcg_finish_early(&c->cg);
}

static void close_fdp(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the host once the shim exists: the shim and the program child have their cgroup
 * descriptors and their ends of xsock (the shim sees the child's end close). */
static void after_fork(void *ctx)
{
	struct run_ctx *c = ctx;
	for (int i = 0; i < RCG_N; i++)
		close_fdp(&c->cg.procs_fd[i]);
	for (int i = 0; i < 2; i++)
		close_fdp(&c->xsock[i]);
	close_fdp(&c->netns_fd);
	close_fdp(&c->cgsock[1]);
	close_fdp(&c->egsock[1]);
}

/* Everything a run holds on the host, released in reverse order; 0, or -errno when
 * its cgroups could not be removed. */
static int run_release(struct run_ctx *c)
{
	govex__egress_stop(c->egress, NULL); /* (a run that went on has taken it) */
	c->egress = NULL;
	govex__strv_free(c->envp);
	c->envp = NULL;
	for (int i = 0; i < 2; i++) {
		close_fdp(&c->xsock[i]);
		close_fdp(&c->cgsock[i]);
		close_fdp(&c->egsock[i]);
	}
	close_fdp(&c->netns_fd);
	int r = rcg_destroy(&c->cg);
	rscratch_free(&c->scr);
	rplan_free(&c->plan);
	/* last: the slot (its name, its uid) is free for another run only now */
	rslot_release(&c->slot);
	return r;
}

/* cgroup parents: once per runtime */
static void discover_cgroups(struct rstate *mst, const struct govex__launch *l)
{
	pthread_mutex_lock(&mst->cg_lock);
	if (!mst->cg_discovered) {
		rcg_discover(&mst->cg, false, l->opts ? l->opts->cgroup : NULL);
		mst->cg_discovered = true;
		/* what runs killed with their govex left in slots nobody took since */
		rslot_sweep(l->opts ? l->opts->probe_cache_dir : NULL, &mst->cg);
	}
	pthread_mutex_unlock(&mst->cg_lock);
}

/* The run's slot: its identity as root, the name of its cgroups.  Unprivileged and
 * without any cgroup, a slot names nothing: a run goes on without one. */
static int take_slot(struct run_ctx *c, struct govex__outcome *o, struct govex_error *err)
{
	int r = rrun_slot(c->st, c->l->opts, &c->slot, &c->uid, &c->gid, c->why, sizeof(c->why));
	if (r < 0)
		return govex__launch_failed(c->l, o, err, GOVEX_STEP_SLOT, -r, c->why);
	return 0;
}

/* The run's cgroups, named by its slot (none without one). */
static int run_cgroups(struct run_ctx *c, struct govex__outcome *o, struct govex_error *err)
{
	if (c->slot.n < 0)
		return 0;
	struct govex_error cgerr;
	int r = rcg_create(&c->st->cg, c->slot.id, c->l->limits, c->l->aggregate, &c->cg, &cgerr);
	return r < 0 ? govex__launch_failed(c->l, o, err, GOVEX_STEP_CGROUP, -r, cgerr.message) : 0;
}

/* Filtered networking, in the host: the listening socket the shim made in the run's
 * network namespace (one descriptor, nothing else), received; -errno when the shim sent
 * none (it failed, and says why on its error pipe). */
static int egress_receive(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (n != 1 || (m.msg_flags & MSG_CTRUNC) || !cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int))) {
		if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(fd);
			}
		return -EPROTO;
	}
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The run's proxy on the listener its shim sent: limits from the run's. */
static int egress_start(struct run_ctx *c, struct govex__outcome *o, struct govex_error *err)
{
	int fd = egress_receive(c->egsock[0]);
	close_fdp(&c->egsock[0]);
	if (fd < 0)
		return govex__launch_failed(c->l, o, err, GOVEX_STEP_EGRESS, -fd,
					    "the run's proxy listener did not come");
	const struct govex__limits *lim = c->l->limits;
	const struct govex__egress_config cfg = {
	    .allow = c->l->policy->net_allow,
	    .max_total = (unsigned)lim->network_connections,
	    .max_bytes_up = lim->network_bytes,
	    .max_bytes_down = lim->network_bytes,
	};
	struct govex_error e;
	int r = govex__egress_start(&cfg, fd, &c->egress, &e);
	return r < 0 ? govex__launch_failed(c->l, o, err, GOVEX_STEP_EGRESS, -r, e.message) : 0;
}

/* In the host while a cold run's shim builds the sandbox (a third of a millisecond
 * and more): the run's cgroups, handed to the shim, which waits for them before it
 * starts the program.  Were they not sent, the shim fails at its cgroup step.  Under
 * filtered networking, then the proxy on the listener the shim sends first. */
static int after_clone(void *ctx, struct govex__outcome *o, struct govex_error *err)
{
	struct run_ctx *c = ctx;
	int r = run_cgroups(c, o, err);
	if (r >= 0)
		rcg_send(c->cgsock[0], &c->cg); /* (refused: the shim failed; it says why) */
	for (int i = 0; i < RCG_N; i++)
		close_fdp(&c->cg.procs_fd[i]);
	close_fdp(&c->cgsock[0]);
	if (r >= 0 && c->egsock[0] >= 0)
		r = egress_start(c, o, err);
	return r;
}

/* The proxy's variables (and no other spelling of them) on the launch's environment:
 * ordinary clients (urllib, pip, requests, curl) use the proxy; leaving them out
 * reaches nothing else. */
static int egress_env(struct run_ctx *c)
{
	static const char *const names[] = {"HTTP_PROXY",  "HTTPS_PROXY", "http_proxy",
					    "https_proxy", "ALL_PROXY",	  "all_proxy",
					    "NO_PROXY",	   "no_proxy"};
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", RNET_PROXY_PORT);
	char **env = NULL;
	int r = 0;
	for (size_t i = 0; r >= 0 && c->l->envp && c->l->envp[i]; i++) {
		const char *e = c->l->envp[i];
		bool ours = false;
		for (size_t k = 0; k < ARRAY_SIZE(names) && !ours; k++) {
			size_t n = strlen(names[k]);
			ours = strncmp(e, names[k], n) == 0 && e[n] == '=';
		}
		if (!ours)
			r = govex__strv_push(&env, e);
	}
	for (size_t k = 0; r >= 0 && k < ARRAY_SIZE(names); k++) {
		char v[96];
		snprintf(v, sizeof(v), "%s=%s", names[k], k < 6 ? url : "");
		r = govex__strv_push(&env, v);
	}
	if (r < 0) {
		govex__strv_free(env);
		return r;
	}
	c->envp = env;
	return 0;
}

/* Everything the run needs before its shim exists: the slot, the mount plan with the
 * workdir, the workdir's owner, a warm run's cgroups (a cold run's socketpair for
 * them), the execve socketpair.  0, or the launch failure (outcome and err filled); what
 * it made is released by run_release(). */
static int run_prepare(struct run_ctx *c, struct govex__outcome *o, struct govex_error *err)
{
	const struct rstate *st = c->st;
	const struct govex__launch *l = c->l;
	int r;
	if ((r = take_slot(c, o, err)) < 0)
		return r;
	/* a fresh workdir is the run's own tmpfs (govex__launch made no host directory) */
	bool wd_tmpfs = l->workdir_fresh && restricted_private_workdir(st) &&
			strcmp(l->workdir, WORKDIR_PATH) == 0;
	char wd_opts[128];
	rworkdir_opts(c->uid, c->gid, l, wd_opts, sizeof(wd_opts));
	c->wd_tmpfs = wd_tmpfs;
	c->exe = govex__launch_exe(l);
	if ((r = rplan_for_run(&st->plan, l->workdir, wd_tmpfs ? wd_opts : NULL, c->exe,
			       l->extra_ro, &c->plan)) < 0 ||
	    (r = rplan_add_identity(&c->plan, c->uid, c->gid, l->workdir, l->policy->shell)) < 0 ||
	    (r = rscratch_alloc(&c->scr, c->plan.n)) < 0)
		return govex__launch_failed(l, o, err, GOVEX_STEP_PLAN, -r, NULL);
	/* As root the program runs as the slot's user: a fresh workdir (ours) is handed
	 * to it.  Named directories keep their owners: the host's permissions still apply
	 * inside. */
	if (!st->userns && l->workdir_fresh && !wd_tmpfs &&
	    (r = govex__neg_errno(
		 fchownat(AT_FDCWD, l->workdir, c->uid, c->gid, AT_SYMLINK_NOFOLLOW))) < 0)
		return govex__launch_failed(l, o, err, GOVEX_STEP_WORKDIR, -r, NULL);
	/* a fresh host workdir's output directory (govex__launch made it): the run's too */
	if (!st->userns && l->workdir_fresh && !wd_tmpfs && l->outputs) {
		_cleanup_close_ int wdfd =
		    open(l->workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (wdfd < 0 ||
		    fchownat(wdfd, GOVEX__OUTPUT_DIR, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return govex__launch_failed(l, o, err, GOVEX_STEP_WORKDIR, errno, NULL);
	}
	if (c->slot.n < 0 && l->aggregate)
		return govex__launch_failed(l, o, err, GOVEX_STEP_SLOT, EAGAIN, c->why);
	if (c->warm && (r = run_cgroups(c, o, err)) < 0) /* the template needs them now */
		return r;
	if (!c->warm && (r = govex__neg_errno(
			     socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->cgsock))) < 0)
		return govex__launch_failed(l, o, err, GOVEX_STEP_SOCKETPAIR, -r, NULL);
	/* filtered networking: cold runs only (rwarm_ineligible) */
	if (st->filter_net && !c->warm &&
	    ((r = govex__neg_errno(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->egsock))) <
		 0 ||
	     (r = egress_env(c)) < 0))
		return govex__launch_failed(l, o, err, GOVEX_STEP_SOCKETPAIR, -r, NULL);
	/* (a warm run's program hands its listener to its own init: template.c) */
	if ((st->deny_subprocess || st->deny_net) && !c->warm &&
	    (r = govex__neg_errno(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->xsock))) <
		0)
		return govex__launch_failed(l, o, err, GOVEX_STEP_SOCKETPAIR, -r, NULL);
	return 0;
}

/* Root and network: deny: the slot's empty network namespace instead of a new one per
 * run (ns.c), or -1.  Only the run holding slot n uses namespace n: concurrent runs never
 * share one (each would see the other's sockets in /proc/self/net). */
static int run_netns(const struct rstate *st, int slot)
{
	if (st->userns || !st->deny_net || slot < 0)
		return -1;
	int fd = rns_empty_netns(slot);
	return fd >= 0 ? fd : -1;
}

/* A warm run (template.c) once run_prepare is done: 0 with the outcome, < 0 a launch
 * failure, or c->warm cleared when no template could take it (then cold after all). */
static int warm_run(struct run_ctx *c, struct rwarm *w, struct govex__outcome *o,
		    struct govex_error *err)
{
	const struct rwarm_run wr = {
	    .st = c->st,
	    .l = c->l,
	    .plan = &c->plan,
	    .cg = &c->cg,
	    .uid = c->uid,
	    .gid = c->gid,
	};
	int r = rwarm_launch(w, &wr, &c->f, o, err);
	if (r != 1)
		return r;
	c->warm = false;
	if ((c->st->deny_subprocess || c->st->deny_net) &&
	    (r = govex__neg_errno(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->xsock))) <
		0)
		return govex__launch_failed(c->l, o, err, GOVEX_STEP_SOCKETPAIR, -r, NULL);
	return 0;
}

/* Whether this run is to be forked from a template (counts why not). */
static bool warm_wanted(const struct rstate *st, const struct govex__launch *l, struct rwarm *w)
{
	if (!w)
		return false;
	bool wd_tmpfs = l->workdir_fresh && restricted_private_workdir(st) &&
			strcmp(l->workdir, WORKDIR_PATH) == 0;
	/* filtered networking: cold only, whatever the launch says (its proxy's listener is
	 * made by a cold run's shim; a template has no network namespace for it) */
	const char *why = st->filter_net ? "network_allowlist" : rwarm_ineligible(l, wd_tmpfs);
	if (why)
		rwarm_count_cold(w, why);
	return !why;
}

static int restricted_run(void *state, const struct govex__launch *l, struct govex__outcome *o,
			  struct govex_error *err)
{
	const struct rstate *st = state;
	if (!st) /* prepare() was not called: refuse rather than run unconfined */
		return govex__launch_failed(l, o, err, GOVEX_STEP_PREPARE, EINVAL,
					    "restricted: not prepared");
	struct run_ctx c = {
	    .st = st,
	    .l = l,
	    .xsock = {-1, -1},
	    .cgsock = {-1, -1},
	    .slot = {.n = -1, .fd = -1},
	    .netns_fd = -1,
	    .egsock = {-1, -1},
	};
	rcg_run_init(&c.cg);
	/* the one mutable part of the state; before any shim exists: reading the mount table
	 * would wait for the shim's mounts (one lock for every mount namespace) */
	discover_cgroups(state, l);
	struct rwarm *w = __atomic_load_n(&st->warm, __ATOMIC_ACQUIRE);
	c.warm = warm_wanted(st, l, w);
	/* a spare made ahead for runs shaped like this one (template_spare.c): its slot,
	 * cgroups and every step of its own taken already */
	if (c.warm) {
		int sr = rwarm_spare_run(w, st, l, o, err);
		if (sr != 1)
			return sr;
	}
	int r = run_prepare(&c, o, err);
	if (r >= 0 && c.warm)
		r = warm_run(&c, w, o, err);
	if (r >= 0 && !c.warm)
		c.netns_fd = run_netns(st, c.slot.n);
	const struct govex__shim_ops ops = {
	    .clone_flags =
		rns_flags(st->userns, (st->deny_net && c.netns_fd < 0) || st->filter_net),
	    .fork_step = GOVEX_STEP_CLONE,
	    .shim = shim,
	    .after_fork = after_fork,
	    .after_clone = c.cgsock[0] >= 0 ? after_clone : NULL,
	    .amend = amend_report,
	    .outputs_done = outputs_done,
	    /* its report comes once the PID namespace holds nothing but the shim */
	    .report_final = true,
	};
	/* the whole PID namespace is gone once the shim is reaped (supervise does) */
	if (r >= 0 && !c.warm)
		r = govex__run_shim(l, &c.f, &ops, &c, o, err);
	/* the run is over (its PID namespace empty): its proxy stops, every tunnel with it */
	if (r >= 0 && c.egress) {
		govex__egress_stop(c.egress, &o->egress);
		c.egress = NULL;
	}
	if (r >= 0)
		o->controls_lost = rcg_limits_lost(&c.cg);
	int cr = run_release(&c);
	if (r >= 0 && cr < 0) /* reported in the result (cgroup_cleanup_failed) */
		o->cgroup_cleanup_errno = -cr;
	return r;
}

const struct govex__backend_ops govex__restricted_backend = {
    .name = "restricted",
    .version = "govex.restricted-linux/v1",
    .probe = rreport_probe,
    .prepare = restricted_prepare,
    .release = restricted_release,
    .private_workdir = restricted_private_workdir,
    .run = restricted_run,
    .warm = rwarm_enable,
    .warm_stats = rwarm_state_stats,
};
