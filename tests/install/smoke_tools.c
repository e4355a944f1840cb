/* SPDX-License-Identifier: MIT */
/*
 * smoke_tools.c - the tool provider of an installed libgovex: the tools of a policy and a
 * module, listed and invoked as an MCP host would.
 *
 *   cc -o smoke_tools smoke_tools.c $(pkg-config --cflags --libs govex)
 *   ./smoke_tools PRESET MODULE.py
 *
 * Prints three lines: govex_toolset_list()'s JSON array, then the CallToolResult of
 * run_python_snippet with {"code": "print(6*7)"}, then that of MODULE's add with
 * {"a": 40, "b": 2} (test_install.sh reads them).  Exit status 0 when every call
 * returned 0 and an unknown tool's was -GOVEX_EINVAL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <govex.h>

static int invoke(govex_toolset *tools, const char *name, const char *args)
{
	struct govex_error err = {0};
	char *json = NULL;
	int r = govex_toolset_invoke(tools, name, args, strlen(args), NULL, &json, &err);

	if (r < 0) {
		fprintf(stderr, "smoke_tools: invoke '%s': %s: %s\n", name, govex_error_name(r),
			err.message);
		return -1;
	}
	printf("%s\n", json);
	free(json);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: smoke_tools PRESET MODULE.py\n");
		return 2;
	}
	const char *const modules[] = {argv[2], NULL};
	govex_policy *policy = NULL;
	govex_runtime *runtime = NULL;
	govex_toolset *tools = NULL;
	struct govex_error err = {0};
	char *list = NULL, *unknown = NULL;
	int r, ok = 0;

	r = govex_policy_preset(argv[1], &policy, &err);
	if (r >= 0)
		r = govex_runtime_new(policy, NULL, &runtime, &err);
	if (r >= 0) {
		struct govex_toolset_options o = {.modules = modules};
		r = govex_toolset_new(runtime, &o, &tools, &err);
	}
	if (r < 0) {
		fprintf(stderr, "smoke_tools: %s: %s\n", govex_error_name(r), err.message);
		goto out;
	}
	list = govex_toolset_list(tools);
	if (!list) {
		fprintf(stderr, "smoke_tools: govex_toolset_list returned NULL\n");
		goto out;
	}
	printf("%s\n", list);
	if (invoke(tools, "run_python_snippet", "{\"code\": \"print(6*7)\"}") < 0 ||
	    invoke(tools, "add", "{\"a\": 40, \"b\": 2}") < 0)
		goto out;
	/* an unknown tool is the one error return besides no memory */
	r = govex_toolset_invoke(tools, "no_such_tool", "{}", 2, NULL, &unknown, &err);
	if (r != -GOVEX_EINVAL || unknown) {
		fprintf(stderr, "smoke_tools: an unknown tool returned %d (%s)\n", r,
			govex_error_name(r));
		goto out;
	}
	ok = 1;
out:
	free(unknown);
	free(list);
	govex_toolset_free(tools);
	govex_runtime_free(runtime);
	govex_policy_free(policy);
	return ok ? 0 : 1;
}
