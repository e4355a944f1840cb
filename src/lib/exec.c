/* SPDX-License-Identifier: MIT */
/*
 * The process toolkit: an executable, argv first, under the same policy, backends,
 * limits and result as a Python run.  The executable is resolved before planning; the
 * plan binds its absolute path and the digest of its bytes, and a sandbox binds it, its
 * program interpreter (ld.so) and the shared libraries it loads read-only.  A shell is
 * used only for an explicit command string, and only when the policy allows shell.
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

/* The low-level SHA-256 (see util.c for why) */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "job.h"
#include "run.h"
#include "runtime.h"

#define ARGV_MAX      4096
#define ARG_BYTES_MAX (1u << 20)
/* the kernel's limit on one argument (MAX_ARG_STRLEN, 32 pages) */
#define ARG_ONE_MAX    (128u * 1024 - 1)
#define LDD_TIMEOUT_MS 5000

extern char **environ;

static int resolve_exe(const char *name, char **ret)
{
	if (strchr(name, '/')) {
		char *r = realpath(name, NULL);
		if (!r)
			return -errno;
		*ret = r;
		return 0;
	}
	char *found = NULL;
	int r = govex__find_in_path(name, &found);
	if (r < 0)
		return r;
	*ret = realpath(found, NULL);
	free(found);
	return *ret ? 0 : -errno;
}

/* "sha256:<hex>" of a file's bytes, streamed. */
static int file_digest(const char *path, char out[72], uint64_t *ret_size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	SHA256_CTX ctx;
	SHA256_Init(&ctx);
	char buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		SHA256_Update(&ctx, buf, (size_t)n);
		total += (uint64_t)n;
	}
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_Final(md, &ctx);
	static const char hex[] = "0123456789abcdef";
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[71] = '\0';
	*ret_size = total;
	return 0;
}

/* The "#!" interpreter of a script, or NULL. */
static char *shebang(const char *path)
{
	char buf[256];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return NULL;
	buf[n] = '\0';
	char *s = buf + 2;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t len = strcspn(s, " \t\n");
	if (len == 0 || s[0] != '/')
		return NULL;
	return strndup(s, len);
}

/*
 * The files an ELF executable needs at start: its program interpreter and the shared
 * libraries the loader resolves, asked of the loader itself in list mode (ld.so --list
 * maps the libraries without running the program's code).
 */
static int loader_files(const char *exe, char ***files)
{
	_cleanup_free_ char *out = NULL;
	/* the conventional x86-64/aarch64 loaders; a static executable needs none */
	static const char *const loaders[] = {"/lib64/ld-linux-x86-64.so.2",
					      "/lib/ld-linux-aarch64.so.1"};
	const char *ld = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(loaders); i++)
		if (access(loaders[i], X_OK) == 0) {
			ld = loaders[i];
			break;
		}
	if (!ld)
		return 0;
	int p[2];
	int pr = govex__pipe(p, 0);
	if (pr < 0)
		return pr;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)ld, "--list", (char *)exe, NULL};
	char *envp[] = {NULL};
	pid_t pid;
	int r = posix_spawn(&pid, ld, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return -r;
	}
	size_t len = 0, cap = 65536;
	out = malloc(cap + 1);
	uint64_t deadline = govex__now_ns() + LDD_TIMEOUT_MS * 1000000ULL;
	while (out && len < cap) {
		uint64_t now = govex__now_ns();
		if (now >= deadline)
			break;
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		if (poll(&pf, 1, (int)((deadline - now) / 1000000ULL) + 1) <= 0)
			continue;
		ssize_t n = read(p[0], out + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!out)
		return -ENOMEM;
	out[len] = '\0';
	if (govex__strv_push(files, ld) < 0)
		return -ENOMEM;
	/* lines: "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
	 * "\t/lib64/ld-linux-x86-64.so.2 (0x...)" */
	for (char *line = out; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *arrow = strstr(line, "=> ");
		char *path = arrow ? arrow + 3 : line;
		while (*path == ' ' || *path == '\t')
			path++;
		if (path[0] == '/') {
			size_t n = strcspn(path, " (");
			char *f = strndup(path, n);
			if (!f || govex__strv_push_take(files, f) < 0)
				return -ENOMEM;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* Everything the plan says about the executable. */
struct target {
	char *exe; /* absolute, real */
	char digest[72];
	uint64_t size;
	char **argv;  /* argv as it will run (argv[0] = exe) */
	char **binds; /* read-only files for a sandbox */
};

static void target_release(struct target *t)
{
	free(t->exe);
	govex__strv_free(t->argv);
	govex__strv_free(t->binds);
	memset(t, 0, sizeof(*t));
}

static govex_result *refuse(govex_runtime *rt, enum govex_status st, const char *code,
			    const char *msg)
{
	govex_result *r = govex__refusal(rt, st);
	if (r)
		govex__result_diag(r, code, NULL, "%s", msg);
	return r;
}

static int target_prepare(govex_runtime *rt, const struct govex_exec *x, struct target *t,
			  govex_result **ret_refusal)
{
	char msg[400];
	memset(t, 0, sizeof(*t));
	*ret_refusal = NULL;
	if (!!x->shell == !!(x->argv && x->argv[0])) {
		*ret_refusal = refuse(rt, GOVEX_STATUS_INVALID_INPUT, "invalid_exec",
				      "exec: give argv or a shell command string, not both");
		return 0;
	}
	const char *name = x->shell ? "/bin/sh" : x->argv[0];
	int r = resolve_exe(name, &t->exe);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "executable '%.200s': %s", name,
			 r == -ENOENT ? "not found on PATH" : strerror(-r));
		*ret_refusal = refuse(rt, GOVEX_STATUS_INVALID_INPUT, "executable_not_found", msg);
		return 0;
	}
	if ((r = file_digest(t->exe, t->digest, &t->size)) < 0) {
		snprintf(msg, sizeof(msg), "executable '%.200s': %s", t->exe, strerror(-r));
		*ret_refusal = refuse(rt, GOVEX_STATUS_INVALID_INPUT, "executable_unreadable", msg);
		return 0;
	}
	if (!(t->argv = calloc(1, sizeof(char *))) || !(t->binds = calloc(1, sizeof(char *))))
		return -ENOMEM;
	size_t total = 0;
	if (x->shell) {
		if (strlen(x->shell) > ARG_ONE_MAX) {
			*ret_refusal = refuse(rt, GOVEX_STATUS_INVALID_INPUT, "argv_too_large",
					      "shell: the command string exceeds 131071 bytes, the "
					      "largest single argument the kernel passes");
			return 0;
		}
		if (govex__strv_push(&t->argv, t->exe) < 0 ||
		    govex__strv_push(&t->argv, "-c") < 0 ||
		    govex__strv_push(&t->argv, x->shell) < 0)
			return -ENOMEM;
	} else {
		for (size_t i = 0; x->argv[i]; i++) {
			size_t n = strlen(x->argv[i]);
			total += n + 1;
			if (i >= ARGV_MAX || total > ARG_BYTES_MAX || n > ARG_ONE_MAX) {
				*ret_refusal =
				    refuse(rt, GOVEX_STATUS_INVALID_INPUT, "argv_too_large",
					   "argv: more than 4096 arguments, 1 MiB in all, or "
					   "one argument over 131071 bytes");
				return 0;
			}
			if (!govex__utf8_valid(x->argv[i], strlen(x->argv[i]))) {
				snprintf(msg, sizeof(msg), "argv[%zu]: not valid UTF-8", i);
				*ret_refusal =
				    refuse(rt, GOVEX_STATUS_INVALID_INPUT, "invalid_argv", msg);
				return 0;
			}
			if (govex__strv_push(&t->argv, i == 0 ? t->exe : x->argv[i]) < 0)
				return -ENOMEM;
		}
	}
	if (!govex__utf8_valid(t->argv[govex__strv_len(t->argv) - 1],
			       strlen(t->argv[govex__strv_len(t->argv) - 1]))) {
		*ret_refusal = refuse(rt, GOVEX_STATUS_INVALID_INPUT, "invalid_argv",
				      "shell: the command string is not valid UTF-8");
		return 0;
	}
	/* files a sandbox must show: the executable, a script's interpreter, their loader
	 * and libraries */
	if (govex__strv_push(&t->binds, t->exe) < 0)
		return -ENOMEM;
	char *interp = shebang(t->exe);
	if (interp && (r = govex__strv_push_take(&t->binds, interp)) < 0)
		return r;
	size_t nb = govex__strv_len(t->binds);
	for (size_t i = 0; i < nb; i++) {
		char *b = t->binds[i];
		if ((r = loader_files(b, &t->binds)) < 0)
			return r;
	}
	govex__strv_sort_uniq(t->binds);
	return 0;
}

/* ---- the exec job ----------------------------------------------------------------------- */

struct exec_job {
	const struct govex_exec *x;
	struct target t;
};

static int exec_prepare(struct govex__job *j, govex_result **ret_refusal)
{
	struct exec_job *ej = j->state;
	return target_prepare(j->rt, ej->x, &ej->t, ret_refusal);
}

/* a plan made earlier: the executable's bytes must be the ones it binds */
static int exec_resolve(struct govex__job *j, govex_result **ret_refusal)
{
	struct exec_job *ej = j->state;
	if (!j->given)
		return 0;
	const char *gd = json_string_value(
	    json_object_get(json_object_get(j->given->doc, "executable"), "digest"));
	if (!gd || strcmp(gd, ej->t.digest) != 0) {
		*ret_refusal = refuse(j->rt, GOVEX_STATUS_SOURCE_MISMATCH, "source_mismatch",
				      "executable: its digest differs from the plan's");
		return *ret_refusal ? 0 : -ENOMEM;
	}
	return 0;
}

static int exec_fill(const struct govex__job *j, struct govex__plan_fields *f)
{
	const struct exec_job *ej = j->state;
	f->executable.path = ej->t.exe;
	f->executable.digest = ej->t.digest;
	f->executable.bytes = ej->t.size;
	f->argv = ej->t.argv;
	f->shell_string = ej->x->shell != NULL;
	f->binds = ej->t.binds;
	return 0;
}

static int exec_program(struct govex__job *j, struct govex__program *prog,
			govex_result **ret_refusal)
{
	struct exec_job *ej = j->state;
	(void)ret_refusal;
	prog->argvp = ej->t.argv;
	prog->stdin_data = ej->x->stdin_data;
	prog->stdin_len = ej->x->stdin_len;
	prog->extra_ro = ej->t.binds;
	return 0;
}

static int exec_finish(struct govex__job *j, struct govex__outcome *o, govex_result **ret_result,
		       struct govex_error *err)
{
	if (!(*ret_result = govex__run_result(j->rt, &j->d, j->plan, o)))
		return govex__err(err, ENOMEM, ENOMEM, "exec: out of memory");
	return 0;
}

static void exec_release(struct govex__job *j)
{
	struct exec_job *ej = j->state;
	target_release(&ej->t);
}

const struct govex__job_ops govex__job_exec = {
    .kind = GOVEX_JOB_EXEC,
    .received = {"exec", "exec", "plan_exec"},
    .approve = true,
    .prepare = exec_prepare,
    .resolve = exec_resolve,
    .fill = exec_fill,
    .program = exec_program,
    .finish = exec_finish,
    .release = exec_release,
};

/* The request an exec stands for: its stdin, limits, environment, needs, shell intent,
 * metadata and cancellation. */
static struct govex_request exec_request(const struct govex_exec *x)
{
	struct govex_request req = {
	    .language = "python",
	    .code = "",
	    .stdin_data = x->stdin_data,
	    .stdin_len = x->stdin_len,
	    .limits = x->limits,
	    .env = x->env,
	    .needs = x->needs,
	    .shell = x->shell != NULL,
	    .metadata = x->metadata,
	    .cancel = x->cancel,
	};
	/* files in and out, live output (files.c, supervise.c) */
	req.files = x->files;
	req.n_files = x->n_files;
	req.outputs = x->outputs;
	req.on_output = x->on_output;
	req.output_userdata = x->output_userdata;
	return req;
}

static int exec_job_run(govex_runtime *rt, const govex_plan *given, const struct govex_exec *x,
			enum govex__job_mode mode, govex_plan **ret_plan, govex_result **ret_result,
			struct govex_error *err)
{
	struct exec_job ej = {.x = x};
	struct govex__job j = {
	    .ops = &govex__job_exec,
	    .rt = rt,
	    .mode = mode,
	    .given = given,
	    .req = exec_request(x),
	    .state = &ej,
	};
	return govex__job_execute(&j, ret_plan, ret_result, err);
}

GOVEX_API int govex_runtime_plan_exec(govex_runtime *rt, const struct govex_exec *exec,
				      govex_plan **ret_plan, govex_result **ret_result,
				      struct govex_error *ret_err)
{
	if (!rt || !exec || !ret_plan || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	return exec_job_run(rt, NULL, exec, GOVEX_JOB_PLAN_ONLY, ret_plan, ret_result, ret_err);
}

GOVEX_API int govex_runtime_exec(govex_runtime *rt, const govex_plan *plan,
				 const struct govex_exec *exec, govex_result **ret_result,
				 struct govex_error *ret_err)
{
	if (!rt || !exec || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "exec: missing argument");
	return exec_job_run(rt, plan, exec, GOVEX_JOB_EXECUTE, NULL, ret_result, ret_err);
}
