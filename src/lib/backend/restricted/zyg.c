/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C (DESIGN.md "Warm runs"; template.c has the whole
 * picture).  Built as a small shared object with no dependency but libc, embedded in the
 * library, handed to the template as a memfd after READY and loaded by zygote.py with
 * ctypes.PyDLL (the GIL held: the interpreter is quiescent while this code forks it).
 * govex_zyg_serve() is the template's loop from then on: it never returns in the
 * template, and returns 0 in a run's program process, its layers entered, for
 * zygote.py to run the code.
 *
 * Per template (T), made ahead, SPARES at a time, each replaced once taken:
 *   B  clone3 of T into new mount, PID, IPC and UTS namespaces (and, under network:
 *      deny, a network namespace from T's pool): PID 1 of a future run.  Forks P and
 *      waits on the control socket for one run's descriptors (SCM_RIGHTS; the kernel
 *      gives each message to one B).
 *   P  PID 2, the program: Python's after-fork handlers run at once (PyOS_AfterFork_Child,
 *      as os.fork); its own session; waits for B.
 * Per run (every step before any user code, each failure reported as {step, errno} on
 * the run's error pipe like a cold launch's):
 *   B  hands the descriptors to P, mounts the run's identity files, /tmp, workdir and
 *      proc, has the host place the files in (or makes the output directory), tells P
 *      to go on; then keeps the CPU budget and the host's kill request, answers P's
 *      seccomp notifications (denials counted), reaps, kills the namespace (it is its
 *      PID 1) and writes the shim report.
 *   P  joins the run's cgroups, cgroup namespace, seccomp guard (its listener to B),
 *      stdio, chdir, no_new_privs, Landlock, ids and capabilities dropped, rlimits, the
 *      seccomp allowlist -- the cold program child's order -- and returns.
 * T never reads a run's spec: only B and P do, after the run's message came, so nothing
 * of one run is in what a later run inherits.
 *
 * Network namespaces (network: deny): made by T once and reused, one run at a time each:
 * T gets a run's namespace back when its B has ended (every process of the run killed
 * and reaped), and keeps it only when it holds no socket at all and its loopback is down
 * (a socket left in flight would be a channel to the next run); otherwise it is dropped
 * and a new one made.  Creating and destroying a network namespace per run costs more
 * than the rest of a warm run's namespaces together (measured: ~1.5 ms of CPU).
 *
 * Everything here runs in a fork of an interpreter: no allocation after a fork, no stdio,
 * only system calls and the few libc functions that wrap them.
 */
#include "zyg_int.h"

/* ---- T: the template's loop --------------------------------------------------------------- */

struct kid {
	int pidfd, taken, netfd;
	bool spare;
};

struct tmpl {
	const struct zyg_params *p;
	struct kid *kids;
	size_t n, cap, spares;
	int *free_net;
	size_t n_free, cap_free;
	int own_net; /* T's own network namespace */
};

/* A new network namespace (its descriptor), T staying in its own. */
static int netns_new(struct tmpl *t)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int e = fd < 0 ? -errno : 0;
	if (setns(t->own_net, CLONE_NEWNET) < 0)
		_exit(1); /* T in a namespace not its own: nothing of it can go on */
	return fd < 0 ? e : fd;
}

/* Whether the namespace holds nothing of a run: no socket of any kind, no unix socket
 * listed (one in flight included), the loopback down. */
static bool netns_clean(struct tmpl *t, int fd)
{
	if (setns(fd, CLONE_NEWNET) < 0)
		return false;
	bool clean = false;
	char buf[8192];
	int f = open("/proc/self/net/sockstat", O_RDONLY | O_CLOEXEC);
	ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (f >= 0)
		close(f);
	if (n > 0) {
		buf[n] = '\0';
		clean = strncmp(buf, "sockets: used 0\n", 16) == 0;
	}
	if (clean) {
		clean = false;
		f = open("/proc/self/net/unix", O_RDONLY | O_CLOEXEC);
		n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
		if (f >= 0)
			close(f);
		if (n > 0) {
			buf[n] = '\0';
			char *nl = strchr(buf, '\n');
			clean = nl && nl[1] == '\0'; /* the header alone */
		}
	}
	if (clean) {
		int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr;
		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, "lo", 3);
		clean = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP);
		if (s >= 0)
			close(s);
	}
	if (setns(t->own_net, CLONE_NEWNET) < 0)
		_exit(1);
	return clean;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *np = realloc(*p, nc * elem);
	if (!np)
		return false;
	*p = np;
	*cap = nc;
	return true;
}

/* Makes one spare; returns 0 in T, 1 in P (out filled), -errno. */
static int spare_make(struct tmpl *t, struct zyg_out *out)
{
	const struct zyg_params *p = t->p;
	if (!grow((void **)&t->kids, &t->cap, t->n + 1, sizeof(*t->kids)) ||
	    !grow((void **)&t->free_net, &t->cap_free, t->n + t->n_free + 1, sizeof(int)))
		return -ENOMEM;
	int tp[2];
	if (pipe2(tp, O_CLOEXEC) < 0)
		return -errno;
	int netfd = -1;
	if (p->netns) {
		if (t->n_free)
			netfd = t->free_net[--t->n_free];
		else if ((netfd = netns_new(t)) < 0) {
			close(tp[0]);
			close(tp[1]);
			return netfd;
		}
	}
	int pidfd = -1;
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		close(tp[0]);
		init_main(p, tp[1], netfd, out);
		return 1; /* in P */
	}
	int e = -errno;
	close(tp[1]);
	if (pid < 0) {
		close(tp[0]);
		if (netfd >= 0)
			t->free_net[t->n_free++] = netfd;
		return e;
	}
	t->kids[t->n++] =
	    (struct kid){.pidfd = pidfd, .taken = tp[0], .netfd = netfd, .spare = true};
	t->spares++;
	return 0;
}

/* A kid ended: reaped; its network namespace back in the pool when it is clean. */
static void kid_end(struct tmpl *t, size_t i)
{
	struct kid *k = &t->kids[i];
	siginfo_t si;
	while (waitid((idtype_t)P_PIDFD, (id_t)k->pidfd, &si, WEXITED | WALL) < 0 && errno == EINTR)
		;
	close(k->pidfd);
	if (k->spare) {
		t->spares--;
		closep(&k->taken);
	}
	if (k->netfd >= 0) {
		if (netns_clean(t, k->netfd))
			t->free_net[t->n_free++] = k->netfd;
		else
			close(k->netfd);
	}
	t->kids[i] = t->kids[--t->n];
}

int govex_zyg_serve(const struct zyg_params *p, struct zyg_out *out)
{
	struct tmpl t = {.p = p, .own_net = -1};
	/* T's own network namespace, one its user namespace owns (the template's may be its
	 * parent's, as root): T can come back to it from the ones it makes */
	if (p->netns && (unshare(CLONE_NEWNET) < 0 ||
			 (t.own_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0))
		return -errno;
	struct pollfd *pf = NULL;
	size_t cap_pf = 0;
	/* A taken spare is replaced once a run ended, or at once when none is left: making
	 * one (a clone of this interpreter) on the CPU a run that just started needs would
	 * be paid by that run's latency. */
	bool refill = true;
	for (;;) {
		if (t.spares == 0)
			refill = true;
		while (refill && t.spares < (size_t)p->spares) {
			int r = spare_make(&t, out);
			if (r == 1) {
				/* P: the run's code is next (T's tables are nothing of its own) */
				free(pf);
				free(t.kids);
				free(t.free_net);
				return 0;
			}
			if (r < 0) {
				struct timespec ts = {0, 10000000}; /* out of processes for now */
				nanosleep(&ts, NULL);
				break;
			}
		}
		if (t.spares >= (size_t)p->spares)
			refill = false;
		if (!grow((void **)&pf, &cap_pf, 2 * t.n + 1, sizeof(*pf)))
			_exit(1);
		size_t np = 0;
		for (size_t i = 0; i < t.n; i++) {
			pf[np++] = (struct pollfd){.fd = t.kids[i].pidfd, .events = POLLIN};
			pf[np++] = (struct pollfd){.fd = t.kids[i].spare ? t.kids[i].taken : -1,
						   .events = POLLIN};
		}
		int n = poll(pf, np, refill && t.spares < (size_t)p->spares ? 10 : -1);
		if (n < 0 && errno != EINTR)
			_exit(1);
		if (n <= 0)
			continue;
		/* from the end: kid_end moves the last kid into the ended one's place */
		for (size_t i = t.n; i-- > 0;) {
			struct kid *k = &t.kids[i];
			if (k->spare && pf[2 * i + 1].revents) {
				char b = 0;
				if (read1(k->taken, &b) == 1 && b == 'E')
					_exit(0); /* retired: the host closed the control socket */
				k->spare = false;
				t.spares--;
				closep(&k->taken);
			}
			if (pf[2 * i].revents) {
				kid_end(&t, i);
				refill = true;
			}
		}
	}
}
