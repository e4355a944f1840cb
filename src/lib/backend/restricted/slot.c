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
	if (geteuid() == 0) {
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
	return open_chain("/tmp", rel);
}

int rslot_acquire(const char *cache_dir, uint32_t count, struct rslot *ret, char *why,
		  size_t why_len)
{
	char where[PATH_MAX];
	ret->n = -1;
	ret->fd = -1;
	ret->id[0] = '\0';
	int dfd = open_lock_dir(cache_dir, where, sizeof(where));
	if (dfd < 0) {
		snprintf(why, why_len, "slot lock directory %s: %s", where, strerror(-dfd));
		return dfd;
	}
	struct stat dst;
	fstat(dfd, &dst);
	int e = EAGAIN;
	for (uint32_t n = 0; n < count; n++) {
		char name[32];
		snprintf(name, sizeof(name), "%u.lock", n);
		int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			e = errno;
			break;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & (S_IWGRP | S_IWOTH))) {
			close(fd);
			e = EPERM;
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			ret->n = (int)n;
			ret->fd = fd;
			/* as root the lock directory is the host's one; an unprivileged caller
			 * may have several (XDG_RUNTIME_DIR differs between sessions): its
			 * cgroup names carry the directory's identity so that two lock
			 * directories never hand out the same name */
			if (geteuid() == 0)
				snprintf(ret->id, sizeof(ret->id), "govex.slot-%u", n);
			else
				snprintf(ret->id, sizeof(ret->id), "govex.slot-%u.%llx.%llx", n,
					 (unsigned long long)dst.st_dev,
					 (unsigned long long)dst.st_ino);
			close(dfd);
			return 0;
		}
		e = errno == EWOULDBLOCK ? EAGAIN : errno;
		close(fd);
		if (e != EAGAIN)
			break;
	}
	close(dfd);
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
