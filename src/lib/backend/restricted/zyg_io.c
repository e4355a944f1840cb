/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (zyg.c has the whole picture): descriptors and messages, the
 * run's spec.
 */
#include "zyg_int.h"

/* ---- small things ---------------------------------------------------------------- */

int neg(long r)
{
	return r < 0 ? -errno : 0;
}

void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Closes every descriptor from 3 up but keep[] (-1 entries ignored). */
void close_except(int *keep, size_t n)
{
	qsort(keep, n, sizeof(int), cmp_int);
	unsigned lo = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

__attribute__((noreturn)) void fail(int fce, enum govex__step step, int err)
{
	struct govex__child_error ce = {.step = (int32_t)step, .err = err > 0 ? err : EPERM};
	if (fce >= 0) {
		ssize_t w;
		do
			w = write(fce, &ce, sizeof(ce));
		while (w < 0 && errno == EINTR);
	}
	_exit(127);
}

ssize_t full_write(int fd, const void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, (const char *)buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return (ssize_t)off;
}

ssize_t read1(int fd, char *b)
{
	ssize_t n;
	do
		n = read(fd, b, 1);
	while (n < 0 && errno == EINTR);
	return n;
}

/* One message with descriptors: 1-byte tag, up to max fds.  Returns the bytes read
 * (0: EOF), -errno; *n the descriptors received. */
ssize_t recv_fds(int sock, char *tag, int *fds, size_t max, size_t *n, int flags)
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
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
	if (r < 0)
		return -errno;
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
				close(fd);
		}
	}
	return r;
}

int send_fds(int sock, char tag, const int *fds, size_t n)
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
		w = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == 1 ? 0 : -(w < 0 ? errno : EIO);
}

/* ---- the run's spec ---------------------------------------------------------------- */

/* Maps the spec memfd (closed); 0 or -errno. */
int spec_map(int fd, struct spec *s)
{
	struct stat sb;
	int r = neg(fstat(fd, &sb));
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
	s->base = m;
	s->size = (uint32_t)sb.st_size;
	s->h = m;
	if (s->h->magic != ZYG_MAGIC || s->h->size != s->size || s->h->nprocs < 0 ||
	    s->h->nprocs > 8 || s->h->report_size != sizeof(struct govex__shim_report))
		return -EINVAL;
	return 0;
}

/* The next record at *off (advanced): 1, 0 at the end, -EINVAL when malformed. */
int spec_next(const struct spec *s, uint32_t *off, struct recd *rc)
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
ssize_t rec_str(const struct recd *rc, uint32_t at)
{
	if (at >= rc->len)
		return -1;
	const char *z = memchr(rc->data + at, 0, rc->len - at);
	return z ? z - (rc->data + at) : -1;
}

/* ---- the descriptors of one run ------------------------------------------------------ */

int runfds_index(struct runfds *f, const struct zyg_hdr *h)
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
