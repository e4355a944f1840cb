/* SPDX-License-Identifier: MIT */
/*
 * The environment's packages: what a run needs, beyond the interpreter, to import what
 * is installed (a venv's site-packages, or with python.site the system's), and the
 * digest that binds a plan to the environment as installed.
 *
 * Resolved once per runtime, when the interpreter is a venv or the policy asks for the
 * site directories (or preloads modules), by the environment probe
 * (src/worker/envprobe.py) run like the interpreter probe: inside the probe sandbox, or
 * on the host only for a run planned on the controlled backend.  Its answer is
 * untrusted (the probe runs the environment's .pth files) and is validated here before
 * anything uses it:
 *   site    existing directories, absolute and normalized, not under /proc, /sys, /dev,
 *           never /etc nor the root of a system tree (/usr, /home, ...), each one the
 *           host derives itself: a site-packages or dist-packages directory under the
 *           interpreter's prefix or base prefix, or a directory that a path line of a
 *           .pth file in one of those names (read here, as site.py reads it: what an
 *           editable install adds) that the run's uid could reach on the host (no
 *           0700 directory above it: a bind recreates its parents searchable).  The
 *           code a .pth runs in the probe can print any answer; it cannot make a host
 *           directory the environment's;
 *   libs    each resolves (through its symlinks) to a regular ELF shared object;
 *   links   each a symlink under a site directory whose target, resolved here, is the
 *           one the answer names (a target is bound read-only: the answer cannot name
 *           a file no symlink of the environment points to); a target that is a
 *           system tree's root, under /etc (but a regular file: certifi's bundle) or
 *           that the run's uid could not reach on the host is left unbound, the link
 *           dangling in the run;
 *   dists   names, which only select entries of govex's own table of data files the
 *           common stack reads (data_table): the answer names no data path itself.
 * What is accepted goes to the interpreter's env_files, which the restricted backend
 * binds read-only (following symlinks, so /etc/alternatives' links are kept) and the
 * protected paths keep from every write root.
 *
 * The digest is computed here, on the host, from what is installed: the interpreter, a
 * venv's pyvenv.cfg, and per site directory its .pth files and each distribution's name
 * and version (its directory's name) with its RECORD (dist-info) or installed-files.txt
 * (egg-info), or the identity of its metadata where it has neither.  Not every byte of
 * every file: a file edited in place after installation is not seen.  Each planning
 * re-checks the identities (device, inode, mtime, ctime) of the site directories and
 * pyvenv.cfg, and recomputes the digest when one changed: installing or removing a
 * distribution changes its directory.  A changed digest refuses the run
 * (environment_changed): this runtime's binds were resolved for the old one.
 *
 * The probe's answer is cached across processes under the interpreter's identity, with
 * the digest it was made for: a cached answer is used only when the digest is still
 * the environment's, and is validated like a fresh one.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "packages.h"

extern char **environ;
extern const char govex__envprobe_py[];

#define ENVPROBE_TIMEOUT_MS 30000
#define ENVPROBE_OUTPUT_MAX (4u << 20)
#define SITE_MAX	    64
#define LIBS_MAX	    4000
#define LINKS_MAX	    4000
#define RECORD_MAX	    (16u << 20)

void govex__packages_free(struct govex__packages *pk)
{
	govex__strv_free(pk->site);
	govex__strv_free(pk->libs);
	govex__strv_free(pk->data);
	json_decref(pk->dists);
	free(pk->ids);
	memset(pk, 0, sizeof(*pk));
}

static bool path_ok(const char *p)
{
	return p && govex__path_normalized(p) && strcmp(p, "/") != 0 &&
	       !govex__path_under(p, "/proc") && !govex__path_under(p, "/sys") &&
	       !govex__path_under(p, "/dev");
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

/* ---- the answer ---------------------------------------------------------------------- */

static int invalid(struct govex_error *err, const char *exe, const char *what, const char *p)
{
	return govex__err(err, GOVEX_EINTERP, 0,
			  "interpreter '%.100s': invalid environment probe answer: %s '%.150s'",
			  exe, what, p ? p : "(not a string)");
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
	if (!path_ok(p) || govex__path_under(p, "/etc"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (strcmp(p, roots[i]) == 0)
			return true;
	return false;
}

/* A site directory's own name: site-packages or dist-packages of an installation the
 * interpreter's probe validated (a venv's prefix, the base interpreter's). */
static bool base_site(const struct govex__interp *in, const char *d)
{
	const char *b = strrchr(d, '/');
	return b && (strcmp(b, "/site-packages") == 0 || strcmp(b, "/dist-packages") == 0) &&
	       ((in->prefix && govex__path_under(d, in->prefix)) ||
		(in->base_prefix && govex__path_under(d, in->base_prefix)));
}

/* Whether a path line of a .pth file in dir names the directory want (compared by
 * identity), as site.addpackage reads them: comments, blank and import lines skipped,
 * the rest stripped at the right and joined to dir. */
static bool pth_names(const char *dir, const struct stat *want)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool hit = false;
	size_t files = 0;
	while (d && !hit && files < 1000 && (e = readdir(d))) {
		if (!ends_with(e->d_name, ".pth"))
			continue;
		files++;
		char p[PATH_MAX];
		_cleanup_free_ char *text = NULL;
		size_t len;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p) ||
		    govex__read_file(p, 1u << 20, &text, &len, NULL) < 0 || memchr(text, 0, len))
			continue;
		for (char *line = text, *next; line && *line && !hit; line = next) {
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
			struct stat st;
			if ((size_t)snprintf(c, sizeof(c), "%s%s%s", line[0] == '/' ? "" : dir,
					     line[0] == '/' ? "" : "/", line) < sizeof(c) &&
			    stat(c, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == want->st_dev &&
			    st.st_ino == want->st_ino)
				hit = true;
		}
	}
	if (d)
		closedir(d);
	return hit;
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

/* A site directory of the answer that the host derives itself (the top of this file). */
static bool site_derived(const struct govex__interp *in, char *const *accepted, const char *d)
{
	_cleanup_free_ char *real = realpath(d, NULL);
	struct stat st;
	if (!real || system_dir(d) || system_dir(real) || stat(d, &st) < 0)
		return false;
	if (base_site(in, d))
		return true;
	for (size_t i = 0; accepted && accepted[i]; i++)
		if (base_site(in, accepted[i]) && pth_names(accepted[i], &st))
			return run_reachable(real);
	return false;
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

/* Resolves to a regular ELF shared object. */
static bool elf_dso(const char *p)
{
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	Elf64_Ehdr eh;
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	       memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_type == ET_DYN;
}

static bool under_any(const char *p, char *const *dirs)
{
	for (size_t i = 0; dirs && dirs[i]; i++)
		if (govex__path_under(p, dirs[i]))
			return true;
	return false;
}

static int decode(const struct govex__interp *in, const char *text, struct govex__packages *pk,
		  struct govex_error *err)
{
	const char *exe = in->exec ? in->exec : in->path;
	json_error_t je;
	_cleanup_json_ json_t *j = json_loads(text, 0, &je);
	json_t *site, *libs, *links, *dists, *unres;
	if (!j ||
	    json_unpack(j, "{s:o, s:o, s:o, s:o, s?o}", "site", &site, "libs", &libs, "links",
			&links, "dists", &dists, "unresolved", &unres) < 0 ||
	    !json_is_array(site) || !json_is_array(libs) || !json_is_array(links) ||
	    !json_is_array(dists) || json_array_size(site) > SITE_MAX ||
	    json_array_size(libs) > LIBS_MAX || json_array_size(links) > LINKS_MAX)
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.100s': unreadable environment probe answer", exe);
	size_t i;
	json_t *e;
	json_array_foreach(site, i, e)
	{
		const char *d = json_string_value(e);
		if (!path_ok(d) || !is_dir(d))
			return invalid(err, exe, "site directory", d);
		if (!site_derived(in, pk->site, d))
			return govex__err(
			    err, GOVEX_EINTERP, 0,
			    "interpreter '%.80s': invalid environment probe answer: "
			    "site directory '%.120s' is not the environment's (a "
			    "site-packages of its prefixes or a .pth path line the run "
			    "could read on the host; never /etc)",
			    exe, d);
		if (govex__strv_push(&pk->site, d) < 0)
			return -ENOMEM;
	}
	json_array_foreach(libs, i, e)
	{
		const char *l = json_string_value(e);
		if (!path_ok(l) || !elf_dso(l))
			return invalid(err, exe, "library", l);
		if (govex__strv_push(&pk->libs, l) < 0)
			return -ENOMEM;
	}
	json_array_foreach(links, i, e)
	{
		const char *l = json_string_value(json_array_get(e, 0));
		const char *t = json_string_value(json_array_get(e, 1));
		struct stat st;
		_cleanup_free_ char *real = l ? realpath(l, NULL) : NULL;
		if (!path_ok(l) || !under_any(l, pk->site) || lstat(l, &st) < 0 ||
		    !S_ISLNK(st.st_mode) || !real || !t || strcmp(real, t) != 0 || !path_ok(t) ||
		    under_any(t, pk->site))
			return invalid(err, exe, "symlink", l);
		if (link_target_bound(t) && govex__strv_push(&pk->data, t) < 0)
			return -ENOMEM;
	}
	pk->dists = json_array();
	if (!pk->dists)
		return -ENOMEM;
	json_array_foreach(dists, i, e)
	{
		const char *name = json_string_value(json_array_get(e, 0));
		const char *ver = json_string_value(json_array_get(e, 1));
		if (!name || !ver || strlen(name) > 200 || strlen(ver) > 100 || i >= 100000)
			return invalid(err, exe, "distribution", name);
		json_array_append_new(pk->dists, json_pack("[s,s]", name, ver));
		for (size_t t = 0; t < ARRAY_SIZE(data_table); t++)
			if (strcasecmp(name, data_table[t].dist) == 0 &&
			    access(data_table[t].path, F_OK) == 0 &&
			    !govex__strv_contains(pk->data, data_table[t].path) &&
			    govex__strv_push(&pk->data, data_table[t].path) < 0)
				return -ENOMEM;
	}
	pk->unresolved = unres ? json_array_size(unres) : 0;
	govex__strv_sort_uniq(pk->libs);
	govex__strv_sort_uniq(pk->data);
	return 0;
}

/* ---- resolving ----------------------------------------------------------------------- */

static int run_envprobe(const struct govex__interp *in, enum govex__probe_mode mode, char **ret_out,
			struct govex_error *err)
{
	const char *exe = in->exec ? in->exec : in->path;
	char *argv[] = {(char *)exe, "-I", "-S", "-c", (char *)govex__envprobe_py, NULL};
	if (mode == GOVEX_PROBE_HOST)
		return govex__probe_host(exe, argv, ENVPROBE_OUTPUT_MAX, ENVPROBE_TIMEOUT_MS,
					 ret_out, err);
	return govex__probe_sandboxed(exe, argv, environ, ENVPROBE_OUTPUT_MAX, ENVPROBE_TIMEOUT_MS,
				      ret_out, err);
}

/* The answer's cache entry: "pkgs-v1-<id digest>.json", keyed by the interpreter's
 * identity; the payload is {"digest": the environment's when probed, "answer": ...}. */
static char *cache_key(const struct govex__interp *in)
{
	struct stat st;
	char *s = NULL;
	if (stat(in->path, &st) < 0 ||
	    asprintf(&s, "pkgs-v1|%s|%s|%llu|%llu|%lld.%ld", in->path, in->exec ? in->exec : "-",
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) < 0)
		return NULL;
	if (strchr(s, '\n')) {
		free(s);
		return NULL;
	}
	return s;
}

static int accept_cached(const struct govex__interp *in, const char *payload,
			 struct govex__packages *pk)
{
	_cleanup_json_ json_t *j = json_loads(payload, 0, NULL);
	const char *dg = json_string_value(json_object_get(j, "digest"));
	const char *answer = json_string_value(json_object_get(j, "answer"));
	char now[72];
	if (!dg || !answer || decode(in, answer, pk, NULL) < 0 ||
	    govex__packages_current(pk, in, now) < 0 || strcmp(now, dg) != 0) {
		govex__packages_free(pk);
		return -1;
	}
	memcpy(pk->digest, now, 72);
	return 0;
}

int govex__packages_resolve(struct govex__packages *pk, const struct govex__interp *in,
			    const char *cache_dir, enum govex__probe_mode mode,
			    struct govex_error *err)
{
	_cleanup_free_ char *key = NULL, *answer = NULL;
	_cleanup_close_ int dfd = -1;
	char name[64];
	int r;
	memset(pk, 0, sizeof(*pk));
	if (cache_dir && cache_dir[0] == '/' && (key = cache_key(in)) &&
	    (dfd = govex__cache_dir_open(cache_dir, true)) >= 0) {
		char dg[72];
		govex__sha256_digest(key, strlen(key), dg);
		snprintf(name, sizeof(name), "pkgs-v1-%.16s.json", dg + 7);
		_cleanup_free_ char *payload =
		    govex__cache_get(dfd, name, key, ENVPROBE_OUTPUT_MAX);
		if (payload && accept_cached(in, payload, pk) == 0)
			return 0;
	}
	if ((r = run_envprobe(in, mode, &answer, err)) < 0)
		return r;
	if ((r = decode(in, answer, pk, err)) < 0 ||
	    (r = govex__packages_current(pk, in, pk->digest)) < 0) {
		govex__packages_free(pk);
		return r == -ENOMEM ? govex__err(err, ENOMEM, ENOMEM, "packages: out of memory")
				    : r;
	}
	if (dfd >= 0) {
		json_t *p = json_pack("{s:s, s:s}", "digest", pk->digest, "answer", answer);
		char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
		if (text)
			govex__cache_put(dfd, name, key, text);
		free(text);
		json_decref(p);
		govex__cache_prune(dfd, "pkgs-v1-", 16);
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
