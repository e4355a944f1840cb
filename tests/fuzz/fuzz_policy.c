/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes -> govex_policy_parse().  A refusal must be a clean -GOVEX_EPOLICY
 * (or -GOVEX_ETOOBIG) with a NUL-terminated message that names a subject; an accepted
 * policy must have canonical bytes that parse again to exactly the same bytes and digest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "govex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	govex_policy *p = NULL, *q = NULL;
	struct govex_error err;
	memset(&err, 0xa5, sizeof(err));
	int r = govex_policy_parse((const char *)data, size, &p, &err);
	if (r < 0) {
		if (p)
			abort(); /* output set on failure */
		if (r != -GOVEX_EPOLICY && r != -GOVEX_ETOOBIG)
			abort();
		if (err.code != -r)
			abort();
		if (!memchr(err.message, '\0', sizeof(err.message)) || !err.message[0])
			abort();
		/* "subject: cause" */
		if (!strstr(err.message, ": "))
			abort();
		return 0;
	}
	if (!p)
		abort();
	size_t len = 0, len2 = 0;
	const char *c = govex_policy_canonical(p, &len);
	if (!c || len < 3 || c[len - 1] != '\n' || c[len] != '\0' || strlen(c) != len)
		abort();
	const char *d = govex_policy_digest(p);
	if (!d || strlen(d) != 71 || strncmp(d, "sha256:", 7) != 0)
		abort();
	if (govex_policy_parse(c, len, &q, &err) != 0)
		abort(); /* canonical bytes must be a valid policy */
	const char *c2 = govex_policy_canonical(q, &len2);
	if (len2 != len || memcmp(c, c2, len) != 0)
		abort(); /* canonical form not idempotent */
	if (strcmp(d, govex_policy_digest(q)) != 0)
		abort();
	govex_policy_free(q);
	govex_policy_free(p);
	return 0;
}
