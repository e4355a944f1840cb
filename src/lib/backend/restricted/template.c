/* SPDX-License-Identifier: MIT */
/*
 * Warm runs (DESIGN.md "Warm runs"): a template per runtime and policy, forked per run.
 *
 * The template (src/worker/zygote.py, embedded) is an interpreter started once, with the
 * run's own interpreter flags, inside the sandbox's outer layers: the template shim is
 * cloned like a cold run's shim (mount, PID, IPC, UTS, network under network: deny) but
 * always with a user namespace, builds the same read-only root (rns_shim_enter on the
 * run plan with a placeholder workdir) and starts the interpreter.  Not root: the shim
 * execs it as PID 1, keeping its capabilities in the user namespace across execve as
 * ambient capabilities.  Root: the interpreter gets a nested user namespace with a copy
 * of the mount namespace, which locks every mount (tshim_nest), and the shim stays PID
 * 1.  Either way its capabilities are a user namespace's, never the host's; every run's
 * program drops them all (bounding set, ambient, inheritable, permitted, effective)
 * before the code runs.  The template imports and warms part of the standard library
 * and never runs user code.  Two kinds per runtime: plain runs, and govex's worker runs
 * (call mode, inspection: fd 3 handed in) whose template also preloads what the worker
 * imports and has the worker's texts compiled.
 *
 * Per run the host does what a cold run does (slot, plan, identity files, cgroups, pipes)
 * but makes no process: in place of a shim's clone the host's thread (template_relay.c)
 * hands the run's descriptors (its pipes, its cgroup files, a memfd with the run's spec,
 * zyg_spec.h) over a SOCK_SEQPACKET socket to one of the run inits the template made
 * ahead, places the run's files, and after the run collects the outputs.  The template's
 * side is C (zyg.c, a libc-only shared object embedded here and loaded by the
 * interpreter from a memfd): its inits are clones of the interpreter (sharing its
 * memory) into mount, PID,
 * IPC and UTS namespaces of their own (and a network namespace from a pool, one run at
 * a time, kept only while it holds no socket), each with its program child forked and
 * waiting.  The init reads the spec (the template itself never reads a run's data),
 * mounts the run's own places; the program takes the cold program child's steps
 * (seccomp guard with a listener the init answers: denials refused and counted as cold)
 * and returns to the interpreter, which runs the code; the init writes the shim report
 * to the run's report pipe like a cold shim.  Supervision (deadline, output bounds,
 * cancellation, the kill request) is supervise.c's, unchanged; its last resort SIGKILLs
 * the init through the pidfd the init sent (ending the run's PID namespace).
 *
 * Starting a template (its shim, the interpreter's exec, READY, the texts handed over) is
 * template_start.c's; the host's side of a run's hand-over is template_relay.c's.
 *
 * Spares (template_spare.c): a thread of the runtime makes runs ahead of their requests,
 * shaped like the last run of each kind: a slot with its cgroups, pipes, and an init and
 * program child that took every step of their own up to the allowlist (a deferred spec:
 * nothing of any request in it) and wait for the go, which carries the run's own
 * environment, argv, code, files and call mode's descriptor.  The thread also starts a
 * template's successor before the template is recycled.
 *
 * Shared by the runs of one template, by construction: the address-space layout of what
 * the template mapped, and the str/bytes hash seed.  A template is retired after
 * RECYCLE_RUNS runs (re-randomizing both) and when its interpreter flags or locale do
 * not match a run's (that run goes cold).  Under network: deny every run has a network
 * namespace of its own while it runs (in the template's one, concurrent runs would see
 * each other's unix sockets in /proc/self/net/unix); one is reused by a later run only
 * when the run before it left no socket at all (/proc/net/sockstat, /proc/net/unix) and
 * its loopback down.
 *
 * A template that cannot be started is reported once (the reason kept) and the runtime
 * goes on cold: warm runs are a speed-up, never a different sandbox.
 *
 * Known differences a program can see (DESIGN.md deviations, documented): its
 * /proc/self/cmdline and environ are the template's (os.environ, sys.argv and
 * sys.orig_argv are the run's; PR_SET_MM would need CAP_SYS_RESOURCE in the initial user
 * namespace); modules other than __main__ are not torn down at exit (threads, atexit,
 * flushing, __main__'s globals' __del__ and exit statuses are python's); code that is
 * not UTF-8 is decoded with surrogateescape; as root the run is two user namespaces deep
 * (every id mapped to itself, as the uid_map a cold run reads); pages shared with the
 * template are charged to the host's memory cgroup, not the run's (RLIMIT_AS counts
 * them as cold); sys.modules holds the template's preloaded standard modules.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "restricted.h"
#include "template_int.h"

/* runs per template before it is replaced (hash seed and layout re-randomized) */
#define RECYCLE_RUNS 512
/* GOVEX_WARM_RECYCLE=N (tests): retire templates after N runs; it can only lower
 * RECYCLE_RUNS */
unsigned rwarm_recycle_runs(void)
{
	const char *e = secure_getenv("GOVEX_WARM_RECYCLE");
	unsigned long v = e ? strtoul(e, NULL, 10) : 0;
	return v >= 1 && v < RECYCLE_RUNS ? (unsigned)v : RECYCLE_RUNS;
}

/* Whether the host's mount table changed since the last look (reads it to the end:
 * that re-arms the event).  Unknown (no /proc): false. */
static bool mounts_changed(struct rwarm *w)
{
	if (w->mounts_fd < 0)
		return false;
	struct pollfd p = {.fd = w->mounts_fd, .events = POLLPRI};
	bool changed = poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR));
	if (changed || !w->armed) {
		char buf[4096];
		lseek(w->mounts_fd, 0, SEEK_SET);
		while (read(w->mounts_fd, buf, sizeof(buf)) > 0)
			;
		w->armed = true;
	}
	return changed;
}

/* what the template's root holds from the host's paths: its binds, and filesystem.deny's
 * masks and pins (a denied path the host replaced or removed since the template masked
 * it retires the template: its mount would no longer be on that path) */
static bool is_bind(enum rmount_kind k)
{
	return k == RM_BIND_RO || k == RM_BIND_RW || k == RM_BIND_DEV || k == RM_PIN ||
	       k == RM_DENY_DIR || k == RM_DENY_FILE;
}

/* Records (snapshot) or compares with the record what is at the plan's bind paths now;
 * true when something differs (or cannot be looked at). */
static bool roots_changed(struct rwarm *w, const struct rstate *st, bool snapshot)
{
	const struct rplan *pl = &st->plan;
	if (snapshot) {
		free(w->roots);
		w->n_roots = 0;
		if (!(w->roots = calloc(pl->n ? pl->n : 1, sizeof(*w->roots))))
			return true;
	}
	size_t k = 0;
	for (size_t i = 0; i < pl->n; i++) {
		if (!is_bind(pl->m[i].kind))
			continue;
		struct stat sb;
		bool ok = fstatat(AT_FDCWD, pl->m[i].path, &sb, AT_SYMLINK_NOFOLLOW) == 0;
		/* a mask's path: its change time too (a new file there may reuse the
		 * removed one's inode; the mask stayed on the old) */
		bool mask = pl->m[i].kind == RM_DENY_DIR || pl->m[i].kind == RM_DENY_FILE;
		struct timespec ct = ok && mask ? sb.st_ctim : (struct timespec){0};
		if (snapshot) {
			w->roots[k].dev = ok ? sb.st_dev : 0;
			w->roots[k].ino = ok ? sb.st_ino : 0;
			w->roots[k].ctime = ct;
		} else if (k >= w->n_roots || !ok || w->roots[k].dev != sb.st_dev ||
			   w->roots[k].ino != sb.st_ino || w->roots[k].ctime.tv_sec != ct.tv_sec ||
			   w->roots[k].ctime.tv_nsec != ct.tv_nsec) {
			return true;
		}
		k++;
	}
	if (snapshot)
		w->n_roots = k;
	return !snapshot && k != w->n_roots;
}

int rwarm_new(struct rwarm **ret)
{
	struct rwarm *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->spare_cond, NULL);
	pthread_cond_init(&w->spare_ready, NULL);
	w->mounts_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	mounts_changed(w);
	*ret = w;
	return 0;
}

void rwarm_template_stop(struct rtemplate *t)
{
	if (t->ctl >= 0)
		close(t->ctl);
	if (t->pid > 0) {
		/* PID 1 of its namespace: every process of it goes too */
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	/* its spares' processes went with it: their slots and cgroups are free now */
	rspares_release(t);
	free(t->locale);
	free(t);
}

void rwarm_free(struct rwarm *w)
{
	if (!w)
		return;
	rspares_stop(w);
	for (int k = 0; k < 2; k++) {
		if (w->cur[k])
			rwarm_template_stop(w->cur[k]);
		if (w->succ[k])
			rwarm_template_stop(w->succ[k]);
	}
	while (w->retired) {
		struct rtemplate *n = w->retired->next;
		rwarm_template_stop(w->retired);
		w->retired = n;
	}
	if (w->mounts_fd >= 0)
		close(w->mounts_fd);
	free(w->roots);
	for (int k = 0; k < 2; k++)
		rshape_free(w->shape[k]);
	pthread_cond_destroy(&w->spare_cond);
	pthread_cond_destroy(&w->spare_ready);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

const char *rwarm_ineligible(const struct govex__launch *l, bool wd_tmpfs)
{
	/* (call mode's and REPL runs' fd 3 is handed over like the pipes) */
	if (l->extra_ro)
		return "extra_files";
	/* filtered networking: the proxy's listener is made by a cold run's shim */
	if (l->policy && l->policy->net_allow)
		return "network_allowlist";
	if (!wd_tmpfs)
		return "host_workdir";
	size_t n = 0;
	while (l->argv[n])
		n++;
	if ((n != 4 && n != 5) || strcmp(l->argv[1], "-I") != 0 ||
	    (n == 5 && strcmp(l->argv[2], "-S") != 0) || strcmp(l->argv[n - 2], "-c") != 0)
		return "argv";
	return NULL;
}

/* Under w->lock. */
void rwarm_count_cold_locked(struct rwarm *w, const char *why)
{
	for (size_t i = 0; i < ARRAY_SIZE(w->cold); i++)
		if (!w->cold[i].why || strcmp(w->cold[i].why, why) == 0) {
			w->cold[i].why = why;
			w->cold[i].n++;
			return;
		}
}

/* ---- a warm run ----------------------------------------------------------------------- */

static bool template_alive(struct rtemplate *t)
{
	int wst;
	if (t->pid <= 0)
		return false;
	pid_t p = waitpid(t->pid, &wst, WNOHANG | __WALL);
	if (p == t->pid)
		t->pid = 0; /* reaped: nothing left to kill */
	if (p != 0)
		return false;
	/* the interpreter may be gone while its shim still tears its namespace down: its
	 * end of the control socket is closed then (it never writes after READY) */
	struct pollfd pf = {.fd = t->ctl, .events = POLLIN};
	return poll(&pf, 1, 0) == 0;
}

/* Stops the retired templates no run uses any more. */
void rwarm_reap_retired(struct rwarm *w)
{
	struct rtemplate **pp = &w->retired;
	while (*pp) {
		struct rtemplate *t = *pp;
		if (t->inflight == 0) {
			*pp = t->next;
			rwarm_template_stop(t);
		} else {
			pp = &t->next;
		}
	}
}

/* The template for this run, counted in flight; NULL: the run goes cold (*why says
 * why: a static short name).  Under w->lock. */
struct rtemplate *rwarm_template_get(struct rwarm *w, const struct rstate *st,
				     const struct govex__launch *l, const char *key,
				     const char **why)
{
	bool no_site = l->argv[2] && strcmp(l->argv[2], "-S") == 0;
	int kind = l->extra_fd >= 0;
	/* (every kind: a dead template of the other is reaped here too; a change of the
	 * host's mounts retires both: a volume unmounted from under a read root must not
	 * stay readable through a template's root) */
	bool remount = mounts_changed(w);
	if (!remount && (w->cur[0] || w->cur[1]))
		remount = roots_changed(w, st, false);
	for (int k = 0; k < 2; k++) {
		struct rtemplate **c = &w->cur[k];
		if (*c && (remount || (k == kind && (*c)->runs >= rwarm_recycle_runs()) ||
			   !template_alive(*c))) {
			(*c)->next = w->retired;
			w->retired = *c;
			*c = NULL;
		}
		/* a successor started ahead (template_spare.c) holds the same root */
		struct rtemplate **n = &w->succ[k];
		if (*n && (remount || !template_alive(*n))) {
			(*n)->next = w->retired;
			w->retired = *n;
			*n = NULL;
		}
	}
	rwarm_reap_retired(w);
	struct rtemplate **cur = &w->cur[kind];
	if (!*cur && w->succ[kind] && w->succ[kind]->no_site == no_site &&
	    strcmp(w->succ[kind]->locale, key) == 0) {
		/* the one started ahead takes over: no run waits for a template's start */
		*cur = w->succ[kind];
		w->succ[kind] = NULL;
	}
	if (!*cur && !w->cur[!kind])
		roots_changed(w, st, true); /* what the templates started now will hold */
	if (!*cur && !w->broken && rwarm_template_start(w->why, st, l, no_site, kind, cur) < 0)
		w->broken = true;
	if (!*cur) {
		*why = "template_failed";
		return NULL;
	}
	if ((*cur)->no_site != no_site) {
		*why = "interpreter_flags";
		return NULL;
	}
	if (strcmp((*cur)->locale, key) != 0) {
		*why = "locale";
		return NULL;
	}
	(*cur)->runs++;
	(*cur)->inflight++;
	return *cur;
}

/* GOVEX_WARM_LOG=FILE: one line per run a warm runtime was asked for, "warm" or "cold
 * <why>" (diagnostics: which runs of a test suite really were forked). */
void rwarm_log(const char *what, const char *why)
{
	const char *p = secure_getenv("GOVEX_WARM_LOG");
	if (!p || !*p)
		return;
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	dprintf(fd, "%s%s%s\n", what, why && *why ? " " : "", why && *why ? why : "");
	close(fd);
}

int rwarm_launch(struct rwarm *w, const struct rwarm_run *r, struct govex__pipes *f,
		 struct govex__outcome *o, struct govex_error *err)
{
	char *key = rwarm_locale_key(r->l->envp);
	const char *why = "out_of_memory";
	struct rtemplate *t = NULL;
	pthread_mutex_lock(&w->lock);
	if (key)
		t = rwarm_template_get(w, r->st, r->l, key, &why);
	if (t)
		w->warm_runs++;
	else
		rwarm_count_cold_locked(w, why);
	pthread_mutex_unlock(&w->lock);
	free(key);
	rwarm_log(t ? "warm" : "cold", t ? NULL : why);
	if (!t)
		return 1;
	int r_ = 0;
	int spec = rwarm_spec_memfd(r);
	if (spec < 0) {
		r_ = govex__launch_failed(r->l, o, err, GOVEX_STEP_ALLOC, -spec, NULL);
	} else {
		r_ = rwarm_relay_run(t->ctl, spec, r, f, o, err);
		close(spec);
	}
	pthread_mutex_lock(&w->lock);
	t->inflight--;
	/* a warm run that failed to launch, or whose init ended without its report (killed
	 * with the template, say), retires its template: a template that is dying may still
	 * look alive to template_alive() (its shim waits for the namespace's processes,
	 * the control socket stays open while an init holds it), and the next run must not
	 * be handed to it */
	if (r_ < 0 || o->term == GOVEX_TERM_LAUNCH_FAILED)
		for (int k = 0; k < 2; k++)
			if (w->cur[k] == t) {
				t->next = w->retired;
				w->retired = t;
				w->cur[k] = NULL;
			}
	rwarm_reap_retired(w);
	pthread_mutex_unlock(&w->lock);
	return r_;
}

void rwarm_count_cold(struct rwarm *w, const char *reason)
{
	pthread_mutex_lock(&w->lock);
	rwarm_count_cold_locked(w, reason);
	pthread_mutex_unlock(&w->lock);
	rwarm_log("cold", reason);
}

int rwarm_start(struct rwarm *w, const struct rstate *st, const struct govex__launch *proto,
		struct govex_error *err)
{
	char *key = rwarm_locale_key(proto->envp);
	if (!key)
		return govex__err(err, ENOMEM, ENOMEM, "warm runs: out of memory");
	const char *why = "no template";
	bool ready = true;
	pthread_mutex_lock(&w->lock);
	w->broken = false; /* asked again: try again */
	for (int kind = 0; kind < 2 && ready; kind++) {
		struct govex__launch l = *proto;
		l.extra_fd = kind ? 3 : -1; /* (only its kind is read) */
		struct rtemplate *t = rwarm_template_get(w, st, &l, key, &why);
		if (t) {
			/* not a run: undo the count */
			t->runs--;
			t->inflight--;
		}
		ready = t != NULL;
	}
	free(key);
	int r = 0;
	if (!ready)
		r = govex__err(err, EAGAIN, EAGAIN, "warm runs: %s", w->broken ? w->why : why);
	pthread_mutex_unlock(&w->lock);
	return r;
}

void rwarm_stats(struct rwarm *w, json_t *warm)
{
	pthread_mutex_lock(&w->lock);
	int n = 0;
	bool ready = true;
	for (int k = 0; k < 2; k++) {
		n += w->cur[k] != NULL;
		ready &= w->cur[k] != NULL;
	}
	for (struct rtemplate *t = w->retired; t; t = t->next)
		n++;
	for (int k = 0; k < 2; k++)
		n += w->succ[k] != NULL;
	json_t *reasons = json_object();
	for (size_t i = 0; i < ARRAY_SIZE(w->cold) && w->cold[i].why; i++)
		json_object_set_new(reasons, w->cold[i].why,
				    json_integer((json_int_t)w->cold[i].n));
	json_object_set_new(warm, "enabled", json_true());
	json_object_set_new(warm, "ready", json_boolean(ready && !w->broken));
	json_object_set_new(warm, "templates", json_integer(n));
	json_object_set_new(warm, "warm_runs", json_integer((json_int_t)w->warm_runs));
	json_t *slots = json_array();
	for (int k = 0; k < 2; k++)
		if (w->cur[k])
			rspares_slots(w->cur[k], slots);
	json_object_set_new(warm, "spares", json_integer((json_int_t)json_array_size(slots)));
	json_object_set_new(warm, "spare_slots", slots);
	json_object_set_new(warm, "spare_runs", json_integer((json_int_t)w->spare_runs));
	json_object_set_new(warm, "cold_reasons", reasons);
	if (w->broken)
		json_object_set_new(warm, "why", json_string(w->why));
	pthread_mutex_unlock(&w->lock);
}

/* govex_runtime_warm: templates for runs shaped like proto */
int rwarm_enable(void *state, const struct govex__launch *proto, struct govex_error *err)
{
	struct rstate *st = state;
	struct rwarm *w = __atomic_load_n(&st->warm, __ATOMIC_ACQUIRE);
	if (!w) {
		struct rwarm *nw = NULL;
		if (rwarm_new(&nw) < 0)
			return govex__err(err, ENOMEM, ENOMEM, "restricted: out of memory");
		if (__atomic_compare_exchange_n(&st->warm, &w, nw, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			w = nw;
		else
			rwarm_free(nw); /* another thread's won (w is it) */
	}
	pthread_mutex_lock(&w->lock);
	w->st = st;
	pthread_mutex_unlock(&w->lock);
	/* (filtered networking: every run is cold, no template would serve one) */
	return proto && !st->filter_net ? rwarm_start(w, st, proto, err) : 0;
}

void rwarm_state_stats(void *state, json_t *warm)
{
	struct rstate *st = state;
	struct rwarm *w = st ? __atomic_load_n(&st->warm, __ATOMIC_ACQUIRE) : NULL;
	if (w)
		rwarm_stats(w, warm);
}
