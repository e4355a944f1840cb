/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: starting one template (template.c has the whole picture).  The template
 * shim -- cloned like a cold run's shim, always with a user namespace, the read-only root
 * built from the run plan with a placeholder workdir, the interpreter exec'd as PID 1 with
 * the user namespace's capabilities kept (tshim), or as root in a nested user namespace
 * (tshim_nest) -- then the host's side: the shim's step errors read, READY awaited, the
 * zyg module and the worker's texts handed over as sealed memfds.  The template it
 * returns is template.c's to keep, retire and stop.
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

_Static_assert(sizeof(struct govex__shim_report) == 40, "zygote.py packs a 40-byte report");

/* how long a template may take to start and warm up */
#define READY_TIMEOUT_MS      30000
#define TEMPLATE_WORKDIR_OPTS "size=4k,nr_inodes=4,mode=0700"

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
