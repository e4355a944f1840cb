/* SPDX-License-Identifier: MIT */
/* unit-registry: required controls, backend reports and backend selection. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define V "\"version\":\"govex.policy/v1\""
#define OPEN                                                                                       \
	"\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"]},\"network\":\"allow\","               \
	"\"subprocess\":\"allow\""

#define BASE_CONTROLS                                                                              \
	(CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) | CTL(PROCESS_TREE_KILL) |       \
	 CTL(FD_HYGIENE))

static govex_policy *policy_of(const char *json)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = json ? govex_policy_parse(json, strlen(json), &p, &err) : -1;
	ck_assert_msg(r == 0, "policy: %s", err.message);
	return p;
}

static govex_policy *preset(const char *name)
{
	govex_policy *p = NULL;
	ck_assert_int_eq(govex_policy_preset(name, &p, NULL), 0);
	return p;
}

static govex_runtime *runtime_of(govex_policy *p, const char *backend)
{
	struct govex_runtime_options o;
	struct govex_error err;
	memset(&o, 0, sizeof(o));
	memset(&err, 0, sizeof(err));
	o.audit_fd = -1;
	o.backend = backend;
	govex_runtime *rt = NULL;
	ck_assert_msg(govex_runtime_new(p, &o, &rt, &err) == 0, "runtime: %s", err.message);
	return rt;
}

/* Plans "pass"; returns either the refusal document (*ret_refused true) or the plan
 * document. */
static json_t *plan_doc(govex_runtime *rt, const struct govex_request *given, bool *ret_refused)
{
	struct govex_request req;
	if (given)
		req = *given;
	else {
		memset(&req, 0, sizeof(req));
		req.code = "pass";
		req.code_len = 4;
	}
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_runtime_plan(rt, &req, &plan, &res, &err), 0);
	ck_assert((plan == NULL) != (res == NULL));
	size_t len;
	const char *js = plan ? govex_plan_canonical(plan, &len) : govex_result_json(res, &len);
	json_t *doc = json_loadb(js, len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(doc);
	*ret_refused = res != NULL;
	govex_plan_free(plan);
	govex_result_free(res);
	return doc;
}

static bool json_strv_has(json_t *a, const char *s)
{
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e) if (json_is_string(e) &&
					strcmp(json_string_value(e), s) == 0) return true;
	return false;
}

/* The array of strings a, as a govex__ctlset (asserts every name is a control). */
static govex__ctlset ctlset_of(json_t *a)
{
	govex__ctlset s = 0;
	size_t i;
	json_t *e;
	ck_assert(json_is_array(a));
	json_array_foreach(a, i, e)
	{
		ck_assert(json_is_string(e));
		bool found = false;
		for (unsigned c = 0; c < GOVEX__CTL_COUNT; c++)
			if (strcmp(json_string_value(e), govex__control_name(c)) == 0) {
				ck_assert_msg(!(s & ((govex__ctlset)1 << c)), "duplicate %s",
					      json_string_value(e));
				s |= (govex__ctlset)1 << c;
				found = true;
			}
		ck_assert_msg(found, "unknown control '%s'", json_string_value(e));
	}
	return s;
}

static json_t *first_diag(json_t *doc, const char *code)
{
	json_t *d = json_array_get(json_object_get(doc, "diagnostics"), 0);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(json_string_value(json_object_get(d, "code")), code);
	return d;
}

/* ---- govex__policy_required ------------------------------------------------------------ */

START_TEST(test_required_strict)
{
	govex_policy *p = preset("strict");
	govex__ctlset want = BASE_CONTROLS | CTL(FRESH_WORKDIR) | CTL(NETWORK_DENY) |
			     CTL(FS_READ_ALLOWLIST) | CTL(FS_WRITE_ALLOWLIST) |
			     CTL(SUBPROCESS_DENY) | CTL(MEMORY_AGGREGATE) |
			     CTL(CPU_TIME_AGGREGATE) | CTL(PIDS_AGGREGATE) |
			     CTL(OPEN_FILES_PER_PROCESS) | CTL(FILE_SIZE_PER_PROCESS);
	govex__ctlset got = govex__policy_required(p);
	ck_assert_msg(got == want, "required %#llx, want %#llx", (unsigned long long)got,
		      (unsigned long long)want);
	govex_policy_free(p);
	/* workspace requires the same controls (a read root is still an allowlist) */
	ck_assert_int_eq(chdir("/usr"), 0);
	p = preset("workspace");
	ck_assert_uint_eq(govex__policy_required(p), want);
	govex_policy_free(p);
}
END_TEST

START_TEST(test_required_trusted)
{
	govex_policy *p = preset("trusted");
	govex__ctlset want = BASE_CONTROLS | CTL(FRESH_WORKDIR);
	govex__ctlset got = govex__policy_required(p);
	ck_assert_msg(got == want, "required %#llx, want %#llx", (unsigned long long)got,
		      (unsigned long long)want);
	govex_policy_free(p);
}
END_TEST

START_TEST(test_required_pieces)
{
	/* named workdir: no fresh_workdir */
	govex_policy *p = policy_of("{" V "," OPEN ",\"workdir\":\"/tmp\"}");
	ck_assert_uint_eq(govex__policy_required(p), BASE_CONTROLS);
	govex_policy_free(p);
	/* read everything, write only /tmp */
	p = policy_of("{" V ",\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/tmp\"]},"
		      "\"network\":\"allow\",\"subprocess\":\"allow\"}");
	ck_assert_uint_eq(govex__policy_required(p),
			  BASE_CONTROLS | CTL(FRESH_WORKDIR) | CTL(FS_WRITE_ALLOWLIST));
	govex_policy_free(p);
	/* "/" among other roots still means everything */
	p = policy_of("{" V ",\"filesystem\":{\"read\":[\"/usr\",\"/\"],\"write\":[\"/\"]},"
		      "\"subprocess\":\"allow\"}");
	ck_assert_uint_eq(govex__policy_required(p),
			  BASE_CONTROLS | CTL(FRESH_WORKDIR) | CTL(NETWORK_DENY));
	govex_policy_free(p);
	/* each limit adds its control */
	static const struct {
		const char *limit;
		govex__ctlset ctl;
	} lim[] = {
	    {"\"cpu_ms\":1", CTL(CPU_TIME_AGGREGATE)},
	    {"\"memory_bytes\":1048576", CTL(MEMORY_AGGREGATE)},
	    {"\"processes\":1", CTL(PIDS_AGGREGATE)},
	    {"\"open_files\":8", CTL(OPEN_FILES_PER_PROCESS)},
	    {"\"file_size_bytes\":1", CTL(FILE_SIZE_PER_PROCESS)},
	};
	for (size_t i = 0; i < ARRAY_SIZE(lim); i++) {
		char doc[256];
		snprintf(doc, sizeof(doc), "{" V "," OPEN ",\"limits\":{%s}}", lim[i].limit);
		p = policy_of(doc);
		ck_assert_uint_eq(govex__policy_required(p),
				  BASE_CONTROLS | CTL(FRESH_WORKDIR) | lim[i].ctl);
		govex_policy_free(p);
	}
}
END_TEST

START_TEST(test_control_names)
{
	ck_assert_str_eq(govex__control_name(GOVEX_CTL_WALL_TIME), "wall_time");
	ck_assert_str_eq(govex__control_name(GOVEX_CTL_NETWORK_DENY), "network_deny");
	ck_assert_str_eq(govex__control_name(GOVEX_CTL_NO_NEW_PRIVILEGES), "no_new_privileges");
	ck_assert_str_eq(govex__control_name(GOVEX__CTL_COUNT), "unknown");
	ck_assert_str_eq(govex__control_name((enum govex__control) - 1), "unknown");
	json_t *a = govex__ctlset_json(CTL(SUBPROCESS_DENY) | CTL(WALL_TIME) | CTL(FD_HYGIENE));
	char *s = json_dumps(a, JSON_COMPACT);
	/* table order, not bit-setting order */
	ck_assert_str_eq(s, "[\"wall_time\",\"fd_hygiene\",\"subprocess_deny\"]");
	free(s);
	json_decref(a);
	a = govex__ctlset_json(0);
	ck_assert_uint_eq(json_array_size(a), 0);
	json_decref(a);
	/* names are unique */
	for (unsigned i = 0; i < GOVEX__CTL_COUNT; i++)
		for (unsigned k = i + 1; k < GOVEX__CTL_COUNT; k++)
			ck_assert_str_ne(govex__control_name(i), govex__control_name(k));
	ck_assert_uint_le(GOVEX__CTL_COUNT, 64);
}
END_TEST

/* ---- selection ------------------------------------------------------------------------ */

START_TEST(test_strict_on_controlled_refused)
{
	govex_policy *p = preset("strict");
	govex_runtime *rt = runtime_of(p, "controlled");
	bool refused;
	json_t *doc = plan_doc(rt, NULL, &refused);
	ck_assert(refused);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "status")), "policy_refused");
	json_t *d = first_diag(doc, "missing_controls");
	json_t *controls = json_object_get(d, "controls");
	static const char *const must[] = {
	    "network_deny",	"subprocess_deny",    "fs_read_allowlist", "fs_write_allowlist",
	    "memory_aggregate", "cpu_time_aggregate", "pids_aggregate"};
	for (size_t i = 0; i < ARRAY_SIZE(must); i++)
		ck_assert_msg(json_strv_has(controls, must[i]), "controls lack %s", must[i]);
	/* nothing the controlled backend does enforce is listed as missing */
	static const char *const never[] = {
	    "wall_time",  "output_bounds",	    "env_allowlist",	    "fresh_workdir",
	    "fd_hygiene", "open_files_per_process", "file_size_per_process"};
	for (size_t i = 0; i < ARRAY_SIZE(never); i++)
		ck_assert_msg(!json_strv_has(controls, never[i]), "controls list %s", never[i]);
	govex__ctlset got = ctlset_of(controls);
	ck_assert_msg((got & ~govex__policy_required(p)) == 0,
		      "a missing control that the policy does not require");
	ck_assert_str_eq(json_string_value(json_object_get(d, "backend")), "controlled");
	const char *m = json_string_value(json_object_get(d, "message"));
	ck_assert_msg(m && strstr(m, "network_deny"), "message '%s'", m);
	ck_assert(json_is_null(json_object_get(doc, "plan_digest")));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "policy_digest")),
			 govex_policy_digest(p));
	json_decref(doc);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

/* Refused runs never start: run() gives the same refusal. */
START_TEST(test_strict_run_refused)
{
	govex_policy *p = preset("strict");
	govex_runtime *rt = runtime_of(p, "controlled");
	struct govex_request req;
	memset(&req, 0, sizeof(req));
	req.code = "open('/tmp/govex-unit-registry-must-not-exist','w')";
	req.code_len = strlen(req.code);
	govex_result *res = NULL;
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, NULL), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_int_eq(govex_result_view(res)->termination, GOVEX_TERM_REFUSED);
	ck_assert_ptr_null(govex_result_view(res)->backend_name);
	ck_assert_int_eq(access("/tmp/govex-unit-registry-must-not-exist", F_OK), -1);
	govex_result_free(res);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

START_TEST(test_trusted_on_controlled)
{
	govex_policy *p = preset("trusted");
	govex_runtime *rt = runtime_of(p, NULL);
	bool refused;
	json_t *doc = plan_doc(rt, NULL, &refused);
	ck_assert_msg(!refused, "refused");
	json_t *b = json_object_get(doc, "backend");
	ck_assert_str_eq(json_string_value(json_object_get(b, "name")), "controlled");
	ck_assert_str_eq(json_string_value(json_object_get(b, "version")), "govex.controlled/v1");
	json_t *ctl = json_object_get(doc, "controls");
	ck_assert_uint_eq(ctlset_of(json_object_get(ctl, "required")),
			  BASE_CONTROLS | CTL(FRESH_WORKDIR));
	ck_assert_ptr_null(json_object_get(ctl, "aggregate_by_single_process"));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "policy_digest")),
			 govex_policy_digest(p));
	json_decref(doc);
	govex_runtime_free(rt);
	/* forcing it gives the same plan */
	rt = runtime_of(p, "controlled");
	doc = plan_doc(rt, NULL, &refused);
	ck_assert(!refused);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(doc, "backend"), "name")),
	    "controlled");
	json_decref(doc);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

/* Per-process limits are never reported as aggregate ones. */
START_TEST(test_aggregate_not_faked)
{
	static const struct {
		const char *limits;
		const char *control;
	} cases[] = {
	    {"\"memory_bytes\":1073741824", "memory_aggregate"},
	    {"\"cpu_ms\":1000", "cpu_time_aggregate"},
	    {"\"processes\":10", "pids_aggregate"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char doc[256];
		snprintf(doc, sizeof(doc), "{" V "," OPEN ",\"limits\":{%s}}", cases[i].limits);
		govex_policy *p = policy_of(doc);
		govex_runtime *rt = runtime_of(p, "controlled");
		bool refused;
		json_t *d = plan_doc(rt, NULL, &refused);
		ck_assert(refused);
		json_t *c = json_object_get(first_diag(d, "missing_controls"), "controls");
		ck_assert_uint_eq(json_array_size(c), 1);
		ck_assert_str_eq(json_string_value(json_array_get(c, 0)), cases[i].control);
		json_decref(d);
		govex_runtime_free(rt);
		govex_policy_free(p);
	}
}
END_TEST

/* A limit the request sets where the policy leaves it open is required as well. */
START_TEST(test_request_limit_requires_control)
{
	govex_policy *p = preset("trusted");
	govex_runtime *rt = runtime_of(p, "controlled");
	struct govex_request req;
	memset(&req, 0, sizeof(req));
	req.code = "pass";
	req.code_len = 4;
	req.limits.cpu_ms = 1000;
	bool refused;
	json_t *d = plan_doc(rt, &req, &refused);
	ck_assert(refused);
	json_t *c = json_object_get(first_diag(d, "missing_controls"), "controls");
	ck_assert_uint_eq(json_array_size(c), 1);
	ck_assert_str_eq(json_string_value(json_array_get(c, 0)), "cpu_time_aggregate");
	json_decref(d);
	/* per-process ones are enforced by controlled */
	req.limits.cpu_ms = 0;
	req.limits.open_files = 64;
	req.limits.file_size_bytes = 4096;
	d = plan_doc(rt, &req, &refused);
	ck_assert(!refused);
	ck_assert_uint_eq(ctlset_of(json_object_get(json_object_get(d, "controls"), "required")),
			  BASE_CONTROLS | CTL(FRESH_WORKDIR) | CTL(OPEN_FILES_PER_PROCESS) |
			      CTL(FILE_SIZE_PER_PROCESS));
	json_decref(d);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

START_TEST(test_unknown_backend)
{
	govex_policy *p = preset("trusted");
	static const char *const names[] = {"docker", "", "Controlled", "controlled "};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct govex_runtime_options o;
		struct govex_error err;
		memset(&o, 0, sizeof(o));
		memset(&err, 0, sizeof(err));
		o.audit_fd = -1;
		o.backend = names[i];
		govex_runtime *rt = (govex_runtime *)0x1;
		ck_assert_int_eq(govex_runtime_new(p, &o, &rt, &err), -GOVEX_EBACKEND);
		ck_assert_ptr_eq(rt, (govex_runtime *)0x1);
		ck_assert_int_eq(err.code, GOVEX_EBACKEND);
		ck_assert_msg(strncmp(err.message, "backend '", 9) == 0, "'%s'", err.message);
	}
	govex_policy_free(p);
}
END_TEST

/* ---- reports --------------------------------------------------------------------------- */

START_TEST(test_backends_json)
{
	govex_policy *p = preset("strict");
	govex_runtime *rt = runtime_of(p, NULL);
	char *js = NULL;
	ck_assert_int_eq(govex_runtime_backends_json(rt, &js), 0);
	ck_assert_ptr_nonnull(js);
	size_t len = strlen(js);
	ck_assert_int_eq(js[len - 1], '\n');
	ck_assert_ptr_eq(strchr(js, '\n'), js + len - 1); /* one line */
	json_t *a = json_loadb(js, len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert(json_is_array(a));
	ck_assert_uint_eq(json_array_size(a), govex__n_backends);
	size_t i;
	json_t *r;
	bool saw_controlled = false;
	json_array_foreach(a, i, r)
	{
		ck_assert(json_is_object(r));
		/* the restricted backend adds syscalls_allowed when it enforces syscall_filter */
		json_t *sa = json_object_get(r, "syscalls_allowed");
		/* and, where a cgroup hierarchy serves it, where its cgroups come from */
		json_t *cg = json_object_get(r, "cgroups");
		if (cg)
			ck_assert(json_is_string(json_object_get(cg, "source")) &&
				  json_is_string(json_object_get(cg, "detail")));
		ck_assert_uint_eq(json_object_size(r), 6 + (sa != NULL) + (cg != NULL));
		if (sa) {
			ck_assert_str_eq(govex__backends[i]->name, "restricted");
			ck_assert(json_is_integer(sa));
			ck_assert_int_eq(json_integer_value(sa),
					 govex__restricted_syscalls_allowed());
			ck_assert_int_gt(json_integer_value(sa), 100);
		}
		ck_assert_str_eq(json_string_value(json_object_get(r, "version")),
				 "govex.backend/v1");
		ck_assert(json_is_string(json_object_get(r, "name")));
		ck_assert_str_eq(json_string_value(json_object_get(r, "name")),
				 govex__backends[i]->name);
		ck_assert_str_eq(json_string_value(json_object_get(r, "backend_version")),
				 govex__backends[i]->version);
		ck_assert(json_is_boolean(json_object_get(r, "available")));
		govex__ctlset enforced = ctlset_of(json_object_get(r, "enforced"));
		json_t *un = json_object_get(r, "unavailable");
		ck_assert(json_is_array(un));
		size_t k;
		json_t *u;
		json_array_foreach(un, k, u)
		{
			ck_assert(json_is_object(u));
			ck_assert_uint_eq(json_object_size(u), 2);
			const char *c = json_string_value(json_object_get(u, "control"));
			const char *why = json_string_value(json_object_get(u, "reason"));
			ck_assert_ptr_nonnull(c);
			ck_assert_ptr_nonnull(why);
			ck_assert_uint_gt(strlen(why), 0);
			/* a control is never both enforced and unavailable */
			for (unsigned x = 0; x < GOVEX__CTL_COUNT; x++)
				if (strcmp(c, govex__control_name(x)) == 0)
					ck_assert_msg(!(enforced & ((govex__ctlset)1 << x)),
						      "%s both enforced and unavailable", c);
		}
		if (!json_is_true(json_object_get(r, "available")))
			ck_assert_uint_eq(enforced, 0);
		if (strcmp(govex__backends[i]->name, "controlled") == 0) {
			saw_controlled = true;
			ck_assert(json_is_true(json_object_get(r, "available")));
			ck_assert_str_eq(json_string_value(json_object_get(r, "backend_version")),
					 "govex.controlled/v1");
			govex__ctlset must = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) |
					     CTL(ENV_ALLOWLIST) | CTL(FRESH_WORKDIR) |
					     CTL(FD_HYGIENE) | CTL(MEMORY_PER_PROCESS) |
					     CTL(CPU_TIME_PER_PROCESS);
			ck_assert_uint_eq(enforced & must, must);
			/* it is not a sandbox and says so */
			govex__ctlset never = CTL(NETWORK_DENY) | CTL(FS_READ_ALLOWLIST) |
					      CTL(FS_WRITE_ALLOWLIST) | CTL(SUBPROCESS_DENY) |
					      CTL(MEMORY_AGGREGATE) | CTL(CPU_TIME_AGGREGATE) |
					      CTL(PIDS_AGGREGATE) | CTL(SYSCALL_FILTER);
			ck_assert_uint_eq(enforced & never, 0);
			for (unsigned x = 0; x < GOVEX__CTL_COUNT; x++) {
				if (!(never & ((govex__ctlset)1 << x)))
					continue;
				bool listed = false;
				json_array_foreach(
				    un, k,
				    u) if (strcmp(json_string_value(json_object_get(u, "control")),
						  govex__control_name(x)) == 0) listed = true;
				ck_assert_msg(listed, "%s not listed as unavailable",
					      govex__control_name(x));
			}
		}
	}
	ck_assert(saw_controlled);
	/* the lightest backend comes first */
	ck_assert_str_eq(govex__backends[0]->name, "controlled");
	json_decref(a);
	free(js);
	ck_assert_int_eq(govex_runtime_backends_json(NULL, &js), -GOVEX_EINVAL);
	ck_assert_int_eq(govex_runtime_backends_json(rt, NULL), -GOVEX_EINVAL);
	govex_runtime_free(rt);
	govex_policy_free(p);
}
END_TEST

/* The runtime copies the policy. */
START_TEST(test_runtime_copies_policy)
{
	govex_policy *p = preset("trusted");
	char digest[72];
	snprintf(digest, sizeof(digest), "%s", govex_policy_digest(p));
	govex_runtime *rt = runtime_of(p, NULL);
	govex_policy_free(p);
	const govex_policy *rp = govex_runtime_policy(rt);
	ck_assert_ptr_nonnull(rp);
	ck_assert_str_eq(govex_policy_digest(rp), digest);
	govex_runtime_free(rt);
	ck_assert_ptr_null(govex_runtime_free(NULL));
	govex_runtime *out = NULL;
	ck_assert_int_eq(govex_runtime_new(NULL, NULL, &out, NULL), -GOVEX_EINVAL);
	/* NULL options are allowed */
	p = preset("trusted");
	ck_assert_int_eq(govex_runtime_new(p, NULL, &out, NULL), 0);
	govex_runtime_free(out);
	govex_policy_free(p);
}
END_TEST

static Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("required");
	tcase_add_test(tc, test_required_strict);
	tcase_add_test(tc, test_required_trusted);
	tcase_add_test(tc, test_required_pieces);
	tcase_add_test(tc, test_control_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("selection");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_strict_on_controlled_refused);
	tcase_add_test(tc, test_strict_run_refused);
	tcase_add_test(tc, test_trusted_on_controlled);
	tcase_add_test(tc, test_aggregate_not_faked);
	tcase_add_test(tc, test_request_limit_requires_control);
	tcase_add_test(tc, test_unknown_backend);
	suite_add_tcase(s, tc);
	tc = tcase_create("reports");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_backends_json);
	tcase_add_test(tc, test_runtime_copies_policy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(registry_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
