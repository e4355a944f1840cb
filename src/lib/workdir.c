/* SPDX-License-Identifier: MIT */
/*
 * Host directories of runs: a fresh workdir made and locked for the run's lifetime
 * (govex__make_workdir), the leftovers of runs whose govex died swept
 * (govex__sweep_workdirs), and a tree removed without recursion, symlinks or crossing a
 * mount (govex__rm_rf).  The restricted backend needs none of it for a fresh workdir (a
 * tmpfs of the run's own); the controlled backend, and named workdirs' cleanup, do.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- directories ---------------------------------------------------------------------- */

/*
 * Removal of a host directory tree (the controlled backend's workdir), written for a tree
 * the run made: any depth, any width, entries made unreadable, symlinks anywhere, a
 * mount placed inside.  Iterative: one directory fd (and one DIR stream) open at a time,
 * whatever the depth; the path down is a heap stack of (dev, ino, name).  It descends
 * with openat(O_NOFOLLOW | O_DIRECTORY), never follows a symlink (unlinkat removes the
 * link itself), never enters another file system (st_dev differs: a mount point is left
 * and reported), and climbs with openat("..") checking that the parent is the (dev, ino)
 * it came from (a directory moved meanwhile stops the removal instead of deleting
 * elsewhere).  A directory that cannot be removed is remembered and skipped afterwards,
 * and the total work is bounded, so it always terminates.
 */
struct rm_frame {
	dev_t dev;
	ino_t ino;
	long resume; /* where to go on reading this directory (telldir), 0 = from the start */
	char name[NAME_MAX + 1]; /* this directory's name in its parent ("" for the root) */
};

struct rm_id {
	dev_t dev;
	ino_t ino;
};

#define RM_SKIP_MAX  1024	  /* directories that could not be removed, remembered */
#define RM_STEPS_MAX (1ULL << 24) /* entries examined in all, a bound on the work */

static bool rm_skipped(const struct rm_id *skip, size_t n, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (skip[i].dev == dev && skip[i].ino == ino)
			return true;
	return false;
}

/* Opens the subdirectory name of dirfd for removal, making it ours again (0700) when the
 * run made it unreadable or read-only.  Returns the fd or -errno. */
static int rm_openat(int dirfd, const char *name)
{
	/* RESOLVE_NO_XDEV: a bind mount of the same file system (same st_dev) is a mount
	 * point all the same, and is never entered */
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve =
				   RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) /* before Linux 5.6: st_dev is what is compared */
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return (int)fd;
}

static int rm_open_dir(int dirfd, const char *name)
{
	int fd = rm_openat(dirfd, name);
	if (fd < 0 && errno == EACCES) {
		/* fchmodat follows symlinks only with flags; a symlink fails the open below */
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return -EACCES;
		if (fchmodat(dirfd, name, 0700, 0) < 0)
			return -errno;
		fd = rm_openat(dirfd, name);
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		fchmod(fd, 0700);
	return fd;
}

/* Pushes the frame of directory child (entered by name) on the stack, growing it. */
static int rm_push(struct rm_frame **stack, size_t *cap, size_t *depth, int child, const char *name)
{
	if (*depth + 1 >= *cap) {
		struct rm_frame *ns = realloc(*stack, 2 * *cap * sizeof(**stack));
		if (!ns)
			return -ENOMEM;
		*stack = ns;
		*cap *= 2;
	}
	struct stat kst;
	if (fstat(child, &kst) < 0)
		memset(&kst, 0, sizeof(kst)); /* then the way up finds a stale frame: -ESTALE */
	struct rm_frame *f = &(*stack)[++*depth];
	f->dev = kst.st_dev;
	f->ino = kst.st_ino;
	f->resume = 0;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 0;
}

static int rm_tree(int rootfd)
{
	struct stat st;
	if (fstat(rootfd, &st) < 0) {
		int e = errno;
		close(rootfd);
		return -e;
	}
	const dev_t dev = st.st_dev;
	size_t depth = 0, cap = 64, nskip = 0;
	struct rm_frame *stack = malloc(cap * sizeof(*stack));
	struct rm_id *skip = malloc(RM_SKIP_MAX * sizeof(*skip));
	if (!stack || !skip) {
		free(stack);
		free(skip);
		close(rootfd);
		return -ENOMEM;
	}
	stack[0].dev = st.st_dev;
	stack[0].ino = st.st_ino;
	stack[0].name[0] = '\0';
	stack[0].resume = 0;
	int fd = rootfd, r = 0;
	uint64_t steps = 0;
	for (;;) {
		/* Scan the current directory: unlink what is not a directory, descend into
		 * the first directory that is neither skipped nor on another device. */
		int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
		if (!d) {
			if (dup_fd >= 0)
				close(dup_fd);
			r = r ? r : -errno;
			break;
		}
		/* a wide directory is not read again from its start after every subdirectory:
		 * reading resumes where it left off, and only a full pass from the start that
		 * finds nothing to enter ends the directory */
		long from = stack[depth].resume;
		if (from)
			seekdir(d, from);
		int child = -1;
		long after = 0;
		char cname[NAME_MAX + 1];
		struct dirent *de;
		while ((de = readdir(d))) {
			if (++steps > RM_STEPS_MAX) {
				r = r ? r : -ELOOP;
				break;
			}
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (de->d_type != DT_DIR && unlinkat(fd, de->d_name, 0) == 0)
				continue;
			struct stat cst;
			if (fstatat(fd, de->d_name, &cst, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* gone meanwhile */
			if (!S_ISDIR(cst.st_mode)) {
				if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT)
					r = r ? r : -errno;
				continue;
			}
			if (rm_skipped(skip, nskip, cst.st_dev, cst.st_ino))
				continue;
			if (cst.st_dev != dev) {
				/* a mount point: never entered, never removed */
				r = r ? r : -EXDEV;
				if (nskip < RM_SKIP_MAX)
					skip[nskip++] = (struct rm_id){cst.st_dev, cst.st_ino};
				else
					break;
				continue;
			}
			/* an empty directory goes at once, without an fd */
			if (unlinkat(fd, de->d_name, AT_REMOVEDIR) == 0)
				continue;
			int k = rm_open_dir(fd, de->d_name);
			struct stat kst;
			if (k >= 0 && (fstat(k, &kst) < 0 || kst.st_dev != cst.st_dev ||
				       kst.st_ino != cst.st_ino)) {
				close(k); /* swapped between stat and open */
				k = -ESTALE;
			}
			if (k < 0) {
				r = r ? r : k;
				if (nskip < RM_SKIP_MAX)
					skip[nskip++] = (struct rm_id){cst.st_dev, cst.st_ino};
				else
					break;
				continue;
			}
			child = k;
			snprintf(cname, sizeof(cname), "%s", de->d_name);
			after = telldir(d);
			break;
		}
		closedir(d);
		if (steps > RM_STEPS_MAX || nskip >= RM_SKIP_MAX) {
			if (child >= 0)
				close(child);
			r = r ? r : -ELOOP;
			break;
		}
		if (child < 0 && from) {
			stack[depth].resume = 0; /* one more pass, from the start */
			continue;
		}
		if (child >= 0) {
			/* down one level */
			stack[depth].resume = after > 0 ? after : 0;
			if (rm_push(&stack, &cap, &depth, child, cname) < 0) {
				close(child);
				r = -ENOMEM;
				break;
			}
			close(fd);
			fd = child;
			continue;
		}
		/* The current directory holds nothing removable any more. */
		if (depth == 0)
			break;
		/* up one level, to the directory we came from, or stop */
		int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) < 0 || ust.st_dev != stack[depth - 1].dev ||
		    ust.st_ino != stack[depth - 1].ino) {
			if (up >= 0)
				close(up);
			r = r ? r : -ESTALE;
			break;
		}
		close(fd);
		fd = up;
		if (unlinkat(fd, stack[depth].name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
			r = r ? r : -errno;
			if (nskip < RM_SKIP_MAX)
				skip[nskip++] = (struct rm_id){stack[depth].dev, stack[depth].ino};
		}
		depth--;
	}
	close(fd);
	free(stack);
	free(skip);
	return r;
}

int govex__rm_rf(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	fchmod(fd, 0700);
	int r = rm_tree(fd);
	if (rmdir(path) < 0 && errno != ENOENT)
		return r < 0 ? r : -errno;
	return 0;
}

/* The lock a run holds on its host workdir: flock on the directory itself, released by
 * the kernel when the process dies. */
static int lock_dir(int fd)
{
	int r;
	do
		r = flock(fd, LOCK_EX | LOCK_NB);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/*
 * Host workdirs are made as .govex-new-XXXXXX, locked, then renamed govex-w-XXXXXX: a
 * govex-w- directory is locked from the moment it has that name, so one whose lock is
 * free belongs to a run whose govex is gone, and is swept at once.  A .govex-new- one is
 * swept only a minute after it was made (its maker may be between mkdtemp and flock);
 * an old-style govex-XXXXXX (an earlier govex, which held no lock) only when it is older
 * than any run can last (wall_ms is at most an hour).
 */
#define WORKDIR_PREFIX	       "govex-w-"
#define WORKDIR_NEW_PREFIX     ".govex-new-"
#define SWEEP_NEW_MIN_AGE_S    60L
#define SWEEP_LEGACY_MIN_AGE_S ((long)(GOVEX_WALL_MS_MAX / 1000) + 300)
#define SWEEP_MAX_REMOVE       16
#define SWEEP_MAX_SCAN	       4096

/* How long after its last change a sibling named NAME may be swept (its lock free), or
 * -1 when NAME is none of ours. */
static long sweep_min_age(const char *name)
{
	size_t n = strlen(name);
	if (n == strlen(WORKDIR_PREFIX) + 6 && strncmp(name, WORKDIR_PREFIX, 8) == 0)
		return 0;
	if (n == strlen(WORKDIR_NEW_PREFIX) + 6 && strncmp(name, WORKDIR_NEW_PREFIX, 11) == 0)
		return SWEEP_NEW_MIN_AGE_S;
	if (n == 12 && strncmp(name, "govex-", 6) == 0)
		return SWEEP_LEGACY_MIN_AGE_S;
	return -1;
}

/* What a sweep found to remove: directories of ours, each held locked (fd). */
struct sweep_found {
	int fd[SWEEP_MAX_REMOVE];
	char *path[SWEEP_MAX_REMOVE];
	int n;
};

/* Finds up to SWEEP_MAX_REMOVE directories of ours under tmp whose lock can be taken:
 * their run is over and nobody removed them.  Bounded: at most SWEEP_MAX_SCAN entries
 * are looked at per call.  Each is kept locked in f until sweep_remove. */
static void sweep_scan(const char *tmp, const char *mine, struct sweep_found *f)
{
	_cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	int sfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
	if (!d) {
		if (sfd >= 0)
			close(sfd);
		return;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int scanned = 0;
	struct dirent *de;
	while (f->n < SWEEP_MAX_REMOVE && scanned++ < SWEEP_MAX_SCAN && (de = readdir(d))) {
		long min_age = sweep_min_age(de->d_name);
		if (min_age < 0 || strcmp(de->d_name, mine) == 0)
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		int fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077) ||
		    st.st_mtime > now.tv_sec - min_age || lock_dir(fd) < 0) {
			close(fd);
			continue;
		}
		/* ours, and its run's lock is free: its govex is gone.  The lock is held
		 * while removing, so two sweepers do not compete. */
		char *p = NULL;
		if (asprintf(&p, "%s/%s", tmp, de->d_name) < 0) {
			close(fd);
			continue;
		}
		f->fd[f->n] = fd;
		f->path[f->n++] = p;
	}
	closedir(d);
}

static void sweep_remove(struct sweep_found *f)
{
	for (int i = 0; i < f->n; i++) {
		govex__rm_rf(f->path[i]);
		free(f->path[i]);
		close(f->fd[i]);
	}
	f->n = 0;
}

static void sweep_leftovers(const char *tmp, const char *mine)
{
	struct sweep_found f = {.n = 0};
	sweep_scan(tmp, mine, &f);
	sweep_remove(&f);
}

static const char *tmp_dir(void)
{
	const char *tmp = secure_getenv("TMPDIR");
	return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

void govex__sweep_workdirs(void)
{
	sweep_leftovers(tmp_dir(), "");
}

/*
 * The same sweep while a run starts (govex__run_shim calls it once the shim exists, when
 * the host only waits for the sandbox): a run whose workdir is the sandbox's own needs
 * nothing of it, so its cost (a readdir of TMPDIR, a tenth of a millisecond or more
 * where that is a large directory) overlaps the sandbox's start instead of preceding it.
 * What it finds to remove (rarely anything: a killed govex's leftovers) is removed in a
 * thread of its own, joined before the run returns (govex__sweep_join), so a process
 * that exits after its run has swept as before.  Without a thread: at once.
 */
static void *sweep_main(void *arg)
{
	struct sweep_found *f = arg;
	sweep_remove(f);
	free(f);
	return NULL;
}

void govex__sweep_start(struct govex__sweep *s)
{
	s->started = false;
	s->begun = true;
	struct sweep_found *f = calloc(1, sizeof(*f));
	if (!f) {
		sweep_leftovers(tmp_dir(), "");
		return;
	}
	sweep_scan(tmp_dir(), "", f);
	if (!f->n) {
		free(f);
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	/* the thread takes no signal meant for the caller (the CLI's SIGINT, say) */
	bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
	if (masked && pthread_create(&s->thread, NULL, sweep_main, f) == 0)
		s->started = true;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->started) {
		sweep_remove(f);
		free(f);
	}
}

void govex__sweep_join(struct govex__sweep *s)
{
	if (s->started)
		pthread_join(s->thread, NULL);
	s->started = false;
}

int govex__make_workdir(char **ret_path, int *ret_lock_fd, struct govex_error *err)
{
	const char *tmp = tmp_dir();
	char *np = NULL, *p = NULL;
	if (asprintf(&np, "%s/" WORKDIR_NEW_PREFIX "XXXXXX", tmp) < 0)
		return -ENOMEM;
	if (!mkdtemp(np)) {
		int e = errno;
		free(np);
		return govex__err(err, e, e, "workdir: cannot create under '%s': %s", tmp,
				  strerror(e));
	}
	/* mkdtemp makes it 0700; umask cannot widen that.  The lock marks it as in use
	 * for as long as this process lives: O_CLOEXEC, so no program the run starts holds
	 * it (or keeps it past us).  Only then does it get its name. */
	int fd = open(np, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = fd < 0 ? -errno : lock_dir(fd);
	if (r == 0 && asprintf(&p, "%s/" WORKDIR_PREFIX "%s", tmp, np + strlen(np) - 6) < 0) {
		p = NULL;
		r = -ENOMEM;
	}
	if (r == 0 && renameat2(AT_FDCWD, np, AT_FDCWD, p, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		rmdir(np);
		free(np);
		free(p);
		return govex__err(err, -r, -r, "workdir: cannot lock under '%s': %s", tmp,
				  strerror(-r));
	}
	free(np);
	const char *base = p ? strrchr(p, '/') : NULL;
	sweep_leftovers(tmp, base ? base + 1 : "");
	*ret_path = p;
	*ret_lock_fd = fd;
	return 0;
}
