/* SPDX-License-Identifier: MIT */
/*
 * A run's inner layers, entered by its program process right before the code: one
 * implementation for the cold program child (launch.c, before its execve) and the warm
 * one (zyg_prog.c, in the template's fork, before the interpreter runs the code).
 *
 * Lifecycle: the caller fills a struct rlayers before anything of the run runs (the
 * cold side from its plan and launch, the warm side from the run's spec), with memory
 * that stays valid; rlayers_enter() then applies every layer in the fixed order below
 * and returns 0, or -errno with the step that failed.  Nothing here allocates, writes
 * errno or takes a lock (raw syscalls only, zsys.h): it is safe between fork and execve
 * and in the template's fork, and .ci/lint checks that the object links no libc
 * function but mem and str ones.
 *
 * Order (minijail's, the top of launch.c):
 *   1. the run's cgroups (cgroup.procs written), then a cgroup namespace rooted there
 *   2. setsid (own session and group), where asked for
 *   3. the seccomp guard: tty ioctls refused; with a notification socket, loaded with a
 *      new listener that is sent there (the run's supervisor answers it: rlayers_answer)
 *   4. stdio on 0..2 (and 3 in call mode); every other descriptor closed but the error
 *      pipe (moved above 10, close-on-exec) and the one kept
 *   5. the working directory
 *   6. no_new_privs
 *   7. Landlock (a ruleset over the plan's paths, network and scopes as the ABI has them)
 *   8. the bounding set dropped; as root the run's own ids; ambient and every other
 *      capability set cleared (dumpable again where asked for)
 *   9. rlimits
 *  10. the seccomp allowlist
 */
#ifndef GOVEX_RLAYERS_H
#define GOVEX_RLAYERS_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* One Landlock rule: rights beneath path (masked to the ruleset's handled ones). */
struct rlayers_rule {
	uint64_t access;
	const char *path;
};

/* One rlimit, and the step a failure to set it is reported as. */
struct rlayers_rlimit {
	int32_t resource, step;
	uint64_t soft, hard;
};

/* At most this many rlimits (rlayers_rlimits fills no more). */
#define RLAYERS_RLIMIT_MAX 6

struct rlayers {
	/* 1: the run's cgroup.procs descriptors (each gets "0"); closed by step 4 */
	const int *procs;
	size_t n_procs;
	/* 2 */
	bool setsid;
	/* 3: the guard; notify_sock >= 0: its listener is sent there (1-byte tag 'L', the
	 * descriptor as SCM_RIGHTS), and the socket then closed, or with notify_keep kept:
	 * moved above 10 (notify_sock updated) and left open through step 4 */
	const struct sock_fprog *guard;
	int notify_sock;
	bool notify_keep;
	/* 4: in, out, err on 0..2; extra (call mode, or -1) on 3; errpipe (updated: where it
	 * is after step 4) reports every failure of the caller's */
	int in, out, err, extra;
	int errpipe;
	/* 5 */
	const char *workdir;
	/* 7: ll_size 0: no Landlock.  ll_attr: handled rights (fs, net, scoped) as the
	 * kernel's ABI has them, ll_size of them given; a rule beneath a file keeps only
	 * ll_file_rights.  ll_next fills *ret with the rule at *it and moves *it on: 1, 0
	 * past the last, -errno (the spec is malformed). */
	uint64_t ll_attr[3];
	size_t ll_size;
	uint64_t ll_file_rights;
	int (*ll_next)(const void *ctx, size_t *it, struct rlayers_rule *ret);
	const void *ll_ctx;
	/* filtered networking: with LL_NET_CONNECT_TCP handled (ll_attr[1]), TCP connects
	 * only to this port (the proxy's on the run's loopback); 0: no such rule */
	uint16_t ll_connect_port;
	/* 8: setid (root): setgroups(0), the gid and the uid; dumpable: PR_SET_DUMPABLE 1 after
	 * (a warm run has no execve to restore it) */
	bool setid;
	uint32_t uid, gid;
	bool dumpable;
	/* 9 */
	const struct rlayers_rlimit *rlimits;
	size_t n_rlimits;
	/* 10 */
	const struct sock_fprog *filter;
};

/* Applies every layer of l in order; updates l->errpipe and l->notify_sock.  Returns 0,
 * or -errno with *ret_step the step that failed (set as it goes).  Async-signal-safe. */
int rlayers_enter(struct rlayers *l, enum govex__step *ret_step);
/* Step 7 alone, as rlayers_enter takes it (the probe's children). */
int rlayers_landlock(const struct rlayers *l, enum govex__step *ret_step);
/* Step 9 alone (a warm spare sets its rlimits after its go). */
int rlayers_setrlimits(const struct rlayers_rlimit *rl, size_t n, enum govex__step *ret_step);
/* The rlimits of a run under l (pure): no core dumps, a bounded share of queued signals,
 * then CPU seconds, address space, file size and open files where set.  Returns how
 * many it filled of ret (at most RLAYERS_RLIMIT_MAX). */
size_t rlayers_rlimits(const struct govex__limits *l, struct rlayers_rlimit *ret);

/* ---- the guard's notifications -------------------------------------------------------- */

/* What a listener has answered: execve/execveat notifications (the first continued
 * under exec_once), and the attempts it refused, per control. */
struct rdenials {
	unsigned execs;	      /* execve notifications answered */
	uint32_t exec_denied; /* a later execve refused (subprocess: deny) */
	uint32_t net_denied;  /* a socket() refused (network: deny) */
};

/* The answer to one notification (pure): socket() fails with EAFNOSUPPORT (what the
 * allowlist answers where nobody counts); with exec_once the first execve continues (a
 * cold run's interpreter start), any other fails with ENOSYS (what the kernel answers
 * once the listener is gone); fork, vfork and a new process's clone fail with EPERM.
 * Refusals are counted in *d (saturating).  Fills *ret (id, error, flags).  Returns true
 * when the listener is to be closed now: max refusals answered (the kernel then refuses
 * the rest, ENOSYS, at no cost to the supervisor). */
bool rlayers_answer(const struct seccomp_notif *req, bool exec_once, uint64_t max,
		    struct rdenials *d, struct seccomp_notif_resp *ret);

#endif
