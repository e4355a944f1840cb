/* SPDX-License-Identifier: MIT */
/* libmicrohttpd loaded at run time (mhd.h says why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "mhd.h"

struct mhd_api mhd;

int mhd_load(char *err, size_t errlen)
{
	static void *handle;
	if (handle)
		return 0;
	/* the soname the headers were built against (Debian: libmicrohttpd12) */
	void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen,
			 "libmicrohttpd cannot be loaded (%s): install libmicrohttpd12", dlerror());
		return -1;
	}
	struct mhd_api api = {0};
	const char *missing = NULL;
#define MHD_LOOKUP(name)                                                                           \
	*(void **)&api.name = dlsym(h, "MHD_" #name);                                              \
	if (!api.name && !missing)                                                                 \
		missing = "MHD_" #name;
	MHD_FUNCTIONS(MHD_LOOKUP)
#undef MHD_LOOKUP
	if (missing) {
		snprintf(err, errlen, "libmicrohttpd.so.12 has no %s", missing);
		dlclose(h);
		return -1;
	}
	mhd = api;
	handle = h;
	return 0;
}
