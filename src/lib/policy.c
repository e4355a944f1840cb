/* SPDX-License-Identifier: MIT */
/*
 * govex.policy/v1: the policy object, its tables (limits, permissions), canonical bytes
 * and digest, the controls a policy requires.  Parsing a document into it, the presets
 * among them, is policyparse.c's.
 *
 * The parsed document is decoded into struct govex_policy and the canonical form is then
 * re-encoded from the struct, so the canonical bytes can only say what the struct holds.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "files.h"
#include "internal.h"
#include "policy.h"

#define LIMIT_DESC(n, nul, mn, mx, df, omit, req)                                                  \
	{#n, offsetof(struct govex__limits, n), nul, mn, mx, df, omit},
const struct govex__limit_desc govex__limit_table[] = {GOVEX__LIMITS(LIMIT_DESC)};
#undef LIMIT_DESC

uint64_t *govex__limit_ptr(struct govex__limits *l, const struct govex__limit_desc *d)
{
	return (uint64_t *)((char *)l + d->off);
}

const char *const govex__perm_names[GOVEX__N_PERMS] = {"network", "filesystem_write", "shell",
						       "subprocess"};
const size_t govex__limit_count = ARRAY_SIZE(govex__limit_table);

GOVEX_API govex_policy *govex_policy_free(govex_policy *p)
{
	if (!p)
		return NULL;
	free(p->canon);
	free(p->interpreter);
	free(p->workdir);
	govex__strv_free(p->read_roots);
	govex__strv_free(p->write_roots);
	govex__strv_free(p->deny_paths);
	govex__strv_free(p->env_allow);
	govex__strv_free(p->env_set);
	govex__strv_free(p->require_known);
	govex__strv_free(p->preload);
	free(p->backend);
	govex__egress_list_free(p->net_allow);
	free(p);
	return NULL;
}

/* ---- canonical form ------------------------------------------------------------------- */

json_t *govex__limits_json(const struct govex__limits *l)
{
	json_t *o = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(govex__limit_table); i++) {
		const struct govex__limit_desc *d = &govex__limit_table[i];
		uint64_t v = *govex__limit_ptr((struct govex__limits *)l, d);
		if (d->omit_default && v == d->def)
			continue;
		json_object_set_new(o, d->name,
				    (d->nullable && v == 0) ? json_null()
							    : json_integer((json_int_t)v));
	}
	return o;
}

json_t *govex__policy_network_json(const struct govex_policy *p)
{
	if (p->net_allow)
		return json_pack("{s:o}", "allow", govex__egress_list_json(p->net_allow));
	return json_string(p->network ? "allow" : "deny");
}

static json_t *policy_json(const govex_policy *p)
{
	json_t *env_set = json_object();
	for (size_t i = 0; p->env_set && p->env_set[i]; i++) {
		const char *eq = strchr(p->env_set[i], '=');
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - p->env_set[i]), p->env_set[i]);
		json_object_set_new(env_set, name, json_string(eq + 1));
	}
	json_t *approval = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(govex__perm_names); i++)
		if (p->approval & (1u << i))
			json_array_append_new(approval, json_string(govex__perm_names[i]));
	/* govex__perm_names are not in sorted order; sort for the canonical array */
	char **ap = NULL;
	size_t idx;
	json_t *e;
	json_array_foreach(approval, idx, e) govex__strv_push(&ap, json_string_value(e));
	govex__strv_sort_uniq(ap);
	json_decref(approval);
	approval = govex__strv_json(ap);
	govex__strv_free(ap);

	json_t *doc = json_pack(
	    "{s:s, s:[s], s:{s:s, s:b}, s:s, s:o, s:{s:o, s:o, s:b}, s:o, s:s, s:s,"
	    " s:{s:b, s:o, s:o}, s:o, s:{s:o}, s:s?}",
	    "version", GOVEX_POLICY_VERSION, "languages", "python", "python", "interpreter",
	    p->interpreter ? p->interpreter : "auto", "site", p->site, "workdir",
	    p->workdir ? p->workdir : "fresh", "limits", govex__limits_json(&p->limits),
	    "filesystem", "read", govex__strv_json(p->read_roots), "write",
	    govex__strv_json(p->write_roots), "platform_defaults", p->platform_defaults, "network",
	    govex__policy_network_json(p), "subprocess", p->subprocess ? "allow" : "deny", "shell",
	    p->shell ? "allow" : "deny", "environment", "inherit", p->env_inherit, "allow",
	    govex__strv_json(p->env_allow), "set", env_set, "approval", approval, "effects",
	    "require_known", govex__strv_json(p->require_known), "backend", p->backend);
	/* left out at its default: the digests of policies without it do not change */
	if (doc && p->preload &&
	    json_object_set_new(json_object_get(doc, "python"), "preload",
				govex__strv_json(p->preload)) < 0) {
		json_decref(doc);
		return NULL;
	}
	if (doc && p->deny_paths && p->deny_paths[0] &&
	    json_object_set_new(json_object_get(doc, "filesystem"), "deny",
				govex__strv_json(p->deny_paths)) < 0) {
		json_decref(doc);
		return NULL;
	}
	if (doc && p->sanitized &&
	    json_object_set_new(doc, "results", json_pack("{s:s}", "disclosure", "sanitized")) <
		0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int govex__policy_finish(govex_policy *p, struct govex_error *err)
{
	_cleanup_json_ json_t *j = policy_json(p);
	if (!j)
		return govex__err(err, ENOMEM, ENOMEM, "policy: out of memory");
	int r = govex__canon(j, &p->canon, &p->canon_len);
	if (r < 0)
		return govex__err(err, -r, 0, "policy: cannot encode");
	/* the canonical form must itself be a loadable policy (runtimes re-parse it) */
	if (p->canon_len > POLICY_FILE_MAX)
		return govex__err(err, GOVEX_EPOLICY, 0,
				  "document: the canonical form (%zu bytes, defaults filled in) "
				  "exceeds %u bytes",
				  p->canon_len, POLICY_FILE_MAX);
	govex__sha256_digest(p->canon, p->canon_len, p->digest);
	return 0;
}

void govex__policy_set_defaults(govex_policy *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(govex__limit_table); i++)
		*govex__limit_ptr(&p->limits, &govex__limit_table[i]) = govex__limit_table[i].def;
	p->platform_defaults = true;
}

GOVEX_API const char *govex_policy_canonical(const govex_policy *p, size_t *ret_len)
{
	if (!p)
		return NULL;
	if (ret_len)
		*ret_len = p->canon_len;
	return p->canon;
}

GOVEX_API const char *govex_policy_digest(const govex_policy *p)
{
	return p ? p->digest : NULL;
}

govex__ctlset govex__policy_required(const struct govex_policy *p)
{
	govex__ctlset s = CTL(WALL_TIME) | CTL(OUTPUT_BOUNDS) | CTL(ENV_ALLOWLIST) |
			  CTL(PROCESS_TREE_KILL) | CTL(FD_HYGIENE);
	if (!p->workdir)
		s |= CTL(FRESH_WORKDIR);
	if (p->net_allow)
		s |= CTL(NETWORK_ALLOWLIST);
	else if (!p->network)
		s |= CTL(NETWORK_DENY);
	if (!p->subprocess)
		s |= CTL(SUBPROCESS_DENY);
	if (!govex__strv_contains(p->read_roots, "/"))
		s |= CTL(FS_READ_ALLOWLIST);
	if (!govex__strv_contains(p->write_roots, "/"))
		s |= CTL(FS_WRITE_ALLOWLIST);
	if (p->deny_paths && p->deny_paths[0])
		s |= CTL(FS_DENY);
	if (p->limits.cpu_ms)
		s |= CTL(CPU_TIME_AGGREGATE);
	if (p->limits.memory_bytes)
		s |= CTL(MEMORY_AGGREGATE);
	if (p->limits.processes)
		s |= CTL(PIDS_AGGREGATE);
	if (p->limits.open_files)
		s |= CTL(OPEN_FILES_PER_PROCESS);
	if (p->limits.file_size_bytes)
		s |= CTL(FILE_SIZE_PER_PROCESS);
	return s;
}
