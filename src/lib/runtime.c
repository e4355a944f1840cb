/* SPDX-License-Identifier: MIT */
/*
 * The runtime: validate and normalize a request against the policy, choose a backend,
 * build the canonical plan, ask the approver, run, and return the result.  Emits audit
 * events for every step.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <dlfcn.h>

#include "runtime.h"

extern char **environ;

/* A single argv string is limited by the kernel (MAX_ARG_STRLEN, 32 pages). */
#define CODE_ARG_MAX (128 * 1024 - 1)
#define ENV_ITEMS_MAX 1024

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
static const char *const pf_limits[] = {
	"wall_ms",	"cpu_ms",	"memory_bytes",	    "processes",
	"open_files",	"file_size_bytes", "code_bytes",    "stdin_bytes",
	"stdout_bytes", "stderr_bytes", "call_input_bytes", "call_output_bytes",
	NULL};
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

#define PF_COMMON                                                                          \
	{"version", NULL}, {"kind", NULL}, {"backend", pf_backend}, {"limits", pf_limits},  \
		{"environment", pf_environment}, {"workdir", pf_workdir},                  \
		{"filesystem", pf_filesystem}, {"network", NULL}, {"subprocess", NULL},    \
		{"shell", NULL}, {"needs", NULL}, {"approval", NULL},                      \
		{"controls", pf_controls}, {"policy_digest", NULL }
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

/* ---- runtime lifecycle ---------------------------------------------------------------- */

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * Backend reports are probed on this host, which costs a few milliseconds (the
 * restricted backend test-creates namespaces and cgroups).  With a cache directory the
 * restricted backend's report is cached across processes (cache.c checks the directory
 * and the file), keyed by everything it depends on: this build of govex, the effective
 * uid, the boot (kernel and sysctls as booted), and the caller's cgroup.  A stale entry
 * can only be optimistic about a host setting changed since (a sysctl at run time), and
 * then the run fails closed at the step that needs it.
 *
 * A cache may only make govex more careful: the cached report is intersected with
 * everything the restricted code could ever enforce (govex__restricted_max_controls) and
 * with what a cheap look at the host confirms (the Landlock ABI); it can remove
 * controls, never add one.  The controlled backend's report is compiled in (its probe
 * is a couple of syscalls) and never read from disk.
 *
 * One file per (build, euid): its name digests only those, and it is rewritten in place
 * when the rest of the key differs, so the directory does not grow per cgroup path.
 * Files of other builds are pruned beyond the few newest, older formats likewise.
 */
#define BACKENDS_PREFIX "backends-v2-"
#define BACKENDS_KEEP	4

/* this very build of govex: the file holding this code (the library, or a binary it is
 * linked into), by identity, so that a rebuilt probe never reads an old entry */
static char *build_identity(void)
{
	Dl_info dl;
	struct stat st;
	char *id = NULL;
	if (!dladdr((void *)build_identity, &dl) || !dl.dli_fname || stat(dl.dli_fname, &st) < 0)
		return NULL;
	if (asprintf(&id, "govex %s build %llu:%llu:%lld.%09ld uid %u", GOVEX_VERSION_STRING,
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (unsigned)geteuid()) < 0)
		id = NULL;
	return id;
}

static char *report_cache_key(const char *build)
{
	char boot[64] = "", *cg = NULL, *key = NULL;
	size_t n;
	struct utsname u;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
	}
	if (!boot[0] || govex__read_file("/proc/self/cgroup", 65536, &cg, &n, NULL) < 0 ||
	    uname(&u) < 0) {
		free(cg);
		return NULL;
	}
	/* one line: newlines of the cgroup file and the boot id become spaces */
	if (asprintf(&key, "%s kernel %s boot %s cgroup %s", build, u.release, boot, cg) < 0)
		key = NULL;
	for (char *c = key; c && *c; c++)
		if (*c == '\n')
			*c = ' ';
	free(cg);
	return key;
}

/* The backends whose report may come from the cache: restricted only. */
static bool report_cacheable(size_t i)
{
	return strcmp(govex__backends[i]->name, "restricted") == 0;
}

static json_t *reports_doc(const govex_runtime *rt)
{
	json_t *a = json_array();
	for (size_t i = 0; i < govex__n_backends; i++) {
		if (!report_cacheable(i))
			continue;
		const struct govex__report *r = &rt->reports[i];
		json_t *un = json_array();
		for (size_t k = 0; k < r->n_unavailable; k++)
			json_array_append_new(un, json_pack("[s, s]",
							    govex__control_name(r->unavailable[k].control),
							    r->unavailable[k].reason));
		json_array_append_new(a, json_pack("{s:s, s:b, s:s, s:o, s:o}", "name",
						   govex__backends[i]->name, "available",
						   r->available, "reason", r->unavailable_reason,
						   "enforced", govex__ctlset_json(r->enforced),
						   "unavailable", un));
	}
	return a;
}

static void report_unavail(struct govex__report *r, enum govex__control c, const char *why)
{
	for (size_t k = 0; k < r->n_unavailable; k++)
		if (r->unavailable[k].control == c)
			return;
	if (r->n_unavailable >= GOVEX__CTL_COUNT)
		return;
	r->unavailable[r->n_unavailable].control = c;
	snprintf(r->unavailable[r->n_unavailable].reason, sizeof(r->unavailable[0].reason), "%s",
		 why);
	r->n_unavailable++;
}

/* What the host shows cheaply now, against a cached report: Landlock's ABI. */
static govex__ctlset live_restricted_mask(void)
{
	govex__ctlset m = ~(govex__ctlset)0;
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* VERSION */);
	if (abi < 6) /* restricted counts Landlock only with ABI 6 (rlandlock_complete) */
		m &= ~CTL(LANDLOCK);
	return m;
}

/* A cached report, made only more careful (see above). */
static void report_sanitize(struct govex__report *r)
{
	govex__ctlset allowed = govex__restricted_max_controls() & live_restricted_mask();
	if (!r->available) {
		r->enforced = 0;
		return;
	}
	govex__ctlset dropped = r->enforced & ~allowed;
	r->enforced &= allowed;
	for (int c = 0; c < GOVEX__CTL_COUNT; c++)
		if (dropped & ((govex__ctlset)1 << c))
			report_unavail(r, (enum govex__control)c,
				       "claimed by a cached report, not confirmed on this host");
}

static bool reports_load(govex_runtime *rt, json_t *a)
{
	size_t want = 0;
	for (size_t i = 0; i < govex__n_backends; i++)
		want += report_cacheable(i);
	if (!json_is_array(a) || json_array_size(a) != want)
		return false;
	struct govex__report got[8];
	size_t idx = 0;
	for (size_t i = 0; i < govex__n_backends && i < ARRAY_SIZE(got); i++) {
		if (!report_cacheable(i))
			continue;
		json_t *o = json_array_get(a, idx++), *e;
		struct govex__report *r = &got[i];
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *why = json_string_value(json_object_get(o, "reason"));
		json_t *av = json_object_get(o, "available");
		size_t k;
		memset(r, 0, sizeof(*r));
		if (!name || strcmp(name, govex__backends[i]->name) != 0 || !why || !json_is_boolean(av))
			return false;
		r->available = json_is_true(av);
		snprintf(r->unavailable_reason, sizeof(r->unavailable_reason), "%s", why);
		json_array_foreach(json_object_get(o, "enforced"), k, e)
		{
			int c = govex__control_from_name(json_string_value(e));
			if (c < 0)
				return false;
			r->enforced |= (govex__ctlset)1 << c;
		}
		json_array_foreach(json_object_get(o, "unavailable"), k, e)
		{
			int c = govex__control_from_name(json_string_value(json_array_get(e, 0)));
			const char *reason = json_string_value(json_array_get(e, 1));
			if (c < 0 || !reason || r->n_unavailable >= GOVEX__CTL_COUNT)
				return false;
			r->unavailable[r->n_unavailable].control = (enum govex__control)c;
			snprintf(r->unavailable[r->n_unavailable].reason,
				 sizeof(r->unavailable[0].reason), "%s", reason);
			r->n_unavailable++;
		}
		report_sanitize(r);
	}
	for (size_t i = 0; i < govex__n_backends && i < ARRAY_SIZE(got); i++)
		if (report_cacheable(i))
			rt->reports[i] = got[i];
	return true;
}

/* seconds a cached report that lacks controls is believed (see probe_backends) */
#define PESSIMISTIC_REPORT_TTL_S 60

static void probe_backends(govex_runtime *rt)
{
	_cleanup_free_ char *build = NULL, *key = NULL, *data = NULL;
	_cleanup_close_ int dfd = -1;
	char name[64] = "";
	bool loaded = false;
	if (rt->probe_cache_dir && (build = build_identity()) && (key = report_cache_key(build)))
		dfd = govex__cache_dir_open(rt->probe_cache_dir, true);
	if (dfd >= 0) {
		char dg[72];
		govex__sha256_digest(build, strlen(build), dg);
		snprintf(name, sizeof(name), BACKENDS_PREFIX "%.16s.json", dg + 7);
		if ((data = govex__cache_get(dfd, name, key, 1 << 20))) {
			json_t *a = json_loads(data, 0, NULL);
			loaded = reports_load(rt, a);
			json_decref(a);
		}
	}
	/* A cached report that lacks a control this build can enforce is believed for a
	 * minute only: it makes govex more careful (runs are refused), but a probe that
	 * failed for a passing reason (or under valgrind, which knows no open_tree) must
	 * not refuse every run of this build until the next boot. */
	for (size_t i = 0; loaded && i < govex__n_backends; i++) {
		const struct govex__report *rep = &rt->reports[i];
		if (!report_cacheable(i) || (rep->available && (govex__restricted_max_controls() &
								~rep->enforced) == 0))
			continue;
		struct stat st;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    time(NULL) - st.st_mtime > PESSIMISTIC_REPORT_TTL_S || st.st_mtime > time(NULL))
			loaded = false;
	}
	bool complete = true;
	for (size_t i = 0; i < govex__n_backends; i++) {
		if (loaded && report_cacheable(i))
			continue;
		govex__backends[i]->probe(&rt->opts, &rt->reports[i]);
		/* a control this build's maximum does not know would be lost by the
		 * cache: do not cache such a report */
		if (report_cacheable(i) &&
		    (rt->reports[i].enforced & ~govex__restricted_max_controls()))
			complete = false;
	}
	if (loaded || dfd < 0 || !complete)
		return;
	json_t *a = reports_doc(rt);
	char *js = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	if (js) {
		govex__cache_put(dfd, name, key, js);
		free(js);
	}
	govex__cache_prune(dfd, BACKENDS_PREFIX, BACKENDS_KEEP);
	/* the old format (one file per cgroup path): never read by this build */
	govex__cache_prune(dfd, "backends-v1-", 2);
}

GOVEX_API int govex_runtime_new(const govex_policy *policy,
				const struct govex_runtime_options *opts,
				govex_runtime **ret_runtime, struct govex_error *ret_err)
{
	if (!policy || !ret_runtime)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "runtime: missing argument");
	govex_runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	int r = govex_policy_parse(policy->canon, policy->canon_len, &rt->policy, ret_err);
	if (r < 0) {
		free(rt);
		return r;
	}
	if (opts)
		rt->opts = *opts;
	/* 0 (a zeroed options struct) and any negative value: no audit fd */
	if (rt->opts.audit_fd <= 0)
		rt->opts.audit_fd = -1;
	rt->probe_cache_dir = dup_opt(rt->opts.probe_cache_dir);
	rt->backend = dup_opt(rt->opts.backend);
	rt->opts.probe_cache_dir = rt->probe_cache_dir;
	rt->opts.backend = rt->backend;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->audit_lock, NULL);
	rt->audit = (struct govex__audit){rt->opts.audit, rt->opts.audit_userdata,
					  rt->opts.audit_fd, &rt->audit_lock};
	const char *want = rt->backend ? rt->backend : rt->policy->backend;
	bool found = !want;
	probe_backends(rt);
	for (size_t i = 0; i < govex__n_backends; i++)
		if (want && strcmp(want, govex__backends[i]->name) == 0)
			found = true;
	if (!found) {
		/* want points into rt: format before freeing */
		r = govex__err(ret_err, GOVEX_EBACKEND, 0,
			       "backend '%.60s': not built into this govex", want);
		govex_runtime_free(rt);
		return r;
	}
	*ret_runtime = rt;
	return 0;
}

GOVEX_API govex_runtime *govex_runtime_free(govex_runtime *rt)
{
	if (!rt)
		return NULL;
	for (size_t i = 0; i < govex__n_backends; i++)
		if (rt->prepared[i] && govex__backends[i]->release)
			govex__backends[i]->release(rt->states[i]);
	for (size_t i = 0; i < ARRAY_SIZE(rt->inspections); i++) {
		free(rt->inspections[i].key);
		free(rt->inspections[i].canon);
	}
	govex__interp_free(&rt->interp);
	govex_policy_free(rt->policy);
	free(rt->probe_cache_dir);
	free(rt->backend);
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->audit_lock);
	free(rt);
	return NULL;
}

GOVEX_API const govex_policy *govex_runtime_policy(const govex_runtime *rt)
{
	return rt ? rt->policy : NULL;
}

static json_t *report_json(const struct govex__backend_ops *b, const struct govex__report *r)
{
	/* an unavailable backend lists every control it would have enforced, each with the
	 * reason (every entry names a real control) */
	json_t *un = json_array();
	for (size_t i = 0; i < r->n_unavailable; i++)
		json_array_append_new(un, json_pack("{s:s, s:s}", "control",
						    govex__control_name(r->unavailable[i].control),
						    "reason", r->unavailable[i].reason));
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:o, s:o}", "version", GOVEX_BACKEND_VERSION,
			      "name", b->name, "backend_version", b->version, "available",
			      r->available, "enforced",
			      govex__ctlset_json(r->available ? r->enforced : 0), "unavailable", un);
	/* the size of the seccomp allowlist, from this build (not from the cached report) */
	if (o && b == &govex__restricted_backend && r->available &&
	    (r->enforced & ((govex__ctlset)1 << GOVEX_CTL_SYSCALL_FILTER)))
		json_object_set_new(o, "syscalls_allowed",
				    json_integer(govex__restricted_syscalls_allowed()));
	return o;
}

GOVEX_API int govex_runtime_backends_json(govex_runtime *rt, char **ret_json)
{
	if (!rt || !ret_json)
		return -GOVEX_EINVAL;
	_cleanup_json_ json_t *a = json_array();
	for (size_t i = 0; i < govex__n_backends; i++)
		json_array_append_new(a, report_json(govex__backends[i], &rt->reports[i]));
	size_t len;
	return govex__canon(a, ret_json, &len);
}

/* ---- planning ----------------------------------------------------------------------------- */

void govex__run_id_new(char out[33])
{
	unsigned char b[16];
	static const char hex[] = "0123456789abcdef";
	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		uint64_t t = govex__now_ns() ^ (uint64_t)getpid() << 32;
		memcpy(b, &t, 8);
		memcpy(b + 8, &t, 8);
	}
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[32] = '\0';
}

govex_result *govex__refusal(govex_runtime *rt, enum govex_status status)
{
	govex_result *r = govex__result_new(status, GOVEX_TERM_REFUSED);
	if (r)
		govex__result_set_digests(r, rt->policy->digest, NULL);
	return r;
}

/* The restricted backend's report says its sandbox works on this host. */
static bool sandbox_available(const govex_runtime *rt)
{
	for (size_t i = 0; i < govex__n_backends; i++)
		if (strcmp(govex__backends[i]->name, "restricted") == 0)
			return rt->reports[i].available;
	return false;
}

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

/* ---- protected paths -------------------------------------------------------------------- */

/* path as given (normalized lexically) and as it really is (symlinks resolved), each
 * pushed when it differs; nothing for a relative path */
static void push_forms(char ***v, const char *path)
{
	if (!path || path[0] != '/')
		return;
	char *real = realpath(path, NULL);
	if (govex__path_normalized(path))
		govex__strv_push(v, path);
	if (real && govex__path_normalized(real))
		govex__strv_push(v, real);
	free(real);
}

/* Whether the file at path, or one of its ancestors, is the file (dev, ino): catches a
 * bind mount that shows the same directory under another name, which no string
 * comparison sees. */
static bool ino_at_or_above(const char *path, const struct stat *st)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return false;
	for (int depth = 0; depth < 64; depth++) {
		struct stat a;
		if (stat(buf, &a) == 0 && a.st_dev == st->st_dev && a.st_ino == st->st_ino)
			return true;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return false; /* "/" itself: the string comparison covers it */
		*slash = '\0';
	}
	return false;
}

/* Mounts as /proc/self/mountinfo lists them: device, root within the filesystem, mount
 * point (octal escapes undone), in the kernel's order (later ones shadow earlier). */
struct mnt {
	dev_t dev;
	char *root, *point;
};

static void unescape_octal(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

static void mounts_free(struct mnt *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].root);
		free(m[i].point);
	}
	free(m);
}

static struct mnt *mounts_read(size_t *ret_n)
{
	_cleanup_free_ char *data = NULL;
	size_t len, n = 0, cap = 0;
	struct mnt *m = NULL;
	*ret_n = 0;
	if (govex__read_file("/proc/self/mountinfo", 1 << 22, &data, &len, NULL) < 0)
		return NULL;
	for (char *line = data, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		unsigned maj, min;
		char root[4096], point[4096];
		if (sscanf(line, "%*u %*u %u:%u %4095s %4095s", &maj, &min, root, point) != 4)
			continue;
		if (n == cap) {
			struct mnt *g = realloc(m, (cap = cap ? 2 * cap : 64) * sizeof(*m));
			if (!g)
				break;
			m = g;
		}
		unescape_octal(root);
		unescape_octal(point);
		m[n].dev = makedev(maj, min);
		m[n].root = strdup(root);
		m[n].point = strdup(point);
		if (!m[n].root || !m[n].point) {
			free(m[n].root);
			free(m[n].point);
			break;
		}
		n++;
	}
	*ret_n = n;
	return m;
}

/* Where path lies within its filesystem: the device and the path from that
 * filesystem's root (a bind mount shows a directory under another name; this is the
 * same for both names).  False when it cannot be told. */
static bool fs_location(const struct mnt *m, size_t n, const char *path, dev_t *ret_dev,
			char *ret, size_t cap)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	struct stat st;
	if (!real || stat(real, &st) < 0)
		return false;
	const struct mnt *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(m[i].point);
		if (!govex__path_under(real, m[i].point))
			continue;
		if (!best || l >= best_len) { /* the deepest; of equals, the last mounted */
			best = &m[i];
			best_len = l;
		}
	}
	if (!best || best->dev != st.st_dev)
		return false;
	const char *rest = strcmp(best->point, "/") == 0 ? real : real + best_len;
	int w = snprintf(ret, cap, "%s%s", strcmp(best->root, "/") == 0 ? "" : best->root, rest);
	if (w <= 0 || (size_t)w >= cap)
		return false;
	if (ret[0] == '\0')
		snprintf(ret, cap, "/");
	*ret_dev = st.st_dev;
	return true;
}

static bool overlap(const struct mnt *m, size_t n, const char *a, const char *b)
{
	if (govex__path_under(a, b) || govex__path_under(b, a))
		return true;
	struct stat sa, sb;
	if ((stat(b, &sb) == 0 && ino_at_or_above(a, &sb)) ||
	    (stat(a, &sa) == 0 && ino_at_or_above(b, &sa)))
		return true;
	/* a bind mount of a directory above, at or below b under another name */
	char la[4096], lb[4096];
	dev_t da, db;
	return fs_location(m, n, a, &da, la, sizeof(la)) &&
	       fs_location(m, n, b, &db, lb, sizeof(lb)) && da == db &&
	       (govex__path_under(la, lb) || govex__path_under(lb, la));
}

/*
 * Whether a writable path of a sandboxed run (a write root, the named workdir) overlaps
 * (is an ancestor of, equal to, or beneath) something govex must be able to trust
 * afterwards: the cache directory, govex's own executable and library, the interpreter's
 * files.  A run that could write there could rewrite what later runs believe, or plant
 * code that later runs on the host.  Returns what it protects (and the protected path in
 * *ret_path, owned) or NULL.
 */
static const char *protected_overlap(const govex_runtime *rt, const char *writable,
				     char **ret_path)
{
	const char *kinds[] = {"cache", "govex", "interpreter"};
	char **w = calloc(1, sizeof(char *));
	const char *hit = NULL;
	size_t nm = 0;
	struct mnt *m = mounts_read(&nm);
	*ret_path = NULL;
	if (!w || !m) {
		govex__strv_free(w);
		mounts_free(m, nm);
		return "govex"; /* cannot check: refuse */
	}
	push_forms(&w, writable);
	for (size_t k = 0; k < ARRAY_SIZE(kinds) && !hit; k++) {
		char **prot = calloc(1, sizeof(char *));
		if (!prot) {
			govex__strv_free(w);
			mounts_free(m, nm);
			return kinds[k];
		}
		if (k == 0) {
			push_forms(&prot, rt->probe_cache_dir);
		} else if (k == 1) {
			Dl_info dl;
			char exe[4096];
			ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
			if (n > 0) {
				exe[n] = '\0';
				push_forms(&prot, exe);
			}
			if (dladdr((void *)protected_overlap, &dl) && dl.dli_fname)
				push_forms(&prot, dl.dli_fname);
			/* the run-slot locks (a run that could replace them could have a live
			 * run's cgroups reclaimed) */
			char **slots = calloc(1, sizeof(char *));
			if (slots && govex__slot_lock_dirs(rt->probe_cache_dir, &slots) == 0)
				for (size_t i = 0; slots[i]; i++)
					push_forms(&prot, slots[i]);
			govex__strv_free(slots);
		} else {
			push_forms(&prot, rt->policy->interpreter);
			if (!rt->policy->interpreter) {
				/* "auto": the python3 on PATH the probe ran (a pyenv shim) */
				char *found = NULL;
				if (govex__find_in_path("python3", &found) == 0)
					push_forms(&prot, found);
				free(found);
			}
			push_forms(&prot, rt->interp.path);
			for (size_t i = 0; rt->interp.paths && rt->interp.paths[i]; i++)
				push_forms(&prot, rt->interp.paths[i]);
			for (size_t i = 0; rt->interp.libs && rt->interp.libs[i]; i++)
				push_forms(&prot, rt->interp.libs[i]);
		}
		for (size_t i = 0; prot[i] && !hit; i++)
			for (size_t j = 0; w[j] && !hit; j++)
				if (overlap(m, nm, w[j], prot[i])) {
					hit = kinds[k];
					*ret_path = strdup(prot[i]);
				}
		govex__strv_free(prot);
	}
	govex__strv_free(w);
	mounts_free(m, nm);
	return hit;
}

/* Sets *ret_env to the final environment: inherited names, then the request's values,
 * then the policy's fixed values (which win). */
static int build_env(const govex_policy *p, const struct govex_request *req, char ***ret_env,
		     govex_result **ret_refusal, govex_runtime *rt)
{
	char **env = calloc(1, sizeof(char *));
	if (!env)
		return -ENOMEM;
	size_t n_req = 0;
	for (size_t i = 0; req->env && req->env[i]; i++, n_req++) {
		const char *kv = req->env[i];
		const char *eq = strchr(kv, '=');
		if (n_req >= ENV_ITEMS_MAX || !eq || !govex__identifier(kv, (size_t)(eq - kv), 255)) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
			govex__result_diag(r, "invalid_environment", NULL,
					   "env[%zu]: must be NAME=VALUE with a valid name", i);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		/* checked like every other string of a request; the value is never echoed */
		if (!govex__utf8_valid(eq + 1, strlen(eq + 1))) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
			govex__result_diag(r, "invalid_environment",
					   json_pack("{s:s}", "name", name),
					   "environment '%s': its value is not valid UTF-8", name);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
		if (!govex__strv_contains(p->env_allow, name)) {
			govex_result *r = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
			govex__result_diag(r, "environment_not_allowed",
					   json_pack("{s:s}", "name", name),
					   "environment '%s': not in environment.allow", name);
			*ret_refusal = r;
			govex__strv_free(env);
			return 0;
		}
	}
	if (p->env_inherit) {
		for (char **e = environ; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			if (!eq)
				continue;
			char name[256];
			if ((size_t)(eq - *e) >= sizeof(name))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			/* inherit with an empty allow list means full inheritance */
			if (p->env_allow[0] && !govex__strv_contains(p->env_allow, name))
				continue;
			if (govex__strv_push(&env, *e) < 0)
				goto oom;
		}
	}
	char **layers[] = {(char **)req->env, p->env_set};
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; layers[l] && layers[l][i]; i++) {
			const char *kv = layers[l][i];
			size_t nl = (size_t)(strchr(kv, '=') - kv);
			/* replace an earlier value of the same name */
			size_t w = 0;
			for (size_t k = 0; env[k]; k++) {
				if (strncmp(env[k], kv, nl + 1) == 0)
					free(env[k]);
				else
					env[w++] = env[k];
			}
			env[w] = NULL;
			if (govex__strv_push(&env, kv) < 0)
				goto oom;
		}
	govex__strv_sort_uniq(env);
	*ret_env = env;
	return 0;
oom:
	govex__strv_free(env);
	return -ENOMEM;
}

static json_t *env_names_json(char *const *env)
{
	json_t *a = json_array();
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		json_array_append_new(a, json_stringn(env[i], (size_t)(eq - env[i])));
	}
	return a;
}

json_t *govex__perms_json(unsigned perms)
{
	static const char *const names[] = {"filesystem_write", "network", "shell",
					    "subprocess"};
	static const unsigned bits[] = {GOVEX_PERM_FILESYSTEM_WRITE, GOVEX_PERM_NETWORK,
					GOVEX_PERM_SHELL, GOVEX_PERM_SUBPROCESS};
	json_t *a = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (perms & bits[i])
			json_array_append_new(a, json_string(names[i]));
	return a;
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

/* Requested limit against the policy's: 0 = the policy's value; above is refused. */
static int cap_limit(govex_runtime *rt, const char *name, uint64_t want, uint64_t max,
		     uint64_t *ret, govex_result **ret_refusal)
{
	if (want == 0) {
		*ret = max;
		return 0;
	}
	if (max != 0 && want > max) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);
		govex__result_diag(r, "limit_exceeds_policy", json_pack("{s:s}", "limit", name),
				   "limits.%s: requested %llu exceeds the policy's %llu", name,
				   (unsigned long long)want, (unsigned long long)max);
		*ret_refusal = r;
		return 1;
	}
	*ret = want;
	return 0;
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

int govex__plan_internal(govex_runtime *rt, const struct govex_request *req, const char *run_id,
			 json_t *job, govex_plan **ret_plan, struct decision *ret_d,
			 govex_result **ret_result, struct govex_error *err)
{
	const govex_policy *p = rt->policy;
	struct decision d;
	govex_result *res = NULL;
	int r;
	memset(&d, 0, sizeof(d));
	*ret_plan = NULL;
	*ret_result = NULL;

#define REFUSE(status, code, extra, ...)                                                     \
	do {                                                                                 \
		res = govex__refusal(rt, status);                                                   \
		if (!res) {                                                                  \
			r = -ENOMEM;                                                         \
			goto fail;                                                           \
		}                                                                            \
		govex__result_diag(res, code, extra, __VA_ARGS__);                           \
		goto refused;                                                                \
	} while (0)

	if (!job) {
		if (req->language && strcmp(req->language, "python") != 0)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "unsupported_language", NULL,
			       "language '%.40s': only python is supported", req->language);
		if (!req->code)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "missing_code", NULL, "code: missing");
		if (req->code_len > p->limits.code_bytes)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "code_too_large", NULL,
			       "code: %zu bytes exceeds limits.code_bytes (%llu)", req->code_len,
			       (unsigned long long)p->limits.code_bytes);
		if (req->code_len > CODE_ARG_MAX)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "code_too_large", NULL,
			       "code: %zu bytes exceeds %d, the largest single argument the kernel "
			       "passes",
			       req->code_len, CODE_ARG_MAX);
		if (memchr(req->code, '\0', req->code_len))
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_code", NULL,
			       "code: contains a NUL byte");
		if (!govex__utf8_valid(req->code, req->code_len))
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_code", NULL,
			       "code: not valid UTF-8");
		if (req->source_path && !govex__path_normalized(req->source_path))
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_source_path", NULL,
			       "source_path: must be an absolute normalized path");
	}

	/* stdin: the program's (a call's request frame is not stdin) */
	if (!job || strcmp(json_string_value(json_object_get(job, "kind")), "exec") == 0) {
		if (req->stdin_len > p->limits.stdin_bytes)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "stdin_too_large", NULL,
			       "stdin: %zu bytes exceeds limits.stdin_bytes (%llu)", req->stdin_len,
			       (unsigned long long)p->limits.stdin_bytes);
		if (req->stdin_len && !req->stdin_data)
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_stdin", NULL, "stdin: missing data");
	}

	/* limits */
	d.limits = p->limits;
	{
		const struct {
			const char *name;
			uint64_t want, max;
			uint64_t *out;
		} caps[] = {
			{"wall_ms", req->limits.wall_ms, p->limits.wall_ms, &d.limits.wall_ms},
			{"cpu_ms", req->limits.cpu_ms, p->limits.cpu_ms, &d.limits.cpu_ms},
			{"memory_bytes", req->limits.memory_bytes, p->limits.memory_bytes,
			 &d.limits.memory_bytes},
			{"processes", req->limits.processes, p->limits.processes,
			 &d.limits.processes},
			{"open_files", req->limits.open_files, p->limits.open_files,
			 &d.limits.open_files},
			{"file_size_bytes", req->limits.file_size_bytes,
			 p->limits.file_size_bytes, &d.limits.file_size_bytes},
			{"stdout_bytes", req->limits.stdout_bytes, p->limits.stdout_bytes,
			 &d.limits.stdout_bytes},
			{"stderr_bytes", req->limits.stderr_bytes, p->limits.stderr_bytes,
			 &d.limits.stderr_bytes},
		};
		for (size_t i = 0; i < ARRAY_SIZE(caps); i++)
			if (cap_limit(rt, caps[i].name, caps[i].want, caps[i].max, caps[i].out,
				      &res) != 0) {
				if (!res) {
					r = -ENOMEM;
					goto fail;
				}
				goto refused;
			}
	}

	/* the host's hard rlimits: a run's limit above one cannot be set (without
	 * CAP_SYS_RESOURCE) and every launch would fail at that step; refused now, naming
	 * the host's limit.  Not clamped: the plan states the limits the run gets. */
	{
		struct govex__host_rlimit hr;
		if (govex__rlimits_above_host(&d.limits, &hr))
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "host_limit_too_low",
			       json_pack("{s:s, s:s, s:I, s:I}", "limit", hr.limit, "rlimit",
					 hr.rlimit, "value", (json_int_t)hr.want, "host_hard_limit",
					 (json_int_t)hr.host),
			       "limits.%s: the run needs a hard %s of %llu but this host's "
			       "hard limit (of govex's process) is %llu, which govex cannot "
			       "raise without CAP_SYS_RESOURCE: raise the host's limit or lower "
			       "limits.%s",
			       hr.limit, hr.rlimit, (unsigned long long)hr.want,
			       (unsigned long long)hr.host, hr.limit);
	}

	/* declared needs and shell intent */
	if ((req->needs & GOVEX_NEED_NETWORK) && !p->network)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "network"),
		       "need 'network': the policy denies network");
	if ((req->needs & GOVEX_NEED_SUBPROCESS) && !p->subprocess)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "subprocess"),
		       "need 'subprocess': the policy denies subprocesses");
	if ((req->needs & GOVEX_NEED_FILESYSTEM_WRITE) && !p->write_roots[0])
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "need_not_allowed",
		       json_pack("{s:s}", "need", "filesystem_write"),
		       "need 'filesystem_write': the policy has no filesystem.write root");
	if (req->shell && !p->shell)
		REFUSE(GOVEX_STATUS_POLICY_REFUSED, "shell_not_allowed", NULL,
		       "shell: the policy denies shell");

	/* workdir */
	{
		const char *wd = req->workdir ? req->workdir : p->workdir;
		if (wd) {
			bool under = false;
			if (!govex__path_normalized(wd))
				REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_workdir", NULL,
				       "workdir '%.100s': must be an absolute normalized path", wd);
			for (size_t i = 0; p->write_roots[i]; i++)
				if (govex__path_under(wd, p->write_roots[i]))
					under = true;
			if (!under)
				REFUSE(GOVEX_STATUS_POLICY_REFUSED, "workdir_not_writable", NULL,
				       "workdir '%.100s': not under a filesystem.write root", wd);
			/* a named workdir is used as it is, never made: one that is not there
			 * fails now, not at launch */
			struct stat wst;
			int se = stat(wd, &wst) < 0 ? errno : S_ISDIR(wst.st_mode) ? 0 : ENOTDIR;
			if (se)
				REFUSE(GOVEX_STATUS_INVALID_INPUT, "workdir_missing",
				       json_pack("{s:s}", "path", wd), "workdir '%.100s': %s", wd,
				       strerror(se));
			if (!(d.workdir = strdup(wd))) {
				r = -ENOMEM;
				goto fail;
			}
		}
	}

	/* metadata */
	json_t *meta = json_object();
	for (size_t i = 0; req->metadata && req->metadata[i]; i++) {
		const char *kv = req->metadata[i];
		const char *eq = strchr(kv, '=');
		if (i >= METADATA_MAX || !eq || eq == kv || strlen(kv) > METADATA_ITEM_MAX ||
		    !govex__utf8_valid(kv, strlen(kv))) {
			json_decref(meta);
			REFUSE(GOVEX_STATUS_INVALID_INPUT, "invalid_metadata", NULL,
			       "metadata[%zu]: must be key=value, UTF-8, at most %d bytes, at most "
			       "%d items",
			       i, METADATA_ITEM_MAX, METADATA_MAX);
		}
		char key[METADATA_ITEM_MAX + 1];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		json_object_set_new(meta, key, json_string(eq + 1));
	}

	/* environment */
	if ((r = build_env(p, req, &d.env, &res, rt)) < 0) {
		json_decref(meta);
		goto fail;
	}
	if (res) {
		json_decref(meta);
		goto refused;
	}

	/* interpreter: probed in the sandbox; without one on this host, only once the run
	 * is planned on controlled (below) */
	bool probe_on_host = !sandbox_available(rt);
	if (!probe_on_host && interp_unavailable(rt, GOVEX_PROBE_SANDBOXED, &res) != 0) {
		json_decref(meta);
		if (!res) {
			r = -ENOMEM;
			goto fail;
		}
		goto refused;
	}

	/* protected paths: a sandboxed run may not write where govex keeps what it
	 * believes (the cache), govex itself, or the interpreter's files */
	if (!probe_on_host && (govex__policy_required(p) & CTL(FS_WRITE_ALLOWLIST))) {
		size_t nw = govex__strv_len(p->write_roots);
		for (size_t i = 0; i <= nw; i++) {
			const char *w = i < nw ? p->write_roots[i] : d.workdir;
			_cleanup_free_ char *what = NULL;
			const char *prot = w ? protected_overlap(rt, w, &what) : NULL;
			if (!prot)
				continue;
			json_decref(meta);
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "protected_path",
			       json_pack("{s:s, s:s, s:s?}", "write_root", w, "protects", prot,
					 "path", what),
			       "%s '%.200s' overlaps %s (%.200s): a sandboxed run may not write "
			       "there",
			       i < nw ? "filesystem.write root" : "workdir", w,
			       strcmp(prot, "cache") == 0    ? "govex's cache directory"
			       : strcmp(prot, "govex") == 0 ? "govex's own files"
							     : "the interpreter's files",
			       what ? what : "?");
		}
	}

	/* A read root beneath /tmp: the sandbox's private /tmp is a tmpfs with every right
	 * for the run, and Landlock grants beneath /tmp to everything mounted under it, so
	 * such a root could not be kept read-only (its FIFOs would be writable).  A read
	 * root of /tmp itself replaces the private /tmp and is fine. */
	if (!probe_on_host && (govex__policy_required(p) & CTL(FS_READ_ALLOWLIST))) {
		for (size_t i = 0; p->read_roots[i]; i++) {
			const char *root = p->read_roots[i];
			if (strcmp(root, "/tmp") == 0 || !govex__path_under(root, "/tmp"))
				continue;
			json_decref(meta);
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "read_root_under_tmp",
			       json_pack("{s:s}", "read_root", root),
			       "filesystem.read root '%.200s' is beneath /tmp, which a sandboxed "
			       "run has privately: it could not be kept read-only there; use a "
			       "directory elsewhere",
			       root);
		}
	}

	/* backend */
	d.required = run_required(p, &d.limits);
	{
		const char *want = rt->backend ? rt->backend : p->backend;
		size_t best = SIZE_MAX;
		govex__ctlset best_missing = ~(govex__ctlset)0;
		int best_count = 1000;
		bool chosen = false;
		for (size_t i = 0; i < govex__n_backends && !chosen; i++) {
			const struct govex__report *rep = &rt->reports[i];
			if (want && strcmp(want, govex__backends[i]->name) != 0)
				continue;
			/* aggregate limits are met only by an aggregate mechanism (a
			 * cgroup): never by per-process rlimits, even for one process */
			govex__ctlset eff = rep->available ? rep->enforced : 0;
			govex__ctlset missing = d.required & ~eff;
			if (!missing) {
				d.backend = i;
				chosen = true;
				break;
			}
			int cnt = __builtin_popcountll(missing);
			if (cnt < best_count) {
				best_count = cnt;
				best_missing = missing;
				best = i;
			}
		}
		if (!chosen) {
			json_decref(meta);
			json_t *names = govex__ctlset_json(best_missing);
			json_t *extra = json_pack("{s:o, s:s}", "controls", names, "backend",
						  best < govex__n_backends
							  ? govex__backends[best]->name
							  : "none");
			char list[400] = "";
			size_t idx;
			json_t *e;
			json_array_foreach(names, idx, e)
			{
				size_t n = strlen(list);
				snprintf(list + n, sizeof(list) - n, "%s%s", idx ? ", " : "",
					 json_string_value(e));
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
	}

	/* no sandbox on this host: the run goes to controlled (trusted code), so the
	 * interpreter may be probed on the host */
	if (probe_on_host) {
		if (strcmp(govex__backends[d.backend]->name, "controlled") != 0) {
			json_decref(meta);
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "missing_controls", NULL,
			       "backend '%s': the interpreter cannot be probed without the "
			       "restricted sandbox",
			       govex__backends[d.backend]->name);
		}
		if (interp_unavailable(rt, GOVEX_PROBE_HOST, &res) != 0) {
			json_decref(meta);
			if (!res) {
				r = -ENOMEM;
				goto fail;
			}
			goto refused;
		}
	}

	/* filesystem.platform_defaults false on a backend that enforces the read allowlist:
	 * the interpreter gets only the read roots, so everything it needs to start must be
	 * beneath one (what rplan_build binds for it otherwise) or it could never start */
	if (!p->platform_defaults &&
	    (!job || strcmp(json_string_value(json_object_get(job, "kind")), "exec") != 0) &&
	    (rt->reports[d.backend].enforced & CTL(FS_READ_ALLOWLIST))) {
		const char *missing = interp_file_unreadable(rt);
		if (missing) {
			json_decref(meta);
			REFUSE(GOVEX_STATUS_POLICY_REFUSED, "interpreter_not_readable",
			       json_pack("{s:s}", "path", missing),
			       "filesystem.platform_defaults is false and the interpreter's "
			       "'%.200s' is under no filesystem.read root: the interpreter "
			       "could not start",
			       missing);
		}
	}

	/* approval: permissions in policy.approval that this run may use */
	{
		unsigned usable = 0;
		if (p->network || (req->needs & GOVEX_NEED_NETWORK))
			usable |= GOVEX_PERM_NETWORK;
		if (p->write_roots[0] || (req->needs & GOVEX_NEED_FILESYSTEM_WRITE))
			usable |= GOVEX_PERM_FILESYSTEM_WRITE;
		if (p->subprocess || (req->needs & GOVEX_NEED_SUBPROCESS))
			usable |= GOVEX_PERM_SUBPROCESS;
		if (req->shell)
			usable |= GOVEX_PERM_SHELL;
		d.approve = usable & p->approval;
	}

	/* the request and plan documents */
	{
		const struct govex__backend_ops *b = govex__backends[d.backend];
		char code_digest[72], stdin_digest[72];
		govex__sha256_digest(req->code, req->code_len, code_digest);
		govex__sha256_digest(req->stdin_data ? req->stdin_data : "", req->stdin_len,
				     stdin_digest);
		unsigned needs_perm = ((req->needs & GOVEX_NEED_NETWORK) ? GOVEX_PERM_NETWORK : 0) |
				      ((req->needs & GOVEX_NEED_FILESYSTEM_WRITE)
					       ? GOVEX_PERM_FILESYSTEM_WRITE
					       : 0) |
				      ((req->needs & GOVEX_NEED_SUBPROCESS) ? GOVEX_PERM_SUBPROCESS
									    : 0);
		struct govex__limits reqlim = {0};
		reqlim.wall_ms = req->limits.wall_ms;
		reqlim.cpu_ms = req->limits.cpu_ms;
		reqlim.memory_bytes = req->limits.memory_bytes;
		reqlim.processes = req->limits.processes;
		reqlim.open_files = req->limits.open_files;
		reqlim.file_size_bytes = req->limits.file_size_bytes;
		reqlim.stdout_bytes = req->limits.stdout_bytes;
		reqlim.stderr_bytes = req->limits.stderr_bytes;
		json_t *rl = json_object();
		{
			/* requested limits: only those the request named */
			_cleanup_json_ json_t *all = govex__limits_json(&reqlim);
			const char *k;
			json_t *v;
			json_object_foreach(all, k, v) if (json_is_integer(v) &&
							   json_integer_value(v) > 0)
				json_object_set(rl, k, v);
		}
		json_t *reqdoc = json_pack(
			"{s:s, s:s, s:s, s:I, s:s, s:I, s:s?, s:o, s:o, s:o, s:b, s:o}", "version",
			GOVEX_REQUEST_VERSION, "language", "python", "code_digest", code_digest,
			"code_bytes", (json_int_t)req->code_len, "stdin_digest", stdin_digest,
			"stdin_bytes", (json_int_t)req->stdin_len, "workdir", req->workdir,
			"limits", rl, "environment", env_names_json((char **)req->env), "needs",
			govex__perms_json(needs_perm), "shell", req->shell != 0, "metadata", meta);
		char *rq = NULL;
		size_t rqlen;
		char request_digest[72];
		if (!reqdoc || govex__canon(reqdoc, &rq, &rqlen) < 0) {
			json_decref(reqdoc);
			r = -ENOMEM;
			goto fail;
		}
		govex__sha256_digest(rq, rqlen, request_digest);
		free(rq);
		json_decref(reqdoc);

		json_t *args = json_array();
		json_array_append_new(args, json_string("-I"));
		if (!p->site)
			json_array_append_new(args, json_string("-S"));
		json_t *doc = json_pack(
			"{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:I, s:s?},"
			" s:{s:s, s:I}, s:{s:s, s:s, s:o}, s:o, s:{s:o},"
			" s:{s:s, s:s?}, s:{s:o, s:o, s:b}, s:s, s:s, s:b, s:o, s:o,"
			" s:{s:o}, s:s, s:s}",
			"version", GOVEX_PLAN_VERSION, "kind", "run", "backend", "name", b->name,
			"version", b->version, "code", "language", "python", "digest", code_digest,
			"bytes", (json_int_t)req->code_len, "source_path", req->source_path,
			"stdin", "digest", stdin_digest, "bytes", (json_int_t)req->stdin_len,
			"interpreter", "path", rt->interp.path, "version", rt->interp.version,
			"args", args, "limits", govex__limits_json(&d.limits), "environment",
			"names", env_names_json(d.env), "workdir", "mode",
			d.workdir ? "path" : "fresh", "path", d.workdir, "filesystem", "read",
			govex__strv_json(p->read_roots), "write", govex__strv_json(p->write_roots),
			"platform_defaults", p->platform_defaults,
			"network", p->network ? "allow" : "deny", "subprocess",
			p->subprocess ? "allow" : "deny", "shell", req->shell != 0, "needs",
			govex__perms_json(needs_perm), "approval", govex__perms_json(d.approve), "controls",
			"required", govex__ctlset_json(d.required), "policy_digest", p->digest,
			"request_digest", request_digest);
		if (!doc) {
			r = -ENOMEM;
			goto fail;
		}
		if (job) {
			json_object_del(doc, "code");
			json_object_del(doc, "stdin");
			json_object_del(doc, "request_digest");
			/* an exec runs its own executable, not the interpreter */
			if (strcmp(json_string_value(json_object_get(job, "kind")), "exec") == 0)
				json_object_del(doc, "interpreter");
			json_object_update(doc, job);
		}
		govex_plan *plan = govex__plan_from_doc(doc);
		if (!plan) {
			r = -ENOMEM;
			goto fail;
		}
		*ret_plan = plan;
	}
	if (ret_d)
		*ret_d = d;
	else
		govex__decision_release(&d);
	govex__audit(&rt->audit, run_id, "decision",
		     json_pack("{s:s, s:s, s:s}", "decision", "planned", "backend",
			       govex__backends[d.backend]->name, "plan_digest",
			       (*ret_plan)->digest));
	return 0;

refused:
	govex__decision_release(&d);
	*ret_result = res;
	return 0;
fail:
	govex__decision_release(&d);
	govex_result_free(res);
	return govex__err(err, -r, -r, "plan: %s", strerror(-r));
#undef REFUSE
}

static json_t *first_diag_code(govex_result *res)
{
	size_t len;
	const char *js = govex_result_json(res, &len);
	json_t *doc = js ? json_loadb(js, len, 0, NULL) : NULL;
	json_t *code = json_copy(
		json_object_get(json_array_get(json_object_get(doc, "diagnostics"), 0), "code"));
	json_decref(doc);
	return code ? code : json_string("unknown");
}

void govex__audit_refused(govex_runtime *rt, const char *run_id, govex_result *res)
{
	govex__audit(&rt->audit, run_id, "decision",
		     json_pack("{s:s, s:s, s:o}", "decision", "refused", "status",
			       govex_status_name(govex_result_view(res)->status), "reason",
			       first_diag_code(res)));
}

void govex__audit_received(govex_runtime *rt, const char *run_id, const char *kind,
			   const struct govex_request *req)
{
	json_t *meta = json_object();
	for (size_t i = 0; req->metadata && req->metadata[i] && i < METADATA_MAX; i++) {
		const char *eq = strchr(req->metadata[i], '=');
		if (!eq || (size_t)(eq - req->metadata[i]) > METADATA_ITEM_MAX ||
		    !govex__utf8_valid(req->metadata[i], strlen(req->metadata[i])))
			continue;
		char key[METADATA_ITEM_MAX + 1];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - req->metadata[i]), req->metadata[i]);
		json_object_set_new(meta, key, json_string(eq + 1));
	}
	govex__audit(&rt->audit, run_id, "received",
		     json_pack("{s:s, s:s, s:I, s:I, s:o, s:s}", "kind", kind, "language",
			       "python", "code_bytes", (json_int_t)req->code_len, "stdin_bytes",
			       (json_int_t)req->stdin_len, "metadata", meta, "policy_digest",
			       rt->policy->digest));
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

int govex__backend_state(govex_runtime *rt, size_t i, void **ret, struct govex_error *err)
{
	const struct govex__backend_ops *b = govex__backends[i];
	int r = 0;
	pthread_mutex_lock(&rt->lock);
	if (!rt->prepared[i]) {
		if (b->prepare)
			r = b->prepare(&rt->opts, rt->policy, &rt->interp, &rt->states[i], err);
		if (r == 0)
			rt->prepared[i] = true;
	}
	*ret = rt->states[i];
	pthread_mutex_unlock(&rt->lock);
	return r;
}

enum govex_status govex__status_of(const struct govex__outcome *o)
{
	switch (o->term) {
	case GOVEX_TERM_EXITED:
		if (o->exit_code != 0)
			return GOVEX_STATUS_EXECUTION_FAILED;
		return (o->out_truncated || o->err_truncated) ? GOVEX_STATUS_OUTPUT_LIMIT
							      : GOVEX_STATUS_SUCCESS;
	case GOVEX_TERM_TIMEOUT:
		return GOVEX_STATUS_TIMEOUT;
	case GOVEX_TERM_CANCELLED:
		return GOVEX_STATUS_CANCELLED;
	case GOVEX_TERM_MEMORY_LIMIT:
	case GOVEX_TERM_CPU_LIMIT:
		return GOVEX_STATUS_RESOURCE_LIMIT;
	case GOVEX_TERM_OUTPUT_LIMIT:
		return GOVEX_STATUS_OUTPUT_LIMIT;
	default:
		return GOVEX_STATUS_EXECUTION_FAILED;
	}
}

govex_result *govex__approve(govex_runtime *rt, const char *run_id, const struct decision *d,
			     const govex_plan *plan)
{
	if (!d->approve)
		return NULL;
	json_t *perms = govex__perms_json(d->approve);
	govex__audit(&rt->audit, run_id, "approval",
		     json_pack("{s:s, s:O, s:s}", "approval", "asked", "permissions", perms,
			       "plan_digest", plan->digest));
	govex_result *res = NULL;
	if (!rt->opts.approve) {
		res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		if (res)
			govex__result_diag(res, "approval_required", NULL,
					   "approval: the policy requires approval and no "
					   "approver is configured");
		json_decref(perms);
		return res;
	}
	const char *names[5];
	size_t n = 0, idx;
	json_t *e;
	json_array_foreach(perms, idx, e) names[n++] = json_string_value(e);
	names[n] = NULL;
	int ok = rt->opts.approve(rt->opts.approve_userdata, plan->canon, plan->len, names);
	json_decref(perms);
	govex__audit(&rt->audit, run_id, "approval",
		     json_pack("{s:s, s:b}", "approval", "answered", "approved", ok == 1));
	if (ok != 1) {
		res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		if (res)
			govex__result_diag(res, "approval_denied", NULL,
					   "approval: the approver denied the run");
	}
	return res;
}

static govex_result *launch_failure(govex_runtime *rt, const govex_plan *plan, const char *step,
				    const char *what, const char *detail)
{
	govex_result *res =
		govex__result_new(GOVEX_STATUS_EXECUTION_FAILED, GOVEX_TERM_LAUNCH_FAILED);
	if (!res)
		return NULL;
	govex__result_diag(res, "launch_failed", json_pack("{s:s}", "step", step), "%s: %s", what,
			   detail);
	govex__result_set_digests(res, rt->policy->digest, plan->digest);
	return res;
}

int govex__launch(govex_runtime *rt, const char *run_id, const struct decision *d,
		  const govex_plan *plan, char *const *argv, const char *stdin_data,
		  size_t stdin_len, const govex_cancel_token *cancel, int extra_fd, int frame_fd,
		  uint64_t frame_max, char *const *extra_ro, struct govex__outcome *o,
		  govex_result **ret_result, struct govex_error *err)
{
	const struct govex__backend_ops *b = govex__backends[d->backend];
	void *state = NULL;
	_cleanup_free_ char *workdir = NULL;
	_cleanup_close_ int workdir_lock = -1;
	bool host_workdir = false;
	int r;
	memset(o, 0, sizeof(*o));
	*ret_result = NULL;
	if ((r = govex__backend_state(rt, d->backend, &state, err)) < 0) {
		*ret_result = launch_failure(rt, plan, "prepare", "backend preparation failed",
					     err ? err->message : strerror(-r));
		goto fail;
	}
	/* A fresh workdir: the sandbox's own (restricted: a tmpfs at /govex/work, nothing on
	 * the host to remove or to leave behind), or a locked host directory. */
	const char *priv = !d->workdir && b->private_workdir ? b->private_workdir(state) : NULL;
	if (priv) {
		/* no host workdir is made here, so the leftovers of a killed govex's runs on
		 * another backend are swept once per runtime instead */
		pthread_mutex_lock(&rt->lock);
		bool sweep = !rt->swept;
		rt->swept = true;
		pthread_mutex_unlock(&rt->lock);
		if (sweep)
			govex__sweep_workdirs();
	}
	if (d->workdir) {
		workdir = strdup(d->workdir);
	} else if (priv) {
		workdir = strdup(priv);
	} else if ((r = govex__make_workdir(&workdir, &workdir_lock, err)) < 0) {
		*ret_result = launch_failure(rt, plan, "workdir",
					     "workdir: cannot create a fresh directory",
					     strerror(-r));
		goto fail;
	}
	if (!workdir)
		goto fail;
	host_workdir = !d->workdir && !priv;
	struct govex__launch l = {
		.policy = rt->policy,
		.interp = &rt->interp,
		.opts = &rt->opts,
		.limits = &d->limits,
		.argv = argv,
		.envp = d->env,
		.workdir = workdir,
		.workdir_fresh = d->workdir == NULL,
		.stdin_data = stdin_data,
		.stdin_len = stdin_len,
		.cancel_fd = govex__cancel_fd(cancel),
		.extra_fd = extra_fd,
		.frame_fd = frame_fd,
		.frame_max = frame_max,
		.aggregate = d->required &
			     (CTL(MEMORY_AGGREGATE) | CTL(CPU_TIME_AGGREGATE) | CTL(PIDS_AGGREGATE)),
		.extra_ro = extra_ro,
	};
	govex__audit(&rt->audit, run_id, "launch",
		     json_pack("{s:s, s:s, s:s}", "backend", b->name, "backend_version",
			       b->version, "plan_digest", plan->digest));
	struct govex_error rerr = {0};
	if (b->run(state, &l, o, &rerr) < 0 && !o->failed_message[0])
		snprintf(o->failed_message, sizeof(o->failed_message), "%s", rerr.message);
	if (host_workdir) {
		r = govex__rm_rf(workdir);
		if (r < 0)
			o->workdir_cleanup_errno = -r;
	}
	return 0;
fail:
	if (extra_fd >= 0)
		close(extra_fd);
	if (frame_fd >= 0)
		close(frame_fd);
	return *ret_result ? 0 : govex__err(err, ENOMEM, ENOMEM, "launch: out of memory");
}

void govex__audit_finish(govex_runtime *rt, const char *run_id, govex_result *res,
			 const govex_plan *plan)
{
	const struct govex_result_view *v = govex_result_view(res);
	if (v->termination == GOVEX_TERM_REFUSED || !plan) {
		govex__audit(&rt->audit, run_id, "finish",
			     json_pack("{s:s, s:s}", "status", govex_status_name(v->status),
				       "termination", "refused"));
		return;
	}
	govex__audit(&rt->audit, run_id, "finish",
		     json_pack("{s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I}, s:I, s:I, s:s}", "status",
			       govex_status_name(v->status), "termination",
			       govex_termination_name(v->termination), "exit_code",
			       v->termination == GOVEX_TERM_EXITED ? json_integer(v->exit_code)
								   : json_null(),
			       "signal", v->signal ? json_integer(v->signal) : json_null(), "usage",
			       "wall_ms", (json_int_t)v->wall_ms, "cpu_ms", (json_int_t)v->cpu_ms,
			       "max_rss_bytes", (json_int_t)v->max_rss_bytes, "stdout_bytes",
			       (json_int_t)v->stdout_bytes, "stderr_bytes",
			       (json_int_t)v->stderr_bytes, "plan_digest", plan->digest));
}

govex_result *govex__run_result(govex_runtime *rt, const struct decision *d,
				const govex_plan *plan, struct govex__outcome *o)
{
	const struct govex__backend_ops *b = govex__backends[d->backend];
	govex_result *res = govex__result_new(govex__status_of(o), o->term);
	if (res) {
		govex__result_take_outcome(res, o);
		govex__result_set_digests(res, rt->policy->digest, plan->digest);
		govex__result_set_backend(
			res, b->name, b->version,
			govex__run_controls(&rt->reports[d->backend], rt->policy, d));
		govex__outcome_diagnostics(res, o, &d->limits);
	}
	govex__outcome_release(o);
	return res;
}

/* Diagnostics for how a run ended (shared by runs and calls). */
void govex__outcome_diagnostics(govex_result *res, const struct govex__outcome *o,
				const struct govex__limits *l)
{
	if (o->term == GOVEX_TERM_LAUNCH_FAILED)
		govex__result_diag(res, "launch_failed",
				   json_pack("{s:s, s:i}", "step", o->failed_step, "errno",
					     o->failed_errno),
				   "launch step '%s' failed: %s", o->failed_step,
				   o->failed_message[0] ? o->failed_message : strerror(o->failed_errno));
	else if (o->term == GOVEX_TERM_TIMEOUT)
		govex__result_diag(res, "timeout", NULL, "wall time limit of %llu ms reached",
				   (unsigned long long)l->wall_ms);
	else if (o->term == GOVEX_TERM_CANCELLED)
		govex__result_diag(res, "cancelled", NULL, "the run was cancelled");
	else if (o->term == GOVEX_TERM_CPU_LIMIT)
		govex__result_diag(res, "cpu_limit", NULL, "CPU time limit of %llu ms reached",
				   (unsigned long long)l->cpu_ms);
	else if (o->term == GOVEX_TERM_MEMORY_LIMIT)
		govex__result_diag(res, "memory_limit", NULL,
				   "memory limit of %llu bytes reached",
				   (unsigned long long)l->memory_bytes);
	else if (o->term == GOVEX_TERM_OUTPUT_LIMIT)
		govex__result_diag(res, "output_limit", NULL,
				   "the run was ended: it wrote 16 MiB more than an output bound "
				   "(stdout %llu, stderr %llu bytes)",
				   (unsigned long long)l->stdout_bytes,
				   (unsigned long long)l->stderr_bytes);
	if (o->workdir_cleanup_errno)
		govex__result_diag(res, "workdir_cleanup_failed",
				   json_pack("{s:i}", "errno", o->workdir_cleanup_errno),
				   "the run's workdir could not be removed entirely: %s",
				   strerror(o->workdir_cleanup_errno));
	if (o->cgroup_cleanup_errno)
		govex__result_diag(res, "cgroup_cleanup_failed",
				   json_pack("{s:i}", "errno", o->cgroup_cleanup_errno),
				   "the run's cgroup could not be removed: %s",
				   strerror(o->cgroup_cleanup_errno));
}

static int execute_internal(govex_runtime *rt, const govex_plan *given,
			    const struct govex_request *req, govex_result **ret_result,
			    struct govex_error *err)
{
	char run_id[33];
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct decision d;
	struct govex__outcome o;
	_cleanup_free_ char *code = NULL;
	int r;

	memset(&d, 0, sizeof(d));
	govex__run_id_new(run_id);
	govex__audit_received(rt, run_id, given ? "execute" : "run", req);
	r = govex__plan_internal(rt, req, run_id, NULL, &plan, &d, &res, err);
	if (r < 0)
		return r;
	if (res)
		goto refused;
	if (given && strcmp(given->digest, plan->digest) != 0) {
		res = govex__plan_mismatch(rt, given, plan);
		goto refused;
	}
	if ((res = govex__approve(rt, run_id, &d, plan)))
		goto refused;

	code = strndup(req->code, req->code_len);
	if (!code)
		goto oom;
	char *argv[8];
	size_t ac = 0;
	argv[ac++] = rt->interp.path;
	argv[ac++] = "-I";
	if (!rt->policy->site)
		argv[ac++] = "-S";
	argv[ac++] = "-c";
	argv[ac++] = code;
	argv[ac] = NULL;
	if ((r = govex__launch(rt, run_id, &d, plan, argv, req->stdin_data, req->stdin_len,
			       req->cancel, -1, -1, 0, NULL, &o, &res, err)) < 0)
		goto oom;
	if (res)
		goto finish;

	if (!(res = govex__run_result(rt, &d, plan, &o)))
		goto oom;

finish:
	if ((r = govex__result_finish(res)) < 0)
		goto oom;
	govex__audit_finish(rt, run_id, res, plan);
	govex__decision_release(&d);
	govex_plan_free(plan);
	*ret_result = res;
	return 0;

refused:
	govex__decision_release(&d);
	govex_plan_free(plan);
	if (!res)
		return govex__err(err, ENOMEM, ENOMEM, "run: out of memory");
	if ((r = govex__result_finish(res)) < 0) {
		govex_result_free(res);
		return govex__err(err, ENOMEM, ENOMEM, "run: out of memory");
	}
	govex__audit_refused(rt, run_id, res);
	govex__audit_finish(rt, run_id, res, NULL);
	*ret_result = res;
	return 0;
oom:
	govex__decision_release(&d);
	govex_plan_free(plan);
	govex_result_free(res);
	return govex__err(err, ENOMEM, ENOMEM, "run: out of memory");
}

GOVEX_API int govex_runtime_execute(govex_runtime *rt, const govex_plan *plan,
				    const struct govex_request *req, govex_result **ret_result,
				    struct govex_error *ret_err)
{
	if (!rt || !plan || !req || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "execute: missing argument");
	return execute_internal(rt, plan, req, ret_result, ret_err);
}

GOVEX_API int govex_runtime_run(govex_runtime *rt, const struct govex_request *req,
				govex_result **ret_result, struct govex_error *ret_err)
{
	if (!rt || !req || !ret_result)
		return govex__err(ret_err, GOVEX_EINVAL, 0, "run: missing argument");
	return execute_internal(rt, NULL, req, ret_result, ret_err);
}
