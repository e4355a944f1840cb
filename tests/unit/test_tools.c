/* SPDX-License-Identifier: MIT */
/*
 * unit-tools: the library's tool provider (govex_toolset_*) through the public API only:
 * the list and its policy-derived descriptions, a snippet, a module function, bad
 * arguments as isError results naming the argument, an unknown tool as an error.
 * Runs on the trusted preset (controlled backend) with python3 from PATH, except where a
 * description under strict is read (nothing runs then).  The text for the model of the
 * diagnostics other branches add (exception, denied_by_policy) is checked on documents
 * made here (govex__tool_result).
 */
#define _GNU_SOURCE
#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "govex.h"
#include "tools.h"

static const char module_text[] = "\"\"\"Arithmetic.\"\"\"\n"
				  "\n"
				  "def add(a: int, b: int = 2) -> int:\n"
				  "    \"\"\"Add two integers.\"\"\"\n"
				  "    return a + b\n"
				  "\n"
				  "def fails(msg: str) -> None:\n"
				  "    print('about to fail')\n"
				  "    raise ValueError(msg)\n";

static char module_path[64];

static govex_toolset *toolset_for(const char *preset, bool with_module, govex_runtime **ret_rt)
{
	govex_policy *p = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_msg(govex_policy_preset(preset, &p, &err) == 0, "policy: %s", err.message);
	struct govex_runtime_options o;
	memset(&o, 0, sizeof(o));
	govex_runtime *rt = NULL;
	ck_assert_msg(govex_runtime_new(p, &o, &rt, &err) == 0, "runtime: %s", err.message);
	govex_policy_free(p);
	const char *mods[2] = {NULL, NULL};
	if (with_module) {
		snprintf(module_path, sizeof(module_path), "/tmp/govex-unit-tools-XXXXXX.py");
		int fd = mkstemps(module_path, 3);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, module_text, strlen(module_text)),
				 (ssize_t)strlen(module_text));
		close(fd);
		mods[0] = module_path;
	}
	struct govex_toolset_options to = {.modules = mods};
	govex_toolset *ts = NULL;
	ck_assert_msg(govex_toolset_new(rt, &to, &ts, &err) == 0, "toolset: %s", err.message);
	*ret_rt = rt;
	return ts;
}

static json_t *tool_named(json_t *list, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t)
	{
		if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
			return t;
	}
	return NULL;
}

static json_t *list_of(govex_toolset *ts)
{
	char *s = govex_toolset_list(ts);
	ck_assert_ptr_nonnull(s);
	json_error_t e;
	json_t *list = json_loads(s, 0, &e);
	free(s);
	ck_assert_msg(json_is_array(list), "list: %s", e.text);
	return list;
}

/* Invokes; asserts a CallToolResult and returns it. */
static json_t *invoke(govex_toolset *ts, const char *name, const char *args)
{
	char *out = NULL;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	int r = govex_toolset_invoke(ts, name, args, args ? strlen(args) : 0, NULL, &out, &err);
	ck_assert_msg(r == 0, "invoke %s: %s", name, err.message);
	json_error_t e;
	json_t *res = json_loads(out, 0, &e);
	free(out);
	ck_assert_msg(json_is_object(res), "result: %s", e.text);
	ck_assert(json_is_array(json_object_get(res, "content")));
	ck_assert(json_is_boolean(json_object_get(res, "isError")));
	json_t *doc = json_object_get(res, "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), "govex.result/v1");
	const char *st = json_string_value(json_object_get(doc, "status"));
	ck_assert_int_eq(json_is_true(json_object_get(res, "isError")), strcmp(st, "success") != 0);
	return res;
}

static const char *text_of(json_t *res)
{
	return json_string_value(
	    json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
}

static const char *status_of(json_t *res)
{
	return json_string_value(
	    json_object_get(json_object_get(res, "structuredContent"), "status"));
}

/* An argument error: isError, invalid_input, invalid_argument naming `names`. */
static void assert_argument_error(govex_toolset *ts, const char *tool, const char *args,
				  const char *names)
{
	json_t *res = invoke(ts, tool, args);
	ck_assert_msg(json_is_true(json_object_get(res, "isError")), "%s: isError", args);
	ck_assert_str_eq(status_of(res), "invalid_input");
	json_t *d = json_array_get(
	    json_object_get(json_object_get(res, "structuredContent"), "diagnostics"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(d, "code")), "invalid_argument");
	const char *msg = json_string_value(json_object_get(d, "message"));
	ck_assert_msg(strstr(msg, names), "%s: '%s' does not name %s", args, msg, names);
	ck_assert_msg(strstr(text_of(res), msg), "the text has the message: %s", text_of(res));
	json_decref(res);
}

START_TEST(test_list_describes_the_policy)
{
	govex_runtime *rt;
	govex_toolset *ts = toolset_for("strict", false, &rt);
	json_t *list = list_of(ts);
	ck_assert_int_eq(json_array_size(list), 1);
	json_t *t = tool_named(list, "run_python_snippet");
	ck_assert_ptr_nonnull(t);
	const char *d = json_string_value(json_object_get(t, "description"));
	ck_assert_msg(strstr(d, "Python 3."), "which Python: %s", d);
	ck_assert_msg(strstr(d, "only the standard library"), "no site: %s", d);
	ck_assert_msg(strstr(d, "Network access is DENIED"), "network: %s", d);
	ck_assert_msg(strstr(d, "subprocesses is DENIED"), "subprocess: %s", d);
	ck_assert_msg(strstr(d, "5000 ms of wall time"), "wall time: %s", d);
	ck_assert_msg(strstr(d, "512 MiB of memory"), "memory: %s", d);
	ck_assert_msg(strstr(d, "INPUTS") && strstr(d, "await") && strstr(d, "GOVEX_OUTPUT_DIR"),
		      "inputs, await, files: %s", d);
	json_t *schema = json_object_get(t, "inputSchema");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(schema, "required"), 0)),
			 "code");
	ck_assert(json_is_object(json_object_get(t, "outputSchema")));
	ck_assert(json_is_true(json_object_get(json_object_get(t, "annotations"), "readOnlyHint")));
	json_decref(list);
	govex_toolset_free(ts);
	govex_runtime_free(rt);

	ts = toolset_for("trusted", false, &rt);
	list = list_of(ts);
	d = json_string_value(json_object_get(json_array_get(list, 0), "description"));
	ck_assert_msg(strstr(d, "Network access is allowed"), "trusted network: %s", d);
	ck_assert_msg(!strstr(d, "of memory"), "trusted: no memory limit: %s", d);
	json_decref(list);
	govex_toolset_free(ts);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_invoke_snippet)
{
	govex_runtime *rt;
	govex_toolset *ts = toolset_for("trusted", false, &rt);
	json_t *res = invoke(ts, "run_python_snippet", "{\"code\":\"print(6*7)\\n6*7\"}");
	ck_assert_msg(json_is_false(json_object_get(res, "isError")), "%s", text_of(res));
	json_t *doc = json_object_get(res, "structuredContent");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "value")), 42);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "stdout")), "42\n");
	ck_assert_msg(strstr(text_of(res), "value: 42"), "%s", text_of(res));
	json_decref(res);

	res = invoke(ts, "run_python_snippet",
		     "{\"code\":\"INPUTS['n'] * 2\",\"inputs\":{\"n\":21}}");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(res, "structuredContent"), "value")),
	    42);
	json_decref(res);

	res = invoke(ts, "run_python_snippet", "{\"code\":\"1/0\"}");
	ck_assert_str_eq(status_of(res), "execution_failed");
	ck_assert_msg(strstr(text_of(res), "ZeroDivisionError"), "%s", text_of(res));
	json_decref(res);
	govex_toolset_free(ts);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_invoke_module_function)
{
	govex_runtime *rt;
	govex_toolset *ts = toolset_for("trusted", true, &rt);
	json_t *list = list_of(ts);
	ck_assert_int_eq(json_array_size(list), 3); /* add, fails, run_python_snippet */
	json_t *add = tool_named(list, "add");
	ck_assert_ptr_nonnull(add);
	ck_assert_msg(strncmp(json_string_value(json_object_get(add, "description")),
			      "Add two integers.", 17) == 0,
		      "docstring first");
	json_t *props = json_object_get(json_object_get(add, "inputSchema"), "properties");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(props, "a"), "type")),
			 "integer");
	json_decref(list);

	json_t *res = invoke(ts, "add", "{\"a\":40}");
	ck_assert_msg(json_is_false(json_object_get(res, "isError")), "%s", text_of(res));
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(res, "structuredContent"), "value")),
	    42);
	json_decref(res);

	/* files in are not arguments of the function: call_input_bytes does not bound them */
	size_t big = (1u << 20) + 100;
	char *args = malloc(big + 100);
	ck_assert_ptr_nonnull(args);
	int n = snprintf(args, 100, "{\"a\":40,\"files\":[{\"name\":\"big.txt\",\"text\":\"");
	memset(args + n, 'x', big);
	memcpy(args + n + big, "\"}]}", 5);
	res = invoke(ts, "add", args);
	free(args);
	ck_assert_msg(json_is_false(json_object_get(res, "isError")), "%s", text_of(res));
	json_decref(res);

	res = invoke(ts, "fails", "{\"msg\":\"x must be positive\"}");
	ck_assert_str_eq(status_of(res), "execution_failed");
	ck_assert_msg(strstr(text_of(res), "ValueError"), "the exception's type: %s", text_of(res));
	json_decref(res);
	govex_toolset_free(ts);
	govex_runtime_free(rt);
	unlink(module_path);
}
END_TEST

START_TEST(test_bad_arguments_are_tool_errors)
{
	govex_runtime *rt;
	govex_toolset *ts = toolset_for("trusted", true, &rt);
	assert_argument_error(ts, "add", "{}", "args.a");
	assert_argument_error(ts, "add", "{\"a\":\"x\"}", "args.a:");
	assert_argument_error(ts, "add", "{\"a\":1.5}", "args.a:");
	assert_argument_error(ts, "add", "{\"a\":true}", "args.a:");
	assert_argument_error(ts, "add", "{\"a\":1,\"c\":2}", "args.c");
	assert_argument_error(ts, "add", "[1]", "args");
	assert_argument_error(ts, "add", "{\"a\":", "args");
	assert_argument_error(ts, "run_python_snippet", "{\"code\":5}", "args.code:");
	assert_argument_error(ts, "run_python_snippet", "{\"code\":\"1\",\"timeout_ms\":999999}",
			      "args.timeout_ms:");
	assert_argument_error(ts, "run_python_snippet",
			      "{\"code\":\"1\",\"files\":[{\"name\":\"../x\",\"text\":\"\"}]}",
			      "args.files[0].name");
	assert_argument_error(ts, "run_python_snippet",
			      "{\"code\":\"1\",\"files\":[{\"name\":\"a\",\"base64\":\"%%\"}]}",
			      "args.files[0].base64");
	assert_argument_error(ts, "run_python_snippet",
			      "{\"code\":\"1\",\"files\":[{\"name\":\"a\",\"text\":\"\"},{\"name\":"
			      "\"a\",\"text\":\"\"}]}",
			      "args.files[1].name");
	govex_toolset_free(ts);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_unknown_tool_is_an_error)
{
	govex_runtime *rt;
	govex_toolset *ts = toolset_for("trusted", false, &rt);
	char *out = (char *)0x1;
	struct govex_error err;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(govex_toolset_invoke(ts, "nope", "{}", 2, NULL, &out, &err),
			 -GOVEX_EINVAL);
	ck_assert_ptr_eq(out, (char *)0x1);
	ck_assert_msg(strstr(err.message, "unknown tool 'nope'"), "%s", err.message);
	ck_assert_ptr_null(govex_toolset_free(ts));
	ck_assert_ptr_null(govex_toolset_free(NULL));

	/* no snippet tool on request; a module that is not there is an error */
	const char *none[] = {NULL};
	struct govex_toolset_options o = {.modules = none, .no_snippet = 1};
	ck_assert_int_eq(govex_toolset_new(rt, &o, &ts, &err), 0);
	char *s = govex_toolset_list(ts);
	ck_assert_str_eq(s, "[]");
	free(s);
	govex_toolset_free(ts);
	const char *missing[] = {"/nonexistent/govex-unit.py", NULL};
	o.modules = missing;
	ck_assert_int_lt(govex_toolset_new(rt, &o, &ts, &err), 0);
	ck_assert_msg(strstr(err.message, "/nonexistent/govex-unit.py"), "%s", err.message);
	govex_runtime_free(rt);
}
END_TEST

START_TEST(test_text_of_exceptions_and_denials)
{
	const char *doc_text =
	    "{\"version\":\"govex.result/v1\",\"status\":\"execution_failed\","
	    "\"termination\":\"exited\",\"exit_code\":1,\"signal\":null,\"stdout\":\"hi\\n\","
	    "\"stderr\":\"warn\\nTraceback (most recent call last):\\n  File \\\"<snippet>\\\", "
	    "line 3, in <module>\\nValueError: x must be positive\\n\",\"stdout_bytes\":3,"
	    "\"stderr_bytes\":90,\"stdout_truncated\":false,\"stderr_truncated\":false,"
	    "\"value\":null,\"usage\":{\"wall_ms\":12},\"diagnostics\":["
	    "{\"code\":\"exception\",\"message\":\"ValueError: x must be positive\","
	    "\"exception\":{\"type\":\"ValueError\",\"message\":\"x must be positive\","
	    "\"traceback\":\"Traceback (most recent call last):\\n  File \\\"<snippet>\\\", "
	    "line 3, in <module>\\nValueError: x must be positive\\n\"}},"
	    "{\"code\":\"denied_by_policy\",\"controls\":[\"network_deny\"],"
	    "\"message\":\"the policy denies network access (2 attempts refused)\"}]}";
	json_error_t e;
	json_t *doc = json_loads(doc_text, 0, &e);
	ck_assert_msg(doc, "%s", e.text);
	json_incref(doc); /* govex__tool_result takes one reference */
	char *out = govex__tool_result(doc, doc_text, strlen(doc_text), NULL);
	ck_assert_ptr_nonnull(out);
	json_t *res = json_loads(out, 0, &e);
	free(out);
	ck_assert_msg(res, "%s", e.text);
	ck_assert(json_equal(json_object_get(res, "structuredContent"), doc));
	ck_assert(json_is_true(json_object_get(res, "isError")));
	const char *t = text_of(res);
	ck_assert_msg(strstr(t, "status: execution_failed (exit code 1, 12 ms)\n"), "%s", t);
	ck_assert_msg(strstr(t, "exception: ValueError: x must be positive\nTraceback"), "%s", t);
	ck_assert_msg(strstr(t, "denied_by_policy: the policy denies network access (2 attempts "
				"refused) (denied by the policy: control network_deny; "
				"retrying will not help)"),
		      "%s", t);
	ck_assert_msg(strstr(t, "stdout (3 bytes):\nhi\n"), "%s", t);
	ck_assert_msg(strstr(t, "stderr (90 bytes):\nwarn\n(then the traceback shown above)"),
		      "the traceback once: %s", t);
	/* the traceback appears once: in the exception's lines, not again from stderr */
	const char *first = strstr(t, "Traceback");
	ck_assert_ptr_null(strstr(first + 1, "Traceback"));
	json_decref(res);
	json_decref(doc);

	out = govex__tool_refusal(GOVEX_STATUS_INVALID_INPUT, "invalid_argument", "a: bad");
	res = json_loads(out, 0, &e);
	free(out);
	ck_assert_msg(strstr(text_of(res), "invalid_argument: a: bad (fix the argument"), "%s",
		      text_of(res));
	json_decref(res);
}
END_TEST

static Suite *tools_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *tc = tcase_create("toolset");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_list_describes_the_policy);
	tcase_add_test(tc, test_invoke_snippet);
	tcase_add_test(tc, test_invoke_module_function);
	tcase_add_test(tc, test_bad_arguments_are_tool_errors);
	tcase_add_test(tc, test_unknown_tool_is_an_error);
	tcase_add_test(tc, test_text_of_exceptions_and_denials);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tools_suite());
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
