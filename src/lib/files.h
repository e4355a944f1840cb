/* SPDX-License-Identifier: MIT */
/*
 * Files in and out of a run (files.c): the name rule, the plan's members, placing the
 * files in a workdir and collecting what the run left in its output directory.
 *
 * Placing and collecting are async-signal-safe (no allocation, raw system calls only):
 * the restricted backend's shim does both inside the sandbox's mount namespace, after
 * fork from a multi-threaded host.  Collection writes records into a descriptor (a
 * memfd made by the host before the launch); the host parses them after the run.
 */
#ifndef GOVEX_FILES_H
#define GOVEX_FILES_H

#include "internal.h"

#define GOVEX__FILE_NAME_MAX 128
#define GOVEX__OUTPUT_DIR    "output"
#define GOVEX__OUTPUT_ENV    "GOVEX_OUTPUT_DIR"
/* defaults of the policy's limits.files_in_bytes, files_out_bytes, files_out_count */
#define GOVEX__FILES_IN_DEFAULT	   (64ULL << 20)
#define GOVEX__FILES_OUT_DEFAULT   (64ULL << 20)
#define GOVEX__FILES_COUNT_DEFAULT 64ULL
#define GOVEX__FILES_COUNT_MAX	   4096ULL
/* entries of the output directory looked at, at most (the rest: one diagnostic) */
#define GOVEX__OUTPUT_ENTRIES_MAX 4096

/* The name rule: [A-Za-z0-9._-], 1..128 bytes, no leading '.'. */
bool govex__file_name_ok(const char *name, size_t len);

/* Planning (plan.c): checks the request's files and outputs (names, uniqueness, the
 * files_in_bytes bound, a fresh workdir); 0, 1 with *ret_res a refusal, or -ENOMEM. */
int govex__files_check(govex_runtime *rt, const struct govex_request *req, bool named_workdir,
		       govex_result **ret_res);
/* Adds GOVEX_OUTPUT_DIR (its value is set at launch, once the workdir is known). */
int govex__files_env(char ***env);
/* envp with GOVEX_OUTPUT_DIR=<workdir>/output; caller frees with govex__strv_free. */
char **govex__files_launch_env(char *const *env, const char *workdir);

/* Sum of the files' sizes (saturating). */
uint64_t govex__files_total(const struct govex_file *files, size_t n);

/*
 * Writes the files into the directory wdfd (each a new file, O_EXCL, never following a
 * link, mode 0444) and, when output, makes the empty directory "output" there (0700,
 * owned by uid/gid when uid != (uid_t)-1).  bind_ro: each file is then bind-mounted
 * read-only onto itself through wdpath (the sandbox's own copy: the run can neither
 * write, chmod, unlink nor replace it).  Async-signal-safe.  0 or -errno.
 */
int govex__files_place(int wdfd, const char *wdpath, const struct govex_file *files, size_t n,
		       bool output, uid_t uid, gid_t gid, bool bind_ro);

/* Binds each file (already in wdpath, written by govex for this run) read-only onto
 * itself, in the caller's mount namespace (the sandbox's).  Async-signal-safe. */
int govex__files_bind_ro(const char *wdpath, const struct govex_file *files, size_t n);

/*
 * Collects the regular files of wdfd's "output" directory into out_fd as records (see
 * files.c), name-sorted, at most max_count files and max_bytes bytes in total; what is
 * skipped is recorded with its reason.  Never follows a symlink, never blocks on a FIFO
 * (O_NONBLOCK), never leaves the directory.  scratch: GOVEX__COLLECT_SCRATCH bytes.
 * Async-signal-safe.
 */
#define GOVEX__COLLECT_SCRATCH ((size_t)GOVEX__OUTPUT_ENTRIES_MAX * 132 + 65536)
void govex__files_collect(int wdfd, int out_fd, uint64_t max_count, uint64_t max_bytes,
			  char *scratch);

/* One file the run left, as the host parsed it. */
struct govex__outfile {
	char *name;
	char *mime; /* static string, not owned */
	char *data;
	size_t len;
	char sha256[72];
};

/* What came back: the files and the diagnostics about skipped ones. */
struct govex__outfiles {
	struct govex__outfile *f;
	size_t n;
	json_t *diags; /* array of diagnostic objects {code, message, name?} */
};

/* Parses the records in fd (from offset 0).  *ret is allocated; NULL on ENOMEM. */
struct govex__outfiles *govex__files_parse(int fd);
/* Frees them (result.c, as the result owns them once taken). */
struct govex__outfiles *govex__outfiles_free(struct govex__outfiles *o);

/* MIME type from content sniffing (png, jpeg, gif, webp, pdf), else the extension. */
const char *govex__mime_of(const char *name, const char *data, size_t len);

#endif
