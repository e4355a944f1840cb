/* SPDX-License-Identifier: MIT */
/* The environment's packages (packages.c): what a run needs to import what is installed,
 * and the digest binding a plan to the environment as installed. */
#ifndef GOVEX_PACKAGES_H
#define GOVEX_PACKAGES_H

#include "internal.h"

struct govex__packages {
	char **site;	    /* site directories, as sys.path has them */
	char **libs;	    /* shared libraries, as the loader opens them */
	char **data;	    /* symlinks out of the site directories, the table's data files */
	json_t *dists;	    /* [[name, version], ...] */
	size_t unresolved;  /* DT_NEEDED names the probe did not find */
	char digest[72];    /* the environment's when resolved ("sha256:...") */
	char now[72], *ids; /* the quick check's (govex__packages_current) */
};

void govex__packages_free(struct govex__packages *pk);
/* Resolves the packages of interpreter in (probed; in->exec for a venv) through the
 * environment probe, or its cached answer when the environment is unchanged; validated.
 * 0 or -errno with err. */
int govex__packages_resolve(struct govex__packages *pk, const struct govex__interp *in,
			    const char *cache_dir, enum govex__probe_mode mode,
			    struct govex_error *err);
/* The environment's digest now (recomputed only when a site directory's or pyvenv.cfg's
 * identity changed since the last call).  Not thread-safe: under the runtime's lock. */
int govex__packages_current(struct govex__packages *pk, const struct govex__interp *in,
			    char out[72]);
/* Adds what pk names to in->env_files (bound read-only for a run). */
int govex__packages_bind(const struct govex__packages *pk, struct govex__interp *in);
/* The plan's "packages" member. */
json_t *govex__packages_json(const struct govex__packages *pk, char *const *preload);

#endif
