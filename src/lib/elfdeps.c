/* SPDX-License-Identifier: MIT */
/*
 * What an ELF shared object needs from the loader (packages.c): its DT_NEEDED names and
 * DT_RPATH / DT_RUNPATH, and where the loader finds a name (glibc's order: the
 * object's DT_RPATH and its loaders' when it has no DT_RUNPATH, then DT_RUNPATH, then
 * /etc/ld.so.cache, then the default directories; $ORIGIN expanded).
 *
 * The objects are the environment's files, read on the host: untrusted bytes.  Every
 * read is bounded by the file's size and by fixed caps (256 program headers, 1 MiB of
 * dynamic section, 4 MiB of string table, 4096 names), every offset checked before use,
 * every string taken only up to the table's end; 64-bit little-endian objects only (what
 * this x86-64 / aarch64 code runs).  A malformed object is "no dependencies", never an
 * error the caller must survive.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "packages.h"

#define PHNUM_MAX   256
#define DYN_MAX	    (1u << 20)
#define STRTAB_MAX  (4u << 20)
#define NEEDED_MAX  4096
#define LDCACHE_MAX (16u << 20)

void govex__elf_deps_free(struct govex__elf_deps *d)
{
	govex__strv_free(d->needed);
	govex__strv_free(d->rpath);
	govex__strv_free(d->runpath);
	memset(d, 0, sizeof(*d));
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off, uint64_t size)
{
	if (off > size || len > size - off)
		return false;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* Splits a ':'-separated path list onto v (empty entries skipped). */
static int push_list(char ***v, const char *s)
{
	while (*s) {
		size_t n = strcspn(s, ":");
		if (n && govex__strv_push_take(v, strndup(s, n)) < 0)
			return -ENOMEM;
		s += n;
		if (*s == ':')
			s++;
	}
	return 0;
}

int govex__elf_deps(const char *path, struct govex__elf_deps *ret)
{
	memset(ret, 0, sizeof(*ret));
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	Elf64_Ehdr eh;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	uint64_t size = (uint64_t)st.st_size;
	if (!read_at(fd, &eh, sizeof(eh), 0, size) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_type != ET_DYN || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > PHNUM_MAX)
		return -ENOEXEC;
	ret->machine = eh.e_machine;
	Elf64_Phdr ph[PHNUM_MAX];
	if (!read_at(fd, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff, size))
		return -ENOEXEC;
	const Elf64_Phdr *dyn = NULL;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = &ph[i];
	if (!dyn)
		return 0; /* nothing needed */
	size_t dlen = dyn->p_filesz < DYN_MAX ? (size_t)dyn->p_filesz : DYN_MAX;
	dlen -= dlen % sizeof(Elf64_Dyn);
	Elf64_Dyn *d = malloc(dlen ? dlen : 1);
	char *strs = NULL;
	int r = 0;
	if (!d) {
		r = -ENOMEM;
		goto out;
	}
	if (!read_at(fd, d, dlen, dyn->p_offset, size)) {
		r = -ENOEXEC;
		goto out;
	}
	uint64_t strtab = 0, strsz = 0;
	bool have_tab = false;
	size_t nd = dlen / sizeof(Elf64_Dyn);
	for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++) {
		if (d[i].d_tag == DT_STRTAB) {
			strtab = d[i].d_un.d_ptr;
			have_tab = true;
		} else if (d[i].d_tag == DT_STRSZ) {
			strsz = d[i].d_un.d_val;
		}
	}
	if (!have_tab || strsz == 0 || strsz > STRTAB_MAX)
		goto out;
	/* the table's address to its file offset, through the PT_LOAD holding it */
	uint64_t off = 0;
	bool mapped = false;
	for (unsigned i = 0; i < eh.e_phnum && !mapped; i++)
		if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr &&
		    strtab - ph[i].p_vaddr < ph[i].p_filesz) {
			off = ph[i].p_offset + (strtab - ph[i].p_vaddr);
			mapped = true;
		}
	if (!mapped || off > size) {
		r = -ENOEXEC;
		goto out;
	}
	if (strsz > size - off)
		strsz = size - off;
	if (!(strs = malloc(strsz + 1))) {
		r = -ENOMEM;
		goto out;
	}
	if (!read_at(fd, strs, strsz, off, size)) {
		r = -ENOEXEC;
		goto out;
	}
	strs[strsz] = '\0';
	size_t names = 0;
	for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL && r == 0; i++) {
		Elf64_Sxword tag = d[i].d_tag;
		if (tag != DT_NEEDED && tag != DT_RPATH && tag != DT_RUNPATH)
			continue;
		if (d[i].d_un.d_val >= strsz || ++names > NEEDED_MAX)
			continue;
		const char *s = strs + d[i].d_un.d_val;
		r = tag == DT_NEEDED  ? govex__strv_push(&ret->needed, s)
		    : tag == DT_RPATH ? push_list(&ret->rpath, s)
				      : push_list(&ret->runpath, s);
	}
out:
	free(d);
	free(strs);
	if (r < 0)
		govex__elf_deps_free(ret);
	return r;
}

/* ---- /etc/ld.so.cache ------------------------------------------------------------------ */

void govex__ldcache_free(struct govex__ldcache *c)
{
	free(c->data);
	memset(c, 0, sizeof(*c));
}

/* glibc's "glibc-ld.so.cache1.1" format (alone, or after the old format's entries):
 * a 48-byte header (magic, version, nlibs, len_strings, flags, extension offset), then
 * nlibs 24-byte entries (flags, key and value as offsets from the header's start). */
int govex__ldcache_load(const char *path, struct govex__ldcache *ret)
{
	static const char magic[] = "glibc-ld.so.cache1.1";
	memset(ret, 0, sizeof(*ret));
	size_t len = 0;
	char *data = NULL;
	if (govex__read_file(path, LDCACHE_MAX, &data, &len, NULL) < 0)
		return 0; /* no cache: the default directories only */
	char *m = memmem(data, len, magic, sizeof(magic) - 1);
	if (!m || (size_t)(m - data) + 48 > len) {
		free(data);
		return 0;
	}
	ret->data = data;
	ret->len = len;
	ret->base = (size_t)(m - data);
	uint32_t n;
	memcpy(&n, data + ret->base + 20, sizeof(n));
	size_t room = (len - ret->base - 48) / 24;
	ret->n = n < room ? n : room;
	return 0;
}

/* The string at offset o of the cache (from the new format's header), or NULL. */
static const char *cache_str(const struct govex__ldcache *c, uint32_t o)
{
	size_t at = c->base + o;
	if (o >= c->len || at >= c->len || !memchr(c->data + at, 0, c->len - at))
		return NULL;
	return c->data + at;
}

const char *govex__ldcache_next(const struct govex__ldcache *c, const char *name, size_t *iter)
{
	while (*iter < c->n) {
		uint32_t kv[3];
		memcpy(kv, c->data + c->base + 48 + *iter * 24, sizeof(kv));
		(*iter)++;
		const char *k = cache_str(c, kv[1]);
		const char *v = k && strcmp(k, name) == 0 ? cache_str(c, kv[2]) : NULL;
		if (v)
			return v;
	}
	return NULL;
}
