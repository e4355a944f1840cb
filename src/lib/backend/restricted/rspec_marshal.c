/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: the marshaller of a run's spec (zyg_spec.h), what the run's init and program
 * read from a memfd in the template's interpreter (zyg.c) and fill their struct rlayers
 * from (layers.h, zyg_prog.c): what the run's own layers need -- its tmpfs mounts, the
 * proc masks, ids, rlimits (rlayers_rlimits, layers.c), Landlock rules of its plan,
 * cgroup descriptors' count, the CPU budget, its environment, argv and code.  The
 * template itself never reads it (template.c).
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "restricted.h"
#include "template_int.h"
#include "zyg_spec.h"

json_t *rwarm_hex(const void *data, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char *s = malloc(2 * len + 1);
	if (!s)
		return NULL;
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = digits[p[i] >> 4];
		s[2 * i + 1] = digits[p[i] & 15];
	}
	s[2 * len] = '\0';
	json_t *j = json_stringn(s, 2 * len);
	free(s);
	return j;
}

/* ---- the spec, record by record ----------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void *sb_room(struct sbuf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (nc < b->len + n)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->oom = true;
			return NULL;
		}
		memset(np + b->cap, 0, nc - b->cap);
		b->p = np;
		b->cap = nc;
	}
	void *at = b->p + b->len;
	b->len += n;
	return at;
}

/* One record of parts (each a byte string; strings are given with their NUL). */
static void rec(struct sbuf *b, uint32_t type, const void *a, size_t na, const void *c, size_t nc)
{
	uint32_t h[2] = {type, (uint32_t)(na + nc)};
	size_t pad = (8 - (na + nc) % 8) % 8;
	char *at = sb_room(b, sizeof(h) + na + nc + pad);
	if (!at)
		return;
	memcpy(at, h, sizeof(h));
	if (na)
		memcpy(at + sizeof(h), a, na);
	if (nc)
		memcpy(at + sizeof(h) + na, c, nc);
}

static void rec_str(struct sbuf *b, uint32_t type, const char *s)
{
	rec(b, type, s, strlen(s) + 1, NULL, 0);
}

static void rec_str2(struct sbuf *b, uint32_t type, const char *s, const void *c, size_t nc)
{
	rec(b, type, s, strlen(s) + 1, c, nc);
}

/* The rlimits the run's layers set (rlayers_rlimits, as a cold run's). */
static void rlimits(struct sbuf *b, const struct govex__limits *l)
{
	struct rlayers_rlimit rl[RLAYERS_RLIMIT_MAX];
	size_t n = rlayers_rlimits(l, rl);
	for (size_t i = 0; i < n; i++) {
		struct zyg_rlimit z = {rl[i].resource, rl[i].step, rl[i].soft, rl[i].hard};
		rec(b, ZR_RLIMIT, &z, sizeof(z), NULL, 0);
	}
}

extern const unsigned char govex__worker_py[];
extern const size_t govex__worker_py_len;
extern const unsigned char govex__worker_inspection_py[];
extern const size_t govex__worker_inspection_py_len;

/* Which of govex's worker texts (template.c's send_texts: 0 the worker, 1 the
 * inspection part, a newline and the worker) code is, byte for byte, or -1. */
static int worker_text(const char *code)
{
	size_t n = strlen(code), a = govex__worker_inspection_py_len, b = govex__worker_py_len;
	if (n == b && memcmp(code, govex__worker_py, b) == 0)
		return 0;
	if (n == a + 1 + b && memcmp(code, govex__worker_inspection_py, a) == 0 &&
	    code[a] == '\n' && memcmp(code + a + 1, govex__worker_py, b) == 0)
		return 1;
	return -1;
}

/* What a spec holds (zyg_spec.h): a whole run's, a spare's (every step ahead, no record
 * of the run's own), or a go's (the run's own records only). */
enum spec_kind { SPEC_RUN, SPEC_SPARE, SPEC_GO };

static char *spec_build(const struct rwarm_run *r, enum spec_kind kind, const char *remount,
			int prewarm, size_t *ret_len)
{
	const struct rstate *st = r->st;
	const struct govex__launch *l = r->l;
	const struct rplan *plan = r->plan;
	size_t argc = 0;
	while (l->argv[argc])
		argc++;
	struct sbuf b = {0};
	/* the header is written last (the buffer moves as it grows) */
	struct zyg_hdr hd = {0}, *h = &hd;
	if (!sb_room(&b, sizeof(hd)))
		return NULL;
	h->magic = ZYG_MAGIC;
	h->report_size = sizeof(struct govex__shim_report);
	h->text = worker_text(l->argv[argc - 1]);
	if (kind == SPEC_GO) {
		/* the run's own: its environment, argv, code and files, in its spare */
		h->outputs = l->outputs;
		h->has_extra = l->extra_fd >= 0;
		h->setid = !st->userns;
		h->uid = (uint32_t)r->uid; /* (the output directory's owner) */
		h->gid = (uint32_t)r->gid;
		if (remount)
			rec_str2(&b, ZR_REMOUNT, l->workdir, remount, strlen(remount) + 1);
		goto own;
	}
	h->deferred = kind == SPEC_SPARE;
	h->prewarm = kind == SPEC_SPARE ? prewarm : 0;
	for (int i = 0; i < RCG_N; i++)
		h->nprocs += r->cg->procs_fd[i] >= 0;
	h->has_cpu = r->cg->cpu_fd >= 0;
	h->has_extra = kind == SPEC_RUN && l->extra_fd >= 0;
	h->cpu_version = r->cg->cpu_version;
	h->cpu_budget_ns =
	    r->cg->cpu_fd >= 0 && l->limits->cpu_ms ? (int64_t)l->limits->cpu_ms * 1000000 : -1;
	h->ncpus = st->ncpus;
	h->setid = !st->userns;
	h->uid = (uint32_t)r->uid;
	h->gid = (uint32_t)r->gid;
	h->outputs = kind == SPEC_RUN && l->outputs;
	h->notify = st->deny_net || st->deny_subprocess;
	h->denials_max = RDENIALS_ANSWERED_MAX;
	h->report_size = sizeof(struct govex__shim_report);
	if (st->landlock_abi > 0) {
		uint64_t a[3];
		h->ll_size = (uint32_t)rlandlock_attr(st->landlock_abi, st->deny_net, a);
		h->ll_fs = a[0];
		h->ll_net = a[1];
		h->ll_scoped = a[2];
		h->ll_file_rights = LL_FILE_RIGHTS;
	}
	rec_str(&b, ZR_WORKDIR, l->workdir);
	for (size_t i = 0; i < plan->n; i++) {
		const struct rmount *m = &plan->m[i];
		/* the run's own writable places: its /tmp and workdir tmpfs (not /dev, which
		 * is read-only); the host-wide proc files to mask where proc has no
		 * subset=pid; the identity files (rplan_add_identity), bound over the
		 * template's placeholders */
		if (m->kind == RM_TMPFS && (m->ll_access & LL_FS_WRITE_FILE)) {
			rec_str2(&b, ZR_TMPFS, m->path, m->opts, strlen(m->opts) + 1);
		} else if (m->kind == RM_PROC_MASK) {
			rec_str(&b, ZR_MASK, m->path);
		} else if (m->kind == RM_FILE) {
			rec_str2(&b, ZR_IDENT, m->path, m->opts, strlen(m->opts));
		}
		uint64_t acc = st->landlock_abi > 0 ? m->ll_access & h->ll_fs : 0;
		if (acc)
			rec(&b, ZR_LLRULE, &acc, sizeof(acc), m->path, strlen(m->path) + 1);
	}
	rlimits(&b, l->limits);
	if (kind == SPEC_SPARE)
		goto done;
own:
	for (size_t i = 0; i < l->n_files; i++)
		rec_str(&b, ZR_FILE, l->files[i].name);
	for (size_t i = 0; l->envp && l->envp[i]; i++)
		rec(&b, ZR_ENV, l->envp[i], strlen(l->envp[i]), NULL, 0);
	for (size_t i = 0; i + 1 < argc; i++)
		rec(&b, ZR_ARGV, l->argv[i], strlen(l->argv[i]), NULL, 0);
	rec(&b, ZR_ARGV_CODE, NULL, 0, NULL, 0);
	/* govex's worker (call mode, inspection, REPL runs): the template has its text and
	 * its code object; other code is sent */
	if (h->text < 0)
		rec(&b, ZR_CODE, l->argv[argc - 1], strlen(l->argv[argc - 1]), NULL, 0);
done:
	if (b.oom || b.len > ZYG_SPEC_MAX) {
		free(b.p);
		return NULL;
	}
	h->size = (uint32_t)b.len;
	memcpy(b.p, h, sizeof(*h));
	*ret_len = b.len;
	return b.p;
}

static int spec_memfd(const struct rwarm_run *r, enum spec_kind kind, const char *remount,
		      int prewarm)
{
	size_t len = 0, off = 0;
	char *s = spec_build(r, kind, remount, prewarm, &len);
	if (!s)
		return -ENOMEM;
	int fd = memfd_create("govex-warm-spec", MFD_CLOEXEC);
	int e = fd < 0 ? errno : 0;
	while (!e && off < len) {
		ssize_t n = write(fd, s + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			e = n < 0 ? errno : EIO;
		else
			off += (size_t)n;
	}
	free(s);
	if (e && fd >= 0)
		close(fd);
	return e ? -e : fd;
}

int rwarm_spec_memfd(const struct rwarm_run *r)
{
	return spec_memfd(r, SPEC_RUN, NULL, 0);
}

int rwarm_spare_spec_memfd(const struct rwarm_run *r, int prewarm)
{
	return spec_memfd(r, SPEC_SPARE, NULL, prewarm);
}

int rwarm_go_spec_memfd(const struct rwarm_run *r, const char *remount)
{
	return spec_memfd(r, SPEC_GO, remount, 0);
}
