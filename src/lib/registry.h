/* SPDX-License-Identifier: MIT */
/* The backend registry's runtime side (registry.c): reports and per-runtime states. */
#ifndef GOVEX_REGISTRY_H
#define GOVEX_REGISTRY_H

#include "internal.h"

/* Fills rt->reports: probed on this host, the restricted backend's from the cache
 * directory when a valid entry is there (made only more careful), else cached. */
void govex__probe_backends(govex_runtime *rt);
/* The restricted backend's report says its sandbox works on this host. */
bool govex__sandbox_available(const govex_runtime *rt);
/* Backend i's per-runtime state, prepared on first use (under rt->lock). */
int govex__backend_state(govex_runtime *rt, size_t i, void **ret, struct govex_error *err);

#endif
