/* SPDX-License-Identifier: MIT */
/*
 * smoke_exec.c - run /bin/echo through an installed libgovex's process toolkit.
 *
 *   cc -o smoke_exec smoke_exec.c $(pkg-config --cflags --libs govex)
 *   ./smoke_exec [PRESET]        (default: trusted)
 *
 * Exit status 0 when echo printed "hi\n" with status success.
 */
#include <stdio.h>
#include <string.h>

#include <govex.h>

int main(int argc, char **argv)
{
	const char *preset = argc > 1 ? argv[1] : "trusted";
	const char *const args[] = {"echo", "hi", NULL};
	govex_policy *policy = NULL;
	govex_runtime *runtime = NULL;
	govex_result *result = NULL;
	struct govex_error err = {0};
	int ok = 0;

	if (govex_policy_preset(preset, &policy, &err) < 0 ||
	    govex_runtime_new(policy, NULL, &runtime, &err) < 0) {
		fprintf(stderr, "smoke_exec: %s\n", err.message);
		goto out;
	}
	struct govex_exec x;
	memset(&x, 0, sizeof(x));
	x.argv = args; /* echo is searched on PATH, before planning */
	if (govex_runtime_exec(runtime, NULL, &x, &result, &err) < 0) {
		fprintf(stderr, "smoke_exec: %s\n", err.message);
		goto out;
	}
	const struct govex_result_view *v = govex_result_view(result);
	fputs(govex_result_json(result, NULL), stdout);
	ok = v->status == GOVEX_STATUS_SUCCESS && v->stdout_len == 3 &&
	     memcmp(v->stdout_data, "hi\n", 3) == 0;
out:
	govex_result_free(result);
	govex_runtime_free(runtime);
	govex_policy_free(policy);
	return ok ? 0 : 1;
}
