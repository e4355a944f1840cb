/* SPDX-License-Identifier: MIT */
/*
 * Where the aggregate limits come from (DESIGN.md "Hosts"): the cgroup v2 below which
 * runs' cgroups are made.  cgroup v2's "no internal processes" rule lets a cgroup give
 * its children the memory and pids controllers only while it holds no process itself, so
 * govex cannot use its own cgroup as it is.  The ecosystem's answer, taken here in order:
 *
 *   1. Our own cgroup is delegated to us (a systemd unit or scope with Delegate=yes, a
 *      user's user@UID.service subtree, a container's cgroup-namespace root on a writable
 *      cgroupfs): the processes in it (govex, and whatever else the unit started there)
 *      move into its leaf child "supervisor" (systemd's DelegateSubgroup= convention,
 *      what runc, crun and podman do), and the controllers runs need are enabled in its
 *      cgroup.subtree_control; runs' cgroups are the leaf's siblings.
 *   2. Not delegated, on a systemd host: the system manager (as root) or the user's
 *      manager is asked for a transient scope with Delegate=yes holding this process
 *      (sdscope.c), and then as 1.
 *   3. A cgroup the embedding host hands to the library (govex_runtime_options.cgroup):
 *      used as it is, never moved into; only its subtree_control is written, and only
 *      while it holds no process.  Named by a normalized absolute path below the
 *      cgroup2 mount, ours alone as in 1.
 *   4. Otherwise none, with what the user can change on this host.
 *
 * Delegation is recognized the way the kernel's cgroup-v2 guide and systemd define it:
 * write access to the directory, its cgroup.procs and cgroup.subtree_control (ours alone:
 * owned by our euid, writable by no group or other; and no cgroup above it whose
 * cgroup.procs another user could write, who could move runs out of it); in our own user
 * manager's tree (user@EUID.service, root's too) a unit that manager delegated; and, as
 * root (who can write every cgroup), a mark that the cgroup was handed to us: systemd's
 * trusted.delegate xattr on it or an ancestor, or the root of a container's cgroup
 * namespace (nsdelegate: its init in it).  govex writes into no cgroup that is not delegated
 * to it, nor into one holding processes it cannot move (outside its PID namespace).
 * Steps 1 and 2 change the whole process's cgroup, once per process; the outcome is kept
 * for every later runtime.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "restricted.h"

#define LEAF "supervisor"

static const char *const source_names[] = {
    [RCG_SRC_NONE] = "none",	   [RCG_SRC_ROOT] = "root",   [RCG_SRC_DELEGATED] = "delegated",
    [RCG_SRC_SYSTEMD] = "systemd", [RCG_SRC_HANDED] = "host",
};

const char *rcg_source_name(enum rcg_source s)
{
	return (unsigned)s < ARRAY_SIZE(source_names) ? source_names[s] : "none";
}

/* The cgroupfs files this one and cgroup.c read and write (restricted.h). */
int rcg_read_small(const char *path, char *buf, size_t cap)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int rcg_write_str(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return govex__neg_errno(write(fd, val, strlen(val)));
}

static int read_at(const char *dir, const char *file, char *buf, size_t cap)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	return rcg_read_small(path, buf, cap);
}

static bool exists_at(const char *dir, const char *file)
{
	char path[PATH_MAX];
	return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) < sizeof(path) &&
	       access(path, F_OK) == 0;
}

static bool writable_at(const char *dir, const char *file)
{
	char path[PATH_MAX];
	return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) < sizeof(path) &&
	       access(path, W_OK) == 0;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
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

/* The controllers runs need below the host cgroup (cpu.stat needs none). */
static const char *const needed_ctrl[] = {"memory", "pids"};

/* Does dir carry a manager's mark of a delegated cgroup?  trusted.delegate is the
 * system manager's (only root can write it); user.delegate, which a user manager sets,
 * counts for an unprivileged govex only (any owner of the directory can write it, and a
 * root govex must not take a user's word for it). */
static bool delegate_mark(const char *dir, bool user_mark)
{
	static const char *const names[] = {"trusted.delegate", "user.delegate"};
	for (size_t i = 0; i < (user_mark ? 2u : 1u); i++) {
		char v[8];
		ssize_t n = getxattr(dir, names[i], v, sizeof(v) - 1);
		if (n > 0) {
			v[n] = '\0';
			if (strcmp(v, "1") == 0)
				return true;
		}
	}
	return false;
}

/* Is dir (point + rel) or an ancestor of it, below stop (a prefix of rel, "" for the
 * mount's root), marked delegated? */
static bool marked_below(const char *point, const char *rel, size_t stop, bool user_mark)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s%s", point, rel) >= sizeof(path))
		return false;
	size_t floor = strlen(point) + stop;
	for (;;) {
		if (delegate_mark(path, user_mark))
			return true;
		char *slash = strrchr(path + strlen(point), '/');
		if (!slash || (size_t)(slash - path) <= floor)
			return false;
		*slash = '\0';
	}
}

/* dir and the files a delegatee writes are ours alone: owned by our euid and writable by
 * no group or other.  Whoever else could write cgroup.procs of a cgroup above the runs'
 * could move a run's processes out of the cgroups that bound them (cgroup v2 checks the
 * writer's access to the cgroups, not its right over the process). */
static bool ours_alone(const char *dir)
{
	static const char *const files[] = {".", "cgroup.procs", "cgroup.subtree_control"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, files[i]) >= sizeof(path) ||
		    lstat(path, &st) < 0 || st.st_uid != geteuid() ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return false;
	}
	return true;
}

/* Every cgroup above dir, up to the mount's root: its cgroup.procs writable by no one
 * but our euid or root.  cgroup v2 lets whoever can write a common ancestor's
 * cgroup.procs move a process between that ancestor's descendants, whoever owns the
 * process: another user owning a cgroup above ours could move a run out of its cgroup
 * into one of theirs, and out of its limits. */
static bool ancestors_ours(const char *point, const char *dir)
{
	char path[PATH_MAX];
	size_t pl = strlen(point);
	if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
		return false;
	for (;;) {
		char *slash = strrchr(path, '/');
		if (!slash || (size_t)(slash - path) < pl)
			return true;
		*slash = '\0';
		char procs[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(procs, sizeof(procs), "%s/cgroup.procs", path) >=
			sizeof(procs) ||
		    lstat(procs, &st) < 0 || (st.st_uid != geteuid() && st.st_uid != 0) ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return false;
	}
}

/* The offset just past "/user@EUID.service" in rel (our own user manager's subtree:
 * root's user@0.service too), or 0 when rel is not in it. */
static size_t user_manager_end(const char *rel)
{
	char mgr[64];
	snprintf(mgr, sizeof(mgr), "/user@%u.service", (unsigned)geteuid());
	size_t n = strlen(mgr);
	for (const char *m = strstr(rel, mgr); m; m = strstr(m + 1, mgr))
		if (m[n] == '/' || m[n] == '\0')
			return (size_t)(m - rel) + n;
	return 0;
}

/* rel's nearest unit (a .service or .scope component) below the first below bytes, asked
 * of the user's manager: does it have Delegate=yes? */
static bool user_unit_delegated(const char *rel, size_t below)
{
	char copy[PATH_MAX], why[160];
	snprintf(copy, sizeof(copy), "%s", rel);
	for (;;) {
		char *slash = strrchr(copy, '/');
		if (!slash || (size_t)(slash - copy) < below)
			return false;
		const char *name = slash + 1;
		size_t n = strlen(name);
		if ((n > 8 && strcmp(name + n - 8, ".service") == 0) ||
		    (n > 6 && strcmp(name + n - 6, ".scope") == 0))
			return rsd_unit_delegated(true, name, why, sizeof(why)) == 1;
		*slash = '\0';
	}
}

/* Is the mount's root (point) the root of a container's cgroup namespace?  It is not the
 * host's root cgroup (that has no cgroup.type), we are in a cgroup namespace other than
 * the initial one (the kernel's fixed inode number for that), and our PID namespace's
 * init is in ours: a container runtime makes both, its init (the entry point) in the
 * namespace's root, the cgroup it delegated to the container.  A cgroup namespace an
 * ordinary process of the host made over its own cgroup (unshare -C, the host's init
 * not in it), or a cgroupfs subtree bound over /sys/fs/cgroup, says nothing of who owns
 * that cgroup: a unit nobody delegated. */
static bool container_root(const char *point)
{
	char self[64], init[64];
	ssize_t n = readlink("/proc/self/ns/cgroup", self, sizeof(self) - 1);
	ssize_t m = readlink("/proc/1/ns/cgroup", init, sizeof(init) - 1);
	if (!exists_at(point, "cgroup.type") || n <= 0 || m <= 0)
		return false;
	self[n] = init[m] = '\0';
	return strcmp(self, "cgroup:[4026531835]") != 0 && strcmp(self, init) == 0;
}

/* Is dir (rel below the mount point, "" for the mount's root) delegated to us?  The
 * files a delegatee writes must be writable (a read-only cgroupfs is not delegated) and
 * ours alone, and no one else may move processes between the cgroups below it (above);
 * in our own user manager's tree (user@EUID.service, root's user@0.service included)
 * every cgroup is ours by owner, yet the manager's: only a unit it delegated is ours to
 * change; elsewhere, as an unprivileged user, that is the delegation (the guide's
 * chown); as root, the cgroup or an ancestor within the mount must also be marked by
 * systemd, or the mount's root must be a container's cgroup namespace's root
 * (container_root). */
static bool delegated(const char *point, const char *rel, const char *dir)
{
	if (access(dir, W_OK) < 0 || !writable_at(dir, "cgroup.procs") ||
	    !writable_at(dir, "cgroup.subtree_control") || !ours_alone(dir) ||
	    !ancestors_ours(point, dir))
		return false;
	size_t below = user_manager_end(rel);
	if (below) {
		/* the manager marks a unit it delegated (user.delegate: root's manager and
		 * the user alone can write it below user@EUID.service); the user manager of
		 * systemd 252 marks nothing: ask it about the nearest unit at or above our
		 * cgroup */
		if (marked_below(point, rel, below, true))
			return true;
		return user_unit_delegated(rel, below);
	}
	/* in a cgroup namespace, only a container's root is ours (nsdelegate) */
	bool ns = exists_at(point, "cgroup.type");
	if (ns && !container_root(point))
		return false;
	if (geteuid() != 0)
		return true;
	return marked_below(point, rel, 0, false) || ns;
}

/* Does dir hold a process outside our PID namespace (listed as 0: one we cannot name,
 * so cannot move)?  Then the cgroup is not ours alone to rearrange: told before anything
 * is written. */
static bool holds_foreign(const char *dir)
{
	char procs[PATH_MAX];
	if ((size_t)snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir) >= sizeof(procs))
		return true;
	FILE *f = fopen(procs, "re");
	if (!f)
		return true;
	long pid;
	bool foreign = false;
	while (!foreign && fscanf(f, "%ld", &pid) == 1)
		foreign = pid <= 0;
	fclose(f);
	return foreign;
}

/* Moves every process of dir into dir/LEAF.  0 or -errno. */
static int move_all(const char *dir, const char *leaf)
{
	char procs[PATH_MAX], dst[PATH_MAX];
	if ((size_t)snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir) >= sizeof(procs) ||
	    (size_t)snprintf(dst, sizeof(dst), "%s/cgroup.procs", leaf) >= sizeof(dst))
		return -ENAMETOOLONG;
	_cleanup_close_ int out = open(dst, O_WRONLY | O_CLOEXEC);
	if (out < 0)
		return -errno;
	/* a process started meanwhile is caught by the next round */
	for (int round = 0; round < 20; round++) {
		FILE *f = fopen(procs, "re");
		if (!f)
			return -errno;
		long pid;
		int listed = 0, err = 0;
		while (fscanf(f, "%ld", &pid) == 1) {
			listed++;
			char val[24];
			int n = snprintf(val, sizeof(val), "%ld", pid);
			/* 0: a process outside our PID namespace, which we cannot name */
			if (pid <= 0) {
				err = -EPERM;
				continue;
			}
			if (write(out, val, (size_t)n) < 0 && errno != ESRCH)
				err = -errno;
		}
		fclose(f);
		if (listed == 0)
			return 0;
		if (err < 0)
			return err;
	}
	return -EBUSY;
}

/* Enables what runs need in dir's subtree_control (moving what is in dir to leaf first
 * when leaf is given).  0, or -errno with *what naming the step. */
static int enable_below(const char *dir, const char *leaf, const char **what)
{
	char avail[512] = "", sub[512] = "", want[64] = "";
	read_at(dir, "cgroup.controllers", avail, sizeof(avail));
	read_at(dir, "cgroup.subtree_control", sub, sizeof(sub));
	for (size_t i = 0; i < ARRAY_SIZE(needed_ctrl); i++) {
		if (has_word(sub, needed_ctrl[i]))
			continue;
		if (!has_word(avail, needed_ctrl[i])) {
			*what = needed_ctrl[i];
			return -ENOPROTOOPT; /* not delegated to dir */
		}
		size_t l = strlen(want);
		snprintf(want + l, sizeof(want) - l, "%s+%s", l ? " " : "", needed_ctrl[i]);
	}
	if (!want[0])
		return 0;
	int e = 0;
	for (int tries = 0; tries < 10; tries++) {
		if (leaf) {
			*what = "moving its processes into " LEAF;
			if ((e = move_all(dir, leaf)) < 0)
				return e;
		}
		*what = "cgroup.subtree_control";
		e = rcg_write_str(dir, "cgroup.subtree_control", want);
		if (e != -EBUSY || !leaf)
			return e < 0 ? e : 0;
		/* EBUSY: a process appeared in dir since; move it too */
	}
	return e;
}

/* Uses delegated cgroup dir (rel below point) for runs: step 1. */
static int take_delegated(const char *point, const char *rel, char *host, size_t cap, char *why,
			  size_t whycap)
{
	char dir[PATH_MAX], leaf[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s", point, rel);
	/* already in the leaf (a govex before us moved this cgroup's processes there, or a
	 * unit's DelegateSubgroup=supervisor): its parent (the mount's root too, in a
	 * cgroup namespace) is the host cgroup.  What is left in the parent (a govex killed
	 * while it moved them) joins us in the leaf, as it would have. */
	const char *base = strrchr(dir, '/');
	if (base && strcmp(base + 1, LEAF) == 0 && (size_t)(base - dir) >= strlen(point)) {
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%.*s", (int)(base - dir), dir);
		const char *what = "";
		int e = ours_alone(parent) && !holds_foreign(parent)
			    ? enable_below(parent, dir, &what)
			    : -EPERM;
		if (e == 0) {
			snprintf(host, cap, "%s", parent);
			return 0;
		}
		/* not usable as it is: the leaf itself becomes the host below */
	}
	char type[32] = "";
	if (read_at(dir, "cgroup.type", type, sizeof(type)) > 0 &&
	    strncmp(type, "domain", 6) != 0) {
		snprintf(why, whycap, "our cgroup is %.*s, not a domain", (int)strcspn(type, "\n"),
			 type);
		return -EOPNOTSUPP;
	}
	if ((size_t)snprintf(leaf, sizeof(leaf), "%s/" LEAF, dir) >= sizeof(leaf))
		return -ENAMETOOLONG;
	if (holds_foreign(dir)) {
		snprintf(why, whycap,
			 "our cgroup %s holds processes outside our PID namespace, which govex "
			 "cannot move",
			 rel[0] ? rel : "/");
		return -EPERM;
	}
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
		int e = -errno;
		snprintf(why, whycap, "cannot make %s/" LEAF ": %s", rel[0] ? rel : "/",
			 strerror(-e));
		return e;
	}
	const char *what = "";
	int e = enable_below(dir, leaf, &what);
	if (e < 0) {
		if (e == -ENOPROTOOPT)
			snprintf(why, whycap,
				 "the %s controller is not delegated to our cgroup %s (a systemd "
				 "unit's Delegate=yes gives it)",
				 what, rel[0] ? rel : "/");
		else
			snprintf(why, whycap, "our delegated cgroup %s: %s: %s", rel[0] ? rel : "/",
				 what, strerror(-e));
		return e;
	}
	snprintf(host, cap, "%s", dir);
	return 0;
}

/* Our cgroup v2 path (the "0::" line), relative to the cgroup namespace. */
static bool own_v2(char *ret, size_t cap)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t lcap = 0;
	bool ok = false;
	while (!ok && getline(&line, &lcap, f) > 0) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(ret, cap, "%s", strcmp(line + 3, "/") == 0 ? "" : line + 3);
		ok = true;
	}
	free(line);
	fclose(f);
	return ok;
}

/* The host cgroup from our own: steps 1 and 2.  point/root: the cgroup2 mount. */
static void obtain_own(const char *point, const char *root, bool ask_systemd, struct rcg_host *h)
{
	char rel[PATH_MAX], dir[PATH_MAX];
	if (!own_v2(rel, sizeof(rel))) {
		snprintf(h->detail, sizeof(h->detail), "cgroup v2: our cgroup is not listed");
		return;
	}
	/* a mount of a subtree: our path must lie below its root */
	size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
	if (rl && (strncmp(rel, root, rl) != 0 || (rel[rl] != '/' && rel[rl] != '\0'))) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: our cgroup is not visible in the mounted hierarchy");
		return;
	}
	memmove(rel, rel + rl, strlen(rel + rl) + 1);
	snprintf(dir, sizeof(dir), "%s%s", point, rel);

	/* the hierarchy's real root (no cgroup.type) has no rule to work around: usable
	 * when the controllers are enabled below it; not ours to change */
	if (!rel[0] && !exists_at(point, "cgroup.type")) {
		h->source = RCG_SRC_ROOT;
		snprintf(h->dir, sizeof(h->dir), "%s", point);
		snprintf(h->detail, sizeof(h->detail), "the root cgroup");
		return;
	}
	char why[240] = "";
	if (delegated(point, rel, dir)) {
		if (take_delegated(point, rel, h->dir, sizeof(h->dir), why, sizeof(why)) == 0) {
			h->source = RCG_SRC_DELEGATED;
			snprintf(h->detail, sizeof(h->detail), "our delegated cgroup %.300s",
				 rel[0] ? rel : "/ (the cgroup namespace's root)");
		} else {
			snprintf(h->detail, sizeof(h->detail), "cgroup v2: %s", why);
		}
		return;
	}
	/* the user's manager (root's own user@0.service's too, when we are in its tree):
	 * the system manager would put a scope of its own in a slice of that name */
	bool user_mgr = geteuid() != 0 || user_manager_end(rel) != 0;
	char unit[128] = "";
	if (ask_systemd) {
		int e = rsd_scope(user_mgr, rel, unit, sizeof(unit), why, sizeof(why));
		if (e == 0 && own_v2(rel, sizeof(rel))) {
			memmove(rel, rel + rl, strlen(rel + rl) + 1);
			snprintf(dir, sizeof(dir), "%s%s", point, rel);
			if (delegated(point, rel, dir) &&
			    take_delegated(point, rel, h->dir, sizeof(h->dir), why, sizeof(why)) ==
				0) {
				h->source = RCG_SRC_SYSTEMD;
				snprintf(h->detail, sizeof(h->detail),
					 "a transient scope with Delegate=yes from the %s manager "
					 "(%s)",
					 user_mgr ? "user's systemd" : "systemd", unit);
				return;
			}
			snprintf(h->detail, sizeof(h->detail),
				 "cgroup v2: systemd's scope %s is not usable: %s", unit,
				 why[0] ? why : "not delegated");
			return;
		}
		if (e == 0)
			snprintf(why, sizeof(why), "our cgroup is not listed after the move");
	} else {
		snprintf(why, sizeof(why), "systemd was not asked (cgroup mode \"own\")");
	}
	snprintf(h->detail, sizeof(h->detail),
		 "cgroup v2: our cgroup %.200s is not delegated to govex, and %.240s",
		 rel[0] ? rel : "/", why);
}

/* Is p an absolute path without empty, "." or ".." components (nor a trailing "/")?
 * Anything else names another cgroup than it seems to ("x/.." is x's parent), or the
 * same under another name. */
static bool normalized(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *c = p + 1;;) {
		const char *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!*e)
			return true;
		c = e + 1;
	}
}

/* Step 3: a cgroup the embedding host handed us. */
static void obtain_handed(const char *point, const char *path, struct rcg_host *h)
{
	size_t pl = strlen(point);
	struct stat st;
	if (!normalized(path) || strncmp(path, point, pl) != 0 ||
	    (path[pl] != '/' && path[pl] != '\0')) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: the cgroup handed to govex must be a normalized path below "
			 "%s",
			 point);
		return;
	}
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || !exists_at(path, "cgroup.procs")) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: the cgroup handed to govex is not a cgroup: %s",
			 errno ? strerror(errno) : "no cgroup.procs");
		return;
	}
	if (access(path, W_OK) < 0 || !writable_at(path, "cgroup.subtree_control")) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: the cgroup handed to govex is not writable by it");
		return;
	}
	if (!ours_alone(path)) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: the cgroup handed to govex is not its alone (owned by another "
			 "user, or writable by a group or others)");
		return;
	}
	if (!ancestors_ours(point, path)) {
		snprintf(h->detail, sizeof(h->detail),
			 "cgroup v2: a cgroup above the one handed to govex is writable by another "
			 "user (its cgroup.procs), who could move runs out of their limits");
		return;
	}
	const char *what = "";
	int e = enable_below(path, NULL, &what);
	if (e < 0) {
		if (e == -ENOPROTOOPT)
			snprintf(
			    h->detail, sizeof(h->detail),
			    "cgroup v2: the %s controller is not available in the cgroup handed "
			    "to govex",
			    what);
		else if (e == -EBUSY)
			snprintf(h->detail, sizeof(h->detail),
				 "cgroup v2: the cgroup handed to govex holds processes, so it "
				 "cannot enable controllers for its children");
		else
			snprintf(h->detail, sizeof(h->detail),
				 "cgroup v2: the cgroup handed to govex: %s: %s", what,
				 strerror(-e));
		return;
	}
	h->source = RCG_SRC_HANDED;
	snprintf(h->dir, sizeof(h->dir), "%s", path);
	snprintf(h->detail, sizeof(h->detail), "the cgroup the host handed to govex");
}

static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcg_host own_host;
static bool own_done;

void rcg_host_obtain(const char *point, const char *root, const char *mode, struct rcg_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (mode && mode[0] == '/') {
		obtain_handed(point, mode, ret);
		return;
	}
	if (mode && strcmp(mode, RCG_MODE_CURRENT) == 0) {
		/* what this process obtained already, if anything; nothing obtained now */
		pthread_mutex_lock(&own_lock);
		if (own_done)
			*ret = own_host;
		pthread_mutex_unlock(&own_lock);
		return;
	}
	if (mode && strcmp(mode, "none") == 0) {
		snprintf(ret->detail, sizeof(ret->detail),
			 "cgroup v2: govex was told not to obtain a cgroup (cgroup mode \"none\")");
		return;
	}
	/* a mistyped mode (a relative path, "nnone") is not "auto", which moves this
	 * process: nothing is obtained */
	if (mode && strcmp(mode, "auto") != 0 && strcmp(mode, "own") != 0) {
		snprintf(ret->detail, sizeof(ret->detail),
			 "cgroup v2: the cgroup mode '%.64s' is none of auto, own, none or an "
			 "absolute path below %.200s",
			 mode, point);
		return;
	}
	/* steps 1 and 2 move the process: once, whatever later runtimes ask */
	pthread_mutex_lock(&own_lock);
	if (!own_done) {
		obtain_own(point, root, !(mode && strcmp(mode, "own") == 0), &own_host);
		own_done = true;
	}
	*ret = own_host;
	pthread_mutex_unlock(&own_lock);
}
