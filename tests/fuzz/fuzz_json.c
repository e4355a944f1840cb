/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes -> govex__json_parse_long_at (jsonlong.c), differentially.  The
 * long-string parse must give exactly what the whole parse gives -- the same document
 * (json_equal) or the same error message -- for every input, with its bounds made small
 * (strings of 28 bytes and more are put in place, as 4096 and more are in use), so that
 * short inputs reach every path of its string scan.  Also with JSON_ALLOW_NUL.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	for (size_t flags = 0; flags <= JSON_ALLOW_NUL; flags += JSON_ALLOW_NUL) {
		json_t *a = NULL, *b = NULL;
		struct govex_error ea = {0}, eb = {0};
		int ra = govex__json_parse(s, size, flags, &a, &ea);
		int rb = govex__json_parse_long_at(s, size, flags, 0, 0, &b, &eb);
		if (ra != rb)
			abort();
		if (ra < 0 ? strcmp(ea.message, eb.message) != 0 : !json_equal(a, b))
			abort();
		json_decref(a);
		json_decref(b);
	}
	return 0;
}
