/* SPDX-License-Identifier: MIT */
/*
 * The environment's packages: what a run needs, beyond the interpreter, to import what
 * is installed (a venv's site-packages, or with python.site the system's), and the
 * digest that binds a plan to the environment as installed.
 *
 * Resolved once per runtime, when the interpreter is a venv or the policy asks for the
 * site directories, on the host, from the files alone: nothing of the environment runs
 * (an earlier design ran a probe of it in the probe sandbox; the code its .pth files run
 * could print any answer and, as root, choose which public files to name by what it
 * read: tests/escape/test_redteam_packages.py).  What is resolved:
 *   site    the directories site.py makes: site-packages (and Debian's dist-packages)
 *           of the venv, and of the base installation unless a venv's pyvenv.cfg
 *           excludes the system's; then the directories their .pth files' path lines
 *           name (site.addpackage's reading) that the run's uid could reach on the host
 *           (run_reachable: no 0700 directory above it, since a bind recreates its
 *           parents searchable).  Never /etc nor the root of a system tree; not what a
 *           .pth's import line adds at run time (an editable install's finder);
 *   libs    the shared libraries the packages' ELF objects (*.so, *.so.N) need:
 *           DT_NEEDED resolved by the loader's rules (elfdeps.c), recursively, kept as
 *           the loader opens them (their symlinks, /etc/alternatives, bound too);
 *   data    the targets of symlinks that lead out of the site directories, unless a
 *           system tree's root, under /etc (but a regular file: certifi's bundle), or
 *           out of the run's reach (link_target_bound); and govex's own table of data
 *           files the common stack reads, for the distributions installed (data_table);
 *   dists   the distributions, by their metadata directories' names.
 * All of it goes to the interpreter's env_files, which the restricted backend binds
 * read-only (following symlinks) and the protected paths keep from every write root.
 * Nothing is cached across processes: resolving Debian's ~20,000-entry dist-packages
 * with numpy, pandas and matplotlib takes ~40 ms here (readdir's d_type, a stat only where
 * it says nothing, an ELF read per shared object).
 *
 * The digest is computed here from what is installed: the interpreter, a venv's
 * pyvenv.cfg, and per site directory its .pth files and each distribution's name and
 * version (its directory's name) with its RECORD (dist-info) or installed-files.txt
 * (egg-info), or the identity of its metadata where it has neither.  Not every byte of
 * every file: a file edited in place after installation is not seen.  Each planning
 * re-checks the identities (device, inode, mtime, ctime) of the site directories and
 * pyvenv.cfg, and recomputes the digest when one changed: installing or removing a
 * distribution changes its directory.  A changed digest refuses the run
 * (environment_changed): this runtime's binds were resolved for the old one.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "packages.h"

#define SITE_MAX   64
#define LIBS_MAX   4000
#define WALK_MAX   400000
#define RECORD_MAX (16u << 20)

void govex__packages_free(struct govex__packages *pk)
{
	govex__strv_free(pk->site);
	govex__strv_free(pk->libs);
	govex__strv_free(pk->data);
	json_decref(pk->dists);
	free(pk->ids);
	memset(pk, 0, sizeof(*pk));
}

/* What the common stack reads from outside its own package, by distribution (as its
 * metadata directory names it, lowercase): Debian's matplotlib keeps its rc file in /etc
 * and its data in /usr/share; pandas and pytz (Debian's) read the system's zoneinfo. */
static const struct {
	const char *dist;
	const char *path;
} data_table[] = {
    {"matplotlib", "/etc/matplotlibrc"},	{"matplotlib", "/usr/share/matplotlib"},
    {"pandas", "/usr/share/zoneinfo"},		{"pytz", "/usr/share/zoneinfo"},
    {"python-dateutil", "/usr/share/zoneinfo"},
};

/* ---- the digest ---------------------------------------------------------------------- */

static void feed_identity(FILE *k, const char *what, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		fprintf(k, "%s %s -\n", what, path);
		return;
	}
	fprintf(k, "%s %s %llu %llu %lld %lld.%09ld %lld.%09ld\n", what, path,
		(unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
		(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
		st.st_ctim.tv_nsec);
}

/* A file's bytes into the key (at most RECORD_MAX), or its absence. */
static void feed_file(FILE *k, const char *what, int dfd, const char *name)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(k, "%s %s -\n", what, name);
		return;
	}
	fprintf(k, "%s %s %lld\n", what, name, (long long)st.st_size);
	char buf[65536];
	size_t total = 0;
	ssize_t n;
	while (total < RECORD_MAX && (n = read(fd, buf, sizeof(buf))) > 0) {
		fwrite(buf, 1, (size_t)n, k);
		total += (size_t)n;
	}
	fputc('\n', k);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* One site directory's part of the key: its .pth files and distributions, sorted.  0 or
 * -ENOMEM. */
static int feed_site(FILE *k, const char *dir)
{
	fprintf(k, "site %s\n", dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dup(dfd)) : NULL;
	if (!d) {
		fputs("unreadable\n", k);
		return 0;
	}
	char **names = calloc(1, sizeof(char *));
	struct dirent *e;
	while (names && (e = readdir(d)))
		if ((ends_with(e->d_name, ".pth") || ends_with(e->d_name, ".dist-info") ||
		     ends_with(e->d_name, ".egg-info") || ends_with(e->d_name, ".egg-link")) &&
		    govex__strv_push(&names, e->d_name) < 0)
			names = govex__strv_free(names);
	closedir(d);
	if (!names)
		return -ENOMEM;
	size_t n = govex__strv_len(names);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		const char *nm = names[i];
		char sub[PATH_MAX];
		if (ends_with(nm, ".pth") || ends_with(nm, ".egg-link")) {
			feed_file(k, "pth", dfd, nm);
			continue;
		}
		fprintf(k, "dist %s\n", nm);
		_cleanup_close_ int mfd =
		    openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (mfd < 0) { /* an egg-info file: its identity */
			snprintf(sub, sizeof(sub), "%s/%s", dir, nm);
			feed_identity(k, "meta", sub);
			continue;
		}
		if (ends_with(nm, ".dist-info")) {
			feed_file(k, "record", mfd, "RECORD");
		} else {
			feed_file(k, "files", mfd, "installed-files.txt");
			snprintf(sub, sizeof(sub), "%s/%s/PKG-INFO", dir, nm);
			feed_identity(k, "meta", sub);
		}
	}
	govex__strv_free(names);
	return 0;
}

/* The identities the quick check compares: the site directories and pyvenv.cfg. */
static char *identities(const struct govex__interp *in, char *const *site)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *k = open_memstream(&buf, &len);
	if (!k)
		return NULL;
	for (size_t i = 0; site && site[i]; i++)
		feed_identity(k, "dir", site[i]);
	if (in->exec) {
		char cfg[PATH_MAX];
		snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", in->prefix);
		feed_identity(k, "cfg", cfg);
	}
	if (fclose(k) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int compute_digest(const struct govex__interp *in, char *const *site, char out[72])
{
	char *buf = NULL;
	size_t len = 0;
	FILE *k = open_memstream(&buf, &len);
	if (!k)
		return -ENOMEM;
	fprintf(k, "govex-packages-v1\ninterpreter %s %s\nexec %s\n", in->path, in->version,
		in->exec ? in->exec : "-");
	if (in->exec) {
		_cleanup_close_ int pfd = open(in->prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		feed_file(k, "cfg", pfd, "pyvenv.cfg");
	}
	bool ok = true;
	for (size_t i = 0; site && site[i]; i++)
		ok &= feed_site(k, site[i]) == 0;
	ok &= !ferror(k);
	if (fclose(k) != 0 || !ok || !buf) {
		free(buf);
		return -ENOMEM;
	}
	govex__sha256_digest(buf, len, out);
	free(buf);
	return 0;
}

int govex__packages_current(struct govex__packages *pk, const struct govex__interp *in,
			    char out[72])
{
	_cleanup_free_ char *ids = identities(in, pk->site);
	if (!ids)
		return -ENOMEM;
	if (pk->ids && strcmp(ids, pk->ids) == 0) {
		memcpy(out, pk->now, 72);
		return 0;
	}
	int r = compute_digest(in, pk->site, pk->now);
	if (r < 0)
		return r;
	free(pk->ids);
	pk->ids = TAKE_PTR(ids);
	memcpy(out, pk->now, 72);
	return 0;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The host's configuration (the sandbox's /etc is its own: contract section 5) or the
 * root of a whole system tree (mounts.c, system_tree): never the environment's as a
 * directory, however it is named. */
static bool system_dir(const char *p)
{
	static const char *const roots[] = {"/usr",  "/usr/local", "/usr/lib", "/usr/share", "/opt",
					    "/home", "/root",	   "/var",     "/srv",	     "/tmp",
					    "/run",  "/mnt",	   "/media",   "/boot"};
	if (!govex__interp_path_ok(p) || govex__path_under(p, "/etc"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (strcmp(p, roots[i]) == 0)
			return true;
	return false;
}

/* Whether the run's identity could reach real (a resolved path) on the host without the
 * sandbox: every directory above it searchable and real itself readable (a directory:
 * searchable) -- as root by others (a run's uid is a sandbox uid of no group), else by
 * the caller (whom the run's user namespace maps).  A bind recreates a path's parents
 * searchable inside: what a symlink or a .pth line of the environment names outside its
 * installation must not become readable through that past a 0700 directory (another
 * user's venv naming the caller's private files). */
static bool run_reachable(const char *real)
{
	char buf[PATH_MAX];
	struct stat st;
	bool root = geteuid() == 0;
	if ((size_t)snprintf(buf, sizeof(buf), "%s", real) >= sizeof(buf) || stat(real, &st) < 0)
		return false;
	bool dir = S_ISDIR(st.st_mode);
	if (root ? !(st.st_mode & (dir ? S_IXOTH : S_IROTH)) : access(real, dir ? X_OK : R_OK) < 0)
		return false;
	for (char *slash = strrchr(buf, '/'); slash && slash != buf; slash = strrchr(buf, '/')) {
		*slash = '\0';
		if (root ? stat(buf, &st) < 0 || !(st.st_mode & S_IXOTH) : access(buf, X_OK) < 0)
			return false;
	}
	return true;
}

/* A symlink's target the sandbox may get: one the run could reach on the host, not a
 * system directory, and under /etc only a regular file (python3-certifi's cacert.pem ->
 * /etc/ssl/certs/ca-certificates.crt). */
static bool link_target_bound(const char *t)
{
	struct stat st;
	if (!run_reachable(t))
		return false;
	if (!system_dir(t))
		return true;
	return govex__path_under(t, "/etc") && strcmp(t, "/etc") != 0 && stat(t, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

static bool under_any(const char *p, char *const *dirs)
{
	for (size_t i = 0; dirs && dirs[i]; i++)
		if (govex__path_under(p, dirs[i]))
			return true;
	return false;
}

/* ---- resolving, on the host ------------------------------------------------------------ */

/* Whether a venv's pyvenv.cfg says include-system-site-packages = true. */
static bool venv_includes_system(const struct govex__interp *in)
{
	char cfg[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len;
	if ((size_t)snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", in->prefix) >= sizeof(cfg) ||
	    govex__read_file(cfg, 1u << 16, &text, &len, NULL) < 0 || memchr(text, 0, len))
		return false;
	bool yes = false;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char key[64], val[16];
		if (sscanf(line, " %63[^= \t] = %15s", key, val) == 2 &&
		    strcmp(key, "include-system-site-packages") == 0)
			yes = strcasecmp(val, "true") == 0;
	}
	return yes;
}

static int push_dir_once(char ***v, const char *d)
{
	return govex__strv_contains(*v, d) ? 0 : govex__strv_push(v, d);
}

/* The site directories, as site.py makes them (posix, and Debian's dist-packages): of
 * the venv, and of the base installation when it is not a venv or its pyvenv.cfg includes
 * the system's; then what a .pth path line of theirs names (site_derived's rules). */
static int derive_site(const struct govex__interp *in, char ***ret)
{
	const char *prefixes[2] = {in->prefix, NULL};
	if (in->exec && venv_includes_system(in))
		prefixes[1] = in->base_prefix;
	char **site = calloc(1, sizeof(char *));
	if (!site)
		return -ENOMEM;
	for (size_t p = 0; p < ARRAY_SIZE(prefixes); p++) {
		if (!prefixes[p])
			continue;
		char d[5][PATH_MAX];
		const char *P = prefixes[p];
		int M = in->major, m = in->minor;
		snprintf(d[0], PATH_MAX, "%s/lib/python%d.%d/site-packages", P, M, m);
		snprintf(d[1], PATH_MAX, "%s/lib64/python%d.%d/site-packages", P, M, m);
		snprintf(d[2], PATH_MAX, "%s/local/lib/python%d.%d/dist-packages", P, M, m);
		snprintf(d[3], PATH_MAX, "%s/lib/python3/dist-packages", P);
		snprintf(d[4], PATH_MAX, "%s/lib/python%d.%d/dist-packages", P, M, m);
		for (size_t f = 0; f < ARRAY_SIZE(d); f++) {
			if (!is_dir(d[f]) || system_dir(d[f]))
				continue;
			_cleanup_free_ char *real = realpath(d[f], NULL);
			bool again = false; /* (a venv's lib64 is a symlink to its lib) */
			for (size_t i = 0; real && site[i] && !again; i++) {
				_cleanup_free_ char *ri = realpath(site[i], NULL);
				again = ri && strcmp(ri, real) == 0;
			}
			if (!real || again || system_dir(real))
				continue;
			if (push_dir_once(&site, d[f]) < 0) {
				govex__strv_free(site);
				return -ENOMEM;
			}
		}
	}
	/* .pth path lines of those (not of the directories they add: site.py reads .pth
	 * files in site directories only) */
	size_t nbase = govex__strv_len(site);
	for (size_t i = 0; i < nbase && govex__strv_len(site) < SITE_MAX; i++) {
		DIR *dd = opendir(site[i]);
		struct dirent *e;
		size_t files = 0;
		while (dd && files < 1000 && (e = readdir(dd))) {
			if (!ends_with(e->d_name, ".pth"))
				continue;
			files++;
			char p[PATH_MAX];
			_cleanup_free_ char *text = NULL;
			size_t len;
			if ((size_t)snprintf(p, sizeof(p), "%s/%s", site[i], e->d_name) >=
				sizeof(p) ||
			    govex__read_file(p, 1u << 20, &text, &len, NULL) < 0 ||
			    memchr(text, 0, len))
				continue;
			for (char *line = text, *next; line && *line; line = next) {
				next = strchr(line, '\n');
				if (next)
					*next++ = '\0';
				size_t n = strlen(line);
				while (n && strchr(" \t\r\f\v", line[n - 1]))
					line[--n] = '\0';
				if (!n || line[0] == '#' || strncmp(line, "import ", 7) == 0 ||
				    strncmp(line, "import\t", 7) == 0)
					continue;
				char c[PATH_MAX];
				if ((size_t)snprintf(c, sizeof(c), "%s%s%s",
						     line[0] == '/' ? "" : site[i],
						     line[0] == '/' ? "" : "/", line) >= sizeof(c))
					continue;
				_cleanup_free_ char *real = realpath(c, NULL);
				if (!real || !is_dir(real) || system_dir(real) ||
				    !govex__interp_path_ok(real) || !run_reachable(real))
					continue;
				if (push_dir_once(&site, real) < 0) {
					closedir(dd);
					govex__strv_free(site);
					return -ENOMEM;
				}
			}
		}
		if (dd)
			closedir(dd);
	}
	*ret = site;
	return 0;
}

/* The walk of the site directories: readdir's d_type, a stat only where it says
 * nothing (no stat per file: Debian's dist-packages holds ~20,000 entries) */
struct walk {
	char **site;
	char **objects; /* ELF candidates: *.so, *.so.N */
	char **targets; /* symlinks' targets out of the site directories, to bind */
	size_t entries;
	int err;
};

static void walk_dir(struct walk *w, const char *path, int depth)
{
	DIR *d = depth <= 32 ? opendir(path) : NULL;
	struct dirent *e;
	while (d && !w->err && (e = readdir(d))) {
		const char *n = e->d_name;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (++w->entries > WALK_MAX)
			break;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, n) >= sizeof(p))
			continue;
		unsigned char type = e->d_type;
		struct stat st;
		if (type == DT_UNKNOWN) {
			if (lstat(p, &st) < 0)
				continue;
			type = S_ISDIR(st.st_mode)   ? DT_DIR
			       : S_ISLNK(st.st_mode) ? DT_LNK
			       : S_ISREG(st.st_mode) ? DT_REG
						     : DT_UNKNOWN;
		}
		if (type == DT_DIR) {
			walk_dir(w, p, depth + 1);
		} else if (type == DT_LNK) {
			_cleanup_free_ char *t = realpath(p, NULL);
			if (t && govex__interp_path_ok(t) && !under_any(t, w->site) &&
			    link_target_bound(t) && !govex__strv_contains(w->targets, t) &&
			    govex__strv_push(&w->targets, t) < 0)
				w->err = -ENOMEM;
		} else if (type == DT_REG && strstr(n, ".so") &&
			   (ends_with(n, ".so") || strstr(n, ".so."))) {
			if (govex__strv_push(&w->objects, p) < 0)
				w->err = -ENOMEM;
		}
	}
	if (d)
		closedir(d);
}

/* "$ORIGIN"/"${ORIGIN}" in an rpath entry, expanded to the object's directory. */
static char *expand_origin(const char *entry, const char *object)
{
	const char *slash = strrchr(object, '/');
	size_t olen = slash ? (size_t)(slash - object) : 0;
	char out[PATH_MAX];
	size_t n = 0;
	for (const char *c = entry; *c && n + 1 < sizeof(out);) {
		size_t skip = strncmp(c, "${ORIGIN}", 9) == 0 ? 9
			      : strncmp(c, "$ORIGIN", 7) == 0 ? 7
							      : 0;
		if (skip) {
			if (n + olen >= sizeof(out))
				return NULL;
			memcpy(out + n, object, olen);
			n += olen;
			c += skip;
		} else {
			out[n++] = *c++;
		}
	}
	out[n] = '\0';
	return strdup(out);
}

/* path with its directory resolved (its last component kept: a symlink there, such as
 * libblas.so.3 -> /etc/alternatives/..., is what the sandbox's plan must keep) */
static int canon_dir(const char *path, char out[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	if (path[0] != '/' || !slash || !slash[1] || strcmp(slash, "/..") == 0 ||
	    strcmp(slash, "/.") == 0)
		return -EINVAL;
	char *dir = strndup(path, (size_t)(slash - path));
	char *real = dir ? realpath(dir[0] ? dir : "/", NULL) : NULL;
	int r = real && (size_t)snprintf(out, PATH_MAX, "%s%s", strcmp(real, "/") ? real : "",
					 slash) < PATH_MAX
		    ? 0
		    : -EINVAL;
	free(dir);
	free(real);
	return r;
}

/* Where the loader finds needed name for object (its deps d, its loaders' rpath): the
 * first candidate that is an ELF shared object of the same machine, normalized. */
static char *resolve_needed(const char *name, const char *object, const struct govex__elf_deps *d,
			    char *const *loader_rpath, const struct govex__ldcache *cache)
{
	char **cands = calloc(1, sizeof(char *));
	char *found = NULL;
	if (!cands)
		return NULL;
	if (strchr(name, '/')) {
		govex__strv_push(&cands, name);
	} else {
		char *const *lists[] = {d->runpath ? NULL : d->rpath,
					d->runpath ? NULL : loader_rpath, d->runpath};
		for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
			for (size_t i = 0; lists[l] && lists[l][i]; i++) {
				char *dir = expand_origin(lists[l][i], object);
				char *c = NULL;
				if (dir && asprintf(&c, "%s/%s", dir, name) >= 0)
					govex__strv_push_take(&cands, c);
				free(dir);
			}
		size_t it = 0;
		const char *v;
		while ((v = govex__ldcache_next(cache, name, &it)))
			govex__strv_push(&cands, v);
		static const char *const dflt[] = {"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
		for (size_t i = 0; i < ARRAY_SIZE(dflt); i++) {
			char *c = NULL;
			if (asprintf(&c, "%s/%s", dflt[i], name) >= 0)
				govex__strv_push_take(&cands, c);
		}
	}
	for (size_t i = 0; cands && cands[i] && !found; i++) {
		struct govex__elf_deps cd;
		char norm[PATH_MAX];
		if (canon_dir(cands[i], norm) < 0)
			continue;
		if (govex__elf_deps(norm, &cd) == 0) {
			/* (and one the run could reach on the host: another user's venv's
			 * DT_RUNPATH into a 0700 directory binds nothing from it) */
			char *real = cd.machine == d->machine && govex__interp_path_ok(norm)
					 ? realpath(norm, NULL)
					 : NULL;
			if (real && run_reachable(real))
				found = strdup(norm);
			free(real);
			govex__elf_deps_free(&cd);
		}
	}
	govex__strv_free(cands);
	return found;
}

/* The libraries the objects need, recursively, outside the site directories (as the
 * loader opens them: through their symlinks). */
static int resolve_libs(struct govex__packages *pk, char **objects)
{
	struct govex__ldcache cache;
	govex__ldcache_load("/etc/ld.so.cache", &cache);
	/* the work: (object, its loaders' rpath), objects first */
	struct item {
		char *path;
		char **rpath;
	};
	size_t cap = govex__strv_len(objects) + LIBS_MAX + 1, n = 0, seen_n = 0;
	struct item *work = calloc(cap, sizeof(*work));
	char **seen = calloc(1, sizeof(char *));
	int r = work && seen ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && objects[i]; i++)
		if (!(work[n++].path = strdup(objects[i])))
			r = -ENOMEM;
	while (r == 0 && n > 0 && seen_n < LIBS_MAX + 64 * 1024) {
		struct item it = work[--n];
		_cleanup_free_ char *real = realpath(it.path, NULL);
		struct govex__elf_deps d;
		if (!real || govex__strv_contains(seen, real) || govex__elf_deps(it.path, &d) < 0) {
			free(it.path);
			govex__strv_free(it.rpath);
			continue;
		}
		seen_n++;
		if (govex__strv_push(&seen, real) < 0)
			r = -ENOMEM;
		char **rp = govex__strv_copy(it.rpath ? it.rpath : (char *[]){NULL});
		for (size_t i = 0; rp && !d.runpath && d.rpath && d.rpath[i]; i++)
			govex__strv_push_take(&rp, expand_origin(d.rpath[i], it.path));
		for (size_t i = 0; r == 0 && d.needed && d.needed[i]; i++) {
			char *lib = resolve_needed(d.needed[i], it.path, &d, it.rpath, &cache);
			if (!lib)
				continue; /* (the import fails in the run, as it would here) */
			if (!under_any(lib, pk->site) && !govex__strv_contains(pk->libs, lib) &&
			    govex__strv_len(pk->libs) < LIBS_MAX &&
			    govex__strv_push(&pk->libs, lib) < 0)
				r = -ENOMEM;
			if (n < cap)
				work[n++] = (struct item){lib, govex__strv_copy(rp)};
			else
				free(lib);
		}
		govex__strv_free(rp);
		govex__elf_deps_free(&d);
		free(it.path);
		govex__strv_free(it.rpath);
	}
	while (work && n > 0) {
		free(work[--n].path);
		govex__strv_free(work[n].rpath);
	}
	free(work);
	govex__strv_free(seen);
	govex__ldcache_free(&cache);
	return r;
}

/* The distributions (their metadata directories' names) and the data table's files. */
static int find_dists(struct govex__packages *pk)
{
	if (!(pk->dists = json_array()))
		return -ENOMEM;
	for (size_t s = 0; pk->site[s]; s++) {
		DIR *d = opendir(pk->site[s]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			const char *suf = ends_with(e->d_name, ".dist-info")  ? ".dist-info"
					  : ends_with(e->d_name, ".egg-info") ? ".egg-info"
									      : NULL;
			if (!suf || json_array_size(pk->dists) >= 100000)
				continue;
			size_t stem = strlen(e->d_name) - strlen(suf);
			const char *dash = memchr(e->d_name, '-', stem);
			size_t nl = dash ? (size_t)(dash - e->d_name) : stem;
			const char *ver = dash ? dash + 1 : "";
			size_t vl = dash ? stem - nl - 1 : 0;
			const char *py = vl ? memmem(ver, vl, "-py", 3) : NULL;
			if (py)
				vl = (size_t)(py - ver);
			if (!nl || nl > 200 || vl > 100)
				continue;
			json_array_append_new(
			    pk->dists, json_pack("[s#,s#]", e->d_name, (int)nl, ver, (int)vl));
			for (size_t t = 0; t < ARRAY_SIZE(data_table); t++)
				if (strlen(data_table[t].dist) == nl &&
				    strncasecmp(e->d_name, data_table[t].dist, nl) == 0 &&
				    access(data_table[t].path, F_OK) == 0 &&
				    !govex__strv_contains(pk->data, data_table[t].path) &&
				    govex__strv_push(&pk->data, data_table[t].path) < 0) {
					closedir(d);
					return -ENOMEM;
				}
		}
		if (d)
			closedir(d);
	}
	return 0;
}

int govex__packages_resolve(struct govex__packages *pk, const struct govex__interp *in,
			    struct govex_error *err)
{
	memset(pk, 0, sizeof(*pk));
	struct walk w = {0};
	int r = derive_site(in, &pk->site);
	if (r == 0 && !(pk->data = calloc(1, sizeof(char *))))
		r = -ENOMEM;
	if (r == 0 && !(pk->libs = calloc(1, sizeof(char *))))
		r = -ENOMEM;
	if (r == 0) {
		w.site = pk->site;
		w.objects = calloc(1, sizeof(char *));
		w.targets = calloc(1, sizeof(char *));
		for (size_t i = 0; w.objects && w.targets && pk->site[i] && !w.err; i++)
			walk_dir(&w, pk->site[i], 0);
		r = !w.objects || !w.targets ? -ENOMEM : w.err;
	}
	if (r == 0)
		r = resolve_libs(pk, w.objects);
	for (size_t i = 0; r == 0 && w.targets[i]; i++)
		if (!govex__strv_contains(pk->data, w.targets[i]))
			r = govex__strv_push(&pk->data, w.targets[i]);
	if (r == 0)
		r = find_dists(pk);
	govex__strv_free(w.objects);
	govex__strv_free(w.targets);
	if (r == 0) {
		govex__strv_sort_uniq(pk->libs);
		govex__strv_sort_uniq(pk->data);
		r = govex__packages_current(pk, in, pk->digest);
	}
	if (r < 0) {
		govex__packages_free(pk);
		return govex__err(err, -r, -r, "packages: %s", strerror(-r));
	}
	return 0;
}

int govex__packages_bind(const struct govex__packages *pk, struct govex__interp *in)
{
	char **v[] = {pk->site, pk->libs, pk->data};
	for (size_t k = 0; k < ARRAY_SIZE(v); k++)
		for (size_t i = 0; v[k] && v[k][i]; i++)
			if (govex__strv_push(&in->env_files, v[k][i]) < 0)
				return -ENOMEM;
	if (!in->env_files && !(in->env_files = calloc(1, sizeof(char *))))
		return -ENOMEM;
	govex__strv_sort_uniq(in->env_files);
	return 0;
}

json_t *govex__packages_json(const struct govex__packages *pk, char *const *preload)
{
	/* "name==version", sorted, unique */
	char **dists = calloc(1, sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(pk->dists, i, e)
	{
		char *s = NULL;
		if (!dists ||
		    asprintf(&s, "%s==%s", json_string_value(json_array_get(e, 0)),
			     json_string_value(json_array_get(e, 1))) < 0 ||
		    govex__strv_push_take(&dists, s) < 0) {
			govex__strv_free(dists);
			return NULL;
		}
	}
	if (!dists)
		return NULL;
	govex__strv_sort_uniq(dists);
	json_t *d = govex__strv_json(dists);
	govex__strv_free(dists);
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "digest", pk->digest, "site",
			 govex__strv_json(pk->site), "libraries", govex__strv_json(pk->libs),
			 "data", govex__strv_json(pk->data), "preload", govex__strv_json(preload),
			 "distributions", d);
}
