/* SPDX-License-Identifier: MIT */
/*
 * Run slots: a small number N per concurrent run, taken with flock(LOCK_EX|LOCK_NB) on
 * N.lock in a private lock directory and held (the fd, close-on-exec, never passed to
 * the sandbox) until the run's teardown is complete; the kernel releases it when the
 * holder dies, so a slot whose lock can be taken belongs to no live run.
 *
 * The slot names what a run leaves on the host (its cgroups: govex.slot-N), so whoever
 * takes slot N next first reclaims what a killed run left there.  As root it is also
 * the run's identity: uid = gid = sandbox_uid base + N, distinct for concurrent runs
 * (as isolate does with its box uids), so runs share no per-user kernel limit and
 * cannot read each other's files.
 *
 * The lock directory: /run/govex/slots as root; otherwise $XDG_RUNTIME_DIR/govex/slots,
 * <cache dir>/slots or /tmp/govex-<uid>/slots.  Each directory govex makes there is
 * made 0700 and, on every use, must be a real directory (opened O_NOFOLLOW), owned by
 * the euid, without group or other write permission; else it is not used.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "restricted.h"

/* fd of a directory that is safe to keep locks in, or -errno. */
static int checked_dir(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return 0;
}

/* Opens (making it 0700 when missing) name below dirfd, checked.  Returns fd or -errno. */
static int open_private(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = checked_dir(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* base (absolute, existing; not checked: it is the caller's or the system's) then each
 * component of rel, made private and checked. */
static int open_chain(const char *base, const char *rel)
{
	if (!base || base[0] != '/')
		return -EINVAL;
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[PATH_MAX];
	if ((size_t)snprintf(buf, sizeof(buf), "%s", rel) >= sizeof(buf)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	char *save = NULL;
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int n = open_private(fd, c);
		close(fd);
		if (n < 0)
			return n;
		fd = n;
	}
	return fd;
}

static int open_lock_dir(const char *cache_dir, char *where, size_t where_len)
{
	if (govex__privileged()) {
		snprintf(where, where_len, "/run/govex/slots");
		return open_chain("/run", "govex/slots");
	}
	int r = -ENOENT;
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/') {
		snprintf(where, where_len, "%s/govex/slots", xdg);
		if ((r = open_chain(xdg, "govex/slots")) >= 0)
			return r;
	}
	if (cache_dir && cache_dir[0] == '/') {
		/* the cache dir itself must pass the same checks */
		int c = open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c >= 0) {
			r = checked_dir(c);
			if (r == 0) {
				snprintf(where, where_len, "%s/slots", cache_dir);
				r = open_private(c, "slots");
			}
			close(c);
			if (r >= 0)
				return r;
		}
	}
	char rel[64];
	snprintf(rel, sizeof(rel), "govex-%u/slots", (unsigned)geteuid());
	snprintf(where, where_len, "/tmp/%s", rel);
	if ((r = open_chain("/tmp", rel)) >= 0 || (r != -EPERM && r != -ENOTDIR && r != -ELOOP))
		return r;
	/* /tmp/govex-<uid> is not ours (another local user made it first): a private
	 * directory of this process's, so that nobody can deny us every run.  Its slots
	 * name nothing another process reclaims. */
	static char priv[64];
	static int priv_made;
	if (!__atomic_load_n(&priv_made, __ATOMIC_ACQUIRE)) {
		char tmpl[64];
		snprintf(tmpl, sizeof(tmpl), "/tmp/govex-%u-XXXXXX", (unsigned)geteuid());
		if (!mkdtemp(tmpl))
			return -errno;
		memcpy(priv, tmpl, sizeof(tmpl));
		__atomic_store_n(&priv_made, 1, __ATOMIC_RELEASE);
	}
	snprintf(where, where_len, "%s/slots", priv);
	return open_chain(priv, "slots");
}

/* The name of slot n's cgroups.  As root the lock directory is the host's one; an
 * unprivileged caller may have several (XDG_RUNTIME_DIR differs between sessions): its
 * names carry the lock directory's identity, so that two lock directories never hand
 * out the same name (and never reclaim each other's runs). */
static void slot_name(char *buf, size_t len, uint32_t n, const struct stat *dir)
{
	if (govex__privileged())
		snprintf(buf, len, "govex.slot-%u", (unsigned)n);
	else
		snprintf(buf, len, "govex.slot-%u.%llx.%llx", (unsigned)n,
			 (unsigned long long)dir->st_dev, (unsigned long long)dir->st_ino);
}

int rslot_acquire(const char *cache_dir, uint32_t count, struct rslot *ret, char *why,
		  size_t why_len)
{
	char where[PATH_MAX];
	ret->n = -1;
	ret->fd = -1;
	ret->id[0] = '\0';
	_cleanup_close_ int dfd = open_lock_dir(cache_dir, where, sizeof(where));
	if (dfd < 0) {
		snprintf(why, why_len, "slot lock directory %s: %s", where, strerror(-dfd));
		return dfd;
	}
	struct stat dst;
	if (fstat(dfd, &dst) < 0) {
		int e = errno;
		snprintf(why, why_len, "slot lock directory %s: %s", where, strerror(e));
		return -e;
	}
	int e = EAGAIN;
	for (uint32_t n = 0; n < count; n++) {
		char name[32];
		snprintf(name, sizeof(name), "%u.lock", n);
		/* O_NONBLOCK: a FIFO planted as N.lock must not block us */
		_cleanup_close_ int fd =
		    openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		if (fd < 0) {
			e = errno;
			continue; /* a bad slot file: the next slot */
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & (S_IWGRP | S_IWOTH))) {
			e = EPERM;
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			ret->n = (int)n;
			ret->fd = TAKE_FD(fd);
			slot_name(ret->id, sizeof(ret->id), n, &dst);
			return 0;
		}
		e = errno == EWOULDBLOCK ? EAGAIN : errno;
	}
	if (e == EAGAIN)
		snprintf(why, why_len, "all %u run slots in %s are taken", (unsigned)count, where);
	else
		snprintf(why, why_len, "run slot lock in %s: %s", where, strerror(e));
	return -e;
}

void rslot_release(struct rslot *s)
{
	if (s->fd >= 0)
		close(s->fd); /* releases the lock */
	s->fd = -1;
	s->n = -1;
}

void rslot_sweep(const char *cache_dir, const struct rcg_setup *s)
{
	char where[PATH_MAX];
	int dfd = open_lock_dir(cache_dir, where, sizeof(where));
	if (dfd < 0)
		return;
	struct stat dst;
	if (fstat(dfd, &dst) < 0) {
		close(dfd);
		return;
	}
	for (int i = 0; i < RCG_N; i++) {
		if (!s->p[i].version || !s->p[i].dir)
			continue;
		bool seen = false; /* v2 resources share a directory */
		for (int j = 0; j < i; j++)
			seen |= s->p[j].dir && strcmp(s->p[j].dir, s->p[i].dir) == 0;
		if (seen)
			continue;
		DIR *d = opendir(s->p[i].dir);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d))) {
			static const char pre[] = "govex.slot-";
			if (strncmp(de->d_name, pre, sizeof(pre) - 1) != 0)
				continue;
			const char *num = de->d_name + sizeof(pre) - 1;
			if (*num < '0' || *num > '9')
				continue;
			unsigned long n = strtoul(num, NULL, 10);
			if (n > UINT32_MAX)
				continue;
			char want[80];
			slot_name(want, sizeof(want), (uint32_t)n, &dst);
			if (strcmp(want, de->d_name) != 0)
				continue; /* another lock directory's (or not a slot) */
			char lock[32];
			snprintf(lock, sizeof(lock), "%lu.lock", n);
			int fd =
			    openat(dfd, lock,
				   O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
			if (fd < 0)
				continue;
			struct stat st;
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			    flock(fd, LOCK_EX | LOCK_NB) == 0) {
				/* free: its run is gone; what it left is removed in every
				 * hierarchy while we hold the slot */
				for (int k = 0; k < RCG_N; k++) {
					char path[PATH_MAX];
					if (s->p[k].version && s->p[k].dir &&
					    (size_t)snprintf(path, sizeof(path), "%s/%s",
							     s->p[k].dir,
							     de->d_name) < sizeof(path))
						rcg_remove(path);
				}
			}
			close(fd);
		}
		closedir(d);
	}
	close(dfd);
}

int govex__slot_lock_dirs(const char *cache_dir, char ***v)
{
	char buf[PATH_MAX];
	int r = 0;
	if (govex__privileged())
		return govex__strv_push(v, "/run/govex");
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/' &&
	    (size_t)snprintf(buf, sizeof(buf), "%s/govex", xdg) < sizeof(buf))
		r |= govex__strv_push(v, buf);
	if (cache_dir && cache_dir[0] == '/' &&
	    (size_t)snprintf(buf, sizeof(buf), "%s/slots", cache_dir) < sizeof(buf))
		r |= govex__strv_push(v, buf);
	snprintf(buf, sizeof(buf), "/tmp/govex-%u", (unsigned)geteuid());
	r |= govex__strv_push(v, buf);
	return r;
}

/* ---- a run's slot and its ids ------------------------------------------------------ */

int rrun_slot(const struct rstate *st, const struct govex_runtime_options *opts, struct rslot *slot,
	      uid_t *uid, gid_t *gid, char *why, size_t why_len)
{
	bool any_cg = false;
	for (int i = 0; i < RCG_N; i++)
		any_cg |= st->cg.p[i].version != 0;
	int r = rslot_acquire(opts ? opts->probe_cache_dir : NULL,
			      st->userns ? RSLOT_ID_COUNT : st->id_count, slot, why, why_len);
	if (r < 0 && (!st->userns || any_cg))
		return r;
	if (st->userns) {
		*uid = st->uid;
		*gid = st->gid;
	} else {
		*uid = (uid_t)(st->id_base + (uint32_t)slot->n);
		*gid = (gid_t)(st->gid_base + (uint32_t)slot->n);
	}
	return 0;
}
