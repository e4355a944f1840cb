/* SPDX-License-Identifier: MIT */
/*
 * unit-plans: the canonical bytes of plan documents stay byte-identical.
 *
 * A set of plans (run, exec, call, and the inspection plan a call makes first) is made
 * through the public API and compared with golden files recorded from the govex that
 * built plans by patching JSON (before the typed plan struct, plan.h).  Only what
 * depends on the host is replaced by a placeholder before the comparison: the
 * interpreter's path and version, a backend's version, an executable's path, digest,
 * size and loader files, and a call plan's function and inspection digest (which are
 * checked instead against the inspection itself: the function is the inspection's entry
 * and the digest that of its canonical bytes).  Everything else, digests of policies
 * and requests included, is compared byte for byte.
 *
 * GOVEX_GOLDEN_WRITE=1 rewrites the golden files (only ever from a govex whose plans are
 * known to be right).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "runtime.h"

#define V "\"version\":\"govex.policy/v1\""

/* trusted-like, runs on controlled; every permission approvable */
static const char POLICY_OPEN[] =
    "{" V ",\"python\":{\"site\":true},"
    "\"filesystem\":{\"read\":[\"/\"],\"write\":[\"/\"],\"platform_defaults\":false},"
    "\"network\":\"allow\",\"subprocess\":\"allow\",\"shell\":\"allow\","
    "\"approval\":[\"network\",\"shell\",\"filesystem_write\",\"subprocess\"],"
    "\"environment\":{\"allow\":[\"FOO\",\"BAR\"],\"set\":{\"A\":\"1\",\"PATH\":\"/usr/bin:/"
    "bin\"}},"
    "\"limits\":{\"wall_ms\":4000,\"stdout_bytes\":1000}}";

/* strict-like with an effects requirement: restricted */
static const char POLICY_EFFECTS[] = "{" V ",\"effects\":{\"require_known\":[\"network\"]},"
				     "\"environment\":{\"set\":{\"PATH\":\"/usr/bin:/bin\"}}}";

static const char MODULE[] = "import json\n\n"
			     "def f(a: int, b: int = 2):\n"
			     "    \"\"\"Adds.\"\"\"\n"
			     "    return a + b\n\n"
			     "async def g(x: str) -> str:\n"
			     "    return x\n";

static const char NOTEBOOK[] =
    "{\"cells\":[{\"cell_type\":\"markdown\",\"metadata\":{},\"source\":[\"# t\"]},"
    "{\"cell_type\":\"code\",\"execution_count\":null,\"metadata\":{},\"outputs\":[],"
    "\"source\":[\"def h(x: int) -> int:\\n\",\"    return x * 2\\n\"]}],"
    "\"metadata\":{},\"nbformat\":4,\"nbformat_minor\":5}";

struct audit_log {
	char *planned[8]; /* plan digests of "decision planned" events, in order */
	size_t n;
};

static void audit_cb(void *ud, const char *line, size_t len)
{
	struct audit_log *a = ud;
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *ev = json_string_value(json_object_get(j, "event"));
	const char *dec = json_string_value(json_object_get(j, "decision"));
	const char *pd = json_string_value(json_object_get(j, "plan_digest"));
	if (ev && dec && pd && strcmp(ev, "decision") == 0 && strcmp(dec, "planned") == 0 &&
	    a->n < ARRAY_SIZE(a->planned))
		a->planned[a->n++] = strdup(pd);
	json_decref(j);
}

static void audit_reset(struct audit_log *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->planned[i]);
	a->n = 0;
}

static govex_runtime *runtime_for(const char *policy_json, const char *preset,
				  struct audit_log *log)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = policy_json ? govex_policy_parse(policy_json, strlen(policy_json), &p, &err)
			    : govex_policy_preset(preset, &p, &err);
	ck_assert_msg(r == 0, "policy: %s", err.message);
	struct govex_runtime_options opts;
	memset(&opts, 0, sizeof(opts));
	opts.audit_fd = -1;
	opts.audit = audit_cb;
	opts.audit_userdata = log;
	govex_runtime *rt = NULL;
	r = govex_runtime_new(p, &opts, &rt, &err);
	ck_assert_msg(r == 0, "runtime: %s", err.message);
	govex_policy_free(p);
	return rt;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (json_object_get(o, k))
		json_object_set_new(o, k, json_string(v));
}

static char *canon_of(json_t *doc)
{
	char *c = NULL;
	size_t len = 0;
	ck_assert_int_eq(govex__canon(doc, &c, &len), 0);
	return c;
}

/* The plan's canonical bytes are the canonical form of its document; the document with
 * the host's values replaced by placeholders, as canonical bytes. */
static char *normalized(const govex_plan *plan, json_t **ret_doc)
{
	size_t len = 0;
	const char *canon = govex_plan_canonical(plan, &len);
	json_error_t je;
	json_t *doc = json_loadb(canon, len, JSON_REJECT_DUPLICATES, &je);
	ck_assert_msg(doc != NULL, "plan JSON: %s", je.text);
	char *again = canon_of(doc);
	ck_assert_msg(strlen(again) == len && memcmp(again, canon, len) == 0,
		      "plan bytes are not canonical");
	free(again);
	char digest[72];
	govex__sha256_digest(canon, len, digest);
	ck_assert_str_eq(digest, govex_plan_digest(plan));
	if (ret_doc)
		*ret_doc = json_deep_copy(doc);

	set_str(json_object_get(doc, "interpreter"), "path", "@INTERP_PATH@");
	set_str(json_object_get(doc, "interpreter"), "version", "@INTERP_VERSION@");
	set_str(json_object_get(doc, "backend"), "version", "@BACKEND_VERSION@");
	json_t *exe = json_object_get(doc, "executable");
	if (exe) {
		set_str(exe, "path", "@EXE_PATH@");
		set_str(exe, "digest", "@EXE_DIGEST@");
		json_object_set_new(exe, "bytes", json_integer(7));
		json_array_set_new(json_object_get(doc, "argv"), 0, json_string("@EXE_PATH@"));
		json_object_set_new(doc, "binds", json_string("@BINDS@"));
	}
	/* the host's installed packages (python.site): their shape, then a placeholder */
	json_t *pk = json_object_get(doc, "packages");
	if (pk) {
		static const char *const keys[] = {"digest", "site",	"libraries",
						   "data",   "preload", "distributions"};
		ck_assert_uint_eq(json_object_size(pk), 6);
		for (size_t i = 0; i < 6; i++)
			ck_assert_msg(json_object_get(pk, keys[i]), "packages.%s", keys[i]);
		ck_assert(strncmp(json_string_value(json_object_get(pk, "digest")), "sha256:", 7) ==
			  0);
		json_object_set_new(doc, "packages", json_string("@PACKAGES@"));
	}
	if (json_object_get(doc, "function")) {
		json_object_set_new(doc, "function", json_string("@FUNCTION@"));
		set_str(doc, "inspection_digest", "@INSPECTION_DIGEST@");
	}
	char *n = canon_of(doc);
	json_decref(doc);
	return n;
}

static void golden_check(const char *name, const char *got)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/plans/%s.json", GOLDEN_DIR, name);
	const char *w = getenv("GOVEX_GOLDEN_WRITE");
	if (w && strcmp(w, "1") == 0) {
		FILE *f = fopen(path, "w");
		ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
		fputs(got, f);
		fclose(f);
		return;
	}
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	ck_assert_msg(strcmp(buf, got) == 0,
		      "plan %s differs from its golden bytes:\n got  %s\n want %s", name, got, buf);
}

static govex_plan *plan_run(govex_runtime *rt, const struct govex_request *req)
{
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan(rt, req, &plan, &res, &err), 0);
	ck_assert_msg(res == NULL, "refused: %s", res ? govex_result_summary(res) : "");
	ck_assert_ptr_nonnull(plan);
	return plan;
}

static void check_run(const char *name, const char *policy, const char *preset,
		      const struct govex_request *req)
{
	struct audit_log log = {0};
	govex_runtime *rt = runtime_for(policy, preset, &log);
	govex_plan *plan = plan_run(rt, req);
	char *n = normalized(plan, NULL);
	golden_check(name, n);
	ck_assert_uint_eq(log.n, 1);
	ck_assert_str_eq(log.planned[0], govex_plan_digest(plan));
	free(n);
	govex_plan_free(plan);
	audit_reset(&log);
	govex_runtime_free(rt);
}

static void request_init(struct govex_request *req, const char *code)
{
	memset(req, 0, sizeof(*req));
	req->code = code;
	req->code_len = strlen(code);
}

START_TEST(test_run_trusted)
{
	struct govex_request req;
	request_init(&req, "print(1)");
	check_run("run-trusted", NULL, "trusted", &req);
}
END_TEST

START_TEST(test_run_strict)
{
	struct govex_request req;
	request_init(&req, "print(6*7)\n");
	req.limits.cpu_ms = 2000;
	req.limits.memory_bytes = 100 << 20;
	req.limits.processes = 8;
	check_run("run-strict", NULL, "strict", &req);
}
END_TEST

START_TEST(test_run_everything)
{
	static const char *const env[] = {"FOO=x", "BAR=", NULL};
	static const char *const meta[] = {"k=v", "who=me", NULL};
	struct govex_request req;
	request_init(&req, "import sys\nprint(sys.stdin.read())\n");
	req.source_path = "/srv/project/x.py";
	req.stdin_data = "abc\n";
	req.stdin_len = 4;
	req.workdir = "/tmp";
	req.limits.wall_ms = 1000;
	req.limits.stdout_bytes = 100;
	req.limits.stderr_bytes = 200;
	req.env = env;
	req.needs = GOVEX_NEED_NETWORK | GOVEX_NEED_SUBPROCESS | GOVEX_NEED_FILESYSTEM_WRITE;
	req.shell = 1;
	req.metadata = meta;
	check_run("run-everything", POLICY_OPEN, NULL, &req);
}
END_TEST

static void check_exec(const char *name, const char *policy, const char *preset,
		       const struct govex_exec *x)
{
	struct audit_log log = {0};
	govex_runtime *rt = runtime_for(policy, preset, &log);
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan_exec(rt, x, &plan, &res, &err), 0);
	ck_assert_msg(res == NULL, "refused: %s", res ? govex_result_summary(res) : "");
	json_t *doc = NULL;
	char *n = normalized(plan, &doc);
	golden_check(name, n);
	/* the host's values that were replaced: what they must be */
	const char *exe =
	    json_string_value(json_object_get(json_object_get(doc, "executable"), "path"));
	ck_assert_ptr_nonnull(exe);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "argv"), 0)), exe);
	ck_assert(json_is_array(json_object_get(doc, "binds")));
	ck_assert_uint_eq(log.n, 1);
	ck_assert_str_eq(log.planned[0], govex_plan_digest(plan));
	json_decref(doc);
	free(n);
	govex_plan_free(plan);
	audit_reset(&log);
	govex_runtime_free(rt);
}

START_TEST(test_exec_argv)
{
	static const char *const argv[] = {"true", "a", "b c", NULL};
	static const char *const meta[] = {"k=v", NULL};
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.argv = argv;
	x.stdin_data = "in";
	x.stdin_len = 2;
	x.metadata = meta;
	x.needs = GOVEX_NEED_SUBPROCESS;
	check_exec("exec-argv-trusted", NULL, "trusted", &x);
}
END_TEST

START_TEST(test_exec_shell)
{
	static const char *const env[] = {"FOO=1", NULL};
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.shell = "echo hi | cat";
	x.env = env;
	x.limits.wall_ms = 3000;
	check_exec("exec-shell-open", POLICY_OPEN, NULL, &x);
}
END_TEST

START_TEST(test_exec_strict)
{
	static const char *const argv[] = {"true", NULL};
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.argv = argv;
	check_exec("exec-strict", NULL, "strict", &x);
}
END_TEST

static void check_call(const char *name, const char *policy, const char *preset,
		       const struct govex_call *call)
{
	struct audit_log log = {0};
	govex_runtime *rt = runtime_for(policy, preset, &log);
	govex_plan *plan = NULL;
	govex_result *res = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_runtime_plan_call(rt, call, &plan, &res, &err), 0);
	ck_assert_msg(res == NULL, "refused: %s", res ? govex_result_summary(res) : "");
	json_t *doc = NULL;
	char *n = normalized(plan, &doc);
	golden_check(name, n);

	/* the function and the inspection digest: the inspection's */
	char *insp = NULL;
	ck_assert_int_eq(govex_runtime_inspect(rt, &call->source, &insp, &res, &err), 0);
	ck_assert_ptr_nonnull(insp);
	char digest[72];
	govex__sha256_digest(insp, strlen(insp), digest);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "inspection_digest")), digest);
	json_t *in = json_loads(insp, 0, NULL);
	json_t *want = NULL;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(in, "functions"), i,
			   f) if (strcmp(json_string_value(json_object_get(f, "name")),
					 call->function) == 0) want = f;
	ck_assert(json_equal(want, json_object_get(doc, "function")));

	/* the inspection's own plan (audited before the call's): the call plan without the
	 * function, the inspection and interface digests and the effects, of kind
	 * "inspect" */
	ck_assert_uint_eq(log.n, 2);
	ck_assert_str_eq(log.planned[1], govex_plan_digest(plan));
	json_t *ip = json_deep_copy(doc);
	json_object_del(ip, "function");
	json_object_del(ip, "inspection_digest");
	json_object_del(ip, "interface_digest");
	json_object_del(ip, "effects");
	json_object_set_new(ip, "kind", json_string("inspect"));
	char *ic = canon_of(ip);
	govex__sha256_digest(ic, strlen(ic), digest);
	ck_assert_str_eq(log.planned[0], digest);

	free(ic);
	json_decref(ip);
	json_decref(in);
	free(insp);
	json_decref(doc);
	free(n);
	govex_plan_free(plan);
	audit_reset(&log);
	govex_runtime_free(rt);
}

START_TEST(test_call_trusted)
{
	static const char *const meta[] = {"k=v", NULL};
	struct govex_call c;
	memset(&c, 0, sizeof(c));
	c.source.data = MODULE;
	c.source.len = strlen(MODULE);
	c.source.path = "/srv/project/mod.py";
	c.function = "f";
	c.args = "{\"a\":1}";
	c.args_len = strlen(c.args);
	c.metadata = meta;
	c.limits.wall_ms = 2000;
	check_call("call-trusted", NULL, "trusted", &c);
}
END_TEST

START_TEST(test_call_async_open)
{
	struct govex_call c;
	memset(&c, 0, sizeof(c));
	c.source.data = MODULE;
	c.source.len = strlen(MODULE);
	c.source.module = "mymod";
	c.function = "g";
	check_call("call-async-open", POLICY_OPEN, NULL, &c);
}
END_TEST

START_TEST(test_call_notebook_effects)
{
	struct govex_call c;
	memset(&c, 0, sizeof(c));
	c.source.data = NOTEBOOK;
	c.source.len = strlen(NOTEBOOK);
	c.source.notebook = 1;
	c.source.path = "/srv/project/nb.ipynb";
	c.function = "h";
	check_call("call-notebook-effects", POLICY_EFFECTS, NULL, &c);
}
END_TEST

/* the contract's optional members: present only when the request uses them, and the
 * plan otherwise the same bytes as without them */
static json_t *plan_doc(govex_runtime *rt, const struct govex_request *req)
{
	govex_plan *plan = plan_run(rt, req);
	size_t len = 0;
	const char *c = govex_plan_canonical(plan, &len);
	json_t *doc = json_loadb(c, len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	govex_plan_free(plan);
	return doc;
}

START_TEST(test_optional_members)
{
	struct audit_log log = {0};
	govex_runtime *rt = runtime_for(NULL, "trusted", &log);
	struct govex_request req;
	request_init(&req, "1 + 1");
	json_t *plain = plan_doc(rt, &req);
	ck_assert_ptr_null(json_object_get(plain, "repl"));
	ck_assert_ptr_null(json_object_get(plain, "files"));
	ck_assert_ptr_null(json_object_get(plain, "outputs"));

	static const char inputs[] = "{\"a\":[1,2]}";
	static const struct govex_file files[] = {{"b.txt", "bb", 2}, {"a.csv", "x,y\n", 4}};
	req.repl = 1;
	req.inputs_json = inputs;
	req.inputs_len = strlen(inputs);
	req.files = files;
	req.n_files = 2;
	req.outputs = 1;
	json_t *all = plan_doc(rt, &req);
	char d[72];
	govex__sha256_digest(inputs, strlen(inputs), d);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(all, "repl"), "inputs_digest")), d);
	json_t *f = json_object_get(all, "files");
	ck_assert_uint_eq(json_array_size(f), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(f, 0), "name")), "a.csv");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(f, 0), "bytes")), 4);
	govex__sha256_digest("x,y\n", 4, d);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(f, 0), "digest")), d);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(f, 1), "name")), "b.txt");
	json_t *o = json_object_get(all, "outputs");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "max_files")), 64);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "max_bytes")), 64 << 20);
	/* outputs name the output directory to the run; nothing else differs */
	json_t *names = json_object_get(json_object_get(all, "environment"), "names");
	size_t i;
	json_t *n;
	json_array_foreach(names, i, n) if (strcmp(json_string_value(n), "GOVEX_OUTPUT_DIR") == 0)
	{
		json_array_remove(names, i);
		break;
	}
	json_object_del(all, "repl");
	json_object_del(all, "files");
	json_object_del(all, "outputs");
	ck_assert_msg(json_equal(all, plain), "only repl, files, outputs and GOVEX_OUTPUT_DIR");

	/* a repl run without inputs: the digest of "" */
	req.inputs_json = NULL;
	req.inputs_len = 0;
	req.n_files = 0;
	req.outputs = 0;
	json_t *bare = plan_doc(rt, &req);
	govex__sha256_digest("", 0, d);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(bare, "repl"), "inputs_digest")), d);
	json_decref(bare);
	json_decref(all);
	json_decref(plain);
	audit_reset(&log);
	govex_runtime_free(rt);
}
END_TEST

/* a plan file with the optional members parses; an unknown member inside one is refused */
START_TEST(test_optional_members_parse)
{
	struct audit_log log = {0};
	govex_runtime *rt = runtime_for(NULL, "trusted", &log);
	struct govex_request req;
	request_init(&req, "1 + 1");
	req.repl = 1;
	req.outputs = 1;
	govex_plan *plan = plan_run(rt, &req);
	size_t len = 0;
	const char *c = govex_plan_canonical(plan, &len);
	govex_plan *parsed = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(govex_plan_parse(c, len, &parsed, &err) == 0, "%s", err.message);
	ck_assert_str_eq(govex_plan_digest(parsed), govex_plan_digest(plan));
	govex_plan_free(parsed);
	char *bad = strdup(c);
	char *at = strstr(bad, "\"max_files\"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 1, "max_filez", 9);
	ck_assert_int_lt(govex_plan_parse(bad, len, &parsed, &err), 0);
	ck_assert_msg(strstr(err.message, "outputs.max_filez"), "%s", err.message);
	free(bad);
	govex_plan_free(plan);
	audit_reset(&log);
	govex_runtime_free(rt);
}
END_TEST

/* ---- the pipeline: every kind's events, in order, and the one refusal tail ---- */

struct events {
	char seq[512]; /* "received:KIND decision:planned launch finish:TERMINATION ..." */
};

static void events_cb(void *ud, const char *line, size_t len)
{
	struct events *ev = ud;
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "event"));
	const char *more = json_string_value(json_object_get(j, "kind"));
	if (e && strcmp(e, "decision") == 0)
		more = json_string_value(json_object_get(j, "decision"));
	else if (e && strcmp(e, "finish") == 0)
		more = json_string_value(json_object_get(j, "termination"));
	else if (e && strcmp(e, "launch") == 0)
		more = NULL;
	size_t n = strlen(ev->seq);
	snprintf(ev->seq + n, sizeof(ev->seq) - n, "%s%s%s%s", n ? " " : "", e ? e : "?",
		 more ? ":" : "", more ? more : "");
	json_decref(j);
}

static govex_runtime *runtime_events(const char *preset, struct events *ev)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_policy_preset(preset, &p, &err), 0);
	struct govex_runtime_options opts;
	memset(&opts, 0, sizeof(opts));
	opts.audit_fd = -1;
	opts.audit = events_cb;
	opts.audit_userdata = ev;
	govex_runtime *rt = NULL;
	ck_assert_int_eq(govex_runtime_new(p, &opts, &rt, &err), 0);
	govex_policy_free(p);
	return rt;
}

START_TEST(test_pipeline_events)
{
	struct events ev = {{0}};
	govex_runtime *rt = runtime_events("trusted", &ev);
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	govex_result *res = NULL;

	/* a run: received, planned, launched, finished with its termination */
	struct govex_request req;
	request_init(&req, "pass");
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_SUCCESS);
	ck_assert_str_eq(ev.seq, "received:run decision:planned launch finish:exited");
	res = govex_result_free(res);

	/* a refused run (the request), a refused exec, a refused call: one tail */
	ev.seq[0] = '\0';
	req.limits.wall_ms = 1u << 30;
	ck_assert_int_eq(govex_runtime_run(rt, &req, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->termination, GOVEX_TERM_REFUSED);
	ck_assert_str_eq(ev.seq, "received:run decision:refused finish:refused");
	res = govex_result_free(res);

	ev.seq[0] = '\0';
	static const char *const argv[] = {"/nonexistent/govex-no-such-program", NULL};
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.argv = argv;
	ck_assert_int_eq(govex_runtime_exec(rt, NULL, &x, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_INVALID_INPUT);
	ck_assert_str_eq(ev.seq, "received:exec decision:refused finish:refused");
	res = govex_result_free(res);

	ev.seq[0] = '\0';
	struct govex_call c;
	memset(&c, 0, sizeof(c));
	c.source.data = MODULE;
	c.source.len = strlen(MODULE);
	c.function = "nosuchfunction";
	ck_assert_int_eq(govex_runtime_call(rt, NULL, &c, &res, &err), 0);
	ck_assert_int_eq(govex_result_view(res)->status, GOVEX_STATUS_INVALID_INPUT);
	/* the inspection runs (nested: its plan and launch, no events of its own) */
	ck_assert_str_eq(ev.seq, "received:call decision:planned launch decision:refused "
				 "finish:refused");
	res = govex_result_free(res);

	/* a call: its inspection is cached now; planned, launched, finished */
	ev.seq[0] = '\0';
	c.function = "f";
	c.args = "{\"a\":40}";
	c.args_len = strlen(c.args);
	ck_assert_int_eq(govex_runtime_call(rt, NULL, &c, &res, &err), 0);
	ck_assert_msg(govex_result_view(res)->status == GOVEX_STATUS_SUCCESS, "%s",
		      govex_result_summary(res));
	ck_assert_str_eq(ev.seq, "received:call decision:planned launch finish:exited");
	res = govex_result_free(res);

	/* an inspection (cached): received, finished */
	ev.seq[0] = '\0';
	char *insp = NULL;
	ck_assert_int_eq(govex_runtime_inspect(rt, &c.source, &insp, &res, &err), 0);
	ck_assert_ptr_nonnull(insp);
	ck_assert_str_eq(ev.seq, "received:inspect finish");
	free(insp);

	/* plans only: received, planned; nothing launched, no finish */
	ev.seq[0] = '\0';
	govex_plan *plan = NULL;
	request_init(&req, "pass");
	ck_assert_int_eq(govex_runtime_plan(rt, &req, &plan, &res, &err), 0);
	ck_assert_ptr_nonnull(plan);
	ck_assert_str_eq(ev.seq, "received:plan decision:planned");
	plan = govex_plan_free(plan);
	ev.seq[0] = '\0';
	ck_assert_int_eq(govex_runtime_plan_call(rt, &c, &plan, &res, &err), 0);
	ck_assert_ptr_nonnull(plan);
	ck_assert_str_eq(ev.seq, "received:plan_call decision:planned");
	plan = govex_plan_free(plan);
	govex_runtime_free(rt);
}
END_TEST

static Suite *plans_suite(void)
{
	Suite *s = suite_create("plans");
	TCase *tc = tcase_create("golden");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_run_trusted);
	tcase_add_test(tc, test_run_strict);
	tcase_add_test(tc, test_run_everything);
	tcase_add_test(tc, test_exec_argv);
	tcase_add_test(tc, test_exec_shell);
	tcase_add_test(tc, test_exec_strict);
	tcase_add_test(tc, test_call_trusted);
	tcase_add_test(tc, test_call_async_open);
	tcase_add_test(tc, test_call_notebook_effects);
	suite_add_tcase(s, tc);
	tc = tcase_create("optional");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_optional_members);
	tcase_add_test(tc, test_optional_members_parse);
	suite_add_tcase(s, tc);
	tc = tcase_create("pipeline");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_pipeline_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plans_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
