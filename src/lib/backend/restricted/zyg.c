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
 *   B  clone of T (CLONE_VM: sharing T's memory, nothing of it copied) into new mount,
 *      PID, IPC and UTS namespaces (and, under network: deny, a network namespace from
 *      T's pool): PID 1 of a future run.  Forks P and waits on the control socket for one
 *      run's descriptors (SCM_RIGHTS; the kernel gives each message to one B).
 *   P  PID 2, the program: a copy of T's memory (libc's fork, from B, while T waits in
 *      init_clone), back on T's frame in init_clone; Python's after-fork handlers run at
 *      once (PyOS_AfterFork_Child, as os.fork); its own session; waits for B.
 * Per run (every step before any user code, each failure reported as {step, errno} on
 * the run's error pipe like a cold launch's):
 *   B  hands the descriptors to P, mounts the run's identity files, /tmp, workdir and
 *      proc, has the host place the files in (or makes the output directory), tells P
 *      to go on; then keeps the CPU budget and the host's kill request, answers P's
 *      seccomp notifications (denials counted), reaps, kills the namespace (it is its
 *      PID 1) and writes the shim report.
 *   P  joins the run's cgroups, cgroup namespace, seccomp guard (its listener to B),
 *      stdio, chdir, no_new_privs, Landlock, ids and capabilities dropped, rlimits, the
 *      seccomp allowlist -- the cold program child's layers, through the same code
 *      (layers.c, rlayers_enter) -- and returns.
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
 * Sharing T's memory (measured with bench/floor.c: 0.5-0.9 ms of CPU less a run than a
 * copy of the template for each init, which the fork copied and the exit unmapped), B
 * keeps to three rules, since T and the other inits run meanwhile and every later
 * program is a copy of that memory:
 *   - B calls the kernel directly (zyg_int.h, zs): no libc function that writes errno
 *     (T's thread's) or takes a lock, only string and signal-set ones; but for the fork
 *     of P, libc's so that P's libc is set up as after any fork, made while T waits
 *     and no other init forks (init_clone);
 *   - nothing of a run is where a later program's fork copies it: B's stack is
 *     MADV_DONTFORK from when P is forked (before any run's data), the run's spec is read
 *     into a buffer that is MADV_DONTFORK before a byte is in it (zyg_spec_load); T unmaps
 *     both once it reaped B (struct kid_mem);
 *   - no signal handler runs in B (all are blocked: the interpreter's handlers would
 *     write T's memory).
 * Of T's thread, a CLONE_VM child loses its rseq registration (P registers again:
 * rseq_again) and its alternate signal stack (T has none: its interpreter gets only the
 * run's flags and locale, so no faulthandler; a run's own is set up in P).
 * Elsewhere (an architecture without zs) B is a copy of T, as fork makes one.
 *
 * T and P run in an interpreter's fork: no stdio; T allocates only between runs' forks.
 */
#include "zyg_int.h"

#include <setjmp.h>
#if ZYG_SHARED_INIT && __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define ZYG_RSEQ 1
#endif

/* ---- T: the template's loop --------------------------------------------------------------- */

struct kid {
	int pidfd, taken, netfd;
	bool spare;
	char *mem; /* the init's stack and its kid_mem (zyg_int.h) */
	size_t mem_len;
};

/* A program child's way back to T's frame in init_clone (zyg_back): T's setjmp before
 * each clone; P's copy of T's stack holds that frame, since T waits in init_clone until
 * the init forked P. */
static jmp_buf back;
struct zyg_child zyg_child;

void zyg_back(void)
{
	longjmp(back, 1);
}

#define INIT_STACK (256u << 10)
#define ZYG_PAGE   (64u << 10) /* a multiple of every page size */

static int init_entry(void *arg)
{
	zyg_init_main(arg);
}

/*
 * The program's rseq registration, as libc made it for T's thread.  The kernel drops a
 * CLONE_VM child's registration, so the init had none for P to inherit, while P's libc
 * believes its thread registered and reads the CPU from the area (sched_getcpu would
 * give T's CPU as of the fork, for ever).  The same area, length and signature as libc's;
 * a kernel or libc without rseq leaves nothing to do.
 */
static void rseq_again(void)
{
#ifdef ZYG_RSEQ
	if (__rseq_size == 0)
		return;
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	struct rseq *r = (struct rseq *)(void *)(tp + __rseq_offset);
	r->rseq_cs = 0;
	r->cpu_id = RSEQ_CPU_ID_UNINITIALIZED;
	syscall(SYS_rseq, r, 32, 0, RSEQ_SIG);
#endif
}

/* Clones the init and waits until it forked its program and said so ('F', or its end):
 * the program's copy of T's memory is taken meanwhile, with nothing allocated, no lock
 * held and this frame whole (the program comes back to it, from back), and no other init
 * forks.  Returns the init's PID, -errno, or 0 in the program, its steps taken. */
static long init_clone(struct init_arg *ia, int *pidfd, int taken, struct zyg_out *out)
{
	if (setjmp(back)) {
		/* P, forked by its init: the init's stack is nothing of P's */
		rseq_again();
		munmap(zyg_child.stack, zyg_child.stack_len);
		zyg_program_main(ia->p, zyg_child.pair, &zyg_child.mask, out);
		return 0;
	}
	int flags =
	    CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD | SIGCHLD;
	if (ZYG_SHARED_INIT)
		flags |= CLONE_VM;
	/* the program is a fork of this memory (B's, while this thread waits below): the
	 * interpreter's fork protocol around it, as os.fork keeps it (the import lock held,
	 * its before-fork handlers run; P releases the lock, T too once P is made) */
	if (ia->p->before_fork)
		ia->p->before_fork();
	long pid = clone(init_entry, ia->stack + ia->stack_len - ZYG_PAGE, flags, ia, pidfd);
	int e = errno;
	char f = 0;
	if (pid >= 0)
		zyg_read1(taken, &f);
	if (ia->p->after_fork_parent)
		ia->p->after_fork_parent();
	return pid < 0 ? -e : pid;
}

/* The buffers the init recorded and its stack: T's memory (the init shared it), unmapped
 * once the init is reaped. */
static void kid_mem_free(struct kid *k)
{
	if (!k->mem)
		return;
	struct kid_mem *km = (struct kid_mem *)(k->mem + k->mem_len - ZYG_PAGE);
	for (size_t i = 0; i < ARRAY_SIZE(km->spec); i++)
		if (km->spec[i].base)
			munmap(km->spec[i].base, km->spec[i].len);
	munmap(k->mem, k->mem_len);
	k->mem = NULL;
}

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
static int zyg_spare_make(struct tmpl *t, struct zyg_out *out)
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
	/* the init's stack (a guard page below it) and its kid_mem page on top */
	size_t mem_len = ZYG_PAGE + INIT_STACK + ZYG_PAGE;
	char *mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || mprotect(mem, ZYG_PAGE, PROT_NONE) < 0) {
		int e = -errno;
		if (mem != MAP_FAILED)
			munmap(mem, mem_len);
		close(tp[0]);
		close(tp[1]);
		if (netfd >= 0)
			t->free_net[t->n_free++] = netfd;
		return e;
	}
	struct init_arg ia = {.p = p,
			      .taken = tp[1],
			      .netfd = netfd,
			      .km = (struct kid_mem *)(mem + mem_len - ZYG_PAGE),
			      .stack = mem,
			      .stack_len = mem_len};
	int pidfd = -1;
	long pid = init_clone(&ia, &pidfd, tp[0], out);
	if (pid == 0)
		return 1; /* in P */
	close(tp[1]);
	if (pid < 0) {
		munmap(mem, mem_len);
		close(tp[0]);
		if (netfd >= 0)
			t->free_net[t->n_free++] = netfd;
		return (int)pid;
	}
	t->kids[t->n++] = (struct kid){.pidfd = pidfd,
				       .taken = tp[0],
				       .netfd = netfd,
				       .spare = true,
				       .mem = mem,
				       .mem_len = mem_len};
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
	kid_mem_free(k);
	if (k->spare) {
		t->spares--;
		zyg_closep(&k->taken);
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
			int r = zyg_spare_make(&t, out);
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
				if (zyg_read1(k->taken, &b) == 1 && b == 'E')
					_exit(0); /* retired: the host closed the control socket */
				k->spare = false;
				t.spares--;
				zyg_closep(&k->taken);
			}
			if (pf[2 * i].revents) {
				kid_end(&t, i);
				refill = true;
			}
		}
	}
}
