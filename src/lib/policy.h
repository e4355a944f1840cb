/* SPDX-License-Identifier: MIT */
/* The policy's pieces shared by policy.c (the object, its tables, canonical form) and
 * policyparse.c (a document, a file or a preset parsed into it). */
#ifndef GOVEX_POLICY_H
#define GOVEX_POLICY_H

#include "internal.h"

/* The largest policy document, and canonical form, accepted. */
#define POLICY_FILE_MAX (1u << 20)

/* A limit: its name, where it is in struct govex__limits, whether null (0) is allowed,
 * its bounds and default. */
struct govex__limit_desc {
	const char *name;
	size_t off;
	bool nullable;
	uint64_t min, max, def;
	bool omit_default; /* left out of canonical bytes at its default (newer fields:
			    * every older policy keeps its digest) */
};
extern const struct govex__limit_desc govex__limit_table[];
extern const size_t govex__limit_count;
uint64_t *govex__limit_ptr(struct govex__limits *l, const struct govex__limit_desc *d);

#define GOVEX__N_PERMS 4
/* The names of enum govex__perm's bits, in the policy's order. */
extern const char *const govex__perm_names[GOVEX__N_PERMS];

/* A new policy's defaults. */
void govex__policy_set_defaults(govex_policy *p);
/* Checks what the fields allow together, then makes the canonical bytes and digest. */
int govex__policy_finish(govex_policy *p, struct govex_error *err);
/* A parsed policy document into *ret (policyparse.c). */
int govex__policy_from_json(const json_t *doc, govex_policy **ret, struct govex_error *err);

#endif
