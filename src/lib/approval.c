/* SPDX-License-Identifier: MIT */
/* Approval: the permissions a run may use that the policy lists under "approval", asked
 * of the runtime's approver (with the plan) before launch, each question audited. */
#define _GNU_SOURCE
#include <string.h>

#include "approval.h"
#include "runtime.h"

json_t *govex__perms_json(unsigned perms)
{
	static const char *const names[] = {"filesystem_write", "network", "shell", "subprocess"};
	static const unsigned bits[] = {GOVEX_PERM_FILESYSTEM_WRITE, GOVEX_PERM_NETWORK,
					GOVEX_PERM_SHELL, GOVEX_PERM_SUBPROCESS};
	json_t *a = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (perms & bits[i])
			json_array_append_new(a, json_string(names[i]));
	return a;
}

govex_result *govex__approve(govex_runtime *rt, const char *run_id, const struct decision *d,
			     const govex_plan *plan)
{
	if (!d->approve)
		return NULL;
	json_t *perms = govex__perms_json(d->approve);
	govex__audit(&rt->audit, run_id, "approval",
		     json_pack("{s:s, s:O, s:s}", "approval", "asked", "permissions", perms,
			       "plan_digest", plan->digest));
	govex_result *res = NULL;
	if (!rt->opts.approve) {
		res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		if (res)
			govex__result_diag(res, "approval_required", NULL,
					   "approval: the policy requires approval and no "
					   "approver is configured");
		json_decref(perms);
		return res;
	}
	const char *names[5];
	size_t n = 0, idx;
	json_t *e;
	json_array_foreach(perms, idx, e) names[n++] = json_string_value(e);
	names[n] = NULL;
	int ok = rt->opts.approve(rt->opts.approve_userdata, plan->canon, plan->len, names);
	json_decref(perms);
	govex__audit(&rt->audit, run_id, "approval",
		     json_pack("{s:s, s:b}", "approval", "answered", "approved", ok == 1));
	if (ok != 1) {
		res = govex__refusal(rt, GOVEX_STATUS_POLICY_REFUSED);
		if (res)
			govex__result_diag(res, "approval_denied", NULL,
					   "approval: the approver denied the run");
	}
	return res;
}
