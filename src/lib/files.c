/* SPDX-License-Identifier: MIT */
/*
 * Files in and out of a run (files.h).
 *
 * Records written by govex__files_collect, read back by govex__files_parse:
 *   struct rec (kind, name_len, size, data_len), name bytes, data_len data bytes.
 * kind REC_FILE carries a file's bytes; the others say why an entry was skipped (size
 * then holds the file's size, or an errno).  The descriptor is the host's memfd: the
 * run never holds it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "files.h"
#include "runtime.h"

enum rec_kind {
	REC_FILE = 1,
	REC_NOT_REGULAR, /* size: the S_IFMT bits */
	REC_BAD_NAME,
	REC_OVER_COUNT,
	REC_OVER_BYTES, /* size: the file's size */
	REC_TOO_MANY,	/* more entries than govex looks at */
	REC_NO_DIR,	/* size: errno of opening the output directory */
	REC_ERROR,	/* size: errno */
	REC_HARDLINK,	/* size: the link count */
	REC_CHANGED,	/* the file changed size while read */
};

struct rec {
	uint32_t kind;
	uint32_t name_len;
	uint64_t size;
	uint64_t data_len;
};

bool govex__file_name_ok(const char *name, size_t len)
{
	if (!name || len == 0 || len > GOVEX__FILE_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

uint64_t govex__files_total(const struct govex_file *files, size_t n)
{
	uint64_t t = 0;
	for (size_t i = 0; i < n; i++)
		t = t + files[i].len < t ? UINT64_MAX : t + files[i].len;
	return t;
}

#define REFUSE(code, extra, ...)                                                                   \
	do {                                                                                       \
		*ret_res = govex__refusal(rt, GOVEX_STATUS_INVALID_INPUT);                         \
		if (!*ret_res)                                                                     \
			return -ENOMEM;                                                            \
		govex__result_diag(*ret_res, code, extra, __VA_ARGS__);                            \
		return 1;                                                                          \
	} while (0)

static void shown_name(const char *nm, size_t nl, char *out, size_t cap);

int govex__files_check(govex_runtime *rt, const struct govex_request *req, bool named_workdir,
		       govex_result **ret_res)
{
	const struct govex__limits *l = &rt->policy->limits;
	if (req->n_files && !req->files)
		REFUSE("invalid_file", NULL, "files: %zu files announced, none given",
		       req->n_files);
	if (req->n_files > GOVEX__FILES_COUNT_MAX)
		REFUSE("files_too_large", NULL, "files: %zu files, at most %llu", req->n_files,
		       GOVEX__FILES_COUNT_MAX);
	for (size_t i = 0; i < req->n_files; i++) {
		const struct govex_file *f = &req->files[i];
		/* shown whole up to one byte past the rule (129), cut after that */
		char shown[GOVEX__FILE_NAME_MAX + 8];
		size_t nl = f->name ? strnlen(f->name, GOVEX__FILE_NAME_MAX + 2) : 0;
		bool cut = nl > GOVEX__FILE_NAME_MAX + 1;
		shown_name(f->name ? f->name : "", cut ? GOVEX__FILE_NAME_MAX + 1 : nl, shown,
			   sizeof(shown));
		if (!f->name || !govex__file_name_ok(f->name, nl))
			REFUSE("invalid_file_name",
			       json_pack("{s:s, s:I}", "name", shown, "index", (json_int_t)i),
			       "files[%zu]: '%s%s' is not a valid file name: [A-Za-z0-9._-], 1 to "
			       "128 characters, no leading '.'",
			       i, shown, cut ? "..." : "");
		if (req->outputs && strcmp(f->name, GOVEX__OUTPUT_DIR) == 0)
			REFUSE("invalid_file_name", json_pack("{s:s}", "name", shown),
			       "files[%zu]: '%s' is the name of the output directory (outputs were "
			       "requested): choose another name",
			       i, shown);
		if (!f->data && f->len)
			REFUSE("invalid_file", json_pack("{s:s}", "name", shown),
			       "files[%zu] '%s': no data", i, shown);
		for (size_t j = 0; j < i; j++)
			if (req->files[j].name && strcmp(req->files[j].name, f->name) == 0)
				REFUSE("duplicate_file_name", json_pack("{s:s}", "name", shown),
				       "files[%zu]: '%s' is given twice", i, shown);
	}
	uint64_t total = govex__files_total(req->files, req->n_files);
	if (total > l->files_in_bytes)
		REFUSE("files_too_large",
		       json_pack("{s:I, s:I}", "bytes", (json_int_t)total, "limit",
				 (json_int_t)l->files_in_bytes),
		       "files: %llu bytes in total, over limits.files_in_bytes (%llu)",
		       (unsigned long long)total, (unsigned long long)l->files_in_bytes);
	if ((req->n_files || req->outputs) && named_workdir)
		REFUSE("files_need_fresh_workdir", NULL,
		       "files in and outputs need a fresh workdir (the workdir is a named "
		       "directory, which govex does not write into)");
	return 0;
}

#undef REFUSE

int govex__files_env(char ***env)
{
	size_t w = 0;
	char **e = *env;
	for (size_t i = 0; e && e[i]; i++) {
		if (strncmp(e[i], GOVEX__OUTPUT_ENV "=", sizeof(GOVEX__OUTPUT_ENV)) == 0)
			free(e[i]);
		else
			e[w++] = e[i];
	}
	if (e)
		e[w] = NULL;
	return govex__strv_push(env, GOVEX__OUTPUT_ENV "=");
}

char **govex__files_launch_env(char *const *env, const char *workdir)
{
	char **v = calloc(1, sizeof(char *));
	for (size_t i = 0; v && env && env[i]; i++) {
		int r;
		if (strncmp(env[i], GOVEX__OUTPUT_ENV "=", sizeof(GOVEX__OUTPUT_ENV)) == 0) {
			char *kv = NULL;
			if (asprintf(&kv, "%s=%s/%s", GOVEX__OUTPUT_ENV, workdir,
				     GOVEX__OUTPUT_DIR) < 0)
				kv = NULL;
			r = kv ? govex__strv_push_take(&v, kv) : -ENOMEM;
		} else {
			r = govex__strv_push(&v, env[i]);
		}
		if (r < 0) {
			govex__strv_free(v);
			return NULL;
		}
	}
	return v;
}

/* ---- placing (async-signal-safe) --------------------------------------------------- */

static int write_full(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n > (1u << 20) ? (1u << 20) : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The sandbox's own copy bound onto itself, read-only: writes and chmod give EROFS,
 * unlink and rename over it EBUSY (a mount point). */
static int bind_ro(const char *wdpath, const char *name)
{
	char path[PATH_MAX];
	if (!wdpath)
		return -EINVAL;
	size_t wl = strlen(wdpath), nl = strlen(name);
	if (wl + 1 + nl + 1 > sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, wdpath, wl);
	path[wl] = '/';
	memcpy(path + wl + 1, name, nl + 1);
	if (mount(path, path, NULL, MS_BIND, NULL) < 0)
		return -errno;
	if (mount(NULL, path, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}

int govex__files_bind_ro(const char *wdpath, const struct govex_file *files, size_t n)
{
	int r;
	for (size_t i = 0; i < n; i++)
		if ((r = bind_ro(wdpath, files[i].name)) < 0)
			return r;
	return 0;
}

static int place_one(int wdfd, const char *wdpath, const struct govex_file *f, bool bind)
{
	int fd = openat(wdfd, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	int r = write_full(fd, f->data ? f->data : "", f->len);
	if (r == 0 && fchmod(fd, 0444) < 0)
		r = -errno;
	close(fd);
	if (r < 0 || !bind)
		return r;
	return bind_ro(wdpath, f->name);
}

int govex__files_place(int wdfd, const char *wdpath, const struct govex_file *files, size_t n,
		       bool output, uid_t uid, gid_t gid, bool bind_ro)
{
	int r;
	for (size_t i = 0; i < n; i++)
		if ((r = place_one(wdfd, wdpath, &files[i], bind_ro)) < 0)
			return r;
	if (!output)
		return 0;
	if (mkdirat(wdfd, GOVEX__OUTPUT_DIR, 0700) < 0)
		return -errno;
	if (uid != (uid_t)-1 &&
	    fchownat(wdfd, GOVEX__OUTPUT_DIR, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* ---- collecting (async-signal-safe) ------------------------------------------------ */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define SLOT 132 /* one name: its length byte, up to 128 bytes and a NUL */

static void put_rec(int out, uint32_t kind, const char *name, size_t nl, uint64_t size)
{
	if (nl > 255)
		nl = 255;
	struct rec h = {.kind = kind, .name_len = (uint32_t)nl, .size = size, .data_len = 0};
	if (write_full(out, (const char *)&h, sizeof(h)) == 0)
		write_full(out, name, nl);
}

/* Copies one regular file's bytes after its record's header; 0 or -errno. */
static int copy_file(int out, int fd, const char *name, size_t nl, uint64_t size, char *buf,
		     size_t cap)
{
	off_t at = lseek(out, 0, SEEK_CUR);
	if (at < 0)
		return -errno;
	struct rec h = {.kind = REC_FILE, .name_len = (uint32_t)nl, .size = size, .data_len = 0};
	int r = write_full(out, (const char *)&h, sizeof(h));
	if (r == 0)
		r = write_full(out, name, nl);
	uint64_t done = 0;
	while (r == 0 && done < size) {
		size_t want = size - done > cap ? cap : (size_t)(size - done);
		ssize_t k = read(fd, buf, want);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			h.kind = REC_CHANGED;
			break;
		}
		r = write_full(out, buf, (size_t)k);
		done += (uint64_t)k;
	}
	if (r == 0 && h.kind == REC_FILE && read(fd, buf, 1) > 0)
		h.kind = REC_CHANGED; /* grew meanwhile */
	h.data_len = done;
	if (r == 0 && pwrite(out, &h, sizeof(h), at) != (ssize_t)sizeof(h))
		r = -EIO;
	return r;
}

/* Shell sort of the name slots (qsort may allocate). */
static void sort_slots(char *names, size_t n)
{
	char tmp[SLOT];
	for (size_t gap = n / 2; gap > 0; gap /= 2)
		for (size_t i = gap; i < n; i++) {
			memcpy(tmp, names + i * SLOT, SLOT);
			size_t j = i;
			while (j >= gap && strcmp(names + (j - gap) * SLOT + 1, tmp + 1) > 0) {
				memcpy(names + j * SLOT, names + (j - gap) * SLOT, SLOT);
				j -= gap;
			}
			memcpy(names + j * SLOT, tmp, SLOT);
		}
}

/* Reads the directory's entry names into the slots; bad names are recorded now. */
static size_t list_names(int dfd, int out, char *names, char *buf, size_t cap)
{
	size_t n = 0;
	bool too_many = false;
	for (;;) {
		long k = syscall(SYS_getdents64, dfd, buf, cap);
		if (k <= 0)
			break;
		for (long off = 0; off < k;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *nm = d->d_name;
			size_t nl = strlen(nm);
			if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
				continue;
			if (!govex__file_name_ok(nm, nl)) {
				put_rec(out, REC_BAD_NAME, nm, nl, 0);
				continue;
			}
			if (n == GOVEX__OUTPUT_ENTRIES_MAX) {
				too_many = true;
				continue;
			}
			names[n * SLOT] = (char)nl;
			memcpy(names + n * SLOT + 1, nm, nl + 1);
			n++;
		}
	}
	if (too_many)
		put_rec(out, REC_TOO_MANY, "", 0, GOVEX__OUTPUT_ENTRIES_MAX);
	return n;
}

/* One listed entry: skipped (recorded; returns 0) or copied (returns 1, *used grows). */
static int collect_one(int dfd, int out, const char *nm, size_t nl, uint64_t room, char *buf,
		       size_t cap, uint64_t *used)
{
	struct stat st, st2;
	if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		put_rec(out, REC_ERROR, nm, nl, (uint64_t)errno);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		put_rec(out, REC_NOT_REGULAR, nm, nl, (uint64_t)(st.st_mode & S_IFMT));
		return 0;
	}
	if (st.st_nlink > 1) {
		put_rec(out, REC_HARDLINK, nm, nl, (uint64_t)st.st_nlink);
		return 0;
	}
	if ((uint64_t)st.st_size > room) {
		put_rec(out, REC_OVER_BYTES, nm, nl, (uint64_t)st.st_size);
		return 0;
	}
	int fd = openat(dfd, nm, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		put_rec(out, REC_ERROR, nm, nl, (uint64_t)errno);
		return 0;
	}
	/* the entry opened must be the one looked at (nothing runs any more, but be sure) */
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev ||
	    !S_ISREG(st2.st_mode) || st2.st_nlink > 1 || (uint64_t)st2.st_size > room) {
		close(fd);
		put_rec(out, REC_CHANGED, nm, nl, 0);
		return 0;
	}
	copy_file(out, fd, nm, nl, (uint64_t)st2.st_size, buf, cap);
	close(fd);
	*used += (uint64_t)st2.st_size;
	return 1;
}

void govex__files_collect(int wdfd, int out, uint64_t max_count, uint64_t max_bytes, char *scratch)
{
	char *names = scratch;
	char *buf = scratch + (size_t)GOVEX__OUTPUT_ENTRIES_MAX * SLOT;
	size_t cap = GOVEX__COLLECT_SCRATCH - (size_t)GOVEX__OUTPUT_ENTRIES_MAX * SLOT;
	int dfd = openat(wdfd, GOVEX__OUTPUT_DIR,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (dfd < 0) {
		put_rec(out, REC_NO_DIR, "", 0, (uint64_t)errno);
		return;
	}
	size_t n = list_names(dfd, out, names, buf, cap);
	sort_slots(names, n);
	uint64_t used = 0, taken = 0;
	for (size_t i = 0; i < n; i++) {
		const char *nm = names + i * SLOT + 1;
		size_t nl = (unsigned char)names[i * SLOT];
		if (taken >= max_count) {
			put_rec(out, REC_OVER_COUNT, nm, nl, 0);
			continue;
		}
		taken += (uint64_t)collect_one(dfd, out, nm, nl, max_bytes - used, buf, cap, &used);
	}
	close(dfd);
}

/* ---- parsing (host) ---------------------------------------------------------------- */

static int read_at(int fd, void *p, size_t n, off_t at)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(fd, (char *)p + done, n - done, at + (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		done += (size_t)k;
	}
	return 0;
}

/* A name safe to show: bytes outside printable ASCII as '?'. */
static void shown_name(const char *nm, size_t nl, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < nl && o + 1 < cap; i++)
		out[o++] = (nm[i] >= 0x20 && nm[i] < 0x7f) ? nm[i] : '?';
	out[o] = '\0';
}

static void diag_msg(struct govex__outfiles *o, const char *code, const char *name, const char *msg)
{
	json_t *d = json_pack("{s:s, s:s}", "code", code, "message", msg);
	if (d && name)
		json_object_set_new(d, "name", json_string(name));
	json_array_append_new(o->diags, d);
}

/* a diagnostic with a formatted message (no va_list: the analyzers misread them) */
#define diag(o, code, name, ...)                                                                   \
	do {                                                                                       \
		char msg_[400];                                                                    \
		snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                         \
		diag_msg(o, code, name, msg_);                                                     \
	} while (0)

static const char *type_name(uint64_t mode)
{
	switch (mode) {
	case S_IFLNK:
		return "a symbolic link";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
	case S_IFBLK:
		return "a device";
	default:
		return "not a regular file";
	}
}

/* skipped entries named one by one, at most (a run may leave thousands) */
#define DIAGS_MAX 32

static void skipped(struct govex__outfiles *o, const struct rec *h, const char *nm,
		    uint64_t *over_count)
{
	char shown[GOVEX__FILE_NAME_MAX * 2 + 8];
	shown_name(nm, h->name_len, shown, sizeof(shown));
	switch (h->kind) {
	case REC_NOT_REGULAR:
		diag(o, "output_skipped", shown, "output file '%s' skipped: %s", shown,
		     type_name(h->size));
		break;
	case REC_BAD_NAME:
		diag(o, "output_skipped", shown,
		     "output file '%s' skipped: not a valid file name ([A-Za-z0-9._-], 1 to 128 "
		     "characters, no leading '.')",
		     shown);
		break;
	case REC_OVER_COUNT:
		(*over_count)++;
		break;
	case REC_OVER_BYTES:
		diag(o, "output_truncated", shown,
		     "output file '%s' (%llu bytes) skipped: over limits.files_out_bytes in total",
		     shown, (unsigned long long)h->size);
		break;
	case REC_TOO_MANY:
		diag(o, "output_truncated", NULL,
		     "the output directory has more than %llu entries: the rest were not looked at",
		     (unsigned long long)h->size);
		break;
	case REC_NO_DIR:
		diag(o, "output_skipped", NULL,
		     "the output directory could not be opened (%s): no files collected",
		     h->size == ELOOP || h->size == ENOTDIR ? "it was replaced by a non-directory"
							    : strerror((int)h->size));
		break;
	case REC_HARDLINK:
		diag(o, "output_skipped", shown, "output file '%s' skipped: it has %llu hard links",
		     shown, (unsigned long long)h->size);
		break;
	case REC_CHANGED:
		diag(o, "output_skipped", shown,
		     "output file '%s' skipped: it changed while it was collected", shown);
		break;
	default:
		diag(o, "output_skipped", shown, "output file '%s' skipped: %s", shown,
		     strerror((int)h->size));
		break;
	}
}

static int add_file(struct govex__outfiles *o, const char *nm, size_t nl, int fd, off_t at,
		    size_t len)
{
	struct govex__outfile *nf = realloc(o->f, (o->n + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	o->f = nf;
	struct govex__outfile *f = &o->f[o->n];
	memset(f, 0, sizeof(*f));
	f->name = strndup(nm, nl);
	f->data = malloc(len + 1);
	if (!f->name || !f->data || read_at(fd, f->data, len, at) < 0) {
		free(f->name);
		free(f->data);
		return -ENOMEM;
	}
	f->data[len] = '\0';
	f->len = len;
	f->mime = (char *)govex__mime_of(f->name, f->data, len);
	govex__sha256_digest(f->data, len, f->sha256);
	o->n++;
	return 0;
}

struct govex__outfiles *govex__files_parse(int fd)
{
	struct govex__outfiles *o = calloc(1, sizeof(*o));
	if (!o || !(o->diags = json_array()))
		return govex__outfiles_free(o);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return o;
	uint64_t over_count = 0, more = 0;
	off_t at = 0;
	while (at + (off_t)sizeof(struct rec) <= st.st_size) {
		struct rec h;
		char nm[256];
		if (read_at(fd, &h, sizeof(h), at) < 0 || h.name_len > 255 ||
		    read_at(fd, nm, h.name_len, at + (off_t)sizeof(h)) < 0)
			break;
		at += (off_t)sizeof(h) + (off_t)h.name_len;
		if (h.data_len > (uint64_t)(st.st_size - at))
			break;
		if (h.kind == REC_FILE && govex__file_name_ok(nm, h.name_len)) {
			if (add_file(o, nm, h.name_len, fd, at, (size_t)h.data_len) < 0)
				return govex__outfiles_free(o);
		} else {
			if (h.kind == REC_OVER_COUNT || h.kind == REC_TOO_MANY ||
			    h.kind == REC_NO_DIR || json_array_size(o->diags) < DIAGS_MAX)
				skipped(o, &h, nm, &over_count);
			else
				more++;
		}
		at += (off_t)h.data_len;
	}
	if (more)
		diag(o, "output_skipped", NULL, "%llu more output entries skipped (not listed)",
		     (unsigned long long)more);
	if (over_count)
		diag(o, "output_truncated", NULL,
		     "%llu output files skipped: over limits.files_out_count",
		     (unsigned long long)over_count);
	return o;
}

/* ---- MIME types --------------------------------------------------------------------- */

const char *govex__mime_of(const char *name, const char *data, size_t len)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *mime;
	} sniff[] = {
	    {"\x89PNG\r\n\x1a\n", 8, "image/png"},
	    {"\xff\xd8\xff", 3, "image/jpeg"},
	    {"GIF87a", 6, "image/gif"},
	    {"GIF89a", 6, "image/gif"},
	    {"%PDF-", 5, "application/pdf"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(sniff); i++)
		if (len >= sniff[i].len && memcmp(data, sniff[i].magic, sniff[i].len) == 0)
			return sniff[i].mime;
	if (len >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0)
		return "image/webp";
	static const struct {
		const char *ext, *mime;
	} ext[] = {
	    {".svg", "image/svg+xml"}, {".csv", "text/csv"},  {".json", "application/json"},
	    {".txt", "text/plain"},    {".md", "text/plain"}, {".py", "text/plain"},
	    {".html", "text/html"},
	};
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot && i < ARRAY_SIZE(ext); i++)
		if (strcmp(dot, ext[i].ext) == 0)
			return ext[i].mime;
	return "application/octet-stream";
}
