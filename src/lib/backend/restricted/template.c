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

extern const unsigned char govex__zygote_py[];
extern const unsigned char govex__worker_py[];
extern const size_t govex__worker_py_len;
extern const unsigned char govex__worker_inspection_py[];
extern const size_t govex__worker_inspection_py_len;
extern const size_t govex__zygote_py_len;

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

/* how long a template may take to start and warm up */
#define READY_TIMEOUT_MS      30000
#define TEMPLATE_WORKDIR_OPTS "size=4k,nr_inodes=4,mode=0700"

_Static_assert(sizeof(struct govex__shim_report) == 40, "zygote.py packs a 40-byte report");

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

static bool is_bind(enum rmount_kind k)
{
	return k == RM_BIND_RO || k == RM_BIND_RW || k == RM_BIND_DEV;
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
		if (snapshot) {
			w->roots[k].dev = ok ? sb.st_dev : 0;
			w->roots[k].ino = ok ? sb.st_ino : 0;
		} else if (k >= w->n_roots || !ok || w->roots[k].dev != sb.st_dev ||
			   w->roots[k].ino != sb.st_ino) {
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

/* The run environment's entries that decide the interpreter's startup locale. */
char *rwarm_locale_key(char *const *envp)
{
	static const char *const names[] = {"LC_ALL=", "LC_CTYPE=", "LANG="};
	size_t len = 1;
	for (size_t i = 0; envp && envp[i]; i++)
		for (size_t k = 0; k < ARRAY_SIZE(names); k++)
			if (strncmp(envp[i], names[k], strlen(names[k])) == 0)
				len += strlen(envp[i]) + 1;
	char *s = calloc(1, len);
	if (!s)
		return NULL;
	size_t off = 0;
	for (size_t k = 0; k < ARRAY_SIZE(names); k++)
		for (size_t i = 0; envp && envp[i]; i++)
			if (strncmp(envp[i], names[k], strlen(names[k])) == 0) {
				size_t n = strlen(envp[i]);
				memcpy(s + off, envp[i], n);
				s[off + n] = '\n';
				off += n + 1;
			}
	return s;
}

/* ---- the template shim (async-signal-safe, like launch.c's shim) -------------------- */

struct tstart {
	const struct rstate *st;
	struct rplan plan;
	struct rscratch scr;
	int ctl;   /* the template's end */
	int io[2]; /* its stdio: a pipe, like a run's (same buffering and seekability) */
	int ce[2];
	int dbg;   /* GOVEX_WARM_DEBUG: the host's stderr as the template's, else -1 */
	int go[2]; /* root: the host wrote the shim's identity maps (one byte) */
	const char *exe;
	char **argv, **envp;
	char *params; /* argv's last: the template's parameters (JSON) */
};

/* Not root: capabilities in the user namespace kept across execve (uid is not 0 there):
 * inheritable = permitted, then each raised as ambient. */
static int keep_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[0].inheritable = d[0].permitted;
	d[1].inheritable = d[1].permitted;
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	for (int c = 0; c < 64; c++) {
		bool has = (c < 32 ? d[0].permitted >> c : d[1].permitted >> (c - 32)) & 1;
		if (has && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0 &&
		    errno != EINVAL)
			return -errno;
	}
	return 0;
}

/* Reads the one byte of a go-ahead pipe: 0, or -errno (-ECHILD at EOF). */
static int wait_go(int fd)
{
	char b;
	ssize_t n;
	do
		n = read(fd, &b, 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : n < 0 ? -errno : -ECHILD;
}

static int write_proc(pid_t pid, const char *file, const char *data)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(data);
	return write(fd, data, n) == (ssize_t)n ? 0 : -errno;
}

/* Root: every id mapped to itself in pid's new user namespace (written from outside it:
 * only a process with CAP_SETUID in the parent namespace may map more than its own
 * id), then the go-ahead. */
static int map_identity(pid_t pid, int go)
{
	static const char all[] = "0 0 4294967295\n";
	int r = write_proc(pid, "uid_map", all);
	if (r >= 0)
		r = write_proc(pid, "gid_map", all);
	if (r >= 0 && write(go, "g", 1) != 1)
		r = -errno;
	return r;
}

/* The template's interpreter started: its stdio, "/", execve.  Returns only when one
 * of them failed: -errno, *step the one. */
static int texec(const struct tstart *t, int *ce, enum govex__step *step)
{
	int r = govex__child_stdio(t->io[0], t->io[1], t->dbg >= 0 ? t->dbg : t->io[1], t->ctl, ce,
				   step);
	if (r < 0)
		return r;
	*step = GOVEX_STEP_CHDIR;
	if ((r = govex__neg_errno(chdir("/"))) < 0)
		return r;
	*step = GOVEX_STEP_EXECVE;
	return govex__neg_errno(execve(t->exe, t->argv, t->envp));
}

/*
 * Root: the interpreter must not run with the host's root (DESIGN.md, trust boundaries:
 * what the policy names never runs on the host without a sandbox).  The template shim
 * builds the root in a first user namespace (all ids mapped to themselves: binds are
 * captured as root), then the template gets a second one, nested, with a copy of that
 * mount namespace: a copy into a less privileged user namespace locks every mount as it
 * is (read-only binds stay read-only, nothing can be unmounted to reveal what is under),
 * and the template's capabilities are that namespace's only -- no device, no module, no
 * mount of a real file system, no host resource.  The shim stays PID 1 (reaping the
 * runs' orphaned init processes) and exits with the template.
 */
static __attribute__((noreturn)) void tshim_nest(struct tstart *t, int ce)
{
	int go[2];
	int r;
	enum govex__step step = GOVEX_STEP_PIPE;
	if ((r = govex__pipe(go, 0)) < 0)
		goto fail;
	step = GOVEX_STEP_FORK;
	pid_t tp = govex__clone(0);
	if (tp < 0) {
		r = -errno;
		goto fail;
	}
	if (tp == 0) {
		close(go[1]);
		step = GOVEX_STEP_CLONE;
		if ((r = govex__neg_errno(unshare(CLONE_NEWUSER | CLONE_NEWNS))) < 0)
			goto fail;
		/* the shim sees the new namespace once this process has it */
		step = GOVEX_STEP_UID_MAP;
		if ((r = govex__neg_errno(kill(getppid(), SIGCONT))) < 0 ||
		    (r = wait_go(go[0])) < 0)
			goto fail;
		close(go[0]);
		govex__child_reset_signals();
		r = texec(t, &ce, &step);
		goto fail;
	}
	close(go[0]);
	/* wait until the child has its user namespace (SIGCONT, blocked: read by sigwait),
	 * then map it */
	sigset_t cont;
	sigemptyset(&cont);
	sigaddset(&cont, SIGCONT);
	int sig;
	step = GOVEX_STEP_UID_MAP;
	if ((r = -sigwait(&cont, &sig)) < 0 || (r = map_identity(tp, go[1])) < 0) {
		kill(tp, SIGKILL);
		goto fail;
	}
	close(go[1]);
	close(ce);
	close(t->ctl);
	close(t->io[0]);
	close(t->io[1]);
	for (;;) {
		int wst;
		pid_t got = waitpid(-1, &wst, __WALL);
		if (got == tp || (got < 0 && errno != EINTR))
			_exit(0); /* the template is gone: so is its PID namespace */
	}
fail:
	govex__child_fail(ce, step, r < 0 ? -r : EPERM);
	_exit(127);
}

static __attribute__((noreturn)) void tshim(struct tstart *t)
{
	enum govex__step step = GOVEX_STEP_SHIM;
	int ce = t->ce[1];
	int r;
	govex__child_reset_signals();
	int keep[] = {t->ctl, t->io[0], t->io[1], t->ce[1], t->dbg, t->go[0]};
	govex__close_fds_except(3, keep, ARRAY_SIZE(keep));
	if (t->st->userns && (r = rns_write_maps(t->st->uid_map, t->st->gid_map, &step)) < 0)
		goto fail;
	step = GOVEX_STEP_UID_MAP;
	if (!t->st->userns && (r = wait_go(t->go[0])) < 0)
		goto fail;
	if (t->go[0] >= 0)
		close(t->go[0]);
	int sfd = rns_shim_enter(&t->plan, &t->scr, &step);
	if ((r = sfd) < 0)
		goto fail;
	close(sfd);
	if (!t->st->userns) {
		/* SIGCHLD stays blocked (waitpid reaps); SIGCONT blocked for sigwait */
		sigset_t cont;
		sigemptyset(&cont);
		sigaddset(&cont, SIGCONT);
		sigprocmask(SIG_BLOCK, &cont, NULL);
		tshim_nest(t, ce);
	}
	govex__child_reset_signals(); /* SIGCHLD unblocked: the template reaps its own */
	step = GOVEX_STEP_CAPS;
	if (t->st->userns && (r = keep_caps()) < 0)
		goto fail;
	r = texec(t, &ce, &step);
fail:
	govex__child_fail(ce, step, r < 0 ? -r : EPERM);
	_exit(127);
}

/* ---- starting one ------------------------------------------------------------------ */

static void tstart_release(struct tstart *t)
{
	int *fds[] = {&t->ctl, &t->io[0], &t->io[1], &t->ce[0], &t->ce[1], &t->go[0], &t->go[1]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	rscratch_free(&t->scr);
	rplan_free(&t->plan);
	if (t->envp)
		for (size_t i = 0; t->envp[i]; i++)
			free(t->envp[i]);
	free(t->envp);
	free(t->argv);
	free(t->params);
}

/* Waits until fd is readable or timeout_ms passes: 1 readable, 0 timeout, -errno. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t end = govex__now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		uint64_t now = govex__now_ns();
		int left = now >= end ? 0 : (int)((end - now) / 1000000ULL);
		int n = poll(&p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : n > 0;
	}
}

/* The template's argv and environment: the run's interpreter flags and locale. */
static int tstart_args(struct tstart *t, const struct govex__launch *l, bool no_site, int kind,
		       const struct rfilter *guard)
{
	static const char *const names[] = {"LC_ALL=", "LC_CTYPE=", "LANG="};
	size_t ne = 0;
	for (size_t i = 0; l->envp && l->envp[i]; i++)
		ne++;
	t->envp = calloc(ne + 1, sizeof(char *));
	t->argv = calloc(8, sizeof(char *));
	json_t *keys = json_array();
	if (!t->envp || !t->argv || !keys) {
		json_decref(keys);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; l->envp && l->envp[i]; i++)
		for (size_t k = 0; k < ARRAY_SIZE(names); k++)
			if (strncmp(l->envp[i], names[k], strlen(names[k])) == 0) {
				t->envp[n++] = strdup(l->envp[i]);
				json_array_append_new(keys,
						      json_stringn(names[k], strlen(names[k]) - 1));
			}
	/* the parameters: the locale's names, the seccomp programs (built once per
	 * runtime, loaded by every run's program) */
	json_t *guards = json_array();
	json_array_append_new(guards, rwarm_hex(guard->insns, guard->len * sizeof(*guard->insns)));
	/* netns: under network: deny, each run's own network namespace (made ahead with its
	 * other namespaces): in one shared namespace concurrent runs would see each other's
	 * unix sockets in /proc/self/net/unix, whatever Landlock scopes */
	/* preload: the policy's python.preload, imported by the template (zygote.py) */
	json_t *params = json_pack(
	    "{s:o, s:b, s:o, s:o, s:b, s:o}", "keys", keys, "worker", kind == 1, "guards", guards,
	    "filter",
	    rwarm_hex(t->st->filter.insns, t->st->filter.len * sizeof(*t->st->filter.insns)),
	    "netns", t->st->deny_net, "preload",
	    govex__strv_json(l->policy ? l->policy->preload : NULL));
	char *kj = params ? json_dumps(params, JSON_COMPACT) : NULL;
	json_decref(params); /* freed by the caller once the template is started */
	size_t a = 0;
	t->exe = govex__launch_exe(l); /* a venv's python: the planned file */
	t->argv[a++] = l->argv[0];
	t->argv[a++] = (char *)"-I";
	if (no_site)
		t->argv[a++] = (char *)"-S";
	t->argv[a++] = (char *)"-c";
	t->argv[a++] = (char *)govex__zygote_py;
	t->argv[a++] = kj;
	t->argv[a] = NULL;
	t->params = kj;
	return kj ? 0 : -ENOMEM;
}

extern const unsigned char govex__zyg_so[];
extern const size_t govex__zyg_so_len;

/* A memfd holding len bytes of data (sealed: nothing can change it once handed over). */
static int sealed_memfd(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* govex's own worker texts (call mode and inspection, as call.c runs them), for the
 * template to compile once: a run whose code is byte for byte one of them execs the
 * compiled code instead of compiling it again; and the template's C side (zyg.c, a
 * shared object the interpreter loads from the memfd).  Sent as two memfds after
 * READY. */
static int send_texts(int ctl)
{
	size_t a = govex__worker_inspection_py_len, b = govex__worker_py_len;
	char *insp = malloc(a + 1 + b);
	if (!insp)
		return -ENOMEM;
	memcpy(insp, govex__worker_inspection_py, a);
	insp[a] = '\n';
	memcpy(insp + a + 1, govex__worker_py, b);
	json_t *texts =
	    json_pack("[s#s#]", (const char *)govex__worker_py, (int)b, insp, (int)(a + 1 + b));
	free(insp);
	_cleanup_free_ char *js = texts ? json_dumps(texts, JSON_COMPACT) : NULL;
	json_decref(texts);
	if (!js)
		return -ENOMEM;
	int fds[2] = {sealed_memfd("govex-warm-texts", js, strlen(js)),
		      sealed_memfd("govex-zyg", govex__zyg_so, govex__zyg_so_len)};
	int r = fds[0] < 0 ? fds[0] : fds[1] < 0 ? fds[1] : 0;
	if (r == 0)
		r = rwarm_send_fds(ctl, 'P', fds, 2,
				   govex__now_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000ULL);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

int rwarm_template_start(char why[256], const struct rstate *st, const struct govex__launch *l,
			 bool no_site, int kind, struct rtemplate **ret)
{
	struct tstart t = {
	    .st = st, .ctl = -1, .io = {-1, -1}, .ce = {-1, -1}, .dbg = -1, .go = {-1, -1}};
	int sp[2] = {-1, -1};
	int r;
	const char *d = secure_getenv("GOVEX_WARM_DEBUG");
	if (d && *d == '1')
		t.dbg = STDERR_FILENO;
	/* the identity files are placeholders (mount points): each run binds its own over
	 * them (zygote.py, _Run.enter) */
	if ((r = tstart_args(&t, l, no_site, kind, &st->guard)) < 0 ||
	    (r = rplan_for_run(&st->plan, l->workdir, TEMPLATE_WORKDIR_OPTS, t.exe, NULL,
			       &t.plan)) < 0 ||
	    (r = rplan_add_identity(&t.plan, 65534, 65534, l->workdir,
				    l->policy && l->policy->shell)) < 0 ||
	    (r = rscratch_alloc(&t.scr, t.plan.n)) < 0 ||
	    (r = govex__neg_errno(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp))) < 0 ||
	    (r = govex__pipe(t.io, 0)) < 0 || (r = govex__pipe(t.ce, 0)) < 0 ||
	    (!st->userns && (r = govex__pipe(t.go, 0)) < 0)) {
		snprintf(why, 256, "template: setup: %s", strerror(-r));
		goto out;
	}
	t.ctl = sp[1];
	/* a user namespace also as root (tshim_nest) */
	pid_t pid = govex__clone(rns_flags(true, st->deny_net));
	if (pid == 0)
		tshim(&t);
	if (pid < 0) {
		r = -errno;
		snprintf(why, 256, "template: clone: %s", strerror(-r));
		goto out;
	}
	close(t.ce[1]);
	t.ce[1] = -1;
	/* the template's end is its own now: its exit reads as EOF here at once */
	close(t.ctl);
	t.ctl = -1;
	if (!st->userns && (r = map_identity(pid, t.go[1])) < 0)
		snprintf(why, 256, "template: identity maps: %s", strerror(-r));
	if (t.go[1] >= 0) {
		close(t.go[1]); /* (a shim still waiting reads EOF and fails) */
		t.go[1] = -1;
	}
	struct govex__child_error ce = {0};
	ssize_t n = 0;
	if (wait_readable(t.ce[0], READY_TIMEOUT_MS) > 0)
		n = read(t.ce[0], &ce, sizeof(ce));
	char ready[8] = {0};
	if (r < 0) {
		/* the maps could not be written: why says so */
	} else if (n == (ssize_t)sizeof(ce)) {
		r = -(ce.err ? ce.err : EPERM);
		snprintf(why, 256, "template: %s: %s", govex__step_name((enum govex__step)ce.step),
			 strerror(-r));
	} else if (wait_readable(sp[0], READY_TIMEOUT_MS) <= 0 ||
		   recv(sp[0], ready, sizeof(ready), 0) != 5 || memcmp(ready, "READY", 5) != 0) {
		r = -ECHILD;
		snprintf(why, 256, "template: the interpreter did not start");
	} else if ((r = send_texts(sp[0])) < 0) {
		snprintf(why, 256, "template: worker texts: %s", strerror(-r));
	} else {
		struct rtemplate *tp = calloc(1, sizeof(*tp));
		char *key = rwarm_locale_key(l->envp);
		if (tp && key) {
			tp->pid = pid;
			tp->ctl = sp[0];
			sp[0] = -1;
			tp->no_site = no_site;
			tp->locale = key;
			*ret = tp;
			r = 0;
			goto out;
		}
		free(tp);
		free(key);
		r = -ENOMEM;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
out:
	if (sp[0] >= 0)
		close(sp[0]);
	tstart_release(&t);
	return r;
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
	return proto ? rwarm_start(w, st, proto, err) : 0;
}

void rwarm_state_stats(void *state, json_t *warm)
{
	struct rstate *st = state;
	struct rwarm *w = st ? __atomic_load_n(&st->warm, __ATOMIC_ACQUIRE) : NULL;
	if (w)
		rwarm_stats(w, warm);
}
