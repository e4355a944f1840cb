/* SPDX-License-Identifier: MIT */
/*
 * The cache directory: the only place govex reads back something it wrote earlier
 * (backend reports, interpreter probes).  Nothing a run could have written may decide
 * anything (DESIGN.md, "Trust boundaries"), so the directory and every file in it are
 * checked at open, not trusted by name:
 *
 *   directory  opened O_NOFOLLOW|O_DIRECTORY (no symlink in its last component), a real
 *              directory owned by the effective uid, no group/other permission bits;
 *              made 0700 when missing.  Else it is not used: runs still work, uncached.
 *   files      opened relative to that directory fd with O_NOFOLLOW; regular, owned by
 *              the effective uid, not group/other writable.  Written whole to a fresh
 *              0600 temporary (O_CREAT|O_EXCL, a random name: mkostemp's contract, but
 *              relative to the directory fd) and renamed over the old file: a reader
 *              never sees half a file, and a name planted by someone else is replaced,
 *              not written through.
 *
 * That the directory is not inside a write root of a sandboxed run is checked at
 * planning (plan.c, protected_path; the check is protect.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"

/* A temporary older than this was left by a process that died while writing. */
#define TEMP_STALE_S 600

int govex__cache_dir_open(const char *dir, bool create)
{
	if (!dir || dir[0] != '/')
		return -EINVAL;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		/* whatever is there now (ours, or a racing creator's) is checked below */
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* A file of the cache directory that may be believed (see the top of this file). */
static int file_trusted(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

int govex__cache_file_read(int dirfd, const char *name, size_t max, char **ret_data,
			   size_t *ret_len)
{
	if (dirfd < 0 || !name || !name[0] || strchr(name, '/'))
		return -EINVAL;
	/* O_NONBLOCK: a FIFO planted under the name must not block the open */
	_cleanup_close_ int fd =
	    openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int r = file_trusted(fd);
	if (r < 0)
		return r;
	return govex__read_fd(fd, max, ret_data, ret_len);
}

/* ".<name>.XXXXXX", X random: a temporary never matches a cache file's name. */
static void temp_name(char *buf, size_t cap, const char *name)
{
	static const char alnum[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		uint64_t t = govex__now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(rnd, &t, sizeof(rnd));
	}
	char sfx[9];
	for (size_t i = 0; i < 8; i++)
		sfx[i] = alnum[rnd[i] % (sizeof(alnum) - 1)];
	sfx[8] = '\0';
	snprintf(buf, cap, ".%s.%s", name, sfx);
}

int govex__cache_file_write(int dirfd, const char *name, const char *data, size_t len)
{
	if (dirfd < 0 || !name || !name[0] || strchr(name, '/') || strlen(name) > 200)
		return -EINVAL;
	char tmp[256];
	int fd = -1;
	for (int tries = 0; tries < 16 && fd < 0; tries++) {
		temp_name(tmp, sizeof(tmp), name);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	int r = 0;
	/* 0600 whatever the umask (a wider umask bit could only be narrower: still) */
	if (fchmod(fd, 0600) < 0)
		r = -errno;
	for (size_t off = 0; r == 0 && off < len;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

struct entry {
	char *name;
	struct timespec mtime;
};

static int entry_newer_first(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->name, y->name);
}

void govex__cache_prune(int dirfd, const char *prefix, size_t keep)
{
	if (dirfd < 0 || !prefix)
		return;
	int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	size_t plen = strlen(prefix);
	time_t now = time(NULL);
	struct dirent *de;
	/* bounded work: a directory flooded with names is not ours to read to the end */
	for (size_t seen = 0; seen < 4096 && (de = readdir(d)); seen++) {
		bool temp = de->d_name[0] == '.' && strncmp(de->d_name + 1, prefix, plen) == 0;
		if (!temp && strncmp(de->d_name, prefix, plen) != 0)
			continue;
		struct stat st;
		/* only what we could have written: a regular file of ours */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (temp) {
			/* a writer that died between create and rename */
			if (now - st.st_mtim.tv_sec > TEMP_STALE_S)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct entry *nv = realloc(v, nc * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		v[n].name = strdup(de->d_name);
		v[n].mtime = st.st_mtim;
		if (v[n].name)
			n++;
	}
	closedir(d);
	if (n > keep) {
		qsort(v, n, sizeof(*v), entry_newer_first);
		for (size_t i = keep; i < n; i++)
			unlinkat(dirfd, v[i].name, 0);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

char *govex__cache_get(int dirfd, const char *name, const char *key, size_t max)
{
	char *data = NULL;
	size_t len, klen = strlen(key);
	if (govex__cache_file_read(dirfd, name, max + klen + 1, &data, &len) < 0)
		return NULL;
	if (len <= klen || memcmp(data, key, klen) != 0 || data[klen] != '\n' ||
	    memchr(data, '\0', len)) {
		free(data);
		return NULL;
	}
	memmove(data, data + klen + 1, len - klen); /* with the NUL */
	return data;
}

int govex__cache_put(int dirfd, const char *name, const char *key, const char *payload)
{
	_cleanup_free_ char *s = NULL;
	if (strchr(key, '\n'))
		return -EINVAL;
	int n = asprintf(&s, "%s\n%s", key, payload);
	if (n < 0)
		return -ENOMEM;
	return govex__cache_file_write(dirfd, name, s, (size_t)n);
}
