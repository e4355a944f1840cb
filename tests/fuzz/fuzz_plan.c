/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes -> govex_plan_parse().  A refusal must be clean (-GOVEX_EPLAN or
 * -GOVEX_ETOOBIG, NUL-terminated message starting "plan: "); an accepted plan must have
 * canonical bytes that parse again to the same bytes, digest and source path.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "govex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	govex_plan *p = NULL, *q = NULL;
	struct govex_error err;
	memset(&err, 0xa5, sizeof(err));
	int r = govex_plan_parse((const char *)data, size, &p, &err);
	if (r < 0) {
		if (p)
			abort();
		if (r != -GOVEX_EPLAN && r != -GOVEX_ETOOBIG)
			abort();
		if (err.code != -r)
			abort();
		if (!memchr(err.message, '\0', sizeof(err.message)))
			abort();
		if (strncmp(err.message, "plan: ", 6) != 0)
			abort();
		return 0;
	}
	if (!p)
		abort();
	size_t len = 0, len2 = 0;
	const char *c = govex_plan_canonical(p, &len);
	if (!c || len < 3 || c[len - 1] != '\n' || c[len] != '\0')
		abort();
	const char *d = govex_plan_digest(p);
	if (!d || strlen(d) != 71 || strncmp(d, "sha256:", 7) != 0)
		abort();
	if (govex_plan_parse(c, len, &q, &err) != 0)
		abort();
	const char *c2 = govex_plan_canonical(q, &len2);
	if (len2 != len || memcmp(c, c2, len) != 0)
		abort();
	if (strcmp(d, govex_plan_digest(q)) != 0)
		abort();
	const char *s1 = govex_plan_source_path(p), *s2 = govex_plan_source_path(q);
	if ((s1 == NULL) != (s2 == NULL) || (s1 && strcmp(s1, s2) != 0))
		abort();
	govex_plan_free(q);
	govex_plan_free(p);
	return 0;
}
