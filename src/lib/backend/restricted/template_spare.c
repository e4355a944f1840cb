/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: spares (template.c has the whole picture).  A spare is a run made ahead of
 * its request, for runs shaped like the runtime's last one of its kind (the same
 * limits, aggregate controls, workdir, interpreter and flags): a slot (its uid and
 * cgroups, made with the shape's limits), its pipes, and in the template an init and a
 * program child that took every step of their own -- namespaces, identity files, /tmp,
 * workdir, proc, cgroups joined, seccomp guard, stdio, Landlock, ids and capabilities
 * dropped, rlimits, the allowlist -- and wait for the go (zyg.c: a spec with the
 * deferred flag).  A run that fits one takes it: the go carries only what is the run's
 * own (its environment, argv, code, files, call mode's descriptor), and what is left on
 * its path is the run itself.  Nothing of a request reaches a spare before the go, and
 * each spare serves one run: the controls and the result are a warm run's.
 *
 * A thread of the runtime makes them (SPARES_PER_KIND per template kind), asked each
 * time a run took one or found none, so that the making is off every run's path.  A
 * spare whose shape no run has any more is let go; the spares of a template go with it
 * (template_stop).  Each holds a slot: a runtime holds at most 2 * SPARES_PER_KIND
 * slots more than its runs in flight, and makes none with fewer than SPARES_MIN_SLOTS.
 *
 * What a run on a spare can see of it: its processes' start times (/proc/self/stat) are
 * the spare's, made when an earlier run ended -- a run learns roughly when the run
 * before it (anyone's) ended.  Documented, not hidden (a cold run's slot uid tells how
 * many runs are in flight already).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "restricted.h"
#include "template_int.h"

#define SPARES_PER_KIND 2
/* a replacement spare is made this long after it was asked for (spare_main) */
#define SPARE_SETTLE_MS 2
/* fewer run slots than this (sandbox_uid_count, as root): no spares */
#define SPARES_MIN_SLOTS 64
/* a spare's init says it exists ('p', its places made) within this, or it is dropped */
#define SPARE_READY_MS 10000
/* a spare let go: its init's end (its namespace's processes gone) waited for */
#define SPARE_DROP_MS 2000

struct rshape {
	struct govex__limits limits;
	govex__ctlset aggregate;
	char *workdir;
	char **argv; /* the run's argv, the code (the last) an empty string */
	size_t argc;
	bool shell;
	const struct govex_runtime_options *opts;
	char **envp; /* the run environment's locale entries (a successor template's) */
};

struct rspare {
	struct rspare *next;
	struct rshape *shape;
	struct rslot slot;
	uid_t uid;
	gid_t gid;
	struct rcg_run cg;
	struct rplan plan;
	struct govex__pipes f; /* the host's ends */
	int watch, pidfd;      /* the init's watch socket (host end) and pidfd */
};

/* ---- shapes ------------------------------------------------------------------------ */

void rshape_free(struct rshape *sh)
{
	if (!sh)
		return;
	for (size_t i = 0; sh->argv && i < sh->argc; i++)
		free(sh->argv[i]);
	free(sh->argv);
	for (size_t i = 0; sh->envp && sh->envp[i]; i++)
		free(sh->envp[i]);
	free(sh->envp);
	free(sh->workdir);
	free(sh);
}

static struct rshape *shape_new(const struct govex__launch *l, const struct rshape *from)
{
	struct rshape *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	size_t n = 0;
	char *const *argv = from ? from->argv : l->argv;
	while (from ? n < from->argc : argv[n] != NULL)
		n++;
	sh->limits = from ? from->limits : *l->limits;
	sh->aggregate = from ? from->aggregate : l->aggregate;
	sh->shell = from ? from->shell : l->policy && l->policy->shell;
	sh->opts = from ? from->opts : l->opts;
	sh->workdir = strdup(from ? from->workdir : l->workdir);
	sh->argv = calloc(n + 1, sizeof(char *));
	sh->argc = n;
	bool ok = sh->workdir && sh->argv && n >= 2;
	for (size_t i = 0; ok && i < n; i++)
		ok = (sh->argv[i] = strdup(i + 1 == n ? "" : argv[i])) != NULL;
	/* the locale entries only (what a template is started with) */
	static const char *const loc[] = {"LC_ALL=", "LC_CTYPE=", "LANG="};
	char *const *envp = from ? from->envp : l->envp;
	size_t ne = 0, k = 0;
	for (size_t i = 0; envp && envp[i]; i++)
		ne++;
	ok = ok && (sh->envp = calloc(ne + 1, sizeof(char *))) != NULL;
	for (size_t i = 0; ok && envp && envp[i]; i++)
		for (size_t j = 0; j < ARRAY_SIZE(loc); j++)
			if (strncmp(envp[i], loc[j], strlen(loc[j])) == 0) {
				ok = (sh->envp[k++] = strdup(envp[i])) != NULL;
				break;
			}
	if (!ok) {
		rshape_free(sh);
		return NULL;
	}
	return sh;
}

/* Whether a run is shaped like sh: what its spare took ahead (the run's cgroups and
 * rlimits, its workdir, its interpreter, flags and identity files). */
static bool shape_fits(const struct rshape *sh, const struct govex__launch *l)
{
	const struct govex__limits *a = &sh->limits, *b = l->limits;
	if (a->cpu_ms != b->cpu_ms || a->memory_bytes != b->memory_bytes ||
	    a->processes != b->processes || a->open_files != b->open_files ||
	    a->file_size_bytes != b->file_size_bytes || sh->aggregate != l->aggregate ||
	    sh->shell != (l->policy && l->policy->shell) || sh->opts != l->opts ||
	    strcmp(sh->workdir, l->workdir) != 0)
		return false;
	size_t n = 0;
	while (l->argv[n])
		n++;
	if (n != sh->argc)
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (strcmp(sh->argv[i], l->argv[i]) != 0)
			return false;
	return true;
}

/* Whether two shapes are the same (a spare's and the runtime's current one). */
static bool shapes_equal(const struct rshape *a, const struct rshape *b)
{
	if (memcmp(&a->limits, &b->limits, sizeof(a->limits)) != 0 ||
	    a->aggregate != b->aggregate || a->shell != b->shell || a->opts != b->opts ||
	    a->argc != b->argc || strcmp(a->workdir, b->workdir) != 0)
		return false;
	for (size_t i = 0; i < a->argc; i++)
		if (strcmp(a->argv[i], b->argv[i]) != 0)
			return false;
	return true;
}

/* How long a spare waits for its request before it warms up (zygote.py, _zyg_prewarm):
 * under load the request comes first, and warming up then would take the CPU the runs
 * need (measured: ~3 ms of CPU a spare, ~10% of the runs per second with 16 MCP calls in
 * flight); idle, a request finds its spare warm (~1 ms less of its latency). */
#define PREWARM_IDLE_MS 15
/* The pages a spare's warm-up copies are charged to its run's memory cgroup, like a cold
 * run's interpreter start (measured: ~0.75 MiB for a worker spare): a spare whose run's
 * memory limit is below this never warms up, so that no limit a run could come near
 * depends on whether its spare was idle. */
#define PREWARM_MEMORY_MIN (64ULL << 20)

static int rwarm_prewarm(const struct govex__launch *l)
{
	const char *e = secure_getenv("GOVEX_WARM_SPARE");
	uint64_t mem = l->limits ? l->limits->memory_bytes : 0;
	if ((e && strcmp(e, "bare") == 0) || (mem && mem < PREWARM_MEMORY_MIN))
		return -2;
	return rwarm_spare_wait() ? -1 : PREWARM_IDLE_MS;
}

/* ---- one spare --------------------------------------------------------------------- */

static void spare_free(struct rspare *s, bool dead)
{
	if (!s)
		return;
	if (!dead && s->watch >= 0) {
		/* the init sees its watch socket's end: it kills its namespace and exits */
		close(s->watch);
		s->watch = -1;
		if (s->pidfd >= 0) {
			struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
			while (poll(&p, 1, SPARE_DROP_MS) < 0 && errno == EINTR)
				;
		}
	}
	if (s->watch >= 0)
		close(s->watch);
	if (s->pidfd >= 0)
		close(s->pidfd);
	govex__pipes_close(&s->f);
	rcg_destroy(&s->cg); /* (kills what would be left in them) */
	rplan_free(&s->plan);
	rslot_release(&s->slot);
	rshape_free(s->shape);
	free(s);
}

/* The launch a spare is made with: its shape's (no request's data in it). */
static struct govex__launch shape_launch(const struct rshape *sh)
{
	return (struct govex__launch){
	    .limits = &sh->limits,
	    .argv = sh->argv,
	    .workdir = sh->workdir,
	    .workdir_fresh = true,
	    .cancel_fd = -1,
	    .extra_fd = -1,
	    .frame_fd = -1,
	    .aggregate = sh->aggregate,
	    .opts = sh->opts,
	    .out_fd = -1,
	};
}

/* Sends the spare's "R" message (the run's descriptors but call mode's) on ctl. */
static int send_spare(int ctl, int spec, const struct rspare *s, int watch)
{
	int fds[RWARM_RUN_FDS_MAX];
	size_t n = rwarm_run_fds(spec, &s->f, &s->cg, -1, watch, fds);
	return rwarm_send_fds(ctl, 'R', fds, n,
			      govex__now_ns() + (uint64_t)SPARE_READY_MS * 1000000ULL);
}

/* The init's pidfd ('p': it made the run's places and its program is on its way). */
static int wait_ready(int watch)
{
	struct pollfd p = {.fd = watch, .events = POLLIN};
	int r;
	while ((r = poll(&p, 1, SPARE_READY_MS)) < 0 && errno == EINTR)
		;
	if (r <= 0)
		return r < 0 ? -errno : -ETIMEDOUT;
	char b = 0;
	int fd = rwarm_recv_fd(watch, &b);
	if (fd < 0 || b != 'p') {
		if (fd >= 0)
			close(fd);
		return -ECHILD; /* the init failed (its error pipe says why) */
	}
	return fd;
}

static void close_fdp(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Makes a spare of template t for runs shaped sh (taken); NULL when it could not be
 * made (why: the step and errno in *why). */
static struct rspare *spare_make(const struct rstate *st, struct rtemplate *t, struct rshape *sh,
				 char *why, size_t why_len)
{
	struct rspare *s = calloc(1, sizeof(*s));
	if (!s) {
		rshape_free(sh);
		return NULL;
	}
	s->shape = sh;
	s->slot = (struct rslot){.n = -1, .fd = -1};
	/* every descriptor -1: a spare that fails before its cgroups exist is freed by
	 * rcg_destroy, which closes what is >= 0 (fd 0 of a zeroed struct, issue 23) */
	rcg_run_init(&s->cg);
	s->watch = s->pidfd = -1;
	int *all[] = {s->f.in, s->f.out, s->f.err, s->f.ce, s->f.rep, s->f.kill};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		all[i][0] = all[i][1] = -1;
	struct govex__launch l = shape_launch(sh);
	char wd[160];
	int spec = -1, bp[2] = {-1, -1};
	const char *step = "slot";
	int r = rrun_slot(st, sh->opts, &s->slot, &s->uid, &s->gid, why, why_len);
	if (r < 0)
		goto fail;
	step = "plan";
	rworkdir_opts(s->uid, s->gid, &l, wd, sizeof(wd));
	if ((r = rplan_for_run(&st->plan, sh->workdir, wd, sh->argv[0], NULL, &s->plan)) < 0 ||
	    (r = rplan_add_identity(&s->plan, s->uid, s->gid, sh->workdir, sh->shell)) < 0)
		goto fail;
	step = "cgroup";
	if (s->slot.n >= 0) {
		struct govex_error cgerr;
		if ((r = rcg_create(&st->cg, s->slot.id, &sh->limits, sh->aggregate, &s->cg,
				    &cgerr)) < 0)
			goto fail;
	} else if (sh->aggregate) {
		r = -EAGAIN;
		goto fail;
	}
	step = "pipe";
	if ((r = govex__pipes_open(&s->f)) < 0)
		goto fail;
	step = "spec";
	const struct rwarm_run wr = {
	    .st = st, .l = &l, .plan = &s->plan, .cg = &s->cg, .uid = s->uid, .gid = s->gid};
	if ((r = spec = rwarm_spare_spec_memfd(&wr, rwarm_prewarm(&l))) < 0)
		goto fail;
	step = "socketpair";
	if ((r = govex__neg_errno(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bp))) < 0)
		goto fail;
	step = "send";
	r = send_spare(t->ctl, spec, s, bp[1]);
	/* what only the spare's processes need: theirs now (or nobody's) */
	close_fdp(&spec);
	close_fdp(&bp[1]);
	int *child[] = {&s->f.in[0], &s->f.out[1], &s->f.err[1],
			&s->f.ce[1], &s->f.rep[1], &s->f.kill[0]};
	for (size_t i = 0; i < ARRAY_SIZE(child); i++)
		close_fdp(child[i]);
	for (int i = 0; i < RCG_N; i++)
		close_fdp(&s->cg.procs_fd[i]);
	s->watch = bp[0];
	if (r < 0)
		goto fail;
	step = "ready";
	if ((r = s->pidfd = wait_ready(s->watch)) < 0)
		goto fail;
	return s;
fail:
	snprintf(why, why_len, "spare: %s: %s", step, strerror(-r));
	close_fdp(&spec);
	close_fdp(&bp[1]);
	spare_free(s, false);
	return NULL;
}

/* A spare's init is gone (killed with its template, say): its pidfd is readable. */
static bool spare_dead(const struct rspare *s)
{
	struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
	return poll(&p, 1, 0) != 0;
}

/* ---- the runtime's spares ------------------------------------------------------------ */

/* Under w->lock (released meanwhile): a successor for each template that nears its
 * recycling, started now so that no run waits for a template's start (one is ~50 ms of
 * an interpreter's start and warm-up, paid by the run that found the template spent). */
static void successors(struct rwarm *w)
{
	unsigned recycle = rwarm_recycle_runs();
	for (int k = 0; k < 2 && !w->spare_stop; k++) {
		struct rtemplate *t = w->cur[k];
		if (!t || w->succ[k] || !w->shape[k] || w->broken || !w->st ||
		    t->runs < recycle - recycle / 4)
			continue;
		struct rshape *sh = shape_new(NULL, w->shape[k]);
		if (!sh)
			continue;
		const struct rstate *st = w->st;
		bool no_site = sh->argc > 2 && strcmp(sh->argv[2], "-S") == 0;
		pthread_mutex_unlock(&w->lock);
		struct govex__launch l = shape_launch(sh);
		l.envp = sh->envp;
		char why[256];
		struct rtemplate *nt = NULL;
		int r = rwarm_template_start(why, st, &l, no_site, k, &nt);
		if (r < 0)
			rwarm_log("successor", why);
		pthread_mutex_lock(&w->lock);
		if (nt && !w->succ[k] && !w->spare_stop && w->cur[k]) {
			w->succ[k] = nt;
			nt = NULL;
		}
		if (nt) {
			pthread_mutex_unlock(&w->lock);
			rwarm_template_stop(nt);
			pthread_mutex_lock(&w->lock);
		}
		rshape_free(sh);
	}
}

/* A pthread_cond_timedwait deadline MS milliseconds from now (CLOCK_REALTIME). */
static struct timespec deadline_in(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += ms % 1000 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* True when a kind's template has a shape and no spare: a run of it would go without. */
static bool spares_short(const struct rwarm *w)
{
	for (int k = 0; k < 2; k++)
		if (w->cur[k] && w->shape[k] && !w->cur[k]->n_spares)
			return true;
	return false;
}

/* The thread: makes the current templates' spares for their shapes. */
static void *spare_main(void *arg)
{
	struct rwarm *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->spare_stop && !w->spare_want)
			pthread_cond_wait(&w->spare_cond, &w->lock);
		if (w->spare_stop)
			break;
		if (!spares_short(w)) {
			/* A replacement (each kind still has a spare): made once the run that
			 * asked for it has been answered -- this thread's work (the slot, the
			 * cgroups, the pipes, the spec: ~0.4 ms) would otherwise take the CPU
			 * the answer is built on (measured: an idle MCP server's replies 0.1 to
			 * 0.4 ms sooner, p50). */
			struct timespec until = deadline_in(SPARE_SETTLE_MS);
			while (!w->spare_stop && !spares_short(w) &&
			       pthread_cond_timedwait(&w->spare_cond, &w->lock, &until) == 0)
				;
			if (w->spare_stop)
				break;
		}
		w->spare_want = false;
		for (int k = 0; k < 2 && !w->spare_stop; k++) {
			for (;;) {
				struct rtemplate *t = w->cur[k];
				if (!t || !w->shape[k] || t->n_spares >= SPARES_PER_KIND ||
				    w->broken || w->spare_stop || !w->st)
					break;
				struct rshape *sh = shape_new(NULL, w->shape[k]);
				if (!sh)
					break;
				t->inflight++; /* (not stopped while this makes its spare) */
				const struct rstate *st = w->st;
				pthread_mutex_unlock(&w->lock);
				char why[256];
				struct rspare *s = spare_make(st, t, sh, why, sizeof(why));
				if (!s)
					rwarm_log("spare", why);
				pthread_mutex_lock(&w->lock);
				t->inflight--;
				bool keep = s && w->cur[k] == t && w->shape[k] &&
					    shapes_equal(w->shape[k], s->shape);
				if (keep) {
					s->next = t->spares;
					t->spares = s;
					t->n_spares++;
					pthread_cond_broadcast(&w->spare_ready);
				}
				rwarm_reap_retired(w);
				if (!keep) {
					pthread_mutex_unlock(&w->lock);
					spare_free(s, false);
					pthread_mutex_lock(&w->lock);
					break; /* (failed, or the shape moved on: asked again later)
						*/
				}
			}
		}
		successors(w);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Whether this runtime makes spares: only where run slots are plenty (each spare holds
 * one while it waits; with a few slots configured, spares would starve the runs). */
static bool spares_allowed(const struct rstate *st)
{
	return st && (st->userns || st->id_count >= SPARES_MIN_SLOTS);
}

/* Under w->lock: the thread asked to make spares (started the first time). */
static void want_spares(struct rwarm *w)
{
	if (!spares_allowed(w->st))
		return;
	w->spare_want = true;
	if (!w->spare_on && !w->spare_stop) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		w->spare_on = pthread_create(&w->spare_thread, NULL, spare_main, w) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_cond_signal(&w->spare_cond);
}

void rspares_stop(struct rwarm *w)
{
	pthread_mutex_lock(&w->lock);
	w->spare_stop = true;
	pthread_cond_broadcast(&w->spare_cond);
	bool on = w->spare_on;
	w->spare_on = false;
	pthread_mutex_unlock(&w->lock);
	if (on)
		pthread_join(w->spare_thread, NULL);
}

void rspares_slots(const struct rtemplate *t, json_t *a)
{
	for (const struct rspare *s = t->spares; s; s = s->next)
		json_array_append_new(a, json_integer(s->slot.n));
}

void rspares_release(struct rtemplate *t)
{
	while (t->spares) {
		struct rspare *s = t->spares;
		t->spares = s->next;
		spare_free(s, true);
	}
	t->n_spares = 0;
}

/* The spares of t that do not fit sh (or are dead), taken out of its list. */
static struct rspare *take_misfits(struct rtemplate *t, const struct rshape *sh)
{
	struct rspare *out = NULL, **pp = &t->spares;
	while (*pp) {
		struct rspare *s = *pp;
		if (!shapes_equal(sh, s->shape) || spare_dead(s)) {
			*pp = s->next;
			t->n_spares--;
			s->next = out;
			out = s;
		} else {
			pp = &s->next;
		}
	}
	return out;
}

bool rwarm_spare_wait(void)
{
	const char *e = secure_getenv("GOVEX_WARM_SPARE");
	return e && (strcmp(e, "1") == 0 || strcmp(e, "bare") == 0);
}

/* The workdir's tmpfs options for a spare's run with files in: its size with them. */
static void remount_opts(const struct rspare *s, const struct govex__launch *l, char *buf,
			 size_t cap)
{
	char full[160];
	rworkdir_opts(s->uid, s->gid, l, full, sizeof(full));
	size_t n = strcspn(full, ",");
	snprintf(buf, cap, "%.*s", (int)n, full); /* "size=N" */
}

int rwarm_spare_run(struct rwarm *w, const struct rstate *st, const struct govex__launch *l,
		    struct govex__outcome *o, struct govex_error *err)
{
	int kind = l->extra_fd >= 0;
	char *key = rwarm_locale_key(l->envp);
	if (!key)
		return 1;
	const char *why = NULL;
	struct rspare *s = NULL, *misfits = NULL;
	pthread_mutex_lock(&w->lock);
	w->st = st;
	struct rtemplate *t = rwarm_template_get(w, st, l, key, &why);
	free(key);
	if (!t) {
		pthread_mutex_unlock(&w->lock);
		return 1; /* (the run goes on: it is counted cold there) */
	}
	if (!w->shape[kind] || !shape_fits(w->shape[kind], l)) {
		struct rshape *sh = shape_new(l, NULL);
		if (sh) {
			rshape_free(w->shape[kind]);
			w->shape[kind] = sh;
		}
	}
	if (w->shape[kind])
		misfits = take_misfits(t, w->shape[kind]);
	if (rwarm_spare_wait() && spares_allowed(st) && w->shape[kind] &&
	    shape_fits(w->shape[kind], l) && !t->spares) {
		/* GOVEX_WARM_SPARE=1 (tests): the run waits for its spare (a one-run runtime,
		 * the CLI's, gets one too: the escape suite attacks spares through it) */
		want_spares(w);
		struct timespec until = deadline_in(SPARE_READY_MS);
		while (!t->spares && w->cur[kind] == t && !w->broken &&
		       pthread_cond_timedwait(&w->spare_ready, &w->lock, &until) == 0)
			;
	}
	if (w->shape[kind] && shape_fits(w->shape[kind], l) && t->spares) {
		s = t->spares;
		t->spares = s->next;
		t->n_spares--;
		if (rcg_limits_lost(&s->cg)) {
			/* its limits went while it waited (a controller taken away from the
			 * host cgroup): let go; the run starts as a new one, whose cgroup
			 * setup says what is missing */
			s->next = misfits;
			misfits = s;
			s = NULL;
		}
	}
	if (!s) {
		/* made now, cold or warm, and the next one finds a spare */
		t->runs--;
		t->inflight--;
	} else {
		w->warm_runs++;
		w->spare_runs++;
	}
	/* The spare taken is replaced once this run ended and was answered (spare_main:
	 * SPARE_SETTLE_MS after), or at once when none is left (or none was there): making
	 * one on the CPU this run needs would be paid by its latency. */
	if (!s || !t->n_spares)
		want_spares(w);
	pthread_mutex_unlock(&w->lock);
	while (misfits) {
		struct rspare *n = misfits->next;
		spare_free(misfits, false);
		misfits = n;
	}
	if (!s)
		return 1;
	rwarm_log("warm", "spare");
	char remount[64];
	if (l->n_files)
		remount_opts(s, l, remount, sizeof(remount));
	const struct rwarm_run wr = {
	    .st = st,
	    .l = l,
	    .plan = &s->plan,
	    .cg = &s->cg,
	    .uid = s->uid,
	    .gid = s->gid,
	};
	int r;
	int go = rwarm_go_spec_memfd(&wr, l->n_files ? remount : NULL);
	if (go < 0) {
		/* (no go: the spare is let go, nothing of the run started) */
		r = govex__launch_failed(l, o, err, GOVEX_STEP_ALLOC, -go, NULL);
		spare_free(s, false);
	} else {
		r = rwarm_relay_go(s->watch, s->pidfd, go, &wr, &s->f, o, err);
		close(go);
		s->watch = s->pidfd = -1; /* (closed by the relay) */
		if (r >= 0)
			o->controls_lost = rcg_limits_lost(&s->cg);
		/* every process of the run is gone (reported), or killed now with the cgroups */
		int cr = rcg_destroy(&s->cg);
		if (r >= 0 && cr < 0)
			o->cgroup_cleanup_errno = -cr;
		spare_free(s, true);
	}
	pthread_mutex_lock(&w->lock);
	t->inflight--;
	/* a failure of the template's side retires it (as rwarm_launch does); a go that
	 * could not be made is the request's (its environment or code too large) */
	if (go >= 0 && (r < 0 || o->term == GOVEX_TERM_LAUNCH_FAILED))
		for (int k = 0; k < 2; k++)
			if (w->cur[k] == t) {
				t->next = w->retired;
				w->retired = t;
				w->cur[k] = NULL;
			}
	want_spares(w);
	rwarm_reap_retired(w);
	pthread_mutex_unlock(&w->lock);
	return r;
}
