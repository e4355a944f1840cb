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
	char digest[72];    /* the environment's when resolved ("sha256:...") */
	char now[72], *ids; /* the quick check's (govex__packages_current) */
};

void govex__packages_free(struct govex__packages *pk);

/* An ELF shared object's loader needs (elfdeps.c), read from untrusted bytes. */
struct govex__elf_deps {
	unsigned machine; /* e_machine */
	char **needed, **rpath, **runpath;
};
/* 0 (ret filled: lists NULL when empty), -ENOEXEC (not a 64-bit LE ELF shared object),
 * -ENOMEM. */
int govex__elf_deps(const char *path, struct govex__elf_deps *ret);
void govex__elf_deps_free(struct govex__elf_deps *d);
struct govex__ldcache {
	char *data;
	size_t len, base, n;
};
/* Loads the loader's cache (a missing or unreadable one is empty); 0. */
int govex__ldcache_load(const char *path, struct govex__ldcache *ret);
void govex__ldcache_free(struct govex__ldcache *c);
/* The cache's next path for name from *iter (0 first), or NULL. */
const char *govex__ldcache_next(const struct govex__ldcache *c, const char *name, size_t *iter);
/* Resolves the packages of interpreter in (probed; in->exec for a venv) on the host,
 * from what is installed.  0 or -errno with err. */
int govex__packages_resolve(struct govex__packages *pk, const struct govex__interp *in,
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
