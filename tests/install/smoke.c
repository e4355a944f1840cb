/* SPDX-License-Identifier: MIT */
/*
 * smoke.c - run one snippet through an installed libgovex.
 *
 *   cc -o smoke smoke.c $(pkg-config --cflags --libs govex)
 *   ./smoke [PRESET]        (default: trusted)
 *
 * Exit status 0 when the snippet printed "42\n" with status success.
 */
#include <stdio.h>
#include <string.h>

#include <govex.h>

/* Contract versions: a missing macro fails the build. */
static const char *const contracts[] = {
	GOVEX_POLICY_VERSION,     GOVEX_BACKEND_VERSION,
	GOVEX_REQUEST_VERSION,    GOVEX_PLAN_VERSION,
	GOVEX_INSPECTION_VERSION, GOVEX_RESULT_VERSION,
	GOVEX_AUDIT_VERSION,      GOVEX_FRAME_VERSION,
};

static void fail(const char *what, int r,
		 const struct govex_error *e)
{
	fprintf(stderr, "smoke: %s: %s: %s\n", what, govex_error_name(r),
		e->message);
}

int main(int argc, char **argv)
{
	const char *preset = argc > 1 ? argv[1] : "trusted";
	static const char code[] = "print(6*7)";
	govex_policy *policy = NULL;
	govex_runtime *runtime = NULL;
	govex_result *result = NULL;
	struct govex_error err = {0};
	int r, ok = 0;

	/* the library must be the one the header describes */
	printf("libgovex %s, header %d.%d.%d\n", govex_version(),
	       GOVEX_VERSION_MAJOR, GOVEX_VERSION_MINOR,
	       GOVEX_VERSION_PATCH);
	if (strcmp(govex_version(), GOVEX_VERSION_STRING) != 0)
		return 1;
	size_t n = sizeof(contracts) / sizeof(contracts[0]);
	for (size_t i = 0; i < n; i++)
		printf("contract %s\n", contracts[i]);

	/* 1. a policy: a preset, or govex_policy_load() of a file */
	r = govex_policy_preset(preset, &policy, &err);
	if (r < 0) {
		fail("policy", r, &err);
		goto out;
	}
	printf("policy %s %s\n", preset, govex_policy_digest(policy));

	/* 2. a runtime: copies the policy, probes the backends */
	struct govex_runtime_options opts = {.audit_fd = -1};
	r = govex_runtime_new(policy, &opts, &runtime, &err);
	if (r < 0) {
		fail("runtime", r, &err);
		goto out;
	}

	/* 3. a request: zeroed, then filled; everything is borrowed */
	struct govex_request req;
	memset(&req, 0, sizeof(req));
	req.language = "python";
	req.code = code;
	req.code_len = strlen(code);
	req.limits.wall_ms = 5000; /* at most the policy's */

	/* 4. run it: a refusal is a result, not an error */
	r = govex_runtime_run(runtime, &req, &result, &err);
	if (r < 0) {
		fail("run", r, &err);
		goto out;
	}

	/* 5. read the result: the view, and the govex.result/v1 JSON */
	const struct govex_result_view *v = govex_result_view(result);
	size_t len;
	const char *json = govex_result_json(result, &len);
	printf("status %s, termination %s, backend %s, exit status %d\n",
	       govex_status_name(v->status),
	       govex_termination_name(v->termination),
	       v->backend_name ? v->backend_name : "none",
	       govex_result_exit_status(result));
	fwrite(json, 1, len, stdout);
	if (v->status != GOVEX_STATUS_SUCCESS)
		fprintf(stderr, "smoke: %s\n", govex_result_summary(result));
	else if (v->stdout_len != 3 || memcmp(v->stdout_data, "42\n", 3))
		fprintf(stderr, "smoke: stdout is '%.*s'\n",
			(int)v->stdout_len, v->stdout_data);
	else
		ok = 1;

out:
	/* 6. free: destructors accept NULL and return NULL */
	result = govex_result_free(result);
	runtime = govex_runtime_free(runtime);
	policy = govex_policy_free(policy);
	return ok ? 0 : 1;
}
