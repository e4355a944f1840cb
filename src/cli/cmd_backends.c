/* SPDX-License-Identifier: MIT */
/* govex backends [--json] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

int cmd_backends(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			puts("usage: govex backends [--json]\n\n"
			     "List the backends and the controls each enforces on this host, "
			     "probed now.\nWith --json: a JSON array of govex.backend/v1 reports.");
			return 0;
		} else {
			cli_error("backends: unknown argument '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	govex_policy *p = NULL;
	govex_runtime *rt = NULL;
	struct govex_error e = {0};
	char *js = NULL;
	if (govex_policy_preset("trusted", &p, &e) < 0 ||
	    govex_runtime_new(p, NULL, &rt, &e) < 0 || govex_runtime_backends_json(rt, &js) < 0) {
		cli_error("backends: %s", e.message);
		govex_runtime_free(rt);
		govex_policy_free(p);
		return 1;
	}
	if (json) {
		fputs(js, stdout);
	} else {
		json_t *a = json_loads(js, 0, NULL);
		size_t i, k;
		json_t *b, *c;
		json_array_foreach(a, i, b)
		{
			printf("%s (%s): %s\n", json_string_value(json_object_get(b, "name")),
			       json_string_value(json_object_get(b, "backend_version")),
			       json_is_true(json_object_get(b, "available")) ? "available"
									 : "unavailable");
			printf("  enforces:");
			json_array_foreach(json_object_get(b, "enforced"), k, c)
				printf(" %s", json_string_value(c));
			printf("\n");
			json_array_foreach(json_object_get(b, "unavailable"), k, c)
				printf("  not enforced: %s (%s)\n",
				       json_string_value(json_object_get(c, "control")),
				       json_string_value(json_object_get(c, "reason")));
		}
		json_decref(a);
	}
	free(js);
	govex_runtime_free(rt);
	govex_policy_free(p);
	return 0;
}
