/* SPDX-License-Identifier: MIT */
/* Approval (approval.c): permissions the policy lists under "approval", asked before launch. */
#ifndef GOVEX_APPROVAL_H
#define GOVEX_APPROVAL_H

#include "internal.h"

struct decision;

/* The names of enum govex__perm bits, as a JSON array (table order). */
json_t *govex__perms_json(unsigned perms);
/* Asks the approver when the decision needs it; returns a refusal or NULL. */
govex_result *govex__approve(govex_runtime *rt, const char *run_id, const struct decision *d,
			     const govex_plan *plan);

#endif
