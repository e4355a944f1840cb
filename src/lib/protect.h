/* SPDX-License-Identifier: MIT */
/* Protected paths (protect.c): where a sandboxed run may not write. */
#ifndef GOVEX_PROTECT_H
#define GOVEX_PROTECT_H

#include "internal.h"

/* What the writable path overlaps among the cache, govex's own files and the
 * interpreter's ("cache", "govex", "interpreter"; the protected path in *ret_path,
 * owned), or NULL.  "govex" too when it cannot be checked. */
const char *govex__protected_overlap(const govex_runtime *rt, const char *writable,
				     char **ret_path);

#endif
