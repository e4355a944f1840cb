/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (zyg.c has the whole picture): descriptors and messages, the
 * run's spec.
 */
#include "zyg_int.h"

/* ---- small things ---------------------------------------------------------------- */

int zyg_neg(long r)
{
	return r < 0 ? -errno : 0;
}

void zyg_closep(int *fd)
{
	if (*fd >= 0)
		z_close(*fd);
	*fd = -1;
}

/* Closes every descriptor from 3 up but keep[] (-1 entries ignored; sorted here). */
void zyg_close_except(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int x = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = x;
		}
	unsigned lo = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			ZS3(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	ZS3(SYS_close_range, lo, ~0U, 0);
}

__attribute__((noreturn)) void zyg_fail(int fce, enum govex__step step, int err)
{
	struct govex__child_error ce = {.step = (int32_t)step, .err = err > 0 ? err : EPERM};
	if (fce >= 0) {
		ssize_t w;
		do
			w = z_write(fce, &ce, sizeof(ce));
		while (w == -EINTR);
	}
	z_exit(127);
}

ssize_t zyg_full_write(int fd, const void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = z_write(fd, (const char *)buf + off, len - off);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? w : -EIO;
		off += (size_t)w;
	}
	return (ssize_t)off;
}

ssize_t zyg_read1(int fd, char *b)
{
	ssize_t n;
	do
		n = z_read(fd, b, 1);
	while (n == -EINTR);
	return n;
}

/* One message with descriptors: 1-byte tag, up to max fds.  Returns the bytes read
 * (0: EOF), -errno; *n the descriptors received. */
ssize_t zyg_recv_fds(int sock, char *tag, int *fds, size_t max, size_t *n, int flags)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	*tag = 0;
	*n = 0;
	struct iovec iov = {.iov_base = tag, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(max * sizeof(int))};
	ssize_t r = ZS3(SYS_recvmsg, sock, &msg, MSG_CMSG_CLOEXEC | flags);
	if (r < 0)
		return r;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*n < max)
				fds[(*n)++] = fd;
			else
				z_close(fd);
		}
	}
	return r;
}

int zyg_send_fds(int sock, char tag, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	ssize_t w;
	do
		w = ZS3(SYS_sendmsg, sock, &msg, MSG_NOSIGNAL);
	while (w == -EINTR);
	return w == 1 ? 0 : w < 0 ? (int)w : -EIO;
}

/* ---- the run's spec ---------------------------------------------------------------- */

static int spec_check(struct spec *s, const void *m, uint32_t size)
{
	s->base = m;
	s->size = size;
	s->h = m;
	if (s->h->magic != ZYG_MAGIC || s->h->size != s->size || s->h->nprocs < 0 ||
	    s->h->nprocs > 8 || s->h->report_size != sizeof(struct govex__shim_report))
		return -EINVAL;
	return 0;
}

/* Maps the spec memfd (closed); 0 or -errno.  The program's: its memory is its own. */
int zyg_spec_map(int fd, struct spec *s)
{
	struct stat sb;
	int r = zyg_neg(fstat(fd, &sb));
	if (r == 0 && (sb.st_size < (off_t)sizeof(struct zyg_hdr) || sb.st_size > ZYG_SPEC_MAX))
		r = -EINVAL;
	void *m = MAP_FAILED;
	if (r == 0) {
		m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			r = -errno;
	}
	close(fd);
	if (r < 0)
		return r;
	return spec_check(s, m, (uint32_t)sb.st_size);
}

/*
 * The init's: the spec memfd (closed) read into memory of its own that no fork copies
 * (MADV_DONTFORK before a byte of the run is in it).  The init shares the template's
 * memory, and a program forked from it later (another spare's) copies what is mapped
 * there: a mapping of the memfd would be a later run's way to this run's spec.  A fork
 * between the mmap and the madvise copies zeros.  The buffer is recorded in *buf, which
 * T frees once it reaped the init (an init never unmaps what T's memory holds: T may map
 * something else there after it).
 */
int zyg_spec_load(int fd, struct spec *s, struct zyg_buf *buf)
{
	long size = ZS3(SYS_lseek, fd, 0, SEEK_END);
	int r = size < 0 ? (int)size : 0;
	if (r == 0 && (size < (long)sizeof(struct zyg_hdr) || size > (long)ZYG_SPEC_MAX))
		r = -EINVAL;
	long m = -EINVAL;
	if (r == 0 && (m = ZS6(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) < 0)
		r = (int)m;
	if (r == 0) {
		buf->base = (void *)m;
		buf->len = (size_t)size;
		r = (int)ZS3(SYS_madvise, m, size, MADV_DONTFORK);
	}
	for (long off = 0; r == 0 && off < size;) {
		ssize_t n = z_pread(fd, (char *)m + off, (size_t)(size - off), off);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? (int)n : -EIO;
		off += n > 0 ? n : 0;
	}
	z_close(fd);
	return r < 0 ? r : spec_check(s, (const void *)m, (uint32_t)size);
}

/* The next record at *off (advanced): 1, 0 at the end, -EINVAL when malformed. */
int zyg_spec_next(const struct spec *s, uint32_t *off, struct recd *rc)
{
	if (*off >= s->size)
		return 0;
	if (s->size - *off < 8)
		return -EINVAL;
	uint32_t h[2];
	memcpy(h, s->base + *off, sizeof(h));
	uint64_t end = (uint64_t)*off + 8 + h[1];
	if (end > s->size)
		return -EINVAL;
	rc->type = h[0];
	rc->len = h[1];
	rc->data = s->base + *off + 8;
	*off = (uint32_t)((end + 7) & ~(uint64_t)7);
	return 1;
}

/* A record's leading string (NUL within the record): its length, or -1. */
ssize_t zyg_rec_str(const struct recd *rc, uint32_t at)
{
	if (at >= rc->len)
		return -1;
	const char *z = memchr(rc->data + at, 0, rc->len - at);
	return z ? z - (rc->data + at) : -1;
}

/* ---- the descriptors of one run ------------------------------------------------------ */

/* The spec's workdir (its ZR_WORKDIR record, an absolute path), or NULL. */
const char *zyg_spec_workdir(const struct spec *s)
{
	struct recd rc;
	int r;
	SPEC_EACH(s, ZR_WORKDIR, rc, r)
	{
		if (zyg_rec_str(&rc, 0) > 0 && rc.data[0] == '/')
			return rc.data;
	}
	return NULL;
}

int zyg_runfds_index(struct runfds *f, const struct zyg_hdr *h)
{
	f->spec = f->fds[0];
	f->in = f->fds[1];
	f->out = f->fds[2];
	f->err = f->fds[3];
	f->ce = f->fds[4];
	f->rep = f->fds[5];
	f->kill = f->fds[6];
	size_t i = 7;
	f->procs0 = (int)i;
	i += h ? (size_t)h->nprocs : 0;
	f->cpu = h && h->has_cpu && i < f->n ? f->fds[i++] : -1;
	f->extra = h && h->has_extra && i < f->n ? f->fds[i++] : -1;
	f->watch = i < f->n ? f->fds[i] : -1;
	return i <= f->n ? 0 : -EINVAL;
}
