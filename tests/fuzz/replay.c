/* SPDX-License-Identifier: MIT */
/*
 * Replays every file of a corpus directory through LLVMFuzzerTestOneInput() and prints
 * TAP: "1..N", then "ok N - <file>" per input.  A crash (abort, sanitizer report) stops
 * the program, so the missing lines count as failures.  The directory is CORPUS_DIR
 * (set by the build) unless one is given as argv[1].
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CORPUS_DIR
#error CORPUS_DIR must be defined by the build
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_all(const char *path, uint8_t **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return -EIO;
	}
	/* an exact-size copy, so that ASan sees any read past the input */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(exact, buf, len);
	free(buf);
	*ret = exact;
	*ret_len = len;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : CORPUS_DIR;
	DIR *d = opendir(dir);
	if (!d) {
		printf("1..0 # SKIP cannot open %s: %s\n", dir, strerror(errno));
		return 1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char **nn = realloc(names, (n + 1) * sizeof(char *));
		if (!nn)
			return 1;
		names = nn;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(char *), name_cmp);
	printf("1..%zu\n", n);
	fflush(stdout);
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		char *path = NULL;
		uint8_t *data = NULL;
		size_t len = 0;
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
			return 1;
		int r = read_all(path, &data, &len);
		if (r < 0) {
			printf("not ok %zu - %s # cannot read: %s\n", i + 1, names[i],
			       strerror(-r));
			failed = 1;
		} else {
			LLVMFuzzerTestOneInput(data, len);
			printf("ok %zu - %s\n", i + 1, names[i]);
		}
		fflush(stdout);
		free(data);
		free(path);
		free(names[i]);
	}
	free(names);
	return failed;
}
