/* SPDX-License-Identifier: MIT */
/*
 * Planning: a job's request validated against the policy, the interpreter probed,
 * protected paths kept, the backend chosen, and the plan's members filled
 * (struct govex__plan_fields) from which its canonical document is made.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval.h"
#include "files.h"
#include "job.h"
#include "plan.h"
#include "protect.h"
#include "registry.h"
#include "repl.h"
#include "request.h"
#include "runtime.h"

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
		rt->probe_r = govex__interp_probe(rt->policy->interpreter, rt->probe_cache_dir,
						  mode, &rt->interp, &rt->probe_err);
		rt->probed = true;
		/* a venv's packages, or the site directories the policy asks for: resolved
		 * with the interpreter, before anything (a template) is built from it */
		if (rt->probe_r == 0 && (rt->interp.exec || rt->policy->site)) {
			rt->probe_r =
			    govex__packages_resolve(&rt->pkgs, &rt->interp, &rt->probe_err);
			if (rt->probe_r == 0 && govex__packages_bind(&rt->pkgs, &rt->interp) < 0)
				rt->probe_r = govex__err(&rt->probe_err, ENOMEM, ENOMEM,
							 "packages: out of memory");
			rt->pkgs_resolved = rt->probe_r == 0;
		}
		/* filesystem.deny: resolved with what it is checked against (the roots, the
		 * interpreter's files), once, before anything is built from it */
		if (rt->probe_r == 0 && rt->policy->deny_paths) {
			struct govex__deny *d = calloc(1, sizeof(*d));
			int dr =
			    d ? govex__deny_resolve(rt->policy, &rt->interp, d, &rt->deny_fault)
			      : -ENOMEM;
			if (dr == 0)
				rt->interp.deny = TAKE_PTR(d);
			free(d);
			if (dr < 0)
				rt->probe_r = govex__err(&rt->probe_err, -dr, -dr,
							 "filesystem.deny: %s", strerror(-dr));
		}
	}
	int r = rt->probe_r;
	if (r < 0 && err)
		*err = rt->probe_err;
	pthread_mutex_unlock(&rt->lock);
	return r;
}

int govex__probe_interp(govex_runtime *rt, struct govex_error *err)
{
	return probe_interp(rt, GOVEX_PROBE_SANDBOXED, err);
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
static int interp_unavailable(govex_runtime *rt, enum govex__probe_mode mode,
			      govex_result **ret_res)
{
	struct govex_error ie = {0};
	*ret_res = NULL;
	if (probe_interp(rt, mode, &ie) >= 0)
		return 0;
	govex_result *res =
	    govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
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
	for (size_t i = 0; in->env_files && in->env_files[i]; i++)
		if (!readable_by_roots(p, in->env_files[i]))
			return in->env_files[i];
	/* the executable's own directory is not needed (it is bound as a file) */
	const char *slash = in->path ? strrchr(in->path, '/') : NULL;
	size_t dlen = slash ? (size_t)(slash - in->path) : 0;
	for (size_t i = 0; in->paths && in->paths[i]; i++) {
		if (dlen && strlen(in->paths[i]) == dlen &&
		    strncmp(in->paths[i], in->path, dlen) == 0)
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
	struct govex__job *j;
	enum govex__job_kind kind; /* a run's code and stdin are the user's; an exec has
				    * stdin and runs no interpreter */
	struct decision d;
	json_t *meta; /* the request's metadata, owned until the request document takes it */
	bool probe_on_host;
	bool packages_checked; /* plan_packages: once, after whichever probe ran */
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
	if (pl->kind == GOVEX_JOB_RUN && (r = govex__request_check_code(rt, req, &pl->res)) != 0)
		return r;
	/* stdin: the program's (a call's request frame is not stdin) */
	if ((pl->kind == GOVEX_JOB_RUN || pl->kind == GOVEX_JOB_EXEC) &&
	    (r = govex__request_check_stdin(rt, req, &pl->res)) != 0)
		return r;
	/* a repl run's inputs (repl.c) */
	if (pl->kind == GOVEX_JOB_RUN && (r = govex__repl_check(rt, req, &pl->res)) != 0)
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

/* declared needs and shell intent, the workdir, metadata */
static int plan_needs_workdir_metadata(struct planning *pl)
{
	int r;
	if ((r = govex__request_needs(pl->rt, pl->req, &pl->res)) != 0 ||
	    (r = govex__request_workdir(pl->rt, pl->req, &pl->d.workdir, &pl->res)) != 0 ||
	    (r = govex__request_metadata(pl->rt, pl->req, &pl->meta, &pl->res)) != 0)
		return r;
	/* files in and outputs (files.c): names, bounds, a fresh workdir */
	if ((r = govex__files_check(pl->rt, pl->req, pl->d.workdir != NULL, &pl->res)) != 0)
		return r;
	pl->d.files = pl->req->files;
	pl->d.n_files = pl->req->n_files;
	pl->d.outputs = pl->req->outputs != 0;
	pl->d.on_output = pl->req->on_output;
	pl->d.output_userdata = pl->req->output_userdata;
	return 0;
}

/* the environment the run gets (with GOVEX_OUTPUT_DIR when outputs are collected) */
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

/* Whether top-level module name (of a dotted one) is a file or package in dir. */
static bool module_in(const char *dir, const char *dotted)
{
	size_t n = strcspn(dotted, ".");
	DIR *d = opendir(dir);
	bool hit = false;
	struct dirent *e;
	while (d && !hit && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < n || strncmp(e->d_name, dotted, n) != 0)
			continue;
		const char *rest = e->d_name + n;
		/* a package (a directory), name.py, name.pyc, name.<abi>.so, name.so */
		hit = (len == n && e->d_type != DT_REG) || strcmp(rest, ".py") == 0 ||
		      strcmp(rest, ".pyc") == 0 ||
		      (rest[0] == '.' && len > 3 && strcmp(e->d_name + len - 3, ".so") == 0);
	}
	if (d)
		closedir(d);
	return hit;
}

/* The first of python.preload found in neither the standard library nor a site
 * directory, or NULL. */
static const char *preload_missing(const govex_runtime *rt)
{
	char *const *dirs[] = {rt->interp.paths, rt->pkgs.site};
	/* the executable's own directory (/usr/bin) is among the interpreter's paths but on
	 * no sys.path: /usr/bin/python3 is no module */
	const char *slash = rt->interp.path ? strrchr(rt->interp.path, '/') : NULL;
	size_t dlen = slash ? (size_t)(slash - rt->interp.path) : 0;
	for (size_t i = 0; rt->policy->preload && rt->policy->preload[i]; i++) {
		const char *m = rt->policy->preload[i];
		bool found = false;
		for (size_t k = 0; k < ARRAY_SIZE(dirs) && !found; k++)
			for (size_t j = 0; dirs[k] && dirs[k][j] && !found; j++)
				found = !(k == 0 && dlen && strlen(dirs[k][j]) == dlen &&
					  strncmp(dirs[k][j], rt->interp.path, dlen) == 0) &&
					module_in(dirs[k][j], m);
		if (!found)
			return m;
	}
	return NULL;
}

/* python.preload: each module is the environment's (the standard library's or a site
 * directory's), never a file of the run's or the caller's.  Looked up once per runtime
 * (a dozen directories read: ~2 ms for three modules, every run otherwise): the
 * standard library does not change under it, and a changed site directory is
 * environment_changed (plan_packages) */
static int plan_preload(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	pthread_mutex_lock(&rt->lock);
	if (!rt->preload_checked) {
		rt->preload_missing = preload_missing(rt);
		rt->preload_checked = true;
	}
	const char *m = rt->preload_missing;
	pthread_mutex_unlock(&rt->lock);
	if (m)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "preload_not_found",
		       json_pack("{s:s}", "module", m),
		       "python.preload '%.100s' is not a module of the interpreter's "
		       "environment (its standard library%s): only installed modules "
		       "are preloaded",
		       m,
		       rt->pkgs_resolved ? " or site directories"
					 : "; python.site: true or a venv adds site "
					   "directories");
	return 0;
}

/* the environment's packages: unchanged since this runtime resolved them (its binds are
 * for that environment) */
static int plan_packages(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	char now[72];
	if (pl->packages_checked || pl->kind == GOVEX_JOB_EXEC || !rt->probed || rt->probe_r < 0)
		return 0;
	pl->packages_checked = true;
	int pr = plan_preload(pl);
	if (pr != 0 || !rt->pkgs_resolved)
		return pr;
	pthread_mutex_lock(&rt->lock);
	int r = govex__packages_current(&rt->pkgs, &rt->interp, now);
	pthread_mutex_unlock(&rt->lock);
	if (r < 0)
		return r;
	if (strcmp(now, rt->pkgs.digest) != 0)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "environment_changed",
		       json_pack("{s:s, s:s}", "resolved", rt->pkgs.digest, "now", now),
		       "the interpreter's environment changed (packages installed or removed) "
		       "since this runtime resolved it: its digest was %.23s..., now %.23s...; "
		       "start a new runtime (restart the server) to use it",
		       rt->pkgs.digest, now);
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
	/* what the user can change on this host, where a cgroup is what is missing */
	const govex__ctlset agg =
	    CTL(MEMORY_AGGREGATE) | CTL(PIDS_AGGREGATE) | CTL(CPU_TIME_AGGREGATE);
	const char *hint = (best_missing & agg) && best < govex__n_backends &&
				   strcmp(govex__backends[best]->name, "restricted") == 0
			       ? "; the aggregate limits need a cgroup delegated to govex: run it "
				 "in a systemd unit or scope with Delegate=yes, in a container "
				 "with a writable cgroup, or set GOVEX_CGROUP (govex backends "
				 "says why)"
			       : "";
	REFUSE(GOVEX_STATUS_POLICY_REFUSED, "missing_controls", extra,
	       "no backend on this host enforces: %s%s%s", list, named, hint);
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
	if (!pl->p->platform_defaults && pl->kind != GOVEX_JOB_EXEC &&
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

/* filesystem.deny: refused when meaningless or unenforceable here (deny.c), and never
 * at or around the run's workdir (a run's own mount there would cover a mask) */
static int plan_deny(struct planning *pl)
{
	govex_runtime *rt = pl->rt;
	const struct govex__deny_fault *f = &rt->deny_fault;
	if (!pl->p->deny_paths)
		return 0;
	if (f->code)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, f->code, json_pack("{s:s}", "path", f->path),
		       "%s", f->message);
	const struct govex__deny *d = rt->interp.deny;
	if (!d)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "deny_path_unresolvable", NULL,
		       "filesystem.deny could not be resolved on this host");
	_cleanup_free_ char *wd = pl->d.workdir ? realpath(pl->d.workdir, NULL) : NULL;
	for (size_t i = 0; wd && d->paths[i]; i++)
		if (govex__path_under(d->paths[i], wd) || govex__path_under(wd, d->paths[i]))
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "deny_in_workdir",
			       json_pack("{s:s, s:s}", "path", d->paths[i], "workdir", wd),
			       "filesystem.deny '%.200s' and the run's workdir '%.200s' overlap: "
			       "the workdir is the run's own; deny elsewhere or use another "
			       "workdir",
			       d->paths[i], wd);
	return 0;
}

/* approval: permissions in policy.approval that this run may use */
static int plan_approval(struct planning *pl)
{
	const govex_policy *p = pl->p;
	const struct govex_request *req = pl->req;
	unsigned usable = 0;
	if (p->network || p->net_allow || (req->needs & GOVEX_NEED_NETWORK))
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

/* a file's name, for sorting */
static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct govex__plan_file *)a)->name,
		      ((const struct govex__plan_file *)b)->name);
}

/* the files handed to the run, by name and digest, sorted by name (*ret owned) */
static int plan_files(const struct govex_request *req, struct govex__plan_file **ret)
{
	*ret = NULL;
	if (!req->n_files)
		return 0;
	struct govex__plan_file *f = calloc(req->n_files, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_files; i++) {
		f[i].name = req->files[i].name;
		f[i].bytes = req->files[i].len;
		govex__sha256_digest(req->files[i].data ? req->files[i].data : "",
				     req->files[i].len, f[i].digest);
	}
	qsort(f, req->n_files, sizeof(*f), file_cmp);
	*ret = f;
	return 0;
}

/* the members every plan has, and a run's own */
static int plan_fields_common(struct planning *pl, struct govex__plan_fields *f)
{
	const govex_policy *p = pl->p;
	const struct govex_request *req = pl->req;
	const struct decision *d = &pl->d;
	const struct govex__backend_ops *b = govex__backends[d->backend];
	unsigned needs_perm = govex__request_needs_perms(req);
	*f = (struct govex__plan_fields){
	    .kind = pl->kind,
	    .backend_name = b->name,
	    .backend_version = b->version,
	    .limits = d->limits,
	    .env = d->env,
	    .workdir = d->workdir,
	    .read = p->read_roots,
	    .write = p->write_roots,
	    .deny = pl->rt->interp.deny ? pl->rt->interp.deny->paths : NULL,
	    .platform_defaults = p->platform_defaults,
	    .network = p->network,
	    .net_policy = p,
	    .subprocess = p->subprocess,
	    .shell = req->shell != 0,
	    .needs = needs_perm,
	    .approval = d->approve,
	    .required = d->required,
	    .policy_digest = p->digest,
	    .interpreter = {pl->rt->interp.path, pl->rt->interp.version,
			    p->site || pl->rt->interp.exec, pl->rt->interp.exec},
	    .packages = pl->rt->pkgs_resolved && pl->kind != GOVEX_JOB_EXEC ? &pl->rt->pkgs : NULL,
	    .preload = p->preload,
	    .outputs = req->outputs != 0,
	    .outputs_max_files = pl->d.limits.files_out_count,
	    .outputs_max_bytes = pl->d.limits.files_out_bytes,
	};
	if (pl->kind != GOVEX_JOB_RUN)
		return 0;
	f->code.bytes = req->code_len;
	f->code.source_path = req->source_path;
	govex__sha256_digest(req->code, req->code_len, f->code.digest);
	f->in.bytes = req->stdin_len;
	govex__sha256_digest(req->stdin_data ? req->stdin_data : "", req->stdin_len, f->in.digest);
	if (govex__request_digest(req, f->code.digest, f->in.digest, needs_perm, TAKE_PTR(pl->meta),
				  f->request_digest) < 0)
		return -ENOMEM;
	return 0;
}

/* the plan: its members, then its canonical document */
static int plan_documents(struct planning *pl)
{
	struct govex__plan_fields f;
	_cleanup_free_ struct govex__plan_file *files = NULL;
	char inputs_digest[72];
	int r;
	if ((r = plan_fields_common(pl, &f)) < 0)
		return r;
	if (pl->kind == GOVEX_JOB_RUN && pl->req->repl) {
		govex__sha256_digest(pl->req->inputs_json ? pl->req->inputs_json : "",
				     pl->req->inputs_json ? pl->req->inputs_len : 0, inputs_digest);
		f.repl_inputs_digest = inputs_digest;
	}
	if ((r = plan_files(pl->req, &files)) < 0)
		return r;
	f.files = files;
	f.n_files = pl->req->n_files;
	if (pl->j->ops->fill && (r = pl->j->ops->fill(pl->j, &f)) < 0)
		return r;
	json_t *doc = govex__plan_json(&f);
	if (!doc || !(pl->plan = govex__plan_from_doc(doc)))
		return -ENOMEM;
	return 0;
}

#undef REFUSE

/* The steps of planning, in order (see struct planning). */
static int (*const plan_steps[])(struct planning *) = {
    plan_request,
    plan_host_limits,
    plan_needs_workdir_metadata,
    plan_environment,
    plan_interpreter,
    plan_protected_paths,
    plan_packages,
    plan_backend,
    plan_interpreter_on_host,
    plan_packages,
    plan_interpreter_readable,
    plan_deny,
    plan_approval,
    plan_documents,
};

int govex__plan_internal(struct govex__job *j, govex_plan **ret_plan, struct decision *ret_d,
			 govex_result **ret_result, struct govex_error *err)
{
	govex_runtime *rt = j->rt;
	struct planning pl = {
	    .rt = rt,
	    .p = rt->policy,
	    .req = &j->req,
	    .j = j,
	    .kind = j->ops->kind,
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
	govex__audit(&rt->audit, j->run_id, "decision",
		     json_pack("{s:s, s:s, s:s}", "decision", "planned", "backend",
			       govex__backends[pl.d.backend]->name, "plan_digest",
			       (*ret_plan)->digest));
	*ret_d = pl.d;
	return 0;
}
