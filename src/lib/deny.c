/* SPDX-License-Identifier: MIT */
/*
 * filesystem.deny on this host: each path the policy denies, resolved once per runtime
 * (after the interpreter's probe) into what a sandbox masks, or refused with a reason.
 *
 * A path is resolved with realpath() (a symlink in it: the real path is what is masked
 * and what the plan names) and must be a directory or a regular file with one link (a
 * second name would reach the same inode unmasked).  It must lie strictly beneath a
 * read or write root, or beneath the interpreter's platform files (its stdlib and
 * extension directories, the environment's packages): elsewhere no run sees it, and a
 * deny there is meaningless.  It may not be or contain a root (deny the root by not
 * listing it), nor contain what the interpreter needs to start (nothing could run).
 *
 * Aliases: when a root, or a platform directory, is the same directory (st_dev and
 * st_ino) as one of the path's ancestors under another name (a bind mount, the same
 * file system mounted twice), the path is reachable beneath that root too: that name
 * is masked as well (and the plan lists it).  When such an alias is the path itself,
 * the path is refused like a root.
 *
 * Pins: every directory between a write root and a masked path (the masked path's
 * ancestors strictly beneath the write root) is made a mount point of its own in the
 * sandbox (a self-bind), so that the run can neither rename nor remove it (EBUSY) and
 * recreate the denied name elsewhere in its place.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

void govex__deny_free(struct govex__deny *d)
{
	govex__strv_free(d->paths);
	free(d->isdir);
	govex__strv_free(d->pins);
	memset(d, 0, sizeof(*d));
}

static int fault(struct govex__deny_fault *f, const char *code, const char *path, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
static int fault(struct govex__deny_fault *f, const char *code, const char *path, const char *fmt,
		 ...)
{
	f->code = code;
	snprintf(f->path, sizeof(f->path), "%s", path);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return 1;
}

/* A path another bind of the sandbox makes visible: real, with its identity. */
struct place {
	char *real;
	dev_t dev;
	ino_t ino;
	bool write; /* a write root */
	bool root;  /* a read or write root (else a platform directory, or a mount point
		     * beneath a place) */
};

static int place_add(struct place **v, size_t *n, const char *path, bool write, bool root)
{
	struct stat st;
	char *real = realpath(path, NULL);
	if (!real)
		return 0; /* not there: the sandbox shows nothing of it either */
	if (stat(real, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
		free(real);
		return 0;
	}
	struct place *nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv) {
		free(real);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = (struct place){real, st.st_dev, st.st_ino, write, root};
	return 0;
}

/* path lies strictly beneath dir (both real). */
static bool strictly_under(const char *path, const char *dir)
{
	return strcmp(path, dir) != 0 && govex__path_under(path, dir);
}

/* A prefix that is a whole system tree is not bound for the interpreter (mounts.c):
 * nothing beneath it is platform files but what in->paths names. */
static bool system_tree(const char *p)
{
	static const char *const sys[] = {"/",	  "/usr", "/usr/local", "/opt", "/home", "/root",
					  "/var", "/srv", "/etc",	"/tmp", "/run",	 "/mnt"};
	for (size_t i = 0; i < ARRAY_SIZE(sys); i++)
		if (strcmp(p, sys[i]) == 0)
			return true;
	return false;
}

/* Decodes mountinfo's octal escapes (\040) in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *c = s; *c; c++) {
		if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' &&
		    c[3] >= '0' && c[3] <= '7') {
			*w++ = (char)((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
			c += 3;
		} else {
			*w++ = *c;
		}
	}
	*w = '\0';
}

/* Every mount point of the host's (govex's) mount table strictly beneath a place: the
 * sandbox shows it (binds are recursive), and it may be another name of a denied path
 * or of one of its ancestors. */
static int mounts_beneath(struct place **v, size_t *n)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	if (!fp)
		return 0; /* no /proc: the roots alone are compared */
	size_t nplaces = *n;
	char *line = NULL;
	size_t cap = 0;
	int r = 0;
	for (size_t lines = 0; r == 0 && lines < 65536 && getline(&line, &cap, fp) > 0; lines++) {
		/* id parent major:minor root mountpoint ... */
		char *fld = line;
		for (int k = 0; k < 4 && fld; k++) {
			fld = strchr(fld, ' ');
			if (fld)
				fld++;
		}
		char *end = fld ? strchr(fld, ' ') : NULL;
		if (!end)
			continue;
		*end = '\0';
		/* an automount point is not looked at (that would mount it); what it
		 * mounts is not a bind of the host's paths */
		const char *sep = strstr(end + 1, " - ");
		if (sep && strncmp(sep + 3, "autofs ", 7) == 0)
			continue;
		unescape(fld);
		bool beneath = false;
		for (size_t i = 0; i < nplaces; i++)
			if (strictly_under(fld, (*v)[i].real))
				beneath = true;
		if (beneath)
			r = place_add(v, n, fld, false, false);
	}
	free(line);
	fclose(fp);
	return r;
}

static int places_of(const govex_policy *p, const struct govex__interp *in, struct place **ret,
		     size_t *ret_n)
{
	struct place *v = NULL;
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; r == 0 && p->read_roots && p->read_roots[i]; i++)
		r = place_add(&v, &n, p->read_roots[i], false, true);
	for (size_t i = 0; r == 0 && p->write_roots && p->write_roots[i]; i++)
		r = place_add(&v, &n, p->write_roots[i], true, true);
	if (p->platform_defaults && in) {
		for (size_t i = 0; r == 0 && in->paths && in->paths[i]; i++)
			r = place_add(&v, &n, in->paths[i], false, false);
		for (size_t i = 0; r == 0 && in->env_files && in->env_files[i]; i++)
			r = place_add(&v, &n, in->env_files[i], false, false);
		const char *prefixes[] = {in->prefix, in->base_prefix};
		for (size_t i = 0; r == 0 && i < ARRAY_SIZE(prefixes); i++)
			if (prefixes[i] && prefixes[i][0] == '/' && !system_tree(prefixes[i]))
				r = place_add(&v, &n, prefixes[i], false, false);
	}
	if (r == 0)
		r = mounts_beneath(&v, &n);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i].real);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* dir (real) is, or lies beneath, a write root: by name, or because it or one of its
 * ancestors is a write root's directory under another name (a bind mount). */
static bool in_write_root(const char *dir, const struct place *pv, size_t np)
{
	char anc[PATH_MAX];
	snprintf(anc, sizeof(anc), "%s", dir);
	for (;;) {
		struct stat st;
		bool have = stat(anc, &st) == 0;
		for (size_t i = 0; i < np; i++)
			if (pv[i].write &&
			    (strcmp(anc, pv[i].real) == 0 ||
			     (have && st.st_dev == pv[i].dev && st.st_ino == pv[i].ino)))
				return true;
		char *slash = strrchr(anc, '/');
		if (!slash || strcmp(anc, "/") == 0)
			return false;
		if (slash == anc)
			anc[1] = '\0';
		else
			*slash = '\0';
	}
}

/* Resolves the policy's path given one component at a time, as realpath() does: a
 * symlink met on the way (in the path, or in a link's target) whose directory is
 * beneath a write root refuses the path.  A run could replace that symlink, and the
 * next runtime would resolve the path to what the run chose, leaving the real file,
 * which this runtime masks, unmasked there. */
static int writable_link(const char *given, const struct place *pv, size_t np,
			 struct govex__deny_fault *f)
{
	char cur[PATH_MAX] = ""; /* the real path resolved so far; "" is "/" */
	char rest[PATH_MAX], next[PATH_MAX], cand[PATH_MAX], tgt[PATH_MAX];
	snprintf(rest, sizeof(rest), "%s", given);
	const char *p = rest;
	for (int links = 0;;) {
		while (*p == '/')
			p++;
		if (!*p)
			return 0;
		const char *e = strchrnul(p, '/');
		int len = (int)(e - p);
		if (len == 1 && p[0] == '.') {
			p = e;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			char *s = strrchr(cur, '/');
			if (s)
				*s = '\0';
			p = e;
			continue;
		}
		struct stat st;
		int err =
		    (size_t)snprintf(cand, sizeof(cand), "%s/%.*s", cur, len, p) >= sizeof(cand)
			? ENAMETOOLONG
			: (lstat(cand, &st) < 0 ? errno : 0);
		if (err)
			return fault(f, "deny_unverifiable", given,
				     "filesystem.deny '%.200s': '%.300s' cannot be examined (%s): "
				     "refused rather than left unchecked",
				     given, cand, strerror(err));
		if (!S_ISLNK(st.st_mode)) {
			memcpy(cur, cand, strlen(cand) + 1);
			p = e;
			continue;
		}
		if (in_write_root(cur[0] ? cur : "/", pv, np))
			return fault(
			    f, "deny_symlink_writable", given,
			    "filesystem.deny '%.200s' goes through the symlink '%.300s', "
			    "which lies under a write root: a run could point it elsewhere "
			    "and the next runtime would mask that instead; give the real "
			    "path, or keep the symlink out of the write roots",
			    given, cand);
		ssize_t n = readlink(cand, tgt, sizeof(tgt) - 1);
		if (++links > 40 || n < 0 ||
		    (size_t)snprintf(next, sizeof(next), "%.*s%s", (int)n, tgt, e) >= sizeof(next))
			return fault(f, "deny_unverifiable", given,
				     "filesystem.deny '%.200s': the symlink '%.300s' cannot be "
				     "followed: refused rather than left unchecked",
				     given, cand);
		if (n > 0 && tgt[0] == '/')
			cur[0] = '\0';
		memcpy(rest, next, strlen(next) + 1);
		p = rest;
	}
}

/* The first file the interpreter needs to start that lies at or beneath real, or NULL. */
static const char *covers_interpreter(const struct govex__interp *in, const char *real,
				      char buf[PATH_MAX])
{
	if (!in)
		return NULL;
	const char *one[] = {in->path, in->exec};
	char *const *lists[] = {in->libs, in->paths, in->env_files};
	for (size_t i = 0; i < ARRAY_SIZE(one); i++)
		if (one[i] && realpath(one[i], buf) && govex__path_under(buf, real))
			return one[i];
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++)
		for (size_t i = 0; lists[k] && lists[k][i]; i++)
			if (realpath(lists[k][i], buf) && govex__path_under(buf, real))
				return lists[k][i];
	/* the stdlib's encodings package, which the interpreter imports to initialize
	 * (not frozen): the package, or anything in it */
	for (size_t i = 0; in->paths && in->paths[i]; i++) {
		char enc[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(enc, sizeof(enc), "%s/encodings", in->paths[i]) <
			sizeof(enc) &&
		    realpath(enc, buf) && stat(buf, &st) == 0 && S_ISDIR(st.st_mode) &&
		    (govex__path_under(buf, real) || govex__path_under(real, buf)))
			return buf;
	}
	return NULL;
}

/* The identities of a denied path and of everything beneath it (a bounded walk, symlinks
 * not followed), sorted; a regular file with another link refuses the path. */
struct ident {
	dev_t dev;
	ino_t ino;
};
#define WALK_MAX 100000

static int ident_cmp(const void *a, const void *b)
{
	const struct ident *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

struct walk {
	struct ident *v;
	size_t n;
	const char *given;
	struct govex__deny_fault *f;
	/* the first step that could not be completed: the walk goes on without it (a root
	 * found to be an alias is the more useful refusal), then refuses with this */
	bool unverified;
	struct govex__deny_fault stuck;
};

static int walk_add(struct walk *w, const struct stat *st)
{
	if (w->n >= WALK_MAX)
		return fault(w->f, "deny_too_large", w->given,
			     "filesystem.deny '%.200s' holds more than %d files and directories: "
			     "too many to check for other names; deny smaller parts",
			     w->given, WALK_MAX);
	if (!(w->n & (w->n - 1)) || !w->v) {
		struct ident *nv = realloc(w->v, (w->n ? 2 * w->n : 64) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		w->v = nv;
	}
	w->v[w->n++] = (struct ident){st->st_dev, st->st_ino};
	return 0;
}

/* A walk step that cannot be completed refuses the path (after the walk: see struct
 * walk): what it would have looked at (a second name of a file, a bind alias of a
 * root) is not known.  Returns 0: the walk goes on without that step. */
#define WALK_DEPTH 64
static int unverifiable(struct walk *w, const char *path, const char *why)
{
	if (!w->unverified)
		fault(&w->stuck, "deny_unverifiable", w->given,
		      "filesystem.deny '%.200s': '%.300s' cannot be checked for other names "
		      "(%s): refused rather than left unchecked",
		      w->given, path, why);
	w->unverified = true;
	return 0;
}

static int walk_dir(struct walk *w, int dfd, char *path, size_t plen, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return unverifiable(w, path, strerror(e));
	}
	int r = 0;
	struct dirent *de;
	for (;;) {
		errno = 0;
		if (r != 0 || !(de = readdir(d)))
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		size_t nl = strlen(de->d_name);
		if (plen + 1 + nl + 1 > PATH_MAX) {
			r = unverifiable(w, path, "a name inside it is longer than PATH_MAX");
			continue;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, de->d_name, nl + 1);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = unverifiable(w, path, strerror(errno));
			path[plen] = '\0';
			continue;
		}
		if (S_ISREG(st.st_mode) && st.st_nlink > 1)
			r = fault(w->f, "deny_hardlinked", w->given,
				  "filesystem.deny '%.200s': '%.300s' has %lu hard links: another "
				  "name would reach the same file unmasked; remove the other links",
				  w->given, path, (unsigned long)st.st_nlink);
		if (r == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			r = walk_add(w, &st);
		if (r == 0 && S_ISDIR(st.st_mode) && depth + 1 >= WALK_DEPTH) {
			char why[64];
			snprintf(why, sizeof(why), "deeper than %d levels", WALK_DEPTH);
			r = unverifiable(w, path, why);
		} else if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				r = unverifiable(w, path, strerror(errno));
			else
				r = walk_dir(w, sub, path, plen + 1 + nl, depth + 1);
		}
		path[plen] = '\0';
	}
	if (r == 0 && errno != 0)
		r = unverifiable(w, path, strerror(errno));
	closedir(d);
	return r;
}

static int idents_of(const char *real, struct walk *w)
{
	struct stat st;
	if (lstat(real, &st) < 0)
		return unverifiable(w, real, strerror(errno));
	int r = walk_add(w, &st);
	if (r == 0 && S_ISDIR(st.st_mode)) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s", real);
		int dfd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			r = unverifiable(w, real, strerror(errno));
		else
			r = walk_dir(w, dfd, path, strlen(path), 0);
	}
	if (r == 0 && w->n)
		qsort(w->v, w->n, sizeof(*w->v), ident_cmp);
	return r;
}

/* Adds real (a masked path) once; *added: it was new. */
static int mask_add(struct govex__deny *d, size_t *n, const char *real, bool isdir, bool *added)
{
	*added = false;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(d->paths[i], real) == 0)
			return 0;
	if (govex__strv_push(&d->paths, real) < 0)
		return -ENOMEM;
	unsigned char *nd = realloc(d->isdir, *n + 1);
	if (!nd)
		return -ENOMEM;
	d->isdir = nd;
	nd[(*n)++] = isdir;
	*added = true;
	return 0;
}

/* One masked path (the policy's, resolved, or an alias): its checks, its aliases queued
 * (appended to d), its pins. */
static int check_one(const govex_policy *p, const struct govex__interp *in, const struct place *pv,
		     size_t np, struct govex__deny *d, size_t *n, size_t idx, const char *given,
		     struct govex__deny_fault *f)
{
	char real[PATH_MAX];
	snprintf(real, sizeof(real), "%s", d->paths[idx]);
	(void)p;
	bool under = false;
	for (size_t i = 0; i < np; i++) {
		if (govex__path_under(pv[i].real, real) && pv[i].root)
			return fault(f, "deny_covers_root", given,
				     "filesystem.deny '%.200s' (%.200s) is or contains the "
				     "filesystem root '%.200s': leave that root out of the policy "
				     "instead",
				     given, real, pv[i].real);
		if (strictly_under(real, pv[i].real))
			under = true;
	}
	/* the sandbox's own places: its proc, its /dev, its workdir (a pin there would
	 * show the host's); /sys: nothing of it is a run's */
	static const char *const own[] = {"/proc", "/dev", "/sys", "/govex"};
	for (size_t o = 0; o < ARRAY_SIZE(own); o++)
		if (govex__path_under(real, own[o]))
			return fault(f, "deny_path_reserved", given,
				     "filesystem.deny '%.200s' (%.200s) is under %s, which the "
				     "sandbox makes its own",
				     given, real, own[o]);
	char buf[PATH_MAX];
	const char *need = covers_interpreter(in, real, buf);
	if (need)
		return fault(f, "deny_covers_interpreter", given,
			     "filesystem.deny '%.200s' (%.200s) covers '%.200s', which the "
			     "interpreter needs to start: no run could start",
			     given, real, need);
	if (!under)
		return fault(
		    f, "deny_outside_roots", given,
		    "filesystem.deny '%.200s' (%.200s) lies under no filesystem.read or "
		    "write root nor the interpreter's files: no run sees it, so denying it "
		    "means nothing",
		    given, real);

	/* aliases: a place that is one of real's ancestors (or real) under another name */
	char anc[PATH_MAX];
	snprintf(anc, sizeof(anc), "%s", real);
	for (;;) {
		struct stat as;
		if (stat(anc, &as) == 0)
			for (size_t i = 0; i < np; i++) {
				if (pv[i].dev != as.st_dev || pv[i].ino != as.st_ino ||
				    strcmp(pv[i].real, anc) == 0)
					continue;
				if (strcmp(anc, real) == 0)
					continue; /* the path itself: below */
				char alias[PATH_MAX];
				const char *rest = real + strlen(anc) + (strcmp(anc, "/") != 0);
				if ((size_t)snprintf(alias, sizeof(alias), "%s/%s", pv[i].real,
						     rest) >= sizeof(alias))
					return -ENAMETOOLONG;
				struct stat rs, ls;
				char *ar = realpath(alias, NULL);
				bool same = ar && lstat(real, &rs) == 0 && lstat(ar, &ls) == 0 &&
					    rs.st_dev == ls.st_dev && rs.st_ino == ls.st_ino;
				if (!same) {
					free(ar);
					return fault(
					    f, "deny_alias_unresolved", given,
					    "filesystem.deny '%.200s': '%.200s' reaches its "
					    "directory '%.200s' under another name, but "
					    "'%.200s' is not the same file there: refused "
					    "rather than left reachable",
					    given, pv[i].real, anc, alias);
				}
				bool added;
				int r = mask_add(d, n, ar, d->isdir[idx], &added);
				free(ar);
				if (r < 0)
					return r;
			}
		if (strcmp(anc, "/") == 0)
			break;
		char *slash = strrchr(anc, '/');
		if (slash == anc)
			anc[1] = '\0';
		else
			*slash = '\0';
	}

	/* a place, or a mount point beneath one, that is the path or something inside it
	 * under another name (a bind mount): a root is refused, a mount point masked too */
	struct walk w = {.given = given, .f = f};
	int wr = idents_of(real, &w);
	for (size_t i = 0; wr == 0 && i < np; i++) {
		struct ident key = {pv[i].dev, pv[i].ino};
		if (govex__path_under(pv[i].real, real) || !w.n ||
		    !bsearch(&key, w.v, w.n, sizeof(*w.v), ident_cmp))
			continue;
		if (pv[i].root) {
			wr = fault(f, "deny_covers_root", given,
				   "filesystem.deny '%.200s' (%.200s): the root '%.200s' is "
				   "another name (a bind alias) of it or of something inside it: "
				   "leave that root out of the policy instead",
				   given, real, pv[i].real);
			break;
		}
		struct stat ps;
		bool added;
		if (stat(pv[i].real, &ps) < 0)
			wr = -errno;
		else
			wr = mask_add(d, n, pv[i].real, S_ISDIR(ps.st_mode), &added);
	}
	free(w.v);
	if (wr == 0 && w.unverified) {
		*f = w.stuck;
		wr = 1;
	}
	if (wr != 0)
		return wr;

	/* pins: real's ancestors strictly beneath a write root */
	snprintf(anc, sizeof(anc), "%s", real);
	for (;;) {
		char *slash = strrchr(anc, '/');
		if (!slash || slash == anc)
			break;
		*slash = '\0';
		bool pin = false;
		for (size_t i = 0; i < np; i++)
			if (pv[i].write && strictly_under(anc, pv[i].real))
				pin = true;
		if (pin && !govex__strv_contains(d->pins, anc) &&
		    govex__strv_push(&d->pins, anc) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A denied module NAME.py (real): the interpreter's compiled copies of it beside it,
 * __pycache__/NAME.*.pyc, hold its code and constants: each (its real path) is masked
 * too, with the checks of a denied file.  *n grows; given_of[new] = k. */
static int pycache_add(struct govex__deny *d, size_t *n, const char *real, size_t k,
		       size_t *given_of, size_t ngiven, const char *given,
		       struct govex__deny_fault *f)
{
	size_t rl = strlen(real);
	const char *base = strrchr(real, '/');
	if (rl < 4 || strcmp(real + rl - 3, ".py") != 0 || !base)
		return 0;
	base++;
	size_t bl = (size_t)(real + rl - 3 - base); /* NAME */
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%.*s__pycache__", (int)(base - real), real) >=
	    sizeof(dir))
		return 0;
	DIR *dp = opendir(dir);
	if (!dp) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return fault(f, "deny_unverifiable", given,
			     "filesystem.deny '%.200s': its compiled copies in '%.300s' cannot "
			     "be listed (%s): refused rather than left readable",
			     given, dir, strerror(errno));
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(dp))) {
		size_t nl = strlen(de->d_name);
		if (nl <= bl + 5 || strncmp(de->d_name, base, bl) != 0 || de->d_name[bl] != '.' ||
		    strcmp(de->d_name + nl - 4, ".pyc") != 0)
			continue;
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue; /* no interpreter opens it either */
		char *pr = realpath(path, NULL);
		struct stat st;
		if (!pr || lstat(pr, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(pr);
			continue; /* not a file the interpreter could load */
		}
		if (st.st_nlink > 1)
			r = fault(
			    f, "deny_hardlinked", given,
			    "filesystem.deny '%.200s': its compiled copy '%.300s' has %lu hard "
			    "links: another name would reach it unmasked; remove the other "
			    "links",
			    given, pr, (unsigned long)st.st_nlink);
		bool added = false;
		size_t before = *n;
		if (r == 0)
			r = mask_add(d, n, pr, false, &added);
		if (added && before < ngiven)
			given_of[before] = k;
		free(pr);
	}
	closedir(dp);
	return r;
}

int govex__deny_resolve(const govex_policy *p, const struct govex__interp *in,
			struct govex__deny *ret, struct govex__deny_fault *f)
{
	memset(ret, 0, sizeof(*ret));
	memset(f, 0, sizeof(*f));
	if (!p->deny_paths || !p->deny_paths[0])
		return 0;
	struct govex__deny d = {0};
	struct place *pv = NULL;
	size_t np = 0, n = 0;
	int r = places_of(p, in, &pv, &np);
	if (r < 0)
		return r;
	if (!(d.pins = calloc(1, sizeof(char *))) || !(d.paths = calloc(1, sizeof(char *)))) {
		r = -ENOMEM;
		goto out;
	}
	/* each policy path, then (appended) the aliases found; `given` names the
	 * policy's path the entry came from */
	size_t given_of[512];
	for (size_t k = 0; p->deny_paths[k]; k++) {
		const char *given = p->deny_paths[k];
		char *real = realpath(given, NULL);
		if (!real) {
			r = fault(f, "deny_path_unresolvable", given,
				  "filesystem.deny '%.200s' cannot be resolved on this host: %s "
				  "(a path to deny must exist: it is masked where it is)",
				  given, strerror(errno));
			goto out;
		}
		if ((r = writable_link(given, pv, np, f)) != 0) {
			free(real);
			goto out;
		}
		struct stat st;
		if (lstat(real, &st) < 0) {
			r = fault(f, "deny_path_unresolvable", given,
				  "filesystem.deny '%.200s': %s", given, strerror(errno));
			free(real);
			goto out;
		}
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			r = fault(f, "deny_path_type", given,
				  "filesystem.deny '%.200s' (%.200s) is neither a directory nor a "
				  "regular file",
				  given, real);
			free(real);
			goto out;
		}
		if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
			r = fault(f, "deny_hardlinked", given,
				  "filesystem.deny '%.200s' (%.200s) has %lu hard links: another "
				  "name would reach the same file unmasked; remove the other links",
				  given, real, (unsigned long)st.st_nlink);
			free(real);
			goto out;
		}
		bool added;
		size_t before = n;
		r = mask_add(&d, &n, real, S_ISDIR(st.st_mode), &added);
		free(real);
		if (r < 0)
			goto out;
		if (added && before < ARRAY_SIZE(given_of))
			given_of[before] = k;
		if (added && S_ISREG(st.st_mode) &&
		    (r = pycache_add(&d, &n, d.paths[before], k, given_of, ARRAY_SIZE(given_of),
				     given, f)) != 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (i >= ARRAY_SIZE(given_of)) {
			r = fault(f, "deny_too_many", p->deny_paths[0],
				  "filesystem.deny: more than %zu paths with their aliases",
				  ARRAY_SIZE(given_of));
			goto out;
		}
		size_t before = n;
		const char *given = p->deny_paths[given_of[i]];
		if ((r = check_one(p, in, pv, np, &d, &n, i, given, f)) != 0)
			goto out;
		for (size_t j = before; j < n && j < ARRAY_SIZE(given_of); j++)
			given_of[j] = given_of[i];
	}
	/* a path beneath a masked directory is hidden by that mask already (and no mount
	 * point could be made in it); so is a pin there, and a pin that is itself masked
	 * is masked, not pinned (its parent is pinned) */
	unsigned char *inside = calloc(n ? n : 1, 1);
	if (!inside) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (j != i && d.isdir[j] && strictly_under(d.paths[i], d.paths[j]))
				inside[i] = 1;
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (inside[i]) {
			free(d.paths[i]);
			continue;
		}
		d.isdir[w] = d.isdir[i];
		d.paths[w++] = d.paths[i];
	}
	free(inside);
	d.paths[w] = NULL;
	n = w;
	w = 0;
	for (size_t i = 0; d.pins[i]; i++) {
		bool masked = false;
		for (size_t j = 0; j < n; j++)
			if (govex__path_under(d.pins[i], d.paths[j]))
				masked = true;
		if (masked) {
			free(d.pins[i]);
			continue;
		}
		d.pins[w++] = d.pins[i];
	}
	d.pins[w] = NULL;
	govex__strv_sort_uniq(d.pins);
	*ret = d;
	d = (struct govex__deny){0};
	r = 0;
out:
	govex__deny_free(&d);
	for (size_t i = 0; i < np; i++)
		free(pv[i].real);
	free(pv);
	return r;
}
