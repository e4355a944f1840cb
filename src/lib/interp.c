/* SPDX-License-Identifier: MIT */
/*
 * Interpreter probing: resolve the real executable (a `python3` on PATH may be a shell
 * shim, e.g. pyenv's, so the interpreter is asked for sys.executable), its version, its
 * prefixes, the directories it reads and the shared libraries it maps.
 *
 * A probe costs one interpreter start.  The runtime caches it; with a cache directory it
 * is also cached across processes, keyed by the identity (device, inode, size, mtime,
 * ctime) of the executable, and only for an ELF executable found directly: a script
 * shim's answer depends on its environment, so it is never cached across processes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "internal.h"

extern char **environ;

#define PROBE_TIMEOUT_MS 10000
#define PROBE_OUTPUT_MAX (256 * 1024)

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
	memset(in, 0, sizeof(*in));
}

static bool is_elf(const char *path)
{
	char m[4];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && read(fd, m, 4) == 4 && memcmp(m, "\177ELF", 4) == 0;
}

/* Runs the probe; stdout collected (bounded), stderr discarded, hard timeout. */
static int run_probe(const char *exe, char **ret_out, struct govex_error *err)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return govex__err(err, errno, errno, "interpreter: pipe: %s", strerror(errno));
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
	char *argv[] = {(char *)exe, "-I", "-S", "-c", (char *)probe_code, NULL};
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
	char *buf = malloc(PROBE_OUTPUT_MAX + 1);
	uint64_t deadline = govex__now_ns() + PROBE_TIMEOUT_MS * 1000000ULL;
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
		ssize_t k = read(out[0], buf + len, PROBE_OUTPUT_MAX - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len == PROBE_OUTPUT_MAX)
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

static int decode(const char *text, struct govex__interp *in, struct govex_error *err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loads(text, 0, &je);
	const char *exe = NULL, *ver = NULL, *prefix = NULL, *base = NULL, *stdlib = NULL,
		   *plat = NULL;
	json_t *dyn = NULL, *libs = NULL;
	int major = 0, minor = 0;
	if (!j || json_unpack(j, "{s:s, s:s, s:i, s:i, s:s, s:s, s?s, s?s, s:o, s:o}",
			      "executable", &exe, "version", &ver, "major", &major, "minor",
			      &minor, "prefix", &prefix, "base_prefix", &base, "stdlib", &stdlib,
			      "platstdlib", &plat, "dynload", &dyn, "libs", &libs) < 0)
		return govex__err(err, GOVEX_EINTERP, 0, "interpreter: unreadable probe answer");
	if (exe[0] != '/')
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter: sys.executable '%.100s' is not absolute", exe);
	if (major < 3)
		return govex__err(err, GOVEX_EINTERP, 0,
				  "interpreter '%.100s': Python %s is not supported (3.x needed)",
				  exe, ver);
	memset(in, 0, sizeof(*in));
	in->path = realpath(exe, NULL);
	in->version = strdup(ver);
	in->prefix = strdup(prefix);
	in->base_prefix = strdup(base);
	in->major = major;
	in->minor = minor;
	in->paths = calloc(1, sizeof(char *));
	in->libs = calloc(1, sizeof(char *));
	if (!in->path || !in->version || !in->prefix || !in->base_prefix || !in->paths ||
	    !in->libs) {
		govex__interp_free(in);
		return govex__err(err, ENOMEM, ENOMEM, "interpreter: out of memory");
	}
	int r = 0;
	if (stdlib)
		r |= govex__strv_push(&in->paths, stdlib);
	if (plat)
		r |= govex__strv_push(&in->paths, plat);
	size_t i;
	json_t *e;
	json_array_foreach(dyn, i, e) if (json_is_string(e)) r |=
		govex__strv_push(&in->paths, json_string_value(e));
	json_array_foreach(libs, i, e)
	{
		if (!json_is_string(e) || json_string_value(e)[0] != '/')
			continue;
		r |= govex__strv_push(&in->libs, json_string_value(e));
		r |= add_dir_of(&in->paths, json_string_value(e));
	}
	r |= add_dir_of(&in->paths, in->path);
	if (r) {
		govex__interp_free(in);
		return govex__err(err, ENOMEM, ENOMEM, "interpreter: out of memory");
	}
	govex__strv_sort_uniq(in->paths);
	govex__strv_sort_uniq(in->libs);
	return 0;
}

static char *identity(const char *path)
{
	struct stat st;
	char *s = NULL;
	if (stat(path, &st) < 0)
		return NULL;
	if (asprintf(&s, "%s|%llu|%llu|%lld|%lld.%ld|%lld.%ld", path,
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		     (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec) < 0)
		return NULL;
	return s;
}

static char *cache_file(const char *dir, const char *id)
{
	char dg[72];
	char *s = NULL;
	govex__sha256_digest(id, strlen(id), dg);
	if (asprintf(&s, "%s/probe-v1-%.16s.json", dir, dg + 7) < 0)
		return NULL;
	return s;
}

/* The cached answer, when the file still describes this executable. */
static char *cache_read(const char *file, const char *id)
{
	char *data = NULL;
	size_t len;
	if (govex__read_file(file, PROBE_OUTPUT_MAX + 4096, &data, &len, NULL) < 0)
		return NULL;
	char *nl = memchr(data, '\n', len);
	if (!nl || (size_t)(nl - data) != strlen(id) || memcmp(data, id, strlen(id)) != 0) {
		free(data);
		return NULL;
	}
	char *answer = strdup(nl + 1);
	free(data);
	return answer;
}

void govex__cache_store(const char *dir, const char *file, const char *id, const char *answer)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.XXXXXX", file) < 0)
		return;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd >= 0) {
		FILE *f = fdopen(fd, "w");
		if (f) {
			bool ok = fprintf(f, "%s\n%s", id, answer) > 0;
			ok = (fclose(f) == 0) && ok;
			if (!ok || rename(tmp, file) < 0)
				unlink(tmp);
		} else {
			close(fd);
			unlink(tmp);
		}
	}
	free(tmp);
}

int govex__interp_probe(const char *interpreter, const char *cache_dir,
			struct govex__interp *ret, struct govex_error *err)
{
	_cleanup_free_ char *found = NULL, *id = NULL, *file = NULL, *answer = NULL;
	const char *exe = interpreter;
	int r;
	if (!exe) {
		if ((r = govex__find_in_path("python3", &found)) < 0)
			return govex__err(err, GOVEX_EINTERP, -r,
					  "interpreter: no python3 on PATH");
		exe = found;
	}
	bool cacheable = cache_dir && cache_dir[0] == '/' && is_elf(exe);
	if (cacheable) {
		id = identity(exe);
		file = id ? cache_file(cache_dir, id) : NULL;
		answer = file ? cache_read(file, id) : NULL;
		if (answer && decode(answer, ret, NULL) == 0)
			return 0;
		free(TAKE_PTR(answer));
	}
	if ((r = run_probe(exe, &answer, err)) < 0)
		return r;
	if ((r = decode(answer, ret, err)) < 0)
		return r;
	if (cacheable && file)
		govex__cache_store(cache_dir, file, id, answer);
	return 0;
}
