/* SPDX-License-Identifier: MIT */
/*
 * Files in and out on the command line (--file NAME=PATH, --output-dir DIR) and live
 * output on a terminal, shared by run, call and exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* a file handed to a run, read whole; the library refuses it past the policy's bound */
#define FILE_READ_MAX ((size_t)4 << 30)

void cli_files_free(struct cli_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->names[i]);
		free(f->data[i]);
	}
	memset(f, 0, sizeof(*f));
}

int cli_files_read(const struct cli_opts *a, struct cli_files *f)
{
	char msg[600];
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < a->n_files; i++) {
		const char *eq = strchr(a->files[i], '=');
		const char *path = eq + 1;
		size_t len = 0;
		int r = cli_read_regular(path, FILE_READ_MAX, &f->data[i], &len);
		if (r == 0 && strcmp(path, "-") == 0)
			r = -CLI_ENOTREG; /* standard input is not a file */
		if (r < 0) {
			snprintf(msg, sizeof(msg), "--file %.*s: '%s': %s", (int)(eq - a->files[i]),
				 a->files[i], path,
				 r == -EFBIG ? "larger than 4 GiB" : cli_read_error(r));
			cli_files_free(f);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"unreadable_file", msg);
		}
		f->names[i] = strndup(a->files[i], (size_t)(eq - a->files[i]));
		if (!f->names[i]) {
			cli_files_free(f);
			cli_error("out of memory");
			return EXIT_REFUSED;
		}
		f->files[i] = (struct govex_file){f->names[i], f->data[i], len};
		f->n = i + 1;
	}
	return 0;
}

int cli_output_dir_check(const struct cli_opts *a)
{
	char msg[600];
	if (!a->output_dir)
		return 0;
	int fd = open(a->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	snprintf(msg, sizeof(msg), "--output-dir '%s': %s (it must be an existing directory)",
		 a->output_dir, strerror(errno));
	return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT, "output_dir_unusable", msg);
}

/* Writes one file as a new entry of dfd: never over an existing entry, never through a
 * symlink (O_CREAT | O_EXCL fails on any existing name, a dangling link included). */
static int write_new(int dfd, const char *name, const void *data, size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = cli_write_all(fd, data, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, name, 0);
	return r;
}

int cli_output_dir_write(const struct cli_opts *a, const govex_result *res)
{
	if (!a->output_dir)
		return 0;
	int rc = 0;
	int dfd = open(a->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		cli_error("--output-dir '%s': %s: no file copied", a->output_dir, strerror(errno));
		return EXIT_REFUSED;
	}
	for (size_t i = 0; i < govex_result_file_count(res); i++) {
		const char *name, *mime;
		const void *data;
		size_t len;
		if (govex_result_file(res, i, &name, &mime, &data, &len) < 0)
			continue;
		/* the library checked the name ([A-Za-z0-9._-], no leading '.'): it names an
		 * entry of DIR itself, never a path */
		int r = write_new(dfd, name, data, len);
		if (r < 0) {
			cli_error("--output-dir '%s': '%s': %s", a->output_dir, name,
				  r == -EEXIST ? "an entry of that name exists: not overwritten"
					       : strerror(-r));
			rc = EXIT_REFUSED;
		}
	}
	close(dfd);
	return rc;
}

/* Live output: the run's bytes to our stdout and stderr as they arrive. */
static void live_write(void *ud, int stream, const char *data, size_t len)
{
	(void)ud;
	cli_write_all(stream == 2 ? 2 : 1, data, len);
}

govex_output_fn cli_live_output(const struct cli_opts *a)
{
	if (a->json)
		return NULL;
	return isatty(1) || isatty(2) ? live_write : NULL;
}
