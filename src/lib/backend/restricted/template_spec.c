/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: a run's spec, the JSON document the template's child reads from a memfd
 * (src/worker/zygote.py, _Run): what the run's own layers need -- its tmpfs mounts, the
 * proc masks, ids, rlimits (as govex__child_rlimits sets them), Landlock rules of its
 * plan, cgroup descriptors' count, the CPU budget, the launch steps' numbers (failures
 * are reported as a cold launch's), its environment, argv and code.  Byte strings go as
 * hex.  The template itself never reads it (template.c).
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "restricted.h"

json_t *rwarm_hex(const void *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char *s = malloc(2 * len + 1);
	if (!s)
		return NULL;
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = digits[p[i] >> 4];
		s[2 * i + 1] = digits[p[i] & 15];
	}
	s[2 * len] = '\0';
	json_t *j = json_stringn(s, 2 * len);
	free(s);
	return j;
}

static json_t *hexv(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, rwarm_hex(v[i], strlen(v[i])));
	return a;
}

/* The rlimits govex__child_rlimits (shim.c) sets, as [resource, soft, hard, step]: keep
 * in step with it. */
static json_t *rlimits_json(const struct govex__limits *l)
{
	json_t *a = json_array();
#define RL(res, s, h, step)                                                                        \
	json_array_append_new(                                                                     \
	    a, json_pack("[iIIi]", (int)(res), (json_int_t)(s), (json_int_t)(h), (int)(step)))
	RL(RLIMIT_CORE, 1, 1, GOVEX_STEP_RLIMIT_CORE);
	RL(RLIMIT_SIGPENDING, 256, 256, GOVEX_STEP_RLIMIT_SIGPENDING);
	if (l->cpu_ms) {
		uint64_t s = (l->cpu_ms + 999) / 1000;
		RL(RLIMIT_CPU, s, s + 1, GOVEX_STEP_RLIMIT_CPU);
	}
	if (l->memory_bytes)
		RL(RLIMIT_AS, l->memory_bytes, l->memory_bytes, GOVEX_STEP_RLIMIT_AS);
	if (l->file_size_bytes)
		RL(RLIMIT_FSIZE, l->file_size_bytes, l->file_size_bytes, GOVEX_STEP_RLIMIT_FSIZE);
	if (l->open_files)
		RL(RLIMIT_NOFILE, l->open_files, l->open_files, GOVEX_STEP_RLIMIT_NOFILE);
#undef RL
	return a;
}

static json_t *steps_json(void)
{
	static const enum govex__step steps[] = {
	    GOVEX_STEP_SHIM,	  GOVEX_STEP_CLONE,	    GOVEX_STEP_MOUNT_PRIVATE,
	    GOVEX_STEP_TMPFS,	  GOVEX_STEP_FORK,	    GOVEX_STEP_PROC,
	    GOVEX_STEP_PROC_MASK, GOVEX_STEP_CGROUP,	    GOVEX_STEP_CGROUPNS,
	    GOVEX_STEP_SETSID,	  GOVEX_STEP_SECCOMP_GUARD, GOVEX_STEP_STDIO,
	    GOVEX_STEP_CHDIR,	  GOVEX_STEP_NO_NEW_PRIVS,  GOVEX_STEP_LANDLOCK,
	    GOVEX_STEP_CAPS,	  GOVEX_STEP_SETGROUPS,	    GOVEX_STEP_SETGID,
	    GOVEX_STEP_SETUID,	  GOVEX_STEP_SECCOMP,	    GOVEX_STEP_WORKDIR,
	};
	json_t *o = json_object();
	for (size_t i = 0; o && i < ARRAY_SIZE(steps); i++)
		json_object_set_new(o, govex__step_name(steps[i]), json_integer(steps[i]));
	return o;
}

static json_t *landlock_json(const struct rstate *st, const struct rplan *plan)
{
	if (st->landlock_abi <= 0)
		return json_null();
	uint64_t a[3];
	size_t size = rlandlock_attr(st->landlock_abi, st->deny_net, a);
	json_t *rules = json_array();
	for (size_t i = 0; rules && i < plan->n; i++) {
		uint64_t acc = plan->m[i].ll_access & a[0];
		if (acc)
			json_array_append_new(rules,
					      json_pack("[sI]", plan->m[i].path, (json_int_t)acc));
	}
	return json_pack("{sIsIsIsIsIso}", "fs", (json_int_t)a[0], "net", (json_int_t)a[1],
			 "scoped", (json_int_t)a[2], "size", (json_int_t)size, "file_rights",
			 (json_int_t)LL_FILE_RIGHTS, "rules", rules);
}

/* The places a run writes that are its own: its /tmp and workdir tmpfs (not /dev, which
 * is read-only), and the host-wide proc files to mask where proc has no subset=pid. */
static void plan_json(const struct rplan *plan, json_t **ret_tmpfs, json_t **ret_masked)
{
	json_t *tmpfs = json_array(), *masked = json_array();
	for (size_t i = 0; tmpfs && masked && i < plan->n; i++) {
		const struct rmount *m = &plan->m[i];
		if (m->kind == RM_TMPFS && (m->ll_access & LL_FS_WRITE_FILE))
			json_array_append_new(tmpfs, json_pack("[ss]", m->path, m->opts));
		else if (m->kind == RM_PROC_MASK)
			json_array_append_new(masked, json_string(m->path));
	}
	*ret_tmpfs = tmpfs;
	*ret_masked = masked;
}

/* The run's identity files (/etc/passwd, /etc/group: rplan_add_identity), bound by the
 * run's first process over the template's placeholders. */
static json_t *identity_json(const struct rplan *plan)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < plan->n; i++)
		if (plan->m[i].kind == RM_FILE)
			json_array_append_new(
			    a, json_pack("[so]", plan->m[i].path,
					 rwarm_hex(plan->m[i].opts, strlen(plan->m[i].opts))));
	return a;
}

#ifndef SYS_fork
#define SYS_fork (-1)
#endif
#ifndef SYS_vfork
#define SYS_vfork (-1)
#endif

/* Denials named as a cold run names them (execonce.c): the guard (built for the
 * runtime's policy) notifies; the run's init answers and counts.  In a warm run the
 * interpreter is running already: every execve is a later one. */
static json_t *notify_json(const struct rstate *st)
{
	if (!st->deny_net && !st->deny_subprocess)
		return json_null();
	return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "max",
			 RDENIALS_ANSWERED_MAX, "socket", (int)SYS_socket, "execve",
			 (int)SYS_execve, "execveat", (int)SYS_execveat, "clone", (int)SYS_clone,
			 "fork", (int)SYS_fork, "vfork", (int)SYS_vfork, "eafnosupport",
			 EAFNOSUPPORT, "eperm", EPERM, "enosys", ENOSYS);
}

extern const unsigned char govex__worker_py[];
extern const size_t govex__worker_py_len;
extern const unsigned char govex__worker_inspection_py[];
extern const size_t govex__worker_inspection_py_len;

/* Which of govex's worker texts (template.c's send_texts: 0 the worker, 1 the
 * inspection part, a newline and the worker) code is, byte for byte, or -1. */
static int worker_text(const char *code)
{
	size_t n = strlen(code), a = govex__worker_inspection_py_len, b = govex__worker_py_len;
	if (n == b && memcmp(code, govex__worker_py, b) == 0)
		return 0;
	if (n == a + 1 + b && memcmp(code, govex__worker_inspection_py, a) == 0 &&
	    code[a] == '\n' && memcmp(code + a + 1, govex__worker_py, b) == 0)
		return 1;
	return -1;
}

/* argv as hex, but the code (the last) once only: null here, "code" or "text" in the
 * spec. */
static json_t *argv_json(char *const *argv, size_t argc)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < argc; i++)
		json_array_append_new(a, i + 1 == argc ? json_null()
						       : rwarm_hex(argv[i], strlen(argv[i])));
	return a;
}

static char *spec_json(const struct rwarm_run *r)
{
	const struct rstate *st = r->st;
	const struct govex__launch *l = r->l;
	size_t argc = 0, nprocs = 0;
	while (l->argv[argc])
		argc++;
	for (int i = 0; i < RCG_N; i++)
		nprocs += r->cg->procs_fd[i] >= 0;
	json_t *tmpfs, *masked;
	plan_json(r->plan, &tmpfs, &masked);
	json_t *spec = json_pack(
	    "{s:o, s:I, s:b, s:b, s:i, s:I, s:i, s:i, s:b, s:o, s:o, s:s, s:b, s:I, s:I, s:i, s:o, "
	    "s:o, s:o, s:o, s:o}",
	    "steps", steps_json(), "nprocs", (json_int_t)nprocs, "cpu", r->cg->cpu_fd >= 0, "extra",
	    l->extra_fd >= 0, "cpu_version", r->cg->cpu_version, "cpu_budget_ns",
	    (json_int_t)(r->cg->cpu_fd >= 0 && l->limits->cpu_ms
			     ? (int64_t)l->limits->cpu_ms * 1000000
			     : -1),
	    "ncpus", st->ncpus, "report_size", (int)sizeof(struct govex__shim_report), "netns",
	    st->deny_net, "tmpfs", tmpfs, "proc_masked", masked, "workdir", l->workdir, "setid",
	    !st->userns, "uid", (json_int_t)r->uid, "gid", (json_int_t)r->gid, "nr_capset",
	    (int)SYS_capset, "rlimits", rlimits_json(l->limits), "landlock",
	    landlock_json(st, r->plan), "env", hexv(l->envp), "argv", argv_json(l->argv, argc),
	    "text", json_integer(worker_text(l->argv[argc - 1])));
	if (!spec)
		return NULL;
	/* govex's worker (call mode, inspection, REPL runs): the template has its text and
	 * its code object; other code is sent */
	if (json_integer_value(json_object_get(spec, "text")) < 0)
		json_object_set_new(spec, "code",
				    rwarm_hex(l->argv[argc - 1], strlen(l->argv[argc - 1])));
	json_object_set_new(spec, "identity", identity_json(r->plan));
	/* files in (their names: the bytes are the relay's to write) and outputs */
	json_t *names = json_array();
	for (size_t i = 0; names && i < l->n_files; i++)
		json_array_append_new(names, json_string(l->files[i].name));
	json_object_set_new(spec, "files", names);
	json_object_set_new(spec, "outputs", json_boolean(l->outputs));
	json_object_set_new(spec, "notify", notify_json(st));
	json_object_set_new(spec, "nr_seccomp", json_integer(SYS_seccomp));
	char *s = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	return s;
}

int rwarm_spec_memfd(const struct rwarm_run *r)
{
	_cleanup_free_ char *s = spec_json(r);
	if (!s)
		return -ENOMEM;
	int fd = memfd_create("govex-warm-spec", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t n = write(fd, s + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		off += (size_t)n;
	}
	return fd;
}
