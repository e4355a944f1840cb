/* SPDX-License-Identifier: MIT */
/* Library-internal declarations shared by src/lib.  Names are govex__ (two underscores). */
#ifndef GOVEX_INTERNAL_H
#define GOVEX_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <pthread.h>

#include <jansson.h>

#include "banned.h"
#include "govex.h"

/* ---- cleanup helpers (systemd style) ---------------------------------------------- */

static inline void govex__freep(void *p)
{
	free(*(void **)p);
}
static inline void govex__closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void govex__json_decrefp(json_t **j)
{
	json_decref(*j);
}
#define _cleanup_(f)	__attribute__((cleanup(f)))
#define _cleanup_free_	_cleanup_(govex__freep)
#define _cleanup_close_ _cleanup_(govex__closep)
#define _cleanup_json_	_cleanup_(govex__json_decrefp)

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp = (p);                                                           \
		(p) = NULL;                                                                        \
		_tp;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _tf = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_tf;                                                                               \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GOVEX__HIDDEN __attribute__((visibility("hidden")))

/* ---- errors ------------------------------------------------------------------------- */

/* Fills *err (when non-NULL) and returns -code.  code is GOVEX_E* or an errno value. */
int govex__err(struct govex_error *err, int code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- strings and vectors -------------------------------------------------------------- */

/* A NULL-terminated vector of owned strings. */
char **govex__strv_free(char **v);
size_t govex__strv_len(char *const *v);
int govex__strv_push(char ***v, const char *s); /* copies s */
int govex__strv_push_take(char ***v, char *s);	/* takes s */
char **govex__strv_copy(char *const *v);
bool govex__strv_contains(char *const *v, const char *s);
void govex__strv_sort_uniq(char **v);
json_t *govex__strv_json(char *const *v); /* a JSON array of the strings */
/* An ASCII identifier ([A-Za-z_][A-Za-z0-9_]*) of 1..max bytes: environment variable
 * names, Python module, function and type names. */
bool govex__identifier(const char *s, size_t n, size_t max);
/* For an "unknown field" error's hint: the name in names (NULL-terminated) nearest to name
 * by optimal-string-alignment distance (edits: insert, delete, substitute, swap two
 * neighbours; ASCII case ignored), when that distance is at most 2, or at most 1 for a
 * name of 4 bytes or fewer; the first in names on a tie; NULL when none is that close.
 * Borrows both; the answer points into names. */
const char *govex__nearest_name(const char *name, const char *const *names);
/* The first regular executable file NAME in the caller's PATH (absolute entries only;
 * default /usr/local/bin:/usr/bin:/bin).  -ENOENT when there is none. */
int govex__find_in_path(const char *name, char **ret);

/* Valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF) */
bool govex__utf8_valid(const char *s, size_t len);
/* How many of the first len bytes of s are ASCII (below 0x80). */
size_t govex__ascii_run(const unsigned char *s, size_t len);
/* Copies s into *ret with each invalid byte replaced by U+FFFD; when cut, an incomplete
 * character at the very end is dropped instead.  Returns (size_t)-1 on ENOMEM. */
size_t govex__utf8_sanitize(const char *s, size_t len, bool cut, char **ret, size_t *ret_len,
			    uint64_t *ret_replaced);
/*
 * Text an untrusted process chose (a call worker's frame), made safe to put in a result
 * and on a terminal: invalid UTF-8 replaced, C0 controls but \n and \t, DEL and C1
 * (U+0080-U+009F) removed, ESC/CSI/OSC/DCS sequences removed whole; at most max bytes
 * (max > 12), ending in " [truncated]" and *ret_truncated set when cut.  NULL on ENOMEM.
 */
char *govex__text_clean(const char *s, size_t n, size_t max, bool *ret_truncated);
/* JSON text with each DEL and C1 character (legal raw in JSON strings, but a terminal
 * may act on them) written as a \u escape instead: the same JSON value.  Takes js;
 * returns it or its replacement, NULL on ENOMEM (js freed). */
char *govex__json_escape_controls(char *js);

/* ---- canonical JSON and digests --------------------------------------------------- */

/* Canonical bytes of j: sorted keys, compact, integers only (reals refused), one trailing
 * "\n", NUL-terminated.  Returns -GOVEX_EINVAL for a real number inside. */
int govex__canon(const json_t *j, char **ret_bytes, size_t *ret_len);
/* "sha256:<hex>" of len bytes into out[72]. */
void govex__sha256_digest(const void *data, size_t len, char out[72]);
/* Parses strictly: duplicate keys refused, whole input; flags are extra jansson decoding
 * flags (JSON_ALLOW_NUL when the caller checks NUL itself, to name the field).  Messages
 * name the position.  Returns -GOVEX_EJSON or -GOVEX_EUTF8. */
int govex__json_parse(const char *data, size_t len, size_t flags, json_t **ret,
		      struct govex_error *err);
/* govex__json_parse's result and errors exactly, with long string values that need no
 * decoding copied in place rather than lexed a byte at a time (jsonlong.c): for
 * documents that carry files or output. */
int govex__json_parse_long(const char *data, size_t len, size_t flags, json_t **ret,
			   struct govex_error *err);
/* The same with its bounds given: texts shorter than min_text are parsed whole, strings
 * shorter than min_value are lexed (tests and the fuzz target make them small). */
int govex__json_parse_long_at(const char *data, size_t len, size_t flags, size_t min_text,
			      size_t min_value, json_t **ret, struct govex_error *err);
/* The closing quote of the JSON string whose opening quote is q (before end), or NULL. */
const char *govex__json_string_end(const char *q, const char *end);
/* The next string value (not a key) of at least min bytes inside, from *p on: its
 * quotes in *ret_q and *ret_c, *p past it; false when none is left (or one is
 * unterminated: jansson says so). */
bool govex__json_next_long_value(const char **p, const char *end, size_t min, const char **ret_q,
				 const char **ret_c);
/* Whether [s, e) is the inside of a string jansson reads without JSON_ALLOW_NUL: no raw
 * control character, known escapes, paired surrogates, no \u0000, valid UTF-8 (no
 * overlong form, surrogate or code point past U+10FFFF). */
bool govex__json_string_ok(const unsigned char *s, const unsigned char *e);
/* Reads fd to its end: at most max bytes (-EFBIG past that), NUL-terminated; -errno. */
int govex__read_fd(int fd, size_t max, char **ret_data, size_t *ret_len);
/* Reads a whole file of at most max bytes. */
/*
 * A descriptor govex makes never takes 0, 1 or 2: a host started with closed stdio
 * would otherwise read govex's pipe as its own standard input, and a posix_spawn dup2
 * of a pipe end already on fd 1 onto fd 1 keeps it close-on-exec.  govex__fd_not_stdio
 * moves fd (close-on-exec) to 3 or above, closing the original; returns the new fd, or
 * -errno (fd closed).  govex__pipe is pipe2(flags | O_CLOEXEC) with both ends so moved.
 */
int govex__fd_not_stdio(int fd);
int govex__pipe(int p[2], int flags);
/* Reads a regular file (anything else, a FIFO or a device, is refused without blocking:
 * EINVAL naming the path) of at most max bytes. */
int govex__read_file(const char *path, size_t max, char **ret_data, size_t *ret_len,
		     struct govex_error *err);

/* ---- controls ------------------------------------------------------------------------- */

#define GOVEX__CONTROLS(X)                                                                         \
	X(WALL_TIME, "wall_time")                                                                  \
	X(OUTPUT_BOUNDS, "output_bounds")                                                          \
	X(ENV_ALLOWLIST, "env_allowlist")                                                          \
	X(FRESH_WORKDIR, "fresh_workdir")                                                          \
	X(PROCESS_TREE_KILL, "process_tree_kill")                                                  \
	X(FD_HYGIENE, "fd_hygiene")                                                                \
	X(NETWORK_DENY, "network_deny")                                                            \
	X(FS_READ_ALLOWLIST, "fs_read_allowlist")                                                  \
	X(FS_WRITE_ALLOWLIST, "fs_write_allowlist")                                                \
	X(SUBPROCESS_DENY, "subprocess_deny")                                                      \
	X(MEMORY_AGGREGATE, "memory_aggregate")                                                    \
	X(MEMORY_PER_PROCESS, "memory_per_process")                                                \
	X(CPU_TIME_AGGREGATE, "cpu_time_aggregate")                                                \
	X(CPU_TIME_PER_PROCESS, "cpu_time_per_process")                                            \
	X(PIDS_AGGREGATE, "pids_aggregate")                                                        \
	X(OPEN_FILES_PER_PROCESS, "open_files_per_process")                                        \
	X(FILE_SIZE_PER_PROCESS, "file_size_per_process")                                          \
	X(SYSCALL_FILTER, "syscall_filter")                                                        \
	X(NO_NEW_PRIVILEGES, "no_new_privileges")                                                  \
	X(LANDLOCK, "landlock")                                                                    \
	X(NETWORK_ALLOWLIST, "network_allowlist")                                                  \
	X(FS_DENY, "fs_deny")

enum govex__control {
#define GOVEX__CTLENUM(id, name) GOVEX_CTL_##id,
	GOVEX__CONTROLS(GOVEX__CTLENUM)
#undef GOVEX__CTLENUM
	    GOVEX__CTL_COUNT
};
typedef uint64_t govex__ctlset;
#define CTL(id) ((govex__ctlset)1 << GOVEX_CTL_##id)

const char *govex__control_name(enum govex__control c);
/* The control of that name, or -1. */
int govex__control_from_name(const char *name);
/* Array of control names, in table order. */
json_t *govex__ctlset_json(govex__ctlset set);

struct govex__egress_list; /* egress.h */

/* ---- policy --------------------------------------------------------------------------- */

enum govex__perm {
	GOVEX_PERM_NETWORK = 1u << 0,
	GOVEX_PERM_FILESYSTEM_WRITE = 1u << 1,
	GOVEX_PERM_SHELL = 1u << 2,
	GOVEX_PERM_SUBPROCESS = 1u << 3,
};

#define GOVEX__EFFECTS(X)                                                                          \
	X(NETWORK, "network")                                                                      \
	X(FILESYSTEM_READ, "filesystem_read")                                                      \
	X(FILESYSTEM_WRITE, "filesystem_write")                                                    \
	X(SUBPROCESS, "subprocess")                                                                \
	X(ENVIRONMENT, "environment")                                                              \
	X(DYNAMIC_CODE, "dynamic_code")

/* Limits: 0 means unlimited for the nullable ones (cpu, memory, processes, open_files,
 * file_size). */
/*
 * The policy's limits, the one list (libuv's UV_ERRNO_MAP style): the struct's members,
 * the table policy parsing, canonical output and defaults use (policy.c), the fields a
 * plan's "limits" may hold (plan.c), and, for those a request may set (REQ: the members
 * of the public struct govex_limits), request capping and the request's digest
 * (request.c).  tests/unit/test_policy.c checks that govex-policy(5) documents each.
 *
 *   X(name, nullable, min, max, default, omit_default, REQ or NOREQ)
 *
 * nullable: null means "no limit" (stored as 0).  omit_default: left out of canonical
 * bytes at its default (fields newer than v1's first: older policies keep their digests).
 */
#define GOVEX__LIMITS(X)                                                                           \
	X(wall_ms, false, 1, GOVEX_WALL_MS_MAX, 5000, false, REQ)                                  \
	X(cpu_ms, true, 1, 24ULL * GOVEX_WALL_MS_MAX, 0, false, REQ)                               \
	X(memory_bytes, true, 1ULL << 20, 1ULL << 42, 0, false, REQ)                               \
	X(processes, true, 1, 1ULL << 20, 0, false, REQ)                                           \
	X(open_files, true, 8, 1ULL << 20, 0, false, REQ)                                          \
	X(file_size_bytes, true, 1, 1ULL << 50, 0, false, REQ)                                     \
	X(code_bytes, false, 1, 64ULL << 20, 64ULL << 10, false, NOREQ)                            \
	X(stdin_bytes, false, 0, 1ULL << 30, 1ULL << 20, false, NOREQ)                             \
	X(stdout_bytes, false, 0, 1ULL << 30, 64ULL << 10, false, REQ)                             \
	X(stderr_bytes, false, 0, 1ULL << 30, 64ULL << 10, false, REQ)                             \
	X(call_input_bytes, false, 1, GOVEX_CALL_BYTES_MAX, 1ULL << 20, false, NOREQ)              \
	X(call_output_bytes, false, GOVEX_CALL_OUTPUT_MIN, GOVEX_CALL_BYTES_MAX, 1ULL << 20,       \
	  false, NOREQ)                                                                            \
	X(files_in_bytes, false, 0, 1ULL << 32, GOVEX__FILES_IN_DEFAULT, true, NOREQ)              \
	X(files_out_bytes, false, 0, 1ULL << 32, GOVEX__FILES_OUT_DEFAULT, true, NOREQ)            \
	X(files_out_count, false, 0, GOVEX__FILES_COUNT_MAX, GOVEX__FILES_COUNT_DEFAULT, true,     \
	  NOREQ)                                                                                   \
	X(network_connections, false, 1, 1ULL << 20, 256, true, NOREQ)                             \
	X(network_bytes, false, 1, 1ULL << 40, 1ULL << 30, true, NOREQ)

struct govex__limits {
#define GOVEX__LIMIT_MEMBER(name, ...) uint64_t name;
	GOVEX__LIMITS(GOVEX__LIMIT_MEMBER)
#undef GOVEX__LIMIT_MEMBER
};
/* The limits' names, NULL-terminated (an initializer) */
#define GOVEX__LIMIT_NAME(name, ...) #name,
#define GOVEX__LIMIT_NAMES                                                                         \
	{                                                                                          \
		GOVEX__LIMITS(GOVEX__LIMIT_NAME) NULL                                              \
	}

#define GOVEX_WALL_MS_MAX     3600000ULL
#define GOVEX_CALL_BYTES_MAX  (16ULL << 20)
#define GOVEX_CALL_OUTPUT_MIN 128ULL

struct govex_policy {
	char *canon; /* canonical bytes, NUL-terminated */
	size_t canon_len;
	char digest[72];

	char *interpreter; /* absolute path, or NULL for "auto" */
	bool site;
	char **preload; /* modules warm templates import (sorted), or NULL */
	char *workdir;	/* NULL = fresh */
	struct govex__limits limits;
	char **read_roots; /* normalized absolute paths, sorted, unique */
	char **write_roots;
	/* filesystem.deny: normalized absolute paths, sorted, unique, or NULL (none); what
	 * they are on this host is resolved per runtime (deny.c) */
	char **deny_paths;
	bool platform_defaults;
	bool network; /* true = allow (every destination) */
	/* network: {"allow": [...]}: the destinations of filtered networking (egress.h), and
	 * network is false; NULL otherwise */
	struct govex__egress_list *net_allow;
	bool subprocess; /* true = allow */
	bool shell;	 /* true = allow */
	bool env_inherit;
	char **env_allow;     /* names, sorted */
	char **env_set;	      /* "NAME=VALUE", sorted by name */
	unsigned approval;    /* enum govex__perm bits */
	char **require_known; /* effect names, sorted */
	char *backend;	      /* NULL = registry chooses */
	/* results.disclosure: sanitized (a call's stdout and stderr never reach its result,
	 * its exception by type name only), else full */
	bool sanitized;
};

/* Normalizes path: absolute, no "." or ".." components, no "//", no trailing "/"
 * (except "/" itself), no NUL.  Returns false when path is not already normalized. */
bool govex__path_normalized(const char *path);
/* true when path equals root or lies under it (both normalized). */
bool govex__path_under(const char *path, const char *root);

/* {"wall_ms": ..., ...} with null for unlimited nullable limits. */
json_t *govex__limits_json(const struct govex__limits *l);

/* The policy's "network": "allow", "deny" or {"allow": [canonical entries]} (a new
 * reference; NULL on ENOMEM). */
json_t *govex__policy_network_json(const struct govex_policy *p);

/* Controls the policy requires. */
govex__ctlset govex__policy_required(const struct govex_policy *p);

/* ---- interpreter probing -------------------------------------------------------------- */

struct govex__interp {
	char *path;    /* real executable, absolute */
	char *version; /* "3.11.2" */
	int major, minor;
	char *prefix;	   /* sys.prefix */
	char *base_prefix; /* sys.base_prefix */
	char **paths;	   /* directories the interpreter needs to read: stdlib, platstdlib,
			    * lib-dynload, and those of the shared libraries it maps */
	char **libs;	   /* shared-library files the interpreter maps at start */
	/* a venv's: the python its policy names (sys.executable, a symlink into the venv
	 * whose pyvenv.cfg makes it the venv), run as the program; NULL otherwise */
	char *exec;
	/* what the environment's packages need (packages.c), bound read-only, followed
	 * through symlinks: site directories, libraries as the loader opens them, the
	 * targets of their symlinks, data files; NULL until resolved */
	char **env_files;
	/* filesystem.deny as resolved by the runtime (planning.c, after the probe): what a
	 * sandbox masks; NULL until resolved (a sandbox refuses to start then) */
	struct govex__deny *deny;
};
void govex__interp_free(struct govex__interp *in);

/* filesystem.deny resolved on this host (deny.c): the real paths a sandbox masks (the
 * policy's, resolved, and their aliases beneath other roots), whether each is a
 * directory, and the directories between a write root and a masked path, each made a
 * mount point of its own so that the run cannot rename or remove them. */
struct govex__deny {
	char **paths;
	unsigned char *isdir;
	char **pins;
};
/* Why a deny path is refused: a diagnostic code, the policy's path, a message. */
struct govex__deny_fault {
	const char *code;
	char path[4096];
	char message[1024];
};
/* 0 (ret filled: empty when the policy denies nothing), 1 (refused: f filled) or
 * -errno. */
int govex__deny_resolve(const struct govex_policy *p, const struct govex__interp *in,
			struct govex__deny *ret, struct govex__deny_fault *f);
void govex__deny_free(struct govex__deny *d);
/* How an interpreter may be probed.  SANDBOXED: inside the restricted sandbox (the only
 * way when that backend is available).  HOST: a plain child on the host, only for a run
 * that goes to the controlled backend when the sandbox is unavailable here. */
enum govex__probe_mode { GOVEX_PROBE_SANDBOXED, GOVEX_PROBE_HOST };
/* Probes interpreter (absolute path, or NULL for auto = python3 on the caller's PATH).
 * cache_dir may be NULL.  The answer is validated (govex__interp_validate). */
int govex__interp_probe(const char *interpreter, const char *cache_dir, enum govex__probe_mode mode,
			struct govex__interp *ret, struct govex_error *err);
/* A path an interpreter's or environment's files may be: absolute, normalized, not "/",
 * not under /proc, /sys or /dev (kernel interfaces and devices); false for NULL. */
bool govex__interp_path_ok(const char *p);
/* Decodes and validates a probe answer (JSON text), as from the probe or the cache. */
int govex__interp_answer(const char *text, struct govex__interp *ret, struct govex_error *err);
/* The files an answer names: the executable a regular ELF file, libraries regular ELF
 * shared objects, every path absolute, normalized, not "/", not under /proc, /sys, /dev. */
int govex__interp_validate(const struct govex__interp *in, struct govex_error *err);
/* Runs argv (argv[0] = exe) in the probe sandbox (backend/restricted/probe.c): a
 * read-only view of the host, no network, no writes, no capabilities, seccomp, own PID
 * namespace, the caller's cwd; stdout (at most out_max bytes) into *ret_out when it exits
 * 0 within timeout_ms. */
int govex__probe_sandboxed(const char *exe, char *const argv[], char *const envp[], size_t out_max,
			   uint64_t timeout_ms, char **ret_out, struct govex_error *err);

/* ---- the cache directory (cache.c) -------------------------------------------------- */

/* Opens dir (absolute) as the cache directory: O_NOFOLLOW|O_DIRECTORY, a directory owned
 * by the euid with no group/other bits; made 0700 when missing and create.  Returns the
 * fd or -errno (-EPERM: exists but is not trustworthy; then it is not used). */
int govex__cache_dir_open(const char *dir, bool create);
/* Reads name (no '/') relative to dirfd, O_NOFOLLOW, when it is a regular file owned by
 * the euid and not group/other writable; at most max bytes (-EFBIG beyond). */
int govex__cache_file_read(int dirfd, const char *name, size_t max, char **ret_data,
			   size_t *ret_len);
/* Replaces name atomically: a fresh 0600 temporary (O_EXCL) renamed over it. */
int govex__cache_file_write(int dirfd, const char *name, const char *data, size_t len);
/* Removes this euid's regular files named prefix* beyond the keep newest (by mtime),
 * and temporaries of a writer that died. */
void govex__cache_prune(int dirfd, const char *prefix, size_t keep);
/* "key\npayload" files: the payload when name's key line is key, else NULL. */
char *govex__cache_get(int dirfd, const char *name, const char *key, size_t max);
int govex__cache_put(int dirfd, const char *name, const char *key, const char *payload);

/* ---- backends ---------------------------------------------------------------------- */

struct govex__unavailable {
	enum govex__control control;
	char reason[160];
};

struct govex__report {
	bool available;
	char unavailable_reason[160]; /* when !available */
	govex__ctlset enforced;
	size_t n_unavailable;
	struct govex__unavailable unavailable[GOVEX__CTL_COUNT];
	/* restricted: where runs' v2 cgroups come from (cghost.c), "" when no v2 serves */
	char cgroup_source[16];
	char cgroup_detail[512];
};

/* Everything a backend needs to launch one run, prepared before any fork. */
struct govex__launch {
	const struct govex_policy *policy;
	const struct govex__interp *interp;
	const struct govex_runtime_options *opts;
	const struct govex__limits *limits; /* the run's normalized limits */
	char *const *argv;		    /* argv[0] = interpreter path */
	char *const *envp;
	const char *workdir; /* absolute; the child's cwd; exists on the host
			      * unless the backend's private_workdir made it */
	bool workdir_fresh;
	const char *stdin_data;
	size_t stdin_len;
	int cancel_fd; /* readable when cancelled, or -1 */
	int extra_fd;  /* call mode: a descriptor passed to the child as fd 3, or -1; the
			* backend takes it (closes the host's copy once the child has it) */
	int frame_fd;  /* call mode: the host's read end of extra_fd's pipe, or -1; taken
			* by the backend (govex__run_shim closes it) */
	/* Aggregate controls this run requires (memory, CPU, pids): the backend enforces
	 * them with an aggregate mechanism (a cgroup) or fails the launch. */
	govex__ctlset aggregate;
	uint64_t frame_max; /* largest response payload accepted */
	/* files the run needs to read besides the runtime's (govex exec: the executable,
	 * its loader and libraries); a sandbox binds them read-only.  NULL = none. */
	char *const *extra_ro;
	/* files in (placed read-only in the workdir by the backend when the workdir is
	 * its private one; by govex__launch in a fresh host workdir, where a sandbox may
	 * still bind them read-only), and outputs: out_fd >= 0 is the
	 * host's memfd where the backend collects the output directory (files.c) */
	const struct govex_file *files;
	size_t n_files;
	bool outputs;
	int out_fd;
	/* live output (supervise.c) */
	govex_output_fn on_output;
	void *output_userdata;
	/* the sweep of dead workdirs to start once the shim exists (govex__run_shim), when
	 * the host only waits for the sandbox to start, or NULL */
	struct govex__sweep *sweep;
};

/* The argv of the policy's interpreter running the text given with -c (interp.c). */
void govex__interp_argv(govex_runtime *rt, const char *text, char *argv[8]);
/* The file a launch executes (interp.c): argv[0], but for a venv's python (interp->exec,
 * argv[0] as govex__interp_argv names it) the planned real file (interp->path), run under the
 * venv's name (Python finds pyvenv.cfg from argv[0]): the venv's bin/python is a symlink its owner
 * may retarget after planning, and the program a run executes is the plan's. */
const char *govex__launch_exe(const struct govex__launch *l);

struct govex__buf {
	char *data;
	size_t len, cap;
};

struct govex__outcome {
	enum govex_termination term;
	int exit_code; /* when EXITED */
	int signal;    /* when SIGNALED */
	struct govex__buf out, err;
	uint64_t out_bytes, err_bytes;
	bool out_truncated, err_truncated;
	uint64_t wall_ms, cpu_ms, max_rss_bytes;
	/* launch failure: the step that failed (its name) and its errno, and what the
	 * backend said about it, when more than the errno ("" otherwise) */
	char failed_step[32];
	int failed_errno;
	char failed_message[sizeof(((struct govex_error *)0)->message)];
	/* call mode: the response frame read from the dedicated descriptor */
	struct govex__buf frame; /* header + payload, as received */
	enum {
		GOVEX_FRAME_NONE,
		GOVEX_FRAME_OK,
		GOVEX_FRAME_TRUNCATED,
		GOVEX_FRAME_OVERSIZED,
		GOVEX_FRAME_TRAILING
	} frame_state;
	/* call mode: the worker sent its empty "module starts" frame (written by the worker
	 * itself just before the module's code runs, so before any code of the caller
	 * could write to the descriptor).  Without it nothing but govex's worker ran. */
	bool frame_module_started;
	/* the host workdir could not be removed after the run (errno), else 0 */
	int workdir_cleanup_errno;
	/* the run's cgroup could not be removed after the run (errno), else 0 */
	int cgroup_cleanup_errno;
	/* restricted: aggregate controls whose cgroup limit did not hold to the run's end
	 * (rcg_limits_lost: a controller taken away from govex's cgroup meanwhile):
	 * withdrawn from the result's claims, and the run is not a success */
	govex__ctlset controls_lost;
	/* attempts the sandbox refused and counted (from the shim's report, never from
	 * the run's output): network_deny, subprocess_deny */
	uint64_t net_denied, exec_denied;
	/* filtered networking: the egress ledger (egress.h's govex__egress_stop), owned, or
	 * NULL */
	json_t *egress;
	/* outputs were requested: what came back (files.h), NULL when none could be read */
	bool outputs;
	struct govex__outfiles *outfiles;
};
void govex__outcome_release(struct govex__outcome *o);

struct govex__backend_ops {
	const char *name;
	const char *version;
	/* Probes this host; fills the report.  Called once per runtime. */
	void (*probe)(const struct govex_runtime_options *opts, struct govex__report *ret);
	/* Optional per-runtime preparation (done once, reused by every run); state is
	 * passed to run().  Called lazily, under the runtime's lock, before the first run
	 * on this backend. */
	int (*prepare)(const struct govex_runtime_options *opts, const struct govex_policy *p,
		       const struct govex__interp *interp, void **ret_state,
		       struct govex_error *err);
	void (*release)(void *state);
	/* Optional: where a fresh workdir is inside the sandbox when the backend makes it
	 * itself (no host directory at all), or NULL when it needs a host directory. */
	const char *(*private_workdir)(const void *state);
	/* Runs one launch to completion; fills the outcome.  Returns < 0 only when the
	 * run could not be attempted at all (then outcome term is LAUNCH_FAILED and
	 * err says why).  Thread-safe: several runs may share one state. */
	int (*run)(void *state, const struct govex__launch *launch, struct govex__outcome *ret,
		   struct govex_error *err);
	/* Optional: warm runs (govex_runtime_warm).  warm enables them for this state and,
	 * with proto, starts what serves runs shaped like it (its argv, environment,
	 * workdir): returns 0 when ready, or -errno with err saying why (runs then start
	 * cold); proto NULL: what serves a run starts at its first run.  warm_stats adds its
	 * counters to stats' "warm" object. */
	int (*warm)(void *state, const struct govex__launch *proto, struct govex_error *err);
	void (*warm_stats)(void *state, json_t *warm);
};

extern const struct govex__backend_ops govex__controlled_backend;
extern const struct govex__backend_ops govex__restricted_backend;
/* Every control the restricted backend's code can ever report (a cached report is
 * intersected with it). */
govex__ctlset govex__restricted_max_controls(void);
/* The restricted backend's seccomp allowlist: how many syscall numbers of this
 * architecture its policy-independent base list reaches (compiled in, never cached). */
int govex__restricted_syscalls_allowed(void);

/* The registry, in preference order (lightest adequate backend first). */
extern const struct govex__backend_ops *const govex__backends[];
extern const size_t govex__n_backends;

/* ---- supervision shared by backends (supervise.c) ------------------------------------ */

/* Message the shim writes to the host at the end of a run. */
struct govex__shim_report {
	int wait_status; /* of the main child */
	int killed;	 /* 1 when the shim killed the tree on the host's request */
	int64_t cpu_us;	 /* user+sys of every reaped descendant */
	int64_t max_rss_kb;
	int cgroup_oom; /* restricted: the cgroup saw an OOM kill */
	/* restricted: attempts the sandbox refused and counted (execonce.c): socket() under
	 * network: deny, a second execve under subprocess: deny */
	uint32_t net_denied, exec_denied;
};
/* the shim stops counting (and answering) refusals past this many */
#define GOVEX_DENIALS_COUNTED_MAX 4096

/*
 * Every step of a launch that can fail, in launch order: the host's preparation, the
 * shim's work in the new namespaces, the program child's between fork and execve, and
 * the probe's.  A child reports {step, errno} as data (git's child_err); the host turns
 * the step into its name only for the result ("step" of a launch_failed diagnostic:
 * the names are part of the result's contract).
 */
#define GOVEX__LAUNCH_STEPS(X)                                                                     \
	/* host, before the shim exists */                                                         \
	X(PREPARE, "prepare")                                                                      \
	X(SLOT, "slot")                                                                            \
	X(PLAN, "plan")                                                                            \
	X(WORKDIR, "workdir")                                                                      \
	X(CGROUP, "cgroup")                                                                        \
	X(PIPE, "pipe")                                                                            \
	X(SOCKETPAIR, "socketpair")                                                                \
	X(SUPERVISOR, "supervisor")                                                                \
	X(FORK, "fork")                                                                            \
	X(CLONE, "clone")                                                                          \
	X(ALLOC, "alloc")                                                                          \
	/* the shim */                                                                             \
	X(SHIM, "shim")                                                                            \
	X(SUBREAPER, "subreaper")                                                                  \
	X(UID_MAP, "uid_map")                                                                      \
	X(GID_MAP, "gid_map")                                                                      \
	X(HOSTNAME, "hostname")                                                                    \
	X(MOUNT_PRIVATE, "mount_private")                                                          \
	X(PROC, "proc")                                                                            \
	X(BIND_OPEN, "bind_open")                                                                  \
	X(OPEN_TREE, "open_tree")                                                                  \
	X(MOUNT_SETATTR, "mount_setattr")                                                          \
	X(TMPFS_ROOT, "tmpfs_root")                                                                \
	X(PIVOT_ROOT, "pivot_root")                                                                \
	X(MOUNTPOINT, "mountpoint")                                                                \
	X(MOVE_MOUNT, "move_mount")                                                                \
	X(TMPFS, "tmpfs")                                                                          \
	X(PROC_MASK, "proc_mask")                                                                  \
	X(FS_DENY, "fs_deny")                                                                      \
	X(SYMLINK, "symlink")                                                                      \
	X(REMOUNT_RO, "remount_ro")                                                                \
	X(SIGNALFD, "signalfd")                                                                    \
	X(EGRESS, "egress")                                                                        \
	/* the program child */                                                                    \
	X(CGROUPNS, "cgroupns")                                                                    \
	X(SETSID, "setsid")                                                                        \
	X(SETPGID, "setpgid")                                                                      \
	X(SECCOMP_GUARD, "seccomp_guard")                                                          \
	X(STDIO, "stdio")                                                                          \
	X(CHDIR, "chdir")                                                                          \
	X(NO_NEW_PRIVS, "no_new_privs")                                                            \
	X(LANDLOCK, "landlock")                                                                    \
	X(SECUREBITS, "securebits")                                                                \
	X(CAPS, "caps")                                                                            \
	X(SETGROUPS, "setgroups")                                                                  \
	X(SETGID, "setgid")                                                                        \
	X(SETUID, "setuid")                                                                        \
	X(RLIMIT_CORE, "rlimit_core")                                                              \
	X(RLIMIT_SIGPENDING, "rlimit_sigpending")                                                  \
	X(RLIMIT_CPU, "rlimit_cpu")                                                                \
	X(RLIMIT_AS, "rlimit_as")                                                                  \
	X(RLIMIT_FSIZE, "rlimit_fsize")                                                            \
	X(RLIMIT_NOFILE, "rlimit_nofile")                                                          \
	X(SECCOMP, "seccomp")                                                                      \
	X(EXECVE, "execve")                                                                        \
	/* the host, after the shim */                                                             \
	X(WAIT, "wait")                                                                            \
	/* the namespace probe */                                                                  \
	X(PROBE, "probe")                                                                          \
	X(PROBE_CHILD, "probe child")

enum govex__step {
	GOVEX__STEP_NONE = 0,
#define GOVEX__STEPENUM(id, name) GOVEX_STEP_##id,
	GOVEX__LAUNCH_STEPS(GOVEX__STEPENUM)
#undef GOVEX__STEPENUM
	    GOVEX__STEP_COUNT
};
/* The step's name ("execve"), or "unknown" for a value outside the table (a child's
 * report is data: it is checked like any other). */
const char *govex__step_name(enum govex__step step);

/* Child-side setup failure, written to the error pipe by the child before _exit: a
 * fixed layout, smaller than PIPE_BUF (one atomic write). */
struct govex__child_error {
	int32_t step; /* enum govex__step */
	int32_t err;  /* errno */
};

/* Writes a child_error in an async-signal-safe way. */
void govex__child_fail(int errfd, enum govex__step step, int err);
/* Async-signal-safe: 0 when rv (a libc or raw syscall's return) is not negative, else
 * -errno, read at once, before anything can clobber it. */
/* Whether the restricted backend runs as a privileged root: euid 0 holding CAP_SYS_ADMIN,
 * CAP_SETUID and CAP_SETGID (then runs get a uid of their own and no user namespace).
 * Root without them (a container's root, its capabilities dropped, in a user namespace
 * of its own) sandboxes like an unprivileged user: a user namespace per run.  Cached. */
bool govex__privileged(void);
/* The restricted backend's host cgroup (DESIGN.md "Hosts"), obtained now if this process
 * has none yet (once per process: it may move the process into a delegated leaf or a
 * systemd scope). */
void govex__restricted_host_prepare(const struct govex_runtime_options *opts);

static inline int govex__neg_errno(long rv)
{
	return rv < 0 ? -errno : 0;
}

/* The pipes of one run, host and child ends ([0] read, [1] write), all close-on-exec:
 * stdin, stdout, stderr, the child's setup-error pipe, the shim's report, the kill
 * request. */
struct govex__pipes {
	int in[2], out[2], err[2], ce[2], rep[2], kill[2];
};
/* Opens them all (-errno on failure, nothing left open). */
int govex__pipes_open(struct govex__pipes *p);
void govex__pipes_close(struct govex__pipes *p);
/* A run that could not start: fills the outcome with the step, errno and msg (may be
 * NULL: then the errno says it all), closes the launch's call-mode descriptors (the
 * backend owns them) and returns -e with err set. */
int govex__launch_failed(const struct govex__launch *l, struct govex__outcome *o,
			 struct govex_error *err, enum govex__step step, int e, const char *msg);

/*
 * How a backend makes its shim (git's struct child_process, reduced to what differs):
 * govex__run_shim() allocates everything the supervisor needs and opens the pipes,
 * then clones the shim (govex__clone(clone_flags)), which runs shim(ctx) and never
 * returns.  In the host, after_fork(ctx) (may be NULL) closes what only the children
 * need; the run is supervised to its end (stdin fed, output drained and bounded, the
 * deadline and cancellation kept, the shim's report collected), amend(ctx, report)
 * (may be NULL) adds the backend's accounting, and the report is interpreted.
 *
 * A backend whose shim already exists (a warm run's init, made by its template) sets
 * launch instead of shim: no process is made on the host; launch(ctx, deadline,
 * cancel_fd, &step) hands the run to it from the calling thread, with the pipes open,
 * never waiting past deadline (CLOCK_MONOTONIC ns, the run's wall deadline) and
 * returning early when cancel_fd (may be -1) is readable; 0 when the run is handed
 * over (whatever happens next is supervised and reported as from a shim), or -errno
 * with *step when nothing of it exists (a launch failure).  Supervision is the same;
 * where it would SIGKILL the shim as its last resort it calls last_resort(ctx).
 */
struct govex__shim_ops {
	int clone_flags;	    /* namespaces for the shim; 0: a plain child */
	enum govex__step fork_step; /* what a failed clone is called (fork, clone) */
	__attribute__((noreturn)) void (*shim)(void *ctx);
	int (*launch)(void *ctx, uint64_t deadline_ns, int cancel_fd, enum govex__step *ret_step);
	void (*last_resort)(void *ctx);
	void (*after_fork)(void *ctx);
	/* (may be NULL) then, in the host while the shim sets up: what the shim needs only
	 * later.  < 0 fails the launch (outcome and err filled: govex__launch_failed); the
	 * shim is then killed and reaped. */
	int (*after_clone)(void *ctx, struct govex__outcome *o, struct govex_error *err);
	void (*amend)(void *ctx, struct govex__shim_report *rep);
	bool pipes_open; /* the pipes are open already (a warm spare's, made ahead) */
	/* (may be NULL) once, when every output of the run (stdout, stderr, the call frame)
	 * is at its end before the shim's report has come: the program has most likely
	 * exited, and the shim is reaping it. */
	void (*outputs_done)(void *ctx);
	/* The shim's report is final: written once every process of the run is killed and
	 * reaped (the child's setup error, if any, written before), with nothing left for
	 * the shim to do but exit.  The host then reads the setup-error pipe once, at the
	 * end, instead of waking when the program's execve closes it, and returns the
	 * outcome without waiting for the shim's exit (a namespaced shim's exit tears its
	 * namespaces down: a third of a millisecond); the shim is reaped later
	 * (govex__reap_pending).  Without a full report the host waits as ever. */
	bool report_final;
};
/* Runs one launch through its shim.  pipes is where the pipes are opened (part of ctx,
 * for the shim to see); the host's ends are closed when this returns.  Returns 0 with the
 * outcome filled, or < 0 when the run could not be attempted (the outcome says
 * LAUNCH_FAILED, with the step; err says why). */
int govex__run_shim(const struct govex__launch *l, struct govex__pipes *pipes,
		    const struct govex__shim_ops *ops, void *ctx, struct govex__outcome *o,
		    struct govex_error *err);

/* Shims that reported and were left to exit (report_final): reaped through their
 * pidfds, never by pid (a pid someone else reaped may be another process by then).
 * block: wait for every one; else only those already gone.  govex__run_shim reaps the
 * gone ones, govex_runtime_free waits for all. */
void govex__reap_pending(bool block);
/* For a process about to exit (the CLI): forgets the shims still exiting; whoever
 * inherits them (init, a subreaper) reaps them. */
void govex__reap_leave_to_exit(void);

/* Fills the outcome's termination, exit code, signal and usage from a shim report (the
 * kill reason and launch failures set by the supervisor take precedence). */
void govex__outcome_from_report(struct govex__outcome *o, const struct govex__limits *l,
				const struct govex__shim_report *rep, bool got_report);

/* Monotonic nanoseconds. */
uint64_t govex__now_ns(void);

/* Applies limits as rlimits in a child (async-signal-safe).  Returns 0 or -errno and
 * sets *step. */
int govex__child_rlimits(const struct govex__limits *l, enum govex__step *ret_step);
/* A limit govex__child_rlimits would set as a hard rlimit above this process's own hard
 * limit, which it cannot raise without CAP_SYS_RESOURCE (and a child inherits):
 * fills *ret for the first one and returns 1; 0 when every one fits (or can be
 * raised).  want and host are in the rlimit's units (seconds for RLIMIT_CPU). */
struct govex__host_rlimit {
	const char *limit;  /* "open_files" */
	const char *rlimit; /* "RLIMIT_NOFILE" */
	uint64_t want, host;
};
int govex__rlimits_above_host(const struct govex__limits *l, struct govex__host_rlimit *ret);
/* Drops (to 0: not set, the inherited lower hard limit applies) every limit that
 * govex__rlimits_above_host would name: for govex's own probes, never for a run. */
void govex__rlimits_clamp_to_host(struct govex__limits *l);

/* Async-signal-safe shim helpers (shim.c). */
/* The one way a shim (or the shims' program child) is made: a bare clone() without
 * CLONE_VM, returning 0 in the child like fork(), on a copy of the stack; no atfork
 * handlers (and no sanitizer fork hooks) that could take a lock another thread of the
 * host held at this moment.  -1 with errno on failure. */
pid_t govex__clone(int flags);
/* In a shim: reports {step, -r} on errfd and exits 127. */
__attribute__((noreturn)) void govex__shim_fail(int errfd, enum govex__step step, int r);
/* In a shim, once the tree is reaped: adds the children's usage to rep, writes it to
 * fd and exits 0. */
__attribute__((noreturn)) void govex__shim_report(int fd, struct govex__shim_report *rep);
/* Kills and reaps every descendant of the calling subreaper process. */
void govex__shim_sweep(pid_t pgid);
/* In a child: puts in/out/err on 0/1/2 and extra (when >= 0) on 3, then closes every
 * other fd but *errpipe, which is moved above 10 first (and updated).  Async-signal-safe. */
int govex__child_stdio(int in, int out, int err, int extra, int *errpipe,
		       enum govex__step *ret_step);
/* In a child: default signal dispositions and an empty mask (async-signal-safe). */
void govex__child_reset_signals(void);
/* Closes every fd >= lowfd except those listed (async-signal-safe). */
void govex__close_fds_except(int lowfd, const int *keep, size_t nkeep);

/* ---- results (result.c) ------------------------------------------------------------ */

govex_result *govex__result_new(enum govex_status status, enum govex_termination term);
void govex__result_set_status(govex_result *r, enum govex_status status,
			      enum govex_termination term);
/* Appends {"code": code, "message": ..., extra...}; takes extra (an object or NULL). */
void govex__result_diag(govex_result *r, const char *code, json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void govex__result_set_backend(govex_result *r, const char *name, const char *version,
			       govex__ctlset controls);
void govex__result_set_digests(govex_result *r, const char *policy, const char *plan);
void govex__result_set_value(govex_result *r, json_t *value); /* takes value */
void govex__result_take_outcome(govex_result *r, struct govex__outcome *o);
/* Builds the JSON document and summary; call once everything is set. */
int govex__result_finish(govex_result *r);

/* The Python source of a notebook (code cells joined in order); magics and shell escapes
 * refused naming the cell. */
int govex__notebook_to_python(const char *data, size_t len, char **ret, size_t *ret_len,
			      struct govex_error *err);

/* The embedded call-mode worker (the package src/worker/govex_worker and its entry
 * src/worker/worker.py) and its inspection part (the subpackage govex_worker/inspection,
 * prepended for inspections only): Python texts that hold the modules and load them
 * (tools/embed.py --package), embedded at build time. */
extern const unsigned char govex__worker_py[];
extern const size_t govex__worker_py_len;
extern const unsigned char govex__worker_inspection_py[];
extern const size_t govex__worker_inspection_py_len;

/* The pollable fd of a cancellation token (readable once cancelled), or -1. */
int govex__cancel_fd(const govex_cancel_token *c);

/* Removes a directory tree without following symlinks or crossing mounts, with a bounded
 * number of fds at any depth.  Returns 0 or -errno (what could not be removed stays). */
int govex__rm_rf(const char *path);
/* Makes a fresh 0700 directory govex-XXXXXX under $TMPDIR or /tmp and returns it with
 * *ret_lock_fd, an O_CLOEXEC fd on it holding flock(LOCK_EX) for as long as the run
 * lasts (close it after removing the directory).  Also removes a few leftovers of dead
 * runs (siblings of ours whose lock is free). */
int govex__make_workdir(char **ret_path, int *ret_lock_fd, struct govex_error *err);
/* Removes (a bounded number of) host workdirs under $TMPDIR whose runs' govex died:
 * govex__make_workdir does it too; a runtime whose runs make none does it once. */
void govex__sweep_workdirs(void);
/* The same sweep in a thread, started before a run and joined after it (at once, here,
 * when no thread can be made): its cost overlaps the sandbox's start. */
struct govex__sweep {
	pthread_t thread;
	bool started; /* a thread to join */
	bool begun;   /* govex__sweep_start was called */
};
void govex__sweep_start(struct govex__sweep *s);
void govex__sweep_join(struct govex__sweep *s);
/* The directories that hold the restricted backend's run-slot locks for this caller
 * (pushed onto *v): whoever writes there could take another run's slot and have its
 * cgroups reclaimed, so planning protects them like the cache. */
int govex__slot_lock_dirs(const char *cache_dir, char ***v);

#endif /* GOVEX_INTERNAL_H */
