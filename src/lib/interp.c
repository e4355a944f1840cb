/* SPDX-License-Identifier: MIT */
/*
 * Interpreter probing: resolve the real executable (a `python3` on PATH may be a shell
 * shim, e.g. pyenv's, so the interpreter is asked for sys.executable), its version, its
 * prefixes, the directories it reads and the shared libraries it maps.
 *
 * The interpreter is code the policy names: it is never run on the host unconfined.  The
 * probe runs inside the restricted sandbox (backend/restricted/probe.c: read-only view of
 * the host, no network, no writes, no capabilities, seccomp, its own PID namespace).
 * Only when that sandbox is unavailable on this host may the caller ask for a probe on
 * the host (GOVEX_PROBE_HOST), and the runtime does so only for a run that will go to
 * the controlled backend, whose code is trusted by definition (it runs on the host as
 * the caller anyway).
 *
 * An answer, fresh or cached, is untrusted input and is validated before use
 * (govex__interp_validate): absolute normalized paths, the standard library under the
 * prefixes, libraries that are ELF shared objects, nothing under /proc, /sys or /dev,
 * no path "/"; the prefixes and the standard library existing directories.  An invalid
 * answer makes the interpreter unavailable.
 *
 * A probe costs one interpreter start.  The runtime caches it; with a cache directory it
 * is also cached across processes (cache.c: a checked directory and files), keyed by the
 * identity (device, inode, size, mtime, ctime) of the executable.  A script's answer
 * (which ELF it runs) depends on its environment, so it is cached across processes only
 * for a script whose inputs are known: a pyenv shim (pyenv_selection_key), keyed by
 * everything pyenv's version selection reads.  A generic script is never cached across
 * processes.  A cached answer that fails validation is ignored and rewritten.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "internal.h"
#include "runtime.h"

extern char **environ;

#define PROBE_TIMEOUT_MS 10000
#define PROBE_OUTPUT_MAX (256 * 1024)
/* probe-v1-* files kept (one per interpreter executable identity) */
#define PROBE_CACHE_KEEP 16

static const char probe_code[] =
    "import sys, json, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "libs = set()\n"
    "try:\n"
    "    with open('/proc/self/maps') as f:\n"
    "        for line in f:\n"
    "            parts = line.split(None, 5)\n"
    "            if len(parts) == 6 and '.so' in parts[5]:\n"
    "                libs.add(parts[5].strip())\n"
    "except OSError:\n"
    "    pass\n"
    "dyn = [d for d in sys.path if d.endswith('lib-dynload')]\n"
    "sys.stdout.write(json.dumps({'executable': sys.executable,\n"
    "    'version': '%d.%d.%d' % tuple(sys.version_info[:3]),\n"
    "    'major': sys.version_info[0], 'minor': sys.version_info[1],\n"
    "    'prefix': sys.prefix, 'base_prefix': getattr(sys, 'base_prefix', sys.prefix),\n"
    "    'stdlib': p.get('stdlib'), 'platstdlib': p.get('platstdlib'),\n"
    "    'dynload': dyn, 'libs': sorted(libs)}))\n";

void govex__interp_free(struct govex__interp *in)
{
	free(in->path);
	free(in->version);
	free(in->prefix);
	free(in->base_prefix);
	govex__strv_free(in->paths);
	govex__strv_free(in->libs);
	free(in->exec);
	govex__strv_free(in->env_files);
	if (in->deny) {
		govex__deny_free(in->deny);
		free(in->deny);
	}
	memset(in, 0, sizeof(*in));
}

static bool is_elf(const char *path)
{
	char m[4];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && read(fd, m, 4) == 4 && memcmp(m, "\177ELF", 4) == 0;
}

/*
 * Runs the probe ON THE HOST, unconfined: only for GOVEX_PROBE_HOST, which the runtime
 * asks for only when the restricted sandbox is unavailable and the run goes to the
 * controlled backend (trusted code; it runs the same interpreter on the host anyway).
 * stdout collected (bounded), stderr discarded, hard timeout.
 */
static int probe_host(const char *exe, char *const argv[], size_t out_max, uint64_t timeout_ms,
		      char **ret_out, struct govex_error *err)
{
	int out[2];
	int pr = govex__pipe(out, 0);
	if (pr < 0)
		return govex__err(err, -pr, -pr, "interpreter: pipe: %s", strerror(-pr));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	/* own group so a hung probe can be killed with its children */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					  POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&at, 0);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	pid_t pid;
	/* The caller's environment: a shim (pyenv) needs it to find the interpreter. */
	int r = posix_spawn(&pid, exe, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(out[1]);
	if (r != 0) {
		close(out[0]);
		return govex__err(err, GOVEX_EINTERP, r, "interpreter '%.120s': cannot start: %s",
				  exe, strerror(r));
	}
	size_t len = 0;
	char *buf = malloc(out_max + 1);
	uint64_t deadline = govex__now_ns() + timeout_ms * 1000000ULL;
	bool timed_out = false;
	while (buf) {
		uint64_t now = govex__now_ns();
		if (now >= deadline) {
			timed_out = true;
			break;
		}
		struct pollfd p = {.fd = out[0], .events = POLLIN};
		int n = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		ssize_t k = read(out[0], buf + len, out_max - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len == out_max)
			break;
	}
	close(out[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!buf)
		return -ENOMEM;
	buf[len] = '\0';
	if (timed_out || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(buf);
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.120s': probe %s (is it Python 3?)", exe,
				  timed_out ? "timed out" : "failed");
	}
	*ret_out = buf;
	return 0;
}

static int add_dir_of(char ***v, const char *file)
{
	const char *s = strrchr(file, '/');
	if (!s || s == file)
		return 0;
	char *d = strndup(file, (size_t)(s - file));
	return govex__strv_push_take(v, d);
}

bool govex__interp_path_ok(const char *p)
{
	return p && govex__path_normalized(p) && strcmp(p, "/") != 0 &&
	       !govex__path_under(p, "/proc") && !govex__path_under(p, "/sys") &&
	       !govex__path_under(p, "/dev");
}

/* "3.11.2": numbers only, matching major and minor. */
static bool version_ok(const char *v, int major, int minor)
{
	int part[3] = {0, 0, 0}, np = 0;
	size_t digits = 0;
	if (strlen(v) > 32)
		return false;
	for (const char *c = v;; c++) {
		if (*c >= '0' && *c <= '9') {
			if (++digits > 4)
				return false;
			part[np] = part[np] * 10 + (*c - '0');
		} else if ((*c == '.' || *c == '\0') && digits > 0 && np < 3) {
			np++;
			digits = 0;
			if (*c == '\0')
				break;
			if (np == 3)
				return false;
		} else {
			return false;
		}
	}
	return np == 3 && part[0] == major && part[1] == minor;
}

/* An existing directory: an answer names real places, not made-up strings. */
static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A regular ELF file of the given type (ET_DYN, ET_EXEC; 0 = either), not followed
 * through a symlink in its last component. */
static bool elf_file(const char *path, int type)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	Elf64_Ehdr eh;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return false;
	if (type)
		return eh.e_type == type;
	return eh.e_type == ET_DYN || eh.e_type == ET_EXEC;
}

/* The venv an interpreter named by path belongs to, as Python finds it: the directory
 * holding a regular pyvenv.cfg, the executable's own or its parent (malloc'd), or NULL. */
static char *venv_dir(const char *exe)
{
	char d[PATH_MAX];
	if (strlen(exe) >= sizeof(d))
		return NULL;
	memcpy(d, exe, strlen(exe) + 1);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(d, '/');
		if (!slash || slash == d)
			return NULL;
		*slash = '\0';
		char cfg[PATH_MAX + 16];
		struct stat st;
		snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", d);
		if (stat(cfg, &st) == 0 && S_ISREG(st.st_mode))
			return strdup(d);
	}
	return NULL;
}

/* Parses the answer's JSON; checks its form.  The files it names are checked by
 * govex__interp_validate. */
static int decode(const char *text, struct govex__interp *in, struct govex_error *err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loads(text, 0, &je);
	const char *exe = NULL, *ver = NULL, *prefix = NULL, *base = NULL, *stdlib = NULL,
		   *plat = NULL;
	json_t *dyn = NULL, *libs = NULL;
	int major = 0, minor = 0;
	if (!j ||
	    json_unpack(j, "{s:s, s:s, s:i, s:i, s:s, s:s, s?s, s?s, s:o, s:o}", "executable", &exe,
			"version", &ver, "major", &major, "minor", &minor, "prefix", &prefix,
			"base_prefix", &base, "stdlib", &stdlib, "platstdlib", &plat, "dynload",
			&dyn, "libs", &libs) < 0 ||
	    !json_is_array(dyn) || !json_is_array(libs))
		return govex__err(err, GOVEX_EINTERP, 0, "interpreter: unreadable probe answer");
	if (exe[0] != '/')
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter: sys.executable '%.100s' is not absolute", exe);
	if (major < 3)
		return govex__err(
		    err, GOVEX_EINTERP, 0,
		    "interpreter '%.100s': Python %.20s is not supported (3.x needed)", exe, ver);
	if (!version_ok(ver, major, minor))
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.100s': invalid probe answer: version '%.20s'",
				  exe, ver);
	/* every path as named, before anything is derived from it */
	const char *named[] = {exe, prefix, base, stdlib, plat};
	const char *what[] = {"executable", "prefix", "base_prefix", "stdlib", "platstdlib"};
	for (size_t k = 0; k < ARRAY_SIZE(named); k++)
		if (named[k] && !govex__interp_path_ok(named[k]))
			return govex__err(err, GOVEX_EINTERP, 0,
					  "interpreter '%.100s': invalid probe answer: %s '%.100s' "
					  "(an absolute normalized path, not /, not under /proc, "
					  "/sys or /dev, is required)",
					  exe, what[k], named[k]);
	if (!stdlib)
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.100s': invalid probe answer: no stdlib", exe);
	if (!is_dir(stdlib))
		return govex__err(
		    err, GOVEX_EINTERP, 0,
		    "interpreter '%.100s': invalid probe answer: stdlib '%.100s' is not "
		    "a directory",
		    exe, stdlib);
	bool under = false;
	const char *bad = NULL;
	under = govex__path_under(stdlib, prefix) || govex__path_under(stdlib, base);
	if (!under)
		bad = stdlib;
	if (plat && !govex__path_under(plat, prefix) && !govex__path_under(plat, base))
		bad = plat;
	size_t i;
	json_t *e;
	json_array_foreach(dyn, i, e)
	{
		const char *d = json_string_value(e);
		if (!d || !govex__interp_path_ok(d))
			return govex__err(err, GOVEX_EINTERP, 0,
					  "interpreter '%.100s': invalid probe answer: dynload "
					  "entry %zu",
					  exe, i);
		if (!govex__path_under(d, prefix) && !govex__path_under(d, base))
			bad = d;
	}
	if (bad)
		return govex__err(
		    err, GOVEX_EINTERP, 0,
		    "interpreter '%.100s': invalid probe answer: '%.100s' is not under "
		    "sys.prefix or sys.base_prefix",
		    exe, bad);
	json_array_foreach(libs, i, e)
	{
		const char *l = json_string_value(e);
		if (l && l[0] != '/')
			continue; /* a mapping with no file ("[vdso]", "/memfd:..." aside) */
		if (!l || !govex__interp_path_ok(l))
			return govex__err(err, GOVEX_EINTERP, 0,
					  "interpreter '%.100s': invalid probe answer: library "
					  "'%.100s'",
					  exe, l ? l : "(not a string)");
	}
	memset(in, 0, sizeof(*in));
	in->path = realpath(exe, NULL);
	if (!in->path)
		return govex__err(err, GOVEX_EINTERP, errno,
				  "interpreter '%.100s': sys.executable: %s", exe, strerror(errno));
	in->version = strdup(ver);
	in->prefix = strdup(prefix);
	in->base_prefix = strdup(base);
	in->major = major;
	in->minor = minor;
	in->paths = calloc(1, sizeof(char *));
	in->libs = calloc(1, sizeof(char *));
	if (!in->version || !in->prefix || !in->base_prefix || !in->paths || !in->libs) {
		govex__interp_free(in);
		return govex__err(err, ENOMEM, ENOMEM, "interpreter: out of memory");
	}
	int r = govex__strv_push(&in->paths, stdlib);
	if (plat)
		r |= govex__strv_push(&in->paths, plat);
	json_array_foreach(dyn, i, e) r |= govex__strv_push(&in->paths, json_string_value(e));
	json_array_foreach(libs, i, e)
	{
		if (json_string_value(e)[0] != '/')
			continue;
		r |= govex__strv_push(&in->libs, json_string_value(e));
		r |= add_dir_of(&in->paths, json_string_value(e));
	}
	r |= add_dir_of(&in->paths, in->path);
	/* a venv: its python, as named, is what runs, so that the interpreter finds its
	 * pyvenv.cfg (site.py makes sys.prefix the venv: the probe, without site, sees the
	 * base's); the venv is its prefix */
	char *venv = venv_dir(exe);
	if (venv) {
		free(in->prefix);
		in->prefix = venv;
		r |= !(in->exec = strdup(exe));
	}
	if (r) {
		govex__interp_free(in);
		return govex__err(err, ENOMEM, ENOMEM, "interpreter: out of memory");
	}
	govex__strv_sort_uniq(in->paths);
	govex__strv_sort_uniq(in->libs);
	return 0;
}

int govex__interp_validate(const struct govex__interp *in, struct govex_error *err)
{
	const char *exe = in->path ? in->path : "?";
	if (!in->path || !govex__interp_path_ok(in->path) || !elf_file(in->path, 0))
		return govex__err(
		    err, GOVEX_EINTERP, 0,
		    "interpreter '%.100s': invalid probe answer: the executable is not "
		    "a regular ELF file",
		    exe);
	const char *pre[] = {in->prefix, in->base_prefix};
	for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
		if (!pre[i] || !govex__interp_path_ok(pre[i]) || !is_dir(pre[i]))
			return govex__err(
			    err, GOVEX_EINTERP, 0,
			    "interpreter '%.100s': invalid probe answer: prefix "
			    "'%.100s' (an existing directory, not /, not under /proc, "
			    "/sys or /dev, is required)",
			    exe, pre[i] ? pre[i] : "(none)");
	/* the executable lies in its own installation (a venv's base_prefix holds the real
	 * interpreter its bin/python links to): a prefix of /etc cannot name the libc */
	if (!govex__path_under(in->path, in->prefix) &&
	    !govex__path_under(in->path, in->base_prefix))
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.100s': invalid probe answer: the executable is "
				  "under neither prefix '%.100s' nor base_prefix '%.100s'",
				  exe, in->prefix, in->base_prefix);
	if (in->exec) {
		/* a venv's python: inside the venv, and the executable itself */
		char *real = realpath(in->exec, NULL);
		char *venv = venv_dir(in->exec);
		bool ok = govex__interp_path_ok(in->exec) && venv &&
			  strcmp(venv, in->prefix) == 0 && real && strcmp(real, in->path) == 0;
		free(real);
		free(venv);
		if (!ok)
			return govex__err(err, GOVEX_EINTERP, 0,
					  "interpreter '%.100s': invalid probe answer: the venv's "
					  "python '%.100s' is not the executable in its prefix",
					  exe, in->exec);
	}
	for (size_t i = 0; in->paths && in->paths[i]; i++)
		if (!govex__interp_path_ok(in->paths[i]))
			return govex__err(
			    err, GOVEX_EINTERP, 0,
			    "interpreter '%.100s': invalid probe answer: path '%.100s'", exe,
			    in->paths[i]);
	for (size_t i = 0; in->libs && in->libs[i]; i++)
		if (!govex__interp_path_ok(in->libs[i]) || !elf_file(in->libs[i], ET_DYN))
			return govex__err(err, GOVEX_EINTERP, 0,
					  "interpreter '%.100s': invalid probe answer: '%.100s' is "
					  "not a regular ELF shared object",
					  exe, in->libs[i]);
	return 0;
}

/* The interpreter a script's answer names: an absolute, normalized path to an ELF
 * executable (sys.executable as the script's python saw it), or NULL with err set. */
static char *answer_executable(const char *script, const char *text, struct govex_error *err)
{
	_cleanup_json_ json_t *j = json_loads(text, 0, NULL);
	const char *named = json_string_value(json_object_get(j, "executable"));
	if (!named || !govex__interp_path_ok(named) || !is_elf(named)) {
		govex__err(err, GOVEX_EINTERP, 0,
			   "interpreter '%.100s': the script names no ELF interpreter ('%.100s')",
			   script, named ? named : "(none)");
		return NULL;
	}
	char *r = strdup(named);
	if (!r)
		govex__err(err, ENOMEM, ENOMEM, "interpreter: out of memory");
	return r;
}

/* decode, then validate: the one way an answer becomes a struct govex__interp.  When
 * the probed file is itself an ELF interpreter (real, the file's real path), the answer
 * must name that very file: a cached answer cannot swap in another executable. */
static int accept_answer(const char *text, const char *real, struct govex__interp *in,
			 struct govex_error *err)
{
	int r = decode(text, in, err);
	if (r < 0)
		return r;
	if ((r = govex__interp_validate(in, err)) < 0) {
		govex__interp_free(in);
		return r;
	}
	if (real && strcmp(real, in->path) != 0) {
		r = govex__err(err, GOVEX_EINTERP, 0,
			       "interpreter '%.100s': invalid probe answer: it names the "
			       "executable '%.100s'",
			       real, in->path);
		govex__interp_free(in);
	}
	return r;
}

int govex__interp_answer(const char *text, struct govex__interp *ret, struct govex_error *err)
{
	return accept_answer(text, NULL, ret, err);
}

static char *identity(const char *path)
{
	struct stat st;
	char *s = NULL;
	if (stat(path, &st) < 0)
		return NULL;
	if (asprintf(&s, "%s|%llu|%llu|%lld|%lld.%ld|%lld.%ld", path, (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino, (long long)st.st_size,
		     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
		     st.st_ctim.tv_nsec) < 0)
		return NULL;
	return s;
}

static void cache_name(char out[64], const char *id)
{
	char dg[72];
	govex__sha256_digest(id, strlen(id), dg);
	snprintf(out, 64, "probe-v1-%.16s.json", dg + 7);
}

/* Writes "path=identity" (or "path=-" when it does not exist) to a key. */
static void key_file(FILE *k, const char *path)
{
	char *id = identity(path);
	fprintf(k, "%s=%s\n", path, id ? id : "-");
	free(id);
}

/*
 * A pyenv shim's selection key: everything pyenv reads to choose the interpreter a shim
 * runs, so that an unchanged key means an unchanged choice.  pyenv chooses from
 * PYENV_VERSION, else the first .python-version from PYENV_DIR (default: the cwd) up to
 * /, else $PYENV_ROOT/version, else "system" (searched on PATH); hooks and plugins may
 * change it (PYENV_HOOK_PATH, $PYENV_ROOT/plugins), and so may installing or removing a
 * version or pyenv itself.  The key holds the shim's identity, every PYENV_* variable
 * and PATH, the identity (or absence) of each candidate .python-version, and the
 * identities of $PYENV_ROOT/version, versions/, plugins/, libexec/ and libexec/pyenv.
 * NULL (not cached) for a script that is not a recognized pyenv shim, or on any error.
 * The cached answer only names an ELF, which is then probed (and cached) on its own.
 */
static char *pyenv_selection_key(const char *script)
{
	_cleanup_close_ int fd = open(script, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char text[4096];
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (n <= 0)
		return NULL;
	text[n] = 0;
	static const char root_mark[] = "\nexport PYENV_ROOT=\"";
	const char *r = strstr(text, root_mark);
	if (strncmp(text, "#!/usr/bin/env bash\n", 20) != 0 || !r ||
	    !strstr(text, "/libexec/pyenv\" exec \"$program\" \"$@\""))
		return NULL;
	r += sizeof(root_mark) - 1;
	const char *q = strchr(r, '"');
	char root[1024], d[4096], cwd[4096], f[4096 + 64];
	if (!q || q == r || *r != '/' || memchr(r, '\n', (size_t)(q - r)) ||
	    (size_t)(q - r) >= sizeof(root))
		return NULL;
	memcpy(root, r, (size_t)(q - r));
	root[q - r] = 0;
	const char *dir = getenv("PYENV_DIR");
	if (!dir)
		dir = getcwd(cwd, sizeof(cwd));
	if (!dir || dir[0] != '/' || strlen(dir) >= sizeof(d))
		return NULL;
	memcpy(d, dir, strlen(dir) + 1);

	char *buf = NULL;
	size_t len = 0;
	FILE *k = open_memstream(&buf, &len);
	if (!k)
		return NULL;
	fputs("pyenv-shim-v1\n", k);
	key_file(k, script);
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "PYENV_", 6) == 0 || strncmp(*e, "PATH=", 5) == 0)
			fprintf(k, "env %s\n", *e);
	/* candidates from dir up to / (pyenv-version-file) */
	for (;;) {
		snprintf(f, sizeof(f), "%s/.python-version", strcmp(d, "/") == 0 ? "" : d);
		key_file(k, f);
		char *slash = strrchr(d, '/');
		if (!slash || strcmp(d, "/") == 0)
			break;
		if (slash == d)
			slash[1] = 0;
		else
			*slash = 0;
	}
	static const char *const under_root[] = {"/version", "/versions", "/plugins", "/libexec",
						 "/libexec/pyenv"};
	for (size_t i = 0; i < ARRAY_SIZE(under_root); i++) {
		snprintf(f, sizeof(f), "%s%s", root, under_root[i]);
		key_file(k, f);
	}
	bool ok = !ferror(k);
	if (fclose(k) != 0)
		ok = false;
	/* the key may hold newlines and any byte of the environment: the cache keys by
	 * its digest */
	char *ret = NULL;
	if (ok && buf) {
		char dg[72];
		govex__sha256_digest(buf, len, dg);
		ret = strdup(dg);
	}
	free(buf);
	return ret;
}

/* The probe's argv: isolated mode, no site; the code prints the answer. */
static int run_probe(const char *exe, enum govex__probe_mode mode, char **ret_out,
		     struct govex_error *err)
{
	char *argv[] = {(char *)exe, "-I", "-S", "-c", (char *)probe_code, NULL};
	if (mode == GOVEX_PROBE_HOST)
		return probe_host(exe, argv, PROBE_OUTPUT_MAX, PROBE_TIMEOUT_MS, ret_out, err);
	/* The caller's environment and cwd: a shim (pyenv) reads PYENV_VERSION and
	 * .python-version from the directories above the cwd. */
	return govex__probe_sandboxed(exe, argv, environ, PROBE_OUTPUT_MAX, PROBE_TIMEOUT_MS,
				      ret_out, err);
}

/* A script interpreter (a pyenv shim, a wrapper): it only names the ELF it runs, whose
 * own answer is then probed (and cached) directly.  A pyenv shim's answer is cached under
 * its selection key; a stale or invalid entry is probed again. */
static int probe_script(const char *exe, const char *cache_dir, enum govex__probe_mode mode,
			struct govex__interp *ret, struct govex_error *err)
{
	char *key = NULL, *named = NULL, *answer = NULL;
	char name[64];
	int dfd = -1, r;
	if (cache_dir && cache_dir[0] == '/' && (key = pyenv_selection_key(exe)) &&
	    (dfd = govex__cache_dir_open(cache_dir, true)) >= 0) {
		snprintf(name, sizeof(name), "shim-v1-%.16s.json", key + 7);
		answer = govex__cache_get(dfd, name, key, PROBE_OUTPUT_MAX);
		if (answer && (named = answer_executable(exe, answer, NULL)) &&
		    govex__interp_probe(named, cache_dir, mode, ret, NULL) == 0) {
			r = 0;
			goto out;
		}
		free(answer);
		free(named);
		answer = named = NULL;
	}
	if ((r = run_probe(exe, mode, &answer, err)) < 0)
		goto out;
	if (!(named = answer_executable(exe, answer, err))) {
		r = -GOVEX_EINTERP;
		goto out;
	}
	if ((r = govex__interp_probe(named, cache_dir, mode, ret, err)) < 0)
		goto out;
	if (dfd >= 0) {
		govex__cache_put(dfd, name, key, answer);
		govex__cache_prune(dfd, "shim-v1-", PROBE_CACHE_KEEP);
	}
out:
	if (dfd >= 0)
		close(dfd);
	free(key);
	free(named);
	free(answer);
	return r;
}

int govex__interp_probe(const char *interpreter, const char *cache_dir, enum govex__probe_mode mode,
			struct govex__interp *ret, struct govex_error *err)
{
	_cleanup_free_ char *found = NULL, *id = NULL, *answer = NULL;
	_cleanup_close_ int dfd = -1;
	char name[64];
	const char *exe = interpreter;
	int r;
	if (!exe) {
		if ((r = govex__find_in_path("python3", &found)) < 0)
			return govex__err(err, GOVEX_EINTERP, -r,
					  "interpreter: no python3 on PATH");
		exe = found;
	}
	/* A script (a pyenv shim, a wrapper) is the policy's to name, but its answer is
	 * whatever it prints: it only says which interpreter it runs, and the binds come
	 * from that ELF's own answer (probed directly, and required to name itself).  Both
	 * probes run in the sandbox. */
	if (!is_elf(exe))
		return probe_script(exe, cache_dir, mode, ret, err);
	_cleanup_free_ char *real = realpath(exe, NULL);
	bool cacheable = cache_dir && cache_dir[0] == '/' && real;
	if (cacheable) {
		id = identity(exe);
		dfd = id ? govex__cache_dir_open(cache_dir, true) : -1;
		cacheable = dfd >= 0 && !strchr(id, '\n');
	}
	if (cacheable) {
		cache_name(name, id);
		answer = govex__cache_get(dfd, name, id, PROBE_OUTPUT_MAX);
		/* an entry that fails validation is ignored and rewritten below */
		if (answer && accept_answer(answer, real, ret, NULL) == 0)
			return 0;
		free(TAKE_PTR(answer));
	}
	if ((r = run_probe(exe, mode, &answer, err)) < 0)
		return r;
	if ((r = accept_answer(answer, real, ret, err)) < 0)
		return r;
	if (cacheable) {
		govex__cache_put(dfd, name, id, answer);
		govex__cache_prune(dfd, "probe-v1-", PROBE_CACHE_KEEP);
	}
	return 0;
}

/* ---- how a run names the interpreter ---------------------------------------------- */

void govex__interp_argv(govex_runtime *rt, const char *text, char *argv[8])
{
	size_t ac = 0;
	/* a venv's python as named (its pyvenv.cfg makes it the venv), with site: a venv's
	 * packages are what naming it asks for */
	argv[ac++] = rt->interp.exec ? rt->interp.exec : rt->interp.path;
	argv[ac++] = "-I";
	if (!rt->policy->site && !rt->interp.exec)
		argv[ac++] = "-S";
	argv[ac++] = "-c";
	argv[ac++] = (char *)text;
	argv[ac] = NULL;
}

const char *govex__launch_exe(const struct govex__launch *l)
{
	const struct govex__interp *in = l->interp;
	if (in && in->exec && in->path && l->argv && l->argv[0] &&
	    strcmp(l->argv[0], in->exec) == 0)
		return in->path;
	return l->argv ? l->argv[0] : NULL;
}
