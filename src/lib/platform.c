/* SPDX-License-Identifier: MIT */
/*
 * What every run finds, as on a small normal machine: HOME (the workdir) and a UTF-8
 * locale, when neither the policy's environment nor the request set them.
 *
 * These are PLATFORM DEFAULTS, deliberately not listed in the plan's environment.names:
 * they are the same for every run (HOME is the run's own workdir, a run-time fact like
 * its cwd), and listing them would change the digest of every existing plan.  DESIGN's
 * deviations say so.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values.h"

static bool has_name(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return true;
	return false;
}

static bool has_locale(char *const *env)
{
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], "LANG=", 5) == 0 || strncmp(env[i], "LC_", 3) == 0)
			return true;
	return false;
}

int govex__env_platform(char *const *env, const char *workdir, char ***ret)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	char **out = calloc(n + 4, sizeof(*out));
	if (!out)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!(out[k++] = strdup(env[i])))
			goto nomem;
	if (workdir && !has_name(env, "HOME")) {
		char *home = NULL;
		if (asprintf(&home, "HOME=%s", workdir) < 0)
			goto nomem;
		out[k++] = home;
	}
	/* a locale the policy chose (LANG or any LC_*) is kept as it is */
	if (!has_locale(env)) {
		if (!(out[k++] = strdup("LANG=C.UTF-8")) || !(out[k++] = strdup("LC_ALL=C.UTF-8")))
			goto nomem;
	}
	*ret = out;
	return 0;
nomem:
	govex__strv_free(out);
	return -ENOMEM;
}
