/* SPDX-License-Identifier: MIT */
/*
 * repl_driver: one repl run through libgovex's public API, for tests/call/test_repl.py
 * (the CLI and MCP front ends of repl runs are other branches' work).
 *
 *   repl_driver (--preset NAME | --policy FILE) [--inputs JSON] [--stdin FILE] [--plan]
 *               CODE_FILE
 *
 * Prints the result document (govex_result_json), or with --plan the plan's digest on
 * one line and then its canonical bytes.  Exit 0, or 2 when the library returned an
 * error (printed on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <govex.h>

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	size_t k;
	while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				b = NULL;
			}
			b = nb;
		}
	}
	fclose(f);
	*len = n;
	return b;
}

int main(int argc, char **argv)
{
	const char *preset = NULL, *policy_file = NULL, *inputs = NULL, *stdin_file = NULL;
	int plan_only = 0, i;
	for (i = 1; i < argc - 1; i++) {
		if (strcmp(argv[i], "--preset") == 0)
			preset = argv[++i];
		else if (strcmp(argv[i], "--policy") == 0)
			policy_file = argv[++i];
		else if (strcmp(argv[i], "--inputs") == 0)
			inputs = argv[++i];
		else if (strcmp(argv[i], "--stdin") == 0)
			stdin_file = argv[++i];
		else if (strcmp(argv[i], "--plan") == 0)
			plan_only = 1;
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: repl_driver (--preset P|--policy F) [--inputs J] "
				"[--stdin F] [--plan] CODE_FILE\n");
		return 2;
	}
	struct govex_error err = {0};
	govex_policy *policy = NULL;
	govex_runtime *rt = NULL;
	int r = policy_file ? govex_policy_load(policy_file, &policy, &err)
			    : govex_policy_preset(preset ? preset : "strict", &policy, &err);
	if (r < 0 || govex_runtime_new(policy, NULL, &rt, &err) < 0) {
		fprintf(stderr, "repl_driver: %s\n", err.message);
		return 2;
	}
	size_t code_len = 0, in_len = 0;
	char *code = slurp(argv[argc - 1], &code_len);
	char *in = stdin_file ? slurp(stdin_file, &in_len) : NULL;
	if (!code || (stdin_file && !in)) {
		fprintf(stderr, "repl_driver: cannot read a file\n");
		return 2;
	}
	struct govex_request req;
	memset(&req, 0, sizeof(req));
	req.language = "python";
	req.code = code;
	req.code_len = code_len;
	req.stdin_data = in;
	req.stdin_len = in_len;
	req.repl = 1;
	req.inputs_json = inputs;
	req.inputs_len = inputs ? strlen(inputs) : 0;
	govex_result *res = NULL;
	govex_plan *plan = NULL;
	size_t len = 0;
	if (plan_only) {
		r = govex_runtime_plan(rt, &req, &plan, &res, &err);
		if (r >= 0 && plan)
			printf("%s\n%s\n", govex_plan_digest(plan),
			       govex_plan_canonical(plan, &len));
	} else {
		r = govex_runtime_run(rt, &req, &res, &err);
	}
	if (r < 0) {
		fprintf(stderr, "repl_driver: %s\n", err.message);
		return 2;
	}
	if (res)
		printf("%s\n", govex_result_json(res, &len));
	govex_result_free(res);
	govex_plan_free(plan);
	govex_runtime_free(rt);
	govex_policy_free(policy);
	free(code);
	free(in);
	return 0;
}
