/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: bytes -> govex__elf_deps() and the ld.so.cache reader (elfdeps.c), the
 * parsers packages.c runs on an environment's files on the host.  Whatever the bytes,
 * they return (0 or -ENOEXEC for the ELF reader), never read outside the file, and give
 * NUL-terminated names; a cache lookup terminates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "packages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct govex__elf_deps d;
	int r = govex__elf_deps(path, &d);
	if (r != 0 && r != -ENOEXEC)
		abort();
	char **lists[] = {d.needed, d.rpath, d.runpath};
	for (size_t k = 0; r == 0 && k < 3; k++)
		for (size_t i = 0; lists[k] && lists[k][i]; i++)
			if (strlen(lists[k][i]) > size)
				abort();
	govex__elf_deps_free(&d);
	struct govex__ldcache c;
	if (govex__ldcache_load(path, &c) != 0)
		abort();
	static const char *const names[] = {"libc.so.6", "libm.so.6", "", "a"};
	for (size_t i = 0; i < 4; i++) {
		size_t it = 0, n = 0;
		const char *v;
		while ((v = govex__ldcache_next(&c, names[i], &it)))
			if (++n > c.n || strlen(v) > size)
				abort();
	}
	govex__ldcache_free(&c);
	close(fd);
	return 0;
}
