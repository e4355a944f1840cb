/* SPDX-License-Identifier: MIT */
/*
 * Warm runs, the template's side in C: what zyg.c (the template's loop), zyg_init.c (a
 * run's init), zyg_prog.c (a run's program) and zyg_io.c (descriptors, the spec) share.
 * Built into one libc-only shared object (meson.build: govex-zyg); see zyg.c.
 */
#ifndef GOVEX_ZYG_INT_H
#define GOVEX_ZYG_INT_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "internal.h"
#include "layers.h"
#include "zsys.h"
#include "zyg_spec.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* What zygote.py passes (ctypes): keep in step with its _Params. */
struct zyg_params {
	int ctl;    /* the control socket (the host's runs come on it) */
	int spares; /* run inits made ahead */
	int netns;  /* network: deny: each run a network namespace of its own */
	int n_guards;
	const struct sock_fprog *const *guards; /* loaded first, with a listener under notify */
	const struct sock_fprog *filter;	/* the allowlist, loaded last */
	/* Python's fork protocol, as os.fork keeps it: before_fork and after_fork_parent in
	 * T around each program's fork (made by B while T waits), after_fork_child in P.
	 * 3.13's after_fork_child releases the import lock before_fork took (3.12 and
	 * earlier re-initialized it): without before_fork it aborts (a fatal error). */
	void (*before_fork)(void);	 /* PyOS_BeforeFork, or NULL (3.6) */
	void (*after_fork_parent)(void); /* PyOS_AfterFork_Parent, or NULL (3.6) */
	void (*after_fork_child)(void);	 /* PyOS_AfterFork_Child (3.6: PyOS_AfterFork) */
	const char *comm;		 /* the program's name (the interpreter's) */
};

/* What a run's program gets back (in P only). */
struct zyg_out {
	const char *spec; /* the run's spec, mapped read-only */
	uint32_t size;
	uint32_t first; /* offset of the first record */
	int fce;	/* the error pipe (close-on-exec), closed by zygote.py right before the
			 * code runs */
	int text;	/* which worker text, or -1: the ZR_CODE record */
	int prewarm;	/* a spare: its header's prewarm */
};

/* A spare's program, returned from govex_zyg_serve with out->spec NULL (every step
 * taken, the interpreter warmed up meanwhile): waits for the go and fills out. */
__attribute__((visibility("default"))) int govex_zyg_go(struct zyg_out *out);
/* A spare's program before its go: 1 when the go (or the spare's end) is there or comes
 * within ms milliseconds, 0 otherwise (zygote.py warms up meanwhile, not under load). */
__attribute__((visibility("default"))) int govex_zyg_wait(int ms);
__attribute__((visibility("default"))) int govex_zyg_serve(const struct zyg_params *p,
							   struct zyg_out *out);

#define MAX_FDS 64
#define WALL	0x40000000
#define MNT_FL	(MS_NOSUID | MS_NODEV | MS_NOEXEC)

struct spec {
	const char *base;
	uint32_t size;
	const struct zyg_hdr *h;
};

struct recd {
	uint32_t type, len;
	const char *data;
};

/* Iterates the records of one type: SPEC_EACH(s, type, rc, r) { ... }; r < 0 after the
 * loop when the spec is malformed. */
#define SPEC_EACH(s, t, rc, r)                                                                     \
	for (uint32_t _off = sizeof(struct zyg_hdr);                                               \
	     ((r) = zyg_spec_next((s), &_off, &(rc))) > 0;)                                        \
		if ((rc).type == (t))

/* The host's "R" message: spec, stdin, stdout, stderr, error pipe, report, kill request,
 * the cgroup.procs descriptors, the CPU accounting descriptor, call mode's descriptor,
 * and last the watch socket (template_relay.c).  Indices into fds[]. */
struct runfds {
	int fds[MAX_FDS];
	size_t n;
	int spec, in, out, err, ce, rep, kill, procs0, cpu, extra, watch;
};

/* What T maps for each init it makes (zyg.c): below, B's stack (a guard page under
 * it); at the top, this page, where B records the buffers it read its specs into.  T
 * unmaps them all once it reaped B. */
struct zyg_buf {
	void *base;
	size_t len;
};
struct kid_mem {
	struct zyg_buf spec[2]; /* the run's, the go's */
};

/* What T hands the init it clones: read before B tells T it may go on ('F'). */
struct init_arg {
	const struct zyg_params *p;
	int taken, netfd;
	struct kid_mem *km;
	char *stack; /* the whole mapping (guard, stack, kid_mem) */
	size_t stack_len;
};

/* P's way back to T's frame: set by B right before its fork (zyg.c: T waits meanwhile),
 * read by P in its copy. */
struct zyg_child {
	int pair;
	sigset_t mask;
	char *stack;
	size_t stack_len;
};
extern struct zyg_child zyg_child;
__attribute__((noreturn)) void zyg_back(void);

/* A run's init (zyg_init.c): its spec, descriptors, program child, the program's guard
 * listener (and the socket it comes on) and the denials it answered. */
struct init {
	struct kid_mem *km;
	struct spec s;
	struct runfds f;
	pid_t child;
	int lsock, listener, sfd;
	struct rdenials den;
};

/* zyg_io.c: -errno of a failed libc call (0 otherwise: not for B); close and forget; close every
 * descriptor from 3 up but keep[]; a launch failure on the error pipe and _exit(127); a
 * write of all of buf (its length or -errno); one byte (1, 0 at EOF, -errno); one message
 * with descriptors (1-byte tag); the spec mapped (the program's) or read into memory no
 * fork copies (the init's, recorded for T to free), and its records; the "R" message's
 * descriptors by role (h NULL: the fixed ones only); the spec's workdir. */
int zyg_neg(long r);
void zyg_closep(int *fd);
void zyg_close_except(int *keep, size_t n);
__attribute__((noreturn)) void zyg_fail(int fce, enum govex__step step, int err);
ssize_t zyg_full_write(int fd, const void *buf, size_t len);
ssize_t zyg_read1(int fd, char *b);
ssize_t zyg_recv_fds(int sock, char *tag, int *fds, size_t max, size_t *n, int flags);
int zyg_send_fds(int sock, char tag, const int *fds, size_t n);
int zyg_spec_map(int fd, struct spec *s);
int zyg_spec_load(int fd, struct spec *s, struct zyg_buf *buf);
int zyg_spec_next(const struct spec *s, uint32_t *off, struct recd *rc);
ssize_t zyg_rec_str(const struct recd *rc, uint32_t at);
int zyg_runfds_index(struct runfds *f, const struct zyg_hdr *h);
const char *zyg_spec_workdir(const struct spec *s);
/* zyg_init.c: reaps what is there (true once the program child is); mount(2) as
 * -errno; a read-only bind; a run's init made by the template. */
bool zyg_reap(struct init *b, int *st, bool *got);
int zyg_mnt(const char *src, const char *dst, const char *type, unsigned long fl, const char *data);
int zyg_bind_ro(const char *src, const char *dst);
__attribute__((noreturn)) void zyg_init_main(const struct init_arg *a);
/* zyg_prog.c: the program child, made by its init: returns 0 with out filled once its
 * layers are entered (the code is next). */
int zyg_program_main(const struct zyg_params *p, int pair, const sigset_t *mask,
		     struct zyg_out *out);

#endif
