/* SPDX-License-Identifier: MIT */
/*
 * Plans: the plan object (canonical JSON and its digest), its document made from the
 * typed struct govex__plan_fields, parsed plan files checked field by field, and why two
 * plans differ.  Planning itself is planning.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "approval.h"
#include "job.h"
#include "plan.h"
#include "protect.h"
#include "registry.h"
#include "request.h"
#include "runtime.h"

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
	const char *sp =
	    json_string_value(json_object_get(json_object_get(doc, "code"), "source_path"));
	if (!sp) /* a call plan */
		sp = json_string_value(json_object_get(json_object_get(doc, "source"), "path"));
	if (sp && !(p->source_path = strdup(sp)))
		return govex_plan_free(p);
	return p;
}

/* ---- the plan document ------------------------------------------------------------------ */

const char *govex__job_kind_name(enum govex__job_kind k)
{
	switch (k) {
	case GOVEX_JOB_RUN:
		return "run";
	case GOVEX_JOB_CALL:
		return "call";
	case GOVEX_JOB_EXEC:
		return "exec";
	case GOVEX_JOB_INSPECT:
		return "inspect";
	}
	return "run";
}

static json_t *interpreter_json(const struct govex__plan_fields *f)
{
	json_t *args = json_array();
	json_array_append_new(args, json_string("-I"));
	if (!f->interpreter.site)
		json_array_append_new(args, json_string("-S"));
	return json_pack("{s:s, s:s, s:o, s:s*}", "path", f->interpreter.path, "version",
			 f->interpreter.version, "args", args, "executable", f->interpreter.exec);
}

/* a run's: its code, stdin, interpreter and the request's digest */
static int run_members(json_t *doc, const struct govex__plan_fields *f)
{
	return json_object_set_new(doc, "code",
				   json_pack("{s:s, s:s, s:I, s:s?}", "language", "python",
					     "digest", f->code.digest, "bytes",
					     (json_int_t)f->code.bytes, "source_path",
					     f->code.source_path)) |
	       json_object_set_new(doc, "stdin",
				   json_pack("{s:s, s:I}", "digest", f->in.digest, "bytes",
					     (json_int_t)f->in.bytes)) |
	       json_object_set_new(doc, "interpreter", interpreter_json(f)) |
	       json_object_set_new(doc, "request_digest", json_string(f->request_digest));
}

/* an inspection's: its interpreter and the module's source; a call's also the function,
 * the inspection's digest and the effects */
static int source_members(json_t *doc, const struct govex__plan_fields *f)
{
	int r =
	    json_object_set_new(doc, "interpreter", interpreter_json(f)) |
	    json_object_set_new(doc, "source",
				json_pack("{s:s, s:I, s:s?, s:s?, s:s}", "digest", f->source.digest,
					  "bytes", (json_int_t)f->source.bytes, "path",
					  f->source.path, "notebook_digest",
					  f->source.notebook_digest, "module", f->source.module));
	if (f->kind == GOVEX_JOB_CALL)
		r |=
		    json_object_set(doc, "function", f->function) |
		    json_object_set_new(doc, "inspection_digest",
					json_string(f->inspection_digest)) |
		    json_object_set_new(doc, "interface_digest", json_string(f->interface_digest)) |
		    json_object_set_new(doc, "effects",
					json_pack("{s:o, s:O}", "require_known",
						  govex__strv_json(f->require_known), "observed",
						  f->observed));
	return r;
}

/* an exec's: its executable, argv, whether it is a shell string, what a sandbox binds */
static int exec_members(json_t *doc, const struct govex__plan_fields *f)
{
	return json_object_set_new(doc, "executable",
				   json_pack("{s:s, s:s, s:I}", "path", f->executable.path,
					     "digest", f->executable.digest, "bytes",
					     (json_int_t)f->executable.bytes)) |
	       json_object_set_new(doc, "argv", govex__strv_json(f->argv)) |
	       json_object_set_new(doc, "shell_string", json_boolean(f->shell_string)) |
	       json_object_set_new(doc, "binds", govex__strv_json(f->binds));
}

/* the members present only when the request uses them */
static int optional_members(json_t *doc, const struct govex__plan_fields *f)
{
	int r = 0;
	if (f->repl_inputs_digest)
		r |= json_object_set_new(
		    doc, "repl", json_pack("{s:s}", "inputs_digest", f->repl_inputs_digest));
	if (f->n_files) {
		json_t *files = json_array();
		for (size_t i = 0; files && i < f->n_files; i++)
			r |= json_array_append_new(files, json_pack("{s:s, s:I, s:s}", "name",
								    f->files[i].name, "bytes",
								    (json_int_t)f->files[i].bytes,
								    "digest", f->files[i].digest));
		r |= json_object_set_new(doc, "files", files);
	}
	if (f->outputs)
		r |= json_object_set_new(doc, "outputs",
					 json_pack("{s:I, s:I}", "max_files",
						   (json_int_t)f->outputs_max_files, "max_bytes",
						   (json_int_t)f->outputs_max_bytes));
	return r;
}

json_t *govex__plan_json(const struct govex__plan_fields *f)
{
	json_t *doc = json_pack(
	    "{s:s, s:s, s:{s:s, s:s}, s:o, s:{s:o}, s:{s:s, s:s?}, s:{s:o, s:o, s:b},"
	    " s:o, s:s, s:b, s:o, s:o, s:{s:o}, s:s}",
	    "version", GOVEX_PLAN_VERSION, "kind", govex__job_kind_name(f->kind), "backend", "name",
	    f->backend_name, "version", f->backend_version, "limits",
	    govex__limits_json(&f->limits), "environment", "names", govex__env_names_json(f->env),
	    "workdir", "mode", f->workdir ? "path" : "fresh", "path", f->workdir, "filesystem",
	    "read", govex__strv_json(f->read), "write", govex__strv_json(f->write),
	    "platform_defaults", f->platform_defaults, "network",
	    f->net_policy ? govex__policy_network_json(f->net_policy)
			  : json_string(f->network ? "allow" : "deny"),
	    "subprocess", f->subprocess ? "allow" : "deny", "shell", f->shell, "needs",
	    govex__perms_json(f->needs), "approval", govex__perms_json(f->approval), "controls",
	    "required", govex__ctlset_json(f->required), "policy_digest", f->policy_digest);
	if (!doc)
		return NULL;
	int r = 0;
	switch (f->kind) {
	case GOVEX_JOB_RUN:
		r = run_members(doc, f);
		break;
	case GOVEX_JOB_CALL:
	case GOVEX_JOB_INSPECT:
		r = source_members(doc, f);
		break;
	case GOVEX_JOB_EXEC:
		r = exec_members(doc, f);
		break;
	}
	r |= optional_members(doc, f);
	if (f->packages && f->kind != GOVEX_JOB_EXEC)
		r |= json_object_set_new(doc, "packages",
					 govex__packages_json(f->packages, f->preload));
	if (f->deny && f->deny[0])
		r |= json_object_set_new(json_object_get(doc, "filesystem"), "deny",
					 govex__strv_json(f->deny));
	if (r) {
		json_decref(doc);
		return NULL;
	}
	return doc;
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
static const char *const pf_limits[] = GOVEX__LIMIT_NAMES;
static const char *const pf_environment[] = {"names", NULL};
static const char *const pf_workdir[] = {"mode", "path", NULL};
static const char *const pf_filesystem[] = {"read", "write", "deny", "platform_defaults", NULL};
static const char *const pf_controls[] = {"required", NULL};
static const char *const pf_code[] = {"language", "digest", "bytes", "source_path", NULL};
static const char *const pf_stdin[] = {"digest", "bytes", NULL};
static const char *const pf_interpreter[] = {"path", "version", "args", "executable", NULL};
static const char *const pf_packages[] = {"digest",  "site",	      "libraries", "data",
					  "preload", "distributions", NULL};
static const char *const pf_source[] = {"digest",	   "bytes",  "path",
					"notebook_digest", "module", NULL};
static const char *const pf_effects[] = {"require_known", "observed", NULL};
static const char *const pf_executable[] = {"path", "digest", "bytes", NULL};
static const char *const pf_repl[] = {"inputs_digest", NULL};
static const char *const pf_outputs[] = {"max_files", "max_bytes", NULL};

#define PF_COMMON                                                                                  \
	{"version", NULL}, {"kind", NULL}, {"backend", pf_backend}, {"limits", pf_limits},         \
	    {"environment", pf_environment}, {"workdir", pf_workdir},                              \
	    {"filesystem", pf_filesystem}, {"network", NULL}, {"subprocess", NULL},                \
	    {"shell", NULL}, {"needs", NULL}, {"approval", NULL}, {"controls", pf_controls},       \
	{                                                                                          \
		"policy_digest", NULL                                                              \
	}
static const struct plan_field pf_run[] = {PF_COMMON,
					   {"code", pf_code},
					   {"stdin", pf_stdin},
					   {"interpreter", pf_interpreter},
					   {"packages", pf_packages},
					   {"request_digest", NULL},
					   {"repl", pf_repl},
					   {"files", NULL},
					   {"outputs", pf_outputs},
					   {NULL, NULL}};
static const struct plan_field pf_call[] = {PF_COMMON,
					    {"interpreter", pf_interpreter},
					    {"packages", pf_packages},
					    {"source", pf_source},
					    {"function", NULL},
					    {"inspection_digest", NULL},
					    {"interface_digest", NULL},
					    {"effects", pf_effects},
					    {"files", NULL},
					    {"outputs", pf_outputs},
					    {NULL, NULL}};
static const struct plan_field pf_exec[] = {PF_COMMON,
					    {"executable", pf_executable},
					    {"argv", NULL},
					    {"shell_string", NULL},
					    {"binds", NULL},
					    {"files", NULL},
					    {"outputs", pf_outputs},
					    {NULL, NULL}};
#undef PF_COMMON

static bool name_in(const char *name, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* A plan's top-level field names, for the nearest one (the tables hold fewer than 32). */
static void field_names(const struct plan_field *f, const char *names[32])
{
	size_t n = 0;
	for (; n < 31 && f[n].name; n++)
		names[n] = f[n].name;
	names[n] = NULL;
}

static int unknown_field(struct govex_error *err, const char *parent, const char *k,
			 const char *near, const char *kind)
{
	char path[200];
	snprintf(path, sizeof(path), "%s%s%.80s", parent ? parent : "", parent ? "." : "", k);
	if (near)
		return govex__err(err, GOVEX_EPLAN, 0,
				  "plan: %s: unknown field \"%.80s\" (did you mean \"%s\"?)", path,
				  k, near);
	if (!parent)
		return govex__err(err, GOVEX_EPLAN, 0,
				  "plan: %s: unknown field \"%.80s\" (a %s plan has no such field)",
				  path, k, kind);
	return govex__err(err, GOVEX_EPLAN, 0, "plan: %s: unknown field \"%.80s\"", path, k);
}

static int plan_check_fields(json_t *doc, struct govex_error *err)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const struct plan_field *f = !kind			 ? NULL
				     : strcmp(kind, "run") == 0	 ? pf_run
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
		if (!hit) {
			const char *names[32];
			field_names(f, names);
			return unknown_field(err, NULL, k, govex__nearest_name(k, names), kind);
		}
		if (!hit->sub || !json_is_object(v))
			continue;
		const char *k2;
		json_t *v2;
		json_object_foreach(v, k2, v2) if (!name_in(k2, hit->sub)) return unknown_field(
		    err, k, k2, govex__nearest_name(k2, hit->sub), kind);
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
	json_t *gk = json_object_get(json_object_get(g, "packages"), "digest");
	json_t *fk = json_object_get(json_object_get(f, "packages"), "digest");
	if (!json_equal(gk, fk) && (gk || fk)) {
		govex_result *r = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		govex__result_diag(
		    r, "environment_changed", NULL,
		    "packages: the interpreter's environment differs from the plan's (packages "
		    "installed, removed or changed: digest %.23s... in the plan, %.23s... now)",
		    gk ? json_string_value(gk) : "none", fk ? json_string_value(fk) : "none");
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
	govex__result_diag(r, "plan_mismatch", NULL, "plan: differs from the request in: %s",
			   keys[0] ? keys : "encoding");
	return r;
}
