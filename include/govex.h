/* SPDX-License-Identifier: MIT */
/*
 * govex.h - run Python code under an enforced policy.
 *
 * This header is the API documentation of libgovex.
 *
 * Lifecycle
 * ---------
 *   1. Make a policy: govex_policy_parse() (JSON bytes), govex_policy_load() (a file) or
 *      govex_policy_preset() ("strict", "workspace", "trusted").  A policy is immutable
 *      once made and may be shared between threads.
 *   2. Make a runtime from it: govex_runtime_new().  The runtime copies the policy,
 *      probes the backends on this host once, and caches per-runtime preparation
 *      (the interpreter probe).  One runtime may serve many runs, from several threads.
 *   3. Fill a struct govex_request (zero it first, then set what you need) and call
 *      govex_runtime_run(), or govex_runtime_plan() followed by govex_runtime_execute()
 *      when the plan must be reviewed or approved in between.
 *   4. Read the struct govex_result_view returned by govex_result_view() or the JSON
 *      document from govex_result_json(); free the result with govex_result_free().
 *   5. govex_runtime_free(), govex_policy_free().
 *
 * Conventions
 * -----------
 *   - Functions returning int return 0 (or a positive count) on success and a negative
 *     value on failure: -GOVEX_E* for govex's own errors, -errno for system errors.
 *     When an optional struct govex_error * is given, it receives the code, the errno
 *     and a short message naming the subject (for a policy: the JSON path of the field).
 *   - Output parameters are named ret_* and come last; they are set only on success.
 *   - Destructors accept NULL and return NULL.
 *   - The caller owns what a function returns unless it is const.  Each prototype says
 *     whether a function copies, borrows or takes its arguments.
 *   - A refusal (policy refused, invalid input, source mismatch) is not an API error: it
 *     is a result with that status.  API errors are misuse, allocation failure and I/O.
 *   - The library never prints, logs to stdio, exits or installs signal handlers.
 */
#ifndef GOVEX_H
#define GOVEX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GOVEX_API __attribute__((visibility("default")))
#else
#define GOVEX_API
#endif

/* Library version and the contract versions it speaks. */
#define GOVEX_VERSION_MAJOR  0
#define GOVEX_VERSION_MINOR  3
#define GOVEX_VERSION_PATCH  0
#define GOVEX_VERSION_STRING "0.3.0"

#define GOVEX_POLICY_VERSION	 "govex.policy/v1"
#define GOVEX_BACKEND_VERSION	 "govex.backend/v1"
#define GOVEX_REQUEST_VERSION	 "govex.request/v1"
#define GOVEX_PLAN_VERSION	 "govex.plan/v1"
#define GOVEX_INSPECTION_VERSION "govex.inspection/v1"
#define GOVEX_RESULT_VERSION	 "govex.result/v1"
#define GOVEX_AUDIT_VERSION	 "govex.audit/v1"
#define GOVEX_FRAME_VERSION	 "govex.frame/v1"

/* Returns the library's version string, e.g. "0.1.0".  Static storage; thread-safe. */
GOVEX_API const char *govex_version(void);

/*
 * Errors.  One table generates the enum, govex_error_name() and govex_strerror().
 */
#define GOVEX_ERRORS(X)                                                                            \
	X(INVAL, 1, "invalid argument")                                                            \
	X(POLICY, 2, "invalid policy")                                                             \
	X(JSON, 3, "malformed JSON")                                                               \
	X(UTF8, 4, "invalid UTF-8")                                                                \
	X(RANGE, 5, "value out of range")                                                          \
	X(PRESET, 6, "unknown preset")                                                             \
	X(PLAN, 7, "invalid plan")                                                                 \
	X(INTERP, 8, "interpreter probe failed")                                                   \
	X(BACKEND, 9, "no such backend")                                                           \
	X(TOOBIG, 10, "input too large")                                                           \
	X(INTERNAL, 11, "internal error")

enum govex_error_code {
#define GOVEX__ERRENUM(name, num, msg) GOVEX_E##name = 1000 + (num),
	GOVEX_ERRORS(GOVEX__ERRENUM)
#undef GOVEX__ERRENUM
};

/* Fixed size, no heap: it can be copied across a pipe from a forked child. */
struct govex_error {
	int code;	   /* GOVEX_E* or an errno value (then equal to sys_errno) */
	int sys_errno;	   /* errno of the failing call, 0 when none */
	char message[240]; /* "subject": cause; NUL-terminated, lowercase, no period */
};

/* Name ("GOVEX_EPOLICY", "ENOENT") and description of a code (GOVEX_E* or errno; sign is
 * ignored).  Static storage; thread-safe. */
GOVEX_API const char *govex_error_name(int code);
GOVEX_API const char *govex_strerror(int code);

/* ------------------------------------------------------------------------------------
 * Policies (govex.policy/v1)
 * ---------------------------------------------------------------------------------- */

typedef struct govex_policy govex_policy;

/*
 * Parses and validates a policy document.  Copies json.  Every field of DESIGN.md is
 * checked: unknown fields, duplicate keys, invalid UTF-8, NUL in names and paths,
 * wrong types, out-of-range numbers and relative or non-normalized paths are
 * rejected with -GOVEX_EPOLICY and ret_err->message naming the JSON path of the
 * field ("limits.wall_ms: must be between 1 and 3600000").  Thread-safe.
 */
GOVEX_API int govex_policy_parse(const char *json, size_t len, govex_policy **ret_policy,
				 struct govex_error *ret_err);

/* As govex_policy_parse() on the contents of path (at most 1 MiB).  Thread-safe. */
GOVEX_API int govex_policy_load(const char *path, govex_policy **ret_policy,
				struct govex_error *ret_err);

/* A built-in preset: "strict", "workspace" (strict plus read of the current working
 * directory, resolved now) or "trusted".  Thread-safe. */
GOVEX_API int govex_policy_preset(const char *name, govex_policy **ret_policy,
				  struct govex_error *ret_err);

/* Canonical bytes of the normalized policy with every default filled in (sorted keys,
 * no whitespace, one trailing newline; NUL-terminated as well).  Borrowed: valid while
 * the policy lives. */
GOVEX_API const char *govex_policy_canonical(const govex_policy *policy, size_t *ret_len);

/* "sha256:<64 hex>" of the canonical bytes.  Borrowed, like the canonical bytes. */
GOVEX_API const char *govex_policy_digest(const govex_policy *policy);

GOVEX_API govex_policy *govex_policy_free(govex_policy *policy);

/* ------------------------------------------------------------------------------------
 * Cancellation
 * ---------------------------------------------------------------------------------- */

typedef struct govex_cancel_token govex_cancel_token;

/* A cancellation token; give it to requests.  One token may cancel several runs. */
GOVEX_API int govex_cancel_new(govex_cancel_token **ret_cancel);

/* Cancels every run using this token, now and later.  Thread-safe and
 * async-signal-safe (a single write(2)): it may be called from a signal handler. */
GOVEX_API void govex_cancel(govex_cancel_token *cancel);

/* Frees the token.  No run may still be using it. */
GOVEX_API govex_cancel_token *govex_cancel_free(govex_cancel_token *cancel);

/* ------------------------------------------------------------------------------------
 * Requests
 * ---------------------------------------------------------------------------------- */

/* Declared needs of a request; a need the policy does not allow refuses the run. */
enum govex_need {
	GOVEX_NEED_NETWORK = 1u << 0,
	GOVEX_NEED_FILESYSTEM_WRITE = 1u << 1,
	GOVEX_NEED_SUBPROCESS = 1u << 2,
};

/* Requested limits; 0 means "the policy's value".  A value above the policy's is
 * refused (invalid_input), never clamped. */
struct govex_limits {
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t processes;
	uint64_t open_files;
	uint64_t file_size_bytes;
	uint64_t stdout_bytes;
	uint64_t stderr_bytes;
};

/*
 * Live output: called on the supervising thread as a run's output arrives, in the order
 * it was read; stream 1 is stdout, 2 stderr.  Only bytes within the run's output bounds
 * are passed; the result's stdout and stderr hold the same bytes.  The callback must not
 * block for long and must not call back into the runtime.
 */
typedef void (*govex_output_fn)(void *userdata, int stream, const char *data, size_t len);

/* A file handed to a run: placed read-only in its workdir under name (a plain file name:
 * [A-Za-z0-9._-], 1 to 128 characters, no leading '.', unique within the request). */
struct govex_file {
	const char *name;
	const char *data;
	size_t len;
};

/*
 * A run request.  Zero it, then set fields.  Everything is borrowed for the duration of
 * the call that takes the request.
 */
struct govex_request {
	const char *language; /* "python"; NULL means "python" */
	const char *code;     /* the source bytes (need not be NUL-terminated) */
	size_t code_len;
	const char *source_path; /* optional: absolute path the code was read from; recorded in
				  * the plan so that a later execute can re-read it */
	const char *stdin_data;	 /* optional */
	size_t stdin_len;
	const char *workdir; /* optional absolute path; NULL = the policy's workdir */
	struct govex_limits limits;
	const char *const *env;	     /* optional NULL-terminated "NAME=VALUE" list; names must be
				      * allowed by the policy's environment.allow */
	unsigned needs;		     /* enum govex_need bits */
	int shell;		     /* shell intent (only the process toolkit uses a shell) */
	const char *const *metadata; /* optional NULL-terminated "key=value" list, for audit */
	govex_cancel_token *cancel;  /* optional */
	/* REPL-style run: the code runs in govex's worker, a final expression statement's
	 * value comes back as the result's value, top-level await works (Python >= 3.8) */
	int repl;
	const char *inputs_json; /* repl only, optional: a JSON object, read-only as INPUTS */
	size_t inputs_len;
	const struct govex_file *files; /* optional files in */
	size_t n_files;
	int outputs;		   /* 1: collect the files the run leaves in $GOVEX_OUTPUT_DIR */
	govex_output_fn on_output; /* optional live output */
	void *output_userdata;
};

/* ------------------------------------------------------------------------------------
 * Runtime
 * ---------------------------------------------------------------------------------- */

typedef struct govex_runtime govex_runtime;
typedef struct govex_plan govex_plan;
typedef struct govex_result govex_result;

/*
 * Approver: asked, for a run whose policy requires approval of a permission the run
 * may use, with the canonical plan bytes and the NULL-terminated list of permission
 * names ("network", "filesystem_write", "shell", "subprocess").  Return 1 to approve,
 * 0 to deny.  Called on the thread that runs the request.
 */
typedef int (*govex_approve_fn)(void *userdata, const char *plan, size_t plan_len,
				const char *const *permissions);

/* Audit sink: one govex.audit/v1 JSON object (no trailing newline) per call.  Called on
 * the thread that runs the request; serialise in the callback if runs are concurrent. */
typedef void (*govex_audit_fn)(void *userdata, const char *line, size_t len);

struct govex_runtime_options {
	govex_approve_fn approve; /* NULL: runs needing approval are refused */
	void *approve_userdata;
	govex_audit_fn audit; /* optional audit callback */
	void *audit_userdata;
	int audit_fd;		     /* > 0: audit lines are also appended to this fd (borrowed);
				      * 0 or -1: none.  A zeroed struct means no audit fd, so fd 0
				      * (standard input) can never be an audit sink: dup() it above
				      * 2 if that is really meant */
	const char *probe_cache_dir; /* optional directory where interpreter probes are
				      * cached across processes (keyed by the executable's
				      * identity); NULL = cache in the runtime only */
	const char *backend;	     /* optional: force this backend (overrides policy.backend) */
	/* Restricted backend run as root: each concurrent run has a slot N (taken with a
	 * lock in /run/govex/slots) and its code runs as host uid sandbox_uid + N and gid
	 * sandbox_gid + N, N < sandbox_uid_count: concurrent runs never share an identity
	 * (nor per-user kernel limits).  Give govex a range no user or group of the host
	 * uses.  0 = the defaults: sandbox_uid 0x7f000000 (2130706432), sandbox_gid = the
	 * uid base, sandbox_uid_count 65536 (the range is cut short below uid 2^32-1).
	 * Not root: the code keeps the caller's ids (in a user namespace); these are
	 * unused. */
	uint32_t sandbox_uid;
	uint32_t sandbox_gid;
	uint32_t sandbox_uid_count;
	/* Restricted backend on cgroup v2: where the per-run cgroups of the aggregate limits
	 * (memory, tasks, CPU time of a whole run) are made (DESIGN.md "Hosts").
	 *   NULL or "auto": below govex's own cgroup when it is delegated to it (a systemd
	 *     unit or scope with Delegate=yes, a user's user@UID.service subtree, a
	 *     container's cgroup-namespace root on a writable cgroupfs): the processes in it
	 *     move into its leaf child "supervisor" and the memory and pids controllers are
	 *     enabled for its children; else, on a systemd host, this process first asks
	 *     systemd (the system manager as root, the user's otherwise) for a transient
	 *     scope with Delegate=yes and moves into it.  Either changes the cgroup of the
	 *     whole calling process, once per process (later runtimes keep the outcome).
	 *   "own": the same without asking systemd.
	 *   "none": never; the aggregate limits are then missing on cgroup v2 hosts.
	 *   "/sys/fs/cgroup/...": a cgroup the host manages and hands to govex: runs' cgroups
	 *     are made below it; it must hold no process (or already have memory and pids in
	 *     its cgroup.subtree_control); the calling process is not moved.  A normalized
	 *     absolute path (no "..", ".", "//", trailing "/"); the cgroup and its files
	 *     govex writes owned by the caller's euid and writable by no group or other, and
	 *     no cgroup above it whose cgroup.procs another user can write.
	 *   Any other value obtains nothing, as "none" does, and says so.
	 * cgroup v1 hierarchies (memory, pids, cpuacct) are used as they are, whatever this
	 * says.  `govex backends` shows which was used. */
	const char *cgroup;
};

/*
 * Makes a runtime.  Copies policy and opts (strings included).  opts may be NULL
 * (no approver, no audit).  Probes the registered backends on this host.  The
 * runtime is thread-safe: runs may proceed concurrently from several threads.
 */
GOVEX_API int govex_runtime_new(const govex_policy *policy,
				const struct govex_runtime_options *opts,
				govex_runtime **ret_runtime, struct govex_error *ret_err);

GOVEX_API govex_runtime *govex_runtime_free(govex_runtime *runtime);

/*
 * Warm runs (DESIGN.md "Warm runs"), for long-lived hosts (a server, `govex mcp`):
 * from now on, restricted runs of this runtime that can be are forked from a template,
 * an interpreter started once per policy inside the sandbox's outer layers; each run
 * still enters its own namespaces, workdir, identity, cgroup, Landlock, seccomp and
 * rlimits before its code, and has the same controls, statuses and result document as a
 * cold run.  The runtime's templates are started now: returns 0 when they are ready, or
 * a negative errno with ret_err saying why (the runtime then goes on running cold; a
 * later call may try again).  Runs that cannot be forked (another backend, extra
 * read-only paths, other interpreter flags) run cold as before.  A thread of the
 * runtime also keeps spares: runs made ahead, shaped like the last run of each kind
 * (its slot, cgroups and every sandbox step taken, nothing of any request), so that a
 * run shaped alike has only its own environment, code and files on its path; each spare
 * holds a run slot while it waits (none with fewer than 64 slots), and
 * govex_runtime_free releases them.
 */
GOVEX_API int govex_runtime_warm(govex_runtime *runtime, struct govex_error *ret_err);

/*
 * The runtime's counters as one JSON object (malloc'ed, free()): at least
 * {"runs_in_flight":N,"runs_started":N,"warm":{"enabled":B,"ready":B,"templates":N,
 * "warm_runs":N,"spares":N,"spare_runs":N,"spare_slots":[N],"cold_runs":N},
 * "runnable":B,"missing_controls":[S]}; members may be added.  runnable: a backend of this
 * host enforces every control the runtime's policy requires (else missing_controls names
 * what the closest backend lacks, and every run of the policy would be refused).  For
 * health and metrics endpoints.
 * Returns 0 or -ENOMEM.
 */
GOVEX_API int govex_runtime_stats_json(govex_runtime *runtime, char **ret_json);

/* Borrowed policy of the runtime. */
GOVEX_API const govex_policy *govex_runtime_policy(const govex_runtime *runtime);

/*
 * The govex.backend/v1 reports of every registered backend as a JSON array (one line,
 * newline-terminated).  Caller frees with free().  Thread-safe.
 */
GOVEX_API int govex_runtime_backends_json(govex_runtime *runtime, char **ret_json);

/*
 * Validates and normalizes req against the policy, chooses a backend and builds the
 * plan, without running anything and without asking the approver.  On a refusal
 * (invalid input, policy refused) *ret_plan is NULL and *ret_result holds the
 * refusal; otherwise *ret_plan is set and *ret_result is NULL.  Returns < 0 only on
 * API errors.  Borrows req.
 */
GOVEX_API int govex_runtime_plan(govex_runtime *runtime, const struct govex_request *req,
				 govex_plan **ret_plan, govex_result **ret_result,
				 struct govex_error *ret_err);

/* Canonical bytes and digest of a plan.  Borrowed from the plan. */
GOVEX_API const char *govex_plan_canonical(const govex_plan *plan, size_t *ret_len);
GOVEX_API const char *govex_plan_digest(const govex_plan *plan);
/* The source path recorded in the plan, or NULL.  Borrowed. */
GOVEX_API const char *govex_plan_source_path(const govex_plan *plan);
/* The function a call plan binds, or NULL for a run plan.  Borrowed. */
GOVEX_API const char *govex_plan_function(const govex_plan *plan);

/*
 * Parses a plan made earlier (canonical bytes as printed by govex plan).  Copies json.
 * The plan is checked again at execute time against the runtime's policy and the
 * request's bytes.
 */
GOVEX_API int govex_plan_parse(const char *json, size_t len, govex_plan **ret_plan,
			       struct govex_error *ret_err);

GOVEX_API govex_plan *govex_plan_free(govex_plan *plan);

/*
 * Runs exactly plan: req is validated and planned again and the fresh plan must equal
 * the given one byte for byte (code, stdin, policy digest, limits, backend...); a
 * different code digest gives status source_mismatch, a different policy digest
 * policy_refused, nothing runs.  Asks the approver when the policy requires it.
 * Blocks until the run ends.  Borrows plan and req.
 */
GOVEX_API int govex_runtime_execute(govex_runtime *runtime, const govex_plan *plan,
				    const struct govex_request *req, govex_result **ret_result,
				    struct govex_error *ret_err);

/* govex_runtime_plan() then govex_runtime_execute(): the usual way to run code. */
GOVEX_API int govex_runtime_run(govex_runtime *runtime, const struct govex_request *req,
				govex_result **ret_result, struct govex_error *ret_err);

/* ------------------------------------------------------------------------------------
 * Call mode: one Python function, JSON in, JSON out
 *
 * A module is inspected statically (Python's ast, in a worker run under the policy; the
 * module is never imported), a call is planned (binding the source digest, the
 * function's signature, the inspection digest and the policy), and a fresh worker runs
 * exactly that function with the arguments and returns its JSON value in the result's
 * "value".  Requires Python 3.8 or later.
 * ---------------------------------------------------------------------------------- */

/* A module's source.  Zero it, then set fields.  Borrowed for the call. */
struct govex_source {
	const char *data; /* the file's bytes: Python source (UTF-8), or a notebook's JSON */
	size_t len;
	const char *path;   /* optional absolute path, recorded in plans for re-reading */
	int notebook;	    /* data is an .ipynb document: its code cells are joined in
			     * order into one Python source, each ending with a newline; a
			     * cell with an IPython magic or shell escape is invalid input */
	const char *module; /* module name; NULL = derived from path ("module" otherwise) */
};

/*
 * Inspects a module: on success *ret_inspection is the canonical govex.inspection/v1
 * document (caller frees) and *ret_result is NULL; when the source is invalid (syntax
 * error, notebook with magics, not UTF-8) or the policy refuses the worker, the
 * inspection is NULL and *ret_result says why.  Thread-safe.
 */
GOVEX_API int govex_runtime_inspect(govex_runtime *runtime, const struct govex_source *src,
				    char **ret_inspection, govex_result **ret_result,
				    struct govex_error *ret_err);

/* A call request.  Zero it, then set fields.  Borrowed for the call. */
struct govex_call {
	struct govex_source source;
	const char *function; /* a top-level function of the module */
	const char *args;     /* JSON object: parameter name -> value (NULL = {}) */
	size_t args_len;
	struct govex_limits limits;	/* wall_ms etc.; 0 = the policy's */
	const char *const *metadata;	/* optional "key=value" list, for audit */
	govex_cancel_token *cancel;	/* optional */
	const struct govex_file *files; /* optional files in (as struct govex_request) */
	size_t n_files;
	int outputs;
	govex_output_fn on_output;
	void *output_userdata;
};

/*
 * Plans a call (inspects the module, checks the function's eligibility, the effects the
 * policy requires to be known, and chooses a backend) without running user code.  As
 * govex_runtime_plan(): a refusal comes back as *ret_result with *ret_plan NULL.
 */
GOVEX_API int govex_runtime_plan_call(govex_runtime *runtime, const struct govex_call *call,
				      govex_plan **ret_plan, govex_result **ret_result,
				      struct govex_error *ret_err);

/*
 * Runs a call; with plan non-NULL, exactly that plan: the source is re-read from call
 * and a single differing byte gives source_mismatch before any user code runs.  The
 * result's "value" holds the function's return value (finite JSON only), its stdout and
 * stderr what the function printed (bounded as a run's output); an exception it raised
 * is a diagnostic "exception" with its type, message and the traceback of the module's
 * own code.  Thread-safe.
 */
GOVEX_API int govex_runtime_call(govex_runtime *runtime, const govex_plan *plan,
				 const struct govex_call *call, govex_result **ret_result,
				 struct govex_error *ret_err);

/* ------------------------------------------------------------------------------------
 * Process toolkit: run an executable, argv first, under the same policy and backends
 * ---------------------------------------------------------------------------------- */

/* An exec request.  Zero it, then set fields.  Borrowed for the call. */
struct govex_exec {
	/* argv[0] names the executable: a path, or a name searched on the caller's PATH
	 * before planning.  The plan carries the absolute path and the digest of its
	 * bytes; a sandbox binds it, its loader and the libraries it loads read-only. */
	const char *const *argv;
	/* Or, instead of argv: a command string run as /bin/sh -c STRING, only when the
	 * policy says shell: allow (else policy_refused naming shell), and approved when
	 * the policy requires approval for shell.  Nothing else interprets strings. */
	const char *shell;
	const char *stdin_data; /* optional */
	size_t stdin_len;
	struct govex_limits limits;
	const char *const *env; /* optional "NAME=VALUE" list (names in environment.allow) */
	unsigned needs;		/* enum govex_need bits */
	const char *const *metadata;
	govex_cancel_token *cancel;
	/* files in and out, live output: as struct govex_request */
	const struct govex_file *files;
	size_t n_files;
	int outputs;
	govex_output_fn on_output;
	void *output_userdata;
};

/* Plans an exec without running anything (as govex_runtime_plan()). */
GOVEX_API int govex_runtime_plan_exec(govex_runtime *runtime, const struct govex_exec *exec,
				      govex_plan **ret_plan, govex_result **ret_result,
				      struct govex_error *ret_err);

/* Runs an exec; with plan non-NULL, exactly that plan (a changed executable gives
 * source_mismatch).  The result is that of a run: status, exit code, output. */
GOVEX_API int govex_runtime_exec(govex_runtime *runtime, const govex_plan *plan,
				 const struct govex_exec *exec, govex_result **ret_result,
				 struct govex_error *ret_err);

/* ------------------------------------------------------------------------------------
 * Results (govex.result/v1)
 * ---------------------------------------------------------------------------------- */

enum govex_status {
	GOVEX_STATUS_SUCCESS,
	GOVEX_STATUS_EXECUTION_FAILED,
	GOVEX_STATUS_TIMEOUT,
	GOVEX_STATUS_CANCELLED,
	GOVEX_STATUS_RESOURCE_LIMIT,
	GOVEX_STATUS_OUTPUT_LIMIT,
	GOVEX_STATUS_INVALID_INPUT,
	GOVEX_STATUS_POLICY_REFUSED,
	GOVEX_STATUS_WORKER_FAILED,
	GOVEX_STATUS_BINDING_FAILED,
	GOVEX_STATUS_RESULT_INVALID,
	GOVEX_STATUS_SOURCE_MISMATCH,
};

enum govex_termination {
	GOVEX_TERM_NONE, /* never started (refused before launch) */
	GOVEX_TERM_EXITED,
	GOVEX_TERM_SIGNALED,
	GOVEX_TERM_TIMEOUT,
	GOVEX_TERM_CANCELLED,
	GOVEX_TERM_MEMORY_LIMIT,
	GOVEX_TERM_CPU_LIMIT,
	GOVEX_TERM_OUTPUT_LIMIT,
	GOVEX_TERM_REFUSED,
	GOVEX_TERM_LAUNCH_FAILED,
};

/* Stable names ("success", "timeout", ...).  Static storage. */
GOVEX_API const char *govex_status_name(enum govex_status status);
GOVEX_API const char *govex_termination_name(enum govex_termination termination);

/*
 * A read-only view of a result.  Every pointer is borrowed from the result.
 * Output: stdout/stderr hold the kept bytes (at most the run's bound) exactly as the
 * program wrote them (possibly invalid UTF-8); in the JSON document they are text in
 * which every byte sequence that is not valid UTF-8 is replaced by U+FFFD, a replaced
 * stream is flagged by a diagnostic "stdout_not_utf8"/"stderr_not_utf8" that counts the
 * bytes replaced, and a multi-byte character cut by truncation is dropped from the
 * kept text (the stream is marked truncated).  stdout_bytes/stderr_bytes count every
 * byte the program produced, kept or not.
 */
struct govex_result_view {
	enum govex_status status;
	enum govex_termination termination;
	int exit_code; /* valid when termination is EXITED, else -1 */
	int signal;    /* valid when termination is SIGNALED (and for limit kills), else 0 */
	const char *stdout_data;
	size_t stdout_len;
	const char *stderr_data;
	size_t stderr_len;
	uint64_t stdout_bytes, stderr_bytes;
	int stdout_truncated, stderr_truncated;
	uint64_t wall_ms, cpu_ms, max_rss_bytes;
	const char *backend_name;  /* NULL when no backend was chosen */
	const char *policy_digest; /* NULL when refused before the policy was read */
	const char *plan_digest;   /* NULL when refused before planning */
	const char *value;	   /* call mode: the returned value as JSON text, else NULL */
};

GOVEX_API const struct govex_result_view *govex_result_view(const govex_result *result);

/* The govex.result/v1 document (one line, newline-terminated).  Borrowed. */
GOVEX_API const char *govex_result_json(const govex_result *result, size_t *ret_len);

/* A short diagnostic line for humans: "status: first diagnostic message".  Borrowed. */
GOVEX_API const char *govex_result_summary(const govex_result *result);

/* The exit status the govex command uses for this result: the program's exit code,
 * 124 timeout, 125 refused/invalid/launch failure, 128+N for signal N. */
GOVEX_API int govex_result_exit_status(const govex_result *result);

/*
 * Makes a result that says a run was refused or could not start before reaching the
 * runtime (e.g. an unreadable policy file in a host), with one diagnostic {code,
 * message}.  status is one of INVALID_INPUT, POLICY_REFUSED, SOURCE_MISMATCH or
 * EXECUTION_FAILED (then termination is launch_failed).  Copies the strings.
 */
GOVEX_API int govex_result_new_refusal(enum govex_status status, const char *code,
				       const char *message, govex_result **ret_result);

/*
 * Adds a diagnostic {code, message} to a result: a host's own finding about it (the CLI:
 * an output file it could not save).  code is [a-z_]+; the message is bounded and made
 * valid UTF-8.  The document (govex_result_json) and summary are made again.  Returns 0,
 * -GOVEX_EINVAL, or -ENOMEM.  Not thread-safe with readers of the same result.
 */
GOVEX_API int govex_result_add_diagnostic(govex_result *result, const char *code,
					  const char *message);

GOVEX_API govex_result *govex_result_free(govex_result *result);

/* Files the run left in $GOVEX_OUTPUT_DIR (requests with outputs set): how many, and
 * file i (name, MIME type, bytes), borrowed from the result.  Returns 0, or
 * -GOVEX_EINVAL for an index out of range. */
GOVEX_API size_t govex_result_file_count(const govex_result *result);
GOVEX_API int govex_result_file(const govex_result *result, size_t i, const char **ret_name,
				const char **ret_mime, const void **ret_data, size_t *ret_len);

/* ------------------------------------------------------------------------------------
 * Tool provider: the model tools (run_python_snippet, one tool per eligible function
 * of a module) as data and a call; govex mcp is an adapter over it
 * ---------------------------------------------------------------------------------- */

typedef struct govex_toolset govex_toolset;

struct govex_toolset_options {
	const char *const *modules; /* optional NULL-terminated .py/.ipynb paths */
	int no_snippet;		    /* 1: no run_python_snippet tool */
};

/* Makes the tools for the runtime's policy (modules are read and inspected now). */
GOVEX_API int govex_toolset_new(govex_runtime *runtime, const struct govex_toolset_options *o,
				govex_toolset **ret_toolset, struct govex_error *ret_err);

/* The tools as a JSON array of MCP Tool objects (name, title, description derived from
 * the effective policy, inputSchema, outputSchema, annotations).  Caller frees. */
GOVEX_API char *govex_toolset_list(const govex_toolset *toolset);

struct govex_invoke {
	govex_cancel_token *cancel; /* optional */
	govex_output_fn on_output;  /* optional live output */
	void *output_userdata;
	const char *const *metadata; /* optional "key=value" list, for audit */
};

/*
 * Invokes a tool with a JSON object of arguments; *ret_json (caller frees) is an MCP
 * CallToolResult: content, structuredContent (the govex.result/v1 document) and isError.
 * Bad arguments, exceptions, denials and refusals are results with isError true; an
 * error return is only for an unknown tool (GOVEX_EINVAL) or no memory.  Thread-safe.
 */
GOVEX_API int govex_toolset_invoke(govex_toolset *toolset, const char *name, const char *args_json,
				   size_t args_len, const struct govex_invoke *invoke,
				   char **ret_json, struct govex_error *ret_err);

GOVEX_API govex_toolset *govex_toolset_free(govex_toolset *toolset);

#ifdef __cplusplus
}
#endif

#endif /* GOVEX_H */
