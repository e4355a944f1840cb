/* SPDX-License-Identifier: MIT */
/*
 * unit-request: request validation through the public API, on the controlled backend
 * (trusted-like policies) with python3 from PATH.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "runtime.h"

#define V "\"version\":\"govex.policy/v1\""
/* No denials: the controlled backend can run it. */
#define OPEN                                                                                       \
	"\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"]},\"network\":\"allow\","               \
	"\"subprocess\":\"allow\",\"shell\":\"allow\""

static govex_runtime *runtime_for(const char *policy_json, const struct govex_runtime_options *o)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = policy_json ? govex_policy_parse(policy_json, strlen(policy_json), &p, &err)
			    : govex_policy_preset("trusted", &p, &err);
	ck_assert_msg(r == 0, "policy: %s", err.message);
	struct govex_runtime_options opts;
	if (!o) {
		memset(&opts, 0, sizeof(opts));
		opts.audit_fd = -1;
		o = &opts;
	}
	govex_runtime *rt = NULL;
	r = govex_runtime_new(p, o, &rt, &err);
	ck_assert_msg(r == 0, "runtime: %s", err.message);
	govex_policy_free(p);
	return rt;
}

static void request_init(struct govex_request *req, const char *code)
{
	memset(req, 0, sizeof(*req));
	req->code = code;
	req->code_len = strlen(code);
}

/* Plans req; asserts a refusal; returns the parsed result document. */
static json_t *plan_refused(govex_runtime *rt, const struct govex_request *req,
			    enum govex_status want_status)
{
	govex_plan *plan = (govex_plan *)0x1;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan(rt, req, &plan, &res, &err), 0);
	ck_assert_ptr_null(plan);
	ck_assert_ptr_nonnull(res);
	const struct govex_result_view *v = govex_result_view(res);
	ck_assert_msg(v->status == want_status, "status %s, want %s (%s)",
		      govex_status_name(v->status), govex_status_name(want_status),
		      govex_result_summary(res));
	ck_assert_int_eq(v->termination, GOVEX_TERM_REFUSED);
	ck_assert_ptr_null(v->plan_digest);
	ck_assert_int_eq(govex_result_exit_status(res), 125);
	size_t len = 0;
	const char *js = govex_result_json(res, &len);
	ck_assert_ptr_nonnull(js);
	ck_assert_int_eq(js[len - 1], '\n');
	json_error_t je;
	json_t *doc = json_loadb(js, len, JSON_REJECT_DUPLICATES, &je);
	ck_assert_msg(doc != NULL, "result JSON: %s", je.text);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "status")),
			 govex_status_name(want_status));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "termination")), "refused");
	ck_assert(json_is_null(json_object_get(doc, "plan_digest")));
	ck_assert(json_is_null(json_object_get(doc, "exit_code")));
	govex_result_free(res);
	return doc;
}

/* The diagnostic with that code (asserts there is one). */
static json_t *diag(json_t *doc, const char *code)
{
	json_t *ds = json_object_get(doc, "diagnostics");
	ck_assert(json_is_array(ds));
	size_t i;
	json_t *d;
	json_array_foreach(ds, i, d)
	{
		const char *c = json_string_value(json_object_get(d, "code"));
		if (c && strcmp(c, code) == 0)
			return d;
	}
	ck_abort_msg("no diagnostic %s", code);
	return NULL;
}

static const char *diag_message(json_t *doc, const char *code)
{
	const char *m = json_string_value(json_object_get(diag(doc, code), "message"));
	ck_assert_ptr_nonnull(m);
	return m;
}

/* Plans req; asserts a plan; returns the parsed plan document. */
static json_t *plan_ok(govex_runtime *rt, const struct govex_request *req, govex_plan **ret_plan)
{
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan(rt, req, &plan, &res, &err), 0);
	ck_assert_msg(res == NULL, "refused: %s", res ? govex_result_summary(res) : "");
	ck_assert_ptr_nonnull(plan);
	size_t len;
	const char *c = govex_plan_canonical(plan, &len);
	json_t *doc = json_loadb(c, len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), "govex.plan/v1");
	if (ret_plan)
		*ret_plan = plan;
	else
		govex_plan_free(plan);
	return doc;
}

static json_int_t plan_limit(json_t *plan, const char *name)
{
	json_t *v = json_object_get(json_object_get(plan, "limits"), name);
	ck_assert_msg(json_is_integer(v), "plan limits.%s not an integer", name);
	return json_integer_value(v);
}

/* ---- limits --------------------------------------------------------------------------- */

START_TEST(test_wall_above_policy_refused)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "print(1)");
	req.limits.wall_ms = 5001;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	json_t *d = diag(doc, "limit_exceeds_policy");
	ck_assert_str_eq(json_string_value(json_object_get(d, "limit")), "wall_ms");
	const char *m = diag_message(doc, "limit_exceeds_policy");
	ck_assert_msg(strstr(m, "limits.wall_ms") != NULL, "message '%s'", m);
	ck_assert_msg(strstr(m, "5001") && strstr(m, "5000"), "message '%s'", m);
	/* the policy was read: its digest is in the refusal */
	ck_assert_str_eq(json_string_value(json_object_get(doc, "policy_digest")),
			 govex_policy_digest(govex_runtime_policy(rt)));
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_every_limit_above_policy_refused)
{
	govex_runtime *rt = runtime_for("{" V "," OPEN ",\"limits\":{\"wall_ms\":100,"
					"\"cpu_ms\":100,\"memory_bytes\":1048576,"
					"\"processes\":2,\"open_files\":16,\"file_size_bytes\":10,"
					"\"stdout_bytes\":10,\"stderr_bytes\":10}}",
					NULL);
	static const char *const names[] = {"wall_ms",	    "cpu_ms",	   "memory_bytes",
					    "processes",    "open_files",  "file_size_bytes",
					    "stdout_bytes", "stderr_bytes"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct govex_request req;
		request_init(&req, "pass");
		uint64_t *f[] = {&req.limits.wall_ms,	   &req.limits.cpu_ms,
				 &req.limits.memory_bytes, &req.limits.processes,
				 &req.limits.open_files,   &req.limits.file_size_bytes,
				 &req.limits.stdout_bytes, &req.limits.stderr_bytes};
		static const uint64_t pol[] = {100, 100, 1048576, 2, 16, 10, 10, 10};
		*f[i] = pol[i] + 1;
		json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
		char want[64];
		snprintf(want, sizeof(want), "limits.%s: ", names[i]);
		const char *m = diag_message(doc, "limit_exceeds_policy");
		ck_assert_msg(strncmp(m, want, strlen(want)) == 0, "message '%s', want '%s'", m,
			      want);
		json_decref(doc);
	}
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_wall_equal_to_policy_planned)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "print(1)");
	req.limits.wall_ms = 5000;
	json_t *plan = plan_ok(rt, &req, NULL);
	ck_assert_int_eq(plan_limit(plan, "wall_ms"), 5000);
	json_decref(plan);
	/* below: the request's value */
	req.limits.wall_ms = 1234;
	plan = plan_ok(rt, &req, NULL);
	ck_assert_int_eq(plan_limit(plan, "wall_ms"), 1234);
	json_decref(plan);
	/* none: the policy's */
	req.limits.wall_ms = 0;
	plan = plan_ok(rt, &req, NULL);
	ck_assert_int_eq(plan_limit(plan, "wall_ms"), 5000);
	ck_assert_int_eq(plan_limit(plan, "stdout_bytes"), 65536);
	json_decref(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_code_too_large)
{
	govex_runtime *rt = runtime_for("{" V "," OPEN ",\"limits\":{\"code_bytes\":100}}", NULL);
	char code[102];
	memset(code, '#', sizeof(code));
	code[101] = '\0'; /* 101 bytes of comment */
	struct govex_request req;
	request_init(&req, code);
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	const char *m = diag_message(doc, "code_too_large");
	ck_assert_msg(strstr(m, "code_bytes") != NULL, "message '%s'", m);
	json_decref(doc);
	req.code_len = 100;
	json_t *plan = plan_ok(rt, &req, NULL);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(plan, "code"), "bytes")), 100);
	json_decref(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_code_too_large_default)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	size_t n = 65537;
	char *code = malloc(n + 1);
	ck_assert_ptr_nonnull(code);
	memset(code, '#', n);
	code[n] = '\0';
	struct govex_request req;
	request_init(&req, code);
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "code_too_large");
	json_decref(doc);
	req.code_len = 65536;
	json_decref(plan_ok(rt, &req, NULL));
	free(code);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_stdin_too_large)
{
	govex_runtime *rt = runtime_for("{" V "," OPEN ",\"limits\":{\"stdin_bytes\":16}}", NULL);
	struct govex_request req;
	request_init(&req, "import sys; sys.stdin.read()");
	req.stdin_data = "0123456789abcdefX";
	req.stdin_len = 17;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	const char *m = diag_message(doc, "stdin_too_large");
	ck_assert_msg(strstr(m, "limits.stdin_bytes") != NULL, "message '%s'", m);
	json_decref(doc);
	req.stdin_len = 16;
	json_t *plan = plan_ok(rt, &req, NULL);
	char want[72];
	govex__sha256_digest("0123456789abcdef", 16, want);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(plan, "stdin"), "digest")), want);
	json_decref(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_stdin_zero_limit)
{
	govex_runtime *rt = runtime_for("{" V "," OPEN ",\"limits\":{\"stdin_bytes\":0}}", NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.stdin_data = "x";
	req.stdin_len = 1;
	json_decref(plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT));
	req.stdin_len = 0;
	json_decref(plan_ok(rt, &req, NULL));
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_invalid_code)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "print(1)");
	req.code = "print('\xff')";
	req.code_len = strlen(req.code);
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "invalid_code");
	json_decref(doc);
	req.code = "print(1)\0print(2)";
	req.code_len = 17;
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "invalid_code");
	json_decref(doc);
	request_init(&req, "pass");
	req.language = "ruby";
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "unsupported_language");
	json_decref(doc);
	request_init(&req, "pass");
	req.code = NULL;
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "missing_code");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

/* ---- environment ------------------------------------------------------------------------- */

START_TEST(test_env_not_allowed)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	const char *const env[] = {"FOO=bar", NULL};
	request_init(&req, "pass");
	req.env = env;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	json_t *d = diag(doc, "environment_not_allowed");
	ck_assert_str_eq(json_string_value(json_object_get(d, "name")), "FOO");
	/* the value never appears */
	char *all = json_dumps(doc, 0);
	ck_assert_ptr_null(strstr(all, "bar"));
	free(all);
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_env_allowed_name_in_plan_value_not)
{
	static const char secret[] = "s3cr3t-v4lue-9f8e7d";
	govex_runtime *rt =
	    runtime_for("{" V "," OPEN ",\"environment\":{\"allow\":[\"GOVEX_TEST_VAR\",\"OTHER\"],"
			"\"set\":{\"LANG\":\"C.UTF-8\",\"FIXED\":\"fixed-v4lue-1234\"}}}",
			NULL);
	struct govex_request req;
	char kv[64];
	snprintf(kv, sizeof(kv), "GOVEX_TEST_VAR=%s", secret);
	const char *const env[] = {kv, NULL};
	request_init(&req, "pass");
	req.env = env;
	govex_plan *plan = NULL;
	json_t *doc = plan_ok(rt, &req, &plan);
	json_t *names = json_object_get(json_object_get(doc, "environment"), "names");
	ck_assert(json_is_array(names));
	/* exactly the request's name and the policy's fixed names, sorted */
	ck_assert_uint_eq(json_array_size(names), 3);
	ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "FIXED");
	ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "GOVEX_TEST_VAR");
	ck_assert_str_eq(json_string_value(json_array_get(names, 2)), "LANG");
	size_t len;
	const char *c = govex_plan_canonical(plan, &len);
	ck_assert_ptr_null(memmem(c, len, secret, strlen(secret)));
	ck_assert_ptr_null(memmem(c, len, "fixed-v4lue-1234", 16));
	ck_assert_ptr_null(memmem(c, len, "C.UTF-8", 7));
	json_decref(doc);
	govex_plan_free(plan);

	/* a name outside the allow list is still refused */
	const char *const env2[] = {kv, "NOPE=1", NULL};
	req.env = env2;
	doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_str_eq(
	    json_string_value(json_object_get(diag(doc, "environment_not_allowed"), "name")),
	    "NOPE");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_env_malformed)
{
	govex_runtime *rt =
	    runtime_for("{" V "," OPEN ",\"environment\":{\"allow\":[\"A\"]}}", NULL);
	static const char *const bad[] = {"A", "=x", "1A=x", "A B=x", "A-B=1"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct govex_request req;
		const char *const env[] = {bad[i], NULL};
		request_init(&req, "pass");
		req.env = env;
		json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
		diag(doc, "invalid_environment");
		json_decref(doc);
	}
	govex_runtime_free(rt);
}
END_TEST

/* The value of an allowed variable reaches the program; a policy's fixed value wins. */
START_TEST(test_env_reaches_program)
{
	govex_runtime *rt =
	    runtime_for("{" V "," OPEN ",\"environment\":{\"allow\":[\"A\",\"LANG\"],"
			"\"set\":{\"LANG\":\"C.UTF-8\"}}}",
			NULL);
	struct govex_request req;
	const char *const env[] = {"A=hello", "LANG=xx", NULL};
	request_init(&req, "import os; print(os.environ.get('A'), os.environ.get('LANG'), "
			   "os.environ.get('HOME'))");
	req.env = env;
	govex_result *res = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, &err), 0);
	const struct govex_result_view *v = govex_result_view(res);
	ck_assert_msg(v->status == GOVEX_STATUS_SUCCESS, "%s", govex_result_summary(res));
	/* HOME is a platform default (the workdir), not the caller's */
	const char *home = getenv("HOME");
	ck_assert_uint_ge(v->stdout_len, strlen("hello C.UTF-8 /\n"));
	ck_assert_mem_eq(v->stdout_data, "hello C.UTF-8 /", strlen("hello C.UTF-8 /"));
	ck_assert_msg(!home || !memmem(v->stdout_data, v->stdout_len, home, strlen(home)) ||
			  strcmp(home, "/") == 0,
		      "the caller's HOME reached the run: %.*s", (int)v->stdout_len,
		      v->stdout_data);
	govex_result_free(res);
	govex_runtime_free(rt);
}
END_TEST

/* ---- needs ------------------------------------------------------------------------------ */

START_TEST(test_need_network_denied)
{
	govex_runtime *rt =
	    runtime_for("{" V ",\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"]},"
			"\"subprocess\":\"allow\"}",
			NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.needs = GOVEX_NEED_NETWORK;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_str_eq(json_string_value(json_object_get(diag(doc, "need_not_allowed"), "need")),
			 "network");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_need_subprocess_and_write_denied)
{
	govex_runtime *rt = runtime_for("{" V ",\"filesystem\":{\"read\":[\"/\"]},"
					"\"network\":\"allow\"}",
					NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.needs = GOVEX_NEED_SUBPROCESS;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_str_eq(json_string_value(json_object_get(diag(doc, "need_not_allowed"), "need")),
			 "subprocess");
	json_decref(doc);
	req.needs = GOVEX_NEED_FILESYSTEM_WRITE;
	doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_str_eq(json_string_value(json_object_get(diag(doc, "need_not_allowed"), "need")),
			 "filesystem_write");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_need_allowed_in_plan)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.needs = GOVEX_NEED_NETWORK | GOVEX_NEED_SUBPROCESS;
	json_t *plan = plan_ok(rt, &req, NULL);
	json_t *needs = json_object_get(plan, "needs");
	ck_assert_uint_eq(json_array_size(needs), 2);
	ck_assert_str_eq(json_string_value(json_array_get(needs, 0)), "network");
	ck_assert_str_eq(json_string_value(json_array_get(needs, 1)), "subprocess");
	json_decref(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_shell_denied)
{
	govex_runtime *rt =
	    runtime_for("{" V ",\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"]},"
			"\"network\":\"allow\",\"subprocess\":\"allow\"}",
			NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.shell = 1;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	diag(doc, "shell_not_allowed");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

/* ---- workdir and metadata ----------------------------------------------------------------- */

START_TEST(test_workdir_checks)
{
	govex_runtime *rt =
	    runtime_for("{" V ",\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/tmp\"]},"
			"\"network\":\"allow\",\"subprocess\":\"allow\"}",
			NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.workdir = "/srv";
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_POLICY_REFUSED);
	diag(doc, "workdir_not_writable");
	json_decref(doc);
	req.workdir = "/tmp/../srv";
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "invalid_workdir");
	json_decref(doc);
	req.workdir = "tmp";
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "invalid_workdir");
	json_decref(doc);
	govex_runtime_free(rt);
	/* a workdir under a write root is planned as a path (controlled needs write "/") */
	rt = runtime_for(NULL, NULL);
	request_init(&req, "pass");
	req.workdir = "/tmp";
	json_t *plan = plan_ok(rt, &req, NULL);
	json_t *wd = json_object_get(plan, "workdir");
	ck_assert_str_eq(json_string_value(json_object_get(wd, "mode")), "path");
	ck_assert_str_eq(json_string_value(json_object_get(wd, "path")), "/tmp");
	json_decref(plan);
	request_init(&req, "pass");
	plan = plan_ok(rt, &req, NULL);
	wd = json_object_get(plan, "workdir");
	ck_assert_str_eq(json_string_value(json_object_get(wd, "mode")), "fresh");
	ck_assert(json_is_null(json_object_get(wd, "path")));
	json_decref(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_metadata_checks)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	static const char *const bad[] = {"novalue", "=x", "k=\xff"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *const meta[] = {"ok=1", bad[i], NULL};
		request_init(&req, "pass");
		req.metadata = meta;
		json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
		const char *m = diag_message(doc, "invalid_metadata");
		ck_assert_msg(strncmp(m, "metadata[1]: ", 13) == 0, "message '%s'", m);
		json_decref(doc);
	}
	const char *const meta[] = {"task=t1", "who=unit", NULL};
	request_init(&req, "pass");
	req.metadata = meta;
	json_decref(plan_ok(rt, &req, NULL));
	govex_runtime_free(rt);
}
END_TEST

/* ---- approval ----------------------------------------------------------------------------- */

struct approver {
	int answer;
	int calls;
	char perms[128];
	char *plan;
	size_t plan_len;
};

static int approve_cb(void *userdata, const char *plan, size_t plan_len,
		      const char *const *permissions)
{
	struct approver *a = userdata;
	a->calls++;
	a->perms[0] = '\0';
	for (size_t i = 0; permissions && permissions[i]; i++) {
		size_t n = strlen(a->perms);
		snprintf(a->perms + n, sizeof(a->perms) - n, "%s%s", i ? "," : "", permissions[i]);
	}
	free(a->plan);
	a->plan = malloc(plan_len);
	memcpy(a->plan, plan, plan_len);
	a->plan_len = plan_len;
	return a->answer;
}

#define APPROVAL_POLICY "{" V "," OPEN ",\"approval\":[\"network\"]}"

static json_t *run_json(govex_runtime *rt, const struct govex_request *req, govex_result **ret)
{
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(govex_runtime_run(rt, req, &res, &err) == 0, "run: %s", err.message);
	ck_assert_ptr_nonnull(res);
	size_t len;
	const char *js = govex_result_json(res, &len);
	json_t *doc = json_loadb(js, len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(doc);
	*ret = res;
	return doc;
}

START_TEST(test_approval_required_without_approver)
{
	govex_runtime *rt = runtime_for(APPROVAL_POLICY, NULL);
	struct govex_request req;
	request_init(&req, "print(6*7)");
	/* planning alone does not ask */
	json_t *plan = plan_ok(rt, &req, NULL);
	json_t *ap = json_object_get(plan, "approval");
	ck_assert_uint_eq(json_array_size(ap), 1);
	ck_assert_str_eq(json_string_value(json_array_get(ap, 0)), "network");
	json_decref(plan);
	govex_result *res;
	json_t *doc = run_json(rt, &req, &res);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "status")), "policy_refused");
	diag(doc, "approval_required");
	ck_assert_uint_eq(govex_result_view(res)->stdout_len, 0);
	json_decref(doc);
	govex_result_free(res);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_approval_denied)
{
	struct approver a = {.answer = 0};
	struct govex_runtime_options o;
	memset(&o, 0, sizeof(o));
	o.audit_fd = -1;
	o.approve = approve_cb;
	o.approve_userdata = &a;
	govex_runtime *rt = runtime_for(APPROVAL_POLICY, &o);
	struct govex_request req;
	request_init(&req, "print(6*7)");
	govex_plan *plan = NULL;
	json_decref(plan_ok(rt, &req, &plan));
	ck_assert_int_eq(a.calls, 0); /* planning does not ask */
	govex_result *res;
	json_t *doc = run_json(rt, &req, &res);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_str_eq(a.perms, "network");
	/* the approver saw exactly the plan that govex_runtime_plan() makes */
	size_t len;
	const char *c = govex_plan_canonical(plan, &len);
	ck_assert_uint_eq(a.plan_len, len);
	ck_assert_mem_eq(a.plan, c, len);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_POLICY_REFUSED);
	diag(doc, "approval_denied");
	ck_assert_uint_eq(govex_result_view(res)->stdout_len, 0);
	json_decref(doc);
	govex_result_free(res);
	/* anything but 1 is a denial */
	a.answer = 2;
	doc = run_json(rt, &req, &res);
	ck_assert_int_eq(a.calls, 2);
	diag(doc, "approval_denied");
	json_decref(doc);
	govex_result_free(res);
	free(a.plan);
	govex_plan_free(plan);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_approval_granted_runs)
{
	struct approver a = {.answer = 1};
	struct govex_runtime_options o;
	memset(&o, 0, sizeof(o));
	o.audit_fd = -1;
	o.approve = approve_cb;
	o.approve_userdata = &a;
	govex_runtime *rt = runtime_for(APPROVAL_POLICY, &o);
	struct govex_request req;
	request_init(&req, "print(6*7)");
	govex_result *res;
	json_t *doc = run_json(rt, &req, &res);
	ck_assert_int_eq(a.calls, 1);
	const struct govex_result_view *v = govex_result_view(res);
	ck_assert_msg(v->status == GOVEX_STATUS_SUCCESS, "%s", govex_result_summary(res));
	ck_assert_int_eq(v->termination, GOVEX_TERM_EXITED);
	ck_assert_int_eq(v->exit_code, 0);
	ck_assert_uint_eq(v->stdout_len, 3);
	ck_assert_mem_eq(v->stdout_data, "42\n", 3);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "stdout")), "42\n");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "status")), "success");
	ck_assert_ptr_nonnull(v->plan_digest);
	ck_assert_str_eq(v->backend_name, "controlled");
	json_decref(doc);
	govex_result_free(res);
	free(a.plan);
	govex_runtime_free(rt);
}
END_TEST

/* Approval of a permission the run cannot use is not asked. */
START_TEST(test_approval_not_needed)
{
	struct approver a = {.answer = 0};
	struct govex_runtime_options o;
	memset(&o, 0, sizeof(o));
	o.audit_fd = -1;
	o.approve = approve_cb;
	o.approve_userdata = &a;
	/* shell needs approval, but only a run with shell intent can use it */
	govex_runtime *rt = runtime_for("{" V "," OPEN ",\"approval\":[\"shell\"]}", &o);
	struct govex_request req;
	request_init(&req, "print(1)");
	json_t *plan = plan_ok(rt, &req, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(plan, "approval")), 0);
	json_decref(plan);
	govex_result *res;
	json_t *doc = run_json(rt, &req, &res);
	ck_assert_int_eq(a.calls, 0);
	ck_assert_msg(govex_result_view(res)->status == GOVEX_STATUS_SUCCESS, "%s",
		      govex_result_summary(res));
	json_decref(doc);
	govex_result_free(res);
	/* with shell intent it is asked (and denied here) */
	req.shell = 1;
	doc = run_json(rt, &req, &res);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_str_eq(a.perms, "shell");
	diag(doc, "approval_denied");
	json_decref(doc);
	govex_result_free(res);
	free(a.plan);
	govex_runtime_free(rt);
}
END_TEST

/* ---- plans -------------------------------------------------------------------------------- */

START_TEST(test_plan_deterministic_and_execute)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "print('planned')");
	govex_plan *p1 = NULL, *p2 = NULL;
	json_decref(plan_ok(rt, &req, &p1));
	json_decref(plan_ok(rt, &req, &p2));
	ck_assert_str_eq(govex_plan_digest(p1), govex_plan_digest(p2));
	size_t len;
	const char *c = govex_plan_canonical(p1, &len);
	char want[72];
	govex__sha256_digest(c, len, want);
	ck_assert_str_eq(govex_plan_digest(p1), want);

	/* round trip through govex_plan_parse */
	govex_plan *p3 = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_plan_parse(c, len, &p3, &err), 0);
	ck_assert_str_eq(govex_plan_digest(p3), govex_plan_digest(p1));

	govex_result *res = NULL;
	ck_assert_int_eq(govex_runtime_execute(rt, p3, &req, &res, &err), 0);
	ck_assert_msg(govex_result_view(res)->status == GOVEX_STATUS_SUCCESS, "%s",
		      govex_result_summary(res));
	ck_assert_str_eq(govex_result_view(res)->plan_digest, govex_plan_digest(p1));
	govex_result_free(res);

	/* other code under the same plan: source_mismatch, nothing runs */
	request_init(&req, "print('other')");
	ck_assert_int_eq(govex_runtime_execute(rt, p3, &req, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_SOURCE_MISMATCH);
	ck_assert_uint_eq(govex_result_view(res)->stdout_len, 0);
	govex_result_free(res);

	/* same code, other limits: refused as a plan mismatch */
	request_init(&req, "print('planned')");
	req.limits.wall_ms = 100;
	ck_assert_int_eq(govex_runtime_execute(rt, p3, &req, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_POLICY_REFUSED);
	govex_result_free(res);

	govex_plan_free(p1);
	govex_plan_free(p2);
	govex_plan_free(p3);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_plan_parse_errors)
{
	govex_plan *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_plan_parse("{", 1, &p, &err), -GOVEX_EPLAN);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.code, GOVEX_EPLAN);
	/* the parser's own message is kept after the "plan: " prefix */
	ck_assert_msg(strncmp(err.message, "plan: document: line 1", 22) == 0, "message '%s'",
		      err.message);
	ck_assert_int_eq(govex_plan_parse("{}", 2, &p, &err), -GOVEX_EPLAN);
	ck_assert_msg(strncmp(err.message, "plan: version: ", 15) == 0, "message '%s'",
		      err.message);
	ck_assert_int_eq(govex_plan_parse("{\"version\":\"govex.policy/v1\"}", 29, &p, &err),
			 -GOVEX_EPLAN);
	static const char real[] = "{\"version\":\"govex.plan/v1\",\"x\":1.5}";
	ck_assert_int_eq(govex_plan_parse(real, strlen(real), &p, &err), -GOVEX_EPLAN);
	ck_assert_ptr_null(p);
	static const char dup[] = "{\"version\":\"govex.plan/v1\",\"x\":1,\"x\":2}";
	ck_assert_int_eq(govex_plan_parse(dup, strlen(dup), &p, &err), -GOVEX_EPLAN);
	ck_assert_int_eq(govex_plan_parse(NULL, 0, &p, &err), -GOVEX_EINVAL);
	ck_assert_int_eq(govex_plan_parse("{", 1, &p, NULL), -GOVEX_EPLAN);
	ck_assert_ptr_null(govex_plan_free(NULL));
}
END_TEST

/* ---- results ------------------------------------------------------------------------------- */

START_TEST(test_result_new_refusal)
{
	govex_result *r = NULL;
	ck_assert_int_eq(govex_result_new_refusal(GOVEX_STATUS_POLICY_REFUSED, "bad_policy",
						  "policy: unreadable", &r),
			 0);
	const struct govex_result_view *v = govex_result_view(r);
	ck_assert_int_eq(v->status, GOVEX_STATUS_POLICY_REFUSED);
	ck_assert_ptr_null(v->plan_digest);
	ck_assert_int_eq(govex_result_exit_status(r), 125);
	size_t len = 0;
	const char *js = govex_result_json(r, &len);
	json_t *doc = json_loadb(js, len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_string_value(json_object_get(diag(doc, "bad_policy"), "message")),
			 "policy: unreadable");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), "govex.result/v1");
	json_decref(doc);
	govex_result_free(r);

	/* a refusal's whole message, up to 1000 bytes, in the document and the summary
	 * (a missing-controls refusal that names its backend and gives the cgroup hint
	 * runs past 500) */
	char msg[1001];
	for (size_t i = 0; i < 1000; i++)
		msg[i] = (char)('a' + i % 26);
	msg[1000] = '\0';
	ck_assert_int_eq(govex_result_new_refusal(GOVEX_STATUS_POLICY_REFUSED, "long", msg, &r), 0);
	js = govex_result_json(r, &len);
	doc = json_loadb(js, len, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(diag(doc, "long"), "message")), msg);
	const char *sum = govex_result_summary(r);
	ck_assert_str_eq(sum + strlen("policy_refused: "), msg);
	json_decref(doc);
	govex_result_free(r);
}
END_TEST

/* A value that is not UTF-8 is refused naming the variable, never echoing the value. */
START_TEST(test_env_value_not_utf8)
{
	govex_runtime *rt =
	    runtime_for("{" V "," OPEN ",\"environment\":{\"allow\":[\"A\"]}}", NULL);
	struct govex_request req;
	const char *const env[] = {"A=ok\xff\xfesecret", NULL};
	request_init(&req, "pass");
	req.env = env;
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	json_t *d = diag(doc, "invalid_environment");
	ck_assert_str_eq(json_string_value(json_object_get(d, "name")), "A");
	const char *m = json_string_value(json_object_get(d, "message"));
	ck_assert_msg(strstr(m, "'A'") && !strstr(m, "secret"), "message '%s'", m);
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

/* A named workdir that is not an existing directory is refused when planned. */
START_TEST(test_workdir_missing)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "pass");
	req.workdir = "/nonexistent-govex-unit/wd";
	json_t *doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	json_t *d = diag(doc, "workdir_missing");
	ck_assert_str_eq(json_string_value(json_object_get(d, "path")), req.workdir);
	json_decref(doc);
	req.workdir = "/etc/passwd"; /* not a directory */
	doc = plan_refused(rt, &req, GOVEX_STATUS_INVALID_INPUT);
	diag(doc, "workdir_missing");
	json_decref(doc);
	govex_runtime_free(rt);
}
END_TEST

/* A zeroed govex_runtime_options means no audit fd: nothing is written to fd 0. */
START_TEST(test_zeroed_options_no_audit_on_stdin)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	int saved = fcntl(0, F_DUPFD_CLOEXEC, 10);
	ck_assert_int_eq(dup2(p[1], 0), 0); /* fd 0 now writable: an audit line would land */
	struct govex_runtime_options o;
	memset(&o, 0, sizeof(o));
	govex_runtime *rt = runtime_for(NULL, &o);
	struct govex_request req;
	request_init(&req, "pass");
	json_decref(plan_ok(rt, &req, NULL));
	govex_runtime_free(rt);
	if (saved >= 0)
		dup2(saved, 0);
	char buf[64];
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* A failed cgroup or workdir removal is a diagnostic of the result, with its errno. */
START_TEST(test_cleanup_failures_reported)
{
	struct govex__outcome o;
	memset(&o, 0, sizeof(o));
	o.term = GOVEX_TERM_EXITED;
	o.cgroup_cleanup_errno = EBUSY;
	o.workdir_cleanup_errno = EACCES;
	struct govex__limits l;
	memset(&l, 0, sizeof(l));
	govex_result *res = govex__result_new(GOVEX_STATUS_SUCCESS, GOVEX_TERM_EXITED);
	ck_assert_ptr_nonnull(res);
	govex__outcome_diagnostics(res, &o, &l);
	ck_assert_int_eq(govex__result_finish(res), 0);
	size_t len;
	const char *js = govex_result_json(res, &len);
	json_t *doc = json_loadb(js, len, 0, NULL);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(diag(doc, "cgroup_cleanup_failed"), "errno")),
	    EBUSY);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(diag(doc, "workdir_cleanup_failed"), "errno")),
	    EACCES);
	json_decref(doc);
	govex_result_free(res);
}
END_TEST

/* A plan file with a field govex never writes is refused when parsed, naming it. */
START_TEST(test_plan_unknown_field)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	struct govex_request req;
	request_init(&req, "pass");
	json_t *plan = plan_ok(rt, &req, NULL);
	govex_runtime_free(rt);
	struct {
		const char *obj, *key;
		const char *want;
	} cases[] = {
	    {NULL, "surprise",
	     "plan: surprise: unknown field \"surprise\" (a run plan has no such field)"},
	    {"limits", "wall_clock", "plan: limits.wall_clock: unknown field \"wall_clock\""},
	    {"backend", "x", "plan: backend.x: unknown field \"x\""},
	    /* the nearest known field of the same object, when one is close */
	    {NULL, "kindd", "plan: kindd: unknown field \"kindd\" (did you mean \"kind\"?)"},
	    {NULL, "netwrok",
	     "plan: netwrok: unknown field \"netwrok\" (did you mean \"network\"?)"},
	    {"limits", "wall_msx",
	     "plan: limits.wall_msx: unknown field \"wall_msx\" (did you mean \"wall_ms\"?)"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *doc = json_deep_copy(plan);
		json_t *o = cases[i].obj ? json_object_get(doc, cases[i].obj) : doc;
		json_object_set_new(o, cases[i].key, json_integer(1));
		char *c = json_dumps(doc, JSON_COMPACT);
		govex_plan *p = NULL;
		struct govex_error err;
		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(govex_plan_parse(c, strlen(c), &p, &err), -GOVEX_EPLAN);
		ck_assert_ptr_null(p);
		ck_assert_str_eq(err.message, cases[i].want);
		free(c);
		json_decref(doc);
	}
	/* an unknown kind */
	json_t *doc = json_deep_copy(plan);
	json_object_set_new(doc, "kind", json_string("teleport"));
	char *c = json_dumps(doc, JSON_COMPACT);
	govex_plan *p = NULL;
	struct govex_error err;
	ck_assert_int_eq(govex_plan_parse(c, strlen(c), &p, &err), -GOVEX_EPLAN);
	ck_assert_msg(strstr(err.message, "kind"), "message '%s'", err.message);
	free(c);
	json_decref(doc);
	/* the plan itself parses */
	c = json_dumps(plan, JSON_COMPACT);
	ck_assert_int_eq(govex_plan_parse(c, strlen(c), &p, &err), 0);
	govex_plan_free(p);
	free(c);
	json_decref(plan);
}
END_TEST

/* An exec plan made by the library parses again. */
START_TEST(test_exec_plan_parses)
{
	govex_runtime *rt = runtime_for(NULL, NULL);
	const char *const argv[] = {"/bin/true", NULL};
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.argv = argv;
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan_exec(rt, &x, &plan, &res, &err), 0);
	ck_assert_msg(res == NULL, "refused: %s", res ? govex_result_summary(res) : "");
	size_t len;
	const char *c = govex_plan_canonical(plan, &len);
	govex_plan *p = NULL;
	ck_assert_msg(govex_plan_parse(c, len, &p, &err) == 0, "parse: %s", err.message);
	govex_plan_free(p);
	govex_plan_free(plan);
	govex_runtime_free(rt);
}
END_TEST

static Suite *request_suite(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("limits");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_wall_above_policy_refused);
	tcase_add_test(tc, test_every_limit_above_policy_refused);
	tcase_add_test(tc, test_wall_equal_to_policy_planned);
	tcase_add_test(tc, test_code_too_large);
	tcase_add_test(tc, test_code_too_large_default);
	tcase_add_test(tc, test_stdin_too_large);
	tcase_add_test(tc, test_stdin_zero_limit);
	tcase_add_test(tc, test_invalid_code);
	suite_add_tcase(s, tc);

	tc = tcase_create("environment");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_env_not_allowed);
	tcase_add_test(tc, test_env_allowed_name_in_plan_value_not);
	tcase_add_test(tc, test_env_malformed);
	tcase_add_test(tc, test_env_value_not_utf8);
	tcase_add_test(tc, test_env_reaches_program);
	suite_add_tcase(s, tc);

	tc = tcase_create("needs");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_need_network_denied);
	tcase_add_test(tc, test_need_subprocess_and_write_denied);
	tcase_add_test(tc, test_need_allowed_in_plan);
	tcase_add_test(tc, test_shell_denied);
	tcase_add_test(tc, test_workdir_checks);
	tcase_add_test(tc, test_workdir_missing);
	tcase_add_test(tc, test_metadata_checks);
	suite_add_tcase(s, tc);

	tc = tcase_create("approval");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_approval_required_without_approver);
	tcase_add_test(tc, test_approval_denied);
	tcase_add_test(tc, test_approval_granted_runs);
	tcase_add_test(tc, test_approval_not_needed);
	suite_add_tcase(s, tc);

	tc = tcase_create("plans");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_plan_deterministic_and_execute);
	tcase_add_test(tc, test_plan_parse_errors);
	tcase_add_test(tc, test_plan_unknown_field);
	tcase_add_test(tc, test_exec_plan_parses);
	tcase_add_test(tc, test_zeroed_options_no_audit_on_stdin);
	tcase_add_test(tc, test_cleanup_failures_reported);
	tcase_add_test(tc, test_result_new_refusal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(request_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
