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

/* Planning's checks of the request itself.  Each returns 0 when the request passes, 1 with
 * *ret_refusal set when it is refused, -ENOMEM.  The user code of a run (not call mode's
 * worker): language, size, NUL, UTF-8, source_path. */
int govex__request_check_code(govex_runtime *rt, const struct govex_request *req,
			      govex_result **ret_refusal);
/* The program's stdin (a run's or an exec's; a call's request frame is not stdin). */
int govex__request_check_stdin(govex_runtime *rt, const struct govex_request *req,
			       govex_result **ret_refusal);
/* The requested limits capped by the policy's, into *l (which holds the policy's). */
int govex__request_limits(govex_runtime *rt, const struct govex_request *req,
			  struct govex__limits *l, govex_result **ret_refusal);
/* Declared needs and shell intent against what the policy allows. */
int govex__request_needs(govex_runtime *rt, const struct govex_request *req,
			 govex_result **ret_refusal);
/* The named workdir (the request's, else the policy's): normalized, under a write root,
 * an existing directory; copied into *ret_workdir (untouched when none is named). */
int govex__request_workdir(govex_runtime *rt, const struct govex_request *req, char **ret_workdir,
			   govex_result **ret_refusal);
/* The request's metadata as a JSON object (*ret_meta, owned). */
int govex__request_metadata(govex_runtime *rt, const struct govex_request *req, json_t **ret_meta,
			    govex_result **ret_refusal);
/* The needs the request declared, as enum govex__perm bits. */
unsigned govex__request_needs_perms(const struct govex_request *req);
/* The digest of the request document (what was asked, code and stdin by digest,
 * environment by name) into ret[72].  Takes meta.  0 or -ENOMEM. */
int govex__request_digest(const struct govex_request *req, const char *code_digest,
			  const char *stdin_digest, unsigned needs_perm, json_t *meta,
			  char ret[72]);

#endif
