/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (zyg.c has the whole picture): a run's program (P, PID 2):
 * its steps up to the user's code, the cold program child's order.
 */
#include "zyg_int.h"

/* ---- P: the program, up to the user's code -------------------------------------------- */

/* The spec's Landlock rules (ZR_LLRULE records) one by one, for rlayers (*it: the next
 * record's offset, 0 at first). */
static int spec_ll_next(const void *ctx, size_t *it, struct rlayers_rule *ret)
{
	const struct spec *s = ctx;
	uint32_t off = *it ? (uint32_t)*it : (uint32_t)sizeof(struct zyg_hdr);
	struct recd rc;
	int r;
	while ((r = zyg_spec_next(s, &off, &rc)) > 0) {
		if (rc.type != ZR_LLRULE)
			continue;
		if (rc.len < 9 || zyg_rec_str(&rc, 8) < 0)
			return -EINVAL;
		memcpy(&ret->access, rc.data, 8);
		ret->path = rc.data + 8;
		*it = off;
		return 1;
	}
	return r < 0 ? -EINVAL : 0;
}

/* The spec's rlimits (ZR_RLIMIT records, as rlayers_rlimits made them) into rl[]. */
static size_t spec_rlimits(const struct spec *s, struct rlayers_rlimit *rl, int fce)
{
	struct recd rc;
	int r;
	size_t n = 0;
	SPEC_EACH(s, ZR_RLIMIT, rc, r)
	{
		struct zyg_rlimit z;
		if (rc.len != sizeof(z) || n == RLAYERS_RLIMIT_MAX)
			zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
		memcpy(&z, rc.data, sizeof(z));
		rl[n++] = (struct rlayers_rlimit){z.resource, z.step, z.soft, z.hard};
	}
	if (r < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, EINVAL);
	return n;
}

/* a spare's program between its steps and its go (P's own memory) */
static struct spec zyg_spare;
static int spare_csock = -1;

static void zyg_program_go(struct spec *s, int csock, int fce)
{
	char tag = 0;
	int fds[2] = {-1, -1};
	size_t n = 0;
	ssize_t r;
	do
		r = zyg_recv_fds(csock, &tag, fds, 2, &n, 0);
	while (r == -EINTR);
	close(csock);
	if (r <= 0 || tag != 'g' || n < 1)
		_exit(0); /* the init let the spare go, or failed (and said so) */
	int e = zyg_spec_map(fds[0], s);
	if (e < 0)
		zyg_fail(fce, GOVEX_STEP_SHIM, -e);
	if (s->h->has_extra) {
		if (n < 2 || dup2(fds[1], 3) != 3)
			zyg_fail(fce, GOVEX_STEP_STDIO, n < 2 ? EBADF : errno);
		close(fds[1]);
	} else if (n > 1) {
		close(fds[1]);
	}
}

/* P's inner layers (layers.c), filled from the spec: the cold program child's, but for
 * setsid (made before the run: zyg_program_main) and a spare's rlimits (after its go). */
static void zyg_program(const struct zyg_params *p, struct spec *s, struct runfds *f, int csock,
			struct zyg_out *out)
{
	const struct zyg_hdr *h = s->h;
	bool deferred = h->deferred;
	struct rlayers_rlimit rl[RLAYERS_RLIMIT_MAX];
	size_t n_rl = deferred ? 0 : spec_rlimits(s, rl, f->ce);
	if (p->n_guards != 1)
		zyg_fail(f->ce, GOVEX_STEP_SECCOMP_GUARD, EINVAL);
	struct rlayers ly = {
	    .procs = f->fds + f->procs0,
	    .n_procs = (size_t)h->nprocs,
	    .guard = p->guards[0],
	    /* the guard's listener to the run's init, which answers and counts what the
	     * policy denies; a spare keeps the socket: its go comes on it */
	    .notify_sock = csock,
	    .notify_keep = deferred,
	    .in = f->in,
	    .out = f->out,
	    .err = f->err,
	    .extra = f->extra,
	    .errpipe = f->ce,
	    .workdir = zyg_spec_workdir(s),
	    .ll_attr = {h->ll_fs, h->ll_net, h->ll_scoped},
	    .ll_size = h->ll_size < 3 * sizeof(uint64_t) ? h->ll_size : 3 * sizeof(uint64_t),
	    .ll_file_rights = h->ll_file_rights,
	    .ll_next = spec_ll_next,
	    .ll_ctx = s,
	    .setid = h->setid,
	    .uid = h->uid,
	    .gid = h->gid,
	    .dumpable = true,
	    .rlimits = rl,
	    .n_rlimits = n_rl,
	    .filter = p->filter,
	};
	enum govex__step step = GOVEX_STEP_CGROUP;
	int r = rlayers_enter(&ly, &step);
	if (r < 0)
		zyg_fail(ly.errpipe, step, -r);
	int fce = ly.errpipe;
	csock = ly.notify_sock;
	out->fce = fce;
	if (deferred) {
		/* a spare: back to the interpreter without a spec (out->spec NULL), which
		 * warms itself up and calls govex_zyg_go for the go */
		zyg_spare = *s;
		spare_csock = csock;
		out->spec = NULL;
		out->prewarm = s->h->prewarm;
		return;
	}
	out->spec = s->base;
	out->size = s->size;
	out->first = sizeof(struct zyg_hdr);
	out->text = s->h->text;
}

int govex_zyg_wait(int ms)
{
	if (spare_csock < 0)
		return 1;
	struct pollfd pfd = {.fd = spare_csock, .events = POLLIN};
	/* readable, ended, or poll failed (a signal): the go (or its end) may be there */
	return poll(&pfd, 1, ms) != 0;
}

int govex_zyg_go(struct zyg_out *out)
{
	/* the go, then the rlimits (the allowlist has setrlimit): RLIMIT_AS counts what is
	 * mapped, and mapping the go's spec under a tight memory limit would fail where a
	 * cold run's start does not */
	if (spare_csock < 0)
		zyg_fail(out->fce, GOVEX_STEP_SHIM, EINVAL);
	struct spec go;
	zyg_program_go(&go, spare_csock, out->fce);
	spare_csock = -1;
	struct rlayers_rlimit rl[RLAYERS_RLIMIT_MAX];
	size_t n = spec_rlimits(&zyg_spare, rl, out->fce);
	enum govex__step step;
	int r = rlayers_setrlimits(rl, n, &step);
	if (r < 0)
		zyg_fail(out->fce, step, -r);
	munmap((void *)zyg_spare.base, zyg_spare.size);
	out->spec = go.base;
	out->size = go.size;
	out->first = sizeof(struct zyg_hdr);
	out->text = go.h->text;
	return 0;
}

/* P, made ahead: waits for the run's descriptors from B, then for B's go, takes the
 * cold program child's steps and returns (0) for zygote.py to run the code. */
int zyg_program_main(const struct zyg_params *p, int pair, const sigset_t *mask,
		     struct zyg_out *out)
{
	if (p->after_fork_child)
		p->after_fork_child();
	sigprocmask(SIG_SETMASK, mask, NULL);
	int keep[] = {pair};
	zyg_close_except(keep, 1);
	/* its own session (setsid, the cold program child's step after the cgroups), made
	 * here before the run: nothing of a run depends on it */
	int serr = setsid() < 0 ? errno : 0;
	prctl(PR_SET_NAME, p->comm, 0, 0, 0);
	struct runfds f = {.n = 0};
	char tag;
	ssize_t n;
	do
		n = zyg_recv_fds(pair, &tag, f.fds, MAX_FDS, &f.n, 0);
	while (n == -EINTR);
	if (n <= 0 || tag != 'F' || f.n < 7)
		_exit(0); /* B ended (the template is retired) or failed */
	zyg_runfds_index(&f, NULL);
	struct spec s;
	int r = zyg_spec_map(f.spec, &s);
	if (r < 0)
		zyg_fail(f.ce, GOVEX_STEP_SHIM, -r);
	if (zyg_runfds_index(&f, s.h) < 0)
		zyg_fail(f.ce, GOVEX_STEP_SHIM, EINVAL);
	if (serr)
		zyg_fail(f.ce, GOVEX_STEP_SETSID, serr);
	int theirs[] = {f.kill, f.rep, f.watch, f.cpu};
	for (size_t i = 0; i < ARRAY_SIZE(theirs); i++)
		if (theirs[i] >= 0)
			close(theirs[i]);
	f.cpu = f.watch = -1;
	char go = 0;
	if (zyg_read1(pair, &go) != 1 || go != 'G')
		_exit(0); /* B reported the failure on the error pipe */
	int csock = pair;
	if (!s.h->notify && !s.h->deferred) {
		close(pair);
		csock = -1;
	}
	zyg_program(p, &s, &f, csock, out);
	return 0;
}
