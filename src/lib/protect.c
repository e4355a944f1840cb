/* SPDX-License-Identifier: MIT */
/*
 * Protected paths: whether a writable path of a sandboxed run (a write root, the named
 * workdir) overlaps what govex must trust afterwards (its cache, its own files and
 * run-slot locks, the interpreter's files), by name, by inode and through bind mounts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "protect.h"
#include "runtime.h"

/* path as given (normalized lexically) and as it really is (symlinks resolved), each
 * pushed when it differs; nothing for a relative path */
static void push_forms(char ***v, const char *path)
{
	if (!path || path[0] != '/')
		return;
	char *real = realpath(path, NULL);
	if (govex__path_normalized(path))
		govex__strv_push(v, path);
	if (real && govex__path_normalized(real))
		govex__strv_push(v, real);
	free(real);
}

/* push_forms of path, and of each symlink its last component leads through (as they
 * really lie): a library the loader opens as libs/libfoo.so -> alt/libfoo.so -> real/...
 * (an /etc/alternatives of the user's) is changed by retargeting the link in alt/, which
 * neither the path nor its real file shows. */
static void push_link_chain(char ***v, const char *path)
{
	char cur[4096];
	push_forms(v, path);
	if (!path || path[0] != '/' || snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
		return;
	for (int hops = 0; hops < 40; hops++) {
		struct stat st;
		char target[4096], next[4096];
		if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
			return;
		ssize_t n = readlink(cur, target, sizeof(target) - 1);
		if (n <= 0)
			return;
		target[n] = '\0';
		char *slash = strrchr(cur, '/');
		/* the link itself, where it really lies: its directory resolved */
		*slash = '\0';
		char *dir = realpath(cur[0] ? cur : "/", NULL);
		*slash = '/';
		if (dir) {
			if (snprintf(next, sizeof(next), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
				     slash + 1) < (int)sizeof(next) &&
			    govex__path_normalized(next))
				govex__strv_push(v, next);
			free(dir);
		}
		if (target[0] == '/') {
			snprintf(next, sizeof(next), "%s", target);
		} else {
			*slash = '\0';
			int w = snprintf(next, sizeof(next), "%s/%s", cur, target);
			*slash = '/';
			if (w >= (int)sizeof(next))
				return;
		}
		memcpy(cur, next, sizeof(cur));
	}
}

/* Whether the file at path, or one of its ancestors, is the file (dev, ino): catches a
 * bind mount that shows the same directory under another name, which no string
 * comparison sees. */
static bool ino_at_or_above(const char *path, const struct stat *st)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return false;
	for (int depth = 0; depth < 64; depth++) {
		struct stat a;
		if (stat(buf, &a) == 0 && a.st_dev == st->st_dev && a.st_ino == st->st_ino)
			return true;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return false; /* "/" itself: the string comparison covers it */
		*slash = '\0';
	}
	return false;
}

/* Mounts as /proc/self/mountinfo lists them: device, root within the filesystem, mount
 * point (octal escapes undone), in the kernel's order (later ones shadow earlier). */
struct mnt {
	dev_t dev;
	char *root, *point;
};

static void unescape_octal(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

static void mounts_free(struct mnt *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].root);
		free(m[i].point);
	}
	free(m);
}

static struct mnt *mounts_read(size_t *ret_n)
{
	_cleanup_free_ char *data = NULL;
	size_t len, n = 0, cap = 0;
	struct mnt *m = NULL;
	*ret_n = 0;
	if (govex__read_file("/proc/self/mountinfo", 1 << 22, &data, &len, NULL) < 0)
		return NULL;
	for (char *line = data, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		unsigned maj, min;
		char root[4096], point[4096];
		if (sscanf(line, "%*u %*u %u:%u %4095s %4095s", &maj, &min, root, point) != 4)
			continue;
		if (n == cap) {
			struct mnt *g = realloc(m, (cap = cap ? 2 * cap : 64) * sizeof(*m));
			if (!g)
				break;
			m = g;
		}
		unescape_octal(root);
		unescape_octal(point);
		m[n].dev = makedev(maj, min);
		m[n].root = strdup(root);
		m[n].point = strdup(point);
		if (!m[n].root || !m[n].point) {
			free(m[n].root);
			free(m[n].point);
			break;
		}
		n++;
	}
	*ret_n = n;
	return m;
}

/* Where path lies within its filesystem: the device and the path from that
 * filesystem's root (a bind mount shows a directory under another name; this is the
 * same for both names).  False when it cannot be told. */
static bool fs_location(const struct mnt *m, size_t n, const char *path, dev_t *ret_dev, char *ret,
			size_t cap)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	struct stat st;
	if (!real || stat(real, &st) < 0)
		return false;
	const struct mnt *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(m[i].point);
		if (!govex__path_under(real, m[i].point))
			continue;
		if (!best || l >= best_len) { /* the deepest; of equals, the last mounted */
			best = &m[i];
			best_len = l;
		}
	}
	if (!best || best->dev != st.st_dev)
		return false;
	const char *rest = strcmp(best->point, "/") == 0 ? real : real + best_len;
	int w = snprintf(ret, cap, "%s%s", strcmp(best->root, "/") == 0 ? "" : best->root, rest);
	if (w <= 0 || (size_t)w >= cap)
		return false;
	if (ret[0] == '\0')
		snprintf(ret, cap, "/");
	*ret_dev = st.st_dev;
	return true;
}

static bool overlap(const struct mnt *m, size_t n, const char *a, const char *b)
{
	if (govex__path_under(a, b) || govex__path_under(b, a))
		return true;
	struct stat sa, sb;
	if ((stat(b, &sb) == 0 && ino_at_or_above(a, &sb)) ||
	    (stat(a, &sa) == 0 && ino_at_or_above(b, &sa)))
		return true;
	/* a bind mount of a directory above, at or below b under another name */
	char la[4096], lb[4096];
	dev_t da, db;
	return fs_location(m, n, a, &da, la, sizeof(la)) &&
	       fs_location(m, n, b, &db, lb, sizeof(lb)) && da == db &&
	       (govex__path_under(la, lb) || govex__path_under(lb, la));
}

/*
 * Whether a writable path of a sandboxed run (a write root, the named workdir) overlaps
 * (is an ancestor of, equal to, or beneath) something govex must be able to trust
 * afterwards: the cache directory, govex's own executable and library, the interpreter's
 * files.  A run that could write there could rewrite what later runs believe, or plant
 * code that later runs on the host.  Returns what it protects (and the protected path in
 * *ret_path, owned) or NULL.
 */
const char *govex__protected_overlap(const govex_runtime *rt, const char *writable, char **ret_path)
{
	const char *kinds[] = {"cache", "govex", "interpreter"};
	char **w = calloc(1, sizeof(char *));
	const char *hit = NULL;
	size_t nm = 0;
	struct mnt *m = mounts_read(&nm);
	*ret_path = NULL;
	if (!w || !m) {
		govex__strv_free(w);
		mounts_free(m, nm);
		return "govex"; /* cannot check: refuse */
	}
	push_forms(&w, writable);
	for (size_t k = 0; k < ARRAY_SIZE(kinds) && !hit; k++) {
		char **prot = calloc(1, sizeof(char *));
		if (!prot) {
			govex__strv_free(w);
			mounts_free(m, nm);
			return kinds[k];
		}
		if (k == 0) {
			push_forms(&prot, rt->probe_cache_dir);
		} else if (k == 1) {
			Dl_info dl;
			char exe[4096];
			ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
			if (n > 0) {
				exe[n] = '\0';
				push_forms(&prot, exe);
			}
			if (dladdr((void *)govex__protected_overlap, &dl) && dl.dli_fname)
				push_forms(&prot, dl.dli_fname);
			/* the run-slot locks (a run that could replace them could have a live
			 * run's cgroups reclaimed) */
			char **slots = calloc(1, sizeof(char *));
			if (slots && govex__slot_lock_dirs(rt->probe_cache_dir, &slots) == 0)
				for (size_t i = 0; slots[i]; i++)
					push_forms(&prot, slots[i]);
			govex__strv_free(slots);
		} else {
			push_forms(&prot, rt->policy->interpreter);
			if (!rt->policy->interpreter) {
				/* "auto": the python3 on PATH the probe ran (a pyenv shim) */
				char *found = NULL;
				if (govex__find_in_path("python3", &found) == 0)
					push_forms(&prot, found);
				free(found);
			}
			push_forms(&prot, rt->interp.path);
			for (size_t i = 0; rt->interp.paths && rt->interp.paths[i]; i++)
				push_forms(&prot, rt->interp.paths[i]);
			for (size_t i = 0; rt->interp.libs && rt->interp.libs[i]; i++)
				push_link_chain(&prot, rt->interp.libs[i]);
			/* the environment: a venv (its prefix), its packages' files */
			if (rt->interp.exec)
				push_forms(&prot, rt->interp.prefix);
			for (size_t i = 0; rt->interp.env_files && rt->interp.env_files[i]; i++)
				push_link_chain(&prot, rt->interp.env_files[i]);
		}
		for (size_t i = 0; prot[i] && !hit; i++)
			for (size_t j = 0; w[j] && !hit; j++)
				if (overlap(m, nm, w[j], prot[i])) {
					hit = kinds[k];
					*ret_path = strdup(prot[i]);
				}
		govex__strv_free(prot);
	}
	govex__strv_free(w);
	mounts_free(m, nm);
	return hit;
}
