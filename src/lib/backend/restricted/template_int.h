/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: what template.c, template_start.c and template_spare.c share (private to the
 * restricted backend's warm runs).
 */
#ifndef GOVEX_TEMPLATE_INT_H
#define GOVEX_TEMPLATE_INT_H

#include <pthread.h>

#include "restricted.h"

struct rspare;

struct rtemplate {
	pid_t pid;
	int ctl; /* host end of the control socket */
	unsigned runs, inflight;
	bool no_site;
	char *locale; /* the run environment's locale entries it was started with */
	/* spares made ahead for it (template_spare.c): released when it is stopped */
	struct rspare *spares;
	unsigned n_spares;
	struct rtemplate *next;
};

struct rwarm {
	pthread_mutex_t lock;
	/* the current template of each kind: plain runs, and runs of govex's worker (call
	 * mode, inspection: fd 3 handed in), whose template also preloads what the worker
	 * imports (a bigger template: its forks cost more, so plain runs do not pay it) */
	struct rtemplate *cur[2];
	/* each kind's successor, started ahead by the spare thread when the current one
	 * nears its recycling (template_spare.c), so that no run waits for a start */
	struct rtemplate *succ[2];
	struct rtemplate *retired;
	bool broken; /* a template could not be started: runs go cold */
	/* the host's mount table (poll: POLLPRI when it changed): a template's root holds
	 * the binds it captured when it started, so a change retires the templates */
	int mounts_fd;
	bool armed;
	/* what the plan's binds were (device, inode) when the templates started: a path
	 * the host replaced (renamed away, another put there) retires them too, as a cold
	 * run binds what is at the path now */
	struct {
		dev_t dev;
		ino_t ino;
		struct timespec ctime; /* filesystem.deny's masks only: a file removed
					* and another made may get the same inode */
	} * roots;
	size_t n_roots;
	char why[256];
	/* stats: runs forked, runs that went cold and why (a few short names) */
	unsigned long warm_runs;
	struct {
		const char *why;
		unsigned long n;
	} cold[12];
	/* spares (template_spare.c): the runtime's state, the shape of the last run of
	 * each kind (what a spare is made for), the thread that makes them */
	const struct rstate *st;
	struct rshape *shape[2];
	pthread_t spare_thread;
	pthread_cond_t spare_cond, spare_ready;
	bool spare_on, spare_stop, spare_want;
	unsigned long spare_runs;
};

/* template.c, under w->lock unless said otherwise */
struct rtemplate *rwarm_template_get(struct rwarm *w, const struct rstate *st,
				     const struct govex__launch *l, const char *key,
				     const char **why);
void rwarm_reap_retired(struct rwarm *w);
void rwarm_count_cold_locked(struct rwarm *w, const char *why);
unsigned rwarm_recycle_runs(void);
/* Stops a template (its processes killed) and releases its spares. */
void rwarm_template_stop(struct rtemplate *t);
/* (no lock) */
void rwarm_log(const char *what, const char *why);
/* GOVEX_WARM_SPARE=1 (tests): every run waits for its spare, and a spare warms up in full
 * before its go (zygote.py, _zyg_prewarm), so that the escape suite attacks those;
 * GOVEX_WARM_SPARE=bare: a spare never warms up (tests and measurements). */
bool rwarm_spare_wait(void);

/* template_start.c */
/* Starts a template (*ret) for runs like l; 0 or -errno (why says why).  No lock
 * needed. */
int rwarm_template_start(char why[256], const struct rstate *st, const struct govex__launch *l,
			 bool no_site, int kind, struct rtemplate **ret);
/* The run environment's entries that decide the interpreter's startup locale (a
 * template's key: runs whose key differs go to another template or cold). */
char *rwarm_locale_key(char *const *envp);

/* template_spare.c */
/* Releases the spares of a stopped template (its processes are gone). */
void rspares_release(struct rtemplate *t);
/* Stops the spare thread (rwarm_free, before the templates are stopped; no lock held). */
void rspares_stop(struct rwarm *w);
void rshape_free(struct rshape *sh);
/* Appends the slot numbers t's spares hold to a (a JSON array). */
void rspares_slots(const struct rtemplate *t, json_t *a);

#endif
