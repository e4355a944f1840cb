/* SPDX-License-Identifier: MIT */
/*
 * Cgroups: one per run, below govex's own cgroup of each hierarchy (a run never leaves
 * the caller's limits), for aggregate memory (swap excluded), process count and CPU time
 * of the whole run, peak memory and OOM detection.
 *
 * cgroup v2 where its controllers can be used below us, v1 where that is what the host
 * has, per resource: a hybrid host may have memory on v1 and CPU accounting on v2.  CPU
 * time has no kernel limit (cpu.max is a rate): cgroup accounting (cpuacct.usage, or
 * cpu.stat which v2 has without any controller) is watched by the shim, which kills the
 * run when the budget is spent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "restricted.h"

static const char *const v1_ctrl[RCG_N] = {"memory", "pids", "cpuacct"};
static const char *const res_name[RCG_N] = {"memory", "pids", "cpu"};

/* Does the comma-separated list contain word? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchrnul(p, ',');
		if ((size_t)(e - p) == n && strncmp(p, word, n) == 0)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

static bool has_space_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		const char *e = p;
		while (*e && *e != ' ' && *e != '\n')
			e++;
		if ((size_t)(e - p) == n && strncmp(p, word, n) == 0)
			return true;
		p = e;
	}
	return false;
}

struct mnt {
	char point[PATH_MAX];
	char root[PATH_MAX];
	bool found;
};

/* Mount points of the v1 hierarchies of our controllers and of cgroup2. */
static void find_mounts(struct mnt v1[RCG_N], struct mnt *v2)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root point opts [optional...] - fstype source superopts */
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		char root[PATH_MAX], point[PATH_MAX], fstype[64], source[256], sopts[1024];
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
			continue;
		if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, sopts) != 3)
			continue;
		if (strchr(point, '\\') || strchr(root, '\\'))
			continue; /* escaped names: not a standard cgroup layout */
		if (strcmp(fstype, "cgroup2") == 0 && !v2->found) {
			snprintf(v2->point, sizeof(v2->point), "%s", point);
			snprintf(v2->root, sizeof(v2->root), "%s", root);
			v2->found = true;
		} else if (strcmp(fstype, "cgroup") == 0) {
			for (int i = 0; i < RCG_N; i++)
				if (!v1[i].found && has_word(sopts, v1_ctrl[i])) {
					snprintf(v1[i].point, sizeof(v1[i].point), "%s", point);
					snprintf(v1[i].root, sizeof(v1[i].root), "%s", root);
					v1[i].found = true;
				}
		}
	}
	free(line);
	fclose(f);
}

/* Our own path in the hierarchy with controller ctrl (NULL: the v2 "0::" line). */
static bool own_path(const char *ctrl, char *ret, size_t cap)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t lcap = 0;
	bool ok = false;
	while (!ok && getline(&line, &lcap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		if (ctrl ? has_word(ctrls, ctrl) : (strncmp(line, "0", 1) == 0 && !*ctrls)) {
			snprintf(ret, cap, "%s", path);
			ok = true;
		}
	}
	free(line);
	fclose(f);
	return ok;
}

/* mountpoint + (own path relative to the mount's root). */
static bool join_cg(const struct mnt *m, const char *own, char *ret, size_t cap)
{
	size_t rl = strlen(m->root);
	const char *rel = own;
	if (strcmp(m->root, "/") != 0) {
		if (strncmp(own, m->root, rl) != 0 || (own[rl] != '/' && own[rl] != '\0'))
			return false; /* our cgroup is not visible in this mount */
		rel = own + rl;
	}
	if (strcmp(rel, "/") == 0)
		rel = "";
	return (size_t)snprintf(ret, cap, "%s%s", m->point, rel) < cap;
}

/* Removes per-run cgroups left by a govex process that died, named by an earlier
 * version of govex after its pid (today's carry the slot, reclaimed by the next run of
 * that slot). */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned long pid, seq;
		char tail;
		if (sscanf(de->d_name, "govex.%lu.%lu%c", &pid, &seq, &tail) != 2)
			continue;
		if (pid == 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			rmdir(path); /* fails harmlessly while something still runs there */
	}
	closedir(d);
}

/* Can we make (and remove) a child cgroup in dir, and write what we need there? */
static int try_child(const char *dir, int res, int version)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/govex.probe.%d", dir, (int)getpid()) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	int r = 0;
	const char *file = NULL;
	if (res == RCG_MEM)
		file = version == 1 ? "memory.limit_in_bytes" : "memory.max";
	else if (res == RCG_PIDS)
		file = "pids.max";
	if (file) {
		char fpath[PATH_MAX];
		int fd = -1;
		if ((size_t)snprintf(fpath, sizeof(fpath), "%s/%s", path, file) < sizeof(fpath))
			fd = open(fpath, O_WRONLY | O_CLOEXEC);
		else
			errno = ENAMETOOLONG;
		if (fd < 0)
			r = -errno;
		else
			close(fd);
	}
	if (r == 0) {
		char fpath[PATH_MAX];
		int fd = -1;
		if ((size_t)snprintf(fpath, sizeof(fpath), "%s/cgroup.procs", path) < sizeof(fpath))
			fd = open(fpath, O_WRONLY | O_CLOEXEC);
		else
			errno = ENAMETOOLONG;
		if (fd < 0)
			r = -errno;
		else
			close(fd);
	}
	rmdir(path);
	return r;
}

void rcg_discover(struct rcg_setup *ret, bool test, const char *mode)
{
	struct mnt v1[RCG_N], v2;
	memset(ret, 0, sizeof(*ret));
	memset(v1, 0, sizeof(v1));
	memset(&v2, 0, sizeof(v2));
	find_mounts(v1, &v2);

	/* the v2 hierarchy serves the resources no v1 hierarchy has: below the host
	 * cgroup (cghost.c), obtained only when one of them needs it */
	bool want2 = false;
	for (int i = 0; i < RCG_N; i++)
		want2 |= !v1[i].found;
	char dir2[PATH_MAX] = "";
	struct rcg_host host = {.source = RCG_SRC_NONE};
	if (v2.found && want2) {
		rcg_host_obtain(v2.point, v2.root, mode, &host);
		snprintf(dir2, sizeof(dir2), "%s", host.dir);
		ret->source = host.source;
		snprintf(ret->source_detail, sizeof(ret->source_detail), "%s", host.detail);
	}
	bool have2 = dir2[0] != '\0';
	char subtree[512] = "";
	if (have2) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir2);
		rcg_read_small(p, subtree, sizeof(subtree));
	}

	for (int i = 0; i < RCG_N; i++) {
		struct rcg_parent *p = &ret->p[i];
		char dir[PATH_MAX], own[PATH_MAX];
		int version = 0;
		if (v1[i].found) {
			/* the controller is bound to a v1 hierarchy: it cannot be on v2 */
			if (!own_path(v1_ctrl[i], own, sizeof(own)) ||
			    !join_cg(&v1[i], own, dir, sizeof(dir))) {
				snprintf(p->reason, sizeof(p->reason),
					 "cgroup v1 %s: our cgroup is not visible", v1_ctrl[i]);
				continue;
			}
			version = 1;
		} else if (have2) {
			/* cpu.stat exists in every v2 cgroup; memory and pids need their
			 * controllers enabled for the host cgroup's children */
			if (i != RCG_CPU && !has_space_word(subtree, res_name[i])) {
				snprintf(p->reason, sizeof(p->reason),
					 "cgroup v2: the %s controller is not enabled below %s",
					 res_name[i], host.detail);
				continue;
			}
			snprintf(dir, sizeof(dir), "%s", dir2);
			version = 2;
		} else if (v2.found) {
			snprintf(p->reason, sizeof(p->reason), "%s", host.detail);
			continue;
		} else {
			snprintf(p->reason, sizeof(p->reason), "no cgroup hierarchy with %s",
				 res_name[i]);
			continue;
		}
		sweep_stale(dir);
		int r = test ? try_child(dir, i, version) : 0;
		if (r < 0) {
			snprintf(p->reason, sizeof(p->reason),
				 "cgroup v%d %s: cannot make a cgroup below ours: %s", version,
				 res_name[i], strerror(-r));
			continue;
		}
		p->dir = strdup(dir);
		if (!p->dir) {
			snprintf(p->reason, sizeof(p->reason), "out of memory");
			continue;
		}
		p->version = version;
	}
}

void govex__restricted_host_prepare(const struct govex_runtime_options *opts)
{
	struct rcg_setup s;
	rcg_discover(&s, false, opts ? opts->cgroup : NULL);
	rcg_setup_free(&s);
}

void rcg_setup_free(struct rcg_setup *s)
{
	for (int i = 0; i < RCG_N; i++) {
		free(s->p[i].dir);
		s->p[i].dir = NULL;
	}
}

/* ---- per run ------------------------------------------------------------------------- */

void rcg_run_init(struct rcg_run *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < RCG_N; i++)
		r->procs_fd[i] = -1;
	r->cpu_fd = r->peak_fd = r->oom_fd = -1;
	r->limit_fd[0] = r->limit_fd[1] = -1;
}

static int kill_listed(const char *dir);
static int rcg_remove_depth(const char *dir, int depth);

/* Removes the cgroups below dir, deepest first (depth levels at most). */
static int remove_children(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int ret = 0;
	const struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub) ||
		    depth <= 0) {
			ret = -ENAMETOOLONG;
			break;
		}
		if ((ret = rcg_remove_depth(sub, depth - 1)) < 0)
			break;
	}
	closedir(d);
	return ret;
}

static int rcg_remove_depth(const char *dir, int depth)
{
	/* none should be left in a finished run (the PID namespace died with the shim),
	 * but a cgroup is not removed while something runs in it, nor while it has
	 * cgroups below it: a run's own has none, one planted under a slot's name by the
	 * cgroup's owner may (reclaimed whole; cgroup.kill reaches its subtree) */
	for (int tries = 0; tries < 300; tries++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		rcg_write_str(dir, "cgroup.kill", "1"); /* v2: the whole subtree at once */
		kill_listed(dir);
		int e = remove_children(dir, depth);
		if (e < 0)
			return e;
		if (rmdir(dir) == 0)
			return 0;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

int rcg_remove(const char *dir)
{
	return rcg_remove_depth(dir, 8);
}

/* Whether the host has swap in use (a line past /proc/swaps' header): then a memory
 * limit without swap accounting (no memory.memsw / memory.swap files: swapaccount=0)
 * would not bound what the run holds, and the limit is refused rather than claimed. */
static bool host_swaps(void)
{
	char buf[512];
	int fd = open("/proc/swaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* cannot tell: assume the worst */
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return true;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	return nl && nl[1] != '\0';
}

/* Makes resource i's directory (or shares the v2 one already made), reclaiming one a
 * dead run of this slot left, and opens the file the program child joins through.
 * Returns 0, 1 when the run goes without this resource (not needed and it could not be
 * made), or -errno with *what set. */
static int cg_make_dir(const struct rcg_setup *s, int i, const char *name, bool needed,
		       struct rcg_run *r, const char **what)
{
	const struct rcg_parent *p = &s->p[i];
	/* v2 resources share one directory */
	for (int j = 0; j < i; j++)
		if (r->dir[j] && s->p[j].version == p->version &&
		    strcmp(s->p[j].dir, p->dir) == 0) {
			r->dir[i] = r->dir[j];
			return 0;
		}
	*what = "mkdir";
	if (asprintf(&r->dir[i], "%s/%s", p->dir, name) < 0) {
		r->dir[i] = NULL;
		return -ENOMEM;
	}
	r->owner[i] = true;
	int e = govex__neg_errno(mkdir(r->dir[i], 0755));
	if (e < 0 && e != -EEXIST) {
		r->owner[i] = false;
		if (needed)
			return e;
		/* not needed by this run: it goes without this resource's accounting */
		free(r->dir[i]);
		r->dir[i] = NULL;
		return 1;
	}
	if (e == -EEXIST) {
		/* left by a run of this slot that died: ours now (we hold the slot's lock),
		 * reclaimed */
		*what = "reclaim";
		e = rcg_remove(r->dir[i]);
		if (e == 0) {
			*what = "mkdir";
			e = govex__neg_errno(mkdir(r->dir[i], 0755));
		}
		if (e < 0) {
			/* not ours to remove again */
			r->owner[i] = false;
			free(r->dir[i]);
			r->dir[i] = NULL;
			return e;
		}
	}
	char path[PATH_MAX];
	/* v1: the program child joins through "tasks", moving its only thread: the kernel
	 * then skips the global threadgroup lock, whose writer waits for an RCU grace
	 * period (measured: 0.05 ms instead of 8-14 ms on a loaded host).  The child is
	 * single-threaded (a fresh fork of the shim), so the thread is the whole process.
	 * v2 allows thread moves only in threaded cgroups: cgroup.procs. */
	snprintf(path, sizeof(path), "%s/%s", r->dir[i],
		 p->version == 1 ? "tasks" : "cgroup.procs");
	*what = "cgroup.procs";
	r->procs_fd[i] = open(path, O_WRONLY | O_CLOEXEC);
	return r->procs_fd[i] < 0 ? -errno : 0;
}

/* A memory limit; swap cannot extend it: memory+swap gets the same bound. */
static int cg_memory_limit(int version, const char *dir, uint64_t bytes)
{
	char val[32];
	snprintf(val, sizeof(val), "%" PRIu64, bytes);
	/* v1: kernel memory is charged to the same counter (there is no separate kmem
	 * limit on current kernels) */
	int w = rcg_write_str(dir, version == 1 ? "memory.limit_in_bytes" : "memory.max", val);
	if (w < 0)
		return w;
	int w2 = version == 1 ? rcg_write_str(dir, "memory.memsw.limit_in_bytes", val)
			      : rcg_write_str(dir, "memory.swap.max", "0");
	if (w2 < 0 && (w2 != -ENOENT || host_swaps()))
		return w2 == -ENOENT ? -EOPNOTSUPP : w2;
	return 0;
}

/* Opens r's limit file (k: 0 memory, 1 pids) just written and keeps what it reads: the
 * kernel's form of the limit (memory.max rounded to pages). */
static int limit_watch(struct rcg_run *r, int k, const char *file)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", r->dir[k ? RCG_PIDS : RCG_MEM], file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, r->limit_val[k], sizeof(r->limit_val[k]) - 1, 0);
	if (n <= 0) {
		close(fd);
		return n < 0 ? -errno : -EIO;
	}
	r->limit_val[k][n] = '\0';
	r->limit_fd[k] = fd;
	return 0;
}

govex__ctlset rcg_limits_lost(const struct rcg_run *r)
{
	static const govex__ctlset ctl[2] = {CTL(MEMORY_AGGREGATE), CTL(PIDS_AGGREGATE)};
	govex__ctlset lost = 0;
	if (r->final)
		return r->final_lost;
	for (int k = 0; k < 2; k++) {
		if (r->limit_fd[k] < 0)
			continue;
		char buf[sizeof(r->limit_val[k])];
		ssize_t n = pread(r->limit_fd[k], buf, sizeof(buf) - 1, 0);
		if (n > 0)
			buf[n] = '\0';
		if (n <= 0 || strcmp(buf, r->limit_val[k]) != 0)
			lost |= ctl[k];
	}
	return lost;
}

/* Sets resource i's limit from l (CPU: opens its accounting for the shim).  0 or -errno
 * with *what set. */
static int cg_set_limit(const struct rcg_parent *p, int i, const struct govex__limits *l,
			struct rcg_run *r, const char **what)
{
	int w = 0;
	if (i == RCG_MEM && l->memory_bytes) {
		*what = "memory limit";
		w = cg_memory_limit(p->version, r->dir[i], l->memory_bytes);
		if (w >= 0 && p->version == 2)
			w = limit_watch(r, 0, "memory.max");
	} else if (i == RCG_PIDS && l->processes) {
		char val[32];
		snprintf(val, sizeof(val), "%" PRIu64, l->processes);
		*what = "pids limit";
		w = rcg_write_str(r->dir[i], "pids.max", val);
		if (w >= 0 && p->version == 2)
			w = limit_watch(r, 1, "pids.max");
	} else if (i == RCG_CPU) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", r->dir[i],
			 p->version == 1 ? "cpuacct.usage" : "cpu.stat");
		*what = "cpu accounting";
		r->cpu_fd = open(path, O_RDONLY | O_CLOEXEC);
		r->cpu_version = p->version;
		if (r->cpu_fd < 0)
			w = -errno;
	}
	if (i == RCG_MEM && p->version == 2)
		rcg_write_str(r->dir[i], "memory.oom.group", "1");
	if (i == RCG_MEM && w >= 0) {
		/* the accounting read at the end, opened now (off the run's end) */
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", r->dir[i],
			 p->version == 1 ? "memory.max_usage_in_bytes" : "memory.peak");
		r->peak_fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/%s", r->dir[i],
			 p->version == 1 ? "memory.oom_control" : "memory.events");
		r->oom_fd = open(path, O_RDONLY | O_CLOEXEC);
		r->mem_version = p->version;
	}
	return w;
}

int rcg_create(const struct rcg_setup *s, const char *name, const struct govex__limits *l,
	       govex__ctlset need, struct rcg_run *ret, struct govex_error *err)
{
	/* the aggregate control each resource's cgroup enforces */
	static const govex__ctlset by_res[RCG_N] = {
	    [RCG_MEM] = CTL(MEMORY_AGGREGATE),
	    [RCG_PIDS] = CTL(PIDS_AGGREGATE),
	    [RCG_CPU] = CTL(CPU_TIME_AGGREGATE),
	};
	_cleanup_(rcg_destroy) struct rcg_run r;
	rcg_run_init(&r);
	const char *what = "mkdir";

	for (int i = 0; i < RCG_N; i++) {
		const struct rcg_parent *p = &s->p[i];
		bool needed = need & by_res[i];
		/* every run gets a cgroup wherever one can be made, whatever its policy: the
		 * accounting (peak memory, CPU, tasks) is the run's, and what a killed run
		 * left is found by name */
		if (!p->version) {
			if (needed)
				return govex__err(err, EOPNOTSUPP, EOPNOTSUPP, "cgroup: %s: %s",
						  p->reason[0] ? p->reason : res_name[i],
						  strerror(EOPNOTSUPP));
			continue;
		}
		int e = cg_make_dir(s, i, name, needed, &r, &what);
		if (e == 1)
			continue;
		if (e == 0)
			e = cg_set_limit(p, i, l, &r, &what);
		if (e == -ENOENT && p->version == 2 && i != RCG_CPU)
			/* the run's cgroup has no such file: its controller is not enabled in
			 * the host cgroup's subtree_control (it was when govex settled it) */
			return govex__err(
			    err, ENOENT, ENOENT,
			    "cgroup: %s: the %s controller is no longer enabled in the "
			    "cgroup.subtree_control of govex's cgroup (it was taken away "
			    "since govex enabled it)",
			    what, i == RCG_MEM ? "memory" : "pids");
		if (e < 0)
			return govex__err(err, -e, -e, "cgroup: %s: %s", what, strerror(-e));
	}
	*ret = r;
	rcg_run_init(&r); /* taken */
	return 0;
}

/* ---- the hand-over to the shim ----------------------------------------------------------
 *
 * One message: which descriptors follow (a byte per procs fd, one for the CPU fd, and the
 * CPU file's version), and those descriptors (SCM_RIGHTS), in that order.
 */
struct cg_wire {
	unsigned char procs[RCG_N], cpu, cpu_version;
};

int rcg_send(int sock, const struct rcg_run *r)
{
	struct cg_wire wire = {.cpu = r->cpu_fd >= 0, .cpu_version = (unsigned char)r->cpu_version};
	int fds[RCG_N + 1];
	size_t n = 0;
	for (int i = 0; i < RCG_N; i++)
		if ((wire.procs[i] = r->procs_fd[i] >= 0))
			fds[n++] = r->procs_fd[i];
	if (wire.cpu)
		fds[n++] = r->cpu_fd;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &wire, .iov_len = sizeof(wire)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n) {
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	ssize_t w;
	do
		w = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(wire) ? 0 : (w < 0 ? -errno : -EIO);
}

int rcg_receive(int sock, struct rcg_run *ret)
{
	rcg_run_init(ret); /* (memset and stores: async-signal-safe) */
	struct cg_wire wire;
	memset(&wire, 0, sizeof(wire)); /* (filled by recvmsg; cppcheck cannot tell) */
	union {
		char buf[CMSG_SPACE((RCG_N + 1) * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &wire, .iov_len = sizeof(wire)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	ssize_t got;
	do
		got = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	int fds[RCG_N + 1];
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		fds[i] = -1;
	size_t n = 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (n > RCG_N + 1)
			n = RCG_N + 1;
		memcpy(fds, CMSG_DATA(c), n * sizeof(int));
	}
	size_t want = 0;
	if (got == (ssize_t)sizeof(wire) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < RCG_N; i++)
			want += wire.procs[i] != 0;
		want += wire.cpu != 0;
	}
	if (got != (ssize_t)sizeof(wire) || want != n) {
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return got == 0 ? -EPIPE : -EPROTO;
	}
	size_t k = 0;
	for (int i = 0; i < RCG_N; i++)
		if (wire.procs[i])
			ret->procs_fd[i] = fds[k++];
	if (wire.cpu) {
		ret->cpu_fd = fds[k];
		ret->cpu_version = wire.cpu_version;
	}
	return 0;
}

/* A decimal number at p (async-signal-safe, unlike strtoll in principle). */
static int64_t parse_u64(const char *p)
{
	int64_t v = 0;
	bool any = false;
	while (*p == ' ')
		p++;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
		any = true;
	}
	return any ? v : -1;
}

static int64_t keyed(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p;) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return parse_u64(p + kl + 1);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

int64_t rcg_cpu_ns(int fd, int version)
{
	char buf[1024];
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (version == 1)
		return parse_u64(buf);
	int64_t us = keyed(buf, "usage_usec");
	return us < 0 ? -1 : us * 1000;
}

void rcg_stats(const struct rcg_run *r, int64_t *ret_cpu_us, int64_t *ret_peak, bool *ret_oom)
{
	char buf[2048], path[PATH_MAX];
	*ret_cpu_us = -1;
	*ret_peak = -1;
	*ret_oom = false;
	if (r->final) {
		*ret_cpu_us = r->final_cpu_us;
		*ret_peak = r->final_peak;
		*ret_oom = r->final_oom;
		return;
	}
	if (r->cpu_fd >= 0) {
		int64_t ns = rcg_cpu_ns(r->cpu_fd, r->cpu_version);
		if (ns >= 0)
			*ret_cpu_us = ns / 1000;
	}
	if (r->peak_fd >= 0 && r->oom_fd >= 0) {
		ssize_t n = pread(r->peak_fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			*ret_peak = strtoll(buf, NULL, 10);
		}
		n = pread(r->oom_fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			*ret_oom = keyed(buf, "oom_kill") > 0;
		}
	} else if (r->dir[RCG_MEM]) {
		/* the version is told by the files present */
		snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", r->dir[RCG_MEM]);
		if (rcg_read_small(path, buf, sizeof(buf)) > 0) {
			*ret_peak = strtoll(buf, NULL, 10);
			snprintf(path, sizeof(path), "%s/memory.oom_control", r->dir[RCG_MEM]);
			if (rcg_read_small(path, buf, sizeof(buf)) > 0)
				*ret_oom = keyed(buf, "oom_kill") > 0;
		} else {
			snprintf(path, sizeof(path), "%s/memory.peak", r->dir[RCG_MEM]);
			if (rcg_read_small(path, buf, sizeof(buf)) > 0)
				*ret_peak = strtoll(buf, NULL, 10);
			snprintf(path, sizeof(path), "%s/memory.events", r->dir[RCG_MEM]);
			if (rcg_read_small(path, buf, sizeof(buf)) > 0)
				*ret_oom = keyed(buf, "oom_kill") > 0;
		}
	}
}

void rcg_amend(const struct rcg_run *r, struct govex__shim_report *rep)
{
	int64_t cpu_us, peak;
	bool oom;
	rcg_stats(r, &cpu_us, &peak, &oom);
	if (cpu_us >= 0)
		rep->cpu_us = cpu_us;
	/* the run's peak as the cgroup was charged: every process, shared memory, tmpfs
	 * pages and kernel memory (pages first touched by another cgroup, like cached
	 * shared libraries, are not this run's) */
	if (peak >= 0)
		rep->max_rss_kb = peak / 1024;
	rep->cgroup_oom = oom;
}

/* SIGKILLs every process listed in dir/cgroup.procs; returns how many were listed. */
static int kill_listed(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	long pid;
	int n = 0;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
		n++;
	}
	fclose(f);
	return n;
}

bool rcg_finish_early(struct rcg_run *r)
{
	const int p = RCG_PIDS;
	if (r->final || !r->owner[p] || !r->dir[p] || r->removed[p])
		return r->final;
	for (int i = 0; i < RCG_N; i++)
		if (i != p && r->dir[i] && strcmp(r->dir[i], r->dir[p]) == 0)
			return false; /* one v2 directory for all: nothing to tell them apart */
	govex__ctlset lost = rcg_limits_lost(r); /* (before the files go) */
	if (rmdir(r->dir[p]) < 0)
		return false; /* a task is left (or another reason): after the report, then */
	r->removed[p] = true;
	rcg_stats(r, &r->final_cpu_us, &r->final_peak, &r->final_oom);
	r->final_lost = lost;
	r->final = true;
	for (int i = 0; i < RCG_N; i++)
		if (r->owner[i] && r->dir[i] && !r->removed[i] && rmdir(r->dir[i]) == 0)
			r->removed[i] = true;
	return true;
}

int rcg_destroy(struct rcg_run *r)
{
	int ret = 0;
	for (int i = 0; i < RCG_N; i++) {
		if (r->procs_fd[i] >= 0)
			close(r->procs_fd[i]);
		r->procs_fd[i] = -1;
	}
	int *fds[] = {&r->cpu_fd, &r->peak_fd, &r->oom_fd, &r->limit_fd[0], &r->limit_fd[1]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	for (int i = 0; i < RCG_N; i++)
		if (r->owner[i] && r->dir[i] && !r->removed[i]) {
			int e = rcg_remove(r->dir[i]);
			if (e < 0 && !ret)
				ret = e;
		}
	for (int i = 0; i < RCG_N; i++) {
		if (r->owner[i])
			free(r->dir[i]);
		r->dir[i] = NULL;
		r->owner[i] = false;
		r->removed[i] = false;
	}
	r->final = false;
	r->final_lost = 0;
	return ret;
}
