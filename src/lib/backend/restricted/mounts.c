/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's file system: a plan made once per runtime (which host paths, how, with
 * which Landlock rights) and its application by the shim inside the new mount namespace.
 *
 * Plan (host side, may allocate): every path the run needs is resolved component by
 * component with lstat(); a symlink met on the way is recorded, to be re-created in the
 * new root, and only real paths are bound.  So /usr/bin/python3 -> python3.11 and
 * /lib64 -> usr/lib64 work inside while nothing but the named files is visible.
 *
 * Apply (shim, async-signal-safe): each source is opened with openat2(RESOLVE_NO_SYMLINKS)
 * and captured with open_tree(OPEN_TREE_CLONE) as a detached copy whose flags are set
 * before it is attached: a symlink swapped into a path after planning makes the run fail
 * instead of redirecting a bind, and nothing is ever writable between bind and remount.
 * Then a tmpfs becomes the root (pivot_root(".", ".") and a lazy detach of the old root),
 * and the captured trees are attached at their paths below it.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "files.h"
#include "restricted.h"

/* The private /tmp: bounded in bytes and inodes so a run cannot fill memory through it
 * beyond this (its pages are also charged to the run's memory cgroup). */
#define TMP_OPTS  "size=64m,nr_inodes=16384,mode=1777"
#define DEV_OPTS  "size=64k,nr_inodes=64,mode=0755"
#define ROOT_OPTS "size=1m,nr_inodes=4096,mode=0755"

/* Host-wide files of /proc a run has no business reading.  Hidden by proc's subset=pid
 * (Linux >= 5.8); else each file is covered by a read-only nodev bind of /dev/null
 * (opening it fails) and each directory (/proc/sys, ...) by an empty read-only tmpfs. */
static const char *const proc_masked[] = {
    "/proc/cmdline",	 "/proc/kallsyms",     "/proc/modules",	      "/proc/kcore",
    "/proc/keys",	 "/proc/key-users",    "/proc/timer_list",    "/proc/sched_debug",
    "/proc/config.gz",	 "/proc/sys",	       "/proc/sysrq-trigger", "/proc/latency_stats",
    "/proc/interrupts",	 "/proc/iomem",	       "/proc/ioports",	      "/proc/slabinfo",
    "/proc/vmallocinfo", "/proc/pagetypeinfo", "/proc/zoneinfo",      "/proc/buddyinfo",
    "/proc/kpagecount",	 "/proc/kpageflags",   "/proc/kpagecgroup",   "/proc/acpi",
    "/proc/scsi",	 "/proc/fs",	       "/proc/bus",	      "/proc/driver",
    "/proc/irq",	 "/proc/tty",	       "/proc/sysvipc",	      "/proc/dynamic_debug",
    "/proc/bootconfig",
};

/* ---- plan construction ------------------------------------------------------------- */

void rplan_free(struct rplan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->m[i].path);
		free(p->m[i].opts);
	}
	free(p->m);
	p->m = NULL;
	p->n = 0;
}

static int plan_add(struct rplan *p, enum rmount_kind kind, const char *path, const char *opts,
		    uint64_t access)
{
	/* the same entry twice (a symlink met by two paths, the interpreter bound and
	 * made executable) is kept once, with the rights of both */
	for (size_t i = 0; i < p->n; i++)
		if (p->m[i].kind == kind && strcmp(p->m[i].path, path) == 0) {
			p->m[i].ll_access |= access;
			return 0;
		}
	struct rmount *nm = realloc(p->m, (p->n + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->m = nm;
	struct rmount *m = &p->m[p->n];
	m->kind = kind;
	m->ll_access = access;
	m->path = strdup(path);
	m->opts = opts ? strdup(opts) : NULL;
	if (!m->path || (opts && !m->opts)) {
		free(m->path);
		free(m->opts);
		return -ENOMEM;
	}
	p->n++;
	return 0;
}

/* Appends "/" comp to buf (a real path, "" meaning "/"). */
static int path_join(char *buf, size_t cap, const char *comp, size_t len)
{
	size_t n = strlen(buf);
	if (n + 1 + len + 1 > cap)
		return -ENAMETOOLONG;
	buf[n] = '/';
	memcpy(buf + n + 1, comp, len);
	buf[n + 1 + len] = '\0';
	return 0;
}

/*
 * Resolves path to a real path in ret (PATH_MAX), recording each symlink met on the way
 * in the plan.  hops bounds the symlinks followed in all (like the kernel's 40).
 */
static int resolve(struct rplan *pl, const char *path, char *ret, int *hops)
{
	char cur[PATH_MAX] = "";
	const char *p = path;
	if (path[0] != '/')
		return -EINVAL;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		if (len == 1 && p[0] == '.') {
			p = end;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = strrchr(cur, '/');
			if (slash)
				*slash = '\0';
			p = end;
			continue;
		}
		char next[PATH_MAX];
		snprintf(next, sizeof(next), "%s", cur);
		int r = path_join(next, sizeof(next), p, len);
		if (r < 0)
			return r;
		struct stat st;
		if (lstat(next, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode)) {
			if (++*hops > 40)
				return -ELOOP;
			char tgt[PATH_MAX];
			ssize_t n = readlink(next, tgt, sizeof(tgt) - 1);
			if (n < 0)
				return -errno;
			tgt[n] = '\0';
			r = plan_add(pl, RM_SYMLINK, next, tgt, 0);
			if (r < 0)
				return r;
			char sub[PATH_MAX];
			if (tgt[0] == '/')
				snprintf(sub, sizeof(sub), "%s", tgt);
			else if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", cur, tgt) >=
				 sizeof(sub))
				return -ENAMETOOLONG;
			r = resolve(pl, sub, cur, hops);
			if (r < 0)
				return r;
			if (strcmp(cur, "/") == 0)
				cur[0] = '\0';
		} else {
			memcpy(cur, next, strlen(next) + 1);
		}
		p = end;
	}
	snprintf(ret, PATH_MAX, "%s", cur[0] ? cur : "/");
	return 0;
}

/* Adds a bind of path (resolved).  A path that does not exist is left out: nothing to
 * show.  Other failures are errors. */
static int add_bind(struct rplan *pl, enum rmount_kind kind, const char *path, uint64_t access,
		    struct govex_error *err)
{
	char real[PATH_MAX];
	int hops = 0;
	int r = resolve(pl, path, real, &hops);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		return govex__err(err, -r, -r, "restricted: cannot resolve '%.120s': %s", path,
				  strerror(-r));
	return plan_add(pl, kind, real, NULL, access) < 0
		   ? govex__err(err, ENOMEM, ENOMEM, "restricted: out of memory")
		   : 0;
}

/* The program interpreter (PT_INTERP) of an ELF executable, so that execve() finds
 * /lib64/ld-linux-x86-64.so.2 (usually through a symlink) inside. */
static int elf_interp(const char *exe, char *ret, size_t cap)
{
	_cleanup_close_ int fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz == 0 || ph.p_filesz >= cap)
			return -ENOEXEC;
		if (pread(fd, ret, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			return -ENOEXEC;
		ret[ph.p_filesz] = '\0';
		return ret[0] == '/' ? 1 : -ENOEXEC;
	}
	return 0; /* static executable */
}

/* The "#!" interpreter of a script (absolute, first word), as execve() reads it. */
static bool script_interp(const char *path, char *ret, size_t cap)
{
	char buf[256];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return false;
	buf[n] = '\0';
	char *p = buf + 2;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t len = strcspn(p, " \t\n");
	if (len == 0 || p[0] != '/' || len >= cap)
		return false;
	memcpy(ret, p, len);
	ret[len] = '\0';
	return true;
}

/*
 * Landlock's EXECUTE goes only to what execve() of argv0 opens: the file itself, a
 * script's interpreter, and the ELF program interpreter (ld.so) of whichever of them is
 * an ELF executable.  Each is bound read-only (resolved: the real file gets the right)
 * with read and execute; a bind already there gains the right.
 */
static int add_exec_files(struct rplan *pl, const char *argv0, struct govex_error *err)
{
	char files[3][PATH_MAX];
	size_t n = 0;
	if (!argv0 || argv0[0] != '/' || strlen(argv0) >= PATH_MAX)
		return 0;
	snprintf(files[n++], PATH_MAX, "%s", argv0);
	if (script_interp(argv0, files[n], PATH_MAX))
		n++;
	char ld[PATH_MAX];
	for (size_t i = 0; i < n && n < 3; i++)
		if (elf_interp(files[i], ld, sizeof(ld)) > 0) {
			snprintf(files[n++], PATH_MAX, "%s", ld);
			break;
		}
	for (size_t i = 0; i < n; i++) {
		int r = add_bind(pl, RM_BIND_RO, files[i], LL_READ | LL_GOVEX_EXEC_FILE, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A prefix that is a whole system tree (/usr) is not bound as such: only the files the
 * interpreter names are.  A private prefix (pyenv, a venv, /opt/python) is its own. */
static bool system_tree(const char *p)
{
	static const char *const sys[] = {"/",	  "/usr", "/usr/local", "/opt", "/home", "/root",
					  "/var", "/srv", "/etc",	"/tmp", "/run",	 "/mnt"};
	for (size_t i = 0; i < ARRAY_SIZE(sys); i++)
		if (strcmp(p, sys[i]) == 0)
			return true;
	return false;
}

int rplan_build(const struct govex_policy *pol, const struct govex__interp *in, struct rplan *ret,
		struct govex_error *err)
{
	_cleanup_(rplan_free) struct rplan pl = {0};
	int r = 0;
	/* Read-only binds: executable only when the policy lets the run start programs
	 * (the interpreter itself gets EXECUTE per run, add_exec_files()).  Writable
	 * places never: they are also mounted noexec. */
	const uint64_t ro = pol->subprocess ? LL_READ : LL_READ_NOEXEC;
	pl.ro_access = ro;
#define TRY(x)                                                                                     \
	do {                                                                                       \
		r = (x);                                                                           \
		if (r < 0)                                                                         \
			return r;                                                                  \
	} while (0)
#define TRYM(x)                                                                                    \
	do {                                                                                       \
		if ((x) < 0)                                                                       \
			return govex__err(err, ENOMEM, ENOMEM, "restricted: out of memory");       \
	} while (0)

	if (pol->platform_defaults && in) {
		/* The interpreter's own files, read-only. */
		TRY(add_bind(&pl, RM_BIND_RO, in->path, ro, err));
		char ld[PATH_MAX];
		if (elf_interp(in->path, ld, sizeof(ld)) > 0)
			TRY(add_bind(&pl, RM_BIND_RO, ld, ro, err));
		const char *prefixes[] = {in->prefix, in->base_prefix};
		for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
			if (!prefixes[i] || prefixes[i][0] != '/')
				continue;
			if (!system_tree(prefixes[i]))
				TRY(add_bind(&pl, RM_BIND_RO, prefixes[i], ro, err));
			char cfg[PATH_MAX];
			if ((size_t)snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", prefixes[i]) <
			    sizeof(cfg))
				TRY(add_bind(&pl, RM_BIND_RO, cfg, ro, err));
		}
		/* The executable's own directory (/usr/bin) is not the interpreter's: the
		 * executable itself is bound above. */
		const char *slash = strrchr(in->path, '/');
		size_t dlen = slash ? (size_t)(slash - in->path) : 0;
		for (size_t i = 0; in->paths && in->paths[i]; i++) {
			if (dlen && strlen(in->paths[i]) == dlen &&
			    strncmp(in->paths[i], in->path, dlen) == 0)
				continue;
			TRY(add_bind(&pl, RM_BIND_RO, in->paths[i], ro, err));
		}
		for (size_t i = 0; in->libs && in->libs[i]; i++)
			TRY(add_bind(&pl, RM_BIND_RO, in->libs[i], ro, err));
		/* the environment's packages (packages.c): followed through their symlinks,
		 * each of which the sandbox gets too (/etc/alternatives) */
		for (size_t i = 0; in->env_files && in->env_files[i]; i++)
			TRY(add_bind(&pl, RM_BIND_RO, in->env_files[i], ro, err));
		/* the C.UTF-8 locale (LANG's platform default, platform.c): glibc >= 2.35
		 * loads it from here; left out where the host has none */
		TRY(add_bind(&pl, RM_BIND_RO, "/usr/lib/locale/C.utf8", ro, err));
		if (pol->network || pol->net_allow) {
			/* name resolution and TLS trust, as far as a networked program needs;
			 * under filtered networking no resolver (the proxy resolves names:
			 * the run has no DNS of its own) */
			static const char *const netfiles[] = {
			    "/etc/resolv.conf", "/etc/hosts",	 "/etc/nsswitch.conf",
			    "/etc/gai.conf",	"/etc/services", "/etc/protocols",
			    "/etc/ssl",		"/etc/host.conf"};
			for (size_t i = pol->network ? 0 : 1; i < ARRAY_SIZE(netfiles); i++)
				TRY(add_bind(&pl, RM_BIND_RO, netfiles[i], ro, err));
		}
	}
	for (size_t i = 0; pol->read_roots && pol->read_roots[i]; i++)
		TRY(add_bind(&pl, RM_BIND_RO, pol->read_roots[i], ro, err));
	for (size_t i = 0; pol->write_roots && pol->write_roots[i]; i++)
		TRY(add_bind(&pl, RM_BIND_RW, pol->write_roots[i], LL_WRITABLE, err));
	/* filesystem.deny, as the runtime resolved it: never a run without its masks */
	if (pol->deny_paths && pol->deny_paths[0]) {
		const struct govex__deny *d = in ? in->deny : NULL;
		if (!d)
			return govex__err(err, GOVEX_EPOLICY, 0,
					  "restricted: filesystem.deny is not resolved on this "
					  "host: no run without its masks");
		for (size_t i = 0; d->pins[i]; i++)
			TRYM(plan_add(&pl, RM_PIN, d->pins[i], NULL, 0));
		for (size_t i = 0; d->paths[i]; i++)
			TRYM(plan_add(&pl, d->isdir[i] ? RM_DENY_DIR : RM_DENY_FILE, d->paths[i],
				      NULL, 0));
	}

	/* A private /tmp, unless the policy names /tmp or a directory above it itself. */
	bool tmp_named = false;
	char **roots[] = {pol->read_roots, pol->write_roots};
	for (size_t k = 0; k < ARRAY_SIZE(roots); k++)
		for (size_t i = 0; roots[k] && roots[k][i]; i++)
			if (govex__path_under("/tmp", roots[k][i]))
				tmp_named = true;
	if (!tmp_named)
		TRYM(plan_add(&pl, RM_TMPFS, "/tmp", TMP_OPTS, LL_WRITABLE));

	/* A minimal /dev: a few harmless character devices bound from the host's. */
	TRYM(plan_add(&pl, RM_TMPFS, "/dev", DEV_OPTS, 0));
	static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
					   "/dev/urandom"};
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		TRYM(plan_add(&pl, RM_BIND_DEV, devs[i], NULL, LL_FS_READ_FILE | LL_FS_WRITE_FILE));
	TRYM(plan_add(&pl, RM_SYMLINK, "/dev/fd", "/proc/self/fd", 0));
	TRYM(plan_add(&pl, RM_SYMLINK, "/dev/stdin", "/proc/self/fd/0", 0));
	TRYM(plan_add(&pl, RM_SYMLINK, "/dev/stdout", "/proc/self/fd/1", 0));
	TRYM(plan_add(&pl, RM_SYMLINK, "/dev/stderr", "/proc/self/fd/2", 0));
	TRYM(plan_add(&pl, RM_PROC, "/proc", NULL, LL_FS_READ_FILE | LL_FS_READ_DIR));
	/* Where proc cannot hide what is not the sandbox's own (no subset=pid), those
	 * files are covered by an empty read-only file (rmount_apply decides). */
	for (size_t i = 0; i < ARRAY_SIZE(proc_masked); i++)
		TRYM(plan_add(&pl, RM_PROC_MASK, proc_masked[i], NULL, 0));
	/* Listing a directory reveals only names that are already readable. */
	TRYM(plan_add(&pl, RM_READONLY, "/", NULL, LL_FS_READ_DIR));
	TRYM(plan_add(&pl, RM_READONLY, "/dev", NULL, 0));
#undef TRY
#undef TRYM
	*ret = pl;
	pl = (struct rplan){0}; /* taken */
	return 0;
}

/* ---- per-run plan -------------------------------------------------------------------- */

static int mount_cmp(const void *a, const void *b)
{
	const struct rmount *x = a, *y = b;
	/* read-only flips come last, after everything beneath them is mounted */
	bool rx = x->kind == RM_READONLY, ry = y->kind == RM_READONLY;
	if (rx != ry)
		return rx ? 1 : -1;
	int c = strcmp(x->path, y->path);
	if (c)
		return c;
	return (int)x->kind - (int)y->kind;
}

static bool is_bind(enum rmount_kind k)
{
	return k == RM_BIND_RO || k == RM_BIND_RW;
}

static bool is_deny(enum rmount_kind k)
{
	return k == RM_PIN || k == RM_DENY_DIR || k == RM_DENY_FILE;
}

int rplan_for_run(const struct rplan *base, const char *workdir, const char *workdir_tmpfs,
		  const char *argv0, char *const *extra_ro, struct rplan *ret)
{
	/* pl is released by its cleanup on every return but the last (TAKE); clang's
	 * analyzer and cppcheck do not follow the cleanup attribute, hence the NOLINTs */
	_cleanup_(rplan_free) struct rplan pl = {0};
	pl.ro_access = base->ro_access;
	pl.m = calloc(base->n + 1, sizeof(*pl.m));
	if (!pl.m)
		return -ENOMEM;
	for (size_t i = 0; i < base->n; i++) {
		pl.m[pl.n] = base->m[i];
		pl.m[pl.n].path = strdup(base->m[i].path);
		pl.m[pl.n].opts = base->m[i].opts ? strdup(base->m[i].opts) : NULL;
		pl.n++;
		if (!pl.m[pl.n - 1].path || (base->m[i].opts && !pl.m[pl.n - 1].opts))
			// cppcheck-suppress memleak
			return -ENOMEM; // NOLINT(clang-analyzer-unix.Malloc): pl's cleanup
	}
	if (workdir) {
		/* a host directory bound read-write, or the run's own tmpfs */
		pl.m[pl.n].kind = workdir_tmpfs ? RM_TMPFS : RM_BIND_RW;
		pl.m[pl.n].path = strdup(workdir);
		pl.m[pl.n].opts = workdir_tmpfs ? strdup(workdir_tmpfs) : NULL;
		pl.m[pl.n].ll_access = LL_WRITABLE;
		pl.n++;
		if (!pl.m[pl.n - 1].path || (workdir_tmpfs && !pl.m[pl.n - 1].opts))
			return -ENOMEM;
	}
	/* the run's own read-only files (govex exec: the executable and its libraries),
	 * resolved like the runtime's */
	for (size_t i = 0; extra_ro && extra_ro[i]; i++) {
		struct govex_error e;
		int r = add_bind(&pl, RM_BIND_RO, extra_ro[i], pl.ro_access, &e);
		if (r < 0)
			return r; // NOLINT(clang-analyzer-unix.Malloc): pl's cleanup
	}
	{
		struct govex_error e;
		int r = add_exec_files(&pl, argv0, &e);
		if (r < 0)
			return r; // NOLINT(clang-analyzer-unix.Malloc): pl's cleanup
	}
	qsort(pl.m, pl.n, sizeof(*pl.m), mount_cmp);

	/*
	 * Drop what an enclosing mount already provides: a bind inside a bind that grants
	 * at least as much, a symlink inside a bind (the real one is there), a duplicate.
	 * The nearest enclosing mount decides: a bind below the private /tmp is kept even
	 * when "/" is bound too.
	 */
	size_t w = 0;
	for (size_t i = 0; i < pl.n; i++) {
		struct rmount *m = &pl.m[i];
		const struct rmount *near = NULL;
		if (m->kind != RM_READONLY)
			for (size_t j = 0; j < w; j++) {
				const struct rmount *a = &pl.m[j];
				if (a->kind == RM_SYMLINK || a->kind == RM_READONLY ||
				    a->kind == RM_LANDLOCK || a->kind == RM_PROC_MASK ||
				    is_deny(a->kind))
					continue;
				if (!govex__path_under(m->path, a->path))
					continue;
				if (!near || strlen(a->path) >= strlen(near->path))
					near = a;
			}
		bool drop = false;
		if (near && is_bind(near->kind)) {
			if (m->kind == RM_SYMLINK)
				drop = true;
			else if (m->kind == RM_BIND_RO && near->kind == RM_BIND_RW &&
				 (m->ll_access & LL_GOVEX_EXEC_FILE))
				; /* kept: executable, stacked on a noexec writable bind */
			else if (m->kind == RM_BIND_RO &&
				 (m->ll_access & ~near->ll_access & ~LL_GOVEX_EXEC_FILE))
				m->kind = RM_LANDLOCK; /* no mount, only its own rights */
			else if (m->kind == RM_BIND_RO)
				drop = true;
			else if (m->kind == RM_BIND_RW && near->kind == RM_BIND_RW)
				drop = true;
		}
		/* proc's masks apply to the sandbox's own /proc only */
		if (m->kind == RM_PROC_MASK && (!near || near->kind != RM_PROC))
			drop = true;
		if (near && m->kind == near->kind && strcmp(m->path, near->path) == 0)
			drop = true;
		if (is_deny(m->kind))
			drop = false; /* never dropped: nothing else provides them */
		if (drop) {
			free(m->path);
			free(m->opts);
			continue;
		}
		pl.m[w++] = *m;
	}
	pl.n = w;
	*ret = pl;
	pl = (struct rplan){0}; /* taken */
	return 0;
}

/* ---- the identity files -------------------------------------------------------------- */

/* true when a bind of the plan shows the host's path (or a directory above it) */
static bool bound_from_host(const struct rplan *pl, const char *path)
{
	for (size_t i = 0; i < pl->n; i++) {
		const struct rmount *m = &pl->m[i];
		if ((is_bind(m->kind) || m->kind == RM_LANDLOCK) &&
		    govex__path_under(path, m->path))
			return true;
	}
	return false;
}

int rplan_add_identity(struct rplan *pl, uid_t uid, gid_t gid, const char *home, bool shell)
{
	/* a name and home without ':' or a newline (a workdir may hold any byte) */
	for (const char *c = home; *c; c++)
		if (*c == ':' || *c == '\n')
			return 0;
	char *passwd = NULL, *group = NULL;
	if (asprintf(&passwd,
		     "root:x:0:0:root:/root:/bin/sh\n"
		     "govex:x:%u:%u:govex:%s:%s\n"
		     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		     (unsigned)uid, (unsigned)gid, home,
		     shell ? "/bin/sh" : "/usr/sbin/nologin") < 0)
		return -ENOMEM;
	if (asprintf(&group, "root:x:0:\ngovex:x:%u:\nnogroup:x:65534:\n", (unsigned)gid) < 0) {
		free(passwd);
		return -ENOMEM;
	}
	struct rmount *nm = realloc(pl->m, (pl->n + 2) * sizeof(*pl->m));
	if (!nm) {
		free(passwd);
		free(group);
		return -ENOMEM;
	}
	pl->m = nm;
	const char *paths[] = {"/etc/passwd", "/etc/group"};
	char *texts[] = {passwd, group};
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		char *path = bound_from_host(pl, paths[i]) ? NULL : strdup(paths[i]);
		if (!path) {
			free(texts[i]);
			continue; /* the policy shows the host's (or no memory: none) */
		}
		pl->m[pl->n++] = (struct rmount){
		    .kind = RM_FILE, .path = path, .opts = texts[i], .ll_access = LL_FS_READ_FILE};
	}
	/* in path order, before the read-only flips */
	qsort(pl->m, pl->n, sizeof(*pl->m), mount_cmp);
	return 0;
}

/* ---- scratch ------------------------------------------------------------------------ */

int rscratch_alloc(struct rscratch *s, size_t n)
{
	s->fd = calloc(n ? n : 1, sizeof(int));
	s->isdir = calloc(n ? n : 1, 1);
	if (!s->fd || !s->isdir) {
		rscratch_free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s->fd[i] = -1;
	return 0;
}

void rscratch_free(struct rscratch *s)
{
	free(s->fd);
	free(s->isdir);
	s->fd = NULL;
	s->isdir = NULL;
}

/* ---- apply (shim side: async-signal-safe only) ------------------------------------------ */

/* mkdir -p of path's parents (and of path itself when self). */
static int mkdir_parents(const char *path, bool self)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (buf[i] == '\0' && !self)
			break;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = c;
	}
	return 0;
}

static int make_mountpoint(const char *path, bool dir)
{
	int r = mkdir_parents(path, dir);
	if (r < 0 || dir)
		return r;
	if (mknod(path, S_IFREG | 0644, 0) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int capture(const struct rmount *m, int *ret_fd, unsigned char *ret_isdir,
		   enum govex__step *ret_step)
{
	*ret_step = GOVEX_STEP_BIND_OPEN;
	struct open_how how = {
	    .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, m->path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	*ret_isdir = S_ISDIR(st.st_mode);
	*ret_step = GOVEX_STEP_OPEN_TREE;
	_cleanup_close_ int tree =
	    open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return -errno;
	struct mount_attr attr = {0};
	switch (m->kind) {
	case RM_BIND_RO:
		attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		break;
	case RM_BIND_RW: /* writable: nothing written there can be executed */
	case RM_PIN:
		attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
		break;
	default: /* device nodes: open for writing works on a read-only mount */
		attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
		break;
	}
	*ret_step = GOVEX_STEP_MOUNT_SETATTR;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return -errno;
	*ret_fd = TAKE_FD(tree);
	return 0;
}

static int new_proc(bool *ret_subset)
{
	/* Made while the host's /proc is still visible: a user namespace may mount proc only
	 * where a proc is already fully visible.  Made by PID 1 of the new PID namespace,
	 * so it shows that namespace.  subset=pid (Linux >= 5.8) leaves out everything that
	 * is not a process: /proc/cmdline, /proc/sys, kallsyms, the host's mounts...
	 * hidepid leaves out the processes the run may not ptrace-read: its PID 1 (the shim,
	 * or a warm run's init, whose memory is the template's and changes with every other
	 * run of it), so /proc/1 is absent rather than half readable (issue 23). */
	_cleanup_close_ int fs = fsopen("proc", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	*ret_subset = fsconfig(fs, FSCONFIG_SET_STRING, "subset", "pid", 0) == 0;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "hidepid", "invisible", 0) < 0 &&
	    fsconfig(fs, FSCONFIG_SET_STRING, "hidepid", "2", 0) < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	int mnt =
	    fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return mnt < 0 ? -errno : mnt;
}

/* Captures every source while the host's tree is still visible: a detached copy of
 * each bind (capture()) and a new proc.  *ret_subset: proc hides what is not a process. */
static int capture_all(const struct rplan *plan, struct rscratch *s, bool *ret_subset,
		       enum govex__step *ret_step)
{
	for (size_t i = 0; i < plan->n; i++) {
		const struct rmount *m = &plan->m[i];
		s->fd[i] = -1;
		if (m->kind == RM_PROC) {
			*ret_step = GOVEX_STEP_PROC;
			int fd = new_proc(ret_subset);
			if (fd < 0)
				return fd;
			s->fd[i] = fd;
			s->isdir[i] = 1;
			continue;
		}
		if (!is_bind(m->kind) && m->kind != RM_BIND_DEV && m->kind != RM_PIN)
			continue;
		int r = capture(m, &s->fd[i], &s->isdir[i], ret_step);
		if (r == -ENOENT && m->kind != RM_BIND_DEV && *ret_step == GOVEX_STEP_BIND_OPEN)
			continue; /* gone since planning: nothing to show */
		if (r < 0)
			return r;
	}

	return 0;
}

/*
 * A denied path covered in the new root: the path opened without following a symlink
 * (one swapped in since planning fails the run, it never redirects the mask), checked
 * to be what was planned, and a detached mount moved onto exactly that: a directory
 * gets an empty tmpfs, a file an empty file of one, read-only, nosuid, nodev, noexec,
 * mode 0000 (the run, which has no capability, can neither list nor open them).
 */
static int deny_mask(const char *path, bool dir)
{
	struct open_how how = {
	    .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int t = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (t < 0)
		return -errno;
	struct stat st;
	if (fstat(t, &st) < 0)
		return -errno;
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return -ESTALE; /* not what was planned */
	if (!dir && st.st_nlink > 1)
		return -EMLINK; /* linked since planning: another name would reach it */
	_cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", dir ? "1" : "2", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0000", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	const unsigned attrs =
	    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	_cleanup_close_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, dir ? attrs : 0);
	if (mnt < 0)
		return -errno;
	if (dir)
		return move_mount(mnt, "", t, "",
				  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
			   ? -errno
			   : 0;
	int f = openat(mnt, "empty", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
	if (f < 0)
		return -errno;
	close(f);
	_cleanup_close_ int tree = open_tree(mnt, "empty", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return -errno;
	struct mount_attr attr = {.attr_set = attrs};
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
		return -errno;
	return move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
		   ? -errno
		   : 0;
}

/* Attaches plan entry i (captured in s) in the new root. */
static int attach(const struct rplan *plan, size_t i, struct rscratch *s, bool proc_subset,
		  bool root_bind, enum govex__step *ret_step)
{
	const struct rmount *m = &plan->m[i];
	int r = 0;
	switch (m->kind) {
	case RM_BIND_RO:
	case RM_BIND_RW:
	case RM_BIND_DEV:
	case RM_PROC:
	case RM_PIN:
		if (s->fd[i] < 0)
			break;
		*ret_step = GOVEX_STEP_MOUNTPOINT;
		r = make_mountpoint(m->path, s->isdir[i]);
		if (r < 0)
			return r;
		*ret_step = GOVEX_STEP_MOVE_MOUNT;
		if (move_mount(s->fd[i], "", AT_FDCWD, m->path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		close(s->fd[i]);
		s->fd[i] = -1;
		break;
	case RM_TMPFS:
		*ret_step = GOVEX_STEP_MOUNTPOINT;
		r = make_mountpoint(m->path, true);
		if (r < 0)
			return r;
		/* every tmpfs (/tmp, /dev, the fresh workdir) is writable by the
		 * run or holds only device nodes: never exec-able */
		*ret_step = GOVEX_STEP_TMPFS;
		if (mount("tmpfs", m->path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, m->opts) < 0)
			return -errno;
		break;
	case RM_PROC_MASK: {
		if (proc_subset)
			break; /* not there at all */
		struct stat pst;
		/* (links to self/..., like /proc/mounts, are the process's own) */
		if (lstat(m->path, &pst) < 0 || S_ISLNK(pst.st_mode))
			break; /* this kernel has no such file */
		*ret_step = GOVEX_STEP_PROC_MASK;
		if (S_ISDIR(pst.st_mode)) {
			if (mount("tmpfs", m->path, "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=4k,nr_inodes=1,mode=0555") < 0)
				return -errno;
		} else if (mount("/dev/null", m->path, NULL, MS_BIND, NULL) < 0 ||
			   mount(NULL, m->path, NULL,
				 MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
				     MS_NOEXEC,
				 NULL) < 0) {
			return -errno;
		}
		break;
	}
	case RM_DENY_DIR:
	case RM_DENY_FILE:
		*ret_step = GOVEX_STEP_FS_DENY;
		return deny_mask(m->path, m->kind == RM_DENY_DIR);
	case RM_LANDLOCK:
		break; /* a Landlock rule only */
	case RM_FILE: {
		/* in the root tmpfs, before it turns read-only; owned by root, 0644 */
		*ret_step = GOVEX_STEP_MOUNTPOINT;
		r = mkdir_parents(m->path, false);
		if (r < 0)
			return r;
		int fd = open(m->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		size_t len = strlen(m->opts), off = 0;
		while (off < len) {
			ssize_t w = write(fd, m->opts + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				r = w < 0 ? -errno : -EIO;
				close(fd);
				return r;
			}
			off += (size_t)w;
		}
		close(fd);
		break;
	}
	case RM_SYMLINK:
		*ret_step = GOVEX_STEP_MOUNTPOINT;
		r = mkdir_parents(m->path, false);
		if (r < 0)
			return r;
		*ret_step = GOVEX_STEP_SYMLINK;
		if (symlink(m->opts, m->path) < 0 && errno != EEXIST)
			return -errno;
		break;
	case RM_READONLY: {
		if (root_bind && strcmp(m->path, "/") == 0)
			break; /* the policy's own root keeps its mode */
		*ret_step = GOVEX_STEP_REMOUNT_RO;
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
		if (mount_setattr(AT_FDCWD, m->path, 0, &attr, sizeof(attr)) < 0)
			return -errno;
		break;
	}
	}
	return 0;
}

int rmount_apply(const struct rplan *plan, struct rscratch *s, enum govex__step *ret_step)
{
	bool proc_subset = false;
	int r;
	/* Nothing we do may propagate back to the host's mounts. */
	*ret_step = GOVEX_STEP_MOUNT_PRIVATE;
	if ((r = govex__neg_errno(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))) < 0)
		return r;
	if ((r = capture_all(plan, s, &proc_subset, ret_step)) < 0)
		return r;

	/*
	 * The new root: a small tmpfs that holds only mount points and symlinks; or, when
	 * the policy names "/" itself (sorted first), that captured tree: a mount stacked
	 * on "/" later would never be seen, lookups start below it.  It is attached on the
	 * old /tmp only to have a mount point to pivot into.
	 */
	bool root_bind = plan->n > 0 && is_bind(plan->m[0].kind) &&
			 strcmp(plan->m[0].path, "/") == 0 && s->fd[0] >= 0;
	*ret_step = GOVEX_STEP_TMPFS_ROOT;
	if (root_bind) {
		if (move_mount(s->fd[0], "", AT_FDCWD, "/tmp", MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		close(s->fd[0]);
		s->fd[0] = -1;
	} else if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, ROOT_OPTS) <
		   0) {
		return -errno;
	}
	if (chdir("/tmp") < 0)
		return -errno;
	*ret_step = GOVEX_STEP_PIVOT_ROOT;
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	/* The old root is now stacked on ".": detach it and everything under it. */
	if (umount2(".", MNT_DETACH) < 0)
		return -errno;
	if (chdir("/") < 0)
		return -errno;

	for (size_t i = 0; i < plan->n; i++)
		if ((r = attach(plan, i, s, proc_subset, root_bind, ret_step)) < 0)
			return r;
	return 0;
}

/* ---- the run's workdir: its tmpfs, its files out ----------------------------------- */

/*
 * The fresh workdir's tmpfs options.  Size: 64 MiB like the private /tmp, or twice the
 * policy's largest file when that is bigger (a file of the allowed size and its rewrite
 * fit), but never more than the memory limit: tmpfs pages are charged to the memory
 * cgroup of the process that writes them (the program, inside the run's cgroup), so more
 * could not be written anyway.  Inodes bounded like /tmp.  Owned by the run's uid,
 * 0700.
 */
void rworkdir_opts(uid_t uid, gid_t gid, const struct govex__launch *la, char *buf, size_t cap)
{
	const struct govex__limits *l = la->limits;
	uint64_t size = 64ULL << 20;
	if (l->file_size_bytes > size / 2)
		size =
		    l->file_size_bytes > UINT64_MAX / 2 ? UINT64_MAX / 2 : 2 * l->file_size_bytes;
	if (l->memory_bytes && size > l->memory_bytes)
		size = l->memory_bytes;
	if (size < (1ULL << 20))
		size = 1ULL << 20;
	/* the files in are the shim's (not charged to the run), on top */
	size += govex__files_total(la->files, la->n_files);
	snprintf(buf, cap, "size=%llu,nr_inodes=16384,mode=0700,uid=%u,gid=%u",
		 (unsigned long long)size, (unsigned)uid, (unsigned)gid);
}

/* Files out, once every process of the run is gone: into the host's memfd (the cold
 * shim's, and the host's thread's for a warm run: template_relay.c). */
void rfiles_out(const struct govex__launch *l, int wdfd)
{
	if (wdfd < 0 || !l->outputs || l->out_fd < 0)
		return;
	char *scratch = mmap(NULL, GOVEX__COLLECT_SCRATCH, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (scratch == MAP_FAILED)
		return;
	govex__files_collect(wdfd, l->out_fd, l->limits->files_out_count,
			     l->limits->files_out_bytes, scratch);
	munmap(scratch, GOVEX__COLLECT_SCRATCH);
}
