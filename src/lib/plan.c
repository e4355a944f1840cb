/* SPDX-License-Identifier: MIT */
/*
 * Plans: the plan object (canonical JSON and its digest, parsed plan files checked field
 * by field) and planning: a request validated against the policy, the interpreter
 * probed, protected paths kept, the backend chosen and the canonical plan built.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime.h"
#include "plan.h"
#include "protect.h"
#include "registry.h"
#include "request.h"
#include "approval.h"

#include "files.h"

/* ---- the plan object -------------------------------------------------------------------- */

void govex__decision_release(struct decision *d)
{
	govex__strv_free(d->env);
	free(d->workdir);
	memset(d, 0, sizeof(*d));
}

GOVEX_API govex_plan *govex_plan_free(govex_plan *p)
{
	if (p) {
		free(p->canon);
		free(p->source_path);
		json_decref(p->doc);
		free(p);
	}
	return NULL;
}

GOVEX_API const char *govex_plan_canonical(const govex_plan *p, size_t *ret_len)
{
	if (!p)
		return NULL;
	if (ret_len)
		*ret_len = p->len;
	return p->canon;
}

GOVEX_API const char *govex_plan_digest(const govex_plan *p)
{
	return p ? p->digest : NULL;
}

GOVEX_API const char *govex_plan_source_path(const govex_plan *p)
{
	return p ? p->source_path : NULL;
}

GOVEX_API const char *govex_plan_function(const govex_plan *p)
{
	return p ? json_string_value(json_object_get(json_object_get(p->doc, "function"), "name"))
		 : NULL;
}

govex_plan *govex__plan_from_doc(json_t *doc)
{
	govex_plan *p = calloc(1, sizeof(*p));
	if (!p) {
		json_decref(doc);
		return NULL;
	}
	p->doc = doc;
	if (govex__canon(doc, &p->canon, &p->len) < 0)
		return govex_plan_free(p);
	govex__sha256_digest(p->canon, p->len, p->digest);
	const char *sp = json_string_value(json_object_get(json_object_get(doc, "code"),
							   "source_path"));
	if (!sp) /* a call plan */
		sp = json_string_value(json_object_get(json_object_get(doc, "source"), "path"));
	if (sp && !(p->source_path = strdup(sp)))
		return govex_plan_free(p);
	return p;
}

/*
 * The fields a plan of each kind has (as govex__plan_internal and the call and exec
 * jobs make them), and those of its fixed-shape objects.  A plan file is checked against
 * them when parsed: a field govex never writes is refused there, naming it, rather than
 * found at execute time as a difference from the fresh plan.  The function object of a
 * call plan is the inspection's, compared whole at execute time.
 */
struct plan_field {
	const char *name;
	const char *const *sub; /* the object's fields, or NULL: not an object checked here */
};

static const char *const pf_backend[] = {"name", "version", NULL};
/* clang-format off */
static const char *const pf_limits[] = {
	"wall_ms",	"cpu_ms",	"memory_bytes",	    "processes",
	"open_files",	"file_size_bytes", "code_bytes",    "stdin_bytes",
	"stdout_bytes", "stderr_bytes", "call_input_bytes", "call_output_bytes",
	"files_in_bytes", "files_out_bytes", "files_out_count", NULL};
/* clang-format on */
static const char *const pf_outputs[] = {"max_files", "max_bytes", NULL};
static const char *const pf_environment[] = {"names", NULL};
static const char *const pf_workdir[] = {"mode", "path", NULL};
static const char *const pf_filesystem[] = {"read", "write", "platform_defaults", NULL};
static const char *const pf_controls[] = {"required", NULL};
static const char *const pf_code[] = {"language", "digest", "bytes", "source_path", NULL};
static const char *const pf_stdin[] = {"digest", "bytes", NULL};
static const char *const pf_interpreter[] = {"path", "version", "args", NULL};
static const char *const pf_source[] = {"digest", "bytes", "path", "notebook_digest", "module",
					NULL};
static const char *const pf_effects[] = {"require_known", "observed", NULL};
static const char *const pf_executable[] = {"path", "digest", "bytes", NULL};

/* clang-format off */
#define PF_COMMON                                                                          \
	{"version", NULL}, {"kind", NULL}, {"backend", pf_backend}, {"limits", pf_limits},  \
		{"environment", pf_environment}, {"workdir", pf_workdir},                  \
		{"filesystem", pf_filesystem}, {"network", NULL}, {"subprocess", NULL},    \
		{"shell", NULL}, {"needs", NULL}, {"approval", NULL},                      \
		{"controls", pf_controls}, {"policy_digest", NULL }, {"files", NULL},       \
		{"outputs", pf_outputs}
/* clang-format on */
static const struct plan_field pf_run[] = {
	PF_COMMON, {"code", pf_code}, {"stdin", pf_stdin}, {"interpreter", pf_interpreter},
	{"request_digest", NULL}, {NULL, NULL}};
static const struct plan_field pf_call[] = {
	PF_COMMON, {"interpreter", pf_interpreter}, {"source", pf_source}, {"function", NULL},
	{"inspection_digest", NULL}, {"effects", pf_effects}, {NULL, NULL}};
static const struct plan_field pf_exec[] = {
	PF_COMMON, {"executable", pf_executable}, {"argv", NULL}, {"shell_string", NULL},
	{"binds", NULL}, {NULL, NULL}};
#undef PF_COMMON

static bool name_in(const char *name, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

static int plan_check_fields(json_t *doc, struct govex_error *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const struct plan_field *f = !kind			  ? NULL
				     : strcmp(kind, "run") == 0	  ? pf_run
				     : strcmp(kind, "call") == 0 ? pf_call
				     : strcmp(kind, "exec") == 0 ? pf_exec
								  : NULL;
	if (!f)
		return govex__err(err, GOVEX_EPLAN, 0,
				  "plan: kind: must be \"run\", \"call\" or \"exec\"");
	const char *k;
	json_t *v;
	json_object_foreach(doc, k, v)
	{
		const struct plan_field *hit = NULL;
		for (size_t i = 0; f[i].name && !hit; i++)
			if (strcmp(k, f[i].name) == 0)
				hit = &f[i];
		if (!hit)
			return govex__err(err, GOVEX_EPLAN, 0,
					  "plan: %.80s: unknown field (a %s plan has no such field)",
					  k, kind);
		if (!hit->sub || !json_is_object(v))
			continue;
		const char *k2;
		json_t *v2;
		json_object_foreach(v, k2, v2) if (!name_in(k2, hit->sub))
			return govex__err(err, GOVEX_EPLAN, 0, "plan: %s.%.80s: unknown field", k,
					  k2);
	}
	return 0;
}

GOVEX_API int govex_plan_parse(const char *json, size_t len, govex_plan **ret_plan,
			       struct govex_error *ret_err)
{
	json_t *doc = NULL;
	if (!json || !ret_plan)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	if (len > (4u << 20))
		return govex__err(ret_err, GOVEX_ETOOBIG, 0, "plan: larger than 4 MiB");
	struct govex_error pe = {0};
	int r = govex__json_parse(json, len, 0, &doc, &pe);
	if (r < 0)
		return govex__err(ret_err, GOVEX_EPLAN, 0, "plan: %s", pe.message);
	const char *v = json_string_value(json_object_get(doc, "version"));
	if (!v || strcmp(v, GOVEX_PLAN_VERSION) != 0) {
		json_decref(doc);
		return govex__err(ret_err, GOVEX_EPLAN, 0,
				  "plan: version: must be \"" GOVEX_PLAN_VERSION "\"");
	}
	if ((r = plan_check_fields(doc, ret_err)) < 0) {
		json_decref(doc);
		return r;
	}
	govex_plan *p = govex__plan_from_doc(doc);
	if (!p)
		return govex__err(ret_err, GOVEX_EPLAN, 0,
				  "plan: not canonical-encodable (numbers must be integers)");
	*ret_plan = p;
	return 0;
}

/* ---- planning ----------------------------------------------------------------------------- */

/*
 * The interpreter is probed inside the restricted sandbox.  mode GOVEX_PROBE_HOST (a
 * plain child on the host) is asked for only when that sandbox is unavailable here and
 * the run has been planned on the controlled backend: its code is trusted by definition
 * (it runs the same interpreter on the host, as the caller, anyway).
 */
static int probe_interp(govex_runtime *rt, enum govex__probe_mode mode, struct govex_error *err)
{
	pthread_mutex_lock(&rt->lock);
	if (!rt->probed) {
		rt->probe_r = govex__interp_probe(rt->policy->interpreter, rt->probe_cache_dir, mode,
						  &rt->interp, &rt->probe_err);
		rt->probed = true;
	}
	int r = rt->probe_r;
	if (r < 0 && err)
		*err = rt->probe_err;
	pthread_mutex_unlock(&rt->lock);
	return r;
}

static govex__ctlset run_required(const govex_policy *p, const struct govex__limits *l)
{
	govex__ctlset s = govex__policy_required(p);
	/* the run's own limits (a request may set a limit the policy leaves open) */
	if (l->cpu_ms)
		s |= CTL(CPU_TIME_AGGREGATE);
	if (l->memory_bytes)
		s |= CTL(MEMORY_AGGREGATE);
	if (l->processes)
		s |= CTL(PIDS_AGGREGATE);
	if (l->open_files)
		s |= CTL(OPEN_FILES_PER_PROCESS);
	if (l->file_size_bytes)
		s |= CTL(FILE_SIZE_PER_PROCESS);
	return s;
}

/* Probes the interpreter; on failure *ret_res is an interpreter_unavailable result (NULL
 * when out of memory) and 1 is returned. */
static int interp_unavailable(govex_runtime *rt, enum govex__probe_mode mode, govex_result **ret_res)
{
	struct govex_error ie = {0};
	*ret_res = NULL;
	if (probe_interp(rt, mode, &ie) >= 0)
		return 0;
	govex_result *res = govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
	if (res) {
		govex__result_set_digests(res, rt->policy->digest, NULL);
		govex__result_diag(res, "interpreter_unavailable", NULL, "%s", ie.message);
	}
	*ret_res = res;
	return 1;
}

static bool readable_by_roots(const govex_policy *p, const char *path)
{
	char **roots[] = {p->read_roots, p->write_roots};
	for (size_t k = 0; k < ARRAY_SIZE(roots); k++)
		for (size_t i = 0; roots[k] && roots[k][i]; i++)
			if (govex__path_under(path, roots[k][i]))
				return true;
	return false;
}

/* What the interpreter needs to start (its executable, the shared libraries it maps,
 * its standard library and extension directories: what the probe found and rplan_build
 * binds under platform_defaults) that no read or write root covers, or NULL. */
static const char *interp_file_unreadable(const govex_runtime *rt)
{
	const struct govex__interp *in = &rt->interp;
	const govex_policy *p = rt->policy;
	if (in->path && !readable_by_roots(p, in->path))
		return in->path;
	for (size_t i = 0; in->libs && in->libs[i]; i++)
		if (!readable_by_roots(p, in->libs[i]))
			return in->libs[i];
	/* the executable's own directory is not needed (it is bound as a file) */
	const char *slash = in->path ? strrchr(in->path, '/') : NULL;
	size_t dlen = slash ? (size_t)(slash - in->path) : 0;
	for (size_t i = 0; in->paths && in->paths[i]; i++) {
		if (dlen && strlen(in->paths[i]) == dlen && strncmp(in->paths[i], in->path, dlen) == 0)
			continue;
		if (!readable_by_roots(p, in->paths[i]))
			return in->paths[i];
	}
	return NULL;
}

/*
 * One planning: the request, what the steps decided so far, and a refusal.  Each step
 * returns 0 to go on, 1 when the request is refused (res set) or -errno; they run in
 * the order of plan_steps below, which is the order a request's faults are reported in.
 */
struct planning {
	govex_runtime *rt;
	const govex_policy *p;
	const struct govex_request *req;
	json_t *job; /* borrowed; NULL for a run */
	bool exec;   /* job is an exec: it has stdin and runs no interpreter */
	struct decision d;
	json_t *meta; /* the request's metadata, owned until the request document takes it */
	bool probe_on_host;
	govex_plan *plan;
	govex_result *res;
};

#define REFUSE(status, code, extra, ...)                                                           \
	do {                                                                                       \
		pl->res = govex__refusal(pl->rt, status);                                          \
		if (!pl->res)                                                                      \
			return -ENOMEM;                                                            \
		govex__result_diag(pl->res, code, extra, __VA_ARGS__);                             \
		return 1;                                                                          \
	} while (0)

/* The request itself: its code (a run's), stdin, limits, needs, workdir, metadata. */
static int plan_request(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	const struct govex_request *req = pl->req;
	int r;
	if (!pl->job && (r = govex__request_check_code(rt, req, &pl->res)) != 0)
		return r;
	/* stdin: the program's (a call's request frame is not stdin) */
	if ((!pl->job || pl->exec) && (r = govex__request_check_stdin(rt, req, &pl->res)) != 0)
		return r;
	pl->d.limits = pl->p->limits;
	if ((r = govex__request_limits(rt, req, &pl->d.limits, &pl->res)) != 0)
		return r;
	return 0;
}

/* the host's hard rlimits: a run's limit above one cannot be set (without
 * CAP_SYS_RESOURCE) and every launch would fail at that step; refused now, naming
 * the host's limit.  Not clamped: the plan states the limits the run gets. */
static int plan_host_limits(struct planning *pl)
{
	struct govex__host_rlimit hr;
	if (govex__rlimits_above_host(&pl->d.limits, &hr))
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "host_limit_too_low",
		       json_pack("{s:s, s:s, s:I, s:I}", "limit", hr.limit, "rlimit", hr.rlimit,
				 "value", (json_int_t)hr.want, "host_hard_limit",
				 (json_int_t)hr.host),
		       "limits.%s: the run needs a hard %s of %llu but this host's "
		       "hard limit (of govex's process) is %llu, which govex cannot "
		       "raise without CAP_SYS_RESOURCE: raise the host's limit or lower "
		       "limits.%s",
		       hr.limit, hr.rlimit, (unsigned long long)hr.want,
		       (unsigned long long)hr.host, hr.limit);
	return 0;
}

/* files in and outputs (files.c): names, bounds, a fresh workdir */
static int plan_files(struct planning *pl)
{
	int r = govex__files_check(pl->rt, pl->req, pl->d.workdir != NULL, &pl->res);
	if (r != 0)
		return r;
	pl->d.files = pl->req->files;
	pl->d.n_files = pl->req->n_files;
	pl->d.outputs = pl->req->outputs != 0;
	pl->d.on_output = pl->req->on_output;
	pl->d.output_userdata = pl->req->output_userdata;
	return 0;
}

/* declared needs and shell intent, the workdir, metadata */
static int plan_needs_workdir_metadata(struct planning *pl)
{
	int r;
	if ((r = govex__request_needs(pl->rt, pl->req, &pl->res)) != 0 ||
	    (r = govex__request_workdir(pl->rt, pl->req, &pl->d.workdir, &pl->res)) != 0 ||
	    (r = govex__request_metadata(pl->rt, pl->req, &pl->meta, &pl->res)) != 0)
		return r;
	return plan_files(pl);
}

/* the environment the run gets */
static int plan_environment(struct planning *pl)
{
	int r = govex__build_env(pl->p, pl->req, &pl->d.env, &pl->res, pl->rt);
	if (r < 0)
		return r;
	if (!pl->res && pl->d.outputs && (r = govex__files_env(&pl->d.env)) < 0)
		return r;
	return pl->res ? 1 : 0;
}

/* interpreter: probed in the sandbox; without one on this host, only once the run
 * is planned on controlled (plan_interpreter_on_host) */
static int plan_interpreter(struct planning *pl)
{
	pl->probe_on_host = !govex__sandbox_available(pl->rt);
	if (!pl->probe_on_host && interp_unavailable(pl->rt, GOVEX_PROBE_SANDBOXED, &pl->res) != 0)
		return pl->res ? 1 : -ENOMEM;
	return 0;
}

/* protected paths: a sandboxed run may not write where govex keeps what it
 * believes (the cache), govex itself, or the interpreter's files */
static int plan_protected_paths(struct planning *pl)
{
	const govex_policy *p = pl->p;
	if (!pl->probe_on_host && (govex__policy_required(p) & CTL(FS_WRITE_ALLOWLIST))) {
		size_t nw = govex__strv_len(p->write_roots);
		for (size_t i = 0; i <= nw; i++) {
			const char *w = i < nw ? p->write_roots[i] : pl->d.workdir;
			_cleanup_free_ char *what = NULL;
			const char *prot = w ? govex__protected_overlap(pl->rt, w, &what) : NULL;
			if (!prot)
				continue;
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "protected_path",
			       json_pack("{s:s, s:s, s:s?}", "write_root", w, "protects", prot,
					 "path", what),
			       "%s '%.200s' overlaps %s (%.200s): a sandboxed run may not write "
			       "there",
			       i < nw ? "filesystem.write root" : "workdir", w,
			       strcmp(prot, "cache") == 0   ? "govex's cache directory"
			       : strcmp(prot, "govex") == 0 ? "govex's own files"
							    : "the interpreter's files",
			       what ? what : "?");
		}
	}

	/* A read root beneath /tmp: the sandbox's private /tmp is a tmpfs with every right
	 * for the run, and Landlock grants beneath /tmp to everything mounted under it, so
	 * such a root could not be kept read-only (its FIFOs would be writable).  A read
	 * root of /tmp itself replaces the private /tmp and is fine. */
	if (!pl->probe_on_host && (govex__policy_required(p) & CTL(FS_READ_ALLOWLIST))) {
		for (size_t i = 0; p->read_roots[i]; i++) {
			const char *root = p->read_roots[i];
			if (strcmp(root, "/tmp") == 0 || !govex__path_under(root, "/tmp"))
				continue;
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "read_root_under_tmp",
			       json_pack("{s:s}", "read_root", root),
			       "filesystem.read root '%.200s' is beneath /tmp, which a sandboxed "
			       "run has privately: it could not be kept read-only there; use a "
			       "directory elsewhere",
			       root);
		}
	}
	return 0;
}

/* backend: the first in the registry's order that enforces every required control */
static int plan_backend(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	struct decision *d = &pl->d;
	d->required = run_required(pl->p, &d->limits);
	const char *want = rt->backend ? rt->backend : pl->p->backend;
	size_t best = SIZE_MAX;
	govex__ctlset best_missing = ~(govex__ctlset)0;
	int best_count = 1000;
	for (size_t i = 0; i < govex__n_backends; i++) {
		const struct govex__report *rep = &rt->reports[i];
		if (want && strcmp(want, govex__backends[i]->name) != 0)
			continue;
		/* aggregate limits are met only by an aggregate mechanism (a
		 * cgroup): never by per-process rlimits, even for one process */
		govex__ctlset eff = rep->available ? rep->enforced : 0;
		govex__ctlset missing = d->required & ~eff;
		if (!missing) {
			d->backend = i;
			return 0;
		}
		int cnt = __builtin_popcountll(missing);
		if (cnt < best_count) {
			best_count = cnt;
			best_missing = missing;
			best = i;
		}
	}
	json_t *names = govex__ctlset_json(best_missing);
	json_t *extra = json_pack("{s:o, s:s}", "controls", names, "backend",
				  best < govex__n_backends ? govex__backends[best]->name : "none");
	char list[400] = "";
	size_t idx;
	json_t *e;
	json_array_foreach(names, idx, e)
	{
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "%s%s", idx ? ", " : "", json_string_value(e));
	}
	/* a named backend is the only one considered: say who named it */
	char named[160] = "";
	if (want)
		snprintf(named, sizeof(named),
			 " (only backend '%.40s' was considered: %s named it)", want,
			 rt->backend ? "the runtime's backend option (--backend)"
				     : "the policy's \"backend\" field");
	REFUSE(GOVEX_STATUS_POLICY_REFUSED, "missing_controls", extra,
	       "no backend on this host enforces: %s%s", list, named);
}

/* no sandbox on this host: the run goes to controlled (trusted code), so the
 * interpreter may be probed on the host */
static int plan_interpreter_on_host(struct planning *pl)
{
	if (!pl->probe_on_host)
		return 0;
	const char *name = govex__backends[pl->d.backend]->name;
	if (strcmp(name, "controlled") != 0)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "missing_controls", NULL,
		       "backend '%s': the interpreter cannot be probed without the "
		       "restricted sandbox",
		       name);
	if (interp_unavailable(pl->rt, GOVEX_PROBE_HOST, &pl->res) != 0)
		return pl->res ? 1 : -ENOMEM;
	return 0;
}

/* filesystem.platform_defaults false on a backend that enforces the read allowlist:
 * the interpreter gets only the read roots, so everything it needs to start must be
 * beneath one (what rplan_build binds for it otherwise) or it could never start */
static int plan_interpreter_readable(struct planning *pl)
{
	if (!pl->p->platform_defaults && !pl->exec &&
	    (pl->rt->reports[pl->d.backend].enforced & CTL(FS_READ_ALLOWLIST))) {
		const char *missing = interp_file_unreadable(pl->rt);
		if (missing)
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "interpreter_not_readable",
			       json_pack("{s:s}", "path", missing),
			       "filesystem.platform_defaults is false and the interpreter's "
			       "'%.200s' is under no filesystem.read root: the interpreter "
			       "could not start",
			       missing);
	}
	return 0;
}

/* approval: permissions in policy.approval that this run may use */
static int plan_approval(struct planning *pl)
{
	const govex_policy *p = pl->p;
	const struct govex_request *req = pl->req;
	unsigned usable = 0;
	if (p->network || (req->needs & GOVEX_NEED_NETWORK))
		usable |= GOVEX_PERM_NETWORK;
	if (p->write_roots[0] || (req->needs & GOVEX_NEED_FILESYSTEM_WRITE))
		usable |= GOVEX_PERM_FILESYSTEM_WRITE;
	if (p->subprocess || (req->needs & GOVEX_NEED_SUBPROCESS))
		usable |= GOVEX_PERM_SUBPROCESS;
	if (req->shell)
		usable |= GOVEX_PERM_SHELL;
	pl->d.approve = usable & p->approval;
	return 0;
}

/* the request and plan documents */
static int plan_documents(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	const govex_policy *p = pl->p;
	const struct govex_request *req = pl->req;
	const struct decision *d = &pl->d;
	const struct govex__backend_ops *b = govex__backends[d->backend];
	char code_digest[72], stdin_digest[72], request_digest[72];
	govex__sha256_digest(req->code, req->code_len, code_digest);
	govex__sha256_digest(req->stdin_data ? req->stdin_data : "", req->stdin_len, stdin_digest);
	unsigned needs_perm = govex__request_needs_perms(req);
	if (govex__request_digest(req, code_digest, stdin_digest, needs_perm, TAKE_PTR(pl->meta),
				  request_digest) < 0)
		return -ENOMEM;

	json_t *args = json_array();
	json_array_append_new(args, json_string("-I"));
	if (!p->site)
		json_array_append_new(args, json_string("-S"));
	json_t *doc = json_pack(
	    "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:I, s:s?},"
	    " s:{s:s, s:I}, s:{s:s, s:s, s:o}, s:o, s:{s:o},"
	    " s:{s:s, s:s?}, s:{s:o, s:o, s:b}, s:s, s:s, s:b, s:o, s:o,"
	    " s:{s:o}, s:s, s:s}",
	    "version", GOVEX_PLAN_VERSION, "kind", "run", "backend", "name", b->name, "version",
	    b->version, "code", "language", "python", "digest", code_digest, "bytes",
	    (json_int_t)req->code_len, "source_path", req->source_path, "stdin", "digest",
	    stdin_digest, "bytes", (json_int_t)req->stdin_len, "interpreter", "path",
	    rt->interp.path, "version", rt->interp.version, "args", args, "limits",
	    govex__limits_json(&d->limits), "environment", "names", govex__env_names_json(d->env),
	    "workdir", "mode", d->workdir ? "path" : "fresh", "path", d->workdir, "filesystem",
	    "read", govex__strv_json(p->read_roots), "write", govex__strv_json(p->write_roots),
	    "platform_defaults", p->platform_defaults, "network", p->network ? "allow" : "deny",
	    "subprocess", p->subprocess ? "allow" : "deny", "shell", req->shell != 0, "needs",
	    govex__perms_json(needs_perm), "approval", govex__perms_json(d->approve), "controls",
	    "required", govex__ctlset_json(d->required), "policy_digest", p->digest,
	    "request_digest", request_digest);
	if (!doc)
		return -ENOMEM;
	if (pl->job) {
		json_object_del(doc, "code");
		json_object_del(doc, "stdin");
		json_object_del(doc, "request_digest");
		/* an exec runs its own executable, not the interpreter */
		if (pl->exec)
			json_object_del(doc, "interpreter");
		json_object_update(doc, pl->job);
	}
	if (govex__files_plan_members(doc, req, &d->limits) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	if (!(pl->plan = govex__plan_from_doc(doc)))
		return -ENOMEM;
	return 0;
}

#undef REFUSE

/* The steps of planning, in order (see struct planning). */
static int (*const plan_steps[])(struct planning *) = {
    plan_request,     plan_host_limits,		plan_needs_workdir_metadata,
    plan_environment, plan_interpreter,		plan_protected_paths,
    plan_backend,     plan_interpreter_on_host, plan_interpreter_readable,
    plan_approval,    plan_documents,
};

int govex__plan_internal(govex_runtime *rt, const struct govex_request *req, const char *run_id,
			 json_t *job, govex_plan **ret_plan, struct decision *ret_d,
			 govex_result **ret_result, struct govex_error *err)
{
	struct planning pl = {
	    .rt = rt,
	    .p = rt->policy,
	    .req = req,
	    .job = job,
	    .exec = job && strcmp(json_string_value(json_object_get(job, "kind")), "exec") == 0,
	};
	int r = 0;
	*ret_plan = NULL;
	*ret_result = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(plan_steps) && r == 0; i++)
		r = plan_steps[i](&pl);
	json_decref(pl.meta);
	if (r > 0) {
		govex__decision_release(&pl.d);
		*ret_result = pl.res;
		return 0;
	}
	if (r < 0) {
		govex__decision_release(&pl.d);
		govex_result_free(pl.res);
		return govex__err(err, -r, -r, "plan: %s", strerror(-r));
	}
	*ret_plan = pl.plan;
	/* audited before the decision may be released (its backend is read here) */
	govex__audit(&rt->audit, run_id, "decision",
		     json_pack("{s:s, s:s, s:s}", "decision", "planned", "backend",
			       govex__backends[pl.d.backend]->name, "plan_digest",
			       (*ret_plan)->digest));
	if (ret_d)
		*ret_d = pl.d;
	else
		govex__decision_release(&pl.d);
	return 0;
}

GOVEX_API int govex_runtime_plan(govex_runtime *rt, const struct govex_request *req,
				 govex_plan **ret_plan, govex_result **ret_result,
				 struct govex_error *ret_err)
{
	char run_id[33];
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	if (!rt || !req || !ret_plan || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "plan: missing argument");
	govex__run_id_new(run_id);
	govex__audit_received(rt, run_id, "plan", req);
	int r = govex__plan_internal(rt, req, run_id, NULL, &plan, NULL, &res, ret_err);
	if (r < 0)
		return r;
	if (res) {
		if ((r = govex__result_finish(res)) < 0) {
			govex_result_free(res);
			return govex__err(ret_err, -r, -r, "result: out of memory");
		}
		govex__audit_refused(rt, run_id, res);
	}
	*ret_plan = plan;
	*ret_result = res;
	return 0;
}

/* Why two plans differ, as a refusal. */
govex_result *govex__plan_mismatch(govex_runtime *rt, const govex_plan *given,
				   const govex_plan *fresh)
{
	json_t *g = given->doc, *f = fresh->doc;
	/* a run plan binds "code", a call plan "source" */
	const char *key = json_object_get(f, "code") ? "code" : "source";
	const char *gc = json_string_value(json_object_get(json_object_get(g, key), "digest"));
	const char *fc = json_string_value(json_object_get(json_object_get(f, key), "digest"));
	if (!gc || !fc || strcmp(gc, fc) != 0) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_SOURCE_MISMATCH);
		govex__result_diag(r, "source_mismatch", NULL,
				   "code: its digest differs from the plan's (the source changed)");
		return r;
	}
	const char *gp = json_string_value(json_object_get(g, "policy_digest"));
	if (!gp || strcmp(gp, rt->policy->digest) != 0) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		govex__result_diag(r, "policy_changed", NULL,
				   "policy: its digest differs from the plan's");
		return r;
	}
	char keys[300] = "";
	const char *k;
	json_t *v;
	json_object_foreach(f, k, v)
	{
		if (json_equal(v, json_object_get(g, k)))
			continue;
		size_t n = strlen(keys);
		snprintf(keys + n, sizeof(keys) - n, "%s%s", n ? ", " : "", k);
	}
	json_object_foreach(g, k, v) if (!json_object_get(f, k))
	{
		size_t n = strlen(keys);
		snprintf(keys + n, sizeof(keys) - n, "%s%s", n ? ", " : "", k);
	}
	govex_result *r = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
	govex__result_diag(r, "plan_mismatch", NULL,
			   "plan: differs from the request in: %s", keys[0] ? keys : "encoding");
	return r;
}
