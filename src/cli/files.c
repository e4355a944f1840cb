/* SPDX-License-Identifier: MIT */
/*
 * Files in and out on the command line (--file NAME=PATH, --output-dir DIR) and live
 * output on a terminal, shared by run, call and exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

/* limits.files_in_bytes of the policy (its default when the canonical bytes omit it) */
static uint64_t files_in_bound(const govex_policy *p)
{
	uint64_t bound = 64ULL << 20;
	size_t n;
	const char *c = p ? govex_policy_canonical(p, &n) : NULL;
	json_t *doc = c ? json_loadb(c, n, 0, NULL) : NULL;
	json_t *v = json_object_get(json_object_get(doc, "limits"), "files_in_bytes");
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		bound = (uint64_t)json_integer_value(v);
	json_decref(doc);
	return bound;
}

void cli_files_free(struct cli_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->names[i]);
		free(f->data[i]);
	}
	memset(f, 0, sizeof(*f));
}

/* Opens PATH for reading without blocking (a FIFO nobody writes), checks that it is a
 * regular file and returns its size; the fd or -errno (-CLI_ENOTREG). */
static int open_regular(const char *path, uint64_t *ret_size)
{
	struct stat st;
	if (strcmp(path, "-") == 0)
		return -CLI_ENOTREG; /* standard input is not a file */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -CLI_ENOTREG;
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_size = (uint64_t)st.st_size;
	return fd;
}

/* Reads exactly size bytes (a file that changed meanwhile is refused: -EIO). */
static int read_exact(int fd, uint64_t size, char **ret)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	uint64_t done = 0;
	char extra;
	while (done < size) {
		ssize_t k =
		    read(fd, buf + done, size - done > (1u << 20) ? (1u << 20) : size - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(buf);
			return k < 0 ? -errno : -EIO;
		}
		done += (uint64_t)k;
	}
	if (read(fd, &extra, 1) > 0) {
		free(buf);
		return -EIO;
	}
	buf[size] = '\0';
	*ret = buf;
	return 0;
}

int cli_files_read(const struct cli_opts *a, const govex_policy *policy, struct cli_files *f)
{
	char msg[600];
	uint64_t bound = files_in_bound(policy), total = 0;
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < a->n_files; i++) {
		const char *eq = strchr(a->files[i], '=');
		const char *path = eq + 1;
		int nl = (int)(eq - a->files[i]);
		uint64_t size = 0;
		int r = open_regular(path, &size);
		if (r >= 0 && size > bound - total) {
			close(r);
			snprintf(msg, sizeof(msg),
				 "--file %.*s: '%s': the files' %llu bytes exceed "
				 "limits.files_in_bytes (%llu)",
				 nl, a->files[i], path, (unsigned long long)(total + size),
				 (unsigned long long)bound);
			cli_files_free(f);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"files_too_large", msg);
		}
		if (r >= 0) {
			int fd = r;
			r = read_exact(fd, size, &f->data[i]);
			close(fd);
		}
		if (r < 0) {
			snprintf(msg, sizeof(msg), "--file %.*s: '%s': %s", nl, a->files[i], path,
				 r == -EIO ? "it changed while read" : cli_read_error(r));
			cli_files_free(f);
			return cli_emit_refusal(a->json, GOVEX_STATUS_INVALID_INPUT,
						"unreadable_file", msg);
		}
		total += size;
		f->names[i] = strndup(a->files[i], (size_t)nl);
		if (!f->names[i]) {
			f->n = i + 1; /* data[i] is freed with the others */
			cli_files_free(f);
			cli_error("out of memory");
			return EXIT_REFUSED;
		}
		f->files[i] = (struct govex_file){f->names[i], f->data[i], (size_t)size};
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

/* the copies refused: their messages, printed on stderr after the result (the result's
 * document gets them as diagnostics output_not_copied: a program reading it must not
 * take them for copied) */
static json_t *copy_refusals;

static void copy_refused(govex_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void copy_refused(govex_result *res, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (govex_result_add_diagnostic(res, "output_not_copied", msg) < 0)
		cli_error("out of memory");
	if (!copy_refusals)
		copy_refusals = json_array();
	json_array_append_new(copy_refusals, json_string(msg));
}

int cli_output_dir_write(const struct cli_opts *a, govex_result *res)
{
	if (!a->output_dir)
		return 0;
	int rc = 0;
	int dfd = open(a->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		copy_refused(res, "--output-dir '%s': %s: no file copied", a->output_dir,
			     strerror(errno));
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
			copy_refused(res, "--output-dir '%s': '%s': %s", a->output_dir, name,
				     r == -EEXIST ? "an entry of that name exists: not overwritten"
						  : strerror(-r));
			rc = EXIT_REFUSED;
		}
	}
	close(dfd);
	return rc;
}

void cli_output_dir_messages(void)
{
	size_t i;
	json_t *d;
	json_array_foreach(copy_refusals, i, d) cli_error("%s", json_string_value(d));
	json_decref(copy_refusals);
	copy_refusals = NULL;
}

void cli_result_json_write(const govex_result *res)
{
	size_t n;
	const char *js = govex_result_json(res, &n);
	cli_write_all(1, js, n);
}

/*
 * Live output: the run's bytes to our stdout and stderr as they arrive, unchanged (as
 * they are printed at the end otherwise).  The library's callback runs on the thread
 * that supervises the run and must not block: it only queues the bytes (at most the
 * run's output bounds), and a writer thread writes them in order, so a terminal nobody
 * reads never stops the wall time or a cancellation.  cli_live_finish() waits for the
 * writer once the run is over.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	bool started, done;
	char *buf; /* records: stream (1 byte), length (size_t), bytes */
	size_t len, cap;
	bool wrote;
	char last; /* the last byte shown, for cli_live_end() */
} live = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void live_queue(void *ud, int stream, const char *data, size_t len)
{
	(void)ud;
	if (!len)
		return;
	size_t need = 1 + sizeof(size_t) + len;
	pthread_mutex_lock(&live.mu);
	if (live.len + need > live.cap) {
		size_t nc = live.cap ? live.cap : 65536;
		while (nc < live.len + need)
			nc *= 2;
		char *nb = realloc(live.buf, nc);
		if (!nb) { /* not shown live (the result keeps it) */
			pthread_mutex_unlock(&live.mu);
			return;
		}
		live.buf = nb;
		live.cap = nc;
	}
	live.buf[live.len] = (char)stream;
	memcpy(live.buf + live.len + 1, &len, sizeof(len));
	memcpy(live.buf + live.len + 1 + sizeof(len), data, len);
	live.len += need;
	live.wrote = true;
	live.last = data[len - 1];
	pthread_cond_signal(&live.cv);
	pthread_mutex_unlock(&live.mu);
}

static void *live_writer(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's */
	for (;;) {
		pthread_mutex_lock(&live.mu);
		while (!live.len && !live.done)
			pthread_cond_wait(&live.cv, &live.mu);
		char *b = live.buf;
		size_t n = live.len;
		bool done = live.done;
		live.buf = NULL;
		live.len = live.cap = 0;
		pthread_mutex_unlock(&live.mu);
		for (size_t off = 0; off < n;) {
			size_t len;
			memcpy(&len, b + off + 1, sizeof(len));
			cli_write_all(b[off] == 2 ? 2 : 1, b + off + 1 + sizeof(len), len);
			off += 1 + sizeof(len) + len;
		}
		free(b);
		if (done && !n)
			return NULL;
	}
}

void cli_live_finish(void)
{
	if (!live.started)
		return;
	pthread_mutex_lock(&live.mu);
	live.done = true;
	pthread_cond_signal(&live.cv);
	pthread_mutex_unlock(&live.mu);
	pthread_join(live.th, NULL);
	live.started = false;
}

void cli_live_end(int fd)
{
	cli_live_finish();
	if (!live.wrote || !isatty(fd))
		return;
	/* what govex prints itself starts readable whatever the run left open on the
	 * terminal: a string terminator (an unterminated OSC/DCS string), an SGR reset
	 * (concealed text), and a line of its own */
	static const char reset[] = "\x1b\\\x1b[0m";
	cli_write_all(fd, reset, sizeof(reset) - 1);
	if (live.last != '\n')
		cli_write_all(fd, "\n", 1);
	live.wrote = false;
}

govex_output_fn cli_live_output(const struct cli_opts *a)
{
	if (a->json || !(isatty(1) || isatty(2)))
		return NULL;
	if (!live.started) {
		live.done = false;
		if (pthread_create(&live.th, NULL, live_writer, NULL) != 0)
			return NULL; /* no live output: the output is printed at the end */
		live.started = true;
	}
	return live_queue;
}
