/* SPDX-License-Identifier: MIT */
/*
 * govex.restricted-linux/v1, private interfaces.
 *
 * Lifecycle
 * ---------
 *   probe()    once per runtime: tries the real thing in throwaway children (namespaces,
 *              mounts, Landlock, seccomp, a cgroup) and reports what works here.
 *   prepare()  once per runtime and policy: the mount plan (paths resolved and symlinks
 *              recorded), the seccomp program (BPF exported by libseccomp), the cgroup
 *              parents.  The result (struct rstate) is read-only afterwards, so run() is
 *              thread-safe without locks.
 *   run()      per run, in the host: takes a run slot (slot.c: the run's uid as root
 *              and the name of its cgroups), copies the plan and adds the workdir, makes
 *              the run's cgroups, opens pipes, clone()s the shim into new namespaces and
 *              supervises it; afterwards reads the cgroups' accounting, removes them
 *              and releases the slot.
 *
 * Between clone() and execve() (the shim and the program child) only async-signal-safe
 * calls are made: raw syscalls on memory prepared before the clone.  Failures there are
 * reported as {enum govex__step, errno} on the CLOEXEC error pipe (govex__child_fail()).
 *
 * Process layout:
 *
 *   host (run)                      supervise.c: pipes, deadline, cancel
 *     └─ shim: clone(NEWUSER?|NEWNS|NEWPID|NEWIPC|NEWUTS|NEWNET?)
 *        PID 1 of the new PID namespace; builds the root and pivots; never execs
 *          └─ program (fork): its inner layers (layers.c: cgroups, cgroup namespace,
 *             setsid, guard, stdio, chdir, no_new_privs, Landlock, the slot's uid,
 *             rlimits, seccomp), execve
 *
 * When the shim exits, the kernel kills whatever is left in its PID namespace, and the
 * mount namespace (with every mount of the run) goes with its last process.
 *
 * Warm runs (govex_runtime_warm, template.c): the same preparation in the host, then the
 * host's thread (no process of its own) hands the run's descriptors to a template
 * interpreter that was started once in the outer layers (the shim's namespaces and
 * root); its fork enters the run's own mount, PID, IPC and UTS namespaces, and the
 * program child enters the same inner layers (layers.c, from zyg_prog.c) before the
 * code runs.
 */
#ifndef GOVEX_RESTRICTED_H
#define GOVEX_RESTRICTED_H

#include <limits.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <pthread.h>

#include "../../internal.h"
#include "layers.h"

/* ---- mount plan (mounts.c) ---------------------------------------------------------- */

enum rmount_kind {
	RM_BIND_RO,   /* read-only bind of a host path at the same path */
	RM_BIND_RW,   /* read-write bind (write roots, the workdir) */
	RM_BIND_DEV,  /* a device node of the host's /dev (null, zero, ...) */
	RM_TMPFS,     /* a fresh tmpfs; opts = mount options */
	RM_PROC,      /* proc of the new PID namespace */
	RM_SYMLINK,   /* a symlink re-created in the new root; opts = target */
	RM_READONLY,  /* last: make this (tmpfs) mount point read-only */
	RM_LANDLOCK,  /* no mount: a Landlock rule only (a file inside a bind that needs more
		       * rights than the bind, e.g. EXECUTE on the interpreter) */
	RM_PROC_MASK, /* a host-wide file of /proc: hidden when proc has no subset=pid */
	RM_FILE,      /* a small read-only file written in the new root; opts = its text */
	/* filesystem.deny (deny.c): after the roots, each directory between a write root
	 * and a masked path bound onto itself (so the run cannot rename or remove it), and
	 * each masked path covered by an empty, read-only, mode 0000 tmpfs (a directory) or
	 * an empty mode 0000 file of one (a file) */
	RM_PIN,
	RM_DENY_DIR,
	RM_DENY_FILE,
};

struct rmount {
	enum rmount_kind kind;
	char *path;	    /* absolute, normalized; the same inside and outside */
	char *opts;	    /* RM_TMPFS options, RM_SYMLINK target, else NULL */
	uint64_t ll_access; /* Landlock rights granted beneath path (masked at run time) */
};

struct rplan {
	struct rmount *m;
	size_t n;
	uint64_t ro_access; /* Landlock rights of a read-only bind under this policy */
};

/* Builds the per-runtime plan from the policy and the interpreter probe.  Resolves every
 * path component by component: a symlink on the way is recorded (re-created inside) and
 * only real paths are bound.  Paths that do not exist are left out. */
int rplan_build(const struct govex_policy *p, const struct govex__interp *in, struct rplan *ret,
		struct govex_error *err);
/* The plan of one run: base plus the workdir (a read-write bind of the host path, or,
 * when workdir_tmpfs is set, a tmpfs with those options at that path), extra_ro
 * (read-only) and EXECUTE for what execve(argv0) opens; ordered for mounting (parents
 * first), redundant nested binds dropped. */
int rplan_for_run(const struct rplan *base, const char *workdir, const char *workdir_tmpfs,
		  const char *argv0, char *const *extra_ro, struct rplan *ret);
void rplan_free(struct rplan *p);
/* Adds /etc/passwd and /etc/group to a run's plan (after rplan_for_run): root, the run's
 * identity ("govex", uid/gid as seen inside, home = the workdir, shell /bin/sh when the
 * policy allows a shell, else /usr/sbin/nologin) and nobody/nogroup; nothing of the
 * host's.  Not when the policy binds the host's /etc (or the files) itself. */
int rplan_add_identity(struct rplan *pl, uid_t uid, gid_t gid, const char *home, bool shell);

/* Landlock rights. */
#define LL_FS_EXECUTE	       (1ULL << 0)
#define LL_FS_WRITE_FILE       (1ULL << 1)
#define LL_FS_READ_FILE	       (1ULL << 2)
#define LL_FS_READ_DIR	       (1ULL << 3)
#define LL_FS_REMOVE_DIR       (1ULL << 4)
#define LL_FS_REMOVE_FILE      (1ULL << 5)
#define LL_FS_MAKE_CHAR	       (1ULL << 6)
#define LL_FS_MAKE_DIR	       (1ULL << 7)
#define LL_FS_MAKE_REG	       (1ULL << 8)
#define LL_FS_MAKE_SOCK	       (1ULL << 9)
#define LL_FS_MAKE_FIFO	       (1ULL << 10)
#define LL_FS_MAKE_BLOCK       (1ULL << 11)
#define LL_FS_MAKE_SYM	       (1ULL << 12)
#define LL_FS_REFER	       (1ULL << 13) /* ABI 2 */
#define LL_FS_TRUNCATE	       (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV	       (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP	       (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP     (1ULL << 1)  /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)  /* ABI 6 */
#define LL_SCOPE_SIGNAL	       (1ULL << 1)  /* ABI 6 */

#define LL_READ	       (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_READ_NOEXEC (LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_ALL_FS      ((1ULL << 16) - 1)
/* Not a Landlock right (masked out before the ruleset): marks a file execve() opens
 * (add_exec_files), which keeps its own exec-able read-only bind even inside a noexec
 * writable one. */
#define LL_GOVEX_EXEC_FILE (1ULL << 63)
/* a writable place (workdir, /tmp, write roots): everything but EXECUTE */
#define LL_WRITABLE (LL_ALL_FS & ~LL_FS_EXECUTE)

/* ---- the shim's work inside the new namespaces (mounts.c), async-signal-safe ---------- */

/* Scratch the shim needs, allocated by the host before clone: one fd per plan entry. */
struct rscratch {
	int *fd;
	unsigned char *isdir;
};
int rscratch_alloc(struct rscratch *s, size_t n);
void rscratch_free(struct rscratch *s);

/* In the shim, in its new mount namespace: captures every source, builds the new root on
 * a tmpfs, pivots into it and detaches the old root.  Returns 0 or -errno with *ret_step
 * set. */
int rmount_apply(const struct rplan *plan, struct rscratch *s, enum govex__step *ret_step);
/* A fresh workdir's tmpfs options for a run as uid/gid under la's limits (its files in on
 * top), into buf. */
void rworkdir_opts(uid_t uid, gid_t gid, const struct govex__launch *la, char *buf, size_t cap);
/* Files out of a finished run (every process of it gone): what it left in its workdir's
 * output directory (wdfd) collected into l->out_fd, bounded (the cold shim's, and the
 * host's for a warm run). */
void rfiles_out(const struct govex__launch *l, int wdfd);

/* ---- Landlock (landlock.c) ---------------------------------------------------------- */

/* The kernel's Landlock ABI version, or -errno when Landlock is unavailable. */
int rlandlock_abi(void);
/* Landlock of l (layers.c, step 7) from plan: its paths' rights (masked for abi), network
 * (ABI >= 4) when deny_net, scopes (ABI >= 6); abi <= 0: none.  l borrows plan. */
void rlandlock_fill(struct rlayers *l, int abi, const struct rplan *plan, bool deny_net);
/* In the program child: that ruleset applied alone (rlayers_landlock).  Async-signal-safe. */
int rlandlock_apply(int abi, const struct rplan *plan, bool deny_net, enum govex__step *ret_step);
/* The ruleset's handled rights for abi (fs, net, scoped) and the attribute's size. */
size_t rlandlock_attr(int abi, bool deny_net, uint64_t ret[3]);
/* Rights that apply to a file (not a directory) beneath a rule. */
#define LL_FILE_RIGHTS                                                                             \
	(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
/* true when abi has every right this backend asks for (else Landlock is only partial). */
bool rlandlock_complete(int abi);

/* ---- the backend's report (report.c) ---------------------------------------------- */

/* What this host lets the backend enforce, with a reason for each control it cannot. */
void rreport_probe(const struct govex_runtime_options *opts, struct govex__report *r);

/* ---- seccomp (seccomp.c) ------------------------------------------------------------ */

struct rfilter {
	struct sock_filter *insns;
	unsigned short len;
};
/* Builds the filter for a policy with libseccomp and exports it as BPF. */
/* notified: what a policy denies is left to the guard's listener (which refuses and
 * counts it): under deny_net, socket() of a family other than AF_UNIX; under
 * deny_subprocess, fork, vfork and clone of a new process.  The caller installs that
 * guard (rguard_build with notify_net = deny_net, exec_once = deny_subprocess).
 * Otherwise the filter refuses them itself. */
int rfilter_build(bool deny_net, bool deny_subprocess, bool notified, struct rfilter *ret,
		  struct govex_error *err);
/* The guard stacked on it: ioctl TIOCSTI/TIOCLINUX refused; with exec_once, execve,
 * execveat, fork, vfork and clone of a new process sent to a user-notification listener
 * (execonce.c); with notify_net, socket() of any family but AF_UNIX too. */
int rguard_build(bool exec_once, bool notify_net, struct rfilter *ret, struct govex_error *err);
/* Both of a policy's programs: rfilter_build(deny_net, deny_subprocess, notified = either)
 * and rguard_build(deny_subprocess, deny_net): the ones compiled into the library at build
 * time when this runtime's libseccomp, architecture and seccomp API level are the build's,
 * else built now. */
int rfilters_get(bool deny_net, bool deny_subprocess, struct rfilter *filter, struct rfilter *guard,
		 struct govex_error *err);
/* Filtered networking's pair (network: {"allow": [...]}): AF_INET and AF_INET6 sockets
 * for the run's loopback, nothing else, and no send with MSG_FASTOPEN (a connect past
 * Landlock's rule) (seccomp.c); built at run time, never built in. */
int rfilters_get_filtered(bool deny_subprocess, struct rfilter *filter, struct rfilter *guard,
			  struct govex_error *err);
/* true when the built-in programs are used on this host */
bool rfilters_builtin(void);
/* What the build compiled (filters_gen.c writes one, the library links it when built
 * natively): pairs[2 * deny_net + deny_subprocess]. */
struct rbuiltin_pair {
	struct rfilter filter, guard;
};
struct rbuiltin_filters {
	bool present;		      /* false: none (a cross build: builtin_none.c) */
	unsigned major, minor, micro; /* libseccomp's version */
	unsigned api;		      /* seccomp_api_get() */
	uint32_t arch;		      /* seccomp_arch_native() */
	struct rbuiltin_pair pairs[4];
};
extern const struct rbuiltin_filters govex__rbuiltin_filters;
/* Exports a libseccomp filter as BPF (the caller releases ctx). */
typedef void *scmp_filter_ctx;
int rfilter_export(scmp_filter_ctx ctx, struct rfilter *ret, struct govex_error *err);
void rfilter_free(struct rfilter *f);
/* Installs it (async-signal-safe; no_new_privs must be set). */
int rfilter_load(const struct rfilter *f);

/* ---- one execve under subprocess: deny (execonce.c), async-signal-safe -------------- */

/* Shim: receives the listener from sock; -ECHILD when the child closed sock first. */
int rexec_receive(int sock);
/* (what it answered: struct rdenials, layers.h) */
/* After this many refusals the shim stops answering (closes the listener: the kernel
 * then fails every later one with ENOSYS at no cost to the shim); the counts saturate. */
#define RDENIALS_ANSWERED_MAX GOVEX_DENIALS_COUNTED_MAX
/* Shim: answers one notification on listener as rlayers_answer (layers.c) decides.
 * Returns 1 when the listener should close (the counts are full), 0 to go on, -errno. */
int rexec_answer(int listener, bool exec_once, struct rdenials *d);

/* ---- the cold shim's wait (shim_wait.c), async-signal-safe -------------------------- */

/* The shim's view of the run while the program lives. */
struct rshim_wait {
	pid_t child;
	int sfd;     /* SIGCHLD (signalfd) */
	int kill_fd; /* the host's kill request: readable or closed */
	/* subprocess: deny: the child's execve listener arrives on xsock, then its
	 * notifications on listener */
	int xsock, listener;
	bool exec_once;
	struct rdenials den; /* what the listener answered and refused */
	int ncpus;
	int cpu_fd, cpu_version;	    /* the run's CPU accounting (cgroup.c), or -1 */
	int64_t cpu_budget_ns, cpu_used_ns; /* budget < 0: none */
	bool done;
	int status;
};
/* Waits for the program's end, the host's kill request, or the end of the CPU budget;
 * reaps orphans meanwhile. */
void rshim_wait(struct rshim_wait *w, struct govex__shim_report *rep);
/* Kills everything in the PID namespace (all but us), reaps, repeats until none is left:
 * a process forked during a round is caught by the next. */
void rshim_kill_all(struct rshim_wait *w);

/* ---- cgroups (cgroup.c) ------------------------------------------------------------- */

enum { RCG_MEM, RCG_PIDS, RCG_CPU, RCG_N };

struct rcg_parent {
	int version;	  /* 1, 2, or 0 when this resource has no usable cgroup */
	char *dir;	  /* where per-run cgroups are made (below our own) */
	char reason[600]; /* when version == 0 */
};

/* Where a v2 hierarchy's per-run cgroups go (cghost.c, DESIGN.md "Hosts"). */
enum rcg_source {
	RCG_SRC_NONE,	   /* nowhere: detail says why and what the user can change */
	RCG_SRC_ROOT,	   /* the hierarchy's root cgroup (no rule to work around) */
	RCG_SRC_DELEGATED, /* our own cgroup, delegated to us (its processes in a leaf) */
	RCG_SRC_SYSTEMD,   /* a transient scope with Delegate=yes systemd made for us */
	RCG_SRC_HANDED,	   /* the embedding host's (govex_runtime_options.cgroup) */
};
struct rcg_host {
	enum rcg_source source;
	char dir[PATH_MAX]; /* the cgroup whose children runs' cgroups are, "" for none */
	char detail[512];   /* what it is, or why there is none and what to do */
};
/* The host cgroup in the cgroup2 mount at point (its mountinfo root: root), by mode:
 * NULL or "auto" (steps 1, 2 and 4 of cghost.c), "own" (no systemd), "none", or an
 * absolute path the host hands to govex (step 3).  Steps 1 and 2 move this process;
 * they run once per process and their outcome is kept. */
#define RCG_MODE_CURRENT "\001current" /* internal: what this process has, never more */
void rcg_host_obtain(const char *point, const char *root, const char *mode, struct rcg_host *ret);
const char *rcg_source_name(enum rcg_source s);
/* sdscope.c: a transient scope with Delegate=yes holding this process, from the system
 * manager (user false) or the user's; rel is our cgroup (for its slice).  0 with unit
 * set, or -errno with why set. */
int rsd_scope(bool user, const char *rel, char *unit, size_t cap, char *why, size_t whycap);
/* Whether systemd unit (a .service or .scope of the system manager, or the user's) has
 * Delegate=yes: 1, 0, or -errno with why set. */
int rsd_unit_delegated(bool user, const char *unit, char *why, size_t whycap);

struct rcg_setup {
	struct rcg_parent p[RCG_N];
	/* the v2 host cgroup, when a v2 hierarchy serves a resource */
	enum rcg_source source;
	char source_detail[512];
};

/* Finds our own cgroups per resource; with test, checks a child can be made there (the
 * probe does; a run does not: it makes its own and fails when a cgroup it needs
 * cannot be made). */
void rcg_discover(struct rcg_setup *ret, bool test, const char *mode);
/* A small cgroup file into buf (NUL-terminated): its length or -errno; val into dir/file:
 * 0 or -errno (cghost.c).  For cgroup.c and cghost.c. */
int rcg_read_small(const char *path, char *buf, size_t cap);
int rcg_write_str(const char *dir, const char *file, const char *val);
void rcg_setup_free(struct rcg_setup *s);

/* One run's cgroups: one directory per resource whose hierarchy is usable (several
 * resources may share one v2 directory), named after the run's slot. */
struct rcg_run {
	char *dir[RCG_N];
	bool owner[RCG_N];   /* this run made (and removes) dir */
	int procs_fd[RCG_N]; /* v1 tasks, v2 cgroup.procs: for the program child to join */
	int cpu_fd;	     /* cpuacct.usage (v1) or cpu.stat (v2), for the shim, or -1 */
	int cpu_version;
	/* the memory cgroup's peak and OOM counts (v1 memory.max_usage_in_bytes and
	 * memory.oom_control, v2 memory.peak and memory.events), opened with it: read once
	 * the run is over (rcg_stats), or -1 */
	int peak_fd, oom_fd;
	int mem_version;
	/* v2: the run's memory.max and pids.max, opened once written, and what they read
	 * then (-1: no limit set).  The cgroup's owner can take a controller away from the
	 * host cgroup's subtree_control during the run (the kernel then removes the file:
	 * the descriptor reads ENODEV) and give it back (a fresh file, its limit "max"):
	 * either is seen by rcg_limits_lost. */
	int limit_fd[2];
	char limit_val[2][24];
	bool removed[RCG_N]; /* by rcg_finish_early */
	/* rcg_finish_early found the run's cgroups empty: its accounting, final */
	bool final;
	int64_t final_cpu_us, final_peak;
	bool final_oom;
	govex__ctlset final_lost;
};
/* No cgroup, no descriptor (-1): the one way a struct rcg_run starts (.ci/lint checks it),
 * since rcg_destroy closes every descriptor >= 0.  Async-signal-safe. */
void rcg_run_init(struct rcg_run *r);

/* Makes the run's cgroups, named name (the slot's), in every usable hierarchy, with
 * limits l.  A cgroup of that name left by a dead run of the same slot is reclaimed
 * first (its tasks killed, the directory removed).  Fails when a resource in need (an
 * aggregate control the run requires) has no usable hierarchy. */
int rcg_create(const struct rcg_setup *s, const char *name, const struct govex__limits *l,
	       govex__ctlset need, struct rcg_run *ret, struct govex_error *err);
/* Reads accounting: CPU in microseconds, peak memory in bytes, whether an OOM kill
 * happened (each -1 / false when unknown). */
void rcg_stats(const struct rcg_run *r, int64_t *ret_cpu_us, int64_t *ret_peak, bool *ret_oom);
/* The run's accounting (rcg_stats) into its shim's report: CPU, peak, OOM kill. */
void rcg_amend(const struct rcg_run *r, struct govex__shim_report *rep);
/* The aggregate controls (memory_aggregate, pids_aggregate) whose limit, as set by
 * rcg_create, is no longer in r's cgroup: its controller was taken away from the host
 * cgroup (and perhaps given back, without the limit).  Two preads; read once the run
 * ended, before its cgroup is removed. */
govex__ctlset rcg_limits_lost(const struct rcg_run *r);
/* When the run's outputs end before its shim's report: if the pids cgroup (in a
 * directory of its own: v1), where every task of the run is, can be removed, no task is
 * left and the accounting is final: read (rcg_stats returns it from then on) and the
 * other cgroups removed now, while the shim reaps; each is tried once (what is left,
 * rcg_destroy removes as ever).  Returns whether the run's cgroups were found empty. */
bool rcg_finish_early(struct rcg_run *r);
/* Kills what is left in the run's cgroups and removes them; closes fds. */
/* Closes and removes a run's cgroups; 0, or the first removal's -errno. */
int rcg_destroy(struct rcg_run *r);
/* Async-signal-safe: CPU time used so far in nanoseconds from cpu_fd, or -1. */
int64_t rcg_cpu_ns(int fd, int version);
/* Removes the cgroup dir, killing what runs there first (a dead run's leftovers, or a
 * run's survivors).  Returns 0 once it is gone, or -errno. */
int rcg_remove(const char *dir);
/* A cold run's cgroups are made by the host while its shim builds the sandbox: their
 * procs fds and CPU fd go to the shim over sock (SCM_RIGHTS).  0 or -errno. */
int rcg_send(int sock, const struct rcg_run *r);
/* The shim's side (async-signal-safe): fills ret's fds (dirs NULL); 0, -EPIPE when the
 * host closed sock instead, or -errno. */
int rcg_receive(int sock, struct rcg_run *ret);

/* ---- run slots (slot.c) ------------------------------------------------------------- */

/* Default identities as root: slot N runs as uid = gid = RSLOT_ID_BASE + N, N <
 * RSLOT_ID_COUNT.  In the range systemd documents as unused (0x70000000-0x7ffdffff: above
 * the container ranges of systemd-nspawn, below its foreign range 0x7ffe0000-0x7ffeffff
 * and the 16-bit ids of old file systems' owners). */
#define RSLOT_ID_BASE  0x7f000000u
#define RSLOT_ID_COUNT 65536u

struct rslot {
	int n;	     /* slot number, or -1 */
	int fd;	     /* the locked N.lock (O_CLOEXEC; the shim closes it), or -1 */
	char id[80]; /* the name of the run's cgroups: "govex.slot-N" (root) */
};
/* Takes the lowest free slot below count.  cache_dir (may be NULL) is a fallback lock
 * directory for an unprivileged caller.  Returns 0 or -errno with why set. */
int rslot_acquire(const char *cache_dir, uint32_t count, struct rslot *ret, char *why,
		  size_t why_len);
/* Releases the lock: only once the run's teardown is complete. */
void rslot_release(struct rslot *s);
/* Reclaims the cgroups of every slot below s's parents whose lock is free (their run
 * died; nobody took that slot since).  Best effort, once per runtime. */
void rslot_sweep(const char *cache_dir, const struct rcg_setup *s);
/* A run's slot (cold, warm or a spare's) and its ids: the caller's in a user namespace,
 * else the slot's.  Unprivileged and without any cgroup a run goes on without a slot
 * (slot->n -1).  Returns 0 or -errno with why set. */
struct rstate;
int rrun_slot(const struct rstate *st, const struct govex_runtime_options *opts, struct rslot *slot,
	      uid_t *uid, gid_t *gid, char *why, size_t why_len);

/* ---- namespaces and probing (ns.c) -------------------------------------------------- */

/* Namespaces a run gets: always mount, PID, IPC, UTS; user when not root; network unless
 * the policy allows it. */
int rns_flags(bool userns, bool net);
/* Writes a single-line identity map for the calling process in its new user namespace
 * (setgroups denied first).  maps holds "uid uid 1\n" and "gid gid 1\n". */
/* The uid and gid maps of a run's user namespace (unprivileged mode): govex's own ids,
 * the same inside (into ret_*). */
void rns_id_maps(char *uid_map, size_t ucap, char *gid_map, size_t gcap, uid_t *ret_uid,
		 gid_t *ret_gid);
int rns_write_maps(const char *uid_map, const char *gid_map, enum govex__step *ret_step);
/* The rest of a shim's entry into its namespaces, after its identity maps: the
 * hostname, the new root from plan (rmount_apply), and SIGCHLD blocked and read through
 * a signalfd (the shim is PID 1: orphans are reaped as they die, so zombies do not hold
 * the pids limit).  Returns the signalfd, or -errno with *ret_step.  Async-signal-safe. */
int rns_shim_enter(const struct rplan *plan, struct rscratch *scr, enum govex__step *ret_step);

/* Tries namespaces, the new mount API, proc, pivot_root and seccomp in a throwaway
 * child.  Returns 0, or -errno with *ret_step. */
int rns_probe(bool userns, enum govex__step *ret_step);
/* Root: an fd of slot's empty network namespace (/run/govex/netns-SLOT, made on first
 * use and checked at open), or -errno: the run then makes its own. */
int rns_empty_netns(int slot);
/* Shim, before anything else: joins fd (closed here) and checks the namespace holds only
 * a loopback that is down; otherwise (or when setns fails) unshares a fresh one.
 * Async-signal-safe.  0 or -errno. */
int rns_join_empty(int fd, enum govex__step *ret_step);

/* ---- warm runs (template.c) -------------------------------------------------------- */

/* A runtime's templates (DESIGN.md "Warm runs"); made by govex_runtime_warm, freed by
 * release. */
struct rwarm;
int rwarm_new(struct rwarm **ret);
void rwarm_free(struct rwarm *w);
/* Why a launch cannot be forked from a template (a short reason, counted in the
 * runtime's stats), or NULL when it can: `python -I [-S] -c CODE` (fd 3 may be handed
 * in), no extra read-only files, the run's own tmpfs workdir, no files in or out. */
struct rstate;
const char *rwarm_ineligible(const struct govex__launch *l, bool wd_tmpfs);
/* A run on a spare of the runtime's template (template_spare.c): 0 with the outcome, < 0
 * a launch failure, 1 when no spare fits it (the run goes on as a warm run made now). */
int rwarm_spare_run(struct rwarm *w, const struct rstate *st, const struct govex__launch *l,
		    struct govex__outcome *o, struct govex_error *err);
/* What a warm run takes from the cold path's preparation (launch.c). */
struct rwarm_run {
	const struct rstate *st;
	const struct govex__launch *l;
	const struct rplan *plan; /* the run's, workdir and identity files included */
	/* its cgroups: the procs fds handed to the template (closed here once they are: a
	 * run's, not a spare's), the accounting added to the init's report */
	struct rcg_run *cg;
	uid_t uid; /* its ids (root: the slot's) */
	gid_t gid;
};
/* Runs it forked from the runtime's template: 0 with the outcome (or < 0, a launch
 * failure, like govex__run_shim); 1 when no template can take it (none could be
 * started, or its flags or locale differ): the caller runs it cold. */
int rwarm_launch(struct rwarm *w, const struct rwarm_run *r, struct govex__pipes *f,
		 struct govex__outcome *o, struct govex_error *err);
/* The backend's warm and warm_stats operations (govex_runtime_warm, stats) on a
 * struct rstate: makes st->warm once, then rwarm_start. */
int rwarm_enable(void *state, const struct govex__launch *proto, struct govex_error *err);
void rwarm_state_stats(void *state, json_t *warm);
/* Starts the templates for runs shaped like proto (both kinds): 0 when ready. */
int rwarm_start(struct rwarm *w, const struct rstate *st, const struct govex__launch *proto,
		struct govex_error *err);
/* A run that went cold in a warm runtime, for the stats (reason: a short name). */
void rwarm_count_cold(struct rwarm *w, const char *reason);
/* Adds templates, ready, warm_runs and cold_reasons to stats' "warm" object. */
void rwarm_stats(struct rwarm *w, json_t *warm);

/* template_relay.c: the run handed (its descriptors and spec, a memfd) to the template
 * on ctl by the calling thread, no process made on the host; as govex__run_shim. */
/* Receives one message with at most one descriptor on sock, without waiting: the
 * descriptor (or -1), the byte in *ret_b (0 at EOF or when there is none yet). */
int rwarm_recv_fd(int sock, char *ret_b);
/* The most descriptors the template's messages carry. */
#define RWARM_RUN_FDS_MAX 16
/* Sends a one-byte tag with n descriptors on sock, waiting for room until deadline_ns
 * (CLOCK_MONOTONIC) at most: 0 or -errno. */
int rwarm_send_fds(int sock, char tag, const int *fds, size_t n, uint64_t deadline_ns);
/* The "R" message's descriptors in the order the template's side reads them (zyg_int.h,
 * struct runfds): spec, stdin, stdout, stderr, error pipe, report, kill request, the
 * cgroup.procs descriptors, the CPU accounting descriptor, call mode's (extra, -1:
 * none), the watch socket.  Returns how many. */
size_t rwarm_run_fds(int spec, const struct govex__pipes *f, const struct rcg_run *cg, int extra,
		     int watch, int fds[RWARM_RUN_FDS_MAX]);
/* A spare's run: the go (memfd) on the spare's watch socket, then as rwarm_relay_run;
 * watch and pidfd (the spare's init's) are closed. */
int rwarm_relay_go(int watch, int pidfd, int go, const struct rwarm_run *r, struct govex__pipes *f,
		   struct govex__outcome *o, struct govex_error *err);
int rwarm_relay_run(int ctl, int spec, const struct rwarm_run *r, struct govex__pipes *f,
		    struct govex__outcome *o, struct govex_error *err);
/* rspec_marshal.c: a run's spec in a memfd for the template's child (or -errno), and
 * bytes as a JSON string of hex digits. */
int rwarm_spec_memfd(const struct rwarm_run *r);
/* A spare's spec (every step of the run taken ahead, up to the allowlist: no record of
 * a run's own; prewarm as zyg_spec.h's, template_spare.c decides it), and a go's (the run's own
 * records: environment, argv, code, files; remount, may be NULL: the workdir's tmpfs options with
 * the files in). */
int rwarm_spare_spec_memfd(const struct rwarm_run *r, int prewarm);
int rwarm_go_spec_memfd(const struct rwarm_run *r, const char *remount);
json_t *rwarm_hex(const void *data, size_t len);

/* ---- per-runtime state (launch.c) ------------------------------------------------- */

/* Filtered networking: where the proxy listens on the run's own loopback. */
#define RNET_PROXY_PORT 3128

struct rstate {
	bool userns; /* not root: the run gets a user namespace */
	uid_t uid;   /* not root: the caller's uid and gid, kept inside */
	gid_t gid;
	uint32_t id_base; /* root: slot N runs as uid id_base + N, gid gid_base + N */
	uint32_t gid_base;
	uint32_t id_count; /* number of slots (and ids) */
	int ncpus;	   /* CPUs the run may use: scales the CPU budget's polling */
	char uid_map[32], gid_map[32];
	bool deny_net, deny_subprocess;
	/* network: {"allow": [...]}: a network namespace of the run's own whose loopback has
	 * govex's proxy (egress.h) listening on RNET_PROXY_PORT, its only way out */
	bool filter_net;
	/* the policy binds "/" itself: no fresh tmpfs workdir can be mounted in that
	 * (host) tree, the run gets a host directory instead */
	bool root_bind;
	int landlock_abi; /* <= 0: none */
	struct rplan plan;
	struct rfilter filter;
	struct rfilter guard; /* tty ioctls; with deny_subprocess, execve only once */
	/* cgroup parents, discovered on the first run (discovery test-creates a cgroup
	 * per hierarchy) */
	pthread_mutex_t cg_lock;
	bool cg_discovered;
	struct rcg_setup cg;
	/* warm runs: set once by govex_runtime_warm (under the runtime's lock, read
	 * atomically by runs); has its own lock */
	struct rwarm *warm;
};

#endif /* GOVEX_RESTRICTED_H */
