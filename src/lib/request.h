/* SPDX-License-Identifier: MIT */
/* Request validation and normalisation against the policy (request.c). */
#ifndef GOVEX_REQUEST_H
#define GOVEX_REQUEST_H

#include "internal.h"

/* Sets *ret_env to the final environment: inherited names, then the request's values,
 * then the policy's fixed values (which win).  A request the policy refuses: 0 with
 * *ret_refusal set. */
int govex__build_env(const govex_policy *p, const struct govex_request *req, char ***ret_env,
		     govex_result **ret_refusal, govex_runtime *rt);
/* The names of a NAME=VALUE vector, as a JSON array. */
json_t *govex__env_names_json(char *const *env);
/* Requested limit against the policy's: 0 = the policy's value; above is refused (1,
 * *ret_refusal set). */
int govex__cap_limit(govex_runtime *rt, const char *name, uint64_t want, uint64_t max,
		     uint64_t *ret, govex_result **ret_refusal);

#endif
